package prune

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/kv"
	"github.com/rocklake/rocklake/types"
)

// readCounter counts what snapshots of a store read, but for the point
// reads of a value's membership probe (its signature groups, 0x13, and
// the filters that confirm a candidate, 0x10), which depend on the value.
type readCounter struct {
	kv.Store
	reads *int
}

func (s readCounter) NewSnapshot() (kv.Snapshot, error) {
	sn, err := s.Store.NewSnapshot()
	return countedSnapshot{sn, s.reads}, err
}

type countedSnapshot struct {
	kv.Snapshot
	reads *int
}

func (s countedSnapshot) Get(k []byte) ([]byte, error) {
	if len(k) == 0 || (k[0] != 0x10 && k[0] != 0x13) {
		*s.reads++
	}
	return s.Snapshot.Get(k)
}

func (s countedSnapshot) NewIter(lo, hi []byte) (kv.Iterator, error) {
	*s.reads++
	return s.Snapshot.NewIter(lo, hi)
}

// A plan of a state another plan has read reads nothing from the store
// but what depends on its values (a membership probe's groups and
// filters): on PostgreSQL every read is a round trip, and a warm plan
// that made one took four times Pebble's. Every kind of predicate, on a column with
// membership filters and on one without; then after a commit that gives
// the second column its first filter, whose plans must use it (a cached
// "no filters" kept past that commit would keep the file it rules out);
// and always the files a plan keeps hold every matching row.
//
// Both for plans of files only and for full plans, which read their kept
// files' row-group statistics too.
func TestWarmPlansReadNothing(t *testing.T) {
	for _, filesOnly := range []bool{true, false} {
		t.Run(fmt.Sprintf("files-only=%v", filesOnly), func(t *testing.T) { warmPlansReadNothing(t, filesOnly) })
	}
}

// warmLake is a table t of int64 columns a and b in a memory store whose
// reads are counted, with every row it was given, to check what plans
// keep.
type warmLake struct {
	t     testing.TB
	c     *catalog.Catalog
	dir   string
	reads int
	rows  map[string][][2]int64 // file → (a, b) rows
	opts  pqwrite.Options       // how write writes a file
}

// pred is a plan's predicate and whether a row satisfies it.
type pred struct {
	sql   string
	match func(a, b int64) bool
}

// newWarmLake makes the lake's catalog in store, its reads counted where
// count is set (the count's wrapper hides the store's optional
// interfaces, such as PostgreSQL's batched reads and write lock).
func newWarmLake(t testing.TB, store kv.Store, count bool) *warmLake {
	l := &warmLake{t: t, dir: t.TempDir(), rows: map[string][][2]int64{}}
	if count {
		store = readCounter{store, &l.reads}
	}
	c, err := catalog.CreateInStore(store, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l.c = c
	return l
}

// write writes a file of n rows, a and b drawn by row, and returns its path.
func (l *warmLake) write(n int, row func() (a, b int64)) string {
	l.t.Helper()
	p := filepath.Join(l.dir, fmt.Sprintf("f%03d.parquet", len(l.rows)+1))
	var as, bs []*types.Value
	for range n {
		x, y := row()
		a, b := types.IntValue(x), types.IntValue(y)
		as, bs = append(as, &a), append(bs, &b)
		l.rows[p] = append(l.rows[p], [2]int64{x, y})
	}
	err := pqwrite.Write(p, []pqwrite.Column{{Name: "a", Type: types.MustParseType("int64"), Values: as},
		{Name: "b", Type: types.MustParseType("int64"), Values: bs}}, l.opts)
	if err != nil {
		l.t.Fatal(err)
	}
	return p
}

// plan plans p at the latest snapshot, checks that the files it keeps
// hold every matching row, and returns them and the reads it made.
func (l *warmLake) plan(p pred, filesOnly bool) (kept []string, reads int) {
	l.t.Helper()
	r, err := l.c.Read(catalog.Latest)
	if err != nil {
		l.t.Fatal(err)
	}
	defer r.Close()
	before := l.reads
	pl, err := PlanTable(r, "t", p.sql, Options{FilesOnly: filesOnly})
	if err != nil {
		l.t.Fatal(err)
	}
	for _, f := range pl.KeptFiles {
		kept = append(kept, f.Path)
	}
	for path, rs := range l.rows {
		for _, row := range rs {
			if p.match(row[0], row[1]) && !slices.Contains(kept, path) {
				l.t.Fatalf("%s: %s holds a matching row and was skipped", p.sql, path)
			}
		}
	}
	return kept, l.reads - before
}

// planTwice plans p twice and fails if the second plan read the store.
func (l *warmLake) planTwice(stage string, p pred, filesOnly bool) {
	l.t.Helper()
	l.plan(p, filesOnly)
	if _, n := l.plan(p, filesOnly); n != 0 {
		l.t.Fatalf("%s: a second plan of %q at the same state made %d reads", stage, p.sql, n)
	}
}

func warmPlansReadNothing(t *testing.T, filesOnly bool) {
	l := newWarmLake(t, kv.NewMemory(), true)
	rng := rand.New(rand.NewPCG(7, 8))
	write := func() string {
		return l.write(20, func() (int64, int64) { return rng.Int64N(1000), rng.Int64N(1000) })
	}
	var first []string
	for range 6 {
		first = append(first, write())
	}
	opts := ingest.Options{Create: true, NoAutoFilters: true, FilterColumns: []string{"a"}}
	if _, err := ingest.Add(l.c, "t", first, opts); err != nil {
		t.Fatal(err)
	}
	preds := func() []pred {
		va, vb := rng.Int64N(1000), rng.Int64N(1000)
		return []pred{
			{fmt.Sprintf("a = %d", va), func(a, _ int64) bool { return a == va }},
			{fmt.Sprintf("b = %d", vb), func(_, b int64) bool { return b == vb }},
			{fmt.Sprintf("a IN (%d, %d)", va, vb), func(a, _ int64) bool { return a == va || a == vb }},
			{fmt.Sprintf("b > %d", vb), func(_, b int64) bool { return b > vb }},
			{fmt.Sprintf("a < %d AND b = %d", va, vb), func(a, b int64) bool { return a < va && b == vb }},
			{"a IS NULL", func(int64, int64) bool { return false }},
		}
	}
	check := func(stage string) {
		for range 4 {
			for _, p := range preds() {
				l.planTwice(stage, p, filesOnly)
			}
		}
	}
	check("filters on a")
	// b's first filters come with new files; the plans before cached that
	// b had none.
	var later []string
	for range 3 {
		later = append(later, write())
	}
	if _, err := ingest.Add(l.c, "t", later, ingest.Options{FilterColumns: []string{"b"}}); err != nil {
		t.Fatal(err)
	}
	check("filters on a and b")
	// A value of b within every new file's bounds and in none of them:
	// only the files' filters rule it out, so a plan that uses them keeps
	// none of them.
	absent := int64(-1)
	for v := int64(0); v < 1000 && absent < 0; v++ {
		ok := true
		for _, p := range later {
			lo, hi, has := int64(1000), int64(-1), false
			for _, row := range l.rows[p] {
				lo, hi, has = min(lo, row[1]), max(hi, row[1]), has || row[1] == v
			}
			ok = ok && !has && lo < v && v < hi
		}
		if ok {
			absent = v
		}
	}
	if absent < 0 {
		t.Fatal("no value of b lies within every new file's bounds and in none")
	}
	kept, _ := l.plan(pred{fmt.Sprintf("b = %d", absent), func(_, b int64) bool { return b == absent }}, filesOnly)
	for _, p := range later {
		if slices.Contains(kept, p) {
			t.Fatalf("b = %d kept %s, whose filter rules it out: the plan did not see b's first filters", absent, filepath.Base(p))
		}
	}
}

// A warm plan that evaluates only its kept blocks' files (blocks.go)
// reads their stats blocks from the plan cache, not the store: a
// selective predicate over a table of many commits, each a block whose a
// values lie in a range of their own. Every plan's kept files still hold
// every matching row, and a commit after the plans (a new state) is seen.
func TestWarmBlockPlansReadNothing(t *testing.T) {
	for _, filesOnly := range []bool{true, false} {
		t.Run(fmt.Sprintf("files-only=%v", filesOnly), func(t *testing.T) { warmBlockPlansReadNothing(t, filesOnly) })
	}
}

func warmBlockPlansReadNothing(t *testing.T, filesOnly bool) {
	l := newWarmLake(t, kv.NewMemory(), true)
	rng := rand.New(rand.NewPCG(9, 10))
	commit := func(block int64) {
		t.Helper()
		var paths []string
		for range 3 {
			paths = append(paths, l.write(10, func() (int64, int64) { return block*1000 + rng.Int64N(1000), rng.Int64N(100) }))
		}
		if _, err := ingest.Add(l.c, "t", paths, ingest.Options{Create: block == 0, NoAutoFilters: true}); err != nil {
			t.Fatal(err)
		}
	}
	for b := range int64(12) {
		commit(b)
	}
	check := func(stage string, blocks int64) {
		t.Helper()
		subsets := subsetPlans.Load()
		for range 6 {
			va, vb := rng.Int64N(blocks*1000), rng.Int64N(100)
			for _, p := range []pred{
				{fmt.Sprintf("a = %d", va), func(a, _ int64) bool { return a == va }},
				{fmt.Sprintf("a BETWEEN %d AND %d", va, va+400), func(a, _ int64) bool { return va <= a && a <= va+400 }},
				{fmt.Sprintf("a >= %d AND b = %d", va-va%1000+600, vb), func(a, b int64) bool { return a >= va-va%1000+600 && b == vb }},
			} {
				l.planTwice(stage, p, filesOnly)
			}
		}
		if subsetPlans.Load() == subsets {
			t.Fatalf("%s: no plan evaluated only its kept blocks' files", stage)
		}
	}
	check("12 blocks", 12)
	commit(12)
	check("13 blocks", 13)
}
