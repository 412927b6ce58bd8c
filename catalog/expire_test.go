package catalog

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake/kv"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/membership"
	"github.com/rocklake/rocklake/stats"
)

// snapshotView renders everything a reader sees at a snapshot: tables,
// files, file and row-group stats, table stats.
func snapshotView(t *testing.T, c *Catalog, id int64) string {
	t.Helper()
	r, err := c.Read(id)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var sb strings.Builder
	tables, err := r.Tables()
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range tables {
		fmt.Fprintf(&sb, "table %s %d\n", tb.Name, tb.ID)
		cols, err := r.Columns(tb.ID)
		if err != nil {
			t.Fatal(err)
		}
		files, err := r.Files(tb.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			fmt.Fprintf(&sb, " file %+v\n", f)
		}
		for _, col := range cols {
			err := r.FileColumnStats(tb.ID, col.ID, func(fileID int64, st *stats.Column) error {
				rgs, err := r.RowGroupStats(tb.ID, col.ID, fileID)
				fmt.Fprintf(&sb, " stats %d %d %+v %+v\n", col.ID, fileID, *st, rgs)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		ts, err := r.TableStats(tb.ID)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&sb, " table stats %d rows %d files\n", ts.RecordCount, ts.FileCount)
		for _, id := range slices.Sorted(maps.Keys(ts.Columns)) {
			cs := ts.Columns[id]
			fmt.Fprintf(&sb, " col %d %s..%s\n", id, decodeInt(t, cs.Min), decodeInt(t, cs.Max))
		}
	}
	return sb.String()
}

func countKeys(t *testing.T, c *Catalog, tag byte) int {
	t.Helper()
	n := 0
	if err := scanRange(c.store, []byte{tag}, func(_, _ []byte) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

func fileID(t *testing.T, c *Catalog, table, path string) int64 {
	t.Helper()
	_, files := headFiles(t, c, table)
	for _, f := range files {
		if f.Path == path {
			return f.ID
		}
	}
	t.Fatalf("no live file %s in %s", path, table)
	return 0
}

// headFiles is a table at the head and its live files.
func headFiles(t *testing.T, c *Catalog, table string) (Table, []DataFile) {
	t.Helper()
	r, err := c.Read(Latest)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tb, err := r.Table(table)
	if err != nil {
		t.Fatal(err)
	}
	files, err := r.Files(tb.ID)
	if err != nil {
		t.Fatal(err)
	}
	return tb, files
}

// plainBatches hides the optional extras of a store's batches (range
// deletes among them), so that a test takes the path a store without
// them takes.
type plainBatches struct{ kv.Store }

func (s plainBatches) NewBatch() kv.Batch { return struct{ kv.Batch }{s.Store.NewBatch()} }

// The expiry of a dropped table deletes every key under its id, by range
// where the store's batches delete ranges and key by key where not.
func TestExpireKeepsWhatKeptSnapshotsRead(t *testing.T) {
	for _, ranges := range []bool{true, false} {
		t.Run(fmt.Sprint("ranges=", ranges), func(t *testing.T) {
			var store kv.Store = kvtest.Store(t)
			if _, ok := store.NewBatch().(kv.RangeDeleter); ok != ranges {
				if ranges {
					t.Skip("the test store's batches have no range deletes")
				}
				store = plainBatches{store}
			}
			c, err := CreateInStore(store, Options{Now: fixedNow()})
			if err != nil {
				t.Fatal(err)
			}
			testExpireKeepsWhatKeptSnapshotsRead(t, c)
		})
	}
	// A catalog in a directory wraps Pebble's batches (to record the
	// head), and passes range deletes through only where the batch has
	// them (Pebble's do not, for now).
	t.Run("dir", func(t *testing.T) {
		c, err := Create(t.TempDir(), Options{Now: fixedNow()})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		testExpireKeepsWhatKeptSnapshotsRead(t, c)
	})
	t.Run("recording", func(t *testing.T) {
		b := (&recordingStore{Store: kvtest.Store(t)}).NewBatch()
		defer b.Close()
		_, inner := kvtest.Store(t).NewBatch().(kv.RangeDeleter)
		if _, ok := b.(kv.RangeDeleter); ok != inner {
			t.Fatalf("the recording wrapper (%T) says range deletes %v over a batch that says %v", b, ok, inner)
		}
	})
}

func testExpireKeepsWhatKeptSnapshotsRead(t *testing.T, c *Catalog) {
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	for _, n := range []string{"a", "b", "c", "u1"} {
		if err := os.WriteFile(p(n), []byte(n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	x := []ColumnDef{{Name: "x", Type: "bigint"}}
	commit(t, c, func(tx *Txn) { tx.CreateTable("t", x); tx.CreateTable("u", x) })
	fdata, _, _ := membership.Build([]uint64{1, 2, 3})
	withFilter := intFile(t, p("a"), 0, 9, 1)
	withFilter.Columns[0].Filter = &Filter{Kind: membership.Kind, Data: fdata, Distinct: 3}
	commit(t, c, func(tx *Txn) {
		tx.AddFiles("t", withFilter, intFile(t, p("b"), 10, 19, 0))
		u1 := intFile(t, p("u1"), 0, 5, 0)
		u1.Owner = OwnerTaken // the only file cleanup may delete
		tx.AddFiles("u", u1)
	})
	aOld := fileID(t, c, "t", p("a"))
	rd, _ := c.Read(Latest)
	u, _ := rd.Table("u")
	uID := u.ID
	rd.Close()
	commit(t, c, func(tx *Txn) { tx.RemoveFiles("t", aOld) })
	commit(t, c, func(tx *Txn) { tx.AddFiles("t", intFile(t, p("c"), 20, 29, 0)); tx.DropTable("u") })
	stale, err := c.Begin() // begins at s4, commits after s4 is expired
	if err != nil {
		t.Fatal(err)
	}
	stale.AddFiles("t", intFile(t, p("d"), 30, 39, 0))
	s5 := commit(t, c, func(tx *Txn) { tx.AddFiles("t", intFile(t, p("a"), 0, 3, 0)) }) // a's path again
	s6 := commit(t, c, func(tx *Txn) { tx.RemoveFiles("t", fileID(t, c, "t", p("b"))) })

	before := map[int64]string{}
	for id := s5.ID; id <= s6.ID; id++ {
		before[id] = snapshotView(t, c, id)
	}
	rowGroupsBefore := countKeys(t, c, tagRowGroupStats)
	if got := countKeys(t, c, tagFileFilter); got != 1 {
		t.Fatalf("%d membership filter rows, want 1", got)
	}

	// A dry run reports and writes nothing.
	h := dump(t, c)
	dry, err := c.ExpireSnapshots(s5.Time, true)
	if err != nil {
		t.Fatal(err)
	}
	if dump(t, c) != h {
		t.Fatal("dry run changed the store")
	}

	res, err := c.ExpireSnapshots(s5.Time, false)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(dry) != fmt.Sprint(res) {
		t.Errorf("dry run said %+v, the run did %+v", dry, res)
	}
	if res.OldestKept.ID != s5.ID || !slices.Equal(res.Expired, []int64{0, 1, 2, 3, 4}) {
		t.Errorf("kept from %d, expired %v; want from %d, 0..4", res.OldestKept.ID, res.Expired, s5.ID)
	}
	// The first a (retired at s3) and u's file go; a's path is registered
	// again, so only u1 is scheduled.
	if res.FilesForgotten != 2 || res.TablesForgotten != 1 || !slices.Equal(res.Scheduled, []string{p("u1")}) {
		t.Errorf("forgot %d files, %d tables, scheduled %v", res.FilesForgotten, res.TablesForgotten, res.Scheduled)
	}
	for id, want := range before {
		if got := snapshotView(t, c, id); got != want {
			t.Errorf("snapshot %d reads differently after expiry:\n%s\nwant\n%s", id, got, want)
		}
	}
	if got := countKeys(t, c, tagFileFilter); got != 0 {
		t.Errorf("%d membership filter rows left, want 0 (the forgotten file's)", got)
	}
	for _, tag := range tableTags {
		n := 0
		if err := scanRange(c.store, key(tag, uID), func(_, _ []byte) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			t.Errorf("%d keys of the dropped table left under tag %#x", n, tag)
		}
	}
	if got := countKeys(t, c, tagRowGroupStats); got != rowGroupsBefore-2 {
		t.Errorf("row-group stats rows: %d, want %d (the two forgotten files' rows deleted)", got, rowGroupsBefore-2)
	}
	if _, err := c.Read(3); !errors.Is(err, ErrNoSuchSnapshot) || !strings.Contains(err.Error(), "expired") {
		t.Errorf("reading an expired snapshot: %v", err)
	}
	if _, err := stale.Commit(); !errors.Is(err, ErrConflict) {
		t.Errorf("a transaction begun at an expired snapshot committed: %v", err)
	}
	if got := countKeys(t, c, tagSnapshot); got != 2 {
		t.Errorf("%d snapshot rows left, want 2", got)
	}

	// Expiring at the newest snapshot keeps only it: b (retired at s6)
	// goes too. Expiry never makes a snapshot.
	res, err = c.ExpireSnapshots(time.Now().Add(time.Hour), false)
	if err != nil {
		t.Fatal(err)
	}
	if res.OldestKept.ID != s6.ID || !slices.Equal(res.Scheduled, []string{p("b")}) {
		t.Errorf("second expiry: kept from %d, scheduled %v", res.OldestKept.ID, res.Scheduled)
	}
	if got := snapshotView(t, c, s6.ID); got != before[s6.ID] {
		t.Errorf("newest snapshot reads differently:\n%s\nwant\n%s", got, before[s6.ID])
	}

	// b is registered again before cleanup runs: cleanup keeps it.
	commit(t, c, func(tx *Txn) { tx.AddFiles("t", intFile(t, p("b"), 10, 19, 0)) })
	sched, err := c.ScheduledFiles()
	if err != nil || len(sched) != 2 {
		t.Fatalf("scheduled %v, %v", sched, err)
	}
	cl, err := c.Cleanup(CleanupOptions{Grace: -1})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cl.Deleted, []string{p("u1")}) || !slices.Equal(cl.Kept, []string{p("b")}) || len(cl.Failed) != 0 {
		t.Errorf("cleanup: %+v", cl)
	}
	for name, want := range map[string]bool{"a": true, "b": true, "c": true, "u1": false} {
		if _, err := os.Stat(p(name)); (err == nil) != want {
			t.Errorf("%s exists=%v after cleanup, want %v", name, err == nil, want)
		}
	}
	if sched, _ := c.ScheduledFiles(); len(sched) != 0 {
		t.Errorf("still scheduled after cleanup: %v", sched)
	}
}

// A file cleanup cannot remove stays scheduled and is reported.
func TestCleanupReportsFailures(t *testing.T) {
	c := newMemCatalog(t)
	dir := t.TempDir()
	full := filepath.Join(dir, "full")
	if err := os.MkdirAll(filepath.Join(full, "child"), 0o755); err != nil {
		t.Fatal(err)
	}
	commit(t, c, func(tx *Txn) { tx.CreateTable("t", []ColumnDef{{Name: "x", Type: "bigint"}}) })
	f := intFile(t, full, 0, 1, 0)
	f.Owner = OwnerTaken
	commit(t, c, func(tx *Txn) { tx.AddFiles("t", f) })
	commit(t, c, func(tx *Txn) { tx.RemoveFiles("t", fileID(t, c, "t", full)) })
	if _, err := c.ExpireSnapshots(time.Now().Add(time.Hour), false); err != nil {
		t.Fatal(err)
	}
	cl, err := c.Cleanup(CleanupOptions{Grace: -1})
	if err != nil {
		t.Fatal(err)
	}
	if cl.Failed[full] == nil || len(cl.Deleted) != 0 {
		t.Fatalf("removing a non-empty directory: %+v", cl)
	}
	if sched, _ := c.ScheduledFiles(); len(sched) != 1 {
		t.Errorf("a failed removal was unscheduled: %v", sched)
	}
}

// Expiry deletes exactly the row-group stats of the files it forgets,
// whether they are a few of the table (one seek each) or most of it (one
// read of the range): random tables, row groups per file and shares of
// files removed, checked key by key against what was there before.
func TestExpireDeletesExactlyTheForgottenRowGroups(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 7))
	for round := range 12 {
		c := newMemCatalog(t)
		defs := []ColumnDef{{Name: "x", Type: "bigint"}, {Name: "y", Type: "bigint"}}
		commit(t, c, func(tx *Txn) { tx.CreateTable("t", defs); tx.CreateTable("u", defs) })
		file := func(table string, i int) NewFile {
			nf := intFile(t, fmt.Sprintf("/d/%s/%d-%d.parquet", table, round, i), int64(i), int64(i)+9, 0)
			nf.RowGroupCount = 3
			y := nf.Columns[0]
			y.Path = []string{"y"}
			y.RowGroups = nil
			for g := range rng.IntN(4) { // 0 to 3 row groups of stats
				rg := nf.Columns[0].RowGroups[0]
				rg.Index, rg.FirstRow = int32(g), int64(g)
				y.RowGroups = append(y.RowGroups, rg)
			}
			nf.Columns = append(nf.Columns, y)
			return nf
		}
		n := 1 + rng.IntN(80)
		commit(t, c, func(tx *Txn) {
			for i := range n {
				tx.AddFiles("t", file("t", i))
				tx.AddFiles("u", file("u", i))
			}
		})
		r, err := c.Read(Latest)
		if err != nil {
			t.Fatal(err)
		}
		tb, _ := r.Table("t")
		files, _ := r.Files(tb.ID)
		r.Close()
		share := []int{50, 10, 3, 1}[rng.IntN(4)] // remove about 1 in share
		gone := map[int64]bool{}
		var ids []int64
		for _, f := range files {
			if rng.IntN(share) == 0 {
				gone[f.ID] = true
				ids = append(ids, f.ID)
			}
		}
		if len(ids) == 0 {
			continue
		}
		commit(t, c, func(tx *Txn) { tx.RemoveFiles("t", ids...) })
		rowGroupKeys := func() (keys []string) {
			err := scanRange(c.store, []byte{tagRowGroupStats}, func(k, _ []byte) error {
				keys = append(keys, string(k))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			return keys
		}
		var want []string
		for _, k := range rowGroupKeys() {
			table, _ := idAt([]byte(k), 0)
			file, _ := idAt([]byte(k), 2)
			if table != tb.ID || !gone[file] {
				want = append(want, k)
			}
		}
		latest := snapshotView(t, c, Latest)
		res, err := c.ExpireSnapshots(time.Now().Add(time.Hour), false)
		if err != nil {
			t.Fatal(err)
		}
		if res.FilesForgotten != len(ids) {
			t.Errorf("round %d: forgot %d files, want %d", round, res.FilesForgotten, len(ids))
		}
		if got := rowGroupKeys(); !slices.Equal(got, want) {
			t.Errorf("round %d (%d files, %d removed): %d row-group stats rows left, want %d", round, n, len(ids), len(got), len(want))
		}
		if got := snapshotView(t, c, Latest); got != latest {
			g, w := strings.Split(got, "\n"), strings.Split(latest, "\n")
			for i := range min(len(g), len(w)) {
				if g[i] != w[i] {
					t.Errorf("round %d: the newest snapshot reads differently after expiry, line %d:\n%s\nwant\n%s", round, i, g[i], w[i])
					break
				}
			}
		}
	}
}
