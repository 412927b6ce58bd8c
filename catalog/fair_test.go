package catalog

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rocklake/rocklake/internal/pgtest"
)

// A writer to a quiet table among busy writers (each a catalog handle of
// its own, as processes are, appending to a table of its own) commits within lockAfterLost+1 attempts
// every time, however often the busy ones win the fence: after losing
// lockAfterLost times it queues for the write lock and cannot lose again.
// The busy writers all commit too. The threshold is lowered to one loss
// so that the locked path is taken many times.
func TestQuietWriterCommitsWithinTheBound(t *testing.T) {
	const busy, quiet, locked = 4, 40, 5
	defer func(n int) { lockAfterLost = n }(lockAfterLost)
	lockAfterLost = 1
	url := pgtest.URL(t)
	c, err := Create(url, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	commit(t, c, func(tx *Txn) {
		for w := range busy {
			tx.CreateTable(fmt.Sprint("busy", w), []ColumnDef{{Name: "x", Type: "bigint"}})
		}
		tx.CreateTable("quiet", []ColumnDef{{Name: "x", Type: "bigint"}})
	})
	lockedBefore := lockedCommits.Load()
	var stop atomic.Bool
	var wg sync.WaitGroup
	busyCommits := make([]int, busy)
	errs := make(chan error, busy)
	for w := range busy {
		bc, err := Open(url, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer bc.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				tx, err := bc.Begin()
				if err != nil {
					errs <- err
					return
				}
				tx.AddFiles(fmt.Sprint("busy", w), NewFile{Path: fmt.Sprintf("/d/busy-%d-%d.parquet", w, i), RecordCount: 1, RowGroupCount: 1})
				if _, err := tx.Commit(); err != nil {
					errs <- fmt.Errorf("busy writer %d: %w", w, err)
					return
				}
				busyCommits[w]++
			}
		}()
	}
	qc, err := Open(url, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer qc.Close()
	hist := map[int]int{} // attempts → commits
	worst := 0
	for i := 0; i < quiet || lockedCommits.Load()-lockedBefore < locked && i < 100*quiet; i++ {
		tx, err := qc.Begin()
		if err != nil {
			t.Fatal(err)
		}
		tx.AddFiles("quiet", NewFile{Path: fmt.Sprintf("/d/quiet-%d.parquet", i), RecordCount: 1, RowGroupCount: 1})
		if _, err := tx.Commit(); err != nil {
			t.Fatalf("quiet commit %d: %v", i, err)
		}
		hist[tx.attempts]++
		worst = max(worst, tx.attempts)
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("quiet commits by attempts: %v; busy writers' commits %v; commits that took the lock: %d", hist, busyCommits, lockedCommits.Load()-lockedBefore)
	if n := lockedCommits.Load() - lockedBefore; n < locked {
		t.Errorf("%d commits took the lock, want at least %d: the writers did not contend", n, locked)
	}
	if worst > lockAfterLost+1 {
		t.Errorf("a quiet commit took %d attempts, the bound is %d", worst, lockAfterLost+1)
	}
	for w, n := range busyCommits {
		if n == 0 {
			t.Errorf("busy writer %d never committed", w)
		}
	}
}

// A holder of the write lock that dies (its session ends: the server
// ends it, as it does when the process dies) holds up the others only
// until then: a commit waiting behind it lands once it is gone.
func TestDeadLockHolderReleasesWriters(t *testing.T) {
	url := pgtest.URL(t)
	c, err := Create(url, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	commit(t, c, func(tx *Txn) { tx.CreateTable("t", []ColumnDef{{Name: "x", Type: "bigint"}}) })
	before, err := c.Snapshots()
	if err != nil {
		t.Fatal(err)
	}
	holder, err := Open(url, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	_, release, err := holder.writeLock()
	if err != nil {
		t.Fatal(err)
	}
	// (After the session ends: release fails, and gives the connection
	// back to the pool closed, so that the handle can close.)
	defer release()
	done := make(chan error, 1)
	go func() {
		tx, err := c.Begin()
		if err != nil {
			done <- err
			return
		}
		tx.AddFiles("t", NewFile{Path: "/d/a.parquet", RecordCount: 1, RowGroupCount: 1})
		_, err = tx.Commit()
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("a commit landed while another process held the write lock: %v", err)
	case <-time.After(time.Second):
	}
	admin, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	var ended int
	if err := admin.QueryRow(context.Background(), `SELECT count(pg_terminate_backend(pid)) FROM pg_locks
		WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&ended); err != nil {
		t.Fatal(err)
	}
	if ended != 1 {
		t.Fatalf("%d sessions held an advisory lock, want the holder's alone", ended)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the commit behind a dead holder: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("a commit still waits a minute after the lock's holder died")
	}
	snaps, err := c.Snapshots()
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) != len(before)+1 {
		t.Fatalf("%d snapshots after one commit, want %d", len(snaps), len(before)+1)
	}
}
