package main

import (
	"strings"
	"testing"
)

// JSON output keeps <, > and & as they are, in rows, in the objects the
// commands print and in errors: json.Marshal's HTML escaping (\u003c)
// is valid JSON but not the text a script compares with.
func TestJSONKeepsTextAsItIs(t *testing.T) {
	dir := newCatalogDir(t)
	mustRun(t, "--catalog", dir, "query", "CREATE TABLE t (s VARCHAR)")
	mustRun(t, "--catalog", dir, "query", "INSERT INTO t VALUES ('<a&b>')")
	for _, args := range [][]string{
		{"--format", "json", "query", "SELECT s, 'x<y' AS \"<&>\" FROM t"},
		{"--format", "jsonl", "query", "SELECT s, 'x<y' AS \"<&>\" FROM t"},
		{"--format", "json", "stats", "t"},
		{"--format", "json", "plan", "t", "s < 'z&'"},
	} {
		out := mustRun(t, append([]string{"--catalog", dir}, args...)...)
		if strings.Contains(out, `\u00`) || !strings.ContainsAny(out, "<&") {
			t.Errorf("rocklake %s: escaped or lost <, > or &:\n%s", strings.Join(args, " "), out)
		}
	}
	_, err := run(t, "--catalog", dir, "--format", "json", "table", "describe", "<nosuch&>")
	if err == nil {
		t.Fatal("describe of a missing table")
	}
	var b strings.Builder
	reportError(&b, err, true, nil)
	if !strings.Contains(b.String(), `"<nosuch&>`) || strings.Contains(b.String(), `\u00`) {
		t.Errorf("the JSON error of a missing table named <nosuch&>: %s", b.String())
	}
}
