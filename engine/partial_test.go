package engine

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/prune"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

// wqPartial is the partial-scan mode of the whole-query fuzzer's queries
// (TestWholeQueryPartial forces it).
var wqPartial PartialMode

var wqPartialN = flag.Int("wholequery.partialn", 600, "queries TestWholeQueryPartial runs")

// TestWholeQueryPartial runs the whole-query fuzzer with every kept file
// that can be read in part read so (by the page path where its columns
// allow), and the page index of every row group read: the fuzzer's files
// have row groups of 1 to 500 rows, pages of 128 bytes in a third of
// them, the page index in half.
func TestWholeQueryPartial(t *testing.T) {
	t.Run("pages", func(t *testing.T) { runWholeQueryPartial(t, PartialForce) })
	t.Run("rows", func(t *testing.T) { runWholeQueryPartial(t, PartialForceRows) })
}

func runWholeQueryPartial(t *testing.T, mode PartialMode) {
	n := *wqN
	*wqN = *wqPartialN
	wqPartial = mode
	defer func() { *wqN, wqPartial = n, PartialAuto }()
	TestWholeQuery(t)
}

// partialFixture is one table of files with small row groups and small
// pages and the page index (arrow-go), a sorted id, a clustered ts and
// columns of the prunable types with NULL, NaN, ±0 and extremes; and a
// DuckDB table of the same rows, the oracle.
type partialFixture struct {
	eng   *Engine
	cat   *catalog.Catalog
	files []string
}

func newPartialFixture(t *testing.T, seed uint64) *partialFixture {
	t.Helper()
	return newPartialFixtureWith(t, seed, 1024, 3000)
}

// oracle is an in-memory DuckDB holding the fixture's rows as table t,
// closed when the test ends.
func (fx *partialFixture) oracle(t *testing.T) *sql.DB {
	t.Helper()
	db, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec("CREATE TABLE t AS SELECT * FROM read_parquet(['" + strings.Join(fx.files, "', '") + "'])"); err != nil {
		t.Fatal(err)
	}
	return db
}

// newPartialFixtureWith is newPartialFixture with pages of about pageBytes
// (64 rows at least) and files of minRows to minRows+2,000 rows.
func newPartialFixtureWith(t *testing.T, seed uint64, pageBytes int64, minRows int) *partialFixture {
	t.Helper()
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(seed, 9))
	rv := rand.New(rand.NewPCG(seed, 77)) // v's values, apart so that the others stay as they were
	var files []string
	id := int64(0)
	for f := range 4 {
		rows := minRows + r.IntN(2000)
		vals := map[string][]*types.Value{}
		add := func(name string, v *types.Value) { vals[name] = append(vals[name], v) }
		for i := range rows {
			iv := types.IntValue(id)
			add("id", &iv)
			id++
			tsv := types.IntValue(int64(f)*1_000_000_000_000 + int64(i)*1_000_000 + int64(r.IntN(1000)))
			add("ts", &tsv)
			var d *types.Value
			switch k := r.IntN(40); {
			case k == 0:
				d = nil
			case k == 1:
				v := types.FloatValue(math.NaN())
				d = &v
			case k == 2:
				v := types.FloatValue(math.Copysign(0, -1))
				d = &v
			case k == 3:
				v := types.FloatValue(math.Inf(1 - 2*r.IntN(2)))
				d = &v
			default:
				v := types.FloatValue(float64(i)/10 - 100)
				d = &v
			}
			add("d", d)
			var s *types.Value
			if r.IntN(20) != 0 {
				v := types.StringValue(fmt.Sprintf("k%05d", i/7))
				s = &v
			}
			add("s", s)
			var n *types.Value
			switch k := r.IntN(30); {
			case k == 0:
			case k == 1:
				v := types.IntValue(math.MinInt32)
				n = &v
			case k == 2:
				v := types.IntValue(math.MaxInt32)
				n = &v
			default:
				v := types.IntValue(int64(r.IntN(1000)) - 500)
				n = &v
			}
			add("n", n)
			pickV := func(xs ...types.Value) *types.Value {
				if r.IntN(15) == 0 {
					return nil
				}
				v := xs[r.IntN(len(xs))]
				return &v
			}
			add("u", pickV(types.UintValue(math.MaxUint64), types.UintValue(0), types.UintValue(uint64(r.IntN(100))), types.UintValue(1<<63)))
			add("f", pickV(types.FloatValue(float64(float32(math.NaN()))), types.FloatValue(math.Copysign(0, -1)), types.FloatValue(0),
				types.FloatValue(float64(float32(r.IntN(200)-100)/4)), types.FloatValue(math.Inf(-1)), types.FloatValue(math.MaxFloat32)))
			add("b", pickV(types.BoolValue(true), types.BoolValue(false)))
			add("dt", pickV(types.IntValue(int64(i)), types.IntValue(-719528), types.IntValue(2932896), types.IntValue(int64(r.IntN(20000)))))
			add("tz", pickV(types.IntValue(int64(i)*1_000_000_000), types.IntValue(-62135596800000000), types.IntValue(253402300799999999)))
			add("ms", pickV(types.IntValue(int64(i)*60_000), types.IntValue(-62135596800000), types.IntValue(253402300799999)))
			add("sm", pickV(types.IntValue(math.MinInt16), types.IntValue(math.MaxInt16), types.IntValue(int64(r.IntN(100)))))
			// Unordered values without planted extremes: a range's min and
			// max lie in one row of it, most often away from its ends.
			vv := types.IntValue(rv.Int64() - math.MaxInt64/2)
			add("v", &vv)
		}
		cols := []pqwrite.Column{
			{Name: "id", Type: types.MustParseType("bigint"), Values: vals["id"]},
			{Name: "ts", Type: types.MustParseType("timestamp"), Values: vals["ts"]},
			{Name: "d", Type: types.MustParseType("double"), Values: vals["d"]},
			{Name: "s", Type: types.MustParseType("varchar"), Values: vals["s"]},
			{Name: "n", Type: types.MustParseType("integer"), Values: vals["n"]},
			{Name: "u", Type: types.MustParseType("ubigint"), Values: vals["u"]},
			{Name: "f", Type: types.MustParseType("float"), Values: vals["f"]},
			{Name: "b", Type: types.MustParseType("boolean"), Values: vals["b"]},
			{Name: "dt", Type: types.MustParseType("date"), Values: vals["dt"]},
			{Name: "tz", Type: types.MustParseType("timestamptz"), Values: vals["tz"]},
			{Name: "ms", Type: types.MustParseType("timestamp"), Values: vals["ms"], Unit: "ms"},
			{Name: "sm", Type: types.MustParseType("smallint"), Values: vals["sm"]},
			{Name: "v", Type: types.MustParseType("bigint"), Values: vals["v"]},
		}
		p := filepath.Join(dir, fmt.Sprintf("part-%d.parquet", f))
		if err := pqwrite.Write(p, cols, pqwrite.Options{RowGroupRows: int64(500 + r.IntN(600)), PageBytes: pageBytes, PageIndex: true, Dictionary: f%2 == 0}); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	c, err := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ingest.Add(c, "t", files, ingest.Options{Create: true}); err != nil {
		t.Fatal(err)
	}
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return &partialFixture{eng: e, cat: c, files: files}
}

// TestPartialScanAgrees reads files with small row groups and pages
// through the partial scan (forced and by the cost rule) and compares
// every answer with DuckDB's over all files; it also checks that rows
// really were left unread.
func TestPartialScanAgrees(t *testing.T) {
	fx := newPartialFixture(t, 1)
	ctx := context.Background()
	oracle := fx.oracle(t)
	preds := []string{
		"id = 1234", "id = 0", "id = 15999", "id BETWEEN 2000 AND 2100", "id IN (5, 3001, 7777, 12000)",
		"id < 10", "id >= 14000", "ts >= '1970-01-12 13:46:40' AND ts < '1970-01-12 13:50:00'",
		"ts < '1970-01-01 00:01:00'", "d > 100", "d < -99.5", "d = 0", "d = -0.0", "d > 'inf'::DOUBLE", "isnan(d)",
		"d IS NULL AND id < 3000", "s = 'k00100'", "s > 'k00600'", "s IS NULL", "n = 2147483647", "n = -2147483648",
		"n IS NULL AND id > 9000", "u > 9223372036854775807", "u = 18446744073709551615", "f > 1e38", "f = 0", "isnan(f) AND id < 5000",
		"b AND id < 300", "dt > DATE '9000-01-01'", "dt < DATE '0001-01-02'", "tz >= TIMESTAMPTZ '9999-12-31 23:59:59+00'",
		"ms < TIMESTAMP '0001-01-01 00:00:01'", "sm = -32768", "sm = 32767 AND id BETWEEN 100 AND 900", "id > 3000 AND id < 3005 OR id = 9", "NOT (id <> 42)", "id % 1000 = 7 AND id < 4000",
	}
	shapes := []string{
		"SELECT count(*), sum(id), min(ts), max(s), count(d), sum(n) FROM t WHERE %s",
		"SELECT * FROM t WHERE %s ORDER BY id",
		"SELECT id, 'x' || CAST(d AS VARCHAR), 'x' || CAST(f AS VARCHAR), 'x' || CAST(ms AS VARCHAR) FROM t WHERE %s ORDER BY id",
		"SELECT id, ts, d, s, n FROM t WHERE %s ORDER BY id",
		"SELECT s, count(*) FROM t WHERE %s GROUP BY s ORDER BY s LIMIT 5",
		"SELECT a.id, b.n FROM t a JOIN t b ON a.id = b.id + 1 WHERE a.%s ORDER BY 1",
	}
	var partial, skipped, decoded, handed int64
	byHow := map[string]int{}
	for _, p := range preds {
		for _, sh := range shapes {
			q := fmt.Sprintf(sh, p)
			if strings.Contains(sh, "a.%s") {
				if strings.Contains(p, " OR ") || strings.HasPrefix(p, "NOT") || strings.Contains(p, "AND") || strings.HasPrefix(p, "isnan") {
					continue
				}
			}
			want := runOracle(ctx, oracle, q)
			if want.err != nil {
				t.Fatalf("%s: oracle: %v", q, want.err)
			}
			for _, mode := range []PartialMode{PartialForce, PartialForceRows, PartialAuto, PartialOff} {
				got, res := runEngine(ctx, fx.eng, q, QueryOptions{Snapshot: catalog.Latest, Partial: mode, NoMetadataAnswers: true})
				if got.err != nil {
					t.Fatalf("%s (mode %d): %v", q, mode, got.err)
				}
				if !sameAnswer(got, want, strings.Contains(q, "ORDER BY")) {
					t.Errorf("%s (mode %d):\n  rocklake %s\n  DuckDB   %s\n  reads %+v", q, mode, got, want, res.Tables[0].Reads)
				}
				for _, tp := range res.Tables {
					for _, rd := range tp.Reads {
						byHow[rd.How]++
						if rd.How == ReadPages {
							decoded += rd.Rows
							handed += rd.Handed
						}
						if rd.How != ReadWhole {
							if mode == PartialOff {
								t.Errorf("%s: partial scan off, but %s read as row ranges", q, rd.Path)
							}
							partial++
							skipped += rd.FileRows - rd.Rows
						}
					}
				}
			}
		}
	}
	if partial == 0 || skipped == 0 || byHow[ReadPages] == 0 || byHow[ReadRowRanges] == 0 || handed >= decoded {
		t.Fatalf("no file read in part (%d, %v), no row left unread (%d) or none dropped by the row filter (%d of %d handed over)",
			partial, byHow, skipped, handed, decoded)
	}
	t.Logf("%d files read in part (%v), %d rows of theirs not read; page path: %d of %d rows decoded handed over", partial, byHow, skipped, handed, decoded)
}

// TestPartialCostRule checks the rule's choices: a point lookup reads its
// file in part; a query keeping most rows reads files whole.
func TestPartialCostRule(t *testing.T) {
	fx := newPartialFixture(t, 2)
	ctx := context.Background()
	// Row groups of 500 to 1,100 rows are below the page index's default
	// threshold: the planner is told to read it.
	pages := prune.Options{PageMinRows: -1, IndexMinRows: -1}
	res, err := fx.eng.Query(ctx, "SELECT * FROM t WHERE id = 2500", QueryOptions{Snapshot: catalog.Latest, Prune: pages})
	if err != nil {
		t.Fatal(err)
	}
	reads := res.Tables[0].Reads
	if len(reads) != 1 || reads[0].How != ReadPages || reads[0].Rows >= 500 || reads[0].Handed != 1 {
		t.Fatalf("point lookup: want one file's pages read and one row handed over, got %+v", reads)
	}
	if d := res.Phases[len(res.Phases)-2]; d.Name != "bind" || !strings.Contains(d.Detail, "read in part: 1 of 1 files") {
		t.Errorf("bind phase: %+v", d)
	}
	// Forced, the page index of every row group is read: the lookup reads
	// fewer rows than the smallest row group (500) holds.
	res, err = fx.eng.Query(ctx, "SELECT * FROM t WHERE id = 2500", QueryOptions{Snapshot: catalog.Latest, Partial: PartialForce})
	if err != nil {
		t.Fatal(err)
	}
	if reads := res.Tables[0].Reads; len(reads) != 1 || reads[0].How != ReadPages || reads[0].Rows >= 500 || !res.Tables[0].Plan.Pages.Evaluated {
		t.Fatalf("forced point lookup: want one page range read, got %+v (pages %+v)", reads, res.Tables[0].Plan.Pages)
	}
	// Without page ranges, a lookup keeps a whole row group: a third of
	// this file, too many rows for the page path, and DuckDB would read
	// as much given the range: the whole file.
	res, err = fx.eng.Query(ctx, "SELECT * FROM t WHERE id = 2500", QueryOptions{Snapshot: catalog.Latest})
	if err != nil {
		t.Fatal(err)
	}
	if reads := res.Tables[0].Reads; len(reads) != 1 || reads[0].How != ReadWhole {
		t.Fatalf("point lookup without page ranges: want the file whole, got %+v", reads)
	}
	res, err = fx.eng.Query(ctx, "SELECT count(*) FROM t WHERE id > 100", QueryOptions{Snapshot: catalog.Latest, NoMetadataAnswers: true, Prune: pages})
	if err != nil {
		t.Fatal(err)
	}
	for _, rd := range res.Tables[0].Reads {
		if rd.How != ReadWhole {
			t.Errorf("broad query: %s read %s (%s)", rd.Path, rd.How, rd.Why)
		}
	}
}

// TestPartialSandboxed: in a sandboxed engine DuckDB reads every data
// file, so that allowed_directories holds for all of them; the page path
// (arrow-go reading the file itself) is never taken. A table whose files
// lie outside the sandbox's directories stays unreadable, forced partial
// scan or not; one inside is read by row ranges.
func TestPartialSandboxed(t *testing.T) {
	fx := newPartialFixture(t, 3)
	ctx := context.Background()
	outside, err := NewWithOptions(fx.cat, Options{Sandbox: &Sandbox{Dirs: []string{t.TempDir()}}})
	if err != nil {
		t.Fatal(err)
	}
	defer outside.Close()
	for _, mode := range []PartialMode{PartialForce, PartialAuto} {
		res, err := outside.Query(ctx, "SELECT * FROM t WHERE id = 2500", QueryOptions{Snapshot: catalog.Latest, Partial: mode,
			Prune: prune.Options{PageMinRows: -1, IndexMinRows: -1}})
		if err == nil {
			t.Fatalf("mode %d: a file outside the sandbox was read: %v", mode, res.Rows)
		}
	}
	inside, err := NewWithOptions(fx.cat, Options{Sandbox: &Sandbox{Dirs: []string{filepath.Dir(fx.files[0])}}})
	if err != nil {
		t.Fatal(err)
	}
	defer inside.Close()
	res, err := inside.Query(ctx, "SELECT id FROM t WHERE id = 2500", QueryOptions{Snapshot: catalog.Latest, Partial: PartialForce})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 1 || *res.Rows[0][0] != "2500" {
		t.Fatalf("rows %v", res.Rows)
	}
	if reads := res.Tables[0].Reads; len(reads) != 1 || reads[0].How != ReadRowRanges || !strings.Contains(reads[0].Why, "sandboxed") {
		t.Fatalf("reads %+v", reads)
	}
}

// TestPartialRandomPredicates compares random predicates over every
// column of the partial fixture (literals at the columns' extremes, NaN,
// ±0, NULL tests; AND, OR, NOT) through the forced page path — the row
// filter deciding on each decoded row — with DuckDB over all files.
func TestPartialRandomPredicates(t *testing.T) {
	fx := newPartialFixture(t, 4)
	ctx := context.Background()
	oracle := fx.oracle(t)
	r := rand.New(rand.NewPCG(4, 4))
	pred := partialPredicates(r)
	var pages, handed, decoded int64
	for range 400 {
		q := fmt.Sprintf("SELECT count(*), sum(id), min(d), max(f), count(s), max(dt), min(tz) FROM t WHERE %s", pred())
		if r.IntN(2) == 0 {
			q = fmt.Sprintf("SELECT id, 'x' || CAST(d AS VARCHAR), 'x' || CAST(f AS VARCHAR), u, b, dt, tz, ms, sm, n, s, ts FROM t WHERE %s ORDER BY id", pred())
		}
		want := runOracle(ctx, oracle, q)
		got, res := runEngine(ctx, fx.eng, q, QueryOptions{Snapshot: catalog.Latest, Partial: PartialForce, NoMetadataAnswers: true})
		if (got.err == nil) != (want.err == nil) || (got.err == nil && !sameAnswer(got, want, strings.Contains(q, "ORDER BY"))) {
			t.Errorf("%s:\n  rocklake %s\n  DuckDB   %s", q, got, want)
			continue
		}
		if res != nil {
			for _, rd := range res.Tables[0].Reads {
				if rd.How == ReadPages {
					pages++
					decoded += rd.Rows
					handed += rd.Handed
				}
			}
		}
	}
	if pages == 0 || handed >= decoded {
		t.Fatalf("page path taken %d times, %d of %d rows decoded handed over", pages, handed, decoded)
	}
	t.Logf("page path taken %d times, %d of %d rows decoded handed over", pages, handed, decoded)
}

// The page path reads columns by the table's names, so a file registered
// before the table changed is never read by it: after `x` and `y` were
// dropped and added again, the old file's `x` and `y` hold the dropped
// columns' values (the new ones read as their defaults), and forcing the
// partial scan must still read it through the column mapping.
func TestPartialScanOfAlteredTable(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "old.parquet")
	var ids, xs, ys []*types.Value
	for i := range 4000 {
		id, x, y := types.IntValue(int64(i)), types.IntValue(int64(1000+i)), types.IntValue(int64(-i))
		ids, xs, ys = append(ids, &id), append(xs, &x), append(ys, &y)
	}
	i64 := types.MustParseType("int64")
	cols := []pqwrite.Column{{Name: "id", Type: i64, Values: ids}, {Name: "x", Type: i64, Values: xs}, {Name: "y", Type: i64, Values: ys}}
	if err := pqwrite.Write(p, cols, pqwrite.Options{RowGroupRows: 2000, PageBytes: 1024, PageIndex: true}); err != nil {
		t.Fatal(err)
	}
	c, _ := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	if _, err := ingest.Add(c, "t", []string{p}, ingest.Options{Create: true}); err != nil {
		t.Fatal(err)
	}
	for _, a := range []catalog.Alteration{
		{Kind: catalog.DropColumn, Column: "x"},
		{Kind: catalog.AddColumn, Column: "x", Type: "int64", Default: stats.Known("7")},
		{Kind: catalog.DropColumn, Column: "y"},
		{Kind: catalog.AddColumn, Column: "y", Type: "int64"},
	} {
		tx, err := c.Begin()
		if err != nil {
			t.Fatal(err)
		}
		tx.AlterTable("t", a)
		if _, err := tx.Commit(); err != nil {
			t.Fatalf("%s: %v", a, err)
		}
	}
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	const q = "SELECT id, x, y FROM t WHERE id = 2500 OR id = 17"
	const want = "17,7,NULL;2500,7,NULL"
	for _, mode := range []PartialMode{PartialAuto, PartialForce, PartialForceRows, PartialOff} {
		res, err := e.Query(context.Background(), q+" ORDER BY id", QueryOptions{Snapshot: catalog.Latest, Partial: mode})
		if err != nil {
			t.Fatalf("partial %v: %v", mode, err)
		}
		var rows []string
		for _, row := range res.Rows {
			var vals []string
			for _, v := range row {
				if v == nil {
					vals = append(vals, "NULL")
				} else {
					vals = append(vals, *v)
				}
			}
			rows = append(rows, strings.Join(vals, ","))
		}
		if got := strings.Join(rows, ";"); got != want {
			t.Errorf("partial %v: %s, want %s (reads %+v)", mode, got, want, res.Tables[0].Reads)
		}
	}
}

// partialPredicates makes random WHERE clauses over newPartialFixture's
// columns: terms of every comparison on literals at the columns' edges
// (NULL, NaN, ±0, infinities, extremes), joined by AND and OR, sometimes
// negated, and in two of three behind a range on the sorted id.
func partialPredicates(r *rand.Rand) func() string {
	lits := map[string][]string{
		"id": {"0", "1", "777", "3000", "9999", "15999", "16000", "-1"},
		"ts": {"TIMESTAMP '1970-01-01 00:00:00'", "TIMESTAMP '1970-01-12 13:46:40.5'", "TIMESTAMP '1970-01-24 03:33:20'", "TIMESTAMP '1970-02-04 17:20:00'"},
		"d":  {"'nan'::DOUBLE", "'-0.0'::DOUBLE", "0.0", "'inf'::DOUBLE", "'-inf'::DOUBLE", "-100.0", "-99.9", "50.5", "1e300"},
		"s":  {"'k00000'", "'k00100'", "'k00100x'", "'k006'", "''", "'l'"},
		"n":  {"-2147483648", "2147483647", "0", "-500", "499", "17"},
		"u":  {"0", "1", "99", "9223372036854775808", "18446744073709551615", "18446744073709551614"},
		"f":  {"'nan'::FLOAT", "'-0.0'::FLOAT", "0.0::FLOAT", "'-inf'::FLOAT", "3.4028235e38::FLOAT", "-24.75::FLOAT", "12.5::FLOAT"},
		"b":  {"true", "false"},
		"dt": {"DATE '1970-01-01'", "DATE '0001-01-01'", "DATE '9999-12-31'", "DATE '1975-06-30'", "DATE '1970-01-05'"},
		"tz": {"TIMESTAMPTZ '1970-01-01 00:00:00+00'", "TIMESTAMPTZ '0001-01-01 00:00:00+00'", "TIMESTAMPTZ '9999-12-31 23:59:59.999999+00'", "TIMESTAMPTZ '1970-01-01 01:00:00+01'"},
		"ms": {"TIMESTAMP '1970-01-01 00:00:00'", "TIMESTAMP '0001-01-01 00:00:00'", "TIMESTAMP '9999-12-31 23:59:59.999'", "TIMESTAMP '1970-01-03 00:00:00.001'"},
		"sm": {"-32768", "32767", "0", "50", "99", "100"},
	}
	names := []string{"id", "ts", "d", "s", "n", "u", "f", "b", "dt", "tz", "ms", "sm"}
	term := func() string {
		c := names[r.IntN(len(names))]
		l := lits[c]
		pick := func() string { return l[r.IntN(len(l))] }
		switch r.IntN(9) {
		case 0:
			return c + " IS NULL"
		case 1:
			return c + " IS NOT NULL"
		case 2:
			return fmt.Sprintf("%s BETWEEN %s AND %s", c, pick(), pick())
		case 3:
			return fmt.Sprintf("%s IN (%s, %s)", c, pick(), pick())
		}
		ops := []string{"=", "<>", "<", "<=", ">", ">="}
		return fmt.Sprintf("%s %s %s", c, ops[r.IntN(len(ops))], pick())
	}
	return func() string {
		p := term()
		for range r.IntN(3) {
			if r.IntN(2) == 0 {
				p = "(" + p + ") AND (" + term() + ")"
			} else {
				p = "(" + p + ") OR (" + term() + ")"
			}
		}
		if r.IntN(5) == 0 {
			p = "NOT (" + p + ")"
		}
		// A range on id keeps the plan to a part of the files, so that the
		// page path takes it.
		if r.IntN(3) != 0 {
			lo := r.IntN(15000)
			p = fmt.Sprintf("id BETWEEN %d AND %d AND (%s)", lo, lo+r.IntN(400), p)
		}
		return p
	}
}

var splitN = flag.Int("split.n", 60, "queries TestSplitAggregatesAgree runs, each in four partial-scan modes")

// TestSplitAggregatesAgree checks count(*), min and max split between
// statistics and DuckDB (split.go) against DuckDB over all files: random WHERE clauses, most
// behind a wide range on the sorted id (so that whole row groups and
// pages match in full), in every partial-scan mode, read whole by the
// result and streamed. It fails if no count was split, or if no proven
// row came from a file DuckDB read in part.
func TestSplitAggregatesAgree(t *testing.T) {
	// Small pages: a file's kept ranges outnumber what the row-range SQL
	// keeps apart (maxRanges) under many ranges of id.
	fx := newPartialFixtureWith(t, 5, 256, 12000)
	ctx := context.Background()
	oracle := fx.oracle(t)
	var total int64
	if err := oracle.QueryRow("SELECT count(*) FROM t").Scan(&total); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 5))
	pred := partialPredicates(r)
	modes := []PartialMode{PartialAuto, PartialForce, PartialForceRows, PartialOff}
	split := map[PartialMode]int{}
	var inPart, boundsInPart int // splits with proven rows of files read in part; of them, with min or max
	for i := range *splitN {
		w := pred()
		switch lo := r.Int64N(total); r.IntN(4) {
		case 0:
			w = fmt.Sprintf("id BETWEEN %d AND %d", lo, lo+r.Int64N(total/8))
		case 1:
			w = fmt.Sprintf("id >= %d", lo) // whole files too
		case 2:
			w = fmt.Sprintf("id BETWEEN %d AND %d AND (%s)", lo, lo+r.Int64N(total/8), pred())
		}
		if i%10 == 9 {
			// Many ranges of id: each file keeps more row ranges than the
			// row-range SQL keeps apart (maxRanges), with pages inside
			// them matching in full.
			var or []string
			for lo := r.Int64N(200); lo < total; lo += 150 + r.Int64N(100) {
				or = append(or, fmt.Sprintf("id BETWEEN %d AND %d", lo, lo+100+r.Int64N(50)))
			}
			w = strings.Join(or, " OR ")
		}
		q := "SELECT count(*) FROM t WHERE " + w
		switch r.IntN(4) {
		case 0:
			q = "SELECT count(*) AS a, count(*) AS b FROM t WHERE " + w
		case 1, 2:
			var items []string
			for range 1 + r.IntN(3) {
				c := []string{"id", "ts", "s", "n", "u", "dt", "tz", "ms", "sm", "d", "b", "t.id", "v", "v", "t.v"}[r.IntN(15)]
				switch r.IntN(3) {
				case 0:
					items = append(items, "count(*)")
				case 1:
					items = append(items, "min("+c+")")
				default:
					items = append(items, "max("+c+")")
				}
			}
			q = "SELECT " + strings.Join(items, ", ") + " FROM t WHERE " + w
		}
		want := runOracle(ctx, oracle, q)
		for _, mode := range modes {
			got, res := runEngine(ctx, fx.eng, q, QueryOptions{Snapshot: catalog.Latest, Partial: mode})
			if (got.err == nil) != (want.err == nil) || (got.err == nil && !sameAnswer(got, want, false)) {
				t.Errorf("query %d, partial %v: %s:\n  rocklake %s\n  DuckDB   %s", i, mode, q, got, want)
				continue
			}
			if res == nil || res.StatsRows == 0 {
				continue
			}
			split[mode]++
			for _, rd := range res.Tables[0].Reads {
				if rd.How != ReadWhole {
					inPart++
					if strings.Contains(q, "min(") || strings.Contains(q, "max(") {
						boundsInPart++
					}
					break
				}
			}
			if r.IntN(4) == 0 {
				// Streamed, the answer is the same, with its type.
				rows, err := fx.eng.QueryRows(ctx, q, QueryOptions{Snapshot: catalog.Latest, Partial: mode}, RowsOptions{})
				if err != nil {
					t.Fatalf("%s: %v", q, err)
				}
				var vals []*string
				for rows.Next() {
					for _, v := range rows.Values() {
						text := fmt.Sprint(v)
						vals = append(vals, &text)
					}
				}
				if err := rows.Err(); err != nil {
					t.Fatal(err)
				}
				rows.Close()
				if wqRowText(vals) != got.rows[0] {
					t.Errorf("%s streamed: %v (%v), want %v", q, wqRowText(vals), rows.Columns(), got.rows[0])
				}
			}
		}
	}
	// Ranges of whole row groups within one file: the file's kept rows are
	// all proven, and none is read.
	var firstID int64
	for _, f := range fx.files {
		rows, err := oracle.Query("SELECT row_group_num_rows FROM parquet_metadata(?) WHERE path_in_schema = 'id' ORDER BY row_group_id", f)
		if err != nil {
			t.Fatal(err)
		}
		var starts []int64
		at := firstID
		for rows.Next() {
			var n int64
			if err := rows.Scan(&n); err != nil {
				t.Fatal(err)
			}
			starts = append(starts, at)
			at += n
		}
		rows.Close()
		starts = append(starts, at)
		if len(starts) > 3 {
			q := fmt.Sprintf("SELECT count(*), min(v), max(v), max(ts) FROM t WHERE id BETWEEN %d AND %d", starts[1], starts[3]-1)
			want := runOracle(ctx, oracle, q)
			got, res := runEngine(ctx, fx.eng, q, QueryOptions{Snapshot: catalog.Latest})
			if !sameAnswer(got, want, false) || res.StatsRows != starts[3]-starts[1] || len(res.Tables[0].Reads) != 0 {
				t.Errorf("%s:\n  rocklake %s (%d rows from statistics, %d files read)\n  DuckDB   %s", q, got, res.StatsRows, len(res.Tables[0].Reads), want)
			}
		}
		firstID = at
	}
	t.Logf("aggregates split, by mode (auto, pages, rows, off): %d %d %d %d; %d with proven rows of files read in part, %d of them with min or max",
		split[PartialAuto], split[PartialForce], split[PartialForceRows], split[PartialOff], inPart, boundsInPart)
	for _, mode := range modes {
		if split[mode] == 0 {
			t.Errorf("no aggregate was split in partial mode %v", mode)
		}
	}
	if inPart == 0 || boundsInPart == 0 {
		t.Errorf("no split aggregate (%d) or no split min or max (%d) read a file in part", inPart, boundsInPart)
	}
}
