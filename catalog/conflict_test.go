package catalog

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rocklake/rocklake/kv"
	"github.com/rocklake/rocklake/kv/kvtest"
)

// readCounter counts point reads and iterators opened, through the store
// and its snapshots: on a networked store each is a round trip.
type readCounter struct {
	kv.Store
	n atomic.Int64
}

func (s *readCounter) Get(k []byte) ([]byte, error) { s.n.Add(1); return s.Store.Get(k) }
func (s *readCounter) NewIter(lo, hi []byte) (kv.Iterator, error) {
	s.n.Add(1)
	return s.Store.NewIter(lo, hi)
}
func (s *readCounter) NewSnapshot() (kv.Snapshot, error) {
	sn, err := s.Store.NewSnapshot()
	if err != nil {
		return nil, err
	}
	return &snapCounter{Snapshot: sn, n: &s.n}, nil
}

type snapCounter struct {
	kv.Snapshot
	n *atomic.Int64
}

func (s *snapCounter) Get(k []byte) ([]byte, error) { s.n.Add(1); return s.Snapshot.Get(k) }
func (s *snapCounter) NewIter(lo, hi []byte) (kv.Iterator, error) {
	s.n.Add(1)
	return s.Snapshot.NewIter(lo, hi)
}

// A transaction that began hundreds of snapshots behind the head reads
// the snapshots since in a few reads, not one per snapshot: a commit that
// keeps losing the fence to busy writers of other tables must not get
// slower, and so likelier to lose again, with every attempt.
func TestConflictCheckReadsDoNotGrowWithDistance(t *testing.T) {
	rc := &readCounter{Store: kvtest.Store(t)}
	c, err := CreateInStore(rc, Options{Now: fixedNow()})
	if err != nil {
		t.Fatal(err)
	}
	commit(t, c, func(tx *Txn) {
		tx.CreateTable("a", []ColumnDef{{Name: "x", Type: "bigint"}})
		tx.CreateTable("b", []ColumnDef{{Name: "x", Type: "bigint"}})
	})
	reads := func(behind int) int64 {
		tx, err := c.Begin()
		if err != nil {
			t.Fatal(err)
		}
		tx.AddFiles("a", intFile(t, fmt.Sprintf("/a/%d", behind), 0, 9, 0))
		for i := range behind {
			commit(t, c, func(o *Txn) { o.AddFiles("b", intFile(t, fmt.Sprintf("/b/%d-%d", behind, i), 0, 9, 0)) })
		}
		before := rc.n.Load()
		if _, err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		return rc.n.Load() - before
	}
	near, far := reads(1), reads(300)
	if far > near+5 {
		t.Errorf("a commit 300 snapshots behind made %d reads, one 1 behind %d", far, near)
	}
}

// A transaction whose base snapshot was expired while it was open cannot
// know what changed since, and is refused with ErrConflict.
func TestConflictAfterBaseExpired(t *testing.T) {
	c := newMemCatalog(t)
	commit(t, c, func(tx *Txn) { tx.CreateTable("a", []ColumnDef{{Name: "x", Type: "bigint"}}) })
	tx, err := c.Begin()
	if err != nil {
		t.Fatal(err)
	}
	tx.AddFiles("a", intFile(t, "/a/late", 0, 9, 0))
	var last Snapshot
	for i := range 3 {
		last = commit(t, c, func(o *Txn) { o.AddFiles("a", intFile(t, fmt.Sprintf("/a/%d", i), 0, 9, 0)) })
	}
	if _, err := c.ExpireSnapshots(last.Time, false); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "expired") {
		t.Errorf("commit after its base expired: %v, want ErrConflict naming the expiry", err)
	}
}
