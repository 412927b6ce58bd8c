package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/types"
)

// Time travel across each kind of column change, through the CLI: every
// snapshot's query reads its own columns, older files read through the
// mapping (a default, an old name, a narrower type), plans prune the older
// files on the added column from its default, and a refused change makes
// no snapshot.
func TestTableAlterTimeTravel(t *testing.T) {
	check := outputSchemas(t)
	dir := newCatalogDir(t)
	data := t.TempDir()
	col := func(name, typ string, vals ...string) pqwrite.Column {
		ty := types.MustParseType(typ)
		codec, _ := types.CodecFor(ty)
		c := pqwrite.Column{Name: name, Type: ty}
		for _, s := range vals {
			if s == "NULL" {
				c.Values = append(c.Values, nil)
				continue
			}
			v, err := codec.Parse(s)
			if err != nil {
				t.Fatal(err)
			}
			c.Values = append(c.Values, &v)
		}
		return c
	}
	write := func(name string, cols ...pqwrite.Column) string {
		p := filepath.Join(data, name)
		if err := pqwrite.Write(p, cols, pqwrite.Options{}); err != nil {
			t.Fatal(err)
		}
		return p
	}
	q := func(snap, sql string) string {
		t.Helper()
		return mustRun(t, "--catalog", dir, "--format", "csv", "query", "--snapshot", snap, sql)
	}
	mustRun(t, "--catalog", dir, "table", "create", "t", "id BIGINT, a INTEGER, f FLOAT")
	f1 := write("1.parquet", col("id", "int64", "1", "2"), col("a", "int32", "10", "NULL"), col("f", "float32", "0.5", "1.5"))
	mustRun(t, "--catalog", dir, "add", "t", f1) // snapshot 2
	out := mustRun(t, "--catalog", dir, "table", "alter", "t", "add", "column", "note", "VARCHAR", "DEFAULT", "'n/a'")
	if !strings.Contains(out, "at snapshot 3") {
		t.Fatalf("alter: %s", out)
	}
	f2 := write("2.parquet", col("id", "int64", "3"), col("a", "int32", "30"), col("f", "float32", "2.5"), col("note", "varchar", "x"))
	mustRun(t, "--catalog", dir, "add", "t", f2)                                                  // 4
	mustRun(t, "--catalog", dir, "table", "alter", "t", "rename", "column", "a", "to", "b")       // 5
	mustRun(t, "--catalog", dir, "table", "alter", "t", "alter", "column", "b", "type", "BIGINT") // 6
	f3 := write("3.parquet", col("id", "int64", "4"), col("b", "int64", "5000000000"), col("f", "float32", "NULL"), col("note", "varchar", "NULL"))
	mustRun(t, "--catalog", dir, "add", "t", f3)                                                                                  // 7
	check("table_alter", mustRun(t, "--catalog", dir, "--format", "json", "table", "alter", "t", "drop", "column", "f"), "alter") // 8

	for snap, want := range map[string]string{
		"2": "id,a,f\n1,10,0.5\n2,,1.5\n",
		"3": "id,a,f,note\n1,10,0.5,n/a\n2,,1.5,n/a\n",
		"4": "id,a,f,note\n1,10,0.5,n/a\n2,,1.5,n/a\n3,30,2.5,x\n",
		"5": "id,b,f,note\n1,10,0.5,n/a\n2,,1.5,n/a\n3,30,2.5,x\n",
		"7": "id,b,f,note\n1,10,0.5,n/a\n2,,1.5,n/a\n3,30,2.5,x\n4,5000000000,,\n",
		"8": "id,b,note\n1,10,n/a\n2,,n/a\n3,30,x\n4,5000000000,\n",
	} {
		if got := q(snap, "SELECT * FROM t ORDER BY id"); got != want {
			t.Errorf("snapshot %s:\n%s\nwant\n%s", snap, got, want)
		}
	}
	if got := q("6", "SELECT typeof(b) FROM t LIMIT 1"); !strings.Contains(got, "BIGINT") {
		t.Errorf("snapshot 6: b is %s", got)
	}
	if got := q("5", "SELECT typeof(b) FROM t LIMIT 1"); !strings.Contains(got, "INTEGER") {
		t.Errorf("snapshot 5: b is %s", got)
	}
	if _, err := run(t, "--catalog", dir, "query", "--snapshot", "5", "SELECT a FROM t"); err == nil {
		t.Error("snapshot 5 still reads a column renamed at it")
	}

	// The older file holds note as its default only: exact statistics.
	plan := check("plan", mustRun(t, "--catalog", dir, "--format", "json", "plan", "t", "note = 'n/a'"), "plan")
	kept := plan["kept_files"].([]any)
	if len(kept) != 1 || !strings.HasSuffix(kept[0].(map[string]any)["path"].(string), "1.parquet") || kept[0].(map[string]any)["all_match"] != true {
		t.Errorf("plan note = 'n/a': %v", kept)
	}
	plan = check("plan", mustRun(t, "--catalog", dir, "--format", "json", "plan", "t", "b > 4000000000", "--snapshot", "7"), "plan")
	if kept := plan["kept_files"].([]any); len(kept) != 1 || !strings.HasSuffix(kept[0].(map[string]any)["path"].(string), "3.parquet") {
		t.Errorf("plan b > 4000000000: %v", kept)
	}
	if got := q("8", "SELECT count(*), min(note), max(b) FROM t WHERE note = 'n/a'"); got != "count_star(),min(note),max(b)\n2,n/a,10\n" {
		t.Errorf("aggregate: %q", got)
	}

	desc := check("table_describe", mustRun(t, "--catalog", dir, "--format", "json", "table", "describe", "t"), "describe")
	if cols := desc["columns"].([]any); len(cols) != 3 || cols[2].(map[string]any)["default"] != "n/a" || cols[1].(map[string]any)["type"] != "BIGINT" {
		t.Errorf("describe: %v", desc)
	}
	if out := mustRun(t, "--catalog", dir, "table", "describe", "t", "--snapshot", "4"); !strings.Contains(out, "INTEGER") || !strings.Contains(out, "default 'n/a'") {
		t.Errorf("describe at snapshot 4:\n%s", out)
	}
	snaps := check("snapshots", mustRun(t, "--catalog", dir, "--format", "json", "snapshots"), "snapshots")["snapshots"].([]any)
	if ch := snaps[len(snaps)-1].(map[string]any)["changes"].(map[string]any); len(ch["altered_tables"].([]any)) != 1 {
		t.Errorf("the last snapshot's changes: %v", ch)
	}

	// Expiring every older snapshot keeps what the older files need: the
	// columns they were registered with.
	mustRun(t, "--catalog", dir, "expire", "--older-than", "0s", "--allow-short-retention")
	if got := q("8", "SELECT * FROM t ORDER BY id"); got != "id,b,note\n1,10,n/a\n2,,n/a\n3,30,x\n4,5000000000,\n" {
		t.Errorf("after expire:\n%s", got)
	}
	if got := q("8", "SELECT count(*) FROM t WHERE note = 'n/a' AND b < 20"); got != "count_star()\n1\n" {
		t.Errorf("after expire: %q", got)
	}
	mustRun(t, "--catalog", dir, "table", "alter", "t", "set", "partitioned", "by", "bucket(2,", "id),", "note")
	desc = check("table_describe", mustRun(t, "--catalog", dir, "--format", "json", "table", "describe", "t"), "describe")
	if got := fmt.Sprint(desc["partitioned_by"]); got != "[bucket(2, id) note]" {
		t.Errorf("partitioned_by: %s", got)
	}
	mustRun(t, "--catalog", dir, "compact", "t")
	if got := q("10", "SELECT * FROM t ORDER BY id"); got != "id,b,note\n1,10,n/a\n2,,n/a\n3,30,x\n4,5000000000,\n" {
		t.Errorf("after compact:\n%s", got)
	}
	// Each file compact wrote records its layout values, which files and
	// plan show.
	listed := check("files", mustRun(t, "--catalog", dir, "--format", "json", "files", "t"), "files")
	notes := map[string]bool{}
	for _, f := range listed["files"].([]any) {
		lv, _ := f.(map[string]any)["layout_values"].(map[string]any)
		b, ok := lv["bucket(2, id)"].(string)
		if len(lv) != 2 || !ok || (b != "0" && b != "1") {
			t.Errorf("files: layout values %v", lv)
		}
		if n, ok := lv["note"].(string); ok {
			notes[n] = true
		} else {
			notes["NULL"] = lv["note"] == nil
		}
	}
	if len(notes) != 3 || !notes["n/a"] || !notes["x"] || !notes["NULL"] {
		t.Errorf("files: note values %v, want n/a, x and NULL", notes)
	}
	if out := mustRun(t, "--catalog", dir, "files", "t"); !strings.Contains(out, "LAYOUT") || !strings.Contains(out, "note=x") {
		t.Errorf("files:\n%s", out)
	}
	plan = check("plan", mustRun(t, "--catalog", dir, "--format", "json", "plan", "t", "note = 'x'"), "plan")
	if kept := plan["kept_files"].([]any); len(kept) != 1 || fmt.Sprint(kept[0].(map[string]any)["layout_values"].(map[string]any)["note"]) != "x" {
		t.Errorf("plan note = 'x': %v", kept)
	}
	if out := mustRun(t, "--catalog", dir, "plan", "t", "note = 'x'"); !strings.Contains(out, "layout ") || !strings.Contains(out, "note=x") {
		t.Errorf("plan:\n%s", out)
	}

	// Refusals name the reason and make no snapshot.
	before := mustRun(t, "--catalog", dir, "snapshots")
	for _, args := range [][]string{
		{"alter", "column", "b", "type", "INTEGER"},
		{"alter", "column", "note", "type", "BIGINT"},
		{"rename", "column", "b", "to", "ID"},
		{"drop", "column", "nope"},
		{"add", "column", "n", "INTEGER", "DEFAULT", "'x'"},
		{"truncate"},
	} {
		out, err := run(t, append([]string{"--catalog", dir, "table", "alter", "t"}, args...)...)
		if err == nil {
			t.Errorf("table alter t %s: accepted\n%s", strings.Join(args, " "), out)
		}
	}
	if after := mustRun(t, "--catalog", dir, "snapshots"); after != before {
		t.Errorf("a refused alter made a snapshot:\n%s", after)
	}
	if _, err := os.Stat(f1); err != nil {
		t.Fatal(err)
	}
}
