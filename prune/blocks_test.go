package prune

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

// blockRow is a row of TestBlocksFirst's table.
type blockRow struct{ ts, uid, k int64 }

// blockPred is a predicate as SQL and as the reference evaluates it.
type blockPred struct {
	sql  string
	eval func(blockRow, bool) bool // the row, and whether the column added later holds 7 for it
}

// TestBlocksFirst plans through the blocks (their summaries, then the kept
// blocks' files, with the membership filters of those files) on a table
// of many commits, clustered on ts and with random uids, and checks every
// plan against the data and against a plan of every file (NoBlocks): a
// file holding a matching row is kept, and no file is kept that the plan
// of every file skips. Then the same after removals and an expiry that
// rewrote blocks, at an older snapshot, and on a column added later (its
// summaries written by the ALTER).
func TestBlocksFirst(t *testing.T) {
	defer func(share int) { subsetShare = share }(subsetShare)
	r := rand.New(rand.NewPCG(5, 6))
	dir := t.TempDir()
	c, err := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]blockRow{} // by file name
	var uids []int64
	nf := 0
	for commit := range 14 {
		var paths []string
		for range 1 + r.IntN(4) {
			nf++
			var ts, uid, k []*types.Value
			var data []blockRow
			for range 50 + r.IntN(100) {
				row := blockRow{ts: int64(commit*1000 + r.IntN(1000)), uid: r.Int64N(1 << 40), k: int64(r.IntN(6))}
				data = append(data, row)
				uids = append(uids, row.uid)
				a, b, c := types.IntValue(row.ts), types.IntValue(row.uid), types.IntValue(row.k)
				ts, uid, k = append(ts, &a), append(uid, &b), append(k, &c)
			}
			p := filepath.Join(dir, fmt.Sprintf("f%03d.parquet", nf))
			err := pqwrite.Write(p, []pqwrite.Column{{Name: "ts", Type: types.MustParseType("int64"), Values: ts},
				{Name: "uid", Type: types.MustParseType("int64"), Values: uid}, {Name: "k", Type: types.MustParseType("int64"), Values: k}},
				pqwrite.Options{RowGroupRows: 40})
			if err != nil {
				t.Fatal(err)
			}
			rows[filepath.Base(p)] = data
			paths = append(paths, p)
		}
		if _, err := ingest.Add(c, "t", paths, ingest.Options{Create: commit == 0, FilterColumns: []string{"uid"}}); err != nil {
			t.Fatal(err)
		}
	}
	preds := func(r *rand.Rand, added bool) []blockPred {
		lo := r.Int64N(14000)
		hi := lo + r.Int64N(2500)
		v := uids[r.IntN(len(uids))]
		if r.IntN(3) == 0 {
			v = r.Int64N(1 << 40) // most likely absent
		}
		k := r.Int64N(6)
		out := []blockPred{
			{fmt.Sprintf("ts BETWEEN %d AND %d", lo, hi), func(x blockRow, _ bool) bool { return x.ts >= lo && x.ts <= hi }},
			{fmt.Sprintf("ts >= %d AND uid = %d", lo, v), func(x blockRow, _ bool) bool { return x.ts >= lo && x.uid == v }},
			{fmt.Sprintf("uid = %d", v), func(x blockRow, _ bool) bool { return x.uid == v }},
			{fmt.Sprintf("(ts < %d OR ts > %d) AND k = %d", lo, hi, k), func(x blockRow, _ bool) bool { return (x.ts < lo || x.ts > hi) && x.k == k }},
			{fmt.Sprintf("ts < %d OR uid IN (%d, 3)", lo, v), func(x blockRow, _ bool) bool { return x.ts < lo || x.uid == v || x.uid == 3 }},
		}
		if added {
			out = append(out,
				blockPred{fmt.Sprintf("a = 7 AND ts <= %d", hi), func(x blockRow, seven bool) bool { return seven && x.ts <= hi }},
				blockPred{"a IS NULL", func(_ blockRow, seven bool) bool { return !seven }})
		}
		return out
	}
	check := func(stage string, snap int64, sevens map[string]bool, added bool) {
		rd, err := c.Read(snap)
		if err != nil {
			t.Fatal(err)
		}
		defer rd.Close()
		tb, _ := rd.Table("t")
		fs, err := rd.FileSet(tb.ID)
		if err != nil {
			t.Fatal(err)
		}
		if fs.Blocks() < 2 {
			t.Fatalf("%s: %d blocks", stage, fs.Blocks())
		}
		sameBounds(t, rd, fs, tb.ID, stage)
		live := map[string]bool{}
		for i := range fs.Len() {
			f, _ := rd.FileAt(fs, i)
			live[filepath.Base(f.Path)] = true
		}
		skippedSome, subsets := false, subsetPlans.Load()
		for range 60 {
			subsetShare = []int{1, 4, 1 << 20}[r.IntN(3)]
			for _, p := range preds(r, added) {
				kept := func(opts Options) (map[string]bool, *Plan) {
					plan, err := PlanTable(rd, "t", p.sql, opts)
					if err != nil {
						t.Fatalf("%s: %s: %v", stage, p.sql, err)
					}
					out := map[string]bool{}
					for _, kf := range plan.KeptFiles {
						out[filepath.Base(kf.Path)] = true
					}
					return out, plan
				}
				opts := Options{FilesOnly: r.IntN(2) == 0}
				got, plan := kept(opts)
				opts.NoBlocks = true
				all, base := kept(opts)
				if plan.Files.Total != base.Files.Total || plan.RowGroups.Total != base.RowGroups.Total || plan.Bytes.Total != base.Bytes.Total {
					t.Fatalf("%s: %s: totals %+v %+v %+v, every file's plan %+v %+v %+v", stage, p.sql,
						plan.Files, plan.RowGroups, plan.Bytes, base.Files, base.RowGroups, base.Bytes)
				}
				for name := range live {
					holds := slices.ContainsFunc(rows[name], func(x blockRow) bool { return p.eval(x, sevens[name]) })
					if holds && !got[name] {
						t.Fatalf("%s: %s: %s holds a matching row but was skipped", stage, p.sql, name)
					}
					if got[name] && !all[name] {
						t.Fatalf("%s: %s: %s kept, but a plan of every file skips it", stage, p.sql, name)
					}
					skippedSome = skippedSome || (all[name] && !got[name])
				}
			}
		}
		t.Logf("%s: %d files in %d blocks; %d plans of kept blocks' files; blocks skipped files a plan of every file kept: %v",
			stage, fs.Len(), fs.Blocks(), subsetPlans.Load()-subsets, skippedSome)
		if subsetPlans.Load() == subsets {
			t.Errorf("%s: no plan evaluated the kept blocks' files only", stage)
		}
	}
	check("14 commits", catalog.Latest, nil, false)
	mid, _ := c.Read(catalog.Latest)
	midSnap := mid.Snapshot().ID
	tb, _ := mid.Table("t")
	fs, _ := mid.FileSet(tb.ID)
	var gone []int64
	goneNames := map[string]bool{}
	for i := range fs.Len() {
		if r.IntN(3) == 0 {
			f, _ := mid.FileAt(fs, i)
			gone, goneNames[filepath.Base(f.Path)] = append(gone, f.ID), true
		}
	}
	mid.Close()
	tx, _ := c.Begin()
	tx.RemoveFiles("t", gone...)
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	check("a third removed", catalog.Latest, nil, false)
	check("time travel to before the removal", midSnap, nil, false)
	if _, err := c.ExpireSnapshots(time.Now().Add(time.Hour), false); err != nil {
		t.Fatal(err)
	}
	for name := range goneNames {
		delete(rows, name)
	}
	check("expired: blocks rewritten", catalog.Latest, nil, false)
	// A column added with a default: the files before it hold 7, the
	// files after it NULL.
	tx, _ = c.Begin()
	tx.AlterTable("t", catalog.Alteration{Kind: catalog.AddColumn, Column: "a", Type: "int64", Default: stats.Known("7")})
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	sevens := map[string]bool{}
	for name := range rows {
		sevens[name] = true
	}
	check("a column added", catalog.Latest, sevens, true)
}

// sameBounds checks that the bounds of some blocks' files (every other
// block) are the table's bounds of those files, unit for position.
func sameBounds(t *testing.T, rd *catalog.Reader, fs *catalog.FileSet, tableID int64, stage string) {
	t.Helper()
	cols, _ := rd.Columns(tableID)
	var blocks []int
	for b := 0; b < fs.Blocks(); b += 2 {
		blocks = append(blocks, b)
	}
	for _, col := range cols {
		full, err := rd.ColumnBounds(tableID, col.ID)
		if err != nil {
			t.Fatal(err)
		}
		sub, err := rd.BoundsOfBlocks(fs, col.ID, blocks)
		if err != nil {
			t.Fatal(err)
		}
		k := 0
		for _, b := range blocks {
			start, end := fs.BlockFiles(b)
			for p := start; p < end; p++ {
				var a, c stats.Column
				okA, okC := full.Fill(p, &a), sub.Fill(k, &c)
				if okA != okC || !reflect.DeepEqual(a, c) {
					t.Fatalf("%s: column %s block %d file %d (unit %d): table's bounds %v %+v, the blocks' %v %+v", stage, col.Name, b, p, k, okA, a, okC, c)
				}
				k++
			}
		}
	}
}
