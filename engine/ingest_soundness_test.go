package engine

import (
	"bytes"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/internal/sqllex"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

// soundnessReport counts what checkFileAgainstDuckDB looked at.
type soundnessReport struct {
	units, values, boundsKnown int
}

// checkFileAgainstDuckDB registers one file in a fresh catalog, then reads
// every top-level column with a codec back through DuckDB, value by value,
// and asserts that each row group's and the file's stored stats admit every
// value DuckDB returns: no bound excludes a present value, null and NaN
// counts and flags are true, exact bounds are attained. It returns an error
// only when DuckDB itself cannot read the file.
func checkFileAgainstDuckDB(t *testing.T, db *sql.DB, path string, rep *soundnessReport) error {
	t.Helper()
	c, err := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ingest.Add(c, "t", []string{path}, ingest.Options{Create: true}); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	r, _ := c.Read(catalog.Latest)
	defer r.Close()
	tb, _ := r.Table("t")
	cols, _ := r.Columns(tb.ID)
	files, _ := r.Files(tb.ID)
	f := files[0]
	for _, col := range cols {
		if col.Parent.Known {
			continue
		}
		codec, ok := types.CodecFor(col.Type)
		if !ok || !codec.Ordered() {
			continue
		}
		var fileSt *stats.Column
		_ = r.FileColumnStats(tb.ID, col.ID, func(_ int64, st *stats.Column) error { fileSt = st; return nil })
		rgs, _ := r.RowGroupStats(tb.ID, col.ID, f.ID)
		if fileSt == nil {
			t.Fatalf("%s %s: no stats row", path, col.Name)
		}
		q := fmt.Sprintf(`SELECT file_row_number, CAST(%s AS VARCHAR) FROM read_parquet(?, file_row_number = true) ORDER BY 1`,
			sqllex.QuoteName(col.Name))
		rows, err := db.Query(q, path)
		if err != nil {
			return err
		}
		type unit struct {
			st          stats.Column
			first, end  int64
			lo, hi      []byte
			seen        bool // lo and hi are set (an empty string encodes as nil)
			nulls, nans int64
			vals        int64
		}
		units := []*unit{{st: *fileSt, first: 0, end: f.RecordCount}}
		for _, rg := range rgs {
			units = append(units, &unit{st: rg.Stats, first: rg.FirstRow, end: rg.FirstRow + rg.Stats.RowCount})
		}
		for rows.Next() {
			var rn int64
			var text *string
			if err := rows.Scan(&rn, &text); err != nil {
				rows.Close()
				return err
			}
			var enc []byte
			nan := false
			if text != nil {
				v, err := codec.Parse(*text)
				if err != nil {
					t.Fatalf("%s %s: cannot parse DuckDB's %q: %v", path, col.Name, *text, err)
				}
				enc, err = codec.Encode(v)
				if err != nil {
					nan = true // NaN has no encoding
				}
				rep.values++
			}
			for _, u := range units {
				if rn < u.first || rn >= u.end {
					continue
				}
				switch {
				case text == nil:
					u.nulls++
				case nan:
					u.nans++
					u.vals++
				default:
					u.vals++
					if u.st.Min.Known && bytes.Compare(enc, u.st.Min.V) < 0 {
						t.Fatalf("%s %s rows [%d,%d): UNSOUND min excludes %q", path, col.Name, u.first, u.end, *text)
					}
					if u.st.Max.Known && bytes.Compare(enc, u.st.Max.V) > 0 {
						t.Fatalf("%s %s rows [%d,%d): UNSOUND max excludes %q", path, col.Name, u.first, u.end, *text)
					}
					if !u.seen || bytes.Compare(enc, u.lo) < 0 {
						u.lo = enc
					}
					if !u.seen || bytes.Compare(enc, u.hi) > 0 {
						u.hi = enc
					}
					u.seen = true
				}
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, u := range units {
			rep.units++
			what := fmt.Sprintf("%s %s rows [%d,%d)", filepath.Base(path), col.Name, u.first, u.end)
			st := u.st
			if st.Min.Known && st.Max.Known {
				rep.boundsKnown++
			}
			if st.NullCount.Known && st.NullCount.V != u.nulls {
				t.Errorf("%s: null_count %d, DuckDB reads %d NULLs", what, st.NullCount.V, u.nulls)
			}
			if st.ContainsNull.Known && st.ContainsNull.V != (u.nulls > 0) {
				t.Errorf("%s: contains_null %v, DuckDB reads %d NULLs", what, st.ContainsNull.V, u.nulls)
			}
			if st.ContainsNaN.Known && !st.ContainsNaN.V && u.nans > 0 {
				t.Errorf("%s: UNSOUND contains_nan false, DuckDB reads %d NaNs", what, u.nans)
			}
			if st.ValueCount.Known && st.ValueCount.V != u.vals {
				t.Errorf("%s: value_count %d, DuckDB reads %d", what, st.ValueCount.V, u.vals)
			}
			if st.MinIsExact && st.Min.Known && u.seen && !bytes.Equal(st.Min.V, u.lo) {
				t.Errorf("%s: exact min %q is not the least value %q", what, st.Min.V, u.lo)
			}
			if st.MaxIsExact && st.Max.Known && u.seen && !bytes.Equal(st.Max.V, u.hi) {
				t.Errorf("%s: exact max is not the greatest value", what)
			}
		}
	}
	return nil
}

// TestFixtureStatsAgainstDuckDB checks every parquet-testing file that
// DuckDB can read.
func TestFixtureStatsAgainstDuckDB(t *testing.T) {
	root := filepath.Join("..", "..", "shared", "testdata", "parquet-testing")
	if _, err := os.Stat(root); err != nil {
		t.Skipf("parquet-testing fixtures not found at %s (they live beside the repository in CI): %v", root, err)
	}
	db, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var rep soundnessReport
	var unreadable []string
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".parquet") || strings.HasSuffix(p, "PARQUET-1481.parquet") {
			return err
		}
		if err := checkFileAgainstDuckDB(t, db, p, &rep); err != nil {
			unreadable = append(unreadable, filepath.Base(p))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d units, %d values checked (%d units with both bounds); DuckDB cannot read: %v", rep.units, rep.values, rep.boundsKnown, unreadable)
	if rep.values < 10000 {
		t.Fatalf("only %d values checked", rep.values)
	}
}

// duckColumns are SQL expressions over i (a row number) for one column of
// each type, full of the traps; tests COPY them to Parquet with DuckDB.
var duckColumns = map[string]string{
	"i8":   "((hash(i) % 256)::BIGINT - 128)::TINYINT",
	"i16":  "((hash(i) % 65536)::BIGINT - 32768)::SMALLINT",
	"i32":  "((hash(i) % 4294967296)::BIGINT - 2147483648)::INTEGER",
	"i64":  "(hash(i)::HUGEINT - 9223372036854775807)::BIGINT",
	"u8":   "(hash(i) % 256)::UTINYINT",
	"u32":  "(hash(i) % 4294967296)::UINTEGER",
	"u64":  "hash(i)::UBIGINT",
	"f32":  "CASE hash(i) % 9 WHEN 0 THEN 'nan'::FLOAT WHEN 1 THEN '-0.0'::FLOAT WHEN 2 THEN 'inf'::FLOAT WHEN 3 THEN '-inf'::FLOAT ELSE ((hash(i) % 1000)::INTEGER - 500)::FLOAT / 7 END",
	"f64":  "CASE hash(i*7) % 11 WHEN 0 THEN 'nan'::DOUBLE WHEN 1 THEN '-0.0'::DOUBLE WHEN 2 THEN 0.0 ELSE (hash(i) % 100000)::DOUBLE / 3 - 10000 END",
	"d1":   "((hash(i) % 20000)::INTEGER - 10000)::DECIMAL(9,2) / 100",
	"d2":   "((hash(i) % 2000000)::BIGINT - 1000000)::DECIMAL(18,3) / 1000",
	"d3":   "((hash(i) % 1000000000000000)::HUGEINT * 12345678901 - 9999999999999999999999999)::DECIMAL(38,10) / 1000",
	"dt":   "DATE '1960-01-01' + (hash(i) % 40000)::INTEGER",
	"tm":   "TIME '00:00:00' + INTERVAL (hash(i) % 86400000000) MICROSECOND",
	"ts":   "TIMESTAMP '1960-01-01' + INTERVAL (hash(i) % 3000000000000000) MICROSECOND",
	"tms":  "(TIMESTAMP '1900-01-01' + INTERVAL (hash(i) % 4000000000000) MILLISECOND)::TIMESTAMP_MS",
	"tns":  "(TIMESTAMP '1969-01-01' + INTERVAL (hash(i) % 3000000000000000) MICROSECOND)::TIMESTAMP_NS",
	"tz":   "(TIMESTAMP '1960-01-01' + INTERVAL (hash(i) % 3000000000000000) MICROSECOND)::TIMESTAMPTZ",
	"s":    "CASE hash(i) % 7 WHEN 0 THEN repeat(chr(65 + (hash(i) % 26)::INTEGER), 300) WHEN 1 THEN chr(233) || i::VARCHAR WHEN 2 THEN chr(1114111) WHEN 3 THEN '' ELSE 'k' || (hash(i) % 1000)::VARCHAR END",
	"b":    "CASE hash(i) % 3 WHEN 0 THEN '\\xFF\\x00'::BLOB WHEN 1 THEN ('x' || i::VARCHAR)::BLOB ELSE '\\x80'::BLOB END",
	"u":    "md5(i::VARCHAR)::UUID",
	"bo":   "hash(i) % 2 = 0",
	"lowc": "'v' || (hash(i) % 10)::VARCHAR",
}

// TestDuckDBWrittenStatsAgainstData writes random tables of every type
// with DuckDB's COPY, full of the traps (NaN, ±0.0, ±inf, NULL runs, long
// strings DuckDB truncates, bytes ≥ 0x80, extremes), and checks the stats
// against the data.
func TestDuckDBWrittenStatsAgainstData(t *testing.T) {
	db, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	dir := t.TempDir()
	exprs := duckColumns
	var names []string
	for n := range exprs {
		names = append(names, n)
	}
	r := rand.New(rand.NewPCG(3, 5))
	var rep soundnessReport
	shapes := []struct{ n, nullEvery int }{{9000, 0}, {9000, 2}, {3000, 7}, {1, 0}, {5000, 1}, {9000, 3}, {100, 0}}
	for round, shape := range shapes {
		n, nullEvery := shape.n, shape.nullEvery
		var sel []string
		for _, name := range names {
			e := exprs[name]
			switch {
			case nullEvery == 1:
				e = fmt.Sprintf("CASE WHEN true THEN NULL ELSE %s END", e)
			case nullEvery > 1:
				e = fmt.Sprintf("CASE WHEN hash(i + %d) %% %d = 0 THEN NULL ELSE %s END", round, nullEvery, e)
			}
			sel = append(sel, e+" AS "+name)
		}
		order := []string{"", " ORDER BY i64", " ORDER BY s"}[r.IntN(3)]
		path := filepath.Join(dir, fmt.Sprintf("d%d.parquet", round))
		q := fmt.Sprintf("COPY (SELECT %s FROM range(%d) r(i)%s) TO '%s' (FORMAT parquet, ROW_GROUP_SIZE %d)",
			strings.Join(sel, ", "), n, order, path, 2048*(1+r.IntN(2)))
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		before := rep.values
		if err := checkFileAgainstDuckDB(t, db, path, &rep); err != nil {
			t.Fatalf("round %d: DuckDB cannot read its own file: %v", round, err)
		}
		t.Logf("round %d: %d rows, NULL every %d: %d values", round, n, nullEvery, rep.values-before)
	}
	t.Logf("%d units, %d values checked (%d units with both bounds)", rep.units, rep.values, rep.boundsKnown)
}
