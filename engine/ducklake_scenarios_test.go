package engine

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/prune"
)

// The scenarios of DuckLake's test/sql/stats filter_pushdown_float_nan,
// complex_filter_pushdown and filter_stress tests, rebuilt on rocklake:
// files written by DuckDB, registered, planned; the rows DuckDB returns
// from the kept files alone must equal those it returns from all files,
// and the number of files read is what the statistics allow.

type scenarioQuery struct {
	pred      string
	wantFiles int // -1: not asserted
}

// runScenario registers files in a fresh catalog and checks each query.
func runScenario(t *testing.T, db *sql.DB, name string, files []string, queries []scenarioQuery) {
	t.Helper()
	c, _ := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	if _, err := ingest.Add(c, "t", files, ingest.Options{Create: true}); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	r, _ := c.Read(catalog.Latest)
	defer r.Close()
	list := func(paths []string) string {
		q := make([]string, len(paths))
		for i, p := range paths {
			q[i] = "'" + p + "'"
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	for _, q := range queries {
		p, err := prune.PlanTable(r, "t", q.pred, prune.Options{IndexMinRows: -1})
		if err != nil {
			t.Fatalf("%s: plan %q: %v", name, q.pred, err)
		}
		var all, kept int64
		if err := db.QueryRow(fmt.Sprintf("SELECT count(*) FROM read_parquet(%s) WHERE %s", list(files), q.pred)).Scan(&all); err != nil {
			t.Fatalf("%s: %q: %v", name, q.pred, err)
		}
		var keptPaths []string
		for _, kf := range p.KeptFiles {
			keptPaths = append(keptPaths, kf.Path)
		}
		if len(keptPaths) > 0 {
			if err := db.QueryRow(fmt.Sprintf("SELECT count(*) FROM read_parquet(%s) WHERE %s", list(keptPaths), q.pred)).Scan(&kept); err != nil {
				t.Fatalf("%s: %q: %v", name, q.pred, err)
			}
		}
		if kept != all {
			t.Fatalf("%s: %q: %d rows from the kept files, %d from all (plan %s)", name, q.pred, kept, all, p)
		}
		if q.wantFiles >= 0 && p.Files.Kept != q.wantFiles {
			t.Errorf("%s: %q: %d files read, want %d (bound %s)", name, q.pred, p.Files.Kept, q.wantFiles, p.Bound)
		}
	}
}

func TestDuckLakeScenarioFloatNaN(t *testing.T) {
	db, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, typ := range []string{"FLOAT", "DOUBLE"} {
		dir := t.TempDir()
		var files []string
		for name, rows := range map[string]string{
			"one": "(1)", "twentyfive": "(25)", "null": "(NULL)",
			// DuckDB writes no bounds for a chunk holding a NaN.
			"mixed":   "(1), ('NaN'), (-'NaN'::" + typ + "), (NULL)",
			"one_nan": "(1.0::DOUBLE), ('NaN')",
		} {
			p := filepath.Join(dir, name+".parquet")
			q := fmt.Sprintf("COPY (SELECT x::%s AS x FROM (VALUES %s) v(x)) TO '%s' (FORMAT parquet)", typ, rows, p)
			if _, err := db.Exec(q); err != nil {
				t.Fatal(err)
			}
			files = append(files, p)
		}
		runScenario(t, db, "float_nan "+typ, files, []scenarioQuery{
			// The file holding 1.0 and a NaN must survive x <> 1.0.
			{"x <> 1.0", 3},
			// An upper bound excludes NaN: the files with bounds prove it.
			{"x > 20 AND x < 30", 3},
			// A lower bound alone accepts NaN.
			{"x > 20", 3},
			{"x > 20 OR x < 0", 3},
			{"(x = 'NaN'::" + typ + " OR x = 25) AND x < 30", 3},
			{"x IN ('NaN'::" + typ + ", 25)", 3},
			{"x IN ('NaN'::" + typ + ", 25) AND x < 30", 3},
			// The all-NULL file and the NaN-free files drop out.
			{"x = 'NaN'::" + typ, 2},
			{"x = 'NaN'::" + typ + " OR x IS NULL", 3},
			// signbit is opaque: nothing with a value may be dropped.
			{"x > 20 AND signbit(x)", 3},
			{"isnan(x)", 2},
		})
	}
}

func TestDuckLakeScenarioComplexPushdown(t *testing.T) {
	db, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	dir := t.TempDir()
	var files []string
	for cat := 1; cat <= 3; cat++ {
		p := filepath.Join(dir, fmt.Sprintf("c%d.parquet", cat))
		q := fmt.Sprintf("COPY (SELECT i::INTEGER AS id, %d::INTEGER AS category, CASE WHEN %d = 2 THEN NULL ELSE i::INTEGER END AS v FROM range(%d, %d) r(i)) TO '%s' (FORMAT parquet)",
			cat, cat, (cat-1)*100+1, cat*100+1, p)
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	runScenario(t, db, "complex", files, []scenarioQuery{
		{"id = 50 OR category = 3", 2},
		{"(id <= 100 AND category = 3) OR (id >= 201 AND category = 1)", 0},
		{"id = 50 OR (category = 2 AND category = 3)", 1},
		{"(id < 50 OR category = 3) AND (id > 20 OR category = 2)", 2},
		{"v IS NULL OR id = 250", 2},
		{"id = 50 OR category::VARCHAR LIKE '%9%'", 3},
	})
}

func TestDuckLakeScenarioFilterStress(t *testing.T) {
	db, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	dir := t.TempDir()
	// 110,000 rows, one 2,048-row file each (54 files).
	var files []string
	for f := 0; f*2048 < 110000; f++ {
		p := filepath.Join(dir, fmt.Sprintf("e%02d.parquet", f))
		q := fmt.Sprintf(`COPY (SELECT i::INTEGER AS i, (i %% 10)::INTEGER AS g,
			CASE WHEN i %% 7 = 0 THEN NULL ELSE i::INTEGER END AS maybe_null,
			DATE '2020-01-01' + i::INTEGER AS d, printf('%%06d', i) AS s
			FROM range(%d, %d) r(i)) TO '%s' (FORMAT parquet)`, f*2048, min((f+1)*2048, 110000), p)
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	runScenario(t, db, "filter_stress", files, []scenarioQuery{
		{"1 = 1", 54},
		{"i = 42", 1},
		{"d < DATE '2020-01-10'", 1},
		{"s = '000042'", 1},
		{"maybe_null IS NULL", 54},
		{"(i IN (5, 7, 9, 42) OR (g = 3 AND i > 100) OR (i BETWEEN 10 AND 20)) AND d < DATE '2020-06-01'", 1},
		{"i >= 50 AND i <= 60 AND i > 55 AND i < 60", 1},
		{"maybe_null IS NULL OR maybe_null >= 109900", 54},
		{"NOT (s < '000050') AND (s LIKE '0001%' OR s LIKE '0000%') AND (i % 2 = 0)", 1},
		{"d >= DATE '2020-03-01' AND d < DATE '2020-03-02'", 1},
		{"i > 109999", 0},
	})
}
