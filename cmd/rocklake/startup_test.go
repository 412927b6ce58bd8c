package main

import (
	"path/filepath"
	"strings"
	"testing"

	"rocklake/engine"
)

// TestOnlySQLOpensDuckDB: DuckDB's start costs a new process more than the
// rest of its start-up, so only the commands that run SQL may pay for it.
func TestOnlySQLOpensDuckDB(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "lake")
	paths := writeEvents(t, filepath.Join(base, "data"), 3)
	before := engine.Opened()
	for _, args := range [][]string{
		{"version"},
		{"--format", "json", "version"},
		{"init"},
		{"table", "create", "other", "id BIGINT"},
		{"add", "events", paths[0], paths[1], "--create"},
		{"add", "events", paths[2]},
		{"snapshots"},
		{"stats", "events"},
		{"table", "list"},
		{"table", "describe", "events"},
		{"files", "events"},
		{"plan", "events", "user_id = 3"},
		{"analyze", "events", "--column", "user_id"},
		{"rm", "events", paths[2]},
		{"expire", "--older-than", "0s", "--allow-short-retention", "--dry-run"},
		{"cleanup", "--dry-run"},
		{"catalog", "copy", dir, filepath.Join(base, "copy")},
	} {
		mustRun(t, append([]string{"--catalog", dir}, args...)...)
		if n := engine.Opened() - before; n != 0 {
			t.Fatalf("rocklake %s opened DuckDB %d times", strings.Join(args, " "), n)
		}
	}
	mustRun(t, "--catalog", dir, "query", "SELECT count(*) FROM events")
	if engine.Opened() == before {
		t.Fatal("query ran SQL without DuckDB: the count does not see opens")
	}
}
