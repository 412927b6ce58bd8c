package catalog

import (
	"errors"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"github.com/rocklake/rocklake/kv"
)

// Expiry in several commits.
//
// Expiry's writes grow with the table, not with what it forgets: a tenth
// of a table's files removed at random touch every file block, and each
// rewritten block is written whole. In one batch, ten million files were
// gigabytes held at once, about three times over (Pebble's batch, its WAL
// blocks, its flushable batch). So expiry commits every expireChunkBytes,
// at the points where what it has written leaves the catalog as readers
// need it, in this order:
//
//  1. the expired snapshots' rows, and for those whose files are still to
//     forget, a copy of what forgetting needs of them (1C snap →
//     Snapshot): what a file's retiring snapshot inserted decides whether
//     its rows live on in other files (ForgottenFile.Rewritten);
//  2. per table, the blocks without the forgotten files, a block at a
//     time (its file block, stats blocks and summaries together), while
//     its removal records still subtract the files from any block not
//     yet rewritten;
//  3. per table, the forgotten files, each with every key of its own in
//     one commit and its row last: its statistics, filters and variant
//     statistics (by range for a run of files with no live file between
//     them, where the store's batches delete ranges), then its row, its
//     ForgottenFile record and its scheduling for cleanup. A file's row
//     is what the next expiry finds it by, so an expiry cut off between
//     commits leaves no key that a later expiry cannot find;
//  4. per table, the removal records (a removal record may name a file
//     whose row is already gone: retiredRows skips it), the membership
//     slabs no live file is in, and for a dropped table every key under
//     its id, by range where the store's batches delete ranges (else
//     after the last commit, in sweepTable's batches);
//  5. last, the copies of step 1.
//
// Every commit expects the fence value the commit before it set, so that
// the chain fails, as one batch would, if another writer committed in
// between; the expiry then starts again on the newer state, and what its
// earlier commits did is not done twice: their snapshots and rows are
// gone, and a dropped table's files they scheduled are skipped. Within a
// process commitMu keeps other writers out; the fence chain is for
// processes sharing a PostgreSQL catalog.

// expireChunkBytes is about the most bytes of keys and values one of
// expiry's commits carries (a variable so that tests can cut expiry into
// many commits).
var expireChunkBytes = 16 << 20

// chunkedWrites is a run of writes committed in several fenced batches.
type chunkedWrites struct {
	store   kv.Store
	b       kv.Batch
	expect  []byte // the fence value the next commit expects
	bytes   int    // of keys and values in b
	dryRun  bool
	commits int
	// committed is called after each commit.
	committed func()
}

// newChunkedWrites starts a run whose first commit expects the fence value
// r holds.
func newChunkedWrites(store kv.Store, r kv.Reader, dryRun bool) (*chunkedWrites, error) {
	old, err := r.Get(key(tagFence))
	if err != nil && !errors.Is(err, kv.ErrNotFound) {
		return nil, err
	}
	return &chunkedWrites{store: store, b: store.NewBatch(), expect: old, dryRun: dryRun}, nil
}

func (w *chunkedWrites) set(k, v []byte) error {
	if w.dryRun {
		return nil
	}
	w.bytes += len(k) + len(v)
	return w.b.Set(k, v)
}

func (w *chunkedWrites) put(k []byte, m proto.Message) error {
	if w.dryRun {
		return nil
	}
	v, err := encodeValue(m)
	if err != nil {
		return err
	}
	return w.set(k, v)
}

func (w *chunkedWrites) del(k []byte) error {
	if w.dryRun {
		return nil
	}
	w.bytes += len(k)
	return w.b.Delete(append([]byte(nil), k...))
}

// delRange is the batch's range delete, nil where it has none; a range
// is counted as its two bounds. Ranges sit in the batch beside its other
// writes and land in the same commit.
func (w *chunkedWrites) delRange() func(start, end []byte) error {
	rd, ok := w.b.(kv.RangeDeleter)
	if !ok {
		return nil
	}
	return func(start, end []byte) error {
		if w.dryRun {
			return nil
		}
		w.bytes += len(start) + len(end)
		return rd.DeleteRange(start, end)
	}
}

// boundary marks a point where the writes so far leave the catalog as
// readers need it, and commits them there once they are many.
func (w *chunkedWrites) boundary() error {
	if w.bytes < expireChunkBytes {
		return nil
	}
	return w.commit()
}

// commit commits what the batch holds, on condition of the fence.
func (w *chunkedWrites) commit() error {
	if w.dryRun || w.b.Len() == 0 {
		return nil
	}
	if err := w.b.Expect(key(tagFence), w.expect); err != nil {
		return err
	}
	v := uuid.New()
	if err := w.b.Set(key(tagFence), v[:]); err != nil {
		return err
	}
	if err := w.b.Commit(); err != nil {
		return err
	}
	w.expect = v[:]
	w.commits++
	w.b.Close()
	w.b = w.store.NewBatch()
	w.bytes = 0
	if w.committed != nil {
		w.committed()
	}
	return nil
}

func (w *chunkedWrites) close() { w.b.Close() }
