package catalog

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake/catalog/catalogpb"
	"github.com/rocklake/rocklake/kv"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/membership"
	"github.com/rocklake/rocklake/stats"
)

// Expiry commits in several batches (expirewrites.go). Over random
// histories (tables in blocks and in rows, files of every owner with
// row groups, filters and variant statistics, removals, rewrites, delete
// files, a dropped table), with a commit at every point expiry may make
// one, it is cut off after every number of its commits in turn, on a
// store with range deletes and on one without. After each cut: every
// kept snapshot reads what it read before (its rows, and a plan's file
// set, bounds, filters and delete files from blocks); add still finds
// every retired file of the user's, with the same "rewritten"; and the
// next expiry leaves the store exactly as one uncut expiry does (cleanup's
// schedule times aside). A commit that loses the fence part-way instead
// makes the expiry start again by itself: the same end state, and a
// result that counts what the lost attempt committed.
func TestExpireCutOffAnywhere(t *testing.T) {
	oldBytes, oldGroup, oldRun := expireChunkBytes, expireGroup, minRangeFiles
	// Runs of every length go by range where the store has them.
	expireChunkBytes, expireGroup, minRangeFiles = 1, 2, 1
	defer func() { expireChunkBytes, expireGroup, minRangeFiles = oldBytes, oldGroup, oldRun }()
	// Every cut builds a catalog and expires it twice, which PostgreSQL
	// and the race detector make slow: one history there, four here.
	seeds := uint64(4)
	if b := os.Getenv(kvtest.BackendEnv); testing.Short() || (b != "" && b != "memory") {
		seeds = 1
	}
	for seed := range seeds {
		for _, ranges := range []bool{true, false} {
			t.Run(fmt.Sprintf("seed=%d/ranges=%v", seed, ranges), func(t *testing.T) {
				testExpireCutOff(t, seed, ranges)
			})
		}
	}
}

func testExpireCutOff(t *testing.T, seed uint64, ranges bool) {
	// One history, copied key by key for each run.
	origin := &faultStore{Store: kvtest.Store(t), at: -1, ranges: ranges}
	oc, err := CreateInStore(origin, Options{Now: fixedNow()})
	if err != nil {
		t.Fatal(err)
	}
	h := makeExpireHistory(t, oc, origin, t.TempDir(), seed)
	build := func() (*Catalog, *faultStore, *expireHistory) {
		store := copyToFaultStore(t, origin, ranges)
		c, err := OpenStore(store, Options{Now: fixedNow()})
		if err != nil {
			t.Fatal(err)
		}
		return c, store, h
	}
	// The reference: one uncut expiry.
	c, store, h := build()
	before := h.views(t, c)
	retiredBefore := h.retired(t, c)
	store.seen = 0
	want, err := c.ExpireSnapshots(h.cutoff, false)
	if err != nil {
		t.Fatal(err)
	}
	commits := store.seen
	if want.FilesForgotten == 0 || len(want.Expired) == 0 {
		t.Fatalf("the history expires nothing: %+v", want)
	}
	if !ranges && want.TablesForgotten == 0 {
		t.Fatal("the history drops no table before the cutoff")
	}
	h.checkViews(t, c, before, "uncut")
	checkNothingLeft(t, c)
	retiredAfter := h.retired(t, c)
	wantState := expiryState(t, c)
	if commits < 8 {
		t.Fatalf("the expiry took %d commits; cuts between them were hardly tried", commits)
	}
	t.Logf("%d files and %d tables forgotten in %d commits", want.FilesForgotten, want.TablesForgotten, commits)

	for cut := 1; cut < commits; cut++ {
		c, store, h := build()
		store.seen, store.at, store.err = 0, cut+1, errCut
		_, err := c.ExpireSnapshots(h.cutoff, false)
		if !errors.Is(err, errCut) {
			t.Fatalf("cut after %d commits: %v", cut, err)
		}
		store.at = -1
		where := fmt.Sprintf("cut after %d of %d commits", cut, commits)
		h.checkViews(t, c, before, where)
		got := h.retired(t, c)
		for _, r := range got {
			if !slices.Contains(retiredBefore, r) {
				t.Fatalf("%s: add finds a retired file it did not find before: %s", where, r)
			}
		}
		for _, r := range retiredAfter {
			if !slices.Contains(got, r) {
				t.Fatalf("%s: add no longer finds the retired file %s\n(finds %q)", where, r, got)
			}
		}
		if _, err := c.ExpireSnapshots(h.cutoff, false); err != nil {
			t.Fatalf("%s: the next expiry: %v", where, err)
		}
		h.checkViews(t, c, before, where+", then expired again")
		compareStates(t, where+", then expired again", expiryState(t, c), wantState)

		// The same commit lost to another writer instead.
		c, store, h = build()
		store.seen, store.at, store.err, store.once = 0, cut+1, kv.ErrConditionFailed, true
		res, err := c.ExpireSnapshots(h.cutoff, false)
		if err != nil {
			t.Fatalf("lost commit %d: %v", cut, err)
		}
		where = fmt.Sprintf("commit %d of %d lost", cut, commits)
		compareStates(t, where, expiryState(t, c), wantState)
		if g, w := resultLine(res), resultLine(want); g != w {
			t.Fatalf("%s: the expiry says\n%s\nwant\n%s", where, g, w)
		}
	}
}

// expireHistory is a random history made for an expiry.
type expireHistory struct {
	cutoff time.Time
	kept   []int64              // the snapshots the expiry keeps
	owner  map[string]Ownership // by location
	tables []string
}

func makeExpireHistory(t *testing.T, c *Catalog, store kv.Store, dir string, seed uint64) *expireHistory {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 41))
	// z comes after the dropped table u, so that expiry commits after
	// it: u's counts must survive a commit lost after them.
	h := &expireHistory{owner: map[string]Ownership{}, tables: []string{"t", "old", "u", "z"}}
	defs := []ColumnDef{{Name: "x", Type: "bigint"}, {Name: "y", Type: "bigint"}, {Name: "v", Type: "variant"}}
	commit(t, c, func(tx *Txn) {
		tx.CreateTable("t", defs)
		tx.CreateTable("old", defs)
		tx.CreateTable("u", defs)
		tx.CreateTable("z", defs)
	})
	// "old" stands for a table made before blocks: no marker.
	dropBlocksMarker(t, c, store, "old")
	fdata, _, _ := membership.Build([]uint64{1, 2, 3})
	n := 0
	file := func() NewFile {
		n++
		p := filepath.Join(dir, fmt.Sprintf("f%03d", n))
		lo := rng.Int64N(1000)
		nf := intFile(t, p, lo, lo+rng.Int64N(50), rng.Int64N(3))
		x := &nf.Columns[0]
		rgs := 1 + rng.IntN(3)
		for i := 1; i < rgs; i++ {
			rg := x.RowGroups[0]
			rg.Index, rg.FirstRow = int32(i), 0
			x.RowGroups = append(x.RowGroups, rg)
		}
		nf.RowGroupCount = int32(rgs)
		if rng.IntN(3) == 0 {
			x.Filter = &Filter{Kind: membership.Kind, Data: fdata, Distinct: 3}
		}
		y := nf.Columns[0]
		y.Path, y.Filter = []string{"y"}, nil
		nf.Columns = append(nf.Columns, y)
		if rng.IntN(2) == 0 {
			nf.Columns = append(nf.Columns, FileColumn{Path: []string{"v"}, Variants: []VariantStats{{Path: `"a"`, ShreddedType: "int64",
				ValueCount: 1, Min: stats.Known(enc(t, "int64", fmt.Sprint(lo))), Max: stats.Known(enc(t, "int64", fmt.Sprint(lo+1)))}}})
		}
		nf.Owner = []Ownership{OwnerUser, OwnerTaken, OwnerRocklake}[rng.IntN(3)]
		h.owner[p] = nf.Owner
		return nf
	}
	live := map[string][]int64{}
	ids := func(table string) {
		_, files := headFiles(t, c, table)
		live[table] = live[table][:0]
		for _, f := range files {
			live[table] = append(live[table], f.ID)
		}
	}
	someOf := func(table string) []int64 {
		var out []int64
		for _, id := range live[table] {
			if rng.IntN(3) == 0 {
				out = append(out, id)
			}
		}
		return out
	}
	deleted := map[int64]bool{}
	var snaps []Snapshot
	steps := 14
	for step := range steps {
		if step == steps/2 {
			commit(t, c, func(tx *Txn) { tx.DropTable("u") })
			h.tables = slices.DeleteFunc(h.tables, func(n string) bool { return n == "u" })
		}
		for _, table := range h.tables {
			var s Snapshot
			switch k := rng.IntN(4); {
			case k == 0 && len(live[table]) > 1:
				gone := someOf(table)
				if len(gone) == 0 {
					continue
				}
				s = commit(t, c, func(tx *Txn) { tx.RemoveFiles(table, gone...) })
			case k == 1 && len(live[table]) > 1:
				// A rewrite: files out, one in, in one snapshot.
				gone := someOf(table)
				nf := file()
				s = commit(t, c, func(tx *Txn) { tx.RemoveFiles(table, gone...); tx.AddFiles(table, nf) })
			case k == 2 && len(live[table]) > 0 && table != "u":
				id := live[table][rng.IntN(len(live[table]))]
				if deleted[id] {
					continue
				}
				deleted[id] = true
				p := filepath.Join(dir, fmt.Sprintf("delete-%d", id))
				h.owner[p] = OwnerRocklake
				s = commit(t, c, func(tx *Txn) {
					tx.SetDeletes(table, NewDeleteFile{DataFileID: id, Path: p, DeleteCount: 1, FileSizeBytes: 10})
				})
			default:
				var nfs []NewFile
				for range 1 + rng.IntN(6) {
					nfs = append(nfs, file())
				}
				s = commit(t, c, func(tx *Txn) { tx.AddFiles(table, nfs...) })
			}
			snaps = append(snaps, s)
			ids(table)
		}
	}
	// Expire the first two thirds; the rest are kept.
	keep := snaps[len(snaps)*2/3]
	h.cutoff = keep.Time
	all, err := c.Snapshots()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range all {
		if s.ID >= keep.ID {
			h.kept = append(h.kept, s.ID)
		}
	}
	return h
}

// views reads every kept snapshot as readers and plans do.
func (h *expireHistory) views(t *testing.T, c *Catalog) map[int64]string {
	t.Helper()
	out := map[int64]string{}
	for _, id := range h.kept {
		out[id] = snapshotView(t, c, id) + plannedView(t, c, id)
	}
	return out
}

func (h *expireHistory) checkViews(t *testing.T, c *Catalog, want map[int64]string, where string) {
	t.Helper()
	got := h.views(t, c)
	for _, id := range h.kept {
		if got[id] != want[id] {
			t.Fatalf("%s: snapshot %d reads differently: %s", where, id, firstDifference(got[id], want[id]))
		}
	}
}

// plannedView is what a plan reads of each table at snapshot id: its file
// set (from blocks where it has them), each column's bounds and filters,
// variant statistics, and delete files.
func plannedView(t *testing.T, c *Catalog, id int64) string {
	t.Helper()
	r, err := c.Read(id)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tables, err := r.Tables()
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	for _, tb := range tables {
		fs, err := r.FileSet(tb.ID)
		if err != nil {
			t.Fatalf("snapshot %d, table %s: %v", id, tb.Name, err)
		}
		fmt.Fprintf(&sb, "plan %s ids %v rows %v rgs %v\n", tb.Name, fs.IDs, fs.RecordCounts, fs.RowGroupCount)
		for i := range fs.Len() {
			f, err := r.FileAt(fs, i)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&sb, " at %d %s\n", i, f.Path)
		}
		cols, err := r.Columns(tb.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, col := range cols {
			cb, err := r.ColumnBounds(tb.ID, col.ID)
			if err != nil {
				t.Fatal(err)
			}
			filters, err := r.Filters(tb.ID, col.ID)
			if err != nil {
				t.Fatal(err)
			}
			for i := range cb.Len() {
				var st stats.Column
				known := cb.Fill(i, &st)
				fmt.Fprintf(&sb, " col %d file %d %v %+v filter %v\n", col.ID, fs.IDs[i], known, st, filters != nil && filters.Has(i))
				vs, err := r.FileVariantStats(tb.ID, col.ID, fs.IDs[i])
				if err != nil {
					t.Fatal(err)
				}
				if len(vs) > 0 {
					fmt.Fprintf(&sb, "  variants %+v\n", vs)
				}
			}
		}
		dels, err := r.DeleteFiles(tb.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, fid := range slices.Sorted(mapKeys(dels)) {
			fmt.Fprintf(&sb, " deletes %d %+v\n", fid, dels[fid])
		}
	}
	return sb.String()
}

func mapKeys[V any](m map[int64]V) func(func(int64) bool) {
	return func(yield func(int64) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// retired is what add finds of the user's retired files at the head, one
// line each, sorted.
func (h *expireHistory) retired(t *testing.T, c *Catalog) []string {
	t.Helper()
	r, err := c.Read(Latest)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []string
	for _, name := range h.tables {
		tb, err := r.Table(name)
		if err != nil {
			t.Fatal(err)
		}
		files, err := r.RetiredFiles(tb)
		if err != nil {
			t.Fatalf("retired files of %s: %v", name, err)
		}
		for _, f := range files {
			if h.owner[f.Location].Deletable() {
				continue
			}
			out = append(out, fmt.Sprintf("%s %s end %d rewritten %v", name, f.Location, f.EndSnapshot, f.Rewritten))
		}
	}
	sort.Strings(out)
	return out
}

// checkNothingLeft checks that every key of a file names a file whose
// row is kept, and that no copy of an expired snapshot is left.
func checkNothingLeft(t *testing.T, c *Catalog) {
	t.Helper()
	rows := map[[2]int64]bool{}
	err := scanRange(c.store, key(tagDataFile), func(k, _ []byte) error {
		table, _ := idAt(k, 0)
		file, err := idAt(k, 1)
		rows[[2]int64{table, file}] = true
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for tag, at := range map[byte]int{tagFileColumnStats: 2, tagRowGroupStats: 2, tagFileVariantStats: 2, tagFileFilter: 2, tagDeleteFile: 1} {
		err := scanRange(c.store, key(tag), func(k, _ []byte) error {
			table, _ := idAt(k, 0)
			file, err := idAt(k, at)
			if err == nil && !rows[[2]int64{table, file}] {
				return fmt.Errorf("key %x (tag %#x) names file %d of table %d, which has no row", k, tag, file, table)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := countRange(t, c, key(tagExpiredSnapshot)); n > 0 {
		t.Fatalf("%d copies of expired snapshots left", n)
	}
}

// expiryState is every key and value, but the fence's (every commit
// replaces it) and the time a file was scheduled for cleanup.
func expiryState(t *testing.T, c *Catalog) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := scanBetween(c.store, nil, nil, func(k, v []byte) error {
		switch k[0] {
		case tagFence:
			return nil
		case tagFileToDelete:
			var p catalogpb.FileToDelete
			if err := decodeValue(v, &p); err != nil {
				return err
			}
			p.ScheduledUnixMicros = 0
			out[fmt.Sprintf("%x", k)] = p.String()
			return nil
		}
		out[fmt.Sprintf("%x", k)] = fmt.Sprintf("%x", v)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func compareStates(t *testing.T, where string, got, want map[string]string) {
	t.Helper()
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range want {
			if !yield(k) {
				return
			}
		}
	}) {
		if g, ok := got[k]; !ok {
			t.Fatalf("%s: key %s is missing", where, k)
		} else if g != want[k] {
			t.Fatalf("%s: key %s holds %s, want %s", where, k, g, want[k])
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Fatalf("%s: key %s is left", where, k)
		}
	}
}

// firstDifference shows the first line where got and want differ.
func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			return fmt.Sprintf("line %d is\n%s\nwant\n%s", i+1, a, b)
		}
	}
	return "no line differs"
}

func resultLine(r *ExpireResult) string {
	s, d := slices.Clone(r.Scheduled), slices.Clone(r.Deletable)
	sort.Strings(s)
	sort.Strings(d)
	return fmt.Sprintf("kept %d expired %v files %d tables %d scheduled %v deletable %v",
		r.OldestKept.ID, r.Expired, r.FilesForgotten, r.TablesForgotten, s, d)
}

// faultStore counts commits and refuses the one numbered at (from 1)
// with err, having written nothing: only that one when once is set, if it
// has a condition (a lost fence; a batch without one cannot lose it),
// else every one from it on (a process cut off). Its batches
// delete ranges where ranges is set and the store's do.
// copyToFaultStore copies every key of origin into a new store of the
// test's backend, wrapped to cut commits off (and to hide its range
// deletes unless ranges).
func copyToFaultStore(t *testing.T, origin kv.Store, ranges bool) *faultStore {
	t.Helper()
	store := &faultStore{Store: kvtest.Store(t), at: -1, ranges: ranges}
	b := store.Store.NewBatch()
	defer b.Close()
	err := scanBetween(origin, nil, nil, func(k, v []byte) error {
		return b.Set(append([]byte(nil), k...), append([]byte(nil), v...))
	})
	if err == nil {
		err = b.Commit()
	}
	if err != nil {
		t.Fatal(err)
	}
	return store
}

type faultStore struct {
	kv.Store
	seen, at int
	err      error
	once     bool
	ranges   bool
	deleted  int // ranges deleted
}

func (s *faultStore) NewBatch() kv.Batch {
	b := &faultBatch{Batch: s.Store.NewBatch(), s: s}
	if rd, ok := b.Batch.(kv.RangeDeleter); ok && s.ranges {
		return &faultRangeBatch{faultBatch: b, rd: rd}
	}
	return b
}

type faultBatch struct {
	kv.Batch
	s      *faultStore
	fenced bool // it has a condition, which another writer can break
}

func (b *faultBatch) Expect(k, v []byte) error {
	b.fenced = true
	return b.Batch.Expect(k, v)
}

func (b *faultBatch) Commit() error {
	s := b.s
	if s.at > 0 && s.seen+1 >= s.at {
		if s.once {
			s.at = -1
			if b.fenced {
				return s.err
			}
		} else {
			return s.err
		}
	}
	s.seen++
	return b.Batch.Commit()
}

type faultRangeBatch struct {
	*faultBatch
	rd kv.RangeDeleter
}

func (b *faultRangeBatch) DeleteRange(start, end []byte) error {
	b.s.deleted++
	return b.rd.DeleteRange(start, end)
}

// Expiry deletes a run of forgotten files with no live file between them
// by range, per column and tag (deleteFileStats): over random histories
// (removals of a random third, rewrites, delete files, a dropped table,
// groups of every size), an expiry that deletes every run by range leaves
// the store exactly as one that deletes key by key.
func TestExpireRunsByRangeAsByKey(t *testing.T) {
	oldGroup, oldRun := expireGroup, minRangeFiles
	defer func() { expireGroup, minRangeFiles = oldGroup, oldRun }()
	seeds := uint64(16)
	if testing.Short() {
		seeds = 4
	}
	ranged := 0
	for seed := range seeds {
		origin := kvtest.Store(t)
		oc, err := CreateInStore(origin, Options{Now: fixedNow()})
		if err != nil {
			t.Fatal(err)
		}
		h := makeExpireHistory(t, oc, origin, t.TempDir(), seed)
		expireGroup = []int{1, 3, 1024}[seed%3]
		var states [2]map[string]string
		for i, ranges := range []bool{false, true} {
			minRangeFiles = []int{1 << 30, 1}[i]
			store := copyToFaultStore(t, origin, ranges)
			c, err := OpenStore(store, Options{Now: fixedNow()})
			if err != nil {
				t.Fatal(err)
			}
			before := h.views(t, c)
			if _, err := c.ExpireSnapshots(h.cutoff, false); err != nil {
				t.Fatal(err)
			}
			h.checkViews(t, c, before, fmt.Sprintf("seed %d, ranges %v", seed, ranges))
			checkNothingLeft(t, c)
			states[i] = expiryState(t, c)
			ranged += store.deleted
			c.Close()
		}
		compareStates(t, fmt.Sprintf("seed %d: by range", seed), states[1], states[0])
		compareStates(t, fmt.Sprintf("seed %d: by key", seed), states[0], states[1])
	}
	if ranged == 0 {
		t.Fatal("no expiry deleted a range: the histories test nothing")
	}
}
