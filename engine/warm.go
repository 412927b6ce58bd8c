package engine

import (
	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/types"
)

// Warm reads into the catalog's caches what planning query at snapshot
// (catalog.Latest, or negative, for the latest) will read first: the live
// files of each table the query's text names, and the file statistics and
// membership index headers of each of those tables' columns it names.
// Names are matched as words in the text, not parsed, so a name in a
// string or a comment warms what no plan reads, which costs only the
// reading.
//
// It is for a process that has time to spare before it can plan: a new
// command-line process waits for DuckDB's start (Prestart) before it can
// parse the query, and warming fills that wait with the catalog reads the
// plan would make after it. Errors are not reported: the query meets
// them again, and reports them.
func Warm(c *catalog.Catalog, query string, snapshot int64) {
	if snapshot < 0 {
		snapshot = catalog.Latest
	}
	r, err := c.Read(snapshot)
	if err != nil {
		return
	}
	defer r.Close()
	tables, err := r.Tables()
	if err != nil {
		return
	}
	folded := types.FoldIdent(query)
	for _, t := range tables {
		if !wordIn(folded, t.Name) {
			continue
		}
		if _, err := r.FileSet(t.ID); err != nil {
			return
		}
		cols, err := r.Columns(t.ID)
		if err != nil {
			return
		}
		for _, col := range cols {
			if col.Parent.Known || !wordIn(folded, col.Name) {
				continue
			}
			if _, err := r.ColumnBounds(t.ID, col.ID); err != nil {
				return
			}
			if m, err := r.MemberIndex(t.ID, col.ID); err != nil {
				return
			} else if m != nil {
				if err := m.Prepare(); err != nil {
					return
				}
			}
		}
	}
}
