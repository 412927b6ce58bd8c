package catalog

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/rocklake/rocklake/kv"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/membership"
)

// Where a store has no range deletes, expiry deletes a dropped table's
// keys after its commit, in batches of their own (sweepTable), the table's
// row last. Cut off after every number of those batches in turn: the
// expiry says so, the table's row is still there, every file of the table
// is scheduled once, the kept snapshot reads what it read, and the next
// expiry deletes the rest and schedules nothing twice.
func TestSweepCutOffAnywhere(t *testing.T) {
	old := sweepKeys
	sweepKeys = 7
	defer func() { sweepKeys = old }()
	var tableID int64
	var locations []string
	for cut := 0; ; cut++ {
		store := &cutCommits{Store: plainBatches{kvtest.Store(t)}, left: -1}
		c, err := CreateInStore(store, Options{Now: fixedNow()})
		if err != nil {
			t.Fatal(err)
		}
		tableID, locations = sweepHistory(t, c)
		keptView := snapshotView(t, c, c.mustHead(t).ID)
		store.left = 1 + cut // expiry's commit, then cut sweep batches
		_, err = c.ExpireSnapshots(time.Now().Add(time.Hour), false)
		done := err == nil
		if !done && !errors.Is(err, errCut) {
			t.Fatalf("cut after %d sweep batches: %v", cut, err)
		}
		store.left = -1
		if got := snapshotView(t, c, c.mustHead(t).ID); got != keptView {
			t.Fatalf("cut after %d: the kept snapshot reads\n%s\nwant\n%s", cut, got, keptView)
		}
		if !done && countRange(t, c, key(tagTable, tableID)) == 0 {
			t.Fatalf("cut after %d sweep batches: the dropped table's row went before its other keys", cut)
		}
		checkScheduledOnce(t, c, locations)
		if !done {
			if _, err := c.ExpireSnapshots(time.Now().Add(time.Hour), false); err != nil {
				t.Fatalf("expiry after a cut: %v", err)
			}
			checkScheduledOnce(t, c, locations)
		}
		for _, tag := range tableTags {
			if n := countRange(t, c, key(tag, tableID)); n > 0 {
				t.Fatalf("cut after %d: %d keys of the dropped table left under tag %#x", cut, n, tag)
			}
		}
		if done {
			t.Logf("the sweep took %d batches", cut)
			if cut < 3 {
				t.Fatalf("the sweep took %d batches; a cut between them was never tried", cut)
			}
			return
		}
	}
}

// sweepHistory makes tables t and u, gives u files over three commits
// (two columns, a membership filter, a delete file, one file removed),
// drops u, and returns u's id and every file location it named.
func sweepHistory(t *testing.T, c *Catalog) (int64, []string) {
	t.Helper()
	dir := t.TempDir()
	cols := []ColumnDef{{Name: "x", Type: "bigint"}, {Name: "y", Type: "bigint"}}
	commit(t, c, func(tx *Txn) { tx.CreateTable("t", cols); tx.CreateTable("u", cols) })
	commit(t, c, func(tx *Txn) { tx.AddFiles("t", intFile(t, filepath.Join(dir, "t0"), 0, 9, 0)) })
	var locations []string
	fdata, _, _ := membership.Build([]uint64{1, 2, 3})
	for b := range 3 {
		var nfs []NewFile
		for i := range 5 {
			p := filepath.Join(dir, fmt.Sprintf("u%d-%d", b, i))
			locations = append(locations, p)
			nf := intFile(t, p, int64(i), int64(i+10), int64(b))
			y := nf.Columns[0]
			y.Path = []string{"y"}
			nf.Columns = append(nf.Columns, y)
			if i == 0 {
				nf.Columns[0].Filter = &Filter{Kind: membership.Kind, Data: fdata, Distinct: 3}
			}
			nfs = append(nfs, nf)
		}
		commit(t, c, func(tx *Txn) { tx.AddFiles("u", nfs...) })
	}
	u0 := fileID(t, c, "u", locations[0])
	d := filepath.Join(dir, "delete-u1")
	locations = append(locations, d)
	commit(t, c, func(tx *Txn) {
		tx.SetDeletes("u", NewDeleteFile{DataFileID: fileID(t, c, "u", locations[1]), Path: d, DeleteCount: 1, FileSizeBytes: 10})
	})
	commit(t, c, func(tx *Txn) { tx.RemoveFiles("u", u0) })
	u, _ := headFiles(t, c, "u")
	commit(t, c, func(tx *Txn) { tx.DropTable("u") })
	slices.Sort(locations)
	return u.ID, locations
}

// checkScheduledOnce checks that cleanup holds each location once.
func checkScheduledOnce(t *testing.T, c *Catalog, want []string) {
	t.Helper()
	sched, err := c.ScheduledFiles()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range sched {
		got = append(got, s.Location)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("scheduled %v\nwant %v", got, want)
	}
}

func countRange(t *testing.T, c *Catalog, prefix []byte) int {
	t.Helper()
	n := 0
	if err := scanRange(c.store, prefix, func(_, _ []byte) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

func (c *Catalog) mustHead(t *testing.T) Snapshot {
	t.Helper()
	snaps, err := c.Snapshots()
	if err != nil || len(snaps) == 0 {
		t.Fatal(snaps, err)
	}
	return snaps[len(snaps)-1]
}

var errCut = errors.New("the store stopped taking commits (test)")

// cutCommits lets left more batches commit (all of them while it is
// negative) and refuses the ones after, having written nothing.
type cutCommits struct {
	kv.Store
	left int
}

func (s *cutCommits) NewBatch() kv.Batch { return &cutBatch{Batch: s.Store.NewBatch(), s: s} }

type cutBatch struct {
	kv.Batch
	s *cutCommits
}

func (b *cutBatch) Commit() error {
	if b.s.left == 0 {
		return errCut
	}
	if b.s.left > 0 {
		b.s.left--
	}
	return b.Batch.Commit()
}
