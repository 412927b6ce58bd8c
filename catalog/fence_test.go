package catalog

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rocklake/rocklake/kv"
	"github.com/rocklake/rocklake/kv/kvtest"
)

// unknownStore makes batch commits report kv.ErrUnknownOutcome, having
// applied the batch or not, as a store that lost its connection after
// COMMIT was sent does; and can then make every read fail.
type unknownStore struct {
	kv.Store
	mu      sync.Mutex
	next    []bool // per coming commit: apply it, then report the outcome unknown
	readErr error  // set by a faulted commit: what reads then fail with
	failOn  error
}

func (s *unknownStore) NewBatch() kv.Batch { return &unknownBatch{Batch: s.Store.NewBatch(), s: s} }

func (s *unknownStore) reads() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.readErr
}

func (s *unknownStore) Get(k []byte) ([]byte, error) {
	if err := s.reads(); err != nil {
		return nil, err
	}
	return s.Store.Get(k)
}

func (s *unknownStore) NewIter(lo, hi []byte) (kv.Iterator, error) {
	if err := s.reads(); err != nil {
		return nil, err
	}
	return s.Store.NewIter(lo, hi)
}

func (s *unknownStore) NewSnapshot() (kv.Snapshot, error) {
	if err := s.reads(); err != nil {
		return nil, err
	}
	return s.Store.NewSnapshot()
}

type unknownBatch struct {
	kv.Batch
	s *unknownStore
}

func (b *unknownBatch) Commit() error {
	b.s.mu.Lock()
	if len(b.s.next) == 0 {
		b.s.mu.Unlock()
		return b.Batch.Commit()
	}
	apply := b.s.next[0]
	b.s.next = b.s.next[1:]
	b.s.readErr = b.s.failOn
	b.s.mu.Unlock()
	if apply {
		if err := b.Batch.Commit(); err != nil {
			return err
		}
	}
	return fmt.Errorf("injected: %w", kv.ErrUnknownOutcome)
}

func newUnknownCatalog(t *testing.T) (*Catalog, *unknownStore) {
	t.Helper()
	s := &unknownStore{Store: kvtest.Store(t)}
	c, err := CreateInStore(s, Options{Now: fixedNow()})
	if err != nil {
		t.Fatal(err)
	}
	commit(t, c, func(tx *Txn) { tx.CreateTable("a", []ColumnDef{{Name: "x", Type: "bigint"}}) })
	return c, s
}

func liveFiles(t *testing.T, c *Catalog) int {
	t.Helper()
	_, files := headFiles(t, c, "a")
	return len(files)
}

// A commit whose write was applied but reported unknown is found by its
// token: Commit returns its snapshot, and it is there once. One whose
// write was lost is written again, once.
func TestCommitResolvesUnknownOutcome(t *testing.T) {
	for _, applied := range []bool{true, false} {
		t.Run(fmt.Sprint("applied=", applied), func(t *testing.T) {
			c, s := newUnknownCatalog(t)
			s.next = []bool{applied}
			tx, _ := c.Begin()
			tx.AddFiles("a", intFile(t, "/a/1", 0, 9, 0))
			snap, err := tx.Commit()
			if err != nil {
				t.Fatal(err)
			}
			if snap.ID != 2 || liveFiles(t, c) != 1 {
				t.Errorf("snapshot %d with %d files, want snapshot 2 with 1", snap.ID, liveFiles(t, c))
			}
			if snaps, _ := c.Snapshots(); len(snaps) != 3 {
				t.Errorf("%d snapshots, want 3", len(snaps))
			}
		})
	}
}

// When the store cannot be read to find out whether a cut-off commit
// landed, Commit's error must say the outcome is unknown (it did land
// here): a caller that takes it for "nothing written" and commits again
// writes twice.
func TestCommitUncheckableOutcomeIsUnknown(t *testing.T) {
	for _, readErr := range []error{errors.New("injected read failure"), fmt.Errorf("injected: %w", kv.ErrUnavailable)} {
		t.Run(readErr.Error(), func(t *testing.T) {
			// An unavailable store is retried until writeRetryFor.
			defer func(d time.Duration) { writeRetryFor = d }(writeRetryFor)
			writeRetryFor = 300 * time.Millisecond
			c, s := newUnknownCatalog(t)
			s.next, s.failOn = []bool{true}, readErr
			tx, _ := c.Begin()
			tx.AddFiles("a", intFile(t, "/a/1", 0, 9, 0))
			_, err := tx.Commit()
			if !errors.Is(err, kv.ErrUnknownOutcome) {
				t.Errorf("Commit: %v; want an error matching kv.ErrUnknownOutcome", err)
			}
			s.mu.Lock()
			s.readErr = nil
			s.mu.Unlock()
			if n := liveFiles(t, c); n != 1 {
				t.Errorf("%d files, want the 1 the cut-off commit wrote", n)
			}
		})
	}
}

// retryWrites' budgets are for retrying: a first attempt that took longer
// than either (a commit of millions of files) is retried after it loses
// the fence or meets a store that stopped answering, while retrying past
// the budgets still gives up.
func TestRetryBudgetsCountRetrying(t *testing.T) {
	defer func(w, u time.Duration) { writeRetryFor, unavailableFor = w, u }(writeRetryFor, unavailableFor)
	writeRetryFor, unavailableFor = 40*time.Millisecond, 40*time.Millisecond
	slowFirst := func(first error) func(attempt) (int, error) {
		n := 0
		return func(attempt) (int, error) {
			n++
			if n == 1 {
				time.Sleep(100 * time.Millisecond) // longer than both budgets
				return 0, first
			}
			return n, nil
		}
	}
	for _, first := range []error{kv.ErrConditionFailed, fmt.Errorf("injected: %w", kv.ErrUnavailable)} {
		n, err := retryWrites("slow commit", slowFirst(first))
		if err != nil || n != 2 {
			t.Errorf("a slow first attempt failing with %v: attempts %d, %v; want it retried once and landed", first, n, err)
		}
	}
	for _, always := range []error{kv.ErrConditionFailed, fmt.Errorf("injected: %w", kv.ErrUnavailable)} {
		n := 0
		start := time.Now()
		_, err := retryWrites("doomed commit", func(attempt) (int, error) {
			n++
			return 0, always
		})
		if !errors.Is(err, always) || n < 2 {
			t.Errorf("every attempt failing with %v: %d attempts, %v; want it retried, then its error", always, n, err)
		}
		if took := time.Since(start); took > 30*time.Second {
			t.Errorf("every attempt failing with %v: gave up after %s", always, took)
		}
	}
}
