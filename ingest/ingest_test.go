package ingest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/internal/testkit"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/pqmeta"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

func memCatalog(t *testing.T) *catalog.Catalog {
	t.Helper()
	c, err := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// randomTypes are the types pqwrite writes with arrow-go.
var randomTypes = []string{
	"boolean", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
	"float32", "float64", "decimal(4,2)", "decimal(18,3)", "decimal(38,10)", "date", "timestamp_ms",
	"timestamp", "timestamp_ns", "timestamptz", "varchar", "blob", "uuid",
}

// unitTruth is what a unit (file or row group) really holds of a column.
type unitTruth struct {
	values []types.Value // non-NULL, non-NaN
	nulls  int64
	nans   int64
}

// checkUnit asserts that stored stats are sound for the values: every bound
// admits every value, exact bounds are attained, counts are right.
func checkUnit(t *testing.T, what string, codec *types.Codec, st stats.Column, truth unitTruth) {
	t.Helper()
	var lo, hi []byte // an empty string encodes as nil: track with index
	for i, v := range truth.values {
		enc, err := codec.Encode(v)
		if err != nil {
			t.Fatalf("%s: encode %#v: %v", what, v, err)
		}
		if st.Min.Known && bytes.Compare(enc, st.Min.V) < 0 {
			t.Fatalf("%s: UNSOUND min %s excludes %s", what, show(codec, st.Min.V), codec.Format(v))
		}
		if st.Max.Known && bytes.Compare(enc, st.Max.V) > 0 {
			t.Fatalf("%s: UNSOUND max %s excludes %s", what, show(codec, st.Max.V), codec.Format(v))
		}
		if i == 0 || bytes.Compare(enc, lo) < 0 {
			lo = enc
		}
		if i == 0 || bytes.Compare(enc, hi) > 0 {
			hi = enc
		}
	}
	if st.MinIsExact && st.Min.Known && len(truth.values) > 0 && !bytes.Equal(lo, st.Min.V) {
		t.Fatalf("%s: min %s marked exact, true min %s", what, show(codec, st.Min.V), show(codec, lo))
	}
	if st.MaxIsExact && st.Max.Known && len(truth.values) > 0 && !bytes.Equal(hi, st.Max.V) {
		t.Fatalf("%s: max %s marked exact, true max %s", what, show(codec, st.Max.V), show(codec, hi))
	}
	if st.NullCount.Known && st.NullCount.V != truth.nulls {
		t.Fatalf("%s: null_count %d, true %d", what, st.NullCount.V, truth.nulls)
	}
	if st.ValueCount.Known && st.ValueCount.V != int64(len(truth.values))+truth.nans {
		t.Fatalf("%s: value_count %d, true %d", what, st.ValueCount.V, int64(len(truth.values))+truth.nans)
	}
	if st.ContainsNull.Known && st.ContainsNull.V != (truth.nulls > 0) {
		t.Fatalf("%s: contains_null %v, true nulls %d", what, st.ContainsNull.V, truth.nulls)
	}
	if st.ContainsNaN.Known && st.ContainsNaN.V != (truth.nans > 0) {
		t.Fatalf("%s: contains_nan %v, true NaNs %d", what, st.ContainsNaN.V, truth.nans)
	}
}

func show(c *types.Codec, b []byte) string {
	v, err := c.Decode(b)
	if err != nil {
		return fmt.Sprintf("<%x>", b)
	}
	return c.Format(v)
}

func truthOf(vals []*types.Value, from, to int) unitTruth {
	var u unitTruth
	for _, v := range vals[from:to] {
		switch {
		case v == nil:
			u.nulls++
		case math.IsNaN(v.F):
			u.nans++
		default:
			u.values = append(u.values, *v)
		}
	}
	return u
}

// readAs is a written column as DuckDB reads it: pqwrite writes
// timestamp_ms as a Parquet TIMESTAMP(MILLIS), which DuckDB 1.5 reads as
// TIMESTAMP (µs). DuckDB cannot read a millisecond count beyond the µs
// range (an infinity written in ms): readable is false then.
func readAs(c pqwrite.Column) (typ types.Type, vals []*types.Value, readable bool) {
	if c.Type.Kind != types.KindTimestampMS {
		return c.Type, c.Values, true
	}
	readable = true
	out := make([]*types.Value, len(c.Values))
	for i, v := range c.Values {
		if v != nil {
			x := v.Int64()
			if x == math.MaxInt64 || x == -math.MaxInt64 {
				readable = false
			} else {
				x *= 1000
			}
			w := types.IntValue(x)
			out[i] = &w
		}
	}
	return types.Simple(types.KindTimestamp), out, readable
}

// TestRandomFilesAreSound writes random files with arrow-go, registers them
// and checks every stored bound and count against the data written.
func TestRandomFilesAreSound(t *testing.T) {
	r := rand.New(rand.NewPCG(42, 7))
	dir := t.TempDir()
	rounds := 60
	if testing.Short() {
		rounds = 15
	}
	checked := 0
	for round := range rounds {
		var cols []pqwrite.Column
		n := []int{0, 1, 2, 37, 300}[r.IntN(5)]
		for i, ti := range r.Perm(len(randomTypes))[:3+r.IntN(5)] {
			cols = append(cols, testkit.RandomColumn(r, fmt.Sprintf("c%d", i), types.MustParseType(randomTypes[ti]), n))
		}
		opts := pqwrite.Options{
			RowGroupRows: int64(1 + r.IntN(max(n, 1))), PageIndex: r.IntN(2) == 0,
			BloomFilters: r.IntN(3) == 0, Dictionary: r.IntN(2) == 0,
		}
		if r.IntN(3) == 0 {
			opts.PageBytes = 256
		}
		path := filepath.Join(dir, fmt.Sprintf("f%03d.parquet", round))
		if err := pqwrite.Write(path, cols, opts); err != nil {
			t.Fatal(err)
		}
		c := memCatalog(t)
		if _, err := Add(c, "t", []string{path}, Options{Create: true}); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		rd, _ := c.Read(catalog.Latest)
		tb, _ := rd.Table("t")
		tcols, _ := rd.Columns(tb.ID)
		files, _ := rd.Files(tb.ID)
		if len(files) != 1 || files[0].RecordCount != int64(n) {
			t.Fatalf("round %d: files %+v", round, files)
		}
		for i, col := range tcols {
			want, vals, readable := readAs(cols[i])
			if !col.Type.Equal(want) {
				t.Fatalf("round %d: column %s registered as %s, written as %s", round, col.Name, col.Type, want)
			}
			codec, _ := types.CodecFor(col.Type)
			var fileStats *stats.Column
			_ = rd.FileColumnStats(tb.ID, col.ID, func(_ int64, st *stats.Column) error { fileStats = st; return nil })
			if fileStats == nil {
				t.Fatalf("round %d: no stats for %s", round, col.Name)
			}
			what := fmt.Sprintf("round %d %s %s", round, col.Name, col.Type)
			checkUnit(t, what+" file", codec, *fileStats, truthOf(vals, 0, n))
			rgs, _ := rd.RowGroupStats(tb.ID, col.ID, files[0].ID)
			for _, rg := range rgs {
				end := min(int(rg.FirstRow+rg.Stats.RowCount), n)
				checkUnit(t, fmt.Sprintf("%s rg %d", what, rg.Index), codec, rg.Stats, truthOf(vals, int(rg.FirstRow), end))
				checked++
			}
			// arrow-go writes bounds for every type here whenever a row
			// group holds a non-NaN value: rocklake must keep them.
			tr := truthOf(vals, 0, n)
			if readable && len(tr.values) > 0 && tr.nans == 0 && (!fileStats.Min.Known || !fileStats.Max.Known) {
				t.Errorf("%s: bounds lost (min %v max %v)", what, fileStats.Min.Known, fileStats.Max.Known)
			}
		}
		rd.Close()
	}
	t.Logf("%d row-group units checked", checked)
}

func TestBadFiles(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.parquet")
	r := rand.New(rand.NewPCG(1, 1))
	if err := pqwrite.Write(good, []pqwrite.Column{testkit.RandomColumn(r, "x", types.MustParseType("int64"), 50)}, pqwrite.Options{}); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(good)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	corrupt := append([]byte(nil), raw...)
	flen := int(corrupt[len(corrupt)-8]) | int(corrupt[len(corrupt)-7])<<8
	for i := len(corrupt) - 8 - flen; i < len(corrupt)-8; i += 3 {
		corrupt[i] ^= 0x5a
	}
	hugeLen := append([]byte(nil), raw...)
	hugeLen[len(hugeLen)-8], hugeLen[len(hugeLen)-7] = 0xff, 0xff
	// A footer whose row group claims one row more than its column holds:
	// registering it would answer count(*) wrongly from metadata.
	md, err := metadata.NewFileMetaData(raw[len(raw)-8-flen:len(raw)-8], nil)
	if err != nil {
		t.Fatal(err)
	}
	md.FileMetaData.RowGroups[0].NumRows++
	md.FileMetaData.NumRows++
	footer, err := md.Serialize(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	lies := append(append([]byte(nil), raw[:len(raw)-8-flen]...), footer...)
	lies = binary.LittleEndian.AppendUint32(lies, uint32(len(footer)))
	lies = append(lies, "PAR1"...)
	cases := []struct {
		name string
		path string
		want error
	}{
		{"row count lies", write("lies.parquet", lies), pqmeta.ErrCorruptFooter},
		{"text file", write("notes.parquet", []byte("hello, this is not parquet at all")), pqmeta.ErrNotParquet},
		{"empty file", write("empty.parquet", nil), pqmeta.ErrNotParquet},
		{"truncated", write("trunc.parquet", raw[:len(raw)/2]), pqmeta.ErrTruncated},
		{"corrupt footer", write("corrupt.parquet", corrupt), pqmeta.ErrCorruptFooter},
		{"footer length too large", write("huge.parquet", hugeLen), pqmeta.ErrCorruptFooter},
	}
	for _, tc := range cases {
		c := memCatalog(t)
		_, err := Add(c, "t", []string{tc.path}, Options{Create: true})
		if err == nil || !errors.Is(err, tc.want) || !bytes.Contains([]byte(err.Error()), []byte(filepath.Base(tc.path))) {
			t.Errorf("%s: want %v naming the file, got %v", tc.name, tc.want, err)
		}
	}
	// One bad file among good ones: nothing is registered.
	c := memCatalog(t)
	if _, err := Add(c, "t", []string{good}, Options{Create: true}); err != nil {
		t.Fatal(err)
	}
	good2 := filepath.Join(dir, "good2.parquet")
	_ = pqwrite.Write(good2, []pqwrite.Column{testkit.RandomColumn(r, "x", types.MustParseType("int64"), 5)}, pqwrite.Options{})
	before, _ := c.Snapshots()
	for _, args := range [][]string{
		{good2, cases[2].path},                         // a truncated file among good ones
		{good2, filepath.Join(dir, "missing.parquet")}, // a missing path
		{good2, good2},                                 // the same file twice
		{good},                                         // already registered
	} {
		if _, err := Add(c, "t", args, Options{}); err == nil {
			t.Errorf("add %v: want an error", args)
		}
	}
	after, _ := c.Snapshots()
	if len(after) != len(before) {
		t.Fatalf("failed adds committed %d snapshots", len(after)-len(before))
	}
	// A schema that does not fit.
	strFile := filepath.Join(dir, "str.parquet")
	_ = pqwrite.Write(strFile, []pqwrite.Column{testkit.RandomColumn(r, "x", types.MustParseType("varchar"), 5)}, pqwrite.Options{})
	_, err = Add(c, "t", []string{strFile}, Options{})
	if !errors.Is(err, ErrSchemaMismatch) || !bytes.Contains([]byte(err.Error()), []byte("str.parquet")) {
		t.Fatalf("string into an integer column: %v", err)
	}
	// A missing table without --create.
	if _, err := Add(c, "nope", []string{good2}, Options{}); !errors.Is(err, catalog.ErrNoSuchTable) {
		t.Fatalf("missing table: %v", err)
	}
}

func TestWiderTableTypes(t *testing.T) {
	// An int32 file fits a BIGINT column; a decimal(4,2) file fits
	// decimal(10,3); a timestamp_ns file fits a TIMESTAMP column, with
	// bounds rounded outward.
	dir := t.TempDir()
	c := memCatalog(t)
	tx, _ := c.Begin()
	tx.CreateTable("t", []catalog.ColumnDef{{Name: "i", Type: "bigint"}, {Name: "d", Type: "decimal(10,3)"}, {Name: "ts", Type: "timestamp"}, {Name: "d2", Type: "decimal(10,1)"}})
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	v := func(x types.Value) *types.Value { return &x }
	path := filepath.Join(dir, "w.parquet")
	err := pqwrite.Write(path, []pqwrite.Column{
		{Name: "i", Type: types.MustParseType("int32"), Values: []*types.Value{v(types.IntValue(-5)), v(types.IntValue(7))}},
		{Name: "d", Type: types.MustParseType("decimal(4,2)"), Values: []*types.Value{v(types.IntValue(-125)), v(types.IntValue(9999))}},
		{Name: "ts", Type: types.MustParseType("timestamp_ns"), Values: []*types.Value{v(types.IntValue(-1_500)), v(types.IntValue(2_000_001))}},
		{Name: "d2", Type: types.MustParseType("decimal(4,2)"), Values: []*types.Value{v(types.IntValue(-125)), v(types.IntValue(9951))}},
	}, pqwrite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Add(c, "t", []string{path}, Options{}); err != nil {
		t.Fatal(err)
	}
	rd, _ := c.Read(catalog.Latest)
	defer rd.Close()
	tb, _ := rd.Table("t")
	cols, _ := rd.Columns(tb.ID)
	want := map[string][2]string{
		"i": {"-5", "7"}, "d": {"-1.250", "99.990"},
		"ts": {"1969-12-31 23:59:59.999998", "1970-01-01 00:00:00.002001"},
		"d2": {"-1.3", "99.6"},
	}
	for _, col := range cols {
		codec, _ := types.CodecFor(col.Type)
		_ = rd.FileColumnStats(tb.ID, col.ID, func(_ int64, st *stats.Column) error {
			got := [2]string{show(codec, st.Min.V), show(codec, st.Max.V)}
			if got != want[col.Name] {
				t.Errorf("%s: bounds %v, want %v", col.Name, got, want[col.Name])
			}
			if rounded := col.Name == "ts" || col.Name == "d2"; rounded && (st.MinIsExact || st.MaxIsExact) {
				t.Errorf("%s: rounded bounds must not be exact", col.Name)
			}
			return nil
		})
	}
}

// TestUnitConversions: times and timestamps written in ms or ns are
// registered in the types DuckDB reads them as (time, timetz, timestamptz
// and a TIMESTAMP(MILLIS) are µs; TIME(NANOS) is time_ns) with bounds
// converted outward.
func TestUnitConversions(t *testing.T) {
	dir := t.TempDir()
	v := func(x int64) *types.Value { val := types.IntValue(x); return &val }
	cases := []struct {
		typ, unit string
		vals      []*types.Value
		wantType  string
		lo, hi    string
		exact     bool
	}{
		{"timestamptz", "ms", []*types.Value{v(-1500), v(2001), nil}, "timestamptz",
			"1969-12-31 23:59:58.5+00", "1970-01-01 00:00:02.001+00", true},
		{"timestamptz", "ns", []*types.Value{v(-1500), v(2_000_001)}, "timestamptz",
			"1969-12-31 23:59:59.999998+00", "1970-01-01 00:00:00.002001+00", false},
		{"timestamp", "ns", []*types.Value{v(-1500), v(2_000_000)}, "timestamp_ns",
			"1969-12-31 23:59:59.9999985", "1970-01-01 00:00:00.002", true},
		{"time", "ms", []*types.Value{v(1), v(86_399_999)}, "", "00:00:00.001", "23:59:59.999", true},
		{"time", "ns", []*types.Value{v(1), v(86_399_999_999_999)}, "time_ns", "00:00:00.000000001", "23:59:59.999999999", true},
		{"timestamp_ms", "", []*types.Value{v(-1500), v(2001)}, "timestamp",
			"1969-12-31 23:59:58.5", "1970-01-01 00:00:02.001", true},
	}
	for i, tc := range cases {
		path := filepath.Join(dir, fmt.Sprintf("u%d.parquet", i))
		col := pqwrite.Column{Name: "x", Type: types.MustParseType(tc.typ), Unit: tc.unit, Values: tc.vals}
		if err := pqwrite.Write(path, []pqwrite.Column{col}, pqwrite.Options{}); err != nil {
			t.Fatal(err)
		}
		c := memCatalog(t)
		if _, err := Add(c, "t", []string{path}, Options{Create: true}); err != nil {
			t.Fatalf("%s %s: %v", tc.typ, tc.unit, err)
		}
		rd, _ := c.Read(catalog.Latest)
		tb, _ := rd.Table("t")
		cc, _ := rd.Column(tb.ID, "x")
		if tc.wantType != "" && cc.Type.DuckLakeName() != tc.wantType {
			t.Errorf("%s in %s: registered as %s, want %s", tc.typ, tc.unit, cc.Type, tc.wantType)
		}
		codec, _ := types.CodecFor(cc.Type)
		_ = rd.FileColumnStats(tb.ID, cc.ID, func(_ int64, st *stats.Column) error {
			lo, hi := show(codec, st.Min.V), show(codec, st.Max.V)
			// TIME written with isAdjustedToUTC reads as timetz: compare
			// the clock part only.
			if cc.Type.Kind == types.KindTimeTZ {
				lo, hi = lo[:len(lo)-3], hi[:len(hi)-3]
			}
			if lo != tc.lo || hi != tc.hi || st.MinIsExact != tc.exact || st.MaxIsExact != tc.exact {
				t.Errorf("%s in %s (%s): [%s, %s] exact %v/%v; want [%s, %s] exact %v", tc.typ, tc.unit, cc.Type,
					lo, hi, st.MinIsExact, st.MaxIsExact, tc.lo, tc.hi, tc.exact)
			}
			return nil
		})
		rd.Close()
	}
}

// A rewrite retires files in the snapshot that adds their replacements;
// retiring a file that is no longer live commits nothing, or its rows
// would be registered twice.
func TestReplace(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(3, 3))
	mk := func(name string) string {
		p := filepath.Join(dir, name)
		if err := pqwrite.Write(p, []pqwrite.Column{testkit.RandomColumn(r, "x", types.MustParseType("int64"), 20)}, pqwrite.Options{}); err != nil {
			t.Fatal(err)
		}
		return p
	}
	c := memCatalog(t)
	if _, err := Add(c, "t", []string{mk("a.parquet")}, Options{Create: true}); err != nil {
		t.Fatal(err)
	}
	live := func() []catalog.DataFile {
		rd, _ := c.Read(catalog.Latest)
		defer rd.Close()
		tb, _ := rd.Table("t")
		fs, _ := rd.Files(tb.ID)
		return fs
	}
	old := live()
	res, err := Add(c, "t", []string{mk("b.parquet")}, Options{Replace: []int64{old[0].ID}})
	if err != nil {
		t.Fatal(err)
	}
	if now := live(); len(now) != 1 || filepath.Base(now[0].Path) != "b.parquet" {
		t.Fatalf("after replacing a with b: %+v", now)
	}
	before, _ := c.Snapshots()
	if _, err := Add(c, "t", []string{mk("c.parquet")}, Options{Replace: []int64{old[0].ID}}); !errors.Is(err, catalog.ErrNoSuchFile) {
		t.Fatalf("replacing a retired file: %v", err)
	}
	if after, _ := c.Snapshots(); len(after) != len(before) || after[len(after)-1].ID != res.Snapshot.ID {
		t.Fatal("a refused replace committed a snapshot")
	}
}

// A file whose column names differ only in case is refused: names match
// without regard to case, so which column a reader takes is ambiguous and
// stats could describe the other one.
func TestCaseCollidingColumnsAreRefused(t *testing.T) {
	dir := t.TempDir()
	i64 := types.MustParseType("int64")
	vals := func(base int64) []*types.Value {
		out := make([]*types.Value, 10)
		for i := range out {
			v := types.IntValue(base + int64(i))
			out[i] = &v
		}
		return out
	}
	good := filepath.Join(dir, "good.parquet")
	bad := filepath.Join(dir, "bad.parquet")
	if err := pqwrite.Write(good, []pqwrite.Column{{Name: "id", Type: i64, Values: vals(0)}}, pqwrite.Options{}); err != nil {
		t.Fatal(err)
	}
	if err := pqwrite.Write(bad, []pqwrite.Column{{Name: "ID", Type: i64, Values: vals(1000)}, {Name: "id", Type: i64, Values: vals(0)}}, pqwrite.Options{}); err != nil {
		t.Fatal(err)
	}
	c, _ := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	if _, err := Add(c, "t", []string{good}, Options{Create: true}); err != nil {
		t.Fatal(err)
	}
	snaps, _ := c.Snapshots()
	_, err := Add(c, "t", []string{bad}, Options{})
	if !errors.Is(err, ErrSchemaMismatch) || !strings.Contains(err.Error(), `"ID"`) || !strings.Contains(err.Error(), `"id"`) {
		t.Fatalf("a file with id and ID: %v", err)
	}
	if now, _ := c.Snapshots(); len(now) != len(snaps) {
		t.Fatal("a refused file committed a snapshot")
	}
}

// TestManyBadFilesListedOnce: the error of an add refusing many files lists
// the first ten once, says how many more there are, and still lets callers
// find each failure's kind.
func TestManyBadFilesListedOnce(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for i := range 13 {
		p := filepath.Join(dir, fmt.Sprintf("bad%02d.parquet", i))
		if err := os.WriteFile(p, []byte("not parquet"), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	_, err := Add(memCatalog(t), "t", paths, Options{Create: true})
	if err == nil || !errors.Is(err, pqmeta.ErrNotParquet) {
		t.Fatalf("want an error that is ErrNotParquet, got %v", err)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "13 of 13 files cannot be added, so none was:") || !strings.Contains(msg, "... and 3 more") {
		t.Errorf("message: %s", msg)
	}
	listed := 0
	for _, p := range paths {
		switch n := strings.Count(msg, filepath.Base(p)); {
		case n > 1:
			t.Errorf("%s named %d times in:\n%s", filepath.Base(p), n, msg)
		case n == 1:
			listed++
		}
	}
	if listed != 10 {
		t.Errorf("%d files named, want the first 10:\n%s", listed, msg)
	}
}
