package pgkv

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rocklake/rocklake/kv"
)

// chunkBytes bounds the keys and values one statement carries, far below
// the protocol's 1 GB message limit and kind to the server's memory.
const chunkBytes = 8 << 20

type batch struct {
	s *Store
	// log holds the writes in the order they were made, each as
	// uvarint(len(key)) key uvarint(len(value)+1) value, where a length
	// of 0 marks a delete. It grows in slabs, so that growing never copies
	// what is written, and ops locates each write (slab<<32 | offset):
	// ascending in the order of the writes, which is how commit tells the
	// last write of a key. An expiry of a tenth of ten million files
	// writes about 25 million keys of some 30 bytes each; a map of them
	// (the key as a string, its value, the map's own entry) held about
	// 160 bytes a write, 4 GB.
	log    [][]byte
	ops    []uint64
	ranges []rangeDelete
	expect []pair // v nil: absent
	// conn, when set, is the write lock's connection: the batch runs
	// there and needs no lock of its own.
	conn   *pgxpool.Conn
	closed bool
}

// rangeDelete is a DeleteRange: it undoes the writes made before it
// (ops below at) to keys in [start, end).
type rangeDelete struct {
	start, end []byte
	at         uint64
}

// slabBytes is the size of the log's slabs; a larger write gets a slab
// of its own.
const slabBytes = 1 << 20

// put appends one write; a nil value is a delete.
func (b *batch) put(key, v []byte) error {
	if b.closed {
		return errors.New("kv: write to a closed batch")
	}
	vl := uint64(0)
	if v != nil {
		vl = uint64(len(v)) + 1
	}
	n := 2*binary.MaxVarintLen64 + len(key) + len(v)
	last := len(b.log) - 1
	if last < 0 || cap(b.log[last])-len(b.log[last]) < n {
		if len(b.log) >= 1<<31 || n > 1<<31 {
			return errors.New("kv: batch too large")
		}
		b.log = append(b.log, make([]byte, 0, max(slabBytes, n)))
		last++
	}
	slab := b.log[last]
	b.ops = append(b.ops, uint64(last)<<32|uint64(len(slab)))
	slab = binary.AppendUvarint(slab, uint64(len(key)))
	slab = append(slab, key...)
	slab = binary.AppendUvarint(slab, vl)
	b.log[last] = append(slab, v...)
	return nil
}

// order sorts the writes by key for apply, which sends them in that
// order: the heap then holds a large commit's rows in the order range
// scans read them (one column's stats across its files together), so a
// cold plan visits few pages instead of one per file. Writes of one key
// sort in the order they were made (ops ascend with it), and only the
// last is sent.
//
// A sort comparing the keys in the log reads two of its entries, far
// apart, per comparison: a million writes took over a second, nearly all
// of it waiting for memory. Instead each write gets an abbreviation of its
// key (7 bytes at a depth, and how many bytes are left), the writes are
// sorted by it, and only those sharing one are sorted again, by the next 7
// bytes: each level reads each entry once.
func (b *batch) order() {
	a := make([]abbreviated, len(b.ops))
	for i, op := range b.ops {
		a[i].op = op
	}
	b.orderFrom(a, 0)
	for i := range a {
		b.ops[i] = a[i].op
	}
}

// abbreviated is a write and its key's abbreviation at some depth.
type abbreviated struct{ v, op uint64 }

// orderFrom sorts a, writes whose keys agree before depth d, by their keys
// from d on, then by op.
func (b *batch) orderFrom(a []abbreviated, d int) {
	for i := range a {
		k, _ := b.entry(a[i].op)
		a[i].v = abbreviate(k, d)
	}
	slices.SortFunc(a, func(x, y abbreviated) int {
		if c := cmp.Compare(x.v, y.v); c != 0 {
			return c
		}
		return cmp.Compare(x.op, y.op)
	})
	for i := 0; i < len(a); {
		j := i + 1
		for j < len(a) && a[j].v == a[i].v {
			j++
		}
		if j-i > 1 && a[i].v&0xff > abbrevBytes {
			b.orderFrom(a[i:j], d+abbrevBytes) // the same 7 bytes, and more after them
		}
		i = j
	}
}

// abbrevBytes is how many bytes of a key an abbreviation holds.
const abbrevBytes = 7

// abbreviate is key's bytes d to d+7 (zeros past its end) in the top 56
// bits and how many bytes it has from d on (at most 8) in the low 8, so
// that abbreviations compare as the keys do, bytewise as bytea compares:
// where the bytes agree, the key that ends first, a prefix of the other,
// is the smaller. A count of 8
// says there is more to compare.
func abbreviate(key []byte, d int) uint64 {
	rest := key[d:]
	var v uint64
	for i, c := range rest[:min(len(rest), abbrevBytes)] {
		v |= uint64(c) << (56 - 8*i)
	}
	return v | uint64(min(len(rest), abbrevBytes+1))
}

// entry splits the write op locates into its key and what follows the
// key (the value's length, then the value). The key aliases the log.
func (b *batch) entry(op uint64) (key, rest []byte) {
	e := b.log[op>>32][uint32(op):]
	kl, n := uint64(e[0]), 1
	if kl >= 0x80 { // a key of 128 bytes or more: its length takes more bytes
		kl, n = binary.Uvarint(e)
	}
	end := n + int(kl)
	return e[n:end:end], e[end:]
}

// at decodes the write op locates; value is nil for a delete. Both alias
// the log.
func (b *batch) at(op uint64) (key, value []byte) {
	key, e := b.entry(op)
	vl, n := binary.Uvarint(e)
	if vl == 0 {
		return key, nil
	}
	return key, e[n : n+int(vl)-1 : n+int(vl)-1]
}

// Set copies value (a nil value is written as an empty one, not a delete).
func (b *batch) Set(key, value []byte) error {
	if value == nil {
		value = []byte{}
	}
	return b.put(key, value)
}

func (b *batch) Delete(key []byte) error { return b.put(key, nil) }

// DeleteRange is kv.RangeDeleter. Commit sends range deletes first, then
// the writes no later range delete undoes.
func (b *batch) DeleteRange(start, end []byte) error {
	if b.closed {
		return errors.New("kv: write to a closed batch")
	}
	if end == nil || bytes.Compare(start, end) >= 0 {
		return fmt.Errorf("kv: range delete of [%x, %x): the end must be above the start", start, end)
	}
	// at is where the next write will be: every write before this one
	// is below it, every later one at or above it.
	at := uint64(0)
	if last := len(b.log) - 1; last >= 0 {
		at = uint64(last)<<32 | uint64(len(b.log[last]))
	}
	b.ranges = append(b.ranges, rangeDelete{start: append([]byte{}, start...), end: bytes.Clone(end), at: at}) // a nil start would go out as NULL
	return nil
}

func (b *batch) Expect(key, value []byte) error {
	if b.closed {
		return errors.New("kv: condition on a closed batch")
	}
	e := pair{k: bytes.Clone(key)}
	if value != nil {
		e.v = append([]byte{}, value...)
	}
	b.expect = append(b.expect, e)
	return nil
}

func (b *batch) Len() int { return len(b.ops) + len(b.ranges) }

func (b *batch) Close() error {
	b.closed = true
	b.log, b.ops, b.ranges = nil, nil, nil
	return nil
}

// Commit applies the batch in one transaction, retrying failures that
// wrote nothing for up to Options.RetryFor.
func (b *batch) Commit() error {
	if b.closed {
		return errors.New("kv: commit of a closed batch")
	}
	b.closed = true
	defer func() { b.log, b.ops, b.ranges = nil, nil, nil }()
	s := b.s
	// Ordered once, before any attempt takes the write lock: a million
	// writes take a second or two to sort, which other writers would
	// spend waiting.
	b.order()
	start := time.Now()
	for attempt := 0; ; attempt++ {
		sent, err := b.attempt()
		switch {
		case err == nil:
			return nil
		case errors.Is(err, kv.ErrConditionFailed):
			return err
		case sent:
			return fmt.Errorf("catalog database %s: %w (the connection was lost after COMMIT was sent: %v)", s.redacted, kv.ErrUnknownOutcome, err)
		case s.retryFor < 0 || time.Since(start) > s.retryFor || !retryable(err):
			if attempt > 0 {
				return fmt.Errorf("%w (after %d attempts in %s)", s.wrap(err), attempt+1, time.Since(start).Round(time.Millisecond))
			}
			return s.wrap(err)
		}
		if b.conn != nil && b.conn.Conn().IsClosed() {
			// The lock went with its connection: the batch may not run
			// elsewhere as if it still held it.
			return s.wrap(fmt.Errorf("the connection holding the write lock was lost: %w", err))
		}
		backoff(attempt)
	}
}

// attempt runs one transaction; sent says COMMIT went out, so that a
// failure leaves the outcome unknown.
//
// Each statement has the store's timeout of its own: a large commit (an
// expiry of a million files of ten million sends dozens of statements of
// 8 MB) takes as long as its statements together, and one deadline for
// all of them failed such a commit however healthy the server.
func (b *batch) attempt() (sent bool, err error) {
	s := b.s
	conn := b.conn
	if conn == nil {
		ctx, cancel := s.ctx()
		conn, err = s.acquire(ctx)
		cancel()
		if err != nil {
			return false, err
		}
		defer conn.Release()
	}
	exec := func(sql string, args ...any) error {
		ctx, cancel := s.ctx()
		defer cancel()
		_, err := conn.Exec(ctx, sql, args...)
		return err
	}
	// Every statement of a batch names its rows by key. Given a large
	// array of keys (an expiry deletes hundreds of thousands), the planner
	// scans the whole table instead of the index, once per statement: at a
	// million files, 1–3 s each where the index takes a fraction.
	begin := `BEGIN ISOLATION LEVEL READ COMMITTED; SET LOCAL enable_seqscan = off`
	if b.conn == nil {
		begin += fmt.Sprintf(`; SELECT pg_advisory_xact_lock(%d)`, s.lockKey)
	}
	if err := exec(begin); err != nil {
		rollback(conn)
		return false, err
	}
	if dels, setK, setV, ok := b.small(); ok {
		return b.applyAtOnce(conn, dels, setK, setV)
	}
	if err := b.apply(conn, exec); err != nil {
		rollback(conn)
		return false, err
	}
	if err := exec(`COMMIT`); err != nil {
		return commitSent(err), err
	}
	return false, nil
}

// commitSent says whether a COMMIT that failed with err may have landed.
// Only an ERROR answering it says the transaction rolled back (a deferred
// constraint, a serialization failure), and only an error pgx knows was
// raised before anything went out says the server never got it. A FATAL
// or PANIC ends the session without saying: a server shut down
// immediately (57P01) or crashing (57P02) may have made the commit
// durable just before, and its recovery then replays it.
func commitSent(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		sev := pe.SeverityUnlocalized
		if sev == "" {
			sev = pe.Severity
		}
		return sev != "ERROR"
	}
	return !pgconn.SafeToRetry(err)
}

func rollback(conn *pgxpool.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = conn.Exec(ctx, `ROLLBACK`)
}

// small returns the batch's deletes and upserts where they fit one
// statement each (under chunkBytes, no range delete): the common commit,
// a few rows, which applyAtOnce sends in one round trip.
func (b *batch) small() (dels, setK, setV [][]byte, ok bool) {
	if len(b.ranges) > 0 {
		return nil, nil, nil, false
	}
	size := 0
	tooBig := errors.New("too big")
	err := b.last(func(k, v []byte, _ uint64) error {
		if v == nil {
			dels = append(dels, k)
		} else {
			setK, setV = append(setK, k), append(setV, v)
		}
		if size += len(k) + len(v) + 8; size >= chunkBytes {
			return tooBig
		}
		return nil
	})
	return dels, setK, setV, err == nil
}

// last calls fn with the last write of each key, in key order (Commit
// ordered them), and the op that made it; a nil value is a delete. The
// driver sends an empty slice as an empty bytea, a nil one as NULL, so
// an empty key comes as an empty slice.
func (b *batch) last(fn func(k, v []byte, op uint64) error) error {
	ops := b.ops
	for i, op := range ops {
		k, v := b.at(op)
		if i+1 < len(ops) {
			if next, _ := b.at(ops[i+1]); bytes.Equal(k, next) {
				continue
			}
		}
		if k == nil {
			k = []byte{}
		}
		if err := fn(k, v, op); err != nil {
			return err
		}
	}
	return nil
}

// condition is the batch's conditions as SQL booleans joined by sep,
// their parameters numbered from first on, and their arguments; "" when
// it has none.
func (b *batch) condition(first int, sep string) (string, []any) {
	var sql strings.Builder
	var args []any
	for i, e := range b.expect {
		if i > 0 {
			sql.WriteString(sep)
		}
		k := e.k
		if k == nil {
			k = []byte{}
		}
		// A nil e.v goes out as NULL: the key must be absent.
		fmt.Fprintf(&sql, "(SELECT v FROM %s WHERE k = $%d) IS NOT DISTINCT FROM $%d::bytea", b.s.table, first+2*i, first+2*i+1)
		args = append(args, k, e.v)
	}
	return sql.String(), args
}

// applyAtOnce sends a small batch's conditions, writes and COMMIT in one
// pipeline, the write lock already held: the lock is then held for one
// round trip, not one per statement, and every other writer of the
// catalog waits that much less. The writes carry the conditions in their
// WHERE clauses, so that where one fails they write nothing and the
// COMMIT commits nothing; the first statement says which held. Under the
// lock nothing else writes, so every statement finds the same answer.
//
// Everything is sent before any answer is read, so a connection lost
// while reading leaves the outcome unknown (commitSent), as a COMMIT
// sent alone would.
func (b *batch) applyAtOnce(conn *pgxpool.Conn, dels, setK, setV [][]byte) (sent bool, err error) {
	s := b.s
	var q pgx.Batch
	execs := 1 // COMMIT
	if len(b.expect) > 0 {
		each, args := b.condition(1, ", ")
		q.Queue("SELECT ARRAY["+each+"]", args...)
	}
	if len(dels) > 0 {
		all, args := b.condition(2, " AND ")
		if all != "" {
			all = " AND " + all
		}
		q.Queue(`DELETE FROM `+s.table+` WHERE k = ANY($1::bytea[])`+all, append([]any{dels}, args...)...)
		execs++
	}
	if len(setK) > 0 {
		all, args := b.condition(3, " AND ")
		if all != "" {
			all = " WHERE " + all
		}
		q.Queue(`INSERT INTO `+s.table+` (k, v) SELECT * FROM unnest($1::bytea[], $2::bytea[])`+all+`
			ON CONFLICT (k) DO UPDATE SET v = excluded.v`, append([]any{setK, setV}, args...)...)
		execs++
	}
	q.Queue(`COMMIT`)
	ctx, cancel := s.ctx()
	defer cancel()
	res := conn.SendBatch(ctx, &q)
	var held []bool
	if len(b.expect) > 0 {
		err = res.QueryRow().Scan(&held)
	}
	for ; err == nil && execs > 0; execs-- {
		_, err = res.Exec()
	}
	if cerr := res.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		rollback(conn)
		return commitSent(err), err
	}
	for i, ok := range held {
		if !ok {
			return false, fmt.Errorf("%w (key %x)", kv.ErrConditionFailed, b.expect[i].k)
		}
	}
	return false, nil
}

func (b *batch) apply(conn *pgxpool.Conn, exec func(sql string, args ...any) error) error {
	s := b.s
	for _, e := range b.expect {
		ctx, cancel := s.ctx()
		v, err := get(ctx, conn, s, e.k)
		cancel()
		absent := errors.Is(err, kv.ErrNotFound)
		if err != nil && !absent {
			return err
		}
		if absent != (e.v == nil) || (!absent && !bytes.Equal(v, e.v)) {
			return fmt.Errorf("%w (key %x)", kv.ErrConditionFailed, e.k)
		}
	}
	var dels, setK, setV [][]byte
	size := 0
	flush := func() error {
		if len(dels) > 0 {
			if err := exec(`DELETE FROM `+s.table+` WHERE k = ANY($1::bytea[])`, dels); err != nil {
				return err
			}
		}
		if len(setK) > 0 {
			if err := exec(`INSERT INTO `+s.table+` (k, v) SELECT * FROM unnest($1::bytea[], $2::bytea[])
				ON CONFLICT (k) DO UPDATE SET v = excluded.v`, setK, setV); err != nil {
				return err
			}
		}
		dels, setK, setV, size = dels[:0], setK[:0], setV[:0], 0
		return nil
	}
	if err := b.deleteRanges(conn); err != nil {
		return err
	}
	// Ranges by start, swept with the sorted writes below: a write is
	// dropped when a range delete made after it covers its key.
	ranges := slices.Clone(b.ranges)
	slices.SortFunc(ranges, func(x, y rangeDelete) int { return bytes.Compare(x.start, y.start) })
	var active []rangeDelete
	undone := func(k []byte, op uint64) bool {
		for len(ranges) > 0 && bytes.Compare(ranges[0].start, k) <= 0 {
			active, ranges = append(active, ranges[0]), ranges[1:]
		}
		active = slices.DeleteFunc(active, func(r rangeDelete) bool { return bytes.Compare(r.end, k) <= 0 })
		for _, r := range active {
			if op < r.at {
				return true
			}
		}
		return false
	}
	err := b.last(func(k, v []byte, op uint64) error {
		if len(b.ranges) > 0 && undone(k, op) {
			return nil
		}
		if v == nil {
			dels = append(dels, k)
		} else {
			setK, setV = append(setK, k), append(setV, v)
		}
		if size += len(k) + len(v) + 8; size >= chunkBytes {
			return flush()
		}
		return nil
	})
	if err != nil {
		return err
	}
	return flush()
}

// rangeChunk is the most rows one statement of a range delete removes:
// each statement stays far within the store's timeout however large the
// range (every key of a dropped table of millions of files). Three
// million keys took 4.3 s in one statement, 4.2 s in chunks of a million
// and 6.9 s in chunks of 250,000; point deletes of the same keys 10–12 s.
// A variable for tests.
var rangeChunk = 1_000_000

// deleteRanges sends the batch's range deletes, all of them at once:
// two round trips however many there are (expiry deletes a run of files'
// statistics as a few ranges per column, dozens in a commit; each was two
// round trips of its own). The first pipeline finds, in each range, the
// key rangeChunk rows in; the second deletes each range below it, or
// whole where there is none: plain DELETEs of a key range with the bounds
// as values. (One statement finding its bound in a subquery was planned
// badly and made an expiry of 100,000 files in a row slower than a
// statement per key; a chunk chosen by LIMIT and deleted by tuple id or
// by key cost two to three times as much at three million rows.) Ranges
// cut at a bound go on from it in the next two pipelines. Every
// statement keeps the store's timeout: a pipeline has one per statement
// it carries.
func (b *batch) deleteRanges(conn *pgxpool.Conn) error {
	s := b.s
	pending := slices.Clone(b.ranges)
	for len(pending) > 0 {
		bounds := make([][]byte, len(pending))
		err := s.pipeline(conn, len(pending), func(q *pgx.Batch) {
			for _, r := range pending {
				q.Queue(`SELECT k FROM `+s.table+` WHERE k >= $1 AND k < $2 ORDER BY k OFFSET $3 LIMIT 1`, r.start, r.end, rangeChunk)
			}
		}, func(res pgx.BatchResults) error {
			for i := range pending {
				err := res.QueryRow().Scan(&bounds[i])
				if err != nil && !errors.Is(err, pgx.ErrNoRows) {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		err = s.pipeline(conn, len(pending), func(q *pgx.Batch) {
			for i, r := range pending {
				to := r.end
				if bounds[i] != nil {
					to = bounds[i]
				}
				q.Queue(`DELETE FROM `+s.table+` WHERE k >= $1 AND k < $2`, r.start, to)
			}
		}, func(res pgx.BatchResults) error {
			for range pending {
				if _, err := res.Exec(); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		var more []rangeDelete
		for i, r := range pending {
			if bounds[i] != nil {
				r.start = bounds[i]
				more = append(more, r)
			}
		}
		pending = more
	}
	return nil
}

// pipeline sends the n statements queue queues as one pipeline and reads
// their answers with read, with the store's timeout for each statement.
func (s *Store) pipeline(conn *pgxpool.Conn, n int, queue func(*pgx.Batch), read func(pgx.BatchResults) error) error {
	var q pgx.Batch
	queue(&q)
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout*time.Duration(n))
	defer cancel()
	res := conn.SendBatch(ctx, &q)
	err := read(res)
	if cerr := res.Close(); err == nil {
		err = cerr
	}
	return err
}

// LockWrites takes the write lock on a connection of its own. Batches
// made by newBatch run on that connection; release ends the lock (and
// losing the connection ends it too, so a dead holder never blocks the
// catalog).
func (s *Store) LockWrites() (newBatch func() kv.Batch, release func() error, err error) {
	ctx, cancel := s.ctx()
	defer cancel()
	conn, err := s.acquire(ctx)
	if err != nil {
		return nil, nil, err
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, s.lockKey); err != nil {
		conn.Release()
		return nil, nil, s.wrap(err)
	}
	released := false
	newBatch = func() kv.Batch { return &batch{s: s, conn: conn} }
	release = func() error {
		if released {
			return nil
		}
		released = true
		ctx, cancel := s.ctx()
		defer cancel()
		_, err := conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, s.lockKey)
		if err != nil {
			// A connection that cannot say unlock must not go back to
			// the pool still holding the lock.
			_ = conn.Conn().Close(ctx)
		}
		conn.Release()
		return s.wrap(err)
	}
	return newBatch, release, nil
}
