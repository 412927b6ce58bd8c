package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// `rocklake --version` prints the version as `rocklake version` does and
// exits 0; no command at all is a usage error saying so; a column list
// missing a comma says so, not that a parenthesis is expected.
func TestVersionFlagAndMessages(t *testing.T) {
	out, err := run(t, "--version")
	if err != nil || strings.TrimSpace(out) != "rocklake "+version {
		t.Fatalf("--version: %q %v", out, err)
	}
	if v := mustRun(t, "version"); !strings.HasPrefix(v, "rocklake "+version+" (") {
		t.Fatalf("version: %q", v)
	}
	if out, err := run(t); exitCode(err) != exitUsage || !strings.Contains(err.Error(), "no command given; commands: add,") || strings.Contains(err.Error(), "rocklake needs") {
		t.Fatalf("no command: %v %q", err, out)
	}
	lake := filepath.Join(t.TempDir(), "lake")
	mustRun(t, "--catalog", lake, "init")
	if _, err := run(t, "--catalog", lake, "table", "create", "t2", "a INT b VARCHAR"); err == nil || !strings.Contains(err.Error(), `expected "," between columns, found "b"`) {
		t.Fatalf("a missing comma: %v", err)
	}
	if _, err := run(t, "--catalog", lake, "table", "create", "t3", "a STRUCT(x INT y INT)"); err == nil || !strings.Contains(err.Error(), `expected ")", found "y"`) {
		t.Fatalf("inside a STRUCT: %v", err)
	}
}

// snapshots names the tables each snapshot changed as they were named
// then: a renamed table by its new name, a dropped one by its last.
func TestSnapshotsNameTables(t *testing.T) {
	lake := filepath.Join(t.TempDir(), "lake")
	mustRun(t, "--catalog", lake, "init")
	mustRun(t, "--catalog", lake, "query", "CREATE TABLE a (x BIGINT)") // 1
	mustRun(t, "--catalog", lake, "query", "INSERT INTO a VALUES (1)")  // 2
	mustRun(t, "--catalog", lake, "table", "rename", "a", "b")          // 3
	mustRun(t, "--catalog", lake, "query", "DELETE FROM b WHERE x = 1") // 4
	mustRun(t, "--catalog", lake, "table", "drop", "b")                 // 5
	out := mustRun(t, "--catalog", lake, "snapshots")
	for _, want := range []string{"created tables a", "inserted into tables a", "renamed tables b", "deleted from tables b", "dropped tables b"} {
		if !strings.Contains(out, want) {
			t.Errorf("snapshots: no %q in\n%s", want, out)
		}
	}
}
