package pgkv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rocklake/rocklake/kv"
)

const (
	pageMin = 32
	pageMax = 16384
	// arenaChunk is the size of the buffers a page's rows are copied
	// into; a row larger than it gets a buffer of its own size.
	arenaChunk = 64 << 10
)

// snapshot is one REPEATABLE READ transaction on a connection of its own.
// Its methods may be called from many goroutines: each query holds mu for
// its round trip (rows are read whole before it is released).
type snapshot struct {
	s      *Store
	mu     sync.Mutex
	conn   *pgxpool.Conn
	closed bool
}

// NewSnapshot begins a read-only transaction and pins its snapshot in the
// same round trip (REPEATABLE READ takes it at the first statement, not at
// BEGIN).
func (s *Store) NewSnapshot() (kv.Snapshot, error) { return s.newSnapshot() }

func (s *Store) newSnapshot() (*snapshot, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	for tries := 0; ; tries++ {
		conn, err := s.acquire(ctx)
		if err != nil {
			return nil, err
		}
		s.trips.Add(1)
		_, err = conn.Exec(ctx, `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SELECT 1`)
		if err == nil {
			return &snapshot{s: s, conn: conn}, nil
		}
		lost := conn.Conn().IsClosed()
		conn.Release()
		// A connection the server ended while it sat idle in the pool (a
		// terminated backend, a restart) fails here having read nothing,
		// and the pool drops it: the next is tried, up to as many as the
		// pool holds. A server that is down fails the dial in acquire,
		// at once.
		if !lost || tries >= int(s.maxConns) {
			return nil, s.wrap(err)
		}
	}
}

// use takes the snapshot's connection for one round trip; done gives it
// back.
func (sn *snapshot) use() (ctx context.Context, done func(), err error) {
	sn.mu.Lock()
	if sn.closed {
		sn.mu.Unlock()
		return nil, nil, errors.New("kv: read from a closed snapshot")
	}
	ctx, cancel := sn.s.ctx()
	return ctx, func() { cancel(); sn.mu.Unlock() }, nil
}

func (sn *snapshot) Get(key []byte) ([]byte, error) {
	ctx, done, err := sn.use()
	if err != nil {
		return nil, err
	}
	defer done()
	return get(ctx, sn.conn, sn.s, key)
}

// GetMany reads many keys in one statement per chunk: a commit checks
// every new file's path this way instead of a round trip per file.
func (sn *snapshot) GetMany(keys [][]byte) ([][]byte, error) {
	out := make([][]byte, len(keys))
	at := make(map[string][]int, len(keys))
	for i, k := range keys {
		at[string(k)] = append(at[string(k)], i)
	}
	const chunk = 10000
	for lo := 0; lo < len(keys); lo += chunk {
		part := keys[lo:min(lo+chunk, len(keys))]
		err := func() error {
			ctx, done, err := sn.use()
			if err != nil {
				return err
			}
			defer done()
			sn.s.trips.Add(1)
			rows, err := sn.conn.Query(ctx, `SELECT k, v FROM `+sn.s.table+` WHERE k = ANY($1::bytea[])`, part)
			if err != nil {
				return sn.s.wrap(err)
			}
			for rows.Next() {
				raw := rows.RawValues()
				for _, i := range at[string(raw[0])] {
					out[i] = append([]byte{}, raw[1]...)
				}
			}
			return sn.s.wrap(rows.Err())
		}()
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (sn *snapshot) NewIter(lower, upper []byte) (kv.Iterator, error) {
	return newIter(sn, lower, upper), nil
}

// Close ends the transaction. A connection left in a broken or busy state
// is destroyed by the pool rather than reused.
func (sn *snapshot) Close() error {
	sn.mu.Lock()
	defer sn.mu.Unlock()
	if sn.closed {
		return nil
	}
	sn.closed = true
	ctx, cancel := sn.s.ctx()
	defer cancel()
	sn.s.trips.Add(1)
	_, err := sn.conn.Exec(ctx, `ROLLBACK`)
	// Asked before Release: a released pool connection has no
	// connection to ask about.
	lost := sn.conn.Conn().IsClosed()
	sn.conn.Release()
	if err != nil && lost {
		return nil // the transaction ended with its connection
	}
	return sn.s.wrap(err)
}

type pair struct{ k, v []byte }

// page reads up to n rows after (forward) or before (backward) from,
// within [lower, upper); a nil from starts at the bound.
func (sn *snapshot) page(forward bool, from []byte, inclusive bool, lower, upper []byte, n int) ([]pair, error) {
	var conds []string
	var args []any
	add := func(op string, b []byte) {
		args = append(args, b)
		conds = append(conds, fmt.Sprintf("k %s $%d", op, len(args)))
	}
	order := "k"
	if forward {
		switch {
		case from != nil && (lower == nil || bytes.Compare(from, lower) >= 0):
			add(map[bool]string{true: ">=", false: ">"}[inclusive], from)
		case lower != nil:
			add(">=", lower)
		}
		if upper != nil {
			add("<", upper)
		}
	} else {
		order = "k DESC"
		switch {
		case from != nil && (upper == nil || bytes.Compare(from, upper) < 0):
			add(map[bool]string{true: "<=", false: "<"}[inclusive], from)
		case upper != nil:
			add("<", upper)
		}
		if lower != nil {
			add(">=", lower)
		}
	}
	q := `SELECT k, v FROM ` + sn.s.table
	if len(conds) > 0 {
		q += " WHERE " + strings.Join(conds, " AND ")
	}
	args = append(args, n)
	q += fmt.Sprintf(" ORDER BY %s LIMIT $%d", order, len(args))

	ctx, done, err := sn.use()
	if err != nil {
		return nil, err
	}
	defer done()
	sn.s.trips.Add(1)
	rows, err := sn.conn.Query(ctx, q, args...)
	if err != nil {
		return nil, sn.s.wrap(err)
	}
	// A page is asked for n rows only after the page before came full, so
	// it is sized for n: growing it by appends cost more than its rows.
	out := make([]pair, 0, n)
	var arena []byte
	for rows.Next() {
		// The driver reuses its buffers: RawValues are copied out, into
		// arena chunks shared by many rows rather than two allocations a
		// row. Each key and value is capped at its length, so an append
		// to one reallocates instead of overwriting its neighbour.
		raw := rows.RawValues()
		k, v := raw[0], raw[1]
		if len(arena)+len(k)+len(v) > cap(arena) {
			arena = make([]byte, 0, max(arenaChunk, len(k)+len(v)))
		}
		a := len(arena)
		arena = append(arena, k...)
		b := len(arena)
		arena = append(arena, v...)
		out = append(out, pair{k: arena[a:b:b], v: arena[b:len(arena):len(arena)]})
	}
	if err := rows.Err(); err != nil {
		return nil, sn.s.wrap(err)
	}
	return out, nil
}

// iter pages through a snapshot. rows holds the current page in the
// direction it was read (ascending forward, descending backward); moving
// against that direction reads a new page from the current key.
//
// From the second page of a walk on, while the caller walks a full page,
// the next one in the same direction is already being read (ahead): the server finds and sends a page while
// the caller decodes the one before, where one after the other a scan of
// large values cost the sum of both (a new process's plan over ten
// million files read 20 MB of blocks in pages, most of its wait).
type iter struct {
	sn           *snapshot
	lower, upper []byte
	rows         []pair
	pos          int
	forward      bool
	more         bool // the page was full: rows may follow it
	next         int  // the size of the next page
	err          error
	own          bool // the snapshot is the iterator's and closes with it
	closed       bool
	ahead        *readAhead
}

// readAhead is a page being read after the current one's last key.
type readAhead struct {
	forward bool
	after   []byte // the key it reads after (exclusive)
	n       int
	done    chan struct{}
	rows    []pair
	err     error
}

// aheadBytes bounds the page a read-ahead follows: two pages of large
// values in memory at once are not worth the overlap.
const aheadBytes = 64 << 20

func newIter(sn *snapshot, lower, upper []byte) *iter {
	return &iter{sn: sn, lower: bytes.Clone(lower), upper: bytes.Clone(upper), pos: -1}
}

// load reads a page starting at from and positions on its first row.
func (it *iter) load(forward bool, from []byte, inclusive, fresh bool) bool {
	if it.closed {
		it.err = errors.New("kv: iterator is closed")
	}
	if it.err != nil {
		it.rows, it.pos = nil, -1
		return false
	}
	// The first page of a walk is not read past: a short scan (a "has any
	// row" check, a seek that stops at its first key) would pay for a page
	// it never reads, and a Get on the snapshot would wait behind it. Only
	// a caller that walked a whole page is likely to walk the next.
	first := fresh || forward != it.forward
	if first {
		it.next = pageMin
	}
	var rows []pair
	var err error
	n := it.next
	if a := it.takeAhead(forward, from, inclusive); a != nil {
		<-a.done
		rows, err, n = a.rows, a.err, a.n
	} else {
		rows, err = it.sn.page(forward, from, inclusive, it.lower, it.upper, n)
	}
	it.next = min(n*4, pageMax)
	if err != nil {
		it.err = err
		it.rows, it.pos = nil, -1
		return false
	}
	it.rows, it.forward, it.more = rows, forward, len(rows) == n
	if len(rows) == 0 {
		it.pos = -1
		return false
	}
	it.pos = 0
	if it.more && !first {
		it.readAhead(rows)
	}
	return true
}

// takeAhead returns the read-ahead if it reads the page load is asked
// for, and drops it otherwise (its goroutine ends by itself: it holds the
// connection only for its one round trip).
func (it *iter) takeAhead(forward bool, from []byte, inclusive bool) *readAhead {
	a := it.ahead
	it.ahead = nil
	if a == nil || inclusive || a.forward != forward || !bytes.Equal(a.after, from) {
		return nil
	}
	return a
}

// readAhead starts reading the page after rows, unless they are large.
func (it *iter) readAhead(rows []pair) {
	size := 0
	for _, r := range rows {
		size += len(r.k) + len(r.v)
	}
	if size > aheadBytes {
		return
	}
	a := &readAhead{forward: it.forward, after: rows[len(rows)-1].k, n: it.next, done: make(chan struct{})}
	it.ahead = a
	sn, lower, upper := it.sn, it.lower, it.upper
	go func() {
		defer close(a.done)
		a.rows, a.err = sn.page(a.forward, a.after, false, lower, upper, a.n)
	}()
}

func (it *iter) First() bool { return it.load(true, nil, true, true) }
func (it *iter) Last() bool  { return it.load(false, nil, true, true) }

func (it *iter) SeekGE(key []byte) bool { return it.load(true, bytes.Clone(key), true, true) }

// step moves one row in a direction.
func (it *iter) step(forward bool) bool {
	if !it.Valid() {
		return false
	}
	if forward != it.forward {
		return it.load(forward, it.rows[it.pos].k, false, false)
	}
	if it.pos+1 < len(it.rows) {
		it.pos++
		return true
	}
	if !it.more {
		it.rows, it.pos = nil, -1
		return false
	}
	return it.load(forward, it.rows[it.pos].k, false, false)
}

func (it *iter) Next() bool { return it.step(true) }
func (it *iter) Prev() bool { return it.step(false) }

func (it *iter) Valid() bool   { return !it.closed && it.pos >= 0 && it.pos < len(it.rows) }
func (it *iter) Key() []byte   { return it.rows[it.pos].k }
func (it *iter) Value() []byte { return it.rows[it.pos].v }
func (it *iter) Error() error  { return it.err }

func (it *iter) Close() error {
	if it.closed {
		return nil
	}
	it.closed = true
	it.rows = nil
	if a := it.ahead; a != nil {
		// Its round trip ends before the connection serves anyone else
		// (or the snapshot closes): waiting for it here keeps the
		// connection's use within the iterator's life.
		<-a.done
		it.ahead = nil
	}
	if it.own {
		if err := it.sn.Close(); err != nil && it.err == nil {
			return err
		}
	}
	return it.err
}
