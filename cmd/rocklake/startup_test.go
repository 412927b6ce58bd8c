package main

import (
	"fmt"
	"net"
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
		if c, _, err := newRootCmd().Find(args); err != nil || prestarts(c, args) {
			t.Fatalf("rocklake %s would start DuckDB before it runs (err %v)", strings.Join(args, " "), err)
		}
		mustRun(t, append([]string{"--catalog", dir}, args...)...)
		if n := engine.Opened() - before; n != 0 {
			t.Fatalf("rocklake %s opened DuckDB %d times", strings.Join(args, " "), n)
		}
	}
	if c, _, err := newRootCmd().Find([]string{"query", "SELECT 1"}); err != nil || !prestarts(c, []string{"--catalog", dir, "query", "SELECT 1"}) {
		t.Fatalf("query does not start DuckDB first (err %v)", err)
	}
	mustRun(t, "--catalog", dir, "query", "SELECT count(*) FROM events")
	if engine.Opened() == before {
		t.Fatal("query ran SQL without DuckDB: the count does not see opens")
	}
}

// TestForwardedCommandStartsNoDuckDB: a command that a server runs for
// this process (remote.go) starts no DuckDB here, which would only take
// CPU from the server; whether the catalog is served is a stat of the
// socket, made before the command line is parsed.
func TestForwardedCommandStartsNoDuckDB(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "lake")
	mustRun(t, "--catalog", dir, "init")
	check := func(why string, want bool, args ...string) {
		t.Helper()
		c, _, err := newRootCmd().Find(args)
		if err != nil {
			t.Fatal(err)
		}
		if got := prestarts(c, args); got != want {
			t.Errorf("%s: rocklake %s starts DuckDB first: %v, want %v", why, strings.Join(args, " "), got, want)
		}
	}
	check("not served", true, "--catalog", dir, "query", "SELECT 1")
	sock := filepath.Join(dir, socketName)
	if err := os.WriteFile(sock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	check("a file of the socket's name, not a socket", true, "--catalog", dir, "query", "SELECT 1")
	os.Remove(sock)

	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	check("served", false, "--catalog", dir, "query", "SELECT 1")
	check("served, --catalog=", false, "--catalog="+dir, "--format", "csv", "query", "SELECT 1")
	check("served, --catalog after the command", false, "query", "SELECT 1", "--catalog", dir)
	check("served, the last --catalog", true, "--catalog", dir, "query", "--catalog", base, "SELECT 1")
	check("served, --catalog as an argument after --", true, "--catalog", base, "query", "--", "--catalog", dir)
	t.Setenv("ROCKLAKE_CATALOG", dir)
	check("served, ROCKLAKE_CATALOG", false, "query", "SELECT 1")
	check("another catalog", true, "--catalog", filepath.Join(base, "other"), "query", "SELECT 1")
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
