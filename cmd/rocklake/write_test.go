package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Writes through every way `query` takes SQL: the argument, -c, -f (a
// script mixing writes and queries) and standard input; a failed write
// exits non-zero and commits nothing.
func TestQueryWrites(t *testing.T) {
	dir := t.TempDir()
	lake := filepath.Join(dir, "lake")
	mustRun(t, "--catalog", lake, "init")
	out := mustRun(t, "--catalog", lake, "query", "CREATE TABLE t (id BIGINT NOT NULL, s VARCHAR)")
	if !strings.Contains(out, "CREATE TABLE t: snapshot 1") {
		t.Fatalf("create: %q", out)
	}
	mustRun(t, "--catalog", lake, "query", "-c", "INSERT INTO t VALUES (1, 'a'), (2, 'b')")
	script := filepath.Join(dir, "w.sql")
	os.WriteFile(script, []byte("INSERT INTO t SELECT i, 'x' || i FROM range(10, 13) r(i);\nSELECT count(*) AS n FROM t;\nCREATE TABLE u AS SELECT id FROM t WHERE id > 10;\n"), 0o644)
	out = mustRun(t, "--catalog", lake, "query", "-f", script)
	if !strings.Contains(out, "INSERT t: 3 rows in 1 file, snapshot 3") || !strings.Contains(out, "\n5") || !strings.Contains(out, "CREATE TABLE AS u: 2 rows") {
		t.Fatalf("script: %q", out)
	}
	out, err := runIn(t, "COPY t FROM '"+filepath.Join(dir, "in.csv")+"' (FORMAT csv, HEADER)", "--catalog", lake, "--format", "json", "query", "-")
	if err == nil {
		t.Fatalf("COPY of a missing file: %q", out)
	}
	os.WriteFile(filepath.Join(dir, "in.csv"), []byte("id,s\n20,p\n21,q\n"), 0o644)
	out, err = runIn(t, "COPY t FROM '"+filepath.Join(dir, "in.csv")+"' (FORMAT csv, HEADER)", "--catalog", lake, "--format", "json", "query", "-")
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Statement string `json:"statement"`
		Table     string `json:"table"`
		Rows      int64  `json:"rows"`
		Snapshot  int64  `json:"snapshot_id"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &res); err != nil || res.Statement != "COPY" || res.Rows != 2 || res.Snapshot != 5 {
		t.Fatalf("COPY json: %q %v", out, err)
	}
	if out, err := run(t, "--catalog", lake, "query", "INSERT INTO t (s) VALUES ('no id')"); err == nil || !strings.Contains(err.Error(), "NOT NULL constraint failed: t.id") {
		t.Fatalf("NOT NULL: %v %q", err, out)
	}
	if out := mustRun(t, "--catalog", lake, "query", "SELECT count(*), sum(id) FROM t"); !strings.Contains(out, "7") || !strings.Contains(out, "77") {
		t.Fatalf("rows: %q", out)
	}
	if out := mustRun(t, "--catalog", lake, "snapshots"); strings.Count(out, "\n") < 6 {
		t.Fatalf("snapshots: %q", out)
	}
}
