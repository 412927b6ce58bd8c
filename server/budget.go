package server

import (
	"fmt"
	"sync/atomic"
)

// budget bounds the bytes the PostgreSQL sessions hold of their clients'
// messages and answers, all together (Config.MaxBufferedBytes).
//
// Each connection that has a slot may hold up to floor bytes without
// asking: MaxConns floors are set aside, so a client whose rows and
// messages are small gets its answers whatever the others hold, and the
// clients that stopped reading cannot take that from it. So may as many
// connections still in their startup (which MaxConns does not count: a
// cancel request is one) hold startFloor, enough for a startup message;
// more of them at once take that from the pool. What a connection holds
// beyond its floor (a row or a message larger than it) comes from the
// rest, the pool, first come: the session that finds the pool spent is
// the one that fails.
type budget struct {
	limit, floor, pool int64
	startups           int64        // startup floors set aside
	starting           atomic.Int64 // connections holding one
	used               atomic.Int64 // of the pool
	held               atomic.Int64 // every byte held: rocklake_pg_buffered_bytes
}

// maxFloor is the most a connection is set aside: a flush of rows
// (flushBytes) and a read, with room for pipelined messages.
const maxFloor = 128 << 10

// minFloor is the least: below it most rows would need the pool.
const minFloor = 16 << 10

// startFloor holds a startup message (at most 10,000 bytes) and one read.
const startFloor = 16 << 10

// newBudget sets aside at most half the limit for floors, so that the
// pool, which large rows and messages draw on, is never small beside
// them.
func newBudget(limit int64, conns int) (*budget, error) {
	n := int64(conns)
	floor := min(maxFloor, limit/(2*n)-startFloor)
	if floor < minFloor {
		return nil, fmt.Errorf("a buffer limit of %d bytes (--max-buffered-bytes) is too small for %d connections (--max-connections): it must be at least %d bytes",
			limit, conns, 2*n*(minFloor+startFloor))
	}
	return &budget{limit: limit, floor: floor, startups: n, pool: limit - n*(floor+startFloor)}, nil
}

// free is how much more a connection may hold now: what is left of its
// floor and of the pool.
func (h *hold) free() int64 {
	return max(0, h.floor-h.read-h.write-h.room) + max(0, h.b.pool-h.b.used.Load())
}

// hold is one connection's share of the budget: what its reader has
// received and not handed on, what its writer has queued and the socket
// has not taken, and room taken for a read under way (which counts
// against the budget but is not held yet).
//
// The reader and the writer of a connection never run at once (the
// watch ends before rows are sent), so a hold needs no lock.
type hold struct {
	b                 *budget
	floor             int64
	starting          bool // holds a startup floor
	read, write, room int64
	taken             int64 // of the pool
	kept              int64 // of the pool, for what the session keeps (keep)
}

// take takes d bytes of the pool (gives back -d); it says no, taking
// nothing, when the pool lacks them.
func (b *budget) take(d int64) bool {
	if d <= 0 {
		b.used.Add(d)
		return true
	}
	for {
		u := b.used.Load()
		if u+d > b.pool {
			return false
		}
		if b.used.CompareAndSwap(u, u+d) {
			return true
		}
	}
}

// set makes the connection's counts these. Growing past the floor takes
// from the pool; when the pool lacks it nothing changes and set says no.
func (h *hold) set(read, write, room int64) bool {
	taken := max(0, read+write+room-h.floor)
	if !h.b.take(taken - h.taken) {
		return false
	}
	h.taken = taken
	h.b.held.Add(read + write - h.read - h.write)
	h.read, h.write, h.room = read, write, room
	return true
}

// fits says whether n more bytes stay within the floor.
func (h *hold) fits(n int64) bool { return h.read+h.write+h.room+n <= h.floor }

// begin gives a connection in its startup a startup floor, if one is
// free.
func (h *hold) begin() {
	if h.b.starting.Add(1) <= h.b.startups {
		h.starting, h.floor = true, startFloor
		h.set(h.read, h.write, h.room)
	} else {
		h.b.starting.Add(-1)
	}
}

// admit gives the connection its floor, once it has a slot (the floor is
// never less than a startup floor, so nothing is taken meanwhile).
func (h *hold) admit() {
	h.floor = h.b.floor
	h.set(h.read, h.write, h.room)
	h.endStartup()
}

func (h *hold) endStartup() {
	if h.starting {
		h.starting = false
		h.b.starting.Add(-1)
	}
}

// keep takes n more bytes (gives back -n) for what a session keeps from
// one message to the next: its prepared statements and portals. A client
// could otherwise make the server hold any amount, a statement at a time,
// beyond every limit. They come from the pool alone: the floor is for
// messages and rows in flight, and must stay free for them. When the pool
// lacks n nothing changes and keep says no. Only the session's goroutine
// keeps; the pool's count is shared, hence atomic.
func (h *hold) keep(n int64) bool {
	if !h.b.take(n) {
		return false
	}
	h.kept += n
	h.b.held.Add(n)
	return true
}

// release gives back everything, when the connection ends; it must come
// before the slot is given back, or one floor too many would be out.
func (h *hold) release() {
	h.set(0, 0, 0)
	h.keep(-h.kept)
	h.floor = 0
	h.endStartup()
}

// outOfBuffers is the error of a session whose row or message (what,
// with its size) does not fit in what is left of the budget.
func (h *hold) outOfBuffers(what string) *pgError {
	return &pgError{code: "53200",
		msg: fmt.Sprintf("out of memory: %s does not fit in the %d bytes left of the server's limit of %d bytes for what all clients' sessions hold (--max-buffered-bytes, by default an eighth of --memory-limit)",
			what, h.free(), h.b.limit),
		hint: "try again once other clients have taken their answers, send or select less at a time, or raise --max-buffered-bytes or --memory-limit"}
}

// outOfKept is the error of a session whose prepared statement or portal
// (what, with its size) does not fit in what is left of the pool.
func (h *hold) outOfKept(what string) *pgError {
	return &pgError{code: "53200",
		msg: fmt.Sprintf("out of memory: %s does not fit in the %d bytes left of the server's limit of %d bytes for what all clients' sessions hold (--max-buffered-bytes, by default an eighth of --memory-limit); this session's prepared statements and portals hold %d bytes",
			what, max(0, h.b.pool-h.b.used.Load()), h.b.limit, h.kept),
		hint: "close the prepared statements this session no longer needs (DEALLOCATE, or the driver's Close), or raise --max-buffered-bytes or --memory-limit"}
}
