package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runIn executes the CLI in-process with stdin as its standard input,
// returning standard output alone.
func runIn(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(io.Discard)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

// TestQueryInput: the SQL comes as the argument, -c, -f FILE or standard
// input alike, and a script runs statement after statement.
func TestQueryInput(t *testing.T) {
	dir := formatsCatalog(t, 2)
	const q = "SELECT count(*) AS n FROM events"
	want := "n\n60\n"
	script := filepath.Join(t.TempDir(), "report.sql")
	if err := os.WriteFile(script, []byte(q+";\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		stdin string
		args  []string
	}{
		{"", []string{q}},
		{"", []string{"-c", q}},
		{"", []string{"-f", script}},
		{q, []string{"-"}},
		{q + ";\n", []string{"-f", "-"}},
	} {
		out, err := runIn(t, c.stdin, append([]string{"--catalog", dir, "--format", "csv", "query"}, c.args...)...)
		if err != nil || out != want {
			t.Errorf("query %q (stdin %q): %v, %q; want %q", c.args, c.stdin, err, out, want)
		}
	}

	// A script: statements in order, semicolons in strings and comments
	// not ending one.
	const s3 = `-- a report
SELECT 'a;b' AS s;  /* the count; */
SELECT count(*) AS n FROM events;
SELECT max(user_id) AS m FROM events -- last; no semicolon`
	if err := os.WriteFile(script, []byte(s3), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runIn(t, "", "--catalog", dir, "--format", "csv", "query", "-f", script)
	if err != nil || out != "s\na;b\nn\n60\nm\n49\n" {
		t.Fatalf("script: %v\n%q", err, out)
	}
	// One JSON document per statement.
	out, err = runIn(t, "", "--catalog", dir, "--format", "json", "query", "-f", script)
	dec := json.NewDecoder(strings.NewReader(out))
	var docs []map[string]any
	for dec.More() {
		var d map[string]any
		if err := dec.Decode(&d); err != nil {
			t.Fatalf("json script output: %v\n%s", err, out)
		}
		docs = append(docs, d)
	}
	if err != nil || len(docs) != 3 || docs[1]["row_count"] != float64(1) {
		t.Fatalf("json script: %v, %d documents\n%s", err, len(docs), out)
	}

	// The first failing statement stops the script and is named.
	out, err = runIn(t, "SELECT 'first' AS x;\nSELECT nosuch FROM events;\nSELECT 'third' AS x;", "--catalog", dir, "--format", "csv", "query", "-")
	if err == nil || !strings.Contains(err.Error(), "standard input, statement 2 of 3 (line 2)") || !strings.Contains(err.Error(), "nosuch") ||
		!strings.Contains(out, "first") || strings.Contains(out, "third") {
		t.Fatalf("failing script: %v\n%q", err, out)
	}
	if code := errorCode(err); code != codeQuery {
		t.Errorf("failing script: code %q, want %q", code, codeQuery)
	}
	// A file that is not there is a failure of the work, not of the line.
	_, err = runIn(t, "", "--catalog", dir, "query", "-f", filepath.Join(t.TempDir(), "nope.sql"))
	var ue usageError
	if err == nil || errors.As(err, &ue) || errorCode(err) != codeNotFound {
		t.Fatalf("missing -f file: %v", err)
	}
}
