package engine

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/types"
)

// Files whose columns are in another order, or carry an extra column, are
// read by name; files that match the table exactly are read by position.
// Either way the answers are the table's.
func TestFilesReadByNameOnlyWhenNeeded(t *testing.T) {
	dir := t.TempDir()
	i64 := types.MustParseType("int64")
	vals := func(xs ...int64) []*types.Value {
		out := make([]*types.Value, len(xs))
		for i, x := range xs {
			v := types.IntValue(x)
			out[i] = &v
		}
		return out
	}
	write := func(name string, cols ...pqwrite.Column) string {
		p := filepath.Join(dir, name)
		if err := pqwrite.Write(p, cols, pqwrite.Options{}); err != nil {
			t.Fatal(err)
		}
		return p
	}
	same := write("a.parquet", pqwrite.Column{Name: "a", Type: i64, Values: vals(1, 2)}, pqwrite.Column{Name: "b", Type: i64, Values: vals(10, 20)})
	swapped := write("b.parquet", pqwrite.Column{Name: "b", Type: i64, Values: vals(30)}, pqwrite.Column{Name: "a", Type: i64, Values: vals(3)})
	extra := write("c.parquet", pqwrite.Column{Name: "a", Type: i64, Values: vals(4)}, pqwrite.Column{Name: "b", Type: i64, Values: vals(40)},
		pqwrite.Column{Name: "z", Type: i64, Values: vals(99)})
	c, _, e := lakeOf(t, []string{same})
	if _, err := ingest.Add(c, "t", []string{swapped, extra}, ingest.Options{IgnoreExtraColumns: true}); err != nil {
		t.Fatal(err)
	}
	rd, _ := c.Read(catalog.Latest)
	defer rd.Close()
	tb, _ := rd.Table("t")
	files, _ := rd.Files(tb.ID)
	match := map[string]bool{}
	for _, f := range files {
		match[filepath.Base(f.Path)] = f.ColumnsMatchTable
	}
	if !match["a.parquet"] || match["b.parquet"] || match["c.parquet"] {
		t.Fatalf("ColumnsMatchTable: %v", match)
	}
	for q, want := range map[string]string{
		"SELECT sum(a), sum(b) FROM t":                   "10|100",
		"SELECT sum(a), sum(b) FROM t WHERE b < 25":      "3|30",
		"SELECT sum(a), sum(b) FROM t WHERE b > 25":      "7|70",
		"SELECT a, b FROM t WHERE a = 3":                 "3|30",
		"SELECT list(a ORDER BY a) FROM t WHERE b <= 20": "[1, 2]",
	} {
		if got := answerOf(t, e, catalog.Latest, q); got != want {
			t.Errorf("%s: got %q, want %q", q, got, want)
		}
	}
}

// Past listParamMin kept files the file list goes to DuckDB as a
// parameter; answers do not change, for all files or some, twice in a row
// on the same pooled connection.
func TestManyFilesAsParameter(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	var total int64
	for f := range listParamMin + 6 {
		v := types.IntValue(int64(f))
		p := filepath.Join(dir, fmt.Sprintf("f%03d.parquet", f))
		if err := pqwrite.Write(p, []pqwrite.Column{{Name: "x", Type: types.MustParseType("int64"), Values: []*types.Value{&v}}}, pqwrite.Options{}); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
		total += int64(f)
	}
	_, _, e := lakeOf(t, paths)
	for range 2 {
		for q, want := range map[string]string{
			"SELECT count(*), sum(x) FROM t":             fmt.Sprintf("%d|%d", len(paths), total),
			"SELECT count(*), sum(x) FROM t WHERE x > 2": fmt.Sprintf("%d|%d", len(paths)-3, total-3),
			"SELECT count(*), sum(x) FROM t WHERE x < 2": "2|1",
		} {
			if got := answerOf(t, e, catalog.Latest, q); got != want {
				t.Errorf("%s: got %q, want %q", q, got, want)
			}
		}
	}
}
