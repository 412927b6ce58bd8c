package catalog

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/rocklake/rocklake/kv"
)

// The fence (key 11) is a random value every catalog write replaces, on
// condition that it still holds the value the writer read: a writer that
// read, decided and wrote while another writer wrote in between fails
// with kv.ErrConditionFailed and nothing written, and tries again on the
// newer state. Within one process commitMu already serialises writers;
// the fence is what serialises them across processes sharing one store
// (PostgreSQL), where snapshot ids must stay dense and a conflict check
// must see every commit before its own.

// fence adds the fence's condition and its new value to b.
func fence(r kv.Reader, b kv.Batch) error {
	old, err := r.Get(key(tagFence))
	if err != nil && !errors.Is(err, kv.ErrNotFound) {
		return err
	}
	if err := b.Expect(key(tagFence), old); err != nil {
		return err
	}
	v := uuid.New()
	return b.Set(key(tagFence), v[:])
}

const maxWriteAttempts = 400

// unavailableFor bounds how long a write retries a store that stopped
// answering before anything was sent, from the first attempt the outage
// failed (a variable for tests).
var unavailableFor = 5 * time.Second

// attempt is what retryWrites tells a write about the attempts before it.
type attempt struct {
	unknown bool // one was cut off after it was sent: it may have landed
	lost    int  // how many lost the fence to another writer
	failed  int  // how many failed otherwise, each said to have written nothing
}

// writeRetryFor bounds retryWrites' retrying, from the end of its first
// attempt: a commit that took minutes to build (millions of files) and
// then lost the fence once is retried like any other, not failed for the
// time its first attempt took. A variable so that tests of giving up need
// not wait it out.
var writeRetryFor = time.Minute

// retryWrites runs a write until it lands, trying again (with backoff)
// while another writer's write came first, while the store, having lost
// an attempt whose outcome it could not report, is unavailable, and for a
// few seconds while it is unavailable before anything was sent. fn is
// told when an earlier attempt's outcome is unknown, so that it can look
// for what that attempt wrote instead of writing it twice, and how many
// attempts lost the fence.
func retryWrites[T any](what string, fn func(attempt) (T, error)) (T, error) {
	start := time.Now()
	var retrying, outage time.Time // since the first attempt failed; since the store's outage began
	var a attempt
	unknown := false
	for attempt := 0; ; attempt++ {
		a.unknown = unknown
		v, err := fn(a)
		if err != nil && retrying.IsZero() {
			retrying = time.Now()
		}
		if !errors.Is(err, kv.ErrUnavailable) {
			outage = time.Time{}
		} else if outage.IsZero() {
			outage = time.Now()
		}
		switch {
		case err == nil:
			return v, nil
		case errors.Is(err, kv.ErrUnknownOutcome):
			unknown = true
		case errors.Is(err, kv.ErrConditionFailed):
			a.lost++
		case unknown && errors.Is(err, kv.ErrUnavailable):
			a.failed++
		case errors.Is(err, kv.ErrUnavailable) && time.Since(outage) < unavailableFor:
			a.failed++
			// Nothing was written (a write cut off after it was sent says
			// ErrUnknownOutcome): a connection ended under the attempt's
			// reads, a server restarting. Ride through a short outage;
			// fail a long one.
		case unknown:
			// The error must say the outcome is unknown whatever else it
			// matches: a caller that takes it for "nothing written" (as
			// ErrConflict or a plain failure promise) writes twice.
			return v, fmt.Errorf("%s: an earlier attempt was cut off and whether it landed cannot be checked: %w: %w", what, kv.ErrUnknownOutcome, err)
		default:
			return v, err
		}
		if attempt+1 >= maxWriteAttempts || time.Since(retrying) > writeRetryFor {
			if unknown {
				return v, fmt.Errorf("%s: an attempt was cut off and the catalog could not be read to check whether it landed (%d attempts in %s): %w: %w",
					what, attempt+1, time.Since(start).Round(time.Millisecond), kv.ErrUnknownOutcome, err)
			}
			return v, fmt.Errorf("%s: gave up after %d attempts in %s, other writers kept writing first: %w",
				what, attempt+1, time.Since(start).Round(time.Millisecond), err)
		}
		// A lost fence means another writer made progress: try again
		// soon, jittered so that losers spread out. A store that is not
		// answering gets exponential backoff.
		d := time.Millisecond * time.Duration(1+min(a.lost, 4))
		if !errors.Is(err, kv.ErrConditionFailed) {
			d = min(time.Millisecond<<min(attempt, 8), 250*time.Millisecond)
		}
		time.Sleep(d/2 + time.Duration(rand.Int64N(int64(d))))
	}
}

// Fair commits. A commit reads the head, decides, and writes on
// condition of the fence: optimistic, one round of reads and one write
// when nobody else writes, as DuckLake's retry loop is. Under contention
// that alone is unfair and unbounded: a writer whose reads take longer,
// or that is merely unlucky, can lose the fence to busier writers again
// and again (53 times in a row in TestQuietWriterCommitsWithinTheBound
// without what follows), and a commit that conflicts with nothing could
// run out of attempts and fail. So a commit that has lost the fence
// lockAfterLost times stops racing: on a store many processes share
// (kv.WriteLocker: PostgreSQL's session advisory lock, whose waiters
// PostgreSQL grants in the order they came) it queues for the write lock,
// then reads, decides and writes holding it. Every other batch commit
// waits for the lock meanwhile, so that attempt cannot lose the fence: a
// commit that conflicts with nothing lands within lockAfterLost+1
// attempts plus its wait in the queue, whatever the others do. The lock
// is held for one commit's reads and write only, never while files are
// written; a holder that dies loses it with its connection.
//
// Why not lock at once, or after the first loss: every optimistic batch
// queued behind a holder loses the fence the moment the holder commits,
// so a low threshold sends most contended commits through the lock, one
// at a time, each holding it for its reads. In the 12-process storm on 2
// cores that made the median commit 54 ms instead of 3 ms and the rate
// 30% lower (docs/performance.md); after 8 losses the median and the rate
// stay those of the optimistic path.
var lockAfterLost = 8 // a variable so that a test can make it 1

// commitLocked is one attempt of t's commit holding the write lock; ok is
// false where the store has no such lock, or it could not be taken (the
// caller races the fence again).
func (t *Txn) commitLocked() (s Snapshot, ok bool, err error) {
	l, isLocker := t.c.store.(kv.WriteLocker)
	if !isLocker {
		return Snapshot{}, false, nil
	}
	newBatch, release, err := l.LockWrites()
	if err != nil {
		return Snapshot{}, false, nil
	}
	defer release()
	lockedCommits.Add(1)
	s, err = t.commitOnce(newBatch)
	return s, true, err
}

// lockedCommits counts the commits that took the write lock, for tests.
var lockedCommits atomic.Int64

// writeLock holds off other processes' writes, on stores that many
// processes share, for maintenance that acts outside the catalog (deletes
// files) between reading it and writing it. Batches for the catalog's own
// writes meanwhile come from newBatch.
func (c *Catalog) writeLock() (newBatch func() kv.Batch, release func() error, err error) {
	if l, ok := c.store.(kv.WriteLocker); ok {
		return l.LockWrites()
	}
	return c.store.NewBatch, func() error { return nil }, nil
}
