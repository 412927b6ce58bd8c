package catalog

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake/catalog/catalogpb"
	"github.com/rocklake/rocklake/kv/kvtest"
)

// clockCatalog is a catalog whose clock the test moves.
func clockCatalog(t *testing.T) (*Catalog, *time.Time) {
	t.Helper()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c, err := CreateInStore(kvtest.Store(t), Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	return c, &now
}

func touch(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// Each ownership decides what cleanup does with a file no snapshot reads:
// the user's stay on disk, handed-over and rewritten files go, and only a
// rewrite's own directory is removed.
func TestCleanupFollowsOwnership(t *testing.T) {
	c, now := clockCatalog(t)
	dir := t.TempDir()
	user := filepath.Join(dir, "data", "user.parquet")
	taken := filepath.Join(dir, "handed", "taken.parquet")
	written := filepath.Join(dir, "data", "t-optimize-2", "part-00000.parquet")
	claimed := filepath.Join(dir, "data", "t-optimize-2", "part-00001.parquet")
	touch(t, user, taken, written, claimed)

	commit(t, c, func(tx *Txn) { tx.CreateTable("t", []ColumnDef{{Name: "x", Type: "bigint"}}) })
	tk, wr, wr2 := intFile(t, taken, 0, 1, 0), intFile(t, written, 2, 3, 0), intFile(t, claimed, 6, 7, 0)
	tk.Owner, wr.Owner, wr2.Owner = OwnerTaken, OwnerRocklake, OwnerRocklake
	commit(t, c, func(tx *Txn) { tx.AddFiles("t", intFile(t, user, 4, 5, 0), tk, wr, wr2) })
	r, err := c.Read(Latest)
	if err != nil {
		t.Fatal(err)
	}
	files, err := r.Files(1)
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	owners := map[string]Ownership{}
	var ids []int64
	for _, f := range files {
		owners[f.Path] = f.Owner
		ids = append(ids, f.ID)
	}
	want := map[string]Ownership{user: OwnerUser, taken: OwnerTaken, written: OwnerRocklake, claimed: OwnerRocklake}
	for p, o := range want {
		if owners[p] != o {
			t.Errorf("%s recorded as %v, want %v", p, owners[p], o)
		}
	}
	commit(t, c, func(tx *Txn) { tx.RemoveFiles("t", ids...) })

	*now = now.Add(time.Hour)
	if _, err := c.Expire(now.Add(-time.Minute), ExpireOptions{}); !errors.Is(err, ErrRetentionTooShort) || !strings.Contains(err.Error(), "7d") {
		t.Fatalf("expire a minute back under the 7-day floor: %v", err)
	}
	res, err := c.Expire(*now, ExpireOptions{MinRetention: -1})
	if err != nil {
		t.Fatal(err)
	}
	deletable := []string{taken, written, claimed}
	slices.Sort(deletable)
	slices.Sort(res.Deletable)
	if len(res.Scheduled) != 4 || !slices.Equal(res.Deletable, deletable) {
		t.Fatalf("scheduled %v, deletable %v", res.Scheduled, res.Deletable)
	}

	// Within the grace period only the user's file is settled (forgotten).
	*now = now.Add(30 * time.Minute)
	cl, err := c.Cleanup(CleanupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cl.Deleted) != 0 || !slices.Equal(cl.Forgotten, []string{user}) || len(cl.Waiting) != 3 {
		t.Fatalf("cleanup within the grace period: %+v", cl)
	}
	if !exists(user) || !exists(taken) || !exists(written) {
		t.Fatal("cleanup within the grace period removed a file")
	}

	*now = now.Add(31 * time.Minute)
	dry, err := c.Cleanup(CleanupOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	cl, err = c.Cleanup(CleanupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(cl.Deleted)
	if !slices.Equal(cl.Deleted, deletable) || len(cl.Waiting) != 0 || len(cl.Forgotten) != 0 {
		t.Fatalf("cleanup after the grace period: %+v", cl)
	}
	slices.Sort(dry.Deleted)
	if !slices.Equal(dry.Deleted, cl.Deleted) || !slices.Equal(dry.Dirs, cl.Dirs) {
		t.Errorf("dry run said %+v, the run did %+v", dry, cl)
	}
	if !exists(user) || exists(taken) || exists(written) || exists(claimed) {
		t.Error("after cleanup: want only the user's file on disk")
	}
	// The rewrite's directory goes; the directory that held the handed-over
	// file, and the user's, stay.
	if !slices.Equal(cl.Dirs, []string{filepath.Dir(written)}) || exists(filepath.Dir(written)) {
		t.Errorf("removed directories %v", cl.Dirs)
	}
	if !exists(filepath.Dir(taken)) || !exists(filepath.Dir(user)) {
		t.Error("cleanup removed a directory rocklake did not create")
	}
	if sched, _ := c.ScheduledFiles(); len(sched) != 0 {
		t.Errorf("still scheduled: %v", sched)
	}
}

// A catalog written before ownership was recorded holds rows without it:
// cleanup cannot tell rewrites from the user's files, so it deletes none.
func TestUnrecordedOwnershipIsNeverDeleted(t *testing.T) {
	c, now := clockCatalog(t)
	dir := t.TempDir()
	old, sched := filepath.Join(dir, "old.parquet"), filepath.Join(dir, "scheduled.parquet")
	touch(t, old, sched)
	commit(t, c, func(tx *Txn) { tx.CreateTable("t", []ColumnDef{{Name: "x", Type: "bigint"}}) })
	f := intFile(t, old, 0, 1, 0)
	f.Owner = OwnerRocklake
	commit(t, c, func(tx *Txn) { tx.AddFiles("t", f) })
	id := fileID(t, c, "t", old)

	// Rewrite the rows as an older rocklake wrote them: no ownership field.
	raw, err := c.store.Get(key(tagDataFile, 1, id))
	if err != nil {
		t.Fatal(err)
	}
	var p catalogpb.DataFile
	if err := decodeValue(raw, &p); err != nil {
		t.Fatal(err)
	}
	p.Ownership = catalogpb.Ownership_OWNERSHIP_UNRECORDED
	oldFTD := &catalogpb.FileToDelete{TableId: 1, FileId: 99, Location: sched, ScheduledUnixMicros: now.UnixMicro()}
	b := c.store.NewBatch()
	v1, err := encodeValue(&p)
	if err != nil {
		t.Fatal(err)
	}
	v2, err := encodeValue(oldFTD)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Set(key(tagDataFile, 1, id), v1); err != nil {
		t.Fatal(err)
	}
	if err := b.Set(key(tagFileToDelete, 1, 99), v2); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	b.Close()

	commit(t, c, func(tx *Txn) { tx.RemoveFiles("t", id) })
	*now = now.Add(10 * 24 * time.Hour)
	res, err := c.Expire(now.Add(-8*24*time.Hour), ExpireOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Scheduled) != 1 || len(res.Deletable) != 0 {
		t.Fatalf("expire: %+v", res)
	}
	cl, err := c.Cleanup(CleanupOptions{})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(cl.Forgotten)
	if len(cl.Deleted) != 0 || !slices.Equal(cl.Forgotten, []string{old, sched}) || len(cl.Dirs) != 0 {
		t.Fatalf("cleanup: %+v", cl)
	}
	if !exists(old) || !exists(sched) {
		t.Error("cleanup deleted a file of unrecorded ownership")
	}
}
