package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/engine"
)

// storeState is every file of a catalog directory with its size and
// modification time, but for LOCK, which every open takes.
func storeState(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range entries {
		if e.Name() == "LOCK" {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(&b, e.Name(), fi.Size(), fi.ModTime())
	}
	return b.String()
}

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
		if c, _, err := newRootCmd().Find(args); err != nil || prestarts(c) {
			t.Fatalf("rocklake %s would start DuckDB before it runs (err %v)", strings.Join(args, " "), err)
		}
		mustRun(t, append([]string{"--catalog", dir}, args...)...)
		if n := engine.Opened() - before; n != 0 {
			t.Fatalf("rocklake %s opened DuckDB %d times", strings.Join(args, " "), n)
		}
	}
	if c, _, err := newRootCmd().Find([]string{"query", "SELECT 1"}); err != nil || !prestarts(c) {
		t.Fatalf("query does not start DuckDB first (err %v)", err)
	}
	mustRun(t, "--catalog", dir, "query", "SELECT count(*) FROM events")
	if engine.Opened() == before {
		t.Fatal("query ran SQL without DuckDB: the count does not see opens")
	}
}

// TestReadersWriteNothing: commands that only read open the store
// read-only, leaving every file of the catalog directory as it was.
func TestReadersWriteNothing(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "lake")
	paths := writeEvents(t, filepath.Join(base, "data"), 2)
	mustRun(t, "--catalog", dir, "init")
	mustRun(t, "--catalog", dir, "add", "events", paths[0], paths[1], "--create")
	want := storeState(t, dir)
	for _, args := range [][]string{
		{"snapshots"},
		{"stats", "events"},
		{"table", "list"},
		{"table", "describe", "events"},
		{"files", "events"},
		{"plan", "events", "user_id = 3"},
		{"analyze", "events", "--column", "user_id"},
		{"query", "SELECT count(*) FROM events"},
		{"verify", "events"},
	} {
		mustRun(t, append([]string{"--catalog", dir}, args...)...)
		if got := storeState(t, dir); got != want {
			t.Fatalf("rocklake %s changed the catalog directory:\n%s\nwas\n%s", strings.Join(args, " "), got, want)
		}
	}
	// Writers still commit after readers.
	out := mustRun(t, "--catalog", dir, "table", "create", "other", "id BIGINT")
	if !strings.Contains(out, "snapshot") {
		t.Fatalf("table create after readers: %q", out)
	}
}
