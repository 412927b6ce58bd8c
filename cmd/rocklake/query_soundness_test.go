package main

import (
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/types"
)

// Each test here is one way a query once returned a fast, wrong answer with
// no error, run as a user runs it: files on disk, `rocklake add`, `rocklake
// query`, and DuckDB's own answer over the same files next to it.

// lakeCase is a catalog and the DuckDB that answers the same queries over
// every registered file.
type lakeCase struct {
	t      *testing.T
	dir    string // data files
	cat    string // catalog directory
	duck   *sql.DB
	oracle *sql.DB
}

func newLakeCase(t *testing.T) *lakeCase {
	t.Helper()
	dir := t.TempDir()
	duck, err := engine.Open("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { duck.Close() })
	oracle, err := engine.Open("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { oracle.Close() })
	return &lakeCase{t: t, dir: dir, cat: newCatalogDir(t), duck: duck, oracle: oracle}
}

func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// write writes a DuckDB query's rows to a Parquet file under the case's
// directory and returns its path.
func (c *lakeCase) write(name, query string) string {
	c.t.Helper()
	p := filepath.Join(c.dir, name)
	if _, err := c.duck.Exec(fmt.Sprintf("COPY (%s) TO %s (FORMAT parquet, ROW_GROUP_SIZE 50)", query, sqlString(p))); err != nil {
		c.t.Fatal(err)
	}
	return p
}

// table registers files as a table (created from the first file unless it
// exists) and gives the oracle a view of the same name: DuckDB reading the
// files, cast to the column types the catalog gave the table.
func (c *lakeCase) table(name string, files ...string) {
	c.t.Helper()
	c.tableFrom(name, files, files)
}

// tableFrom registers the locations given (objects, say) and gives the
// oracle a view over local copies of the same files.
func (c *lakeCase) tableFrom(name string, register, files []string) {
	c.t.Helper()
	args := append([]string{"--catalog", c.cat, "add", name}, register...)
	if _, err := run(c.t, "--catalog", c.cat, "table", "describe", name); err != nil {
		args = append(args, "--create")
	}
	mustRun(c.t, args...)
	out := mustRun(c.t, "--catalog", c.cat, "--format", "json", "table", "describe", name)
	var desc struct {
		Columns []rocklake.ColumnDescription `json:"columns"`
	}
	if err := json.Unmarshal([]byte(out), &desc); err != nil {
		c.t.Fatal(err)
	}
	var sel []string
	for _, col := range desc.Columns {
		ty := col.Type
		if types.DuckDBName(ty) == "" {
			sel = append(sel, quoteIdentifier(col.Name))
			continue
		}
		sel = append(sel, fmt.Sprintf("CAST(%s AS %s) AS %s", quoteIdentifier(col.Name), types.DuckDBName(ty), quoteIdentifier(col.Name)))
	}
	var lits []string
	for _, f := range files {
		// Brackets keep DuckDB from globbing the path.
		lit := f
		for _, g := range []string{"[", "?", "*"} {
			lit = strings.ReplaceAll(lit, g, "\x00"+g+"\x01")
		}
		lit = strings.NewReplacer("\x00", "[", "\x01", "]").Replace(lit)
		lits = append(lits, sqlString(lit))
	}
	if _, err := c.oracle.Exec(fmt.Sprintf("CREATE OR REPLACE VIEW %s AS SELECT %s FROM read_parquet([%s], union_by_name = true)",
		quoteIdentifier(name), strings.Join(sel, ", "), strings.Join(lits, ", "))); err != nil {
		c.t.Fatal(err)
	}
}

func quoteIdentifier(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// same runs a query through `rocklake query` and on the oracle: both
// error, or both give the same header and the same rows.
func (c *lakeCase) same(q string) {
	c.t.Helper()
	out, err := run(c.t, "--catalog", c.cat, "--format", "csv", "--null", "NULL", "query", q)
	want, werr := oracleCSV(c.oracle, q)
	if (err != nil) != (werr != nil) {
		c.t.Errorf("%s\nrocklake: %v\n%s\nDuckDB: %v", q, err, out, werr)
		return
	}
	if err != nil {
		return
	}
	got, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		c.t.Fatalf("%s: output is not CSV: %v\n%s", q, err, out)
	}
	if !sameCSV(got, want) {
		c.t.Errorf("%s\nrocklake: %q\nDuckDB:   %q", q, got, want)
	}
}

func oracleCSV(db *sql.DB, q string) ([][]string, error) {
	rows, err := db.Query("SELECT COLUMNS(*)::VARCHAR FROM (\n" + q + "\n)")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	out := [][]string{cols}
	for rows.Next() {
		vals := make([]sql.NullString, len(cols)) // NULL as "NULL"
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		rec := make([]string, len(cols))
		for i, v := range vals {
			rec[i] = "NULL"
			if v.Valid {
				rec[i] = v.String
			}
		}
		out = append(out, rec)
	}
	return out, rows.Err()
}

// sameCSV compares a header and a multiset of rows.
func sameCSV(got, want [][]string) bool {
	if len(got) != len(want) || len(got) == 0 || !slices.Equal(got[0], want[0]) {
		return false
	}
	key := func(rows [][]string) []string {
		var out []string
		for _, r := range rows[1:] {
			out = append(out, strings.Join(r, "\x1f"))
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(key(got), key(want))
}

// joinTables: u holds ids 100..149; t holds ids 0..199 in two files, v = 1
// in the first and 0 in the second, so that WHERE on t skips a file.
func joinTables(c *lakeCase) {
	c.table("u", c.write("u.parquet", "SELECT i::INTEGER AS id, i % 3 AS w FROM range(100, 150) r(i)"))
	c.table("t",
		c.write("t0.parquet", "SELECT i::INTEGER AS id, 1 AS v FROM range(0, 100) r(i)"),
		c.write("t1.parquet", "SELECT i::INTEGER AS id, 0 AS v FROM range(100, 200) r(i)"))
}

func TestQueryOuterJoins(t *testing.T) {
	c := newLakeCase(t)
	joinTables(c)
	for _, q := range []string{
		"SELECT count(*) FROM t LEFT JOIN u ON u.id = t.id WHERE u.id IS NULL",
		"SELECT count(*) FROM t LEFT JOIN u ON u.id = t.id WHERE u.w IS NULL",
		"SELECT count(*) FROM u LEFT JOIN t ON u.id = t.id AND t.v = 1 WHERE t.id IS NULL",
		"SELECT count(*) FROM u RIGHT JOIN t ON u.id = t.id WHERE u.id IS NULL OR u.w = -1",
		"SELECT count(*) FROM u FULL JOIN t ON u.id = t.id WHERE u.id IS NULL AND t.v = 1",
		"SELECT count(*) FROM u LEFT JOIN t ON u.id = t.id WHERE t.v = 1",
	} {
		c.same(q)
	}
}

func TestQueryASOFAndPositional(t *testing.T) {
	c := newLakeCase(t)
	joinTables(c)
	c.same("SELECT count(*) FROM u ASOF JOIN t ON u.id >= t.id WHERE t.v = 1")
	c.same("SELECT sum(u.id) FROM u POSITIONAL JOIN t WHERE t.v = 0")
	c.same("SELECT count(*), sum(t.id) FROM u POSITIONAL JOIN t WHERE t.id >= 100")
}

func TestQuerySampling(t *testing.T) {
	c := newLakeCase(t)
	joinTables(c)
	c.same("SELECT count(*) FROM t TABLESAMPLE reservoir(10 ROWS) REPEATABLE (42) WHERE id < 100")
	c.same("SELECT count(*) FROM t WHERE id < 100 USING SAMPLE reservoir(10 ROWS) REPEATABLE (42)")
}

func TestQueryHiddenReferences(t *testing.T) {
	c := newLakeCase(t)
	joinTables(c)
	for _, q := range []string{
		"SELECT (SELECT count(*) FROM query_table('t')) AS a, count(*) AS b FROM t WHERE id < 10",
		"SELECT (SELECT count(*) FROM query('SELECT * FROM t')) AS a, count(*) AS b FROM t WHERE id < 10",
		"UNPIVOT t ON id, v INTO NAME k VALUE val",
		"SELECT count(*) FROM (UNPIVOT t ON id, v INTO NAME k VALUE val) WHERE val < 10",
		"SELECT (SELECT count(*) FROM (UNPIVOT t ON id INTO NAME k VALUE val)) AS a, count(*) AS b FROM t WHERE id < 10",
		"PIVOT t ON v USING count(*)",
		"SELECT * FROM (PIVOT t ON v USING count(*)) WHERE \"1\" > 0",
	} {
		c.same(q)
	}
}

func TestQueryGlobCharactersInPaths(t *testing.T) {
	c := newLakeCase(t)
	p := c.write("p?.parquet", "SELECT 1 AS x")
	c.write("pa.parquet", "SELECT 1000 AS x")
	c.write("p[1].parquet", "SELECT 5 AS x")
	c.table("g", p, filepath.Join(c.dir, "p[1].parquet"))
	c.same("SELECT sum(x), count(*) FROM g")
	c.same("SELECT sum(x) FROM g WHERE x < 3")
	out := mustRun(t, "--catalog", c.cat, "verify", "g")
	if !strings.Contains(out, " 0 problems") {
		t.Fatalf("verify over glob-character paths: %s", out)
	}
}

func TestQueryMetadataAnswersAreDuckDBs(t *testing.T) {
	c := newLakeCase(t)
	c.table("m", c.write("m.parquet", `SELECT i AS id, i % 2 = 0 AS flag, (i / 8)::DECIMAL(9,3) AS dec,
		i::UHUGEINT AS big, i::DOUBLE AS d FROM range(0, 100) r(i)`))
	for _, q := range []string{
		"SELECT count(*) FROM m WHERE flag = 'on'",
		"SELECT count(*) FROM m WHERE flag = 'maybe'",
		"SELECT count(*) FROM m WHERE big = -1",
		"SELECT count(*) FROM m WHERE id = 1e400",
		"SELECT count(*) FROM m WHERE d < 1e400",
		"SELECT count(*) FROM m WHERE d > -1e400",
		"SELECT count(*) FROM m WHERE id::TINYINT > 1000",
		"SELECT min(dec), max(\"dec\"), count(*) FROM m",
		"SELECT min(m.id) AS lo, max(id) FROM m WHERE id >= 50",
	} {
		c.same(q)
	}
}

func TestQueryFloatLiteralAgainstIntegers(t *testing.T) {
	c := newLakeCase(t)
	// Each file holds one value, so its bounds are that value; in FLOAT,
	// 16777217 is 16777216.
	var files []string
	for _, v := range []int{16777215, 16777217, 16777219, 33554433} {
		files = append(files, c.write(fmt.Sprintf("f%d.parquet", v), fmt.Sprintf(`SELECT %[1]d::INTEGER AS i, %[1]d::UINTEGER AS ui,
			%[1]d::DECIMAL(9,0) AS d, %[1]d::BIGINT AS b FROM range(0, 3)`, v)))
	}
	c.table("f", files...)
	for _, col := range []string{"i", "ui", "d", "b"} {
		for _, op := range []string{"=", "<=", ">=", "<", ">", "<>"} {
			c.same(fmt.Sprintf("SELECT count(*) FROM f WHERE %s %s 16777216::FLOAT", col, op))
		}
		c.same(fmt.Sprintf("SELECT count(*) FROM f WHERE %s IN (16777216::FLOAT, 1::FLOAT)", col))
		c.same(fmt.Sprintf("SELECT count(*) FROM f WHERE %s = 33554432::FLOAT", col))
		c.same(fmt.Sprintf("SELECT count(*) FROM f WHERE %s = 16777216.0::FLOAT", col))
		c.same(fmt.Sprintf("SELECT count(*) FROM f WHERE %s BETWEEN 16777218::FLOAT AND 16777220::FLOAT", col))
		c.same(fmt.Sprintf("SELECT count(*) FROM f WHERE %s = CAST(16777217 AS REAL)", col))
	}
}

func TestQueryTimestampUnitsAgainstStrings(t *testing.T) {
	c := newLakeCase(t)
	// One row per file, so that each file's bounds are one value. DuckDB
	// writes every unit to Parquet as some TIMESTAMP; the table says which
	// unit DuckDB compares in.
	mustRun(t, "--catalog", c.cat, "table", "create", "ts", "tss TIMESTAMP_S, tms TIMESTAMP_MS, tns TIMESTAMP_NS")
	var files []string
	for i := range 10 {
		files = append(files, c.write(fmt.Sprintf("ts%d.parquet", i), fmt.Sprintf(`SELECT (TIMESTAMP '2024-06-01 12:00:00' + INTERVAL (%[1]d) SECOND)::TIMESTAMP_S AS tss,
			(TIMESTAMP '2024-06-01 12:00:00' + INTERVAL (%[1]d * 10) MILLISECOND)::TIMESTAMP_MS AS tms,
			(TIMESTAMP '2024-06-01 12:00:00' + INTERVAL (%[1]d) MICROSECOND)::TIMESTAMP_NS AS tns`, i)))
	}
	c.table("ts", files...)
	for _, q := range []string{
		"SELECT count(*) FROM ts WHERE tss = '2024-06-01 12:00:00.2'",
		"SELECT count(*) FROM ts WHERE tss = '2024-06-01 12:00:00.7'",
		"SELECT count(*) FROM ts WHERE tss < '2024-06-01 12:00:00.5'",
		"SELECT count(*) FROM ts WHERE tms = '2024-06-01 12:00:00.0104'",
		"SELECT count(*) FROM ts WHERE tms >= '2024-06-01 12:00:00.0196'",
		"SELECT count(*) FROM ts WHERE tns = '2024-06-01 12:00:00.000001'",
		"SELECT count(*) FROM ts WHERE tss = TIMESTAMP '2024-06-01 12:00:00.2'",
		"SELECT typeof(tss), typeof(tms), typeof(tns) FROM ts LIMIT 1",
	} {
		c.same(q)
	}
}

func TestQueryTypesAsDuckDBReadsThem(t *testing.T) {
	c := newLakeCase(t)
	// Written by arrow-go: TIMESTAMP(MILLIS) and TIME(NANOS), which DuckDB
	// reads as TIMESTAMP and TIME_NS.
	p := filepath.Join(c.dir, "units.parquet")
	var ts, tm []*types.Value
	for i := range 10 {
		a := types.Value{I: types.Int128From(1717243200000 + int64(i)*7)}
		b := types.Value{I: types.Int128From(43200000000000 + int64(i)*1234567)}
		ts, tm = append(ts, &a), append(tm, &b)
	}
	err := pqwrite.Write(p, []pqwrite.Column{
		{Name: "ts", Type: types.MustParseType("TIMESTAMP"), Values: ts, Unit: "ms"},
		{Name: "tm", Type: types.MustParseType("TIME"), Values: tm, Unit: "ns"},
	}, pqwrite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mustRun(t, "--catalog", c.cat, "add", "u", p, "--create")
	if _, err := c.oracle.Exec(fmt.Sprintf("CREATE VIEW u AS SELECT * FROM read_parquet(%s)", sqlString(p))); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"SELECT typeof(ts), typeof(tm), ts, tm FROM u",
		"SELECT count(*) FROM u WHERE tm > '12:00:00.000000001'",
		"SELECT count(*) FROM u WHERE ts >= '2024-06-01 12:00:00.014'",
	} {
		c.same(q)
	}
}

func TestQueryDottedNames(t *testing.T) {
	c := newLakeCase(t)
	// Both column orders: whichever the binder meets first must not win.
	c.table("d",
		c.write("d0.parquet", `SELECT 1 AS "a.b", {'b': 100} AS a`),
		c.write("d1.parquet", `SELECT 100 AS "a.b", {'b': 1} AS a`))
	c.table("e",
		c.write("e0.parquet", `SELECT {'b': 100} AS a, 1 AS "a.b"`),
		c.write("e1.parquet", `SELECT {'b': 1} AS a, 100 AS "a.b"`))
	for _, tbl := range []string{"d", "e"} {
		c.same(fmt.Sprintf(`SELECT count(*) FROM %s WHERE "a.b" = 1`, tbl))
		c.same(fmt.Sprintf(`SELECT count(*) FROM %s WHERE a.b = 1`, tbl))
		c.same(fmt.Sprintf(`SELECT count(*) FROM %[1]s WHERE %[1]s."a.b" = 100`, tbl))
		c.same(fmt.Sprintf(`SELECT count(*) FROM %[1]s WHERE %[1]s.a.b = 100`, tbl))
		c.same(fmt.Sprintf(`SELECT sum("a.b") FROM %s WHERE "a.b" < 50`, tbl))
	}
}

func TestQueryBloomAcrossTypes(t *testing.T) {
	c := newLakeCase(t)
	// Row groups large enough that the planner reads their bloom filters.
	bloom := pqwrite.Options{BloomFilters: true, RowGroupRows: 4096}
	write := func(name string, cols ...pqwrite.Column) string {
		p := filepath.Join(c.dir, name)
		if err := pqwrite.Write(p, cols, bloom); err != nil {
			t.Fatal(err)
		}
		return p
	}
	parse := func(ty types.Type, texts ...string) []*types.Value {
		codec, _ := types.CodecFor(ty)
		var out []*types.Value
		for _, s := range texts {
			v, err := codec.Parse(s)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, &v)
		}
		return out
	}
	// Many values, so bounds cannot rule the probed ones out.
	spread := func(f func(i int) string, probe ...string) []string {
		out := append([]string{}, probe...)
		for i := range 3000 {
			out = append(out, f(i))
		}
		return out
	}
	// A decimal(10,3) file in a decimal(10,2) table: 7.005 reads as 7.01.
	dec3 := types.MustParseType("DECIMAL(10,3)")
	mustRun(t, "--catalog", c.cat, "table", "create", "dec", "x DECIMAL(10,2)")
	c.table("dec", write("dec.parquet", pqwrite.Column{Name: "x", Type: dec3,
		Values: parse(dec3, spread(func(i int) string { return fmt.Sprintf("%d.%03d", i/10, (i*37)%1000) }, "7.005", "1.004")...)}))
	c.same("SELECT count(*) FROM dec WHERE x = 7.01")
	c.same("SELECT count(*) FROM dec WHERE x = 1.00")
	c.same("SELECT count(*) FROM dec WHERE x IN (7.01, 1.00)")
	// A TIMESTAMP_NS file in a TIMESTAMP table truncates to microseconds.
	tns := types.MustParseType("TIMESTAMP_NS")
	mustRun(t, "--catalog", c.cat, "table", "create", "tsn", "ts TIMESTAMP")
	c.table("tsn", write("tsn.parquet", pqwrite.Column{Name: "ts", Type: tns,
		Values: parse(tns, spread(func(i int) string { return fmt.Sprintf("2024-01-01 00:%02d:%02d.%09d", i/60, i%60, i*7919) }, "2024-01-01 05:00:00.000001500")...)}))
	c.same("SELECT count(*) FROM tsn WHERE ts = '2024-01-01 05:00:00.000001'")
	// TIMESTAMP(NANOS, UTC), as pyarrow and Spark write it, with no type
	// change at all: DuckDB reads it as TIMESTAMPTZ in microseconds.
	tz := types.MustParseType("TIMESTAMPTZ")
	var vals []*types.Value
	for i := range 3000 {
		v := types.Value{I: types.Int128From(1704067200_000000000 + int64(i)*1_000_003_001)}
		vals = append(vals, &v)
	}
	probe := types.Value{I: types.Int128From(1704085200_000001500)}
	vals = append(vals, &probe)
	c.table("tz", write("tz.parquet", pqwrite.Column{Name: "ts", Type: tz, Values: vals, Unit: "ns"}))
	c.same("SELECT count(*) FROM tz WHERE ts = '2024-01-01 05:00:00.000001+00'")
	c.same("SELECT count(*) FROM tz WHERE ts IN ('2024-01-01 05:00:00.000001+00', '2024-01-01 00:00:01.000003+00')")
}

func TestAddRefusesDecimalsThatOverflow(t *testing.T) {
	c := newLakeCase(t)
	mustRun(t, "--catalog", c.cat, "table", "create", "o", "x DECIMAL(3,2)")
	before := mustRun(t, "--catalog", c.cat, "snapshots")
	p := c.write("o.parquet", "SELECT 9.999::DECIMAL(4,3) AS x")
	out, err := run(t, "--catalog", c.cat, "add", "o", p)
	if err == nil {
		t.Fatalf("add accepted a decimal(4,3) file whose 9.999 overflows decimal(3,2) when rounded:\n%s", out)
	}
	if !strings.Contains(err.Error(), "o.parquet") || !strings.Contains(err.Error(), "x") {
		t.Fatalf("the error must name the file and the column: %v", err)
	}
	if after := mustRun(t, "--catalog", c.cat, "snapshots"); after != before {
		t.Fatalf("a refused add changed the catalog:\n%s\n%s", before, after)
	}
}

func TestPlanAcceptsDuckDBSyntax(t *testing.T) {
	c := newLakeCase(t)
	joinTables(c)
	for _, pred := range []string{
		"id IS DISTINCT FROM 3",
		"id IS NOT DISTINCT FROM 3",
		"(id > 3) IS TRUE",
		"(id > 3) IS NOT FALSE",
		"id > 3 -- a comment",
		"id /* inline */ > 3",
		"id > - -3",
		"id BETWEEN ASYMMETRIC 120 AND 150",
	} {
		if out, err := run(t, "--catalog", c.cat, "plan", "t", pred); err != nil {
			t.Errorf("plan t %q: %v\n%s", pred, err, out)
		}
		c.same("SELECT count(*) FROM t WHERE " + strings.ReplaceAll(pred, "-- a comment", "\n"))
	}
	// DuckDB 1.5 refuses BETWEEN SYMMETRIC ("Not implemented"); so does plan,
	// saying so, and query returns DuckDB's error.
	for _, pred := range []string{"id BETWEEN SYMMETRIC 150 AND 120", "id NOT BETWEEN SYMMETRIC 150 AND 0"} {
		if _, err := run(t, "--catalog", c.cat, "plan", "t", pred); err == nil || !strings.Contains(err.Error(), "SYMMETRIC") {
			t.Errorf("plan t %q: %v, want an error naming BETWEEN SYMMETRIC", pred, err)
		}
		c.same("SELECT count(*) FROM t WHERE " + pred)
	}
}

// A registered file overwritten with other rows, or deleted, fails the
// query with the file named: statistics of the old file never plan a read
// of the new one.
func TestQueryRefusesChangedFiles(t *testing.T) {
	c := newLakeCase(t)
	a := c.write("a.parquet", "SELECT i AS x FROM range(0, 100) r(i)")
	b := c.write("b.parquet", "SELECT i AS x FROM range(100, 200) r(i)")
	c.table("ch", a, b)
	c.same("SELECT sum(x) FROM ch WHERE x >= 50")
	// Same name, other rows (and so another size).
	c.write("b.parquet", "SELECT i AS x FROM range(100, 301) r(i)")
	for _, q := range []string{"SELECT sum(x) FROM ch WHERE x >= 50", "SELECT sum(x) FROM ch"} {
		out, err := run(t, "--catalog", c.cat, "query", q)
		if err == nil || !strings.Contains(err.Error(), b) || !strings.Contains(err.Error(), "registered as") {
			t.Fatalf("%s over a replaced file: %v\n%s", q, err, out)
		}
	}
	// A query whose plan skips the replaced file still answers.
	c.same("SELECT sum(x) FROM ch WHERE x < 50")
	// The same size, another modification time: a file rewritten in place
	// with rows of the same width is refused too.
	d := c.write("d.parquet", "SELECT i AS x FROM range(300, 400) r(i)")
	c.table("ch2", d)
	c.same("SELECT sum(x) FROM ch2")
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(d, later, later); err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, "--catalog", c.cat, "query", "SELECT sum(x) FROM ch2"); err == nil || !strings.Contains(err.Error(), d) || !strings.Contains(err.Error(), "modified") {
		t.Fatalf("query over a file modified in place: %v\n%s", err, out)
	}
	if out, _ := run(t, "--catalog", c.cat, "verify", "ch2"); !strings.Contains(out, "modified at") {
		t.Fatalf("verify of a file modified in place: %s", out)
	}
	if err := os.Remove(a); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "--catalog", c.cat, "query", "SELECT sum(x) FROM ch WHERE x < 50")
	if err == nil || !strings.Contains(err.Error(), a) || !strings.Contains(err.Error(), "missing") || strings.Contains(err.Error(), "read_parquet") {
		t.Fatalf("query over a deleted file: %v\n%s", err, out)
	}
}
