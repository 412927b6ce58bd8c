package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/types"
)

// writeSpecial writes a file of signed zeros, infinities and NaNs of
// either sign with payloads (a FLOAT signalling NaN among them), and
// 64-bit integers at their extremes for HUGEINT and UHUGEINT columns.
func writeSpecial(t *testing.T, path string, hs []int64, us []uint64) {
	t.Helper()
	d64 := []uint64{0x8000000000000000, 0, 0xfff8000000000000, 0x7ff0000000000001, 0xfff4000000000003, 0xfff0000000000000, 0x3ff8000000000000}
	f32 := []uint32{0x80000000, 0, 0xffc00000, 0x7f800001, 0xffc00005, 0x7f800000, 0x3fc00000}
	n := len(d64)
	db := array.NewFloat64Builder(memory.DefaultAllocator)
	fb := array.NewFloat32Builder(memory.DefaultAllocator)
	hv, uv := make([]*types.Value, n), make([]*types.Value, n)
	for i := range n {
		db.Append(math.Float64frombits(d64[i]))
		fb.Append(math.Float32frombits(f32[i]))
		h, u := types.IntValue(hs[i%len(hs)]), types.UintValue(us[i%len(us)])
		hv[i], uv[i] = &h, &u
	}
	da, fa := db.NewArray(), fb.NewArray()
	defer da.Release()
	defer fa.Release()
	err := pqwrite.Write(path, []pqwrite.Column{
		{Name: "d", Type: types.MustParseType("float64"), Array: da},
		{Name: "f", Type: types.MustParseType("float32"), Array: fa},
		{Name: "h", Type: types.MustParseType("int64"), Values: hv},
		{Name: "u", Type: types.MustParseType("uint64"), Values: uv},
	}, pqwrite.Options{})
	if err != nil {
		t.Fatal(err)
	}
}

// Issue 25, items 3 and 7: optimize sorted by a DOUBLE or FLOAT column and
// compact keep -0.0, NaN signs and payloads bit for bit (1/d stays -inf
// where it was), and tables with HUGEINT and UHUGEINT columns are
// rewritten, values exact.
func TestRewritesKeepSpecialValues(t *testing.T) {
	cat := newCatalogDir(t)
	data := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	writeSpecial(t, filepath.Join(data, "a.parquet"), []int64{math.MinInt64, -1, 0, math.MaxInt64}, []uint64{0, math.MaxUint64})
	writeSpecial(t, filepath.Join(data, "b.parquet"), []int64{7, math.MaxInt64, math.MinInt64}, []uint64{math.MaxUint64, 1})
	mustRun(t, "--catalog", cat, "table", "create", "t", "d DOUBLE, f FLOAT, h HUGEINT, u UHUGEINT")
	mustRun(t, "--catalog", cat, "add", "t", data)
	const digest = `SELECT count(*), sum(hash(d::BIT)), sum(hash(f::BIT)), count(*) FILTER (1/d = '-inf'::DOUBLE),
		count(*) FILTER (1/f = '-inf'::FLOAT), sum(h), sum(u), min(h), max(u) FROM t`
	want := mustRun(t, "--catalog", cat, "--format", "csv", "query", digest)
	if !strings.Contains(want, "14,") {
		t.Fatalf("before: %q", want)
	}
	for _, args := range [][]string{
		{"optimize", "t", "--sort-by", "d", "--rows-per-file", "5"},
		{"optimize", "t", "--sort-by", "f,h", "--rows-per-file", "4"},
		{"compact", "t"},
		{"optimize", "t", "--sort-by", "u,d", "--curve", "hilbert", "--rows-per-file", "6"},
		{"optimize", "t", "--sort-by", "h"},
	} {
		out := mustRun(t, append([]string{"--catalog", cat}, args...)...)
		if !strings.Contains(out, "(14 rows, ") {
			t.Fatalf("%v: %q", args, out)
		}
		if got := mustRun(t, "--catalog", cat, "--format", "csv", "query", digest); got != want {
			t.Fatalf("%v changed the values:\n got %s\nwant %s", args, got, want)
		}
	}
}

// A HUGEINT column whose rows in one new file would hold both negative
// values and values above 2^63-1 has no 64-bit Parquet type: the rewrite
// is refused naming the column, nothing is committed and nothing is left.
func TestRewriteRefusesUnwritableHugeint(t *testing.T) {
	cat := newCatalogDir(t)
	data := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	writeSpecial(t, filepath.Join(data, "a.parquet"), []int64{-5}, []uint64{1})
	mustRun(t, "--catalog", cat, "table", "create", "t", "d DOUBLE, f FLOAT, h HUGEINT, u UHUGEINT")
	mustRun(t, "--catalog", cat, "add", "t", data)
	// The same column as UINT64 beyond 2^63-1 in a second file.
	big := filepath.Join(t.TempDir(), "big.parquet")
	top, one, x := types.UintValue(math.MaxUint64), types.UintValue(1), types.FloatValue(1)
	err := pqwrite.Write(big, []pqwrite.Column{
		{Name: "d", Type: types.MustParseType("float64"), Values: []*types.Value{&x}},
		{Name: "f", Type: types.MustParseType("float32"), Values: []*types.Value{&x}},
		{Name: "h", Type: types.MustParseType("uint64"), Values: []*types.Value{&top}},
		{Name: "u", Type: types.MustParseType("uint64"), Values: []*types.Value{&one}},
	}, pqwrite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mustRun(t, "--catalog", cat, "add", "t", big)
	before := mustRun(t, "--catalog", cat, "snapshots")
	for _, args := range [][]string{{"compact", "t"}, {"optimize", "t", "--sort-by", "h"}} {
		_, err := run(t, append([]string{"--catalog", cat}, args...)...)
		if err == nil || !strings.Contains(err.Error(), `column "h" (HUGEINT) holds values no 64-bit Parquet integer type holds together`) {
			t.Fatalf("%v: %v", args, err)
		}
	}
	if after := mustRun(t, "--catalog", cat, "snapshots"); after != before {
		t.Fatalf("a refused rewrite committed:\n%s", after)
	}
	if left, _ := filepath.Glob(filepath.Join(cat+".files", "*", "*")); len(left) > 0 {
		t.Fatalf("a refused rewrite left %v", left)
	}
	// Sized so that no file mixes them, the rewrite goes through.
	out := mustRun(t, "--catalog", cat, "optimize", "t", "--sort-by", "h", "--rows-per-file", "7")
	if !strings.Contains(out, "(8 rows, ") {
		t.Fatalf("optimize in files of 7 rows: %q", out)
	}
}
