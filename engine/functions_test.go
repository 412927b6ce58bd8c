package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine/duckast"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/kv/kvtest"
)

// Every function the linked DuckDB has is classified in functions.tsv with
// the kinds DuckDB gives it, and nothing else is: a DuckDB upgrade that
// brings a function fails here until someone decides whether clients may
// call it. An allowed macro must call only allowed functions, since the
// check reads the query before DuckDB expands macros.
func TestFunctionCensus(t *testing.T) {
	db, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT function_name, function_type, any_value(macro_definition)
		FROM duckdb_functions() GROUP BY ALL ORDER BY ALL`)
	if err != nil {
		t.Fatal(err)
	}
	have := map[string][]string{}
	macros := map[string]string{}
	for rows.Next() {
		var name, kind string
		var def *string
		if err := rows.Scan(&name, &kind, &def); err != nil {
			t.Fatal(err)
		}
		have[name] = append(have[name], kind)
		if def != nil {
			macros[name+"\x00"+kind] = *def
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	census := functionCensus()
	if len(census) < 900 {
		t.Fatalf("functions.tsv read as %d functions", len(census))
	}
	for name, kinds := range have {
		slices.Sort(kinds)
		v, ok := census[name]
		switch {
		case !ok:
			t.Errorf("DuckDB has %s (%s), which functions.tsv does not classify", name, strings.Join(kinds, ","))
		case !slices.Equal(v.kinds, kinds):
			t.Errorf("%s: functions.tsv says kinds %v, DuckDB %v", name, v.kinds, kinds)
		}
	}
	for name, v := range census {
		if _, ok := have[name]; !ok {
			t.Errorf("functions.tsv classifies %s, which DuckDB does not have", name)
		}
		if !v.allow && v.why == "" {
			t.Errorf("%s is refused without a reason", name)
		}
	}
	e := &Engine{duck: &duck{}}
	if e.parse, err = db.Prepare("SELECT json_serialize_sql(?::VARCHAR)::VARCHAR"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for key, def := range macros {
		name, kind, _ := strings.Cut(key, "\x00")
		if !census[name].allow {
			continue
		}
		q := def
		if kind == "macro" {
			q = "SELECT " + def
		}
		tree, err := e.serialize(ctx, q)
		if errors.Is(err, duckast.ErrNotSerializable) {
			err = checkFunctionWords(q)
		} else if err == nil {
			err = e.checkFunctions(ctx, tree, 0)
		}
		if err != nil {
			t.Errorf("allowed macro %s (%s) calls what clients may not: %v\n%s", name, kind, err, def)
		}
	}
}

// sandboxFixture is a sandboxed engine over one table t(x) of 1, 2, 3, with
// a CSV, a JSON and a text file beside the table's file in the readable
// directory.
type sandboxFixture struct {
	e                         *Engine
	data, parquet, csv, json_ string
}

func newSandboxFixture(t *testing.T) *sandboxFixture {
	t.Helper()
	data := t.TempDir()
	fx := &sandboxFixture{data: data, parquet: filepath.Join(data, "a.parquet"), csv: filepath.Join(data, "a.csv"), json_: filepath.Join(data, "a.json")}
	writeInts(t, fx.parquet, 1, 2, 3)
	for path, body := range map[string]string{fx.csv: "a,b\n1,x\n2,y\n", fx.json_: `{"a": 1}` + "\n" + `{"a": 2}` + "\n"} {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, _ := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	if _, err := ingest.Add(c, "t", []string{fx.parquet}, ingest.Options{Create: true}); err != nil {
		t.Fatal(err)
	}
	e, err := NewWithOptions(c, Options{Sandbox: &Sandbox{Dirs: []string{data}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	fx.e = e
	return fx
}

// state is what every client shares: the database's settings, its logs,
// and the answers of a few queries a second client runs. A client's
// statement that changes any of it changed what others see.
func (fx *sandboxFixture) state(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	for _, q := range []string{
		"SELECT name, value FROM duckdb_settings() ORDER BY name",
		"SELECT count(*) FROM duckdb_logs()",
		"SELECT database_name, path FROM duckdb_databases() ORDER BY ALL",
	} {
		rows, err := fx.e.DB().QueryContext(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintln(&b, vals...)
		}
		rows.Close()
	}
	for _, q := range []string{"SELECT sum(x) FROM t", "SELECT count(*), max(x) FROM t WHERE x > 1", "SELECT x FROM t ORDER BY x"} {
		res, err := fx.e.Query(ctx, q, QueryOptions{Snapshot: catalog.Latest})
		if err != nil {
			t.Fatalf("the second client's %s: %v", q, err)
		}
		fmt.Fprintln(&b, q, res.Columns, rowsText(res.Rows))
	}
	entries, _ := os.ReadDir(fx.data)
	for _, en := range entries {
		fmt.Fprintln(&b, en.Name())
	}
	return b.String()
}

func rowsText(rows [][]*string) string {
	var b strings.Builder
	for _, r := range rows {
		for _, v := range r {
			if v == nil {
				b.WriteString("NULL|")
			} else {
				b.WriteString(*v + "|")
			}
		}
		b.WriteString(";")
	}
	return b.String()
}

// Every refused function is refused by name before DuckDB sees the
// statement, however the query spells or hides the call, and nothing any
// of them would do happens: settings, logs, files and other clients'
// answers stay as they were.
func TestClientFunctionsRefused(t *testing.T) {
	fx := newSandboxFixture(t)
	ctx := context.Background()
	before := fx.state(t)
	logDir := filepath.Join(fx.data, "log")
	calls := func(name string, kinds []string) []string {
		var out []string
		if slices.Contains(kinds, "table") || slices.Contains(kinds, "table_macro") {
			out = append(out,
				"SELECT * FROM "+name+"()",
				"SELECT * FROM main."+name+"()",
				"SELECT * FROM system.main."+name+"()",
				`SELECT * FROM "`+strings.ToUpper(name)+`"()`,
				"SELECT * FROM query('SELECT * FROM "+name+"()')",
				"SELECT * FROM query('SELECT * FROM query(''FROM "+name+"()'')')",
				"SELECT (SELECT count(*) FROM "+name+"()) AS n FROM t",
			)
		}
		if slices.Contains(kinds, "scalar") || slices.Contains(kinds, "macro") || slices.Contains(kinds, "aggregate") {
			out = append(out,
				"SELECT "+name+"(x) FROM t",
				"SELECT x."+name+"() FROM t",
				"SELECT "+strings.ToUpper(name)+"('a')",
				"SELECT * FROM t WHERE "+name+"(x) IS NULL",
				"SELECT list_transform([1], v -> "+name+"(v))",
			)
		}
		return out
	}
	n := 0
	for name, v := range functionCensus() {
		if v.allow || slices.Equal(v.kinds, []string{"pragma"}) {
			continue
		}
		for _, q := range calls(name, v.kinds) {
			n++
			_, err := fx.e.Query(ctx, q, QueryOptions{Snapshot: catalog.Latest})
			if !errors.Is(err, ErrFunctionRefused) {
				t.Errorf("%s: %v, want refused", q, err)
			} else if !strings.Contains(err.Error(), "Permission Error") {
				t.Errorf("%s: %v does not say Permission Error", q, err)
			}
		}
	}
	// The statements the census exists for, with the arguments that did
	// harm, and a query() whose text is not a constant.
	for _, q := range []string{
		"SELECT * FROM enable_logging(storage='file', storage_path='" + logDir + "')",
		"SELECT * FROM enable_profiling()",
		"SELECT * FROM query('SELECT 1; SELECT * FROM enable_logging()')",
		"SELECT * FROM query('SELECT * FROM ' || 'enable_logging()')",
		"SELECT * FROM query(concat('FROM enable_', 'logging()'))",
		"SELECT * FROM no_such_function()",
	} {
		n++
		_, err := fx.e.Query(ctx, q, QueryOptions{Snapshot: catalog.Latest})
		if err == nil {
			t.Errorf("%s: answered", q)
		}
	}
	if after := fx.state(t); after != before {
		t.Errorf("refused statements changed what other clients see:\nbefore\n%s\nafter\n%s", before, after)
	}
	if _, err := os.Stat(logDir); err == nil {
		t.Errorf("%s was written", logDir)
	}
	t.Logf("%d refused calls", n)
}

// allowedTableCalls calls each table function clients may call, reading
// the fixture's files where it reads files.
func allowedTableCalls(fx *sandboxFixture) map[string]string {
	q := func(s string) string { return "'" + s + "'" }
	return map[string]string{
		"duckdb_coordinate_systems": "SELECT count(*) FROM duckdb_coordinate_systems()",
		"duckdb_functions":          "SELECT count(*) FROM duckdb_functions()",
		"duckdb_keywords":           "SELECT count(*) FROM duckdb_keywords()",
		"duckdb_optimizers":         "SELECT count(*) FROM duckdb_optimizers()",
		"duckdb_types":              "SELECT count(*) FROM duckdb_types()",
		"generate_series":           "SELECT * FROM generate_series(1, 3)",
		"glob":                      "SELECT count(*) FROM glob(" + q(fx.data+"/*") + ")",
		"histogram":                 "SELECT * FROM histogram(t, x)",
		"histogram_values":          "SELECT * FROM histogram_values(t, x)",
		"icu_calendar_names":        "SELECT count(*) FROM icu_calendar_names()",
		"json_each":                 `SELECT * FROM json_each('{"a": 1}')`,
		"json_tree":                 `SELECT count(*) FROM json_tree('{"a": [1, 2]}')`,
		"parquet_bloom_probe":       "SELECT count(*) FROM parquet_bloom_probe(" + q(fx.parquet) + ", 'x', 2)",
		"parquet_file_metadata":     "SELECT num_rows FROM parquet_file_metadata(" + q(fx.parquet) + ")",
		"parquet_full_metadata":     "SELECT count(*) FROM parquet_full_metadata(" + q(fx.parquet) + ")",
		"parquet_kv_metadata":       "SELECT count(*) FROM parquet_kv_metadata(" + q(fx.parquet) + ")",
		"parquet_metadata":          "SELECT count(*) FROM parquet_metadata(" + q(fx.parquet) + ")",
		"parquet_scan":              "SELECT sum(x) FROM parquet_scan(" + q(fx.parquet) + ")",
		"parquet_schema":            "SELECT count(*) FROM parquet_schema(" + q(fx.parquet) + ")",
		"pg_timezone_names":         "SELECT count(*) FROM pg_timezone_names()",
		"pragma_collations":         "SELECT count(*) FROM pragma_collations()",
		"pragma_platform":           "SELECT count(*) FROM pragma_platform()",
		"pragma_user_agent":         "SELECT count(*) FROM pragma_user_agent()",
		"pragma_version":            "SELECT count(*) FROM pragma_version()",
		"query":                     "SELECT * FROM query('SELECT sum(x) AS s FROM t')",
		"query_table":               "SELECT sum(x) FROM query_table('t')",
		"range":                     "SELECT * FROM range(3)",
		"read_blob":                 "SELECT size FROM read_blob(" + q(fx.csv) + ")",
		"read_csv":                  "SELECT * FROM read_csv(" + q(fx.csv) + ")",
		"read_csv_auto":             "SELECT * FROM read_csv_auto(" + q(fx.csv) + ")",
		"read_json":                 "SELECT * FROM read_json(" + q(fx.json_) + ")",
		"read_json_auto":            "SELECT * FROM read_json_auto(" + q(fx.json_) + ")",
		"read_json_objects":         "SELECT * FROM read_json_objects(" + q(fx.json_) + ")",
		"read_json_objects_auto":    "SELECT * FROM read_json_objects_auto(" + q(fx.json_) + ")",
		"read_ndjson":               "SELECT * FROM read_ndjson(" + q(fx.json_) + ")",
		"read_ndjson_auto":          "SELECT * FROM read_ndjson_auto(" + q(fx.json_) + ")",
		"read_ndjson_objects":       "SELECT * FROM read_ndjson_objects(" + q(fx.json_) + ")",
		"read_parquet":              "SELECT sum(x) FROM read_parquet(" + q(fx.parquet) + ")",
		"read_text":                 "SELECT size FROM read_text(" + q(fx.csv) + ")",
		"repeat":                    "SELECT * FROM repeat(7, 3)",
		"repeat_row":                "SELECT * FROM repeat_row(7, num_rows = 3)",
		"sniff_csv":                 "SELECT count(*) FROM sniff_csv(" + q(fx.csv) + ")",
		"summary":                   "SELECT count(*) FROM summary((SELECT 1 AS a))",
		"test_all_types":            "SELECT count(*) FROM test_all_types()",
		"test_vector_types":         "SELECT count(*) FROM test_vector_types(NULL::INTEGER)",
		"unnest":                    "SELECT * FROM unnest([1, 2])",
	}
}

// Every table function clients may call runs, and leaves what a second
// client sees as it was.
func TestAllowedTableFunctionsLeaveOthersAlone(t *testing.T) {
	fx := newSandboxFixture(t)
	ctx := context.Background()
	calls := allowedTableCalls(fx)
	before := fx.state(t)
	for name, v := range functionCensus() {
		if !v.allow || (!slices.Contains(v.kinds, "table") && !slices.Contains(v.kinds, "table_macro")) {
			continue
		}
		q, ok := calls[name]
		if !ok {
			t.Errorf("allowed table function %s has no call in allowedTableCalls: add one", name)
			continue
		}
		if _, err := fx.e.Query(ctx, q, QueryOptions{Snapshot: catalog.Latest}); err != nil {
			t.Errorf("%s: %v", q, err)
			continue
		}
		if after := fx.state(t); after != before {
			t.Errorf("%s changed what other clients see:\nbefore\n%s\nafter\n%s", q, before, after)
			before = after
		}
	}
}
