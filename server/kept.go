package server

import "fmt"

// What a session keeps between messages, its named prepared statements
// and portals, is counted in its share of the server's buffers
// (hold.keep), so that no client can make the server hold more than
// --max-buffered-bytes one small message at a time. The unnamed statement
// and portal are not: a session has one of each, each replaced by the
// next (and the portal closed at Sync), so they are bounded by the
// message they came in, and a session that spent the budget on named ones
// can still run them. Every change to ss.stmts and ss.portals goes
// through these methods, which keep the count equal to what the maps
// hold.

// keptOverhead is what a kept statement or portal costs beside its text:
// the map entry, the struct, slice headers.
const keptOverhead = 256

func (p *prepared) size(name string) int64 {
	if name == "" {
		return 0
	}
	n := int64(keptOverhead + len(p.sql) + 4*len(p.paramOIDs))
	if p.described != nil {
		for _, f := range p.described.fields {
			n += int64(len(f.Name)) + 24
		}
	}
	return n
}

func (p *portal) size(name string) int64 {
	if name == "" {
		return 0
	}
	return int64(keptOverhead + len(p.sql) + 2*len(p.formats))
}

// putStmt keeps a prepared statement under name, replacing (and giving
// back) the one there; it fails, keeping the old one, when the budget
// lacks the room.
func (ss *pgSession) putStmt(name string, st *prepared) error {
	old := ss.stmts[name]
	d := st.size(name)
	if old != nil {
		d -= old.kept
	}
	if !ss.h.keep(d) {
		return ss.h.outOfKept(fmt.Sprintf("prepared statement %q of %d bytes", name, st.size(name)))
	}
	st.kept = st.size(name)
	ss.stmts[name] = st
	return nil
}

// setDescribed records the answer columns of the statement kept under
// name, counted as the rest of it; past the budget they go unrecorded, and
// the next Describe works them out again.
func (ss *pgSession) setDescribed(name string, st *prepared, res *result) {
	st.described = res
	if d := st.size(name) - st.kept; d > 0 {
		if !ss.h.keep(d) {
			st.described = nil
			return
		}
		st.kept += d
	}
}

// delStmt forgets a prepared statement.
func (ss *pgSession) delStmt(name string) {
	if st := ss.stmts[name]; st != nil {
		ss.h.keep(-st.kept)
		delete(ss.stmts, name)
	}
}

// clearStmts forgets every prepared statement.
func (ss *pgSession) clearStmts() {
	for name := range ss.stmts {
		ss.delStmt(name)
	}
}

// putPortal keeps a portal under name, closing the one there.
func (ss *pgSession) putPortal(name string, p *portal) error {
	ss.delPortal(name)
	if !ss.h.keep(p.size(name)) {
		return ss.h.outOfKept(fmt.Sprintf("portal %q of %d bytes", name, p.size(name)))
	}
	ss.portals[name] = p
	return nil
}

// delPortal closes and forgets a portal.
func (ss *pgSession) delPortal(name string) {
	if p := ss.portals[name]; p != nil {
		p.close()
		ss.h.keep(-p.size(name))
		delete(ss.portals, name)
	}
}
