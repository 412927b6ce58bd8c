package catalog

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/rocklake/rocklake/catalog/catalogpb"
	"github.com/rocklake/rocklake/kv"
)

// Commits that lost the fence keep what they read. A commit that lost
// the fence to a writer of other tables tries again on the newer head,
// and before this read everything again: on PostgreSQL a dozen round
// trips, during which the next writer to land took the fence again. So
// writers of tables of their own lost the fence four or five times a
// commit under the storm, and half of all commits waited for the write
// lock (docs/performance.md, "Where the storm's tail comes from").
//
// On a store many processes share (recordsReads), an attempt records
// what it read of table-scoped rows (readLog): every
// point read, and every range it walked forward to its end. The next
// attempt serves from that record whatever no commit since can have
// changed, and reads the rest. What a commit changed is mechanical, not
// a matter of what it claims to have changed: its snapshot row lists
// the prefixes (tag and table id, 9 bytes) of every key its batch wrote
// (notingBatch), and the fence value it expected and the one it wrote.
// The record holds at a newer head when
//
//   - the fence values chain, from the one the recording attempt read,
//     through each snapshot since, to the one this attempt read: no
//     writer that writes no snapshot (expiry, cleanup; or a writer from
//     before these fields, whose rows lack them) moved the fence between;
//   - and then an entry holds unless one of those snapshots wrote a key
//     under a prefix it overlaps.
//
// Rows that writers without a snapshot change without moving the fence
// (the sweep of a forgotten table's rows, object-root leases), and the
// catalog-wide rows (meta, snapshots, schemas, tables, the fence), are
// never served from a record: they are read each time.
//
// A record is trusted to build a commit, never to refuse or skip one: an
// attempt it served that fails, or finds nothing to change, is built
// again from fresh reads. In tests every served attempt also builds its
// commit from fresh reads and compares the two (verifyRereads): a record
// served stale would write a different commit, or fail differently.

// uncachedTags are read by every attempt (see above).
var uncachedTags = [256]bool{tagMeta: true, tagSnapshot: true, tagSchema: true, tagTable: true,
	tagFence: true, tagObjectRoot: true, tagExpiredSnapshot: true}

// prefixLen is a written key's tag and first id: a table's id for every
// key a record serves.
const prefixLen = 9

// maxWrotePrefixes bounds the prefixes a snapshot row lists; a commit
// that wrote under more says so instead (wrote_many), and no record
// outlives it.
const maxWrotePrefixes = 64

// maxLogBytes bounds what one transaction's record holds: a commit that
// reads more (a removal recomputing the stats of a table of a million
// files) reads it again.
const maxLogBytes = 8 << 20

// verifyRereads makes every attempt served from a record build its
// commit from fresh reads too and fail unless both write the same (set
// in tests, and by ROCKLAKE_VERIFY_REREADS).
var verifyRereads = os.Getenv("ROCKLAKE_VERIFY_REREADS") != ""

// recordAllStores makes commits keep their reads on every store (tests:
// the catalog's run on the memory store with several handles, as
// processes sharing PostgreSQL do).
var recordAllStores = false

// recordsReads says whether commits on store keep what they read for
// their retries. Only where many processes share the store: elsewhere one
// handle's mutex orders its commits, and the fence moves under one only
// for maintenance or another handle in the same process, which is rare
// and not worth a record on every commit (a 10,000-file commit on the
// memory store took 22% longer recording).
func recordsReads(store kv.Store) bool {
	_, shared := store.(kv.WriteLocker)
	return shared || recordAllStores
}

// beforeBatchCommit, when set (tests), runs between an attempt's reads
// and its write: another writer's commit there takes the fence.
var beforeBatchCommit func(*Txn)

// readLog is a transaction's record of what its attempts read. An
// attempt serves from the entries of the attempts before it only: what
// it reads itself goes to pending, which joins them when the next
// attempt has checked what still holds (finish).
type readLog struct {
	valid bool   // at and fence say where the entries hold
	at    int64  // the head they were read at
	fence []byte // the fence read at that head (nil: absent)
	logEntries
	pending logEntries
	bytes   int
	// served counts entries attempts took from the record, for tests.
	served int
}

type logEntries struct {
	gets   map[string][]byte
	absent map[string]bool
	iters  map[[2]string][]kv.KV
}

func (l *readLog) reset() {
	l.logEntries, l.pending, l.bytes = logEntries{}, logEntries{}, 0
}

// join moves what the last attempt read into the entries served.
func (l *readLog) join() {
	p := &l.pending
	for k, v := range p.gets {
		if l.gets == nil {
			l.gets = map[string][]byte{}
		}
		l.gets[k] = v
	}
	for k := range p.absent {
		if l.absent == nil {
			l.absent = map[string]bool{}
		}
		l.absent[k] = true
	}
	for r, kvs := range p.iters {
		if l.iters == nil {
			l.iters = map[[2]string][]kv.KV{}
		}
		l.iters[r] = kvs
	}
	l.pending = logEntries{}
}

func cacheableKey(k []byte) bool { return len(k) >= prefixLen && !uncachedTags[k[0]] }

// cacheableRange says whether [lo, hi) lies within one cacheable tag.
func cacheableRange(lo, hi []byte) bool {
	return len(lo) >= 1 && !uncachedTags[lo[0]] && hi != nil && len(hi) >= 1 &&
		(hi[0] == lo[0] || (hi[0] == lo[0]+1 && len(hi) == 1))
}

// overlaps says whether any key under prefix p lies in [lo, hi).
func overlaps(p, lo, hi []byte) bool {
	end := kv.PrefixEnd(p)
	return (end == nil || bytes.Compare(lo, end) < 0) && (hi == nil || bytes.Compare(p, hi) < 0)
}

// drop forgets every entry under one of prefixes.
func (l *readLog) drop(prefixes [][]byte) {
	for _, p := range prefixes {
		for k := range l.gets {
			if bytes.HasPrefix([]byte(k), p) {
				l.bytes -= len(k) + len(l.gets[k])
				delete(l.gets, k)
			}
		}
		for k := range l.absent {
			if bytes.HasPrefix([]byte(k), p) {
				delete(l.absent, k)
			}
		}
		for r, kvs := range l.iters {
			if overlaps(p, []byte(r[0]), []byte(r[1])) {
				for _, e := range kvs {
					l.bytes -= len(e.Key) + len(e.Value)
				}
				delete(l.iters, r)
			}
		}
	}
}

// chain walks the snapshots after the record's head up to head, each
// through fn as the conflict check scans them, and keeps of the record
// what they cannot have changed. fence is what this attempt read.
type chain struct {
	l      *readLog
	prev   []byte // the fence written before the snapshot next in line
	broken bool
	wrote  [][]byte
}

func (l *readLog) startChain() *chain {
	if !l.valid {
		return &chain{l: l, broken: true}
	}
	return &chain{l: l, prev: l.fence}
}

func (ch *chain) step(p *catalogpb.Snapshot) {
	if ch.broken || p.Id <= ch.l.at {
		return
	}
	if len(p.FenceWritten) == 0 || p.WroteMany || !bytes.Equal(p.FenceExpected, ch.prev) {
		ch.broken = true
		return
	}
	ch.prev = p.FenceWritten
	ch.wrote = append(ch.wrote, p.Wrote...)
}

// finish applies the walk to the record, with the fence this attempt read
// at head; after it the record serves only what still holds.
func (ch *chain) finish(head int64, fence []byte) {
	l := ch.l
	l.join()
	if ch.broken || !bytes.Equal(ch.prev, fence) || head < l.at {
		l.reset()
		return
	}
	l.drop(ch.wrote)
}

// cachedReader is an attempt's view of its snapshot: reads of cacheable
// rows come from the record while serve is set, and are recorded.
type cachedReader struct {
	inner kv.Snapshot
	l     *readLog
	serve bool
}

// cachedMultiReader keeps the snapshot's one-round-trip reads.
type cachedMultiReader struct{ *cachedReader }

func newCachedReader(inner kv.Snapshot, l *readLog) (kv.Snapshot, *cachedReader) {
	r := &cachedReader{inner: inner, l: l}
	if _, ok := inner.(kv.MultiGetter); ok {
		return cachedMultiReader{r}, r
	}
	return r, r
}

func (r *cachedReader) Close() error { return r.inner.Close() }

func (r *cachedReader) lookup(k []byte) (v []byte, found, hit bool) {
	if !r.serve || !cacheableKey(k) {
		return nil, false, false
	}
	if v, ok := r.l.gets[string(k)]; ok {
		r.l.served++
		return bytes.Clone(v), true, true
	}
	if r.l.absent[string(k)] {
		r.l.served++
		return nil, false, true
	}
	return nil, false, false
}

func (r *cachedReader) record(k, v []byte, found bool) {
	if !cacheableKey(k) || r.l.bytes+len(k)+len(v) > maxLogBytes {
		return
	}
	p := &r.l.pending
	if found {
		if p.gets == nil {
			p.gets = map[string][]byte{}
		}
		p.gets[string(k)] = bytes.Clone(v)
		r.l.bytes += len(k) + len(v)
		return
	}
	if p.absent == nil {
		p.absent = map[string]bool{}
	}
	p.absent[string(k)] = true
	r.l.bytes += len(k)
}

func (r *cachedReader) Get(k []byte) ([]byte, error) {
	if v, found, hit := r.lookup(k); hit {
		if !found {
			return nil, kv.ErrNotFound
		}
		return v, nil
	}
	v, err := r.inner.Get(k)
	switch {
	case err == nil:
		r.record(k, v, true)
	case errors.Is(err, kv.ErrNotFound):
		r.record(k, nil, false)
	}
	return v, err
}

func (r cachedMultiReader) GetMany(keys [][]byte) ([][]byte, error) {
	out := make([][]byte, len(keys))
	var miss [][]byte
	var at []int
	for i, k := range keys {
		v, found, hit := r.lookup(k)
		if !hit {
			miss, at = append(miss, k), append(at, i)
			continue
		}
		if found && v == nil {
			v = []byte{}
		}
		out[i] = v
	}
	if len(miss) == 0 {
		return out, nil
	}
	vals, err := r.inner.(kv.MultiGetter).GetMany(miss)
	if err != nil {
		return nil, err
	}
	for j, v := range vals {
		out[at[j]] = v
		r.record(miss[j], v, v != nil)
	}
	return out, nil
}

func (r *cachedReader) NewIter(lo, hi []byte) (kv.Iterator, error) {
	if !cacheableRange(lo, hi) {
		return r.inner.NewIter(lo, hi)
	}
	rk := [2]string{string(lo), string(hi)}
	if r.serve {
		if kvs, ok := r.l.iters[rk]; ok {
			r.l.served++
			return kv.NewSliceIter(kvs), nil
		}
	}
	it, err := r.inner.NewIter(lo, hi)
	if err != nil {
		return nil, err
	}
	return &recordingIter{Iterator: it, r: r, rk: rk}, nil
}

// recordingIter records a walk from First to the end, the only walk a
// record serves again.
type recordingIter struct {
	kv.Iterator
	r       *cachedReader
	rk      [2]string
	kvs     []kv.KV
	size    int
	walking bool // First was the only other move
	off     bool // recording abandoned
}

func (it *recordingIter) note(ok bool) bool {
	if it.off || !it.walking {
		return ok
	}
	if !ok {
		if it.Iterator.Error() == nil {
			l := it.r.l
			if l.bytes+it.size <= maxLogBytes {
				if l.pending.iters == nil {
					l.pending.iters = map[[2]string][]kv.KV{}
				}
				l.pending.iters[it.rk] = it.kvs
				l.bytes += it.size
			}
		}
		it.off = true
		return ok
	}
	k, v := it.Iterator.Key(), it.Iterator.Value()
	it.size += len(k) + len(v)
	if it.r.l.bytes+it.size > maxLogBytes {
		it.off, it.kvs = true, nil
		return ok
	}
	it.kvs = append(it.kvs, kv.KV{Key: bytes.Clone(k), Value: bytes.Clone(v)})
	return ok
}

func (it *recordingIter) First() bool {
	if it.walking || it.off {
		it.off = true
		return it.Iterator.First()
	}
	it.walking = true
	return it.note(it.Iterator.First())
}

func (it *recordingIter) Next() bool { return it.note(it.Iterator.Next()) }

func (it *recordingIter) Last() bool { it.off = true; return it.Iterator.Last() }

func (it *recordingIter) Prev() bool { it.off = true; return it.Iterator.Prev() }

func (it *recordingIter) SeekGE(k []byte) bool { it.off = true; return it.Iterator.SeekGE(k) }

// verifyBuild builds the commit w (and err) was built as, from fresh
// reads on a catalog without process caches, and says how the two differ
// (verifyRereads).
func (t *Txn) verifyBuild(snap kv.Snapshot, w *commitWriter, err error, head Snapshot, now time.Time, fenceOld, fenceNew []byte) error {
	fresh, _ := newCachedReader(snap, &readLog{})
	w2, err2 := t.build(t.c.uncached(), fresh, head, now, fenceOld, fenceNew, t.c.store.NewBatch())
	w2.batch.Close()
	var diff error
	switch {
	case errors.Is(err2, kv.ErrUnavailable):
		// The store went away under the second build: not a difference,
		// and the attempt fails as any read of a store gone would.
		return err2
	case errors.Is(err, kv.ErrUnavailable):
		return nil // the attempt fails with it
	case (err == nil) != (err2 == nil) || err != nil && err.Error() != err2.Error():
		diff = fmt.Errorf("it failed with %v, from fresh reads with %v", err, err2)
	case err != nil:
	case w.changed != w2.changed:
		diff = fmt.Errorf("it changed something: %v, from fresh reads: %v", w.changed, w2.changed)
	case w.changed:
		diff = sameWrites(w.nb, w2.nb)
	}
	if diff != nil {
		return fmt.Errorf("catalog: a commit built from what an earlier attempt read differs from one built from fresh reads: %w", diff)
	}
	return nil
}

// uncached is c without its process caches (verifyRereads).
func (c *Catalog) uncached() *Catalog {
	return &Catalog{store: c.store, dir: c.dir, now: c.now, dataRoot: c.dataRoot, uuid: c.uuid, location: c.location,
		speculative: c.speculative, specBase: c.specBase, plan: planCache{budget: c.plan.budget}}
}

// notingBatch notes the prefix of every key a commit writes, for its
// snapshot row, and with verifyRereads every write. It offers none of a
// batch's optional extras: the commit asks the batch it wraps (raw) for
// them and notes what it writes through them itself.
type notingBatch struct {
	kv.Batch
	prefixes map[string]bool
	last     []byte  // the prefix noted last: a commit writes long runs of one
	writes   []kv.KV // verifyRereads: every write, a nil value a delete
	ranges   []kv.KV // verifyRereads: every range delete, [Key, Value)
	keep     bool
}

func newNotingBatch(b kv.Batch) *notingBatch {
	return &notingBatch{Batch: b, prefixes: map[string]bool{}, keep: verifyRereads}
}

func (b *notingBatch) note(k []byte) {
	if len(k) > prefixLen {
		k = k[:prefixLen]
	}
	if b.last != nil && bytes.Equal(k, b.last) {
		return
	}
	b.last = append(b.last[:0], k...)
	b.prefixes[string(k)] = true
}

// noteRange notes a range deleted: the prefix its bounds share covers it.
func (b *notingBatch) noteRange(start, end []byte) {
	n := 0
	for n < len(start) && n < len(end) && start[n] == end[n] {
		n++
	}
	if bytes.Equal(kv.PrefixEnd(start), end) {
		n = len(start) // exactly the keys under start
	}
	b.note(start[:min(n, prefixLen)])
	if b.keep {
		b.ranges = append(b.ranges, kv.KV{Key: bytes.Clone(start), Value: bytes.Clone(end)})
	}
}

func (b *notingBatch) noteWrite(k, v []byte) {
	b.note(k)
	if b.keep {
		b.writes = append(b.writes, kv.KV{Key: bytes.Clone(k), Value: bytes.Clone(v)})
	}
}

func (b *notingBatch) Set(k, v []byte) error {
	if v == nil {
		v = []byte{}
	}
	b.noteWrite(k, v)
	return b.Batch.Set(k, v)
}

func (b *notingBatch) Delete(k []byte) error {
	b.noteWrite(k, nil)
	return b.Batch.Delete(k)
}

// wrote is what the snapshot row says of the batch's keys.
func (b *notingBatch) wrote() (prefixes [][]byte, many bool) {
	if len(b.prefixes) > maxWrotePrefixes {
		return nil, true
	}
	for p := range b.prefixes {
		prefixes = append(prefixes, []byte(p))
	}
	slices.SortFunc(prefixes, bytes.Compare)
	return prefixes, false
}

// final is the batch's writes as they land: the last write of each key,
// and the range deletes (verifyRereads).
func (b *notingBatch) final() (map[string]string, []kv.KV) {
	out := map[string]string{}
	for _, w := range b.writes {
		if w.Value == nil {
			out[string(w.Key)] = "\x00deleted"
			continue
		}
		out[string(w.Key)] = "=" + string(w.Value)
	}
	return out, b.ranges
}

// sameWrites compares two builds of one commit (verifyRereads).
func sameWrites(served, fresh *notingBatch) error {
	a, ar := served.final()
	b, br := fresh.final()
	if len(ar) != len(br) {
		return fmt.Errorf("%d range deletes from the record, %d from fresh reads", len(ar), len(br))
	}
	for i := range ar {
		if !bytes.Equal(ar[i].Key, br[i].Key) || !bytes.Equal(ar[i].Value, br[i].Value) {
			return fmt.Errorf("range delete %d differs: [%x, %x) from the record, [%x, %x) from fresh reads", i, ar[i].Key, ar[i].Value, br[i].Key, br[i].Value)
		}
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return fmt.Errorf("key %x: %q from the record, %q (present: %v) from fresh reads", k, v, w, ok)
		}
	}
	for k, w := range b {
		if _, ok := a[k]; !ok {
			return fmt.Errorf("key %x: written from fresh reads (%q), not from the record", k, w)
		}
	}
	return nil
}
