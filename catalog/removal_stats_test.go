package catalog

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

// A commit that removes a few files keeps the table's stats without
// folding every survivor again where the removed files' stats prove it
// may (removalKeepsStats); whichever way a commit took, the stored stats
// are the exact fold of the live files' (computeTableStats): counts,
// NULL and NaN flags, bounds and their exactness, for random files over
// a small domain (so that removed files often hold the table's extremes),
// with unknown flags and bounds, all-NULL files, files without a stats
// row, an unordered type and one without bounds, and files added in the
// same commits.
func TestRemovalStatsAreTheFold(t *testing.T) {
	cols := []ColumnDef{{Name: "x", Type: "bigint"}, {Name: "d", Type: "double"}, {Name: "s", Type: "varchar"}, {Name: "i", Type: "interval"}, {Name: "j", Type: "json"}}
	domains := map[string][]string{
		"bigint":   {"-3", "0", "1", "2", "5", "9"},
		"double":   {"-2.5", "0", "1.5", "2", "7.25"},
		"varchar":  {"", "a", "ab", "b", "zz"},
		"interval": {"1 day", "2 hours", "3 months"},
	}
	before := removalsKept.Load()
	recomputed := 0
	for seed := range uint64(80) {
		rng := rand.New(rand.NewPCG(seed, 77))
		// One table in three has no unknown flag or bound: with many files
		// one unknown makes the table's unknown, and leaves little to prove.
		unknown := []int{0, 40, 6}[seed%3]
		c := newMemCatalog(t)
		commit(t, c, func(tx *Txn) { tx.CreateTable("t", cols) })
		n := 0
		byPath := map[string]NewFile{}
		file := func() NewFile {
			n++
			rows := int64(1 + rng.IntN(50))
			nf := NewFile{Path: fmt.Sprintf("f%d.parquet", n), RecordCount: rows, FileSizeBytes: int64(100 + rng.IntN(1000)), FooterSize: 10, RowGroupCount: 1}
			for _, cd := range cols {
				if unknown > 0 && rng.IntN(unknown) == 0 {
					continue // no stats row for this column
				}
				nf.Columns = append(nf.Columns, FileColumn{Path: []string{cd.Name}, Stats: randomUnit(t, rng, cd.Type, domains[cd.Type], rows, unknown)})
			}
			byPath[nf.Path] = nf
			return nf
		}
		// rewrite is one file holding the rows of files, as optimize or a
		// copy-on-write change writes it: each column's stats their merge.
		rewrite := func(files []NewFile) NewFile {
			n++
			nf := NewFile{Path: fmt.Sprintf("f%d.parquet", n), FooterSize: 10, RowGroupCount: 1}
			for _, cd := range cols {
				var units []stats.Column
				for _, f := range files {
					for _, fc := range f.Columns {
						if fc.Path[0] == cd.Name {
							units = append(units, fc.Stats)
						}
					}
				}
				if len(units) == len(files) {
					nf.Columns = append(nf.Columns, FileColumn{Path: []string{cd.Name}, Stats: stats.Merge(units)})
				}
			}
			for _, f := range files {
				nf.RecordCount += f.RecordCount
				nf.FileSizeBytes += f.FileSizeBytes
			}
			byPath[nf.Path] = nf
			return nf
		}
		var live []int64
		var livePaths []string
		refresh := func() {
			r, err := c.Read(Latest)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			tb, _ := r.Table("t")
			fs, err := r.Files(tb.ID)
			if err != nil {
				t.Fatal(err)
			}
			live, livePaths = live[:0], livePaths[:0]
			for _, f := range fs {
				live, livePaths = append(live, f.ID), append(livePaths, f.Path)
			}
		}
		// One table in eight is large enough that a removal reads more than
		// peekLimit rows: by key up to an eighth of the table, by one scan
		// past it.
		large := seed%8 == 7
		for range 1 + rng.IntN(3) {
			var nfs []NewFile
			count := 3 + rng.IntN(20)
			if large {
				count += 600
			}
			for range count {
				nfs = append(nfs, file())
			}
			commit(t, c, func(tx *Txn) { tx.AddFiles("t", nfs...) })
		}
		for step := range 25 {
			refresh()
			k := 1 + rng.IntN(3)
			switch rng.IntN(8) {
			case 0:
				k = len(live) / 3 // a large share: folded again
			case 1:
				if large && len(live)/8 > peekLimit+1 {
					k = peekLimit + 1 + rng.IntN(len(live)/8-peekLimit-1)
				}
			}
			rng.Shuffle(len(live), func(i, j int) {
				live[i], live[j] = live[j], live[i]
				livePaths[i], livePaths[j] = livePaths[j], livePaths[i]
			})
			gone := live[:min(k, len(live)-1)]
			var adds []NewFile
			if rng.IntN(2) == 0 {
				var old []NewFile
				for _, p := range livePaths[:len(gone)] {
					old = append(old, byPath[p])
				}
				adds = append(adds, rewrite(old))
			} else {
				for range rng.IntN(3) {
					adds = append(adds, file())
				}
			}
			kept := removalsKept.Load()
			commit(t, c, func(tx *Txn) {
				tx.RemoveFiles("t", gone...)
				if len(adds) > 0 {
					tx.AddFiles("t", adds...)
				}
			})
			if removalsKept.Load() == kept {
				recomputed++
			}
			r, err := c.Read(Latest)
			if err != nil {
				t.Fatal(err)
			}
			tb, _ := r.Table("t")
			stored, sk, err := r.storedTableStats(tb.ID)
			if err != nil || stored == nil || sk.statsKey != (statsKey{table: tb.ID, nextFileID: r.snap.NextFileID, schemaVersion: r.snap.SchemaVersion}) {
				t.Fatalf("seed %d step %d: stored stats %v for another state (%+v), %v", seed, step, stored != nil, sk, err)
			}
			fold, err := r.computeTableStats(tb.ID)
			if err != nil {
				t.Fatal(err)
			}
			r.Close()
			if stored.RecordCount != fold.RecordCount || stored.FileSizeBytes != fold.FileSizeBytes || stored.FileCount != fold.FileCount {
				t.Fatalf("seed %d step %d: counts %d/%d/%d, the fold's %d/%d/%d", seed, step,
					stored.RecordCount, stored.FileSizeBytes, stored.FileCount, fold.RecordCount, fold.FileSizeBytes, fold.FileCount)
			}
			for id, f := range fold.Columns {
				s := stored.Columns[id]
				if s == nil || fmt.Sprint(*s) != fmt.Sprint(*f) {
					t.Fatalf("seed %d step %d column %d: stored %+v, the fold's %+v", seed, step, id, s, f)
				}
			}
		}
	}
	t.Logf("%d removals kept the stats, %d folded again", removalsKept.Load()-before, recomputed)
	if kept := removalsKept.Load() - before; kept == 0 || recomputed == 0 {
		t.Fatalf("%d removals kept the stats, %d folded again: both ways must be taken", kept, recomputed)
	}
}

// randomUnit is a file's stats for one column of type typ over values of
// domain (none: a type without bounds), with rows rows; one flag or bound
// in unknown is unknown (0: none).
func randomUnit(t *testing.T, rng *rand.Rand, typ string, domain []string, rows int64, unknown int) stats.Column {
	t.Helper()
	st := stats.Column{RowCount: rows}
	lost := func() bool { return unknown > 0 && rng.IntN(unknown) == 0 }
	maybeBool := func(v bool) stats.Maybe[bool] {
		if lost() {
			return stats.Maybe[bool]{}
		}
		return stats.Known(v)
	}
	if rng.IntN(7) == 0 {
		// Every row NULL.
		st.NullCount, st.ValueCount, st.ContainsNull = stats.Known(rows), stats.Known(int64(0)), stats.Known(true)
		return st
	}
	nulls := int64(0)
	if rng.IntN(3) == 0 {
		nulls = rng.Int64N(rows)
	}
	if !lost() {
		st.NullCount = stats.Known(nulls)
		st.ValueCount = stats.Known(rows - nulls)
	}
	st.ContainsNull = maybeBool(nulls > 0)
	// Only floats hold NaN; the footers' stats say so of other types.
	st.ContainsNaN = maybeBool(typ == "double" && rng.IntN(3) == 0)
	if len(domain) == 0 {
		return st
	}
	codec, _ := types.CodecFor(types.MustParseType(typ))
	bound := func(s string) []byte {
		v, err := codec.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		b, err := codec.Encode(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a, b := rng.IntN(len(domain)), rng.IntN(len(domain))
	if a > b {
		a, b = b, a
	}
	if !lost() {
		st.Min, st.MinIsExact = stats.Known(bound(domain[a])), rng.IntN(2) == 0
	}
	if !lost() {
		st.Max, st.MaxIsExact = stats.Known(bound(domain[b])), rng.IntN(2) == 0
	}
	return st
}

// unitLeavesTable's proof, checked against the fold itself over many
// small random tables: wherever it says every removed unit leaves the
// table's stats, folding the survivors and the added units gives exactly
// the head's stats widened by the added ones.
func TestUnitLeavesTableIsTheFold(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	kept := 0
	for trial := range 100000 {
		typ, domain := "bigint", []string{"-3", "0", "1", "2", "5", "9"}
		if trial%5 == 0 {
			typ, domain = "interval", []string{"1 day", "2 hours"}
		}
		unknown := []int{0, 3, 10}[trial%3]
		ty := types.MustParseType(typ)
		unit := func() *stats.Column {
			if rng.IntN(12) == 0 {
				return nil // no stats row
			}
			st := randomUnit(t, rng, typ, domain, int64(1+rng.IntN(9)), unknown)
			return &st
		}
		fold := func(units []*stats.Column) *colAcc {
			a := newColAcc(ty)
			for _, u := range units {
				a.add(u)
			}
			return a
		}
		head := make([]*stats.Column, 2+rng.IntN(5))
		for i := range head {
			head[i] = unit()
		}
		adds := make([]*stats.Column, rng.IntN(3))
		for i := range adds {
			adds[i] = unit()
		}
		rng.Shuffle(len(head), func(i, j int) { head[i], head[j] = head[j], head[i] })
		gone := head[:1+rng.IntN(len(head)-1)]
		stay := head[len(gone):]
		table := fold(head).result()
		added := fold(adds)
		leaves := true
		for _, u := range gone {
			if u == nil {
				u = &stats.Column{}
			}
			leaves = leaves && unitLeavesTable(&table, u, newColAcc(ty).ordered, added)
		}
		if !leaves {
			continue
		}
		kept++
		want := fold(append(append([]*stats.Column{}, stay...), adds...)).result()
		got := newColAcc(ty)
		got.seed(&table)
		for _, u := range adds {
			got.add(u)
		}
		if g := got.result(); fmt.Sprint(g) != fmt.Sprint(want) {
			t.Fatalf("trial %d (%s): head %s, removed %d, added %s:\nkept %+v\nfold %+v", trial, typ, units(head), len(gone), units(adds), g, want)
		}
	}
	t.Logf("%d of 100000 removals kept the stats", kept)
	if kept < 1000 {
		t.Fatalf("only %d removals kept the stats: the check proves too little to be tested", kept)
	}
}

func units(us []*stats.Column) string {
	var b []byte
	for _, u := range us {
		if u == nil {
			b = append(b, "[none] "...)
			continue
		}
		b = fmt.Appendf(b, "[%+v] ", *u)
	}
	return string(b)
}
