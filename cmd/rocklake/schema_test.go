package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

const schemaURL = "https://rocklake.invalid/schema/output-v1.json"

// outputSchemas compiles schema/output-v1.json; check validates a
// command's output against one of its definitions.
func outputSchemas(t *testing.T) func(def, out, what string) map[string]any {
	t.Helper()
	f, err := os.Open(filepath.Join("schema", "output-v1.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource(schemaURL, doc); err != nil {
		t.Fatal(err)
	}
	schemas := map[string]*jsonschema.Schema{}
	return func(def, out, what string) map[string]any {
		t.Helper()
		sch, ok := schemas[def]
		if !ok {
			if sch, err = c.Compile(schemaURL + "#/$defs/" + def); err != nil {
				t.Fatalf("schema %s: %v", def, err)
			}
			schemas[def] = sch
		}
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(out))
		if err != nil {
			t.Errorf("%s: not JSON (%v):\n%s", what, err, out)
			return nil
		}
		if err := sch.Validate(inst); err != nil {
			t.Errorf("%s: does not match $defs/%s: %v\n%s", what, def, err, out)
		}
		var m map[string]any
		_ = json.Unmarshal([]byte(out), &m)
		return m
	}
}

// TestJSONOutputMatchesSchema runs every command with --format json, on
// success and on failure, and checks what it prints against the versioned
// schema in schema/output-v1.json: a renamed or retyped field fails here
// before it reaches a script.
func TestJSONOutputMatchesSchema(t *testing.T) {
	check := outputSchemas(t)
	base := t.TempDir()
	dir := filepath.Join(base, "lake")
	data := filepath.Join(base, "data")
	paths := writeEvents(t, data, 3)
	js := func(def string, args ...string) map[string]any {
		t.Helper()
		args = append([]string{"--catalog", dir, "--format", "json"}, args...)
		stdout, stderr, err := runSplit(t, args...)
		if err != nil {
			t.Fatalf("rocklake %s: %v\n%s", strings.Join(args, " "), err, stderr)
		}
		return check(def, stdout, "rocklake "+strings.Join(args[2:], " "))
	}
	js("version", "version")
	js("init", "init")
	js("table_create", "table", "create", "other", "id BIGINT, tags VARCHAR[]")
	js("table_rename", "table", "rename", "other", "other2")
	js("table_drop", "table", "drop", "other2")
	js("add", "add", "events", paths[0], paths[1], "--create")
	js("add", "add", "events", data, "--skip-existing")
	if added := js("add", "add", "events", data, "--skip-existing"); added["snapshot_id"] != nil || added["file_count"] != float64(0) {
		t.Errorf("an add with nothing new: %v, want snapshot_id null", added)
	}
	js("table_list", "table", "list")
	js("table_describe", "table", "describe", "events")
	js("snapshots", "snapshots")
	js("stats", "stats", "events")
	js("stats", "stats", "events", "--column", "user_id")
	js("files", "files", "events")
	js("plan", "plan", "events", "user_id = 3", "--pages")
	js("query", "query", "SELECT user_id, v FROM events WHERE user_id < 10 ORDER BY v")
	js("query", "query", "--explain", "SELECT count(*) FROM events WHERE user_id < 10")
	js("query", "query", "SELECT count(*) FROM events") // from statistics
	js("verify", "verify", "events", "--deep")
	if none := js("refresh", "refresh", "events", "--all"); none["snapshot_id"] != nil {
		t.Errorf("refresh with nothing changed: %v, want snapshot_id null", none)
	}
	js("analyze", "analyze", "events", "--column", "user_id")
	if none := js("rewrite", "compact", "events", "--rows-per-file", "10"); none["snapshot_id"] != nil {
		t.Errorf("compact with nothing to do: %v, want snapshot_id null", none)
	}
	js("rewrite", "compact", "events")
	js("rewrite", "optimize", "events", "--sort-by", "user_id")
	var listed struct {
		Files []struct{ Path string } `json:"files"`
	}
	stdout, _, _ := runSplit(t, "--catalog", dir, "--format", "json", "files", "events")
	if err := json.Unmarshal([]byte(stdout), &listed); err != nil || len(listed.Files) == 0 {
		t.Fatalf("files: %v %s", err, stdout)
	}
	js("rm", "rm", "events", listed.Files[0].Path)
	js("expire", "expire", "--older-than", "0s", "--allow-short-retention", "--dry-run")
	js("expire", "expire", "--older-than", "0s", "--allow-short-retention")
	js("cleanup", "cleanup", "--dry-run", "--grace", "0s")
	js("cleanup", "cleanup", "--orphans", "--grace", "0s")
	js("catalog_copy", "catalog", "copy", dir, filepath.Join(base, "copy"))
	js("catalog_compact", "catalog", "compact")
	js("table_alter", "table", "alter", "events", "add", "column", "note", "VARCHAR", "DEFAULT", "'n/a'")
	js("table_alter", "table", "alter", "events", "set", "sorted", "by", "zorder(user_id,", "v)")
	if same := js("table_alter", "table", "alter", "events", "set", "sorted", "by", "zorder(user_id, v)"); same["unchanged"] != true {
		t.Errorf("setting the sort key it has: %v, want unchanged", same)
	}
	js("table_alter", "table", "alter", "events", "set", "option", "target_file_size", "=", "64MiB")
	js("table_alter", "table", "alter", "events", "set", "option", "target_file_rows=10")
	js("table_alter", "table", "alter", "events", "set", "option", "sorted", "=", "false")
	js("table_describe", "table", "describe", "events")

	// jsonl: every line one row object.
	stdout, _, err := runSplit(t, "--catalog", dir, "--format", "jsonl", "query", "SELECT * FROM range(3) r(i)")
	sc := bufio.NewScanner(strings.NewReader(stdout))
	n := 0
	for sc.Scan() {
		n++
		check("query_row", sc.Text(), "query --format jsonl")
	}
	if err != nil || n != 3 {
		t.Errorf("query --format jsonl: %v, %d lines", err, n)
	}

	// Failures: the error object on stderr, nothing but verify's report on
	// stdout.
	if err := os.Remove(paths[2]); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(base, "other")
	mustRun(t, "--catalog", other, "init")
	mustRun(t, "--catalog", other, "add", "gone", paths[0], "--create")
	if err := os.Remove(paths[0]); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--catalog", dir, "stats", "nosuch"},
		{"--catalog", dir, "query", "SELECT nosuch FROM events"},
		{"--catalog", dir, "table"},
		{"--catalog", dir, "bogus"},
		{"--catalog", filepath.Join(base, "nowhere"), "snapshots"},
		{"--catalog", other, "verify", "gone"},
		{"--catalog", other, "refresh", "gone", paths[0]},
	} {
		code, stdout, stderr := runProcess(t, "", append(args, "--format", "json")...)
		what := "rocklake " + strings.Join(args[2:], " ")
		if code == 0 {
			t.Errorf("%s succeeded", what)
			continue
		}
		e := check("error", stderr, what+" (stderr)")
		if code == exitProblems {
			check("verify", stdout, what+" (stdout)")
			if e["error"].(map[string]any)["code"] != codeCheckFailed {
				t.Errorf("%s: %v", what, e)
			}
		} else if stdout != "" {
			t.Errorf("%s failed but printed %q", what, stdout)
		}
	}
}
