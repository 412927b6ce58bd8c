package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/types"
)

// Hive-style partitions and files with extra columns through the CLI: add
// finds the layout, describe, stats and files show the partition columns
// and values, plan keeps one partition's files, queries read the values,
// and the JSON output matches the schema.
func TestAddHivePartitionsAndExtraColumns(t *testing.T) {
	check := outputSchemas(t)
	dir := newCatalogDir(t)
	data := t.TempDir()
	write := func(rel string, cols ...pqwrite.Column) string {
		p := filepath.Join(data, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := pqwrite.Write(p, cols, pqwrite.Options{}); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ints := func(name string, vals ...int64) pqwrite.Column {
		c := pqwrite.Column{Name: name, Type: types.MustParseType("int64")}
		for _, v := range vals {
			x := types.IntValue(v)
			c.Values = append(c.Values, &x)
		}
		return c
	}
	eu := write("sales/region=eu/day=2024-01-02/part-0.parquet", ints("amount", 1, 2, 3))
	write("sales/region=us/day=2024-01-02/part-0.parquet", ints("amount", 10, 20))
	null := write("sales/region=__HIVE_DEFAULT_PARTITION__/day=2024-01-03/part-0.parquet", ints("amount", 100))

	mustRun(t, "--catalog", dir, "add", "sales", filepath.Join(data, "sales"), "--create")
	desc := mustRun(t, "--catalog", dir, "table", "describe", "sales")
	for _, want := range []string{"day\tDATE (partition: hive)", "region\tVARCHAR (partition: hive)"} {
		if !strings.Contains(strings.Join(strings.Fields(strings.ReplaceAll(desc, "\t", " ")), " "), strings.ReplaceAll(want, "\t", " ")) {
			t.Errorf("describe lacks %q:\n%s", want, desc)
		}
	}
	check("table_describe", mustRun(t, "--catalog", dir, "--format", "json", "table", "describe", "sales"), "describe")
	st := check("stats", mustRun(t, "--catalog", dir, "--format", "json", "stats", "sales"), "stats")
	cols, _ := st["columns"].([]any)
	if len(cols) != 3 || cols[2].(map[string]any)["partition"] != "hive" || cols[2].(map[string]any)["min"] != "eu" || cols[2].(map[string]any)["contains_null"] != true {
		t.Errorf("stats: %v", st)
	}
	files := check("files", mustRun(t, "--catalog", dir, "--format", "json", "files", "sales"), "files")
	for _, f := range files["files"].([]any) {
		fm := f.(map[string]any)
		pv := fm["partition_values"].(map[string]any)
		if fm["path"] == null && (pv["region"] != nil || pv["day"] != "2024-01-03") {
			t.Errorf("NULL partition's values: %v", pv)
		}
	}
	if text := mustRun(t, "--catalog", dir, "files", "sales"); !strings.Contains(text, "day=2024-01-02, region=eu") || !strings.Contains(text, "region=NULL") {
		t.Errorf("files:\n%s", text)
	}

	plan := check("plan", mustRun(t, "--catalog", dir, "--format", "json", "plan", "sales", "region = 'eu'"), "plan")
	kept := plan["kept_files"].([]any)
	if len(kept) != 1 || kept[0].(map[string]any)["path"] != eu || kept[0].(map[string]any)["all_match"] != true {
		t.Errorf("plan region = 'eu': %v", kept)
	}
	if pv, _ := kept[0].(map[string]any)["partition_values"].(map[string]any); pv["region"] != "eu" || pv["day"] != "2024-01-02" {
		t.Errorf("plan region = 'eu': the kept file's partition values are %v", kept[0])
	}
	if text := mustRun(t, "--catalog", dir, "plan", "sales", "region IS NULL"); !strings.Contains(text, "partition day=2024-01-03, region=NULL") {
		t.Errorf("plan region IS NULL:\n%s", text)
	}
	q := mustRun(t, "--catalog", dir, "--format", "csv", "query", "SELECT region, day, sum(amount) AS s FROM sales GROUP BY ALL ORDER BY ALL")
	if want := "region,day,s\neu,2024-01-02,6\nus,2024-01-02,30\n,2024-01-03,100\n"; q != want {
		t.Errorf("query:\n%s\nwant\n%s", q, want)
	}

	// Declared partition columns take their declared types.
	if _, err := run(t, "--catalog", dir, "table", "create", "s2", "amount BIGINT, region VARCHAR", "--partition-by", "regio"); err == nil || !strings.Contains(err.Error(), `partition column "regio": not among the columns (amount, region)`) {
		t.Errorf("--partition-by an unknown column: %v", err)
	}
	mustRun(t, "--catalog", dir, "table", "create", "s2", "amount BIGINT, region VARCHAR, day VARCHAR", "--partition-by", "region,day")
	mustRun(t, "--catalog", dir, "add", "s2", filepath.Join(data, "sales"))
	if q := mustRun(t, "--catalog", dir, "--format", "csv", "query", "SELECT typeof(day), count(*) FROM s2 WHERE day = '2024-01-02' GROUP BY ALL"); q != "\"typeof(\"\"day\"\")\",count_star()\nVARCHAR,5\n" {
		t.Errorf("declared VARCHAR day:\n%s", q)
	}

	// A file whose column the table lacks: refused, named, unless asked.
	wide := write("wide/part-0.parquet", ints("amount", 5), ints("note", 1))
	flat := write("flat/part-0.parquet", ints("amount", 7))
	mustRun(t, "--catalog", dir, "add", "t", flat, "--create")
	_, err := run(t, "--catalog", dir, "add", "t", wide)
	if err == nil || !strings.Contains(err.Error(), wide) || !strings.Contains(err.Error(), `"note"`) || !strings.Contains(err.Error(), "--ignore-extra-columns") {
		t.Fatalf("a file with an extra column: %v", err)
	}
	mustRun(t, "--catalog", dir, "add", "t", wide, "--ignore-extra-columns")
	var listed struct {
		Files []struct {
			Path    string   `json:"path"`
			Ignored []string `json:"ignored_columns"`
		} `json:"files"`
	}
	out := mustRun(t, "--catalog", dir, "--format", "json", "files", "t")
	check("files", out, "files t")
	if err := json.Unmarshal([]byte(out), &listed); err != nil || len(listed.Files) != 2 || listed.Files[1].Path != wide || strings.Join(listed.Files[1].Ignored, ",") != "note" {
		t.Errorf("files t: %v %s", err, out)
	}
	if q := mustRun(t, "--catalog", dir, "--format", "csv", "query", "SELECT * FROM t ORDER BY amount"); q != "amount\n5\n7\n" {
		t.Errorf("query over the file with an ignored column:\n%s", q)
	}

	// Adding the column maps the file's own values in (its footer's type,
	// or a widening of it); the other file reads the default.
	before := mustRun(t, "--catalog", dir, "snapshots")
	if _, err := run(t, "--catalog", dir, "table", "alter", "t", "add", "column", "note", "VARCHAR"); err == nil ||
		!strings.Contains(err.Error(), wide) || !strings.Contains(err.Error(), "BIGINT") || !strings.Contains(err.Error(), "VARCHAR") {
		t.Errorf("add column note VARCHAR over a file holding it as BIGINT: %v", err)
	}
	if mustRun(t, "--catalog", dir, "snapshots") != before {
		t.Error("a refused add column made a snapshot")
	}
	mustRun(t, "--catalog", dir, "table", "alter", "t", "add", "column", "note", "HUGEINT", "DEFAULT", "9")
	if q := mustRun(t, "--catalog", dir, "--format", "csv", "query", "SELECT amount, note, typeof(note) FROM t ORDER BY amount"); q != "amount,note,typeof(note)\n5,1,HUGEINT\n7,9,HUGEINT\n" {
		t.Errorf("the file's own note, mapped in:\n%s", q)
	}
	plan = check("plan", mustRun(t, "--catalog", dir, "--format", "json", "plan", "t", "note = 1"), "plan")
	if kept := plan["kept_files"].([]any); len(kept) != 1 || kept[0].(map[string]any)["path"] != wide || kept[0].(map[string]any)["all_match"] != true ||
		!strings.Contains(fmt.Sprint(kept[0].(map[string]any)["column_mapping"]), "file_type:BIGINT") {
		t.Errorf("plan note = 1 keeps the wide file in full, read as BIGINT: %v", kept)
	}
	// The stored statistics hold against the data, and a rewrite keeps
	// the file's own values.
	if out, err := run(t, "--catalog", dir, "verify", "t", "--deep"); err != nil || !strings.Contains(out, ", 0 problems") || strings.Contains(out, "PROBLEM") {
		t.Errorf("verify --deep: %s %v", out, err)
	}
	mustRun(t, "--catalog", dir, "compact", "t")
	if q := mustRun(t, "--catalog", dir, "--format", "csv", "query", "SELECT amount, note FROM t ORDER BY amount"); q != "amount,note\n5,1\n7,9\n" {
		t.Errorf("after compact:\n%s", q)
	}
}
