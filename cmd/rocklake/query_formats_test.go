package main

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// formatsCatalog is a catalog with table events (user_id BIGINT, v
// VARCHAR) over n files of 30 rows.
func formatsCatalog(t *testing.T, n int) string {
	t.Helper()
	base := t.TempDir()
	dir := filepath.Join(base, "lake")
	paths := writeEvents(t, filepath.Join(base, "data"), n)
	mustRun(t, "--catalog", dir, "init")
	mustRun(t, append([]string{"--catalog", dir, "add", "events", "--create"}, paths...)...)
	return dir
}

// TestQueryFormats: every output format of query holds the same rows,
// NULL told apart from text, repeated column names kept apart in JSON.
func TestQueryFormats(t *testing.T) {
	dir := formatsCatalog(t, 3)
	const q = "SELECT user_id, v, NULL AS n, user_id * 1000000000000 AS user_id FROM events ORDER BY v"
	q1 := func(args ...string) string {
		return mustRun(t, append([]string{"--catalog", dir, "query", q}, args...)...)
	}
	// The reference: csv with NULL spelled out.
	ref, err := csv.NewReader(strings.NewReader(q1("--format", "csv", "--null", "NULL"))).ReadAll()
	if err != nil || len(ref) != 91 || strings.Join(ref[0], ",") != "user_id,v,n,user_id_1" || ref[1][2] != "NULL" {
		t.Fatalf("csv --null NULL: %v %q", err, ref[:min(len(ref), 3)])
	}
	plain, _ := csv.NewReader(strings.NewReader(q1("--format", "csv"))).ReadAll()
	tsvr := csv.NewReader(strings.NewReader(q1("--format", "tsv")))
	tsvr.Comma = '\t'
	tsv, _ := tsvr.ReadAll()
	for i := range ref {
		for j := range ref[i] {
			want := ref[i][j]
			if i > 0 && j == 2 {
				want = "" // NULL is empty in csv and tsv by default
			}
			if plain[i][j] != want || tsv[i][j] != want {
				t.Fatalf("row %d column %d: csv %q, tsv %q, want %q", i, j, plain[i][j], tsv[i][j], want)
			}
		}
	}
	// jsonl: one object per row, typed, the repeated name made unique.
	sc := bufio.NewScanner(strings.NewReader(q1("--format", "jsonl")))
	n := 0
	for sc.Scan() {
		n++
		var row map[string]any
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatalf("jsonl line %d: %v: %s", n, err, sc.Text())
		}
		want := ref[n]
		if id, ok := row["user_id"].(float64); !ok || len(row) != 4 || row["n"] != nil || row["v"] != want[1] ||
			strings.TrimSuffix(want[0], ".0") != jsonNumberText(id) || row["user_id_1"] == nil {
			t.Fatalf("jsonl line %d: %v, want the values of %q", n, row, want)
		}
	}
	if n != 90 {
		t.Fatalf("jsonl: %d lines, want 90", n)
	}
	// json: one document, rows as objects in order, counts after them.
	var doc struct {
		Columns  []struct{ Name, Type string } `json:"columns"`
		Rows     []map[string]any              `json:"rows"`
		RowCount int                           `json:"row_count"`
		Tables   []struct {
			Table string `json:"table"`
			Files struct {
				Total, Kept int
			} `json:"files"`
		} `json:"tables"`
		Seconds float64 `json:"seconds"`
		Phases  []struct {
			Name    string
			Seconds float64
		} `json:"phases"`
	}
	if err := json.Unmarshal([]byte(q1("--format", "json")), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.RowCount != 90 || len(doc.Rows) != 90 || len(doc.Columns) != 4 || doc.Columns[3].Name != "user_id_1" ||
		doc.Columns[0].Type != "BIGINT" || doc.Columns[2].Type != "INTEGER" || len(doc.Tables) != 1 || doc.Tables[0].Files.Total != 3 ||
		doc.Seconds <= 0 || len(doc.Phases) == 0 {
		t.Fatalf("json: %+v", doc)
	}
	for i, row := range doc.Rows {
		if row["v"] != ref[i+1][1] {
			t.Fatalf("json row %d: %v, want v %q", i, row, ref[i+1][1])
		}
	}
	// An empty answer is still a document, with an empty list.
	out := mustRun(t, "--catalog", dir, "--format", "json", "query", "SELECT * FROM events WHERE user_id < 0")
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Rows == nil || len(doc.Rows) != 0 || doc.RowCount != 0 {
		t.Fatalf("json of no rows: %v\n%s", err, out)
	}
	// --explain --format json parses: DuckDB's plan is inside.
	out = mustRun(t, "--catalog", dir, "--format", "json", "query", "--explain", "SELECT count(*) FROM events WHERE user_id = 3")
	var ex struct {
		Explain string           `json:"explain"`
		Rows    []map[string]any `json:"rows"`
	}
	if err := json.Unmarshal([]byte(out), &ex); err != nil || !strings.Contains(ex.Explain, "READ_PARQUET") && !strings.Contains(ex.Explain, "PARQUET") || len(ex.Rows) != 1 {
		t.Fatalf("--explain --format json: %v\n%s", err, out)
	}
}

// jsonNumberText is a JSON number's value as an integer's text.
func jsonNumberText(f float64) string {
	b, _ := json.Marshal(f)
	return string(b)
}

// TestQueryTableAligns: the table aligns its columns to the widest value
// of the first 1,000 rows, so it can print before the answer ends; a wider
// value after them widens only its own line.
func TestQueryTableAligns(t *testing.T) {
	dir := formatsCatalog(t, 1)
	q := "SELECT k % 10 AS i, CASE WHEN k = 1500 THEN repeat('x', 40) ELSE repeat('y', (k % 7)::INTEGER) END AS s, 'end' AS e FROM range(2000) r(k), (SELECT count(*) FROM events) ORDER BY k"
	out := mustRun(t, "--catalog", dir, "query", q)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) < 2001 || lines[0] != strings.TrimRight(lines[0], " ") {
		t.Fatalf("%d lines; header %q", len(lines), lines[0])
	}
	col := strings.Index(lines[0], "e")
	if strings.Index(lines[0], "s") != 3 || col != 3+6+2 {
		t.Fatalf("header %q: want i, s, e at 0, 3, 11 (widths of the first 1,000 rows)", lines[0])
	}
	for i, l := range lines[1:2001] {
		at := strings.LastIndex(l, "end")
		if i == 1500 {
			if at != 3+40+2 {
				t.Fatalf("row 1500: %q, want its own wider line", l)
			}
			continue
		}
		if at != col {
			t.Fatalf("row %d: %q has e at %d, want %d", i, l, at, col)
		}
	}
}
