package ingest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

func intColumn(name string, base int64, n int) pqwrite.Column {
	vals := make([]*types.Value, n)
	for i := range vals {
		v := types.IntValue(base + int64(i))
		vals[i] = &v
	}
	return pqwrite.Column{Name: name, Type: types.MustParseType("int64"), Values: vals}
}

func writeFile(t *testing.T, path string, cols ...pqwrite.Column) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := pqwrite.Write(path, cols, pqwrite.Options{}); err != nil {
		t.Fatal(err)
	}
	return path
}

func tableFiles(t *testing.T, c *catalog.Catalog, table string) ([]catalog.Column, []catalog.DataFile) {
	t.Helper()
	rd, err := c.Read(catalog.Latest)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	tb, err := rd.Table(table)
	if err != nil {
		t.Fatal(err)
	}
	cols, err := rd.Columns(tb.ID)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := rd.Files(tb.ID)
	if err != nil {
		t.Fatal(err)
	}
	return cols, fs
}

// A file holding a column its table lacks is refused, naming the file and
// the columns, and nothing is committed; --ignore-extra-columns registers
// it and records the names with the file.
func TestExtraColumns(t *testing.T) {
	dir := t.TempDir()
	base := writeFile(t, filepath.Join(dir, "base.parquet"), intColumn("id", 0, 10))
	wide := writeFile(t, filepath.Join(dir, "wide.parquet"), intColumn("id", 10, 10), intColumn("Extra", 0, 10), intColumn("more", 0, 10))
	c := memCatalog(t)
	if _, err := Add(c, "t", []string{base}, Options{Create: true}); err != nil {
		t.Fatal(err)
	}
	before, _ := c.Snapshots()
	_, err := Add(c, "t", []string{wide}, Options{})
	if !errors.Is(err, ErrSchemaMismatch) {
		t.Fatalf("a file with columns the table lacks: %v", err)
	}
	for _, want := range []string{wide, `"Extra", "more"`, `table "t" lacks`, "--ignore-extra-columns"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if after, _ := c.Snapshots(); len(after) != len(before) {
		t.Fatal("a refused add committed a snapshot")
	}
	if _, err := Add(c, "t", []string{wide}, Options{IgnoreExtraColumns: true}); err != nil {
		t.Fatal(err)
	}
	cols, fs := tableFiles(t, c, "t")
	if len(cols) != 1 || len(fs) != 2 {
		t.Fatalf("table after the add: %d columns, %d files", len(cols), len(fs))
	}
	for _, f := range fs {
		want := []string(nil)
		if f.Path == wide {
			want = []string{"Extra", "more"}
		}
		if !slices.Equal(f.IgnoredColumns, want) {
			t.Errorf("%s: ignored columns %q, want %q", f.Path, f.IgnoredColumns, want)
		}
	}
}

func TestHivePath(t *testing.T) {
	for _, tc := range []struct {
		path string
		want string // key=value|… with NULL spelled ∅
		err  bool
	}{
		{"/d/k=1/f.parquet", "k=1", false},
		{"/d/a=x/b=2024-01-02/f=3.parquet", "a=x|b=2024-01-02", false},
		{"/d/s=x%20y%2Fz%3D%25/f.parquet", "s=x y/z=%", false},
		{"/d/s=/f.parquet", "s=", false},
		{"/d/s=__HIVE_DEFAULT_PARTITION__/t=nUlL/f.parquet", "s=∅|t=∅", false},
		{"/d/=x/plain/f.parquet", "", false},
		{"/d/k=1/K=2/f.parquet", "", true},
		{"/d/k=%zz/f.parquet", "", true},
		{"/d/k=a=b/f.parquet", "", true},
		{"/d/k=a?b/f.parquet", "", true},
		{"/d/k=a\\b/f.parquet", "", true},
		{"/d/x\\k=1/f.parquet", "", true},
		{"/d/k=a%3Db%3Fc%5C/f.parquet", "k=a=b?c\\", false},
		{"s3://b/k=5/f.parquet", "k=5", false},
	} {
		vs, err := hivePath(tc.path)
		if (err != nil) != tc.err {
			t.Errorf("%s: error %v, want error %v", tc.path, err, tc.err)
			continue
		}
		var got []string
		for _, v := range vs {
			s := v.key + "="
			if v.value.Known {
				s += v.value.V
			} else {
				s += "∅"
			}
			got = append(got, s)
		}
		if g := strings.Join(got, "|"); !tc.err && g != tc.want {
			t.Errorf("%s: %q, want %q", tc.path, g, tc.want)
		}
	}
}

// The types DuckDB 1.5.6's hive_partitioning gives a key, as observed by
// running it (engine's hive tests check the same sets against DuckDB).
func TestHiveType(t *testing.T) {
	for _, tc := range []struct {
		vals []string
		want string // "" for refused
	}{
		{nil, "VARCHAR"},
		{[]string{"5", "-7", "0"}, "BIGINT"},
		{[]string{"1", "007"}, "VARCHAR"},
		{[]string{"+5"}, "VARCHAR"},
		{[]string{"9223372036854775808"}, "VARCHAR"},
		{[]string{"1.5", "2"}, "VARCHAR"},
		{[]string{"1", "x"}, "VARCHAR"},
		{[]string{"2024-01-02", "2024-12-31"}, "DATE"},
		{[]string{"2024-01-02 10:00:00", "2024-01-02 10:00:00.5"}, "TIMESTAMP"},
		{[]string{"2024-01-01", "2024-01-02 10:00:00"}, ""},
		{[]string{"2024-1-2"}, ""},
		{[]string{"2024-01-02T10:00:00"}, ""},
		{[]string{"2024-01-02", "x"}, "VARCHAR"},
		{[]string{"", "5"}, "VARCHAR"},
		{[]string{"true", "false"}, "VARCHAR"},
		{[]string{"-0", "-007"}, "BIGINT"},
		{[]string{"0x10"}, ""},
		{[]string{"5 ", "6"}, ""},
		{[]string{"1_000"}, "VARCHAR"},
		{[]string{"a%20b"}, "VARCHAR"},
		{[]string{"2024-01-02%2010%3A00%3A00"}, "VARCHAR"},
	} {
		got, err := hiveType("k", tc.vals)
		if tc.want == "" {
			if err == nil {
				t.Errorf("%q: %s, want refused", tc.vals, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: %s, %v; want %s", tc.vals, got, err, tc.want)
		}
	}
}

// Files under key=value directories: --create finds the layout, the table
// gets the keys as columns, each file's values are stored as exact stats
// and as its partition values; a later add reads them in the table's
// types; files that do not fit are refused.
func TestHivePartitions(t *testing.T) {
	dir := t.TempDir()
	a := writeFile(t, filepath.Join(dir, "tbl", "region=eu", "day=2024-01-02", "a.parquet"), intColumn("id", 0, 10))
	b := writeFile(t, filepath.Join(dir, "tbl", "region=__HIVE_DEFAULT_PARTITION__", "day=2024-01-03", "b.parquet"), intColumn("id", 10, 5))
	c := memCatalog(t)
	if _, err := Add(c, "t", []string{filepath.Join(dir, "tbl")}, Options{Create: true}); err != nil {
		t.Fatal(err)
	}
	cols, fs := tableFiles(t, c, "t")
	var desc []string
	for _, col := range cols {
		desc = append(desc, col.Name+" "+col.Type.DuckLakeName()+" "+col.Partition)
	}
	if got := strings.Join(desc, ", "); got != "id int64 , day date hive, region varchar hive" {
		t.Fatalf("columns: %s", got)
	}
	rd, _ := c.Read(catalog.Latest)
	defer rd.Close()
	byPath := map[string]catalog.DataFile{}
	for _, f := range fs {
		byPath[f.Path] = f
	}
	day, region := cols[1], cols[2]
	check := func(path string, col catalog.Column, want stats.Maybe[string]) {
		t.Helper()
		f := byPath[path]
		got, ok := f.PartitionValue(col.ID)
		if !ok || got != want {
			t.Errorf("%s %s: partition value %+v, want %+v", path, col.Name, got, want)
		}
		var st stats.Column
		if err := rd.FileColumnStats(f.TableID, col.ID, func(id int64, s *stats.Column) error {
			if id == f.ID {
				st = *s
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if !want.Known {
			if st.NullCount != stats.Known(f.RecordCount) || st.Min.Known {
				t.Errorf("%s %s: NULL partition stats %+v", path, col.Name, st)
			}
			return
		}
		codec, _ := types.CodecFor(col.Type)
		v, _ := codec.Parse(want.V)
		enc, _ := codec.Encode(v)
		if !st.Min.Known || string(st.Min.V) != string(enc) || string(st.Max.V) != string(enc) || !st.MinIsExact || !st.MaxIsExact || st.NullCount != stats.Known[int64](0) {
			t.Errorf("%s %s: stats %+v, want exact %s", path, col.Name, st, want.V)
		}
	}
	check(a, region, stats.Known("eu"))
	check(a, day, stats.Known("2024-01-02"))
	check(b, region, stats.Maybe[string]{})
	check(b, day, stats.Known("2024-01-03"))

	// Later files read in the table's types.
	ok := writeFile(t, filepath.Join(dir, "tbl", "region=us", "day=2024-02-01", "c.parquet"), intColumn("id", 20, 3))
	if _, err := Add(c, "t", []string{ok}, Options{}); err != nil {
		t.Fatal(err)
	}
	before, _ := c.Snapshots()
	for _, tc := range []struct{ path, want string }{
		{writeFile(t, filepath.Join(dir, "bad1", "region=us", "day=someday", "d.parquet"), intColumn("id", 0, 3)), `"someday" does not read as DATE`},
		{writeFile(t, filepath.Join(dir, "bad2", "region=us", "e.parquet"), intColumn("id", 0, 3)), `no day=… directory`},
		{writeFile(t, filepath.Join(dir, "bad3", "region=us", "day=2024-01-01", "f.parquet"), intColumn("id", 0, 3), intColumn("day", 0, 3)), `partition column of table "t"`},
		{writeFile(t, filepath.Join(dir, "bad4", "region=u=s", "day=2024-01-01", "g.parquet"), intColumn("id", 0, 3)), `a raw '=', '?' or '\'`},
	} {
		_, err := Add(c, "t", []string{tc.path}, Options{})
		if !errors.Is(err, ErrSchemaMismatch) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.path) {
			t.Errorf("%s: %v, want %q", tc.path, err, tc.want)
		}
	}
	if after, _ := c.Snapshots(); len(after) != len(before) {
		t.Fatal("a refused add committed a snapshot")
	}

	// A file column named like a key of its path.
	clash := writeFile(t, filepath.Join(dir, "clash", "K=1", "j.parquet"), intColumn("k", 0, 3))
	if _, err := Add(c, "v", []string{clash}, Options{Create: true}); !errors.Is(err, ErrSchemaMismatch) || !strings.Contains(err.Error(), `column "k" and its path a partition key "K"`) {
		t.Errorf("a column named like a partition key: %v", err)
	}

	// Without the layout, --create makes no partition columns; --hive
	// insists on one.
	flat := writeFile(t, filepath.Join(dir, "flat", "g.parquet"), intColumn("id", 0, 3))
	if _, err := Add(c, "u", []string{flat}, Options{Create: true, Hive: true}); !errors.Is(err, ErrSchemaMismatch) || !strings.Contains(err.Error(), "no key=value directory") {
		t.Errorf("--hive over a file without partition directories: %v", err)
	}
	raw := writeFile(t, filepath.Join(dir, "raw", "k=a?b", "h.parquet"), intColumn("id", 0, 3))
	if _, err := Add(c, "u", []string{raw}, Options{Create: true, Hive: true}); !errors.Is(err, ErrSchemaMismatch) || !strings.Contains(err.Error(), "spell it escaped") {
		t.Errorf("--hive over a directory DuckDB reads otherwise: %v", err)
	}
	mixed := writeFile(t, filepath.Join(dir, "mixed", "k=1", "h.parquet"), intColumn("id", 0, 3))
	other := writeFile(t, filepath.Join(dir, "mixed", "j=1", "i.parquet"), intColumn("id", 0, 3))
	if _, err := Add(c, "u", []string{mixed, other}, Options{Create: true, Hive: true}); !errors.Is(err, ErrSchemaMismatch) || !strings.Contains(err.Error(), "partition directories are") {
		t.Errorf("--hive over files with different keys: %v", err)
	}
	if _, err := Add(c, "u", []string{flat, mixed}, Options{Create: true}); err != nil {
		t.Fatal(err)
	}
	if cols, _ := tableFiles(t, c, "u"); len(cols) != 1 {
		t.Errorf("mixed layout: %d columns, want only the files' own", len(cols))
	}
	if _, err := Add(c, "u", []string{mixed}, Options{Hive: true}); !errors.Is(err, ErrSchemaMismatch) || !strings.Contains(err.Error(), "no partition columns") {
		t.Errorf("--hive into a table without partition columns: %v", err)
	}
}

// Files prepared for an import keep no ignored columns: an add column of
// such a name later is a new column there, not the file's values.
func TestPrepareFilesMapsNothingIn(t *testing.T) {
	dir := t.TempDir()
	wide := writeFile(t, filepath.Join(dir, "w.parquet"), intColumn("a", 0, 3), intColumn("note", 0, 3))
	defs, _ := catalog.ParseColumnDefs("a BIGINT")
	c, _ := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	tx, _ := c.Begin()
	tx.CreateTable("t", defs)
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	cols, _ := tableFiles(t, c, "t")
	nfs, _, err := PrepareFiles(context.Background(), "t", cols, []string{wide}, PrepareOptions{})
	if err != nil || len(nfs) != 1 || len(nfs[0].IgnoredColumns) != 0 {
		t.Fatalf("prepared: %+v %v", nfs, err)
	}
}
