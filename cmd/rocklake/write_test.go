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

// DELETE and UPDATE through `query`, as the argument and with -c: the
// summary on stderr in text, one object with --format json; a change of
// no rows commits nothing; a failed change exits non-zero, names what is
// wrong and commits nothing.
func TestQueryChanges(t *testing.T) {
	dir := t.TempDir()
	lake := filepath.Join(dir, "lake")
	mustRun(t, "--catalog", lake, "init")
	mustRun(t, "--catalog", lake, "query", "CREATE TABLE t (id BIGINT NOT NULL, s VARCHAR)")
	mustRun(t, "--catalog", lake, "table", "alter", "t", "set", "option", "delete_mode", "=", "copy-on-write") // snapshot 2
	mustRun(t, "--catalog", lake, "query", "INSERT INTO t SELECT i, 'v' || i FROM range(10) r(i)")
	out := mustRun(t, "--catalog", lake, "query", "DELETE FROM t WHERE id < 3")
	if !strings.Contains(out, "(DELETE t: 3 rows deleted; 1 file rewritten into 1 file, snapshot 4; ") {
		t.Fatalf("DELETE: %q", out)
	}
	out = mustRun(t, "--catalog", lake, "query", "-c", "UPDATE t SET s = upper(s) WHERE id >= 8")
	if !strings.Contains(out, "(UPDATE t: 2 rows updated; 1 file rewritten into 2 files, snapshot 5; ") { // its other rows, and the new ones
		t.Fatalf("UPDATE: %q", out)
	}
	out = mustRun(t, "--catalog", lake, "query", "DELETE FROM t WHERE id > 100")
	if !strings.Contains(out, "(DELETE t: 0 rows, nothing committed; ") {
		t.Fatalf("a DELETE of no rows: %q", out)
	}
	type answer struct {
		Statement    string `json:"statement"`
		Table        string `json:"table"`
		Rows         int64  `json:"rows"`
		FileCount    *int   `json:"file_count"`
		FilesRemoved *int   `json:"files_removed"`
		Snapshot     *int64 `json:"snapshot_id"`
	}
	for _, tc := range []struct {
		q, statement   string
		rows           int64
		files, removed int
		snapshot       int64 // 0: none (null)
	}{
		{"DELETE FROM t WHERE id = 9", "DELETE", 1, 1, 1, 6},
		{"UPDATE t SET s = 'w' || id WHERE id IN (3, 4)", "UPDATE", 2, 2, 1, 7}, // the file's other rows, and the new ones
		{"UPDATE t SET s = 'none' WHERE id < 0", "UPDATE", 0, 0, 0, 0},
	} {
		out, err := runIn(t, "", "--catalog", lake, "--format", "json", "query", "-c", tc.q)
		var res answer
		if err != nil || json.Unmarshal([]byte(strings.TrimSpace(out)), &res) != nil {
			t.Fatalf("%s: %q %v", tc.q, out, err)
		}
		snap := int64(0)
		if res.Snapshot != nil {
			snap = *res.Snapshot
		}
		if res.Statement != tc.statement || res.Table != "t" || res.Rows != tc.rows || res.FileCount == nil || *res.FileCount != tc.files ||
			res.FilesRemoved == nil || *res.FilesRemoved != tc.removed || snap != tc.snapshot {
			t.Errorf("%s: %q", tc.q, out)
		}
	}
	for _, tc := range []struct{ q, says string }{
		{"UPDATE t SET nope = 1", `"nope"`},
		{"UPDATE t SET id = NULL WHERE id = 5", "NOT NULL constraint failed: t.id"},
		{"DELETE FROM t WHERE nosuch > 1", "nosuch"},
		{"DELETE FROM t RETURNING id", "RETURNING"},
	} {
		out, err := run(t, "--catalog", lake, "query", tc.q)
		if err == nil || exitCode(err) == 0 || !strings.Contains(err.Error(), tc.says) || strings.Contains(err.Error(), "__rocklake") {
			t.Errorf("%s: exit %d, %v %q; want a failure saying %s", tc.q, exitCode(err), err, out, tc.says)
		}
	}
	if out := mustRun(t, "--catalog", lake, "query", "SELECT count(*) || '/' || string_agg(s, ',' ORDER BY id) FROM t"); !strings.Contains(out, "6/w3,w4,v5,v6,v7,V8") {
		t.Fatalf("rows: %q", out)
	}
	if out := mustRun(t, "--catalog", lake, "--format", "json", "snapshots"); strings.Count(out, `"snapshot_id"`) != 8 {
		t.Fatalf("the failed changes and those of no rows made snapshots: %s", out)
	}
	if out := mustRun(t, "--catalog", lake, "query", "--snapshot", "3", "SELECT count(*) || '/' || max(s) FROM t"); !strings.Contains(out, "10/v9") {
		t.Fatalf("before the changes: %q", out)
	}
}

// Under merge-on-read the CLI says how many delete files a change wrote,
// files lists each file's deleted rows, and fold rewrites them out.
func TestQueryChangesMergeOnRead(t *testing.T) {
	lake := filepath.Join(t.TempDir(), "lake")
	mustRun(t, "--catalog", lake, "init")
	mustRun(t, "--catalog", lake, "query", "CREATE TABLE t (id BIGINT NOT NULL, s VARCHAR)")
	mustRun(t, "--catalog", lake, "query", "INSERT INTO t SELECT i, 'v' || i FROM range(10) r(i)")
	mustRun(t, "--catalog", lake, "table", "alter", "t", "set", "option", "delete_mode", "=", "merge-on-read")
	out := mustRun(t, "--catalog", lake, "query", "DELETE FROM t WHERE id < 3")
	if !strings.Contains(out, "(DELETE t: 3 rows deleted; 1 delete file written, 0 files added, snapshot 4; ") {
		t.Fatalf("DELETE: %q", out)
	}
	out = mustRun(t, "--catalog", lake, "query", "UPDATE t SET s = upper(s) WHERE id >= 8")
	if !strings.Contains(out, "(UPDATE t: 2 rows updated; 1 delete file written, 1 file added, snapshot 5; ") {
		t.Fatalf("UPDATE: %q", out)
	}
	if out := mustRun(t, "--catalog", lake, "files", "t"); !strings.Contains(out, "DELETED_ROWS") || !strings.Contains(out, "\t5\n") && !strings.Contains(out, " 5\n") {
		t.Fatalf("files: %q", out)
	}
	out = mustRun(t, "--catalog", lake, "fold", "t")
	if !strings.Contains(out, "folded t: 1 file -> 1 file (5 rows") {
		t.Fatalf("fold: %q", out)
	}
	if out := mustRun(t, "--catalog", lake, "fold", "t"); !strings.Contains(out, "t: no delete file, nothing to fold") {
		t.Fatalf("a second fold: %q", out)
	}
	if out := mustRun(t, "--catalog", lake, "query", "SELECT count(*) || '/' || string_agg(s, ',' ORDER BY id) FROM t"); !strings.Contains(out, "7/v3,v4,v5,v6,v7,V8,V9") {
		t.Fatalf("rows: %q", out)
	}
}
