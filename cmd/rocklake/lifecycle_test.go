package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/engine"
)

// Usage mistakes are errors with exit status 2 and a one-line message,
// never help on stdout with status 0.
func TestUsageErrors(t *testing.T) {
	dir := newCatalogDir(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"table", "drop"}, "accepts 1 arg"},
		{[]string{"table", "lst"}, `unknown command "lst" for rocklake table`},
		{[]string{"table"}, "needs a command: alter, create, describe, drop, list, rename"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"snapshots", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"stats", "t", "--snapshot", "abc"}, `invalid argument "abc"`},
		{[]string{"stats", "t", "--snapshot", "-5"}, "--snapshot -5: a snapshot id is 0 or more"},
		{[]string{"query"}, "query needs SQL"},
		{[]string{"query", "SELECT 1", "-c", "SELECT 2"}, "not from an argument and -c"},
		{[]string{"query", "-c", "-- nothing"}, "holds no SQL statement"},
		{[]string{"version", "--format", "xml"}, `not "xml"`},
	} {
		out, err := run(t, append([]string{"--catalog", dir}, c.args...)...)
		if err == nil || exitCode(err) != exitUsage || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("rocklake %s: exit %d, error %v; want a one-line usage error containing %q", strings.Join(c.args, " "), exitCode(err), err, c.want)
		}
		if strings.Contains(out, "Usage:") {
			t.Errorf("rocklake %s printed help:\n%s", strings.Join(c.args, " "), out)
		}
	}
	// A command that ran and failed is another status.
	_, err := run(t, "--catalog", dir, "stats", "nosuch")
	if err == nil || exitCode(err) != exitFailure {
		t.Fatalf("stats of an unknown table: exit %d (%v), want %d", exitCode(err), err, exitFailure)
	}
}

func TestTableCreateRefusesUnknownTypes(t *testing.T) {
	dir := newCatalogDir(t)
	before := mustRun(t, "--catalog", dir, "snapshots")
	for spec, want := range map[string]string{
		"id INT, x FOO":              `column x: unknown type "FOO"`,
		"id INT, s STRUCT(a BAR)":    `column s: unknown type "BAR"`,
		"id INT, l MAP(VARCHAR, QQ)": `column l: unknown type "QQ"`,
	} {
		_, err := run(t, "--catalog", dir, "table", "create", "t1", spec)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "known types:") || !strings.Contains(err.Error(), "timestamptz") {
			t.Errorf("table create t1 %q: %v", spec, err)
		}
	}
	if after := mustRun(t, "--catalog", dir, "snapshots"); after != before {
		t.Fatalf("a refused create changed the catalog")
	}
	mustRun(t, "--catalog", dir, "table", "create", "t1", "id INT, tags STRUCT(a INT, b VARCHAR[]), m MAP(VARCHAR, DOUBLE), d DECIMAL(10,2)")
}

// drop, files and rm as a user runs them, with time travel before and
// after.
func TestTableLifecycle(t *testing.T) {
	dir := newCatalogDir(t)
	data := t.TempDir()
	db, err := engine.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var paths []string
	for i := range 3 {
		p := filepath.Join(data, "f"+string(rune('0'+i))+".parquet")
		if _, err := db.Exec("COPY (SELECT range AS x FROM range(" + string(rune('0'+i)) + "0, " + string(rune('0'+i)) + "5)) TO '" + p + "'"); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	mustRun(t, append([]string{"--catalog", dir, "add", "ev", "--create"}, paths...)...)
	count := func(args ...string) string {
		out := mustRun(t, append([]string{"--catalog", dir, "--format", "csv", "query", "SELECT count(*) AS n FROM ev"}, args...)...)
		return strings.TrimSpace(strings.TrimPrefix(out, "n\n"))
	}
	if n := count(); n != "15" {
		t.Fatalf("count = %s", n)
	}
	var listed struct {
		Files []fileRow `json:"files"`
	}
	if err := json.Unmarshal([]byte(mustRun(t, "--catalog", dir, "--format", "json", "files", "ev")), &listed); err != nil {
		t.Fatal(err)
	}
	if len(listed.Files) != 3 || listed.Files[0].Records != 5 || listed.Files[0].RowGroups != 1 || listed.Files[0].FileSizeBytes <= 0 || listed.Files[0].AddedAt != 1 {
		t.Fatalf("files: %+v", listed.Files)
	}
	// rm: one snapshot, nothing deleted from disk, older snapshots keep it.
	if _, err := run(t, "--catalog", dir, "rm", "ev", paths[1], filepath.Join(data, "nope.parquet")); err == nil || !strings.Contains(err.Error(), "nope.parquet is not a file of table ev") {
		t.Fatalf("rm of an unregistered path: %v", err)
	}
	out := mustRun(t, "--catalog", dir, "rm", "ev", paths[1])
	if !strings.Contains(out, "removed 1 file from ev at snapshot 2") {
		t.Fatalf("rm: %q", out)
	}
	if n := count(); n != "10" {
		t.Fatalf("count after rm = %s", n)
	}
	if n := count("--snapshot", "1"); n != "15" {
		t.Fatalf("count at snapshot 1 after rm = %s", n)
	}
	if _, err := filepath.Glob(paths[1]); err != nil {
		t.Fatal(err)
	}
	// rename: the new name at the latest snapshot, the old one before.
	out = mustRun(t, "--catalog", dir, "table", "rename", "ev", "ev2")
	if !strings.Contains(out, "renamed table ev to ev2 at snapshot 3") {
		t.Fatalf("rename: %q", out)
	}
	countOf := func(table string, args ...string) string {
		out := mustRun(t, append([]string{"--catalog", dir, "--format", "csv", "query", "SELECT count(*) AS n FROM " + table}, args...)...)
		return strings.TrimSpace(strings.TrimPrefix(out, "n\n"))
	}
	if n := countOf("ev2"); n != "10" {
		t.Fatalf("count of the renamed table = %s", n)
	}
	if n := countOf("ev", "--snapshot", "2"); n != "10" {
		t.Fatalf("count under the old name before the rename = %s", n)
	}
	if _, err := run(t, "--catalog", dir, "query", "SELECT count(*) FROM ev"); err == nil || !strings.Contains(err.Error(), `no such table "ev"`) {
		t.Fatalf("query of the old name after the rename: %v", err)
	}
	// drop: gone at the latest snapshot, readable before it.
	out = mustRun(t, "--catalog", dir, "table", "drop", "ev2")
	if !strings.Contains(out, "dropped table ev2 at snapshot 4") {
		t.Fatalf("drop: %q", out)
	}
	if _, err := run(t, "--catalog", dir, "query", "SELECT count(*) FROM ev2"); err == nil || !strings.Contains(err.Error(), `no such table "ev2"`) {
		t.Fatalf("query after drop: %v", err)
	}
	if n := countOf("ev2", "--snapshot", "3"); n != "10" {
		t.Fatalf("count at snapshot 3 after drop = %s", n)
	}
	if n := countOf("ev", "--snapshot", "1"); n != "15" {
		t.Fatalf("count at snapshot 1 after drop = %s", n)
	}
	if _, err := run(t, "--catalog", dir, "table", "drop", "ev2"); err == nil || !strings.Contains(err.Error(), "ev2") {
		t.Fatalf("second drop: %v", err)
	}
}

// add --skip-existing over a growing directory registers each file once,
// and says so when there is nothing new.
func TestAddSkipExisting(t *testing.T) {
	dir := newCatalogDir(t)
	data := t.TempDir()
	db, err := engine.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	write := func(i int) {
		p := filepath.Join(data, fmt.Sprintf("day-%02d.parquet", i))
		if _, err := db.Exec(fmt.Sprintf("COPY (SELECT %d AS day, range AS x FROM range(10)) TO '%s'", i, p)); err != nil {
			t.Fatal(err)
		}
	}
	write(1)
	write(2)
	mustRun(t, "--catalog", dir, "add", "ev", data, "--create", "--skip-existing")
	if _, err := run(t, "--catalog", dir, "add", "ev", data); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("a plain add of registered files must still be refused: %v", err)
	}
	out := mustRun(t, "--catalog", dir, "add", "ev", data, "--skip-existing")
	if !strings.Contains(out, "nothing new to add to ev: all 2 files are registered already") {
		t.Fatalf("add with nothing new: %q", out)
	}
	write(3)
	// A link to a registered file is the same file.
	if err := os.Symlink(filepath.Join(data, "day-01.parquet"), filepath.Join(t.TempDir(), "alias.parquet")); err != nil {
		t.Fatal(err)
	}
	out = mustRun(t, "--catalog", dir, "add", "ev", data, "--skip-existing")
	if !strings.Contains(out, "added 1 file, 10 rows") || !strings.Contains(out, "2 files already registered, left out") {
		t.Fatalf("add of one new file: %q", out)
	}
	res := mustRun(t, "--catalog", dir, "--format", "csv", "query", "SELECT count(*) AS n, count(DISTINCT day) AS d FROM ev")
	if !strings.Contains(res, "30,3") {
		t.Fatalf("each file once: %q", res)
	}
	snaps := mustRun(t, "--catalog", dir, "--format", "json", "snapshots")
	if strings.Count(snaps, `"snapshot_id"`) != 3 { // init, first add, second add
		t.Fatalf("an add with nothing new made a snapshot:\n%s", snaps)
	}
}

// A directory optimize wrote inside the user's data directory is left out
// when the data directory is added again, and a file in it is refused:
// rocklake's files never become the user's.
func TestAddLeavesOutRewriteDirs(t *testing.T) {
	dir := newCatalogDir(t)
	data := t.TempDir()
	db, err := engine.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := range 2 {
		p := filepath.Join(data, fmt.Sprintf("f%d.parquet", i))
		if _, err := db.Exec(fmt.Sprintf("COPY (SELECT range AS x FROM range(%d, %d)) TO '%s'", i*10, i*10+10, p)); err != nil {
			t.Fatal(err)
		}
	}
	mustRun(t, "--catalog", dir, "add", "ev", data, "--create")
	rw := filepath.Join(data, "rewritten")
	mustRun(t, "--catalog", dir, "optimize", "ev", "--sort-by", "x", "--dir", rw)
	out := mustRun(t, "--catalog", dir, "add", "ev", data, "--skip-existing")
	if !strings.Contains(out, "left out "+rw+": rocklake's optimize or compact wrote it") {
		t.Fatalf("add of the data directory after a rewrite into it: %q", out)
	}
	parts, _ := filepath.Glob(filepath.Join(rw, "*.parquet"))
	if len(parts) == 0 {
		t.Fatal("optimize wrote no file")
	}
	if _, err := run(t, "--catalog", dir, "add", "other", parts[0], "--create"); err == nil || !strings.Contains(err.Error(), "written by rocklake's optimize or compact") {
		t.Fatalf("add of a rewrite's file: %v", err)
	}
	res := mustRun(t, "--catalog", dir, "--format", "csv", "query", "SELECT count(*) AS n FROM ev")
	if !strings.Contains(res, "\n20\n") {
		t.Fatalf("rows after the adds: %q", res)
	}
}
