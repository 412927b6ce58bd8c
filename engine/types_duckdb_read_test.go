package engine

import (
	"bytes"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/pqmeta"
	"github.com/rocklake/rocklake/prune"
	"github.com/rocklake/rocklake/types"
)

// rawColumn is one Parquet leaf written with arrow-go's low-level writer,
// so that every physical / logical / converted type combination can be
// made, including ones no Arrow type maps to.
type rawColumn struct {
	node func(name string) (schema.Node, error)
	// vals is []bool, []int32, []int64, []parquet.Int96, []float32,
	// []float64, []parquet.ByteArray or []parquet.FixedLenByteArray.
	vals any
}

func logicalNode(lt schema.LogicalType, pt parquet.Type, length int) func(string) (schema.Node, error) {
	return func(name string) (schema.Node, error) {
		return schema.NewPrimitiveNodeLogical(name, parquet.Repetitions.Required, lt, pt, length, -1)
	}
}

func convertedNode(ct schema.ConvertedType, pt parquet.Type, length, precision, scale int) func(string) (schema.Node, error) {
	return func(name string) (schema.Node, error) {
		return schema.NewPrimitiveNodeConverted(name, parquet.Repetitions.Required, pt, ct, length, precision, scale, -1)
	}
}

// writeRaw writes one column x in one row group, with statistics and bloom
// filters and without dictionary encoding (a dictionary-encoded chunk is
// still bloom-filtered, but plain pages keep the file small and simple).
func writeRaw(t *testing.T, path string, c rawColumn, stats bool) {
	t.Helper()
	nd, err := c.node("x")
	if err != nil {
		t.Fatal(err)
	}
	root, err := schema.NewGroupNode("schema", parquet.Repetitions.Required, schema.FieldList{nd}, -1)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	props := parquet.NewWriterProperties(parquet.WithBloomFilterEnabled(true), parquet.WithBloomFilterFPP(0.001),
		parquet.WithDictionaryDefault(false), parquet.WithStats(stats))
	w := file.NewParquetWriter(f, root, file.WithWriterProps(props))
	rg, err := w.AppendRowGroupChecked()
	if err != nil {
		t.Fatal(err)
	}
	cw, err := rg.NextColumn()
	if err != nil {
		t.Fatal(err)
	}
	switch v := c.vals.(type) {
	case []bool:
		_, err = cw.(*file.BooleanColumnChunkWriter).WriteBatch(v, nil, nil)
	case []int32:
		_, err = cw.(*file.Int32ColumnChunkWriter).WriteBatch(v, nil, nil)
	case []int64:
		_, err = cw.(*file.Int64ColumnChunkWriter).WriteBatch(v, nil, nil)
	case []parquet.Int96:
		_, err = cw.(*file.Int96ColumnChunkWriter).WriteBatch(v, nil, nil)
	case []float32:
		_, err = cw.(*file.Float32ColumnChunkWriter).WriteBatch(v, nil, nil)
	case []float64:
		_, err = cw.(*file.Float64ColumnChunkWriter).WriteBatch(v, nil, nil)
	case []parquet.ByteArray:
		_, err = cw.(*file.ByteArrayColumnChunkWriter).WriteBatch(v, nil, nil)
	case []parquet.FixedLenByteArray:
		_, err = cw.(*file.FixedLenByteArrayColumnChunkWriter).WriteBatch(v, nil, nil)
	default:
		t.Fatalf("writeRaw: values of type %T", c.vals)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := cw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := rg.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// stripLogicalTypes rewrites a file's footer without its logical types, as
// writers before Parquet 2.4 wrote it (converted types only).
func stripLogicalTypes(t *testing.T, path string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	md := rdr.MetaData()
	rdr.Close()
	for _, el := range md.FileMetaData.Schema {
		el.LogicalType = nil
	}
	var footer bytes.Buffer
	if _, err := md.WriteTo(&footer, nil); err != nil {
		t.Fatal(err)
	}
	n := int(binary.LittleEndian.Uint32(raw[len(raw)-8:]))
	out := append([]byte(nil), raw[:len(raw)-8-n]...)
	out = append(out, footer.Bytes()...)
	out = binary.LittleEndian.AppendUint32(out, uint32(footer.Len()))
	out = append(out, "PAR1"...)
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// duckDBType is the type DuckDB reads a file's column x as (DESCRIBE), or
// an error when DuckDB cannot read the file.
func duckDBType(db *sql.DB, path, col string) (string, error) {
	rows, err := db.Query("DESCRIBE SELECT * FROM read_parquet(?)", path)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	for rows.Next() {
		var name, typ string
		var a, b, c, d any
		if err := rows.Scan(&name, &typ, &a, &b, &c, &d); err != nil {
			return "", err
		}
		if strings.EqualFold(name, col) {
			return typ, nil
		}
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("DuckDB reads no column %s", col)
}

// registeredTypes registers a file as a new table and returns its
// top-level columns' types by lower-cased name.
func registeredTypes(t *testing.T, path string) map[string]types.Type {
	t.Helper()
	c, err := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ingest.Add(c, "t", []string{path}, ingest.Options{Create: true, NoAutoFilters: true}); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	r, err := c.Read(catalog.Latest)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tb, _ := r.Table("t")
	cols, _ := r.Columns(tb.ID)
	out := map[string]types.Type{}
	for _, col := range cols {
		if !col.Parent.Known {
			out[strings.ToLower(col.Name)] = col.Type
		}
	}
	return out
}

// sameAsDuckDB compares a registered type with DuckDB's DESCRIBE text: both
// read by ParseType, so that spelling (quotes in STRUCT, TIME WITH TIME
// ZONE) does not matter.
func sameAsDuckDB(ours types.Type, duck string) bool {
	if types.DuckDBName(ours) == duck {
		return true
	}
	d, err := types.ParseType(duck)
	return err == nil && d.Kind != types.KindUnknown && d.Equal(ours)
}

// parquetTypeCases are columns of every Parquet physical type, each logical
// type on every physical type it applies to, in every unit, UTC-adjusted or
// not, with values near each type's limits.
func parquetTypeCases() map[string]rawColumn {
	ms, us, ns := schema.TimeUnitMillis, schema.TimeUnitMicros, schema.TimeUnitNanos
	i32t, i64t, bat, flt := parquet.Types.Int32, parquet.Types.Int64, parquet.Types.ByteArray, parquet.Types.FixedLenByteArray
	i32 := []int32{math.MinInt32, -1, 0, 7, math.MaxInt32}
	small32 := []int32{-128, -1, 0, 1, 127}
	u8 := []int32{0, 1, 200, 255}
	u16 := []int32{0, 1, 40000, 65535}
	u32 := []int32{0, 1, -1, math.MinInt32} // read as unsigned: 4294967295, 2147483648
	i64 := []int64{math.MinInt64 + 1, -1, 0, 7, math.MaxInt64}
	u64 := []int64{0, 1, -1, math.MinInt64}
	times32 := []int32{0, 1, 43_200_123, 86_399_999}
	timesUS := []int64{0, 1, 43_200_123_456, 86_399_999_999}
	timesNS := []int64{0, 1, 43_200_123_456_789, 86_399_999_999_999}
	tsMS := []int64{-1_500, 0, 1_700_000_000_123, 253_402_300_799_999}
	tsUS := []int64{-1_500_000, 0, 1_700_000_000_123_456, 253_402_300_799_999_999}
	tsNS := []int64{-1_500_000_001, 0, 1_700_000_000_123_456_789, 9_200_000_000_000_000_000}
	str := []parquet.ByteArray{[]byte(""), []byte("a"), []byte("\u00e9t\u00e9"), []byte("zz")}
	js := []parquet.ByteArray{[]byte(`{"a":1}`), []byte(`[1,2]`), []byte(`"s"`)}
	fixed := func(n int, vals ...string) []parquet.FixedLenByteArray {
		var out []parquet.FixedLenByteArray
		for _, v := range vals {
			b := make([]byte, n)
			copy(b[n-len(v):], v)
			out = append(out, b)
		}
		return out
	}
	int96 := func(nanos ...int64) []parquet.Int96 {
		out := make([]parquet.Int96, len(nanos))
		for i, x := range nanos {
			out[i].SetNanoSeconds(x)
		}
		return out
	}
	decBytes := func(n int, unscaled ...int64) []parquet.FixedLenByteArray {
		var out []parquet.FixedLenByteArray
		for _, u := range unscaled {
			z := big.NewInt(u)
			if z.Sign() < 0 {
				z.Add(z, new(big.Int).Lsh(big.NewInt(1), uint(8*n)))
			}
			b := make([]byte, n)
			z.FillBytes(b)
			out = append(out, b)
		}
		return out
	}
	decVar := func(unscaled ...int64) []parquet.ByteArray {
		var out []parquet.ByteArray
		for _, fb := range decBytes(9, unscaled...) {
			out = append(out, parquet.ByteArray(fb))
		}
		return out
	}
	cases := map[string]rawColumn{
		"BOOLEAN": {func(n string) (schema.Node, error) {
			return schema.NewPrimitiveNode(n, parquet.Repetitions.Required, parquet.Types.Boolean, -1, -1)
		}, []bool{false, true}},
		"INT32":                {logicalNode(nil, i32t, -1), i32},
		"INT64":                {logicalNode(nil, i64t, -1), i64},
		"INT96":                {logicalNode(nil, parquet.Types.Int96, -1), int96(0, 1_700_000_000_123_456_789, -1)},
		"FLOAT":                {logicalNode(nil, parquet.Types.Float, -1), []float32{-1.5, 0, 3.25}},
		"DOUBLE":               {logicalNode(nil, parquet.Types.Double, -1), []float64{-1.5, 0, 1e300}},
		"BYTE_ARRAY":           {logicalNode(nil, bat, -1), str},
		"FIXED_LEN_BYTE_ARRAY": {logicalNode(nil, flt, 3), fixed(3, "abc", "\x00\x01\x02", "\xff\xfe\xfd")},
		"INT(8,true)":          {logicalNode(schema.NewIntLogicalType(8, true), i32t, -1), small32},
		"INT(16,true)":         {logicalNode(schema.NewIntLogicalType(16, true), i32t, -1), []int32{-32768, 0, 32767}},
		"INT(32,true)":         {logicalNode(schema.NewIntLogicalType(32, true), i32t, -1), i32},
		"INT(64,true)":         {logicalNode(schema.NewIntLogicalType(64, true), i64t, -1), i64},
		"INT(8,false)":         {logicalNode(schema.NewIntLogicalType(8, false), i32t, -1), u8},
		"INT(16,false)":        {logicalNode(schema.NewIntLogicalType(16, false), i32t, -1), u16},
		"INT(32,false)":        {logicalNode(schema.NewIntLogicalType(32, false), i32t, -1), u32},
		"INT(64,false)":        {logicalNode(schema.NewIntLogicalType(64, false), i64t, -1), u64},
		"DATE":                 {logicalNode(schema.DateLogicalType{}, i32t, -1), []int32{-719_162, 0, 19_000, 2_932_896}},
		"STRING":               {logicalNode(schema.StringLogicalType{}, bat, -1), str},
		"ENUM":                 {logicalNode(schema.EnumLogicalType{}, bat, -1), str},
		"JSON":                 {logicalNode(schema.JSONLogicalType{}, bat, -1), js},
		"BSON":                 {logicalNode(schema.BSONLogicalType{}, bat, -1), js},
		"UUID": {logicalNode(schema.UUIDLogicalType{}, flt, 16),
			fixed(16, "\x00", "\x7f\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", "\x80\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00")},
		"FLOAT16":                    {logicalNode(schema.Float16LogicalType{}, flt, 2), fixed(2, "\x3c\x00", "\xbc\x00", "\x7b\xff")},
		"DECIMAL(9,2) i32":           {logicalNode(schema.NewDecimalLogicalType(9, 2), i32t, -1), []int32{-999_999_999, 0, 700, 999_999_999}},
		"DECIMAL(4,3) i32":           {logicalNode(schema.NewDecimalLogicalType(4, 3), i32t, -1), []int32{-9999, 7005, 9999}},
		"DECIMAL(18,3) i64":          {logicalNode(schema.NewDecimalLogicalType(18, 3), i64t, -1), []int64{-999_999_999_999_999_999, 7005, 999_999_999_999_999_999}},
		"DECIMAL(10,3) i64":          {logicalNode(schema.NewDecimalLogicalType(10, 3), i64t, -1), []int64{-9_999_999_999, 7005, 9_999_999_999}},
		"DECIMAL(5,1) flba3":         {logicalNode(schema.NewDecimalLogicalType(5, 1), flt, 3), decBytes(3, -99_999, 70, 99_999)},
		"DECIMAL(20,3) flba9":        {logicalNode(schema.NewDecimalLogicalType(20, 3), flt, 9), decBytes(9, math.MinInt64, 7005, math.MaxInt64)},
		"DECIMAL(38,10) flba16":      {logicalNode(schema.NewDecimalLogicalType(38, 10), flt, 16), decBytes(16, math.MinInt64, -1, 7005, math.MaxInt64)},
		"DECIMAL(12,2) ba":           {logicalNode(schema.NewDecimalLogicalType(12, 2), bat, -1), decVar(-999_999_999_999, 7005, 999_999_999_999)},
		"converted DECIMAL(9,2) i32": {convertedNode(schema.ConvertedTypes.Decimal, i32t, -1, 9, 2), []int32{-12345, 0, 12345}},
		"converted INTERVAL":         {convertedNode(schema.ConvertedTypes.Interval, flt, 12, 0, 0), fixed(12, "\x01\x00\x00\x00\x02\x00\x00\x00\x03\x00\x00\x00")},
		"converted UINT_8":           {convertedNode(schema.ConvertedTypes.Uint8, i32t, -1, 0, 0), u8},
		"converted UINT_16":          {convertedNode(schema.ConvertedTypes.Uint16, i32t, -1, 0, 0), u16},
		"converted UINT_32":          {convertedNode(schema.ConvertedTypes.Uint32, i32t, -1, 0, 0), u32},
		"converted UINT_64":          {convertedNode(schema.ConvertedTypes.Uint64, i64t, -1, 0, 0), u64},
		"converted INT_8":            {convertedNode(schema.ConvertedTypes.Int8, i32t, -1, 0, 0), small32},
		"converted INT_16":           {convertedNode(schema.ConvertedTypes.Int16, i32t, -1, 0, 0), small32},
		"converted INT_32":           {convertedNode(schema.ConvertedTypes.Int32, i32t, -1, 0, 0), i32},
		"converted INT_64":           {convertedNode(schema.ConvertedTypes.Int64, i64t, -1, 0, 0), i64},
		"converted DATE":             {convertedNode(schema.ConvertedTypes.Date, i32t, -1, 0, 0), []int32{-1, 0, 19_000}},
		"converted TIME_MILLIS":      {convertedNode(schema.ConvertedTypes.TimeMillis, i32t, -1, 0, 0), times32},
		"converted TIME_MICROS":      {convertedNode(schema.ConvertedTypes.TimeMicros, i64t, -1, 0, 0), timesUS},
		"converted TIMESTAMP_MILLIS": {convertedNode(schema.ConvertedTypes.TimestampMillis, i64t, -1, 0, 0), tsMS},
		"converted TIMESTAMP_MICROS": {convertedNode(schema.ConvertedTypes.TimestampMicros, i64t, -1, 0, 0), tsUS},
		"converted UTF8":             {convertedNode(schema.ConvertedTypes.UTF8, bat, -1, 0, 0), str},
		"converted ENUM":             {convertedNode(schema.ConvertedTypes.Enum, bat, -1, 0, 0), str},
		"converted JSON":             {convertedNode(schema.ConvertedTypes.JSON, bat, -1, 0, 0), js},
		"converted BSON":             {convertedNode(schema.ConvertedTypes.BSON, bat, -1, 0, 0), js},
	}
	for _, utc := range []bool{false, true} {
		for unit, name := range map[schema.TimeUnitType]string{ms: "MILLIS", us: "MICROS", ns: "NANOS"} {
			var tv, sv any = timesUS, tsUS
			pt := i64t
			switch unit {
			case ms:
				tv, sv, pt = times32, tsMS, i32t
			case ns:
				tv, sv = timesNS, tsNS
			}
			cases[fmt.Sprintf("TIME(%s, utc=%v)", name, utc)] = rawColumn{logicalNode(schema.NewTimeLogicalType(utc, unit), pt, -1), tv}
			cases[fmt.Sprintf("TIMESTAMP(%s, utc=%v)", name, utc)] = rawColumn{logicalNode(schema.NewTimestampLogicalType(utc, unit), i64t, -1), sv}
			if unit != ns {
				// The same logical type with the legacy converted type also set.
				cases[fmt.Sprintf("TIMESTAMP(%s, utc=%v) + converted", name, utc)] = rawColumn{logicalNode(schema.NewTimestampLogicalTypeForce(utc, unit), i64t, -1), sv}
			}
		}
	}
	return cases
}

// TestParquetTypesAsDuckDBReadsThem writes a column of every Parquet type
// combination with arrow-go (and, for converted types, again with the
// logical types stripped from the footer) and checks that ingest registers
// the type DuckDB's DESCRIBE reports: the engine's view casts every column
// to the registered type, so any difference changes values and comparisons
// even when nothing is pruned. A type DuckDB cannot read must not get a
// DuckDB type. The stats of each file are then checked against the values
// DuckDB reads. The parquet-testing files get the same type check.
func TestParquetTypesAsDuckDBReadsThem(t *testing.T) {
	db, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	dir := t.TempDir()
	var rep soundnessReport
	i := 0
	check := func(name, path string) {
		t.Helper()
		duck, derr := duckDBType(db, path, "x")
		ours := registeredTypes(t, path)["x"]
		switch {
		case derr != nil && types.DuckDBName(ours) != "":
			t.Errorf("%s: registered as %s, but DuckDB cannot read it: %v", name, ours, derr)
		case derr == nil && !sameAsDuckDB(ours, duck):
			t.Errorf("%s: registered as %s (%q to DuckDB), DuckDB reads %s", name, ours, types.DuckDBName(ours), duck)
		case derr == nil:
			if err := checkFileAgainstDuckDB(t, db, path, &rep); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	}
	for name, c := range parquetTypeCases() {
		i++
		path := filepath.Join(dir, fmt.Sprintf("c%d.parquet", i))
		writeRaw(t, path, c, true)
		check(name, path)
		if strings.HasPrefix(name, "converted ") || strings.HasSuffix(name, "+ converted") {
			stripLogicalTypes(t, path)
			check(name+" (no logical type)", path)
		}
	}
	t.Logf("%d units, %d values checked against DuckDB", rep.units, rep.values)

	root := filepath.Join("..", "..", "shared", "testdata", "parquet-testing")
	if _, err := os.Stat(root); err != nil {
		t.Logf("parquet-testing fixtures not found at %s: %v", root, err)
		return
	}
	files := 0
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".parquet") {
			return err
		}
		rows, err := db.Query("DESCRIBE SELECT * FROM read_parquet(?)", p)
		if err != nil {
			return nil // DuckDB cannot read it; TestFixtureStatsAgainstDuckDB lists those
		}
		duck := map[string]string{}
		for rows.Next() {
			var name, typ string
			var a, b, c, d any
			if err := rows.Scan(&name, &typ, &a, &b, &c, &d); err != nil {
				rows.Close()
				return err
			}
			duck[strings.ToLower(name)] = typ
		}
		rows.Close()
		files++
		for name, ours := range registeredTypes(t, p) {
			if !sameAsDuckDB(ours, duck[name]) {
				t.Errorf("%s column %s: registered as %s, DuckDB reads %s", filepath.Base(p), name, ours, duck[name])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d parquet-testing files compared", files)
}

// TestBloomProbesFollowDuckDBCasts: a bloom filter holds the values a file
// stores, but a query compares the values DuckDB reads and casts to the
// table's type, and that read or cast can map many stored values onto one
// (decimal scale, nanoseconds cut to µs, even with no schema change for a
// UTC-adjusted TIMESTAMP(NANOS)). For each case, every value DuckDB returns
// must not be declared absent by the bloom probe, and the plan must keep
// the row group; where the way from stored to table value is one-to-one,
// a value DuckDB does not return must be ruled out by the filter at least
// once, so the probe is known to run.
func TestBloomProbesFollowDuckDBCasts(t *testing.T) {
	db, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ms, us, ns := schema.TimeUnitMillis, schema.TimeUnitMicros, schema.TimeUnitNanos
	i32t, i64t := parquet.Types.Int32, parquet.Types.Int64
	tsNanos := []int64{1_000_000_001, 1_000_000_999, 2_000_000_500, -1_500, -1_000_000_999}
	cases := []struct {
		name      string
		col       rawColumn
		table     string   // the table's type; "" creates it from the file
		absent    []string // texts in the table's type no stored value reads as
		injective bool
	}{
		{"decimal(10,3) into decimal(10,2)", rawColumn{logicalNode(schema.NewDecimalLogicalType(10, 3), i64t, -1), []int64{7005, 7014, 7015, 1001, -7005}},
			"decimal(10,2)", []string{"5.55", "7.03"}, false},
		{"TIMESTAMP(NANOS) into timestamp", rawColumn{logicalNode(schema.NewTimestampLogicalType(false, ns), i64t, -1), tsNanos},
			"timestamp", []string{"1970-01-01 00:00:03"}, false},
		{"TIMESTAMP(NANOS, UTC) as timestamptz", rawColumn{logicalNode(schema.NewTimestampLogicalType(true, ns), i64t, -1), tsNanos},
			"", []string{"1970-01-01 00:00:03+00"}, false},
		{"TIMESTAMP(MICROS) into timestamp_ms", rawColumn{logicalNode(schema.NewTimestampLogicalType(false, us), i64t, -1), []int64{1_000_001, 1_000_499, 1_000_500, -1_000_500}},
			"timestamp_ms", []string{"1970-01-01 00:00:03"}, false},
		{"TIME(NANOS, UTC) as timetz", rawColumn{logicalNode(schema.NewTimeLogicalType(true, ns), i64t, -1), []int64{43_200_000_000_001, 43_200_000_000_999, 3_000_000_000_400}},
			"", []string{"13:00:00+00"}, false},
		{"TIME(NANOS) into time", rawColumn{logicalNode(schema.NewTimeLogicalType(false, ns), i64t, -1), []int64{43_200_000_000_001, 43_200_000_000_999, 3_000_000_000_400}},
			"time", []string{"13:00:00"}, false},

		{"TIMESTAMP(NANOS) as timestamp_ns", rawColumn{logicalNode(schema.NewTimestampLogicalType(false, ns), i64t, -1), tsNanos},
			"", []string{"1970-01-01 00:00:01.000000002", "1970-01-01 00:00:01"}, true},
		{"TIMESTAMP(MILLIS, UTC) as timestamptz", rawColumn{logicalNode(schema.NewTimestampLogicalType(true, ms), i64t, -1), []int64{1001, -1500, 2000}},
			"", []string{"1970-01-01 00:00:01.002+00", "1970-01-01 00:00:01.0015+00"}, true},
		{"TIMESTAMP(MILLIS) as timestamp", rawColumn{logicalNode(schema.NewTimestampLogicalType(false, ms), i64t, -1), []int64{1001, -1500, 2000}},
			"", []string{"1970-01-01 00:00:01.002", "1970-01-01 00:00:01.0015"}, true},
		{"TIMESTAMP(MILLIS) into timestamp_ms", rawColumn{logicalNode(schema.NewTimestampLogicalType(false, ms), i64t, -1), []int64{1001, -1500, 2000}},
			"timestamp_ms", []string{"1970-01-01 00:00:01.002"}, true},
		{"TIMESTAMP(MICROS) into timestamp_ns", rawColumn{logicalNode(schema.NewTimestampLogicalType(false, us), i64t, -1), []int64{1_000_001, -1_500, 2_000_000}},
			"timestamp_ns", []string{"1970-01-01 00:00:01.000002", "1970-01-01 00:00:01.0000010001"}, true},
		{"TIME(NANOS) as time_ns", rawColumn{logicalNode(schema.NewTimeLogicalType(false, ns), i64t, -1), []int64{43_200_000_000_001, 43_200_000_000_999}},
			"", []string{"12:00:00.000000002"}, true},
		{"TIME(MILLIS) as time", rawColumn{logicalNode(schema.NewTimeLogicalType(false, ms), i32t, -1), []int32{43_200_001, 7}},
			"", []string{"12:00:00.002", "12:00:00.0015"}, true},
		{"decimal(10,2) into decimal(12,3)", rawColumn{logicalNode(schema.NewDecimalLogicalType(10, 2), i64t, -1), []int64{701, -5, 123456}},
			"decimal(12,3)", []string{"7.02", "7.011", "-0.051"}, true},
		{"INT32 into int64", rawColumn{logicalNode(nil, i32t, -1), []int32{-7, 0, math.MaxInt32}},
			"int64", []string{"8", "4294967296"}, true},
		{"UINT32 into int64", rawColumn{logicalNode(schema.NewIntLogicalType(32, false), i32t, -1), []int32{-1, 5}},
			"int64", []string{"-1", "6", "4294967294"}, true},
	}
	dir := t.TempDir()
	for i, tc := range cases {
		path := filepath.Join(dir, fmt.Sprintf("b%d.parquet", i))
		writeRaw(t, path, tc.col, true)
		c, err := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if tc.table != "" {
			tx, _ := c.Begin()
			tx.CreateTable("t", []catalog.ColumnDef{{Name: "x", Type: tc.table}})
			if _, err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := ingest.Add(c, "t", []string{path}, ingest.Options{Create: tc.table == ""}); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		rd, err := c.Read(catalog.Latest)
		if err != nil {
			t.Fatal(err)
		}
		tb, _ := rd.Table("t")
		col, err := rd.Column(tb.ID, "x")
		if err != nil {
			t.Fatal(err)
		}
		codec, ok := types.CodecFor(col.Type)
		if !ok {
			t.Fatalf("%s: no codec for %s", tc.name, col.Type)
		}
		dt := types.DuckDBName(col.Type)
		var texts []string
		rows, err := db.Query(fmt.Sprintf("SELECT DISTINCT CAST(CAST(x AS %s) AS VARCHAR) FROM read_parquet(?)", dt), path)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			texts = append(texts, s)
		}
		rows.Close()
		fx, err := pqmeta.OpenIndex(path)
		if err != nil {
			t.Fatal(err)
		}
		ruledOut := 0
		for _, text := range append(texts, tc.absent...) {
			v, err := codec.Parse(text)
			if err != nil {
				t.Fatalf("%s: %q: %v", tc.name, text, err)
			}
			var n int64
			q := fmt.Sprintf("SELECT count(*) FROM read_parquet(?) WHERE CAST(x AS %[1]s) = CAST(? AS %[1]s)", dt)
			if err := db.QueryRow(q, path, text).Scan(&n); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			absent, err := fx.BloomAbsent(0, col.Path, col.Type, v)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if absent && n > 0 {
				t.Errorf("%s: UNSOUND bloom probe rules out %q, DuckDB returns %d rows", tc.name, text, n)
			}
			if absent && n == 0 {
				ruledOut++
			}
			pred := "x = '" + strings.ReplaceAll(text, "'", "''") + "'"
			p, err := prune.PlanTable(rd, "t", pred, prune.Options{IndexMinRows: -1})
			if err != nil {
				t.Fatalf("%s: %s: %v", tc.name, pred, err)
			}
			if n > 0 && p.RowGroups.Kept == 0 {
				t.Errorf("%s: UNSOUND plan skips the file for %s, DuckDB returns %d rows", tc.name, pred, n)
			}
		}
		if tc.injective && ruledOut == 0 {
			t.Errorf("%s: the bloom filter ruled out none of %q", tc.name, tc.absent)
		}
		fx.Close()
		rd.Close()
	}
}

// TestAddRefusesCastsThatFail: a file column whose values DuckDB cannot
// cast to the table's type makes every query that reads the file fail,
// while queries that prune it or answer from metadata succeed. add must
// refuse such a file, naming it and the column. Each case asks DuckDB
// whether the cast of the file's values fails: if it does, add must
// refuse; if add accepts, the cast must succeed. Where exact statistics
// prove that the values fit, add must accept.
func TestAddRefusesCastsThatFail(t *testing.T) {
	db, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	us, ns, ms := schema.TimeUnitMicros, schema.TimeUnitNanos, schema.TimeUnitMillis
	i32t, i64t := parquet.Types.Int32, parquet.Types.Int64
	dec43 := logicalNode(schema.NewDecimalLogicalType(4, 3), i32t, -1)
	tsUS := logicalNode(schema.NewTimestampLogicalType(false, us), i64t, -1)
	cases := []struct {
		name       string
		col        rawColumn
		stats      bool
		table      string
		mustAccept bool
	}{
		{"9.999 rounds to 10.00", rawColumn{dec43, []int32{1234, 9999}}, true, "decimal(3,2)", false},
		{"-9.995 rounds to -10.00", rawColumn{dec43, []int32{-9995, 0}}, true, "decimal(3,2)", false},
		{"9.994 rounds to 9.99", rawColumn{dec43, []int32{-9994, 9994}}, true, "decimal(3,2)", true},
		{"no statistics to prove the fit", rawColumn{dec43, []int32{1234}}, false, "decimal(3,2)", false},
		{"one more integer digit", rawColumn{dec43, []int32{9999}}, false, "decimal(4,2)", true},
		{"a larger scale never rounds", rawColumn{dec43, []int32{9999}}, false, "decimal(5,4)", true},
		{"ns have no cast to ms", rawColumn{logicalNode(schema.NewTimestampLogicalType(false, ns), i64t, -1), []int64{1}}, true, "timestamp_ms", false},
		{"ns have no cast to s", rawColumn{logicalNode(schema.NewTimestampLogicalType(false, ns), i64t, -1), []int64{1}}, true, "timestamp_s", false},
		{"ns cut to µs", rawColumn{logicalNode(schema.NewTimestampLogicalType(false, ns), i64t, -1), []int64{math.MaxInt64 - 1, math.MinInt64 + 2}}, true, "timestamp", true},
		{"year 3000 has no ns", rawColumn{tsUS, []int64{0, 32_503_680_000_000_000}}, true, "timestamp_ns", false},
		{"year 1600 has no ns", rawColumn{tsUS, []int64{-11_676_096_000_000_000, 0}}, true, "timestamp_ns", false},
		{"2262 has ns", rawColumn{tsUS, []int64{-9_223_372_036_854_775, 9_223_372_036_854_775}}, true, "timestamp_ns", true},
		{"unproven range has no ns", rawColumn{tsUS, []int64{0}}, false, "timestamp_ns", false},
		{"µs at the top round beyond ms", rawColumn{tsUS, []int64{0, math.MaxInt64 - 1}}, true, "timestamp_ms", false},
		{"µs at the top round beyond s", rawColumn{tsUS, []int64{0, math.MaxInt64 - 500_000}}, true, "timestamp_s", false},
		{"µs round to ms", rawColumn{tsUS, []int64{-1_500, 1_700_000_000_123_456}}, true, "timestamp_ms", true},
		{"whole ms need no bounds", rawColumn{logicalNode(schema.NewTimestampLogicalType(false, ms), i64t, -1), []int64{1_700_000_000_123}}, false, "timestamp_ms", true},
	}
	dir := t.TempDir()
	for i, tc := range cases {
		path := filepath.Join(dir, fmt.Sprintf("o%d.parquet", i))
		writeRaw(t, path, tc.col, tc.stats)
		c, err := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
		if err != nil {
			t.Fatal(err)
		}
		tx, _ := c.Begin()
		tx.CreateTable("t", []catalog.ColumnDef{{Name: "x", Type: tc.table}})
		if _, err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		var n int64
		castErr := db.QueryRow(fmt.Sprintf("SELECT count(CAST(x AS %s)) FROM read_parquet(?)", types.DuckDBName(types.MustParseType(tc.table))), path).Scan(&n)
		_, addErr := ingest.Add(c, "t", []string{path}, ingest.Options{})
		switch {
		case castErr != nil && addErr == nil:
			t.Errorf("%s: add accepted a file DuckDB cannot read as %s: %v", tc.name, tc.table, castErr)
		case addErr != nil && !errors.Is(addErr, ingest.ErrSchemaMismatch):
			t.Errorf("%s: %v", tc.name, addErr)
		case addErr != nil && (!strings.Contains(addErr.Error(), filepath.Base(path)) || !strings.Contains(addErr.Error(), `"x"`)):
			t.Errorf("%s: the refusal does not name the file and the column: %v", tc.name, addErr)
		case addErr != nil && tc.mustAccept:
			t.Errorf("%s: refused, though DuckDB reads it (cast error %v): %v", tc.name, castErr, addErr)
		}
	}
}
