package maintain

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/internal/curve"
	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/internal/sqllex"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/types"
	"github.com/rocklake/rocklake/types/typestest"
)

// Column names a rewrite must not confuse with its own: DuckDB's row id
// and virtual columns, names earlier rewrites used, the names the rewrite
// uses now, SQL keywords, quotes and spaces.
var hostileNames = []string{
	"rowid", "__rn", "rn", "file_row_number", "filename", "file_index", "__rocklake_curve", "__rocklake_k0",
	"__rocklake_k1", "curve", "k0", "k1", "c0", "c1", "c2", "src", "select", "order", "from", "count", "hash",
	`a "quoted" name`, "it's", "has space", "Group By", "NULL",
}

var flatTypes = []string{"int64", "int32", "varchar", "float64", "date", "boolean", "decimal(18,3)", "timestamp", "blob"}

// contentOf is every row of t at a snapshot, sorted: equal at two
// snapshots only when they hold the same rows.
func contentOf(t *testing.T, e *engine.Engine, snap int64, names []string) string {
	t.Helper()
	sel := make([]string, len(names))
	for i, n := range names {
		sel[i] = sqllex.QuoteName(n) + "::VARCHAR"
	}
	return answerOf(t, e, snap, "SELECT "+strings.Join(sel, ", ")+" FROM t ORDER BY ALL")
}

// hashOf is the row count and the per-column hash sums of t at a snapshot.
func hashOf(t *testing.T, e *engine.Engine, snap int64, names []string) string {
	t.Helper()
	sel := []string{"count(*)"}
	for _, n := range names {
		sel = append(sel, fmt.Sprintf("sum(hash(%s))::VARCHAR", sqllex.QuoteName(n)))
	}
	return answerOf(t, e, snap, "SELECT "+strings.Join(sel, ", ")+" FROM t")
}

// Tables whose columns carry hostile names, in random order and of random
// types, go through compact, a sort and both curves (sorting by the
// hostile columns too); every rewrite keeps every row and value.
func TestRewritesIgnoreColumnNames(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 77))
			names := append([]string{"rowid", "__rn"}, hostileNames[2:]...)
			r.Shuffle(len(names)-2, func(i, j int) { names[i+2], names[j+2] = names[j+2], names[i+2] })
			names = names[:2+2+r.IntN(6)]
			r.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
			typs := make([]types.Type, len(names))
			for i := range typs {
				typs[i] = types.MustParseType(flatTypes[r.IntN(len(flatTypes))])
			}
			dir := t.TempDir()
			var paths []string
			for f := range 4 {
				cols := make([]pqwrite.Column, len(names))
				for i, n := range names {
					vals := make([]*types.Value, 40)
					for j := range vals {
						if r.IntN(8) > 0 {
							v := typestest.Random(r, typs[i])
							vals[j] = &v
						}
					}
					cols[i] = pqwrite.Column{Name: n, Type: typs[i], Values: vals}
				}
				p := filepath.Join(dir, fmt.Sprintf("f%d.parquet", f))
				if err := pqwrite.Write(p, cols, pqwrite.Options{RowGroupRows: 16}); err != nil {
					t.Fatal(err)
				}
				paths = append(paths, p)
			}
			_, before, e := lakeOf(t, paths)
			ctx := context.Background()
			want, wantHash := contentOf(t, e, before.Snapshot.ID, names), hashOf(t, e, before.Snapshot.ID, names)
			check := func(what string, res *RewriteResult, err error) {
				t.Helper()
				if err != nil {
					t.Fatalf("%s over columns %q: %v", what, names, err)
				}
				if res == nil || res.Rows != 160 {
					t.Fatalf("%s over columns %q: %+v", what, names, res)
				}
				if got := contentOf(t, e, res.Snapshot.ID, names); got != want {
					t.Fatalf("%s over columns %q changed the rows:\n got %s\nwant %s", what, names, got, want)
				}
				if got := hashOf(t, e, res.Snapshot.ID, names); got != wantHash {
					t.Fatalf("%s over columns %q: content hash %s, was %s", what, names, got, wantHash)
				}
			}
			res, err := MergeSmallFiles(ctx, e, "t", MergeOptions{RowsPerFile: 100, Dir: filepath.Join(dir, "compact")})
			check("compact", res, err)
			// Sort by rowid or __rn (the names that lost every row), and one
			// more column.
			sortBy := []string{names[r.IntN(len(names))]}
			for _, n := range names {
				if n == "rowid" || n == "__rn" {
					sortBy = append([]string{n}, sortBy...)
					break
				}
			}
			res, err = Optimize(ctx, e, "t", OptimizeOptions{SortBy: sortBy, RowsPerFile: 50, Dir: filepath.Join(dir, "sorted")})
			check(fmt.Sprintf("optimize --sort-by %q", sortBy), res, err)
			res, err = MergeSmallFiles(ctx, e, "t", MergeOptions{RowsPerFile: 1000, Dir: filepath.Join(dir, "compact2")})
			check("compact after a sort", res, err)
			for _, k := range []curve.Kind{ZOrder, Hilbert} {
				two := []string{names[0], names[1]}
				res, err = Optimize(ctx, e, "t", OptimizeOptions{SortBy: two, Curve: k, RowsPerFile: 70, Dir: filepath.Join(dir, string(k))})
				check(fmt.Sprintf("optimize --curve %s --sort-by %q", k, two), res, err)
			}
		})
	}
}

// Nested columns go through DuckDB's own writer rather than arrow-go: the
// same names must not fool that path either.
func TestRewriteNamesThroughCopyWriter(t *testing.T) {
	db, err := engine.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	dir := t.TempDir()
	var paths []string
	for f := range 3 {
		p := filepath.Join(dir, fmt.Sprintf("n%d.parquet", f))
		q := fmt.Sprintf(`COPY (SELECT (i * 7 + %[1]d) %% 23 AS rowid, 'v' || i AS __rn, [i, i + %[1]d] AS file_row_number,
			{'a': i, 'b': 'x' || i} AS "__rocklake_curve", i %% 3 AS "select", 'f%[1]d' AS filename
			FROM range(30) r(i)) TO '%[2]s' (FORMAT parquet)`, f, p)
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	names := []string{"rowid", "__rn", "file_row_number", "__rocklake_curve", "select", "filename"}
	_, before, e := lakeOf(t, paths)
	want, wantHash := contentOf(t, e, before.Snapshot.ID, names), hashOf(t, e, before.Snapshot.ID, names)
	ctx := context.Background()
	for _, step := range []func() (*RewriteResult, error){
		func() (*RewriteResult, error) { return MergeSmallFiles(ctx, e, "t", MergeOptions{RowsPerFile: 50}) },
		func() (*RewriteResult, error) {
			return Optimize(ctx, e, "t", OptimizeOptions{SortBy: []string{"rowid"}, RowsPerFile: 20})
		},
		func() (*RewriteResult, error) {
			return Optimize(ctx, e, "t", OptimizeOptions{SortBy: []string{"select", "rowid"}, Curve: Hilbert, RowsPerFile: 40})
		},
	} {
		res, err := step()
		if err != nil {
			t.Fatal(err)
		}
		if res.Rows != 90 {
			t.Fatalf("rewrote %d rows, want 90", res.Rows)
		}
		if got := contentOf(t, e, res.Snapshot.ID, names); got != want {
			t.Fatalf("rows changed:\n got %s\nwant %s", got, want)
		}
		if got := hashOf(t, e, res.Snapshot.ID, names); got != wantHash {
			t.Fatalf("content hash %s, was %s", got, wantHash)
		}
	}
}

// Files that do not hold the rows read are never committed: a row lost or
// a value altered after the write aborts the rewrite, leaves the catalog as
// it was and removes the written files.
func TestRewriteVerifiesBeforeCommit(t *testing.T) {
	db, err := engine.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	dir := t.TempDir()
	var paths []string
	for f := range 3 {
		p := filepath.Join(dir, fmt.Sprintf("v%d.parquet", f))
		q := fmt.Sprintf(`COPY (SELECT i + %[1]d * 100 AS x, 'name ' || i AS "has space" FROM range(40) r(i)) TO '%[2]s' (FORMAT parquet)`, f, p)
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	c, _, e := lakeOf(t, paths)
	ctx := context.Background()
	damage := map[string]string{
		"a row lost":       `SELECT * FROM read_parquet('%s') LIMIT 39`,
		"a value altered":  `SELECT * REPLACE (upper("has space") AS "has space") FROM read_parquet('%s')`,
		"two rows swapped": `SELECT x, CASE "has space" WHEN 'name 1' THEN 'name 2' WHEN 'name 2' THEN 'name 1' ELSE "has space" END AS "has space" FROM read_parquet('%s')`,
	}
	wantIn := map[string]string{"a row lost": "read 120 rows, the files hold", "a value altered": `column "has space"`,
		"two rows swapped": "pair them differently"}
	defer func() { afterWrite = nil }()
	for what, q := range damage {
		afterWrite = func(written []string) {
			p := written[0]
			tmp := p + ".tmp"
			if _, err := db.Exec(fmt.Sprintf("COPY (%s) TO '%s' (FORMAT parquet)", fmt.Sprintf(q, p), tmp)); err != nil {
				t.Error(err)
				return
			}
			if err := os.Rename(tmp, p); err != nil {
				t.Error(err)
			}
		}
		snaps, _ := c.Snapshots()
		out := filepath.Join(dir, "out")
		for _, run := range []func() (*RewriteResult, error){
			func() (*RewriteResult, error) {
				return Optimize(ctx, e, "t", OptimizeOptions{SortBy: []string{"has space"}, RowsPerFile: 50, Dir: out})
			},
			func() (*RewriteResult, error) {
				return MergeSmallFiles(ctx, e, "t", MergeOptions{RowsPerFile: 1000, Dir: out})
			},
		} {
			_, err := run()
			if !errors.Is(err, ErrRewriteMismatch) || !strings.Contains(err.Error(), wantIn[what]) || !strings.Contains(err.Error(), "nothing committed") {
				t.Fatalf("%s: %v", what, err)
			}
			if now, _ := c.Snapshots(); len(now) != len(snaps) {
				t.Fatalf("%s: a snapshot was committed", what)
			}
			if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("%s: the written files were left in %s: %v", what, out, err)
			}
		}
	}
}

// The check before commit must not stop a rewrite of any type a table can
// hold: every column's digest is computed, and every row survives.
func TestRewriteCheckCoversNestedAndOddTypes(t *testing.T) {
	db, err := engine.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	dir := t.TempDir()
	var paths []string
	for f := range 3 {
		p := filepath.Join(dir, fmt.Sprintf("o%d.parquet", f))
		q := fmt.Sprintf(`COPY (SELECT i + %[1]d * 100 AS id,
			INTERVAL (i) DAY + INTERVAL (i * 7) MICROSECOND AS iv,
			MAP {'k' || i: i, 'z': NULL} AS m,
			[[i, NULL], NULL, []] AS ll,
			{'a': {'b': [i::VARCHAR, NULL]}, 'c': NULL} AS s,
			CASE WHEN i %% 3 = 0 THEN NULL ELSE (i %% 5)::UTINYINT END AS small,
			CASE WHEN i %% 5 = 0 THEN NULL ELSE i %% 2 = 0 END AS b,
			CASE i %% 4 WHEN 0 THEN (i * 1.5)::DOUBLE::VARIANT WHEN 1 THEN ('s' || i)::VARIANT WHEN 2 THEN NULL ELSE {'x': i}::VARIANT END AS v,
			-0.0::DOUBLE * (i %% 2) AS d
			FROM range(25) r(i)) TO '%[2]s' (FORMAT parquet)`, f, p)
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	names := []string{"id", "iv", "m", "ll", "s", "small", "b", "v", "d"}
	_, before, e := lakeOf(t, paths)
	want := hashOf(t, e, before.Snapshot.ID, names)
	ctx := context.Background()
	res, err := MergeSmallFiles(ctx, e, "t", MergeOptions{RowsPerFile: 40})
	if err != nil {
		t.Fatal(err)
	}
	if got := hashOf(t, e, res.Snapshot.ID, names); got != want || res.Rows != 75 {
		t.Fatalf("compact: %d rows, content hash %s, was %s", res.Rows, got, want)
	}
	res, err = Optimize(ctx, e, "t", OptimizeOptions{SortBy: []string{"iv", "id"}, Curve: ZOrder, RowsPerFile: 30})
	if err != nil {
		t.Fatal(err)
	}
	if got := hashOf(t, e, res.Snapshot.ID, names); got != want || res.Rows != 75 {
		t.Fatalf("optimize: %d rows, content hash %s, was %s", res.Rows, got, want)
	}
}

// fuzzType is a column type of the rewrite fuzzer: its DuckDB name, the
// name the table declares (a 128-bit integer table holds 64-bit file
// columns: no Parquet type reads as one), and a generator of SQL
// expressions of its values, extremes and special floats included.
type fuzzType struct {
	sql, table string
	gen        func(r *rand.Rand) string
}

// floatSQL is a FLOAT (bits 32) or DOUBLE (64) expression: signed zeros,
// infinities, NaNs of either sign with random payloads (quiet and
// signalling, as a file may hold them), extremes, or a random value.
func floatSQL(r *rand.Rand, bits int) string {
	typ := map[int]string{32: "FLOAT", 64: "DOUBLE"}[bits]
	switch r.IntN(10) {
	case 0:
		return fmt.Sprintf("'-0.0'::%s", typ)
	case 1:
		return fmt.Sprintf("'0.0'::%s", typ)
	case 2, 3:
		// A NaN: exponent all ones, a non-zero mantissa, either sign.
		mant := bits - 1 - map[int]int{32: 8, 64: 11}[bits]
		b := fmt.Sprint(r.IntN(2)) + strings.Repeat("1", bits-1-mant)
		m := make([]byte, mant)
		for i := range m {
			m[i] = byte('0' + r.IntN(2))
		}
		m[r.IntN(mant)] = '1'
		return fmt.Sprintf("'%s%s'::BIT::%s", b, m, typ)
	case 4:
		return fmt.Sprintf("'%s'::%s", []string{"inf", "-inf", "nan", "-nan"}[r.IntN(4)], typ)
	case 5:
		if bits == 32 {
			return fmt.Sprintf("'%s'::FLOAT", []string{"3.4028235e38", "-3.4028235e38", "1e-45", "-1.17549435e-38"}[r.IntN(4)])
		}
		return fmt.Sprintf("'%s'::DOUBLE", []string{"1.7976931348623157e308", "-1.7976931348623157e308", "5e-324", "-2.2250738585072014e-308"}[r.IntN(4)])
	}
	return fmt.Sprintf("'%g'::%s", (r.Float64()-0.5)*math.Pow(10, float64(r.IntN(20)-10)), typ)
}

func pickSQL(opts ...string) func(r *rand.Rand) string {
	return func(r *rand.Rand) string { return opts[r.IntN(len(opts))] }
}

// orNull makes a generator give NULL one time in five.
func orNull(typ string, g func(r *rand.Rand) string) func(r *rand.Rand) string {
	return func(r *rand.Rand) string {
		if r.IntN(5) == 0 {
			return "NULL::" + typ
		}
		return g(r)
	}
}

func intSQL(typ string, lo, hi string) func(r *rand.Rand) string {
	return func(r *rand.Rand) string {
		switch r.IntN(4) {
		case 0:
			return "(" + lo + ")::" + typ
		case 1:
			return "(" + hi + ")::" + typ
		}
		return fmt.Sprintf("%d::%s", r.IntN(100), typ)
	}
}

var fuzzTypes = func() []fuzzType {
	dbl := func(r *rand.Rand) string { return floatSQL(r, 64) }
	flt := func(r *rand.Rand) string { return floatSQL(r, 32) }
	str := pickSQL(`''`, `'plain'`, `'it''s "quoted"'`, `'Ünïcödé ✓'`, `chr(0) || 'x'`, `'NULL'`)
	list := func(typ string, g func(r *rand.Rand) string) func(r *rand.Rand) string {
		return func(r *rand.Rand) string {
			n := r.IntN(4)
			elems := make([]string, n)
			for i := range elems {
				elems[i] = orNull(typ, g)(r)
			}
			return fmt.Sprintf("CAST([%s] AS %s[])", strings.Join(elems, ", "), typ)
		}
	}
	structOf := func(r *rand.Rand) string {
		return fmt.Sprintf("{'a': %s, 'b c': %s, 'l': %s}", orNull("DOUBLE", dbl)(r), orNull("VARCHAR", str)(r), orNull("FLOAT[]", list("FLOAT", flt))(r))
	}
	variant := func(r *rand.Rand) string {
		switch r.IntN(5) {
		case 0:
			return dbl(r) + "::VARIANT"
		case 1:
			return str(r) + "::VARIANT"
		case 2:
			return fmt.Sprintf("%d::VARIANT", r.IntN(1000)-500)
		case 3:
			return fmt.Sprintf("{'x': %s, 'y': [%s, NULL]}::VARIANT", flt(r), dbl(r))
		}
		return "NULL::VARIANT"
	}
	return []fuzzType{
		{sql: "BOOLEAN", gen: pickSQL("true", "false")},
		{sql: "TINYINT", gen: intSQL("TINYINT", "-128", "127")},
		{sql: "SMALLINT", gen: intSQL("SMALLINT", "-32768", "32767")},
		{sql: "INTEGER", gen: intSQL("INTEGER", "-2147483648", "2147483647")},
		{sql: "BIGINT", gen: intSQL("BIGINT", "-9223372036854775808", "9223372036854775807")},
		{sql: "UTINYINT", gen: intSQL("UTINYINT", "0", "255")},
		{sql: "USMALLINT", gen: intSQL("USMALLINT", "0", "65535")},
		{sql: "UINTEGER", gen: intSQL("UINTEGER", "0", "4294967295")},
		{sql: "UBIGINT", gen: intSQL("UBIGINT", "0", "18446744073709551615")},
		{sql: "BIGINT", table: "HUGEINT", gen: intSQL("BIGINT", "-9223372036854775808", "9223372036854775807")},
		{sql: "UBIGINT", table: "HUGEINT", gen: intSQL("UBIGINT", "9223372036854775808", "18446744073709551615")},
		{sql: "UBIGINT", table: "UHUGEINT", gen: intSQL("UBIGINT", "0", "18446744073709551615")},
		{sql: "FLOAT", gen: flt},
		{sql: "DOUBLE", gen: dbl},
		{sql: "DECIMAL(4,2)", gen: pickSQL("-99.99", "99.99", "0.01", "-0.00")},
		{sql: "DECIMAL(18,3)", gen: pickSQL("-999999999999999.999", "999999999999999.999", "1.5")},
		{sql: "DECIMAL(38,10)", gen: pickSQL("-9999999999999999999999999999.9999999999", "9999999999999999999999999999.9999999999", "0.0000000001")},
		{sql: "DATE", gen: pickSQL("'1970-01-01'::DATE", "'0001-01-01'::DATE", "'9999-12-31'::DATE", "'infinity'::DATE", "'-infinity'::DATE")},
		{sql: "TIME", gen: pickSQL("'00:00:00'::TIME", "'23:59:59.999999'::TIME", "'24:00:00'::TIME", "'12:34:56.5'::TIME")},
		{sql: "TIME_NS", gen: pickSQL("'00:00:00'::TIME_NS", "'23:59:59.999999999'::TIME_NS", "'01:02:03.000000001'::TIME_NS")},
		{sql: "TIMESTAMP", gen: pickSQL("'1970-01-01'::TIMESTAMP", "'infinity'::TIMESTAMP", "'-infinity'::TIMESTAMP", "'0001-01-01 00:00:00'::TIMESTAMP", "'2262-04-11 23:47:16.854775'::TIMESTAMP")},
		{sql: "TIMESTAMP_MS", gen: pickSQL("'1970-01-01'::TIMESTAMP_MS", "'2000-02-29 12:00:00.123'::TIMESTAMP_MS")},
		{sql: "TIMESTAMP_NS", gen: pickSQL("'1677-09-22 00:00:00'::TIMESTAMP_NS", "'2262-04-11 23:47:16.854775806'::TIMESTAMP_NS", "'1970-01-01 00:00:00.000000001'::TIMESTAMP_NS")},
		{sql: "TIMESTAMPTZ", gen: pickSQL("'2020-01-01 00:00:00+00'::TIMESTAMPTZ", "'1969-12-31 23:59:59.999999+00'::TIMESTAMPTZ", "'infinity'::TIMESTAMPTZ")},
		{sql: "INTERVAL", gen: pickSQL("INTERVAL 1 DAY", "INTERVAL 7 MONTH + INTERVAL 3 MICROSECOND", "INTERVAL 0 SECOND", "INTERVAL 100000 YEAR")},
		{sql: "UUID", gen: pickSQL("'00000000-0000-0000-0000-000000000000'::UUID", "'ffffffff-ffff-ffff-ffff-ffffffffffff'::UUID", "'7fffffff-0000-4000-8000-000000000001'::UUID")},
		{sql: "VARCHAR", gen: str},
		{sql: "BLOB", gen: pickSQL(`'\x00\xFF'::BLOB`, `''::BLOB`, `'abc'::BLOB`)},
		{sql: "JSON", gen: pickSQL(`'{"a": -0.0}'::JSON`, `'[]'::JSON`, `'null'::JSON`)},
		{sql: "DOUBLE[]", gen: list("DOUBLE", dbl)},
		{sql: "STRUCT(a DOUBLE, \"b c\" VARCHAR, l FLOAT[])", gen: structOf},
		{sql: "MAP(VARCHAR, FLOAT)", gen: func(r *rand.Rand) string {
			return fmt.Sprintf("MAP {'k': %s, 'z': %s}", orNull("FLOAT", flt)(r), orNull("FLOAT", flt)(r))
		}},
		{sql: "STRUCT(a DOUBLE, \"b c\" VARCHAR, l FLOAT[])[]", gen: func(r *rand.Rand) string {
			return fmt.Sprintf("CAST([%s, NULL, %s] AS STRUCT(a DOUBLE, \"b c\" VARCHAR, l FLOAT[])[])", structOf(r), structOf(r))
		}},
		{sql: "VARIANT", gen: variant},
	}
}()

// Column names of the fuzzer: the hostile ones, and non-ASCII names DuckDB
// folds no case of.
var fuzzNames = append(append([]string{}, hostileNames...), "Ünï", "naïve Ωmega", "ÉTÉ", "名前")

// exactHashOf is the row count and, per column, the sum of the hashes of
// its values' exact bits (exactSQL) at a snapshot: equal only when every
// float kept its sign and NaN payload.
func exactHashOf(t *testing.T, e *engine.Engine, snap int64, names []string, typs []types.Type) string {
	t.Helper()
	sel := []string{"count(*)"}
	for i, n := range names {
		sel = append(sel, fmt.Sprintf("sum(hash(%s))::VARCHAR", exactSQL(sqllex.QuoteName(n), typs[i], 0)))
	}
	return answerOf(t, e, snap, "SELECT "+strings.Join(sel, ", ")+" FROM t")
}

// The rewrite fuzzer: random tables of every type the catalog holds
// (extremes, signed zeros, NaNs of either sign and any payload, NULLs at
// every level of nesting), with hostile column names, through random
// compacts and optimizes (sorts, curves, row and byte sizing). After every
// rewrite the table holds the same rows, bit for bit, at the new snapshot
// and still at the old one.
func TestRewriteFuzz(t *testing.T) {
	seeds := uint64(30)
	if testing.Short() {
		seeds = 5
	}
	db, err := engine.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 25))
			var names []string
			seen := map[string]bool{}
			for _, i := range r.Perm(len(fuzzNames)) {
				if n := fuzzNames[i]; !seen[strings.ToLower(n)] {
					seen[strings.ToLower(n)] = true
					names = append(names, n)
				}
			}
			names = names[:3+r.IntN(6)]
			fts := make([]fuzzType, len(names))
			typs := make([]types.Type, len(names))
			for i := range fts {
				fts[i] = fuzzTypes[r.IntN(len(fuzzTypes))]
				typs[i] = types.MustParseType(fts[i].sql)
			}
			dir := t.TempDir()
			var paths []string
			rows := 0
			for f := range 2 + r.IntN(4) {
				n := 1 + r.IntN(40)
				rows += n
				tuples := make([]string, n)
				for j := range tuples {
					vals := make([]string, len(names))
					for i, ft := range fts {
						vals[i] = fmt.Sprintf("CAST(%s AS %s)", orNull(ft.sql, ft.gen)(r), ft.sql)
					}
					tuples[j] = "(" + strings.Join(vals, ", ") + ")"
				}
				quoted := make([]string, len(names))
				for i, n := range names {
					quoted[i] = sqllex.QuoteName(n)
				}
				p := filepath.Join(dir, fmt.Sprintf("f%d.parquet", f))
				q := fmt.Sprintf("COPY (SELECT * FROM (VALUES %s) AS v(%s)) TO '%s' (FORMAT parquet, ROW_GROUP_SIZE %d)",
					strings.Join(tuples, ", "), strings.Join(quoted, ", "), p, 1+r.IntN(16))
				if _, err := db.Exec(q); err != nil {
					t.Fatalf("writing %s: %v", p, err)
				}
				paths = append(paths, p)
			}
			c, e := fuzzLake(t, paths, names, fts)
			snaps := []int64{}
			if s, err := c.Snapshots(); err == nil {
				snaps = append(snaps, s[len(s)-1].ID)
			}
			want := exactHashOf(t, e, snaps[0], names, typs)
			wantText := contentOf(t, e, snaps[0], names)
			ctx := context.Background()
			for step := range 4 {
				var res *RewriteResult
				var what string
				if r.IntN(3) == 0 {
					o := MergeOptions{RowsPerFile: int64(2 + r.IntN(rows))}
					if r.IntN(3) == 0 {
						o = MergeOptions{TargetFileSize: int64(1+r.IntN(64)) << 10}
					}
					what = fmt.Sprintf("compact %+v", o)
					res, err = MergeSmallFiles(ctx, e, "t", o)
					if err == nil && res == nil {
						continue // fewer than two small files
					}
				} else {
					o := OptimizeOptions{RowsPerFile: int64(1 + r.IntN(rows))}
					if r.IntN(4) == 0 {
						o = OptimizeOptions{TargetFileSize: int64(1+r.IntN(32)) << 10}
					}
					// DuckDB cannot order VARIANT values of different types
					// ("Can't compare values of type VARCHAR and DOUBLE").
					for _, i := range r.Perm(len(names))[:1+r.IntN(min(3, len(names)))] {
						if typs[i].Kind != types.KindVariant {
							o.SortBy = append(o.SortBy, names[i])
						}
					}
					if len(o.SortBy) == 0 {
						continue
					}
					if len(o.SortBy) >= 2 && r.IntN(2) == 0 {
						o.Curve = []curve.Kind{ZOrder, Hilbert}[r.IntN(2)]
					}
					what = fmt.Sprintf("optimize %+v", o)
					res, err = Optimize(ctx, e, "t", o)
				}
				what = fmt.Sprintf("step %d, %s over columns %q of types %v", step, what, names, typs)
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if res.Rows > int64(rows) || (res.Rows != int64(rows) && !strings.HasPrefix(what, "step "+fmt.Sprint(step)+", compact")) {
					t.Fatalf("%s: rewrote %d rows of %d", what, res.Rows, rows)
				}
				if !strings.Contains(res.Dir, string(filepath.Separator)+"_rocklake"+string(filepath.Separator)) {
					t.Fatalf("%s: wrote into %s, outside the rewrite root", what, res.Dir)
				}
				snaps = append(snaps, res.Snapshot.ID)
				for _, s := range []int64{snaps[0], res.Snapshot.ID} {
					if got := exactHashOf(t, e, s, names, typs); got != want {
						t.Fatalf("%s: exact content at snapshot %d is\n%s\nwant\n%s", what, s, got, want)
					}
				}
				if got := contentOf(t, e, res.Snapshot.ID, names); got != wantText {
					t.Fatalf("%s: rows changed:\n got %s\nwant %s", what, got, wantText)
				}
			}
		})
	}
}

// fuzzLake registers the files in a new table t whose columns are the
// types rocklake reads from the files, but for the 128-bit integers the
// fuzzer declares.
func fuzzLake(t *testing.T, paths, names []string, fts []fuzzType) (*catalog.Catalog, *engine.Engine) {
	t.Helper()
	scratch, _ := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	if _, err := ingest.Add(scratch, "t", paths[:1], ingest.Options{Create: true, NoAutoFilters: true}); err != nil {
		t.Fatal(err)
	}
	rd, err := scratch.Read(catalog.Latest)
	if err != nil {
		t.Fatal(err)
	}
	tb, _ := rd.Table("t")
	cols, _ := rd.Columns(tb.ID)
	rd.Close()
	var defs []catalog.ColumnDef
	for i, col := range catalog.TopLevel(cols) {
		typ := col.Type.DuckLakeName()
		switch {
		case fts[i].table != "":
			typ = fts[i].table
		case col.Type.Kind.IsNested() && col.Type.Kind != types.KindVariant:
			// A nested column's type lives in its children rows; the
			// generated type is what the file holds.
			typ = fts[i].sql
		}
		defs = append(defs, catalog.ColumnDef{Name: names[i], Type: typ})
	}
	c, _ := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	tx, err := c.Begin()
	if err != nil {
		t.Fatal(err)
	}
	tx.CreateTable("t", defs)
	if _, err := tx.Commit(); err != nil {
		t.Fatalf("create table %v: %v", defs, err)
	}
	if _, err := ingest.Add(c, "t", paths, ingest.Options{}); err != nil {
		t.Fatalf("add: %v", err)
	}
	e, err := engine.New(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return c, e
}

// The DuckDB facts the rewrite is built on, checked against the DuckDB
// linked: hash() and = equate -0.0 with +0.0 and every NaN with every
// other; a cast to BIT keeps a float's bits; ORDER BY hands its key
// columns back normalised (a copy sorted on instead keeps the column
// intact); a dictionary-encoded Parquet column merges them, and
// DICTIONARY_SIZE_LIMIT 0 writes them plain, bit for bit.
func TestDuckDBFloatFacts(t *testing.T) {
	db, err := engine.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const snan, negnan = `'0111111111110000000000000000000000000000000000000000000000000001'::BIT::DOUBLE`, `-'nan'::DOUBLE`
	ask := func(q string) string {
		t.Helper()
		var s string
		if err := db.QueryRow(q).Scan(&s); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return s
	}
	if got := ask(`SELECT (hash('-0.0'::DOUBLE) = hash(0.0::DOUBLE) AND hash(` + negnan + `) = hash('nan'::DOUBLE))::VARCHAR`); got != "true" {
		t.Errorf("hash tells signed zeros or NaNs apart now: %s", got)
	}
	if got := ask(`SELECT '-0.0'::DOUBLE::BIT::VARCHAR || ' ' || ` + snan + `::BIT::VARCHAR`); got !=
		"1000000000000000000000000000000000000000000000000000000000000000 0111111111110000000000000000000000000000000000000000000000000001" {
		t.Errorf("::BIT does not keep the bits: %s", got)
	}
	vals := `SELECT unnest(['-0.0'::DOUBLE, ` + negnan + `, ` + snan + `, 1.5]) AS x`
	if got := ask(`SELECT string_agg(x::BIT::VARCHAR, ',' ORDER BY i) FROM (SELECT x, row_number() OVER (ORDER BY x) AS i FROM (` + vals + `))`); strings.Contains(got, "1000000000000000000000000000000000000000000000000000000000000000") {
		t.Logf("ORDER BY keeps -0.0 now: %s", got)
	} else if got2 := ask(`SELECT string_agg(x::BIT::VARCHAR, ',' ORDER BY i) FROM (SELECT * EXCLUDE (o), row_number() OVER (ORDER BY o) AS i FROM (SELECT x, x AS o FROM (` + vals + `)))`); !strings.Contains(got2, "1000000000000000000000000000000000000000000000000000000000000000") ||
		!strings.Contains(got2, "0111111111110000000000000000000000000000000000000000000000000001") {
		t.Errorf("sorting on a copy normalises the column too: %s", got2)
	}
	dir := t.TempDir()
	for opts, exact := range map[string]bool{"FORMAT parquet": false, "FORMAT parquet, DICTIONARY_SIZE_LIMIT 0": true} {
		p := filepath.Join(dir, "f.parquet")
		if _, err := db.Exec(fmt.Sprintf(`COPY (SELECT x FROM (%s), range(10)) TO '%s' (%s)`, vals, p, opts)); err != nil {
			t.Fatal(err)
		}
		n := ask(fmt.Sprintf(`SELECT count(DISTINCT x::BIT)::VARCHAR FROM '%s'`, p))
		if exact && n != "4" {
			t.Errorf("COPY (%s) kept %s of 4 distinct bit patterns", opts, n)
		}
		if !exact && n == "4" {
			t.Logf("COPY (%s) keeps every bit pattern now", opts)
		}
	}
}

// A DECIMAL inside a VARIANT keeps its precision in Parquet only where the
// writer shreds it as that type: merged with rows that make DuckDB's
// writer store it unshredded, DECIMAL(21,1) would come back DECIMAL(38,1).
// Such a rewrite is refused before its commit, saying why; rows whose
// shredding survives are rewritten.
func TestRewriteOfVariantDecimals(t *testing.T) {
	db, err := engine.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	dir := t.TempDir()
	shredded, mixed := filepath.Join(dir, "a.parquet"), filepath.Join(dir, "b.parquet")
	for p, q := range map[string]string{
		shredded: `SELECT (i + 0.5)::DECIMAL(21,1)::VARIANT AS v FROM range(5) r(i)`,
		mixed:    `SELECT CASE WHEN i = 0 THEN 1.5::DECIMAL(21,1)::VARIANT ELSE ('s' || i)::VARIANT END AS v FROM range(5) r(i)`,
	} {
		if _, err := db.Exec(fmt.Sprintf("COPY (%s) TO '%s' (FORMAT parquet)", q, p)); err != nil {
			t.Fatal(err)
		}
	}
	c, before, e := lakeOf(t, []string{mixed, shredded})
	ctx := context.Background()
	want := answerOf(t, e, before.Snapshot.ID, "SELECT v::VARCHAR, variant_typeof(v) FROM t ORDER BY ALL")
	_, err = MergeSmallFiles(ctx, e, "t", MergeOptions{})
	if err != nil {
		if !errors.Is(err, ErrRewriteMismatch) || !strings.Contains(err.Error(), "VARIANT's DECIMAL") {
			t.Fatalf("compact: %v", err)
		}
		if snaps, _ := c.Snapshots(); snaps[len(snaps)-1].ID != before.Snapshot.ID {
			t.Fatal("a refused rewrite committed")
		}
		t.Logf("refused: %v", err)
		return
	}
	if got := answerOf(t, e, catalog.Latest, "SELECT v::VARCHAR, variant_typeof(v) FROM t ORDER BY ALL"); got != want {
		t.Fatalf("compact changed the variants:\n got %s\nwant %s", got, want)
	}
}
