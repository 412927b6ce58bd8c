package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// A table's sort key and write options through the CLI: table alter sets
// them (a repeat makes no snapshot), describe shows them per snapshot in
// text and JSON, a rename keeps the key, a drop of a key column and bad
// values are refused with the catalog unchanged, and optimize without
// --sort-by writes the files an explicit --sort-by and --rows-per-file
// write.
func TestTableAlterSortKeyAndOptions(t *testing.T) {
	check := outputSchemas(t)
	base := t.TempDir()
	paths := writeEvents(t, filepath.Join(base, "data"), 3)
	dir := filepath.Join(base, "lake")
	mustRun(t, "--catalog", dir, "init")
	mustRun(t, "--catalog", dir, "add", "events", paths[0], paths[1], paths[2], "--create") // snapshot 1
	alter := func(words ...string) string {
		t.Helper()
		return mustRun(t, append([]string{"--catalog", dir, "table", "alter", "events"}, words...)...)
	}
	snapshots := func() int {
		t.Helper()
		return len(check("snapshots", mustRun(t, "--catalog", dir, "--format", "json", "snapshots"), "snapshots")["snapshots"].([]any))
	}

	if out := alter("set", "sorted", "by", "zorder(user_id,", "v)"); !strings.Contains(out, "at snapshot 2: set sorted by zorder(user_id, v)") {
		t.Errorf("set sorted by: %s", out)
	}
	n := snapshots()
	if out := alter("SET", "SORTED", "BY", "zorder(user_id, v)"); !strings.Contains(out, `table "events" unchanged: it is sorted by zorder(user_id, v) already (no snapshot made; the newest is 2)`) || snapshots() != n {
		t.Errorf("the same sort key again: %s (%d snapshots, were %d)", out, snapshots(), n)
	}
	alter("set", "option", "target_file_size", "=", "64MiB") // 3
	alter("set", "option", "sorted=false")                   // 4
	alter("set", "option", "target_file_rows", "=", "20")    // 5
	alter("set", "partitioned", "by", "bucket(2, user_id)")  // 6
	if out := alter("set", "partitioned", "by", "bucket(2, user_id)"); !strings.Contains(out, "no snapshot made") {
		t.Errorf("the same layout again: %s", out)
	}
	alter("reset", "partitioning") // 7

	out := mustRun(t, "--catalog", dir, "table", "describe", "events")
	for _, want := range []string{"sorted by zorder(user_id, v)", "options target_file_rows = 20, target_file_size = 64MiB, sorted = false"} {
		if !strings.Contains(out, want) {
			t.Errorf("describe lacks %q:\n%s", want, out)
		}
	}
	desc := check("table_describe", mustRun(t, "--catalog", dir, "--format", "json", "table", "describe", "events"), "describe")
	if got := fmt.Sprint(desc["sorted_by"], desc["write_options"]); got != "map[columns:[user_id v] curve:zorder] map[sorted:false target_file_bytes:6.7108864e+07 target_file_rows:20]" {
		t.Errorf("describe --format json: %s", got)
	}
	for snap, want := range map[string]string{"1": "", "2": "sorted by zorder(user_id, v)", "3": "options target_file_size = 64MiB"} {
		out := mustRun(t, "--catalog", dir, "table", "describe", "events", "--snapshot", snap)
		if want == "" && (strings.Contains(out, "sorted by") || strings.Contains(out, "options")) || !strings.Contains(out, want) {
			t.Errorf("describe at %s, want %q:\n%s", snap, want, out)
		}
	}
	if desc := check("table_describe", mustRun(t, "--catalog", dir, "--format", "json", "table", "describe", "events", "--snapshot", "1"), "describe"); desc["sorted_by"] != nil || desc["write_options"] != nil {
		t.Errorf("describe at 1: %v", desc)
	}

	alter("rename", "column", "v", "to", "label") // 8
	if out := mustRun(t, "--catalog", dir, "table", "describe", "events"); !strings.Contains(out, "sorted by zorder(user_id, label)") {
		t.Errorf("after a rename:\n%s", out)
	}
	n = snapshots()
	for _, tc := range []struct {
		words []string
		want  string
	}{
		{[]string{"drop", "column", "label"}, `column "label" is in the table's sort key (sorted by zorder(user_id, label))`},
		{[]string{"set", "sorted", "by", "nope"}, `no such column "nope"`},
		{[]string{"set", "sorted", "by", "user_id", "desc"}, "want columns in order"},
		{[]string{"set", "sorted", "by", "hilbert(user_id)"}, "two or more columns"},
		{[]string{"set", "option", "target_file_size", "=", "huge"}, "a size such as 128MB"},
		{[]string{"set", "option", "sorted", "=", "no"}, "true or false"},
		{[]string{"set", "option", "row_group_size", "=", "5"}, `option "row_group_size": unknown`},
	} {
		_, err := run(t, append([]string{"--catalog", dir, "table", "alter", "events"}, tc.words...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("alter %s: %v, want %q", strings.Join(tc.words, " "), err, tc.want)
		}
	}
	if snapshots() != n {
		t.Error("a refused alteration made a snapshot")
	}

	// optimize by the declared key, 20 rows a file (target_file_size
	// reset, so target_file_rows applies), against the same files
	// optimized with the key and size given.
	alter("reset", "option", "target_file_size")
	res := check("rewrite", mustRun(t, "--catalog", dir, "--format", "json", "optimize", "events"), "optimize")
	if res["file_count_after"] != float64(5) || res["rows"] != float64(90) {
		t.Errorf("optimize by the declared key: %v", res)
	}
	other := filepath.Join(base, "other")
	mustRun(t, "--catalog", other, "init")
	mustRun(t, "--catalog", other, "add", "events", paths[0], paths[1], paths[2], "--create")
	mustRun(t, "--catalog", other, "optimize", "events", "--sort-by", "user_id,v", "--curve", "zorder", "--rows-per-file", "20")
	fileStats := func(catalog string, col string) string {
		t.Helper()
		st := check("stats", mustRun(t, "--catalog", catalog, "--format", "json", "stats", "events", "--column", col), "stats")
		var out []string
		for _, f := range st["files"].([]any) {
			f := f.(map[string]any)
			out = append(out, fmt.Sprint(f["rows"], f["min"], f["max"]))
		}
		return strings.Join(out, "; ")
	}
	for _, col := range [][2]string{{"user_id", "user_id"}, {"label", "v"}} {
		if got, want := fileStats(dir, col[0]), fileStats(other, col[1]); got != want {
			t.Errorf("%s per file, declared key: %s\nexplicit --sort-by: %s", col[0], got, want)
		}
	}

	// Without a sort key optimize still wants --sort-by; a bad size says
	// what is wrong with it.
	mustRun(t, "--catalog", dir, "table", "alter", "events", "reset", "sorted", "by")
	if _, err := run(t, "--catalog", dir, "optimize", "events"); err == nil || exitCode(err) != exitUsage || !strings.Contains(err.Error(), "--sort-by is required: table events declares no sort key") {
		t.Errorf("optimize without a sort key: %v", err)
	}
	if _, err := run(t, "--catalog", dir, "optimize", "events", "--rows-per-file", "0"); err == nil || !strings.Contains(err.Error(), "--rows-per-file 0: want 1 or more") {
		t.Errorf("optimize --rows-per-file 0: %v", err)
	}
}
