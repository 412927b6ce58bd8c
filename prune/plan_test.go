package prune

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/expr"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/types"
)

// TestClusteredTableKeepsOnlyMatchingFiles: on a table clustered by the
// predicate's column (one file per hour), file-level pruning keeps exactly
// the files that hold matches, and row groups narrow further.
func TestClusteredTableKeepsOnlyMatchingFiles(t *testing.T) {
	dir := t.TempDir()
	const hour = int64(3_600_000_000)
	base := int64(1_704_067_200_000_000) // 2024-01-01 00:00:00 UTC
	var paths []string
	for f := range 24 {
		var ts, id []*types.Value
		for i := range 600 {
			tv := types.IntValue(base + int64(f)*hour + int64(i)*6_000_000)
			iv := types.IntValue(int64(f*600 + i))
			ts, id = append(ts, &tv), append(id, &iv)
		}
		p := filepath.Join(dir, fmt.Sprintf("h%02d.parquet", f))
		err := pqwrite.Write(p, []pqwrite.Column{
			{Name: "ts", Type: types.MustParseType("timestamptz"), Values: ts},
			{Name: "id", Type: types.MustParseType("int64"), Values: id},
		}, pqwrite.Options{RowGroupRows: 100})
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	r := readerOf(t, "events", paths, ingest.Options{})
	cases := []struct {
		pred          string
		files, groups int
		allMatch      int
	}{
		// One hour, aligned: exactly file 5, all of it.
		{"ts >= '2024-01-01 05:00:00+00' AND ts < '2024-01-01 06:00:00+00'", 1, 6, 1},
		// Half an hour across two files: 2 files, 3 row groups each.
		{"ts BETWEEN '2024-01-01 07:45:00+00' AND '2024-01-01 08:14:59+00'", 2, 4, 0},
		{"ts < '2023-12-31 00:00:00+00'", 0, 0, 0},
		{"id = 7250", 1, 1, 0},
		{"id IN (1, 14399)", 2, 2, 0},
		{"id >= 0", 24, 144, 24},
		{"ts IS NULL", 0, 0, 0},
	}
	for _, tc := range cases {
		p, err := PlanTable(r, "events", tc.pred, Options{})
		if err != nil {
			t.Fatalf("%s: %v", tc.pred, err)
		}
		if p.Files.Kept != tc.files || p.RowGroups.Kept != tc.groups || p.Files.AllMatch != tc.allMatch {
			t.Errorf("%s: %s; want %d files (%d all-match), %d row groups", tc.pred, p, tc.files, tc.allMatch, tc.groups)
		}
		if p.Files.Total != 24 || p.RowGroups.Total != 144 {
			t.Errorf("%s: totals %s", tc.pred, p)
		}
	}
}

// TestBloomFiltersCutEqualities: on a random high-cardinality column, where
// min/max prove nothing, bloom filters cut an equality on an absent value
// to about their false-positive rate of row groups, and never drop the row
// group holding a present value.
func TestBloomFiltersCutEqualities(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(5, 6))
	const n, rg = 40000, 2000
	vals := make([]*types.Value, n)
	present := map[int64]int{}
	for i := range vals {
		x := r.Int64()
		present[x] = i
		v := types.IntValue(x)
		vals[i] = &v
	}
	path := filepath.Join(dir, "hc.parquet")
	err := pqwrite.Write(path, []pqwrite.Column{{Name: "uid", Type: types.MustParseType("int64"), Values: vals}},
		pqwrite.Options{RowGroupRows: rg, BloomFilters: true})
	if err != nil {
		t.Fatal(err)
	}
	// No catalog membership filter: this is about the file's own bloom
	// filters.
	rd := readerOf(t, "t", []string{path}, ingest.Options{NoAutoFilters: true})
	var kept, total int
	for range 50 {
		x := r.Int64()
		if _, ok := present[x]; ok {
			continue
		}
		p, err := PlanTable(rd, "t", fmt.Sprintf("uid = %d", x), Options{})
		if err != nil {
			t.Fatal(err)
		}
		noBloom, _ := PlanTable(rd, "t", fmt.Sprintf("uid = %d", x), Options{NoBloom: true})
		if noBloom.RowGroups.Kept != n/rg {
			t.Fatalf("min/max alone should keep every row group of random data, kept %d", noBloom.RowGroups.Kept)
		}
		kept += p.RowGroups.Kept
		total += p.RowGroups.Total
	}
	rate := float64(kept) / float64(total)
	t.Logf("absent values: %d of %d row groups kept (%.3f)", kept, total, rate)
	if rate > 0.1 {
		t.Fatalf("bloom filters kept %.3f of row groups for absent values", rate)
	}
	for x, i := range present {
		p, err := PlanTable(rd, "t", fmt.Sprintf("uid IN (%d, 5)", x), Options{})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, kf := range p.KeptFiles {
			for _, g := range kf.RowGroups {
				found = found || int(g) == i/rg
			}
		}
		if !found {
			t.Fatalf("the row group of present value %d was dropped", x)
		}
		break
	}
}

// TestPagesNarrowRowGroups: a sorted column with small pages lets the page
// index keep a fraction of a row group.
func TestPagesNarrowRowGroups(t *testing.T) {
	path := writeSorted(t, "sorted", pqwrite.Options{PageIndex: true, PageBytes: 1024})
	rd := readerOf(t, "t", []string{path}, ingest.Options{})
	p, err := PlanTable(rd, "t", "x BETWEEN 5000 AND 5099", Options{Pages: true})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Pages.Evaluated || p.Pages.Total < 10 || len(p.KeptFiles) != 1 {
		t.Fatalf("pages not evaluated: %+v", p.Pages)
	}
	var rows int64
	for _, rr := range p.KeptFiles[0].Ranges {
		rows += rr.Count
		if rr.First > 5000 || rr.First+rr.Count <= 5099 && len(p.KeptFiles[0].Ranges) == 1 {
			t.Fatalf("kept range %+v does not cover the matches", rr)
		}
	}
	t.Logf("pages: %d of %d kept, %d of 20000 rows", p.Pages.Kept, p.Pages.Total, rows)
	if rows > 2000 {
		t.Fatalf("page index kept %d rows of 20000 for 100 matches", rows)
	}
}

// TestPageMinRows: a row group smaller than PageMinRows keeps one range
// for the whole row group, without its page index; from PageMinRows up
// the page index narrows it.
func TestPageMinRows(t *testing.T) {
	path := writeSorted(t, "sorted", pqwrite.Options{PageIndex: true, PageBytes: 1024, RowGroupRows: 5000})
	rd := readerOf(t, "t", []string{path}, ingest.Options{})
	for _, tc := range []struct {
		min   int64
		pages bool
		rows  int64
	}{{min: 5001, pages: false, rows: 5000}, {min: 5000, pages: true}, {min: -1, pages: true}} {
		p, err := PlanTable(rd, "t", "x BETWEEN 7000 AND 7009", Options{Pages: true, PageMinRows: tc.min})
		if err != nil {
			t.Fatal(err)
		}
		if p.Pages.Evaluated != tc.pages || len(p.KeptFiles) != 1 {
			t.Fatalf("PageMinRows %d: pages evaluated %v, want %v", tc.min, p.Pages.Evaluated, tc.pages)
		}
		var rows int64
		for _, rr := range p.KeptFiles[0].Ranges {
			rows += rr.Count
			if rr.RowGroup != 1 || rr.First > 7000 || rr.First+rr.Count < 7010 {
				t.Fatalf("PageMinRows %d: kept range %+v does not cover rows 7000–7009 of row group 1", tc.min, rr)
			}
		}
		if tc.rows != 0 && rows != tc.rows || tc.rows == 0 && (rows == 0 || rows >= 5000) {
			t.Fatalf("PageMinRows %d: %d rows kept", tc.min, rows)
		}
	}
}

// TestRangesWithoutBounds: a file written without statistics still has
// its row groups' rows in the catalog, so the plan's ranges follow them
// exactly (row groups of 3,000 rows and a last one of 2,000), each kept
// whole; ranges are never made from an even split of the file's rows.
func TestRangesWithoutBounds(t *testing.T) {
	path := writeSorted(t, "nostats", pqwrite.Options{RowGroupRows: 3000, NoStats: true})
	rd := readerOf(t, "t", []string{path}, ingest.Options{})
	p, err := PlanTable(rd, "t", "x = 19999", Options{Pages: true, IndexMinRows: -1, PageMinRows: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.KeptFiles) != 1 || len(p.KeptFiles[0].Ranges) != 7 {
		t.Fatalf("kept %+v", p.KeptFiles)
	}
	for i, rr := range p.KeptFiles[0].Ranges {
		want := wantRange3000(i)
		if rr != want {
			t.Fatalf("range %d: %+v, want %+v", i, rr, want)
		}
	}
}

func wantRange3000(i int) RowRange {
	if i == 6 {
		return RowRange{RowGroup: 6, First: 18000, Count: 2000}
	}
	return RowRange{RowGroup: int32(i), First: int64(i) * 3000, Count: 3000}
}

// Bloom filters are read while they pay: for a value in every row group
// (a low-cardinality column) the plan stops after 16 probes; for an
// absent value it reads them all and skips every row group.
func TestBloomProbesStopWhenUseless(t *testing.T) {
	dir := t.TempDir()
	const files, rows = 40, 2000
	var paths []string
	for f := range files {
		var ks []*types.Value
		for i := range rows {
			v := types.StringValue(fmt.Sprintf("k%d", i%5))
			ks = append(ks, &v)
		}
		p := filepath.Join(dir, fmt.Sprintf("f%02d.parquet", f))
		if err := pqwrite.Write(p, []pqwrite.Column{{Name: "k", Type: types.MustParseType("varchar"), Values: ks}},
			pqwrite.Options{BloomFilters: true}); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	rd := readerOf(t, "t", paths, ingest.Options{})
	present, err := PlanTable(rd, "t", "k = 'k3'", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if present.Bloom.Probed != 16 || present.Bloom.Skipped != 0 || present.RowGroups.Kept != files {
		t.Errorf("a value in every row group: bloom %+v, %d of %d row groups kept", present.Bloom, present.RowGroups.Kept, files)
	}
	absent, err := PlanTable(rd, "t", "k = 'k25'", Options{}) // inside the bounds, in no file
	if err != nil {
		t.Fatal(err)
	}
	if absent.Bloom.Probed != files || absent.Bloom.Skipped != files || absent.RowGroups.Kept != 0 {
		t.Errorf("an absent value: bloom %+v, %d row groups kept", absent.Bloom, absent.RowGroups.Kept)
	}
}

// readerOf registers files as a new table in an in-memory catalog and
// reads its latest snapshot (closed when the test ends).
func readerOf(t *testing.T, table string, paths []string, opts ingest.Options) *catalog.Reader {
	t.Helper()
	c, err := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	opts.Create = true
	if _, err := ingest.Add(c, table, paths, opts); err != nil {
		t.Fatal(err)
	}
	rd, err := c.Read(catalog.Latest)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rd.Close() })
	return rd
}

// PlanBound on an already bound predicate plans exactly as PlanTable does
// from the text; a nil predicate keeps everything, as "true" does, but the
// empty file (the fifth).
func TestPlanBoundMatchesPlanTable(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for f := range 5 {
		var xs []*types.Value
		for i := range 300 * min(1, 4-f) {
			v := types.IntValue(int64(f*300 + i))
			xs = append(xs, &v)
		}
		p := filepath.Join(dir, fmt.Sprintf("f%d.parquet", f))
		if err := pqwrite.Write(p, []pqwrite.Column{{Name: "x", Type: types.MustParseType("int64"), Values: xs}},
			pqwrite.Options{RowGroupRows: 100, PageIndex: true, PageBytes: 256}); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	rd := readerOf(t, "t", paths, ingest.Options{})
	tb, err := rd.Table("t")
	if err != nil {
		t.Fatal(err)
	}
	cols, _ := rd.Columns(tb.ID)
	for pred, files := range map[string]int{"x BETWEEN 250 AND 420": 2, "x = 7 OR x > 1150": 2, "x IS NULL": 0, "true": 4} {
		want, err := PlanTable(rd, "t", pred, Options{Pages: true, IndexMinRows: -1})
		if err != nil {
			t.Fatal(err)
		}
		b, err := expr.Compile(pred, cols)
		if err != nil {
			t.Fatal(err)
		}
		got, err := PlanBound(rd, tb, b, Options{Pages: true, IndexMinRows: -1})
		if err != nil {
			t.Fatal(err)
		}
		if g, w := fmt.Sprintf("%+v", *got), fmt.Sprintf("%+v", *want); g != w {
			t.Errorf("%s:\n PlanBound %s\n PlanTable %s", pred, g, w)
		}
		if got.Files.Kept != files || got.Predicate != pred || got.Bound != b.Pred.String() {
			t.Errorf("%s: %s (%q, %q), want %d files", pred, got, got.Predicate, got.Bound, files)
		}
	}
	all, err := PlanBound(rd, tb, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := PlanTable(rd, "t", "", Options{})
	if all.Files.Kept != 4 || all.Files.Total != 5 || all.Predicate != want.Predicate || all.Bound != want.Bound || all.String() != want.String() {
		t.Errorf("nil predicate: %s (%q, %q), want %s (%q, %q)", all, all.Predicate, all.Bound, want, want.Predicate, want.Bound)
	}
}

// A plan says how each kept file of an altered table holds the table's
// columns, so that an engine reading the files from the plan reads them as
// rocklake does: under the names and types they were registered with, and
// a column added later as its default; nothing for a table never altered.
func TestKeptFilesCarryTheColumnMapping(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, cols ...string) string {
		p := filepath.Join(dir, name)
		var pc []pqwrite.Column
		for _, c := range cols {
			v := types.IntValue(1)
			pc = append(pc, pqwrite.Column{Name: c, Type: types.MustParseType("int32"), Values: []*types.Value{&v}})
		}
		if err := pqwrite.Write(p, pc, pqwrite.Options{}); err != nil {
			t.Fatal(err)
		}
		return p
	}
	c, err := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ingest.Add(c, "t", []string{write("old.parquet", "a", "b", "c")}, ingest.Options{Create: true}); err != nil {
		t.Fatal(err)
	}
	plan := func() []KeptFile {
		rd, err := c.Read(catalog.Latest)
		if err != nil {
			t.Fatal(err)
		}
		defer rd.Close()
		p, err := PlanTable(rd, "t", "true", Options{FilesOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		return p.KeptFiles
	}
	if kf := plan(); kf[0].Columns != nil {
		t.Fatalf("a table never altered: %+v", kf[0].Columns)
	}
	for _, a := range []string{"rename column a to x", "alter column b type int64", "drop column c", "add column c int32 default '7'", "add column d int32"} {
		alt, err := catalog.ParseAlteration(strings.Fields(a))
		if err != nil {
			t.Fatal(err)
		}
		tx, err := c.Begin()
		if err != nil {
			t.Fatal(err)
		}
		tx.AlterTable("t", alt)
		if _, err := tx.Commit(); err != nil {
			t.Fatalf("%s: %v", a, err)
		}
	}
	// A file registered after every change holds the columns as they are.
	if _, err := ingest.Add(c, "t", []string{write("new.parquet", "x", "b", "c", "d")}, ingest.Options{}); err != nil {
		t.Fatal(err)
	}
	if kf := plan(); len(kf) != 2 || kf[1].Columns != nil {
		t.Fatalf("the new file: %+v", kf)
	}
	var got []string
	for _, cs := range plan()[0].Columns {
		def := "-"
		if cs.Default != nil {
			def = *cs.Default
		}
		got = append(got, fmt.Sprintf("%s<%s %s %s", cs.Column, cs.FileColumn, cs.FileType, def))
	}
	if g, want := strings.Join(got, "; "), "x<a INTEGER -; b<b INTEGER -; c<  7; d<  -"; g != want {
		t.Errorf("old file's columns: %s, want %s", g, want)
	}
}

// writeSorted writes x = 0, 1, ..., 19999 (int64) into a new file with opts.
func writeSorted(t *testing.T, name string, opts pqwrite.Options) string {
	t.Helper()
	vals := make([]*types.Value, 20000)
	for i := range vals {
		v := types.IntValue(int64(i))
		vals[i] = &v
	}
	path := filepath.Join(t.TempDir(), name+".parquet")
	if err := pqwrite.Write(path, []pqwrite.Column{{Name: "x", Type: types.MustParseType("int64"), Values: vals}}, opts); err != nil {
		t.Fatal(err)
	}
	return path
}
