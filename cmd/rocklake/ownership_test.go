package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/types"
)

// writeEvents writes n Parquet files of 30 rows (user_id, v) into dir.
func writeEvents(t *testing.T, dir string, n int) []string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for f := range n {
		ids, vs := make([]*types.Value, 30), make([]*types.Value, 30)
		for i := range ids {
			id, v := types.IntValue(int64((i*7+f*3)%50)), types.StringValue(fmt.Sprintf("e%d-%d", f, i))
			ids[i], vs[i] = &id, &v
		}
		p := filepath.Join(dir, fmt.Sprintf("part%d.parquet", f))
		err := pqwrite.Write(p, []pqwrite.Column{{Name: "user_id", Type: types.MustParseType("int64"), Values: ids},
			{Name: "v", Type: types.MustParseType("varchar"), Values: vs}}, pqwrite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// listDir is the sorted names in dir, but for a rewrite's marker.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.Name() != catalog.RewriteMarker {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names
}

// The story from the report: add a directory in place, optimize, expire
// everything, clean up. The user's files and their directory survive;
// rocklake's own rewrite files go once no snapshot reads them.
func TestCleanupAfterOptimizeKeepsUserFiles(t *testing.T) {
	cat := newCatalogDir(t)
	data := filepath.Join(t.TempDir(), "data")
	orig := writeEvents(t, data, 3)
	mustRun(t, "--catalog", cat, "add", "ev", data, "--create")
	mustRun(t, "--catalog", cat, "optimize", "ev", "--sort-by", "user_id", "--rows-per-file", "40")
	// Rewrites go beside the catalog, named by table id and snapshot.
	firstRewrite := filepath.Join(cat+".files", "table-1", "optimize-1")
	if got := listDir(t, firstRewrite); len(got) != 3 {
		t.Fatalf("first optimize wrote %v", got)
	}
	// A second rewrite retires the first one's files, which are rocklake's.
	mustRun(t, "--catalog", cat, "optimize", "ev", "--sort-by", "v")

	// Expiring everything is under the retention floor: refused, with the
	// way to override named.
	_, err := run(t, "--catalog", cat, "expire", "--older-than", "0s")
	if err == nil || !strings.Contains(err.Error(), "--allow-short-retention") || !strings.Contains(err.Error(), "7d") {
		t.Fatalf("expire --older-than 0s: %v", err)
	}
	out := mustRun(t, "--catalog", cat, "expire", "--older-than", "0s", "--allow-short-retention")
	if !strings.Contains(out, "6 files scheduled for cleanup: 3 rocklake's own, which cleanup deletes, 3 the user's, which stay on disk") {
		t.Fatalf("expire: %q", out)
	}

	out = mustRun(t, "--catalog", cat, "cleanup", "--grace", "0s", "--dry-run")
	for _, p := range orig {
		if !strings.Contains(out, "would forget "+p+" (the user's file") {
			t.Errorf("dry run does not say it would forget %s:\n%s", p, out)
		}
	}
	for _, name := range listDir(t, firstRewrite) {
		if !strings.Contains(out, "would delete "+filepath.Join(firstRewrite, name)+"\n") {
			t.Errorf("dry run does not say it would delete %s:\n%s", name, out)
		}
	}
	if !strings.Contains(out, "would remove empty directory "+firstRewrite+"\n") ||
		!strings.Contains(out, "would delete 3 files, would forget 3 (left on disk), would keep 0") {
		t.Errorf("dry run:\n%s", out)
	}
	if len(listDir(t, firstRewrite)) != 3 {
		t.Fatal("a dry run deleted files")
	}

	out = mustRun(t, "--catalog", cat, "cleanup", "--grace", "0s")
	if !strings.Contains(out, "deleted 3 files, forgot 3 (left on disk), kept 0") || !strings.Contains(out, "removed empty directory "+firstRewrite) {
		t.Fatalf("cleanup: %q", out)
	}
	for _, p := range orig {
		if !fileExists(p) {
			t.Errorf("cleanup deleted the user's file %s", p)
		}
	}
	if fileExists(firstRewrite) {
		t.Error("the first rewrite's directory is left")
	}
	// data/ holds the user's files, nothing else; the live rewrite is
	// beside the catalog.
	if got := listDir(t, data); strings.Join(got, " ") != "part0.parquet part1.parquet part2.parquet" {
		t.Errorf("data/ after cleanup: %v", got)
	}
	if got := listDir(t, filepath.Join(cat+".files", "table-1")); strings.Join(got, " ") != "optimize-2" {
		t.Errorf("rewrites after cleanup: %v", got)
	}
	if q := mustRun(t, "--catalog", cat, "--format", "csv", "query", "SELECT count(*), count(DISTINCT v) FROM ev"); !strings.Contains(q, "90,90") {
		t.Errorf("query after cleanup: %q", q)
	}
	// The forgotten files left the catalog: a second cleanup has nothing.
	if out := mustRun(t, "--catalog", cat, "cleanup", "--grace", "0s"); !strings.Contains(out, "deleted 0 files, forgot 0") {
		t.Errorf("second cleanup: %q", out)
	}
}

// Files added with --take-ownership are rocklake's: cleanup deletes them,
// but never the directory they were in, which the user made.
func TestTakeOwnershipFilesAreDeleted(t *testing.T) {
	cat := newCatalogDir(t)
	staging := filepath.Join(t.TempDir(), "staging")
	handed := writeEvents(t, staging, 2)
	mine := writeEvents(t, filepath.Join(t.TempDir(), "mine"), 2)
	out := mustRun(t, "--catalog", cat, "add", "ev", staging, "--create", "--take-ownership")
	if !strings.Contains(out, "the files are rocklake's now") {
		t.Fatalf("add --take-ownership: %q", out)
	}
	var js map[string]any
	if err := json.Unmarshal([]byte(mustRun(t, "--catalog", cat, "--format", "json", "add", "ev", mine[0], mine[1])), &js); err != nil || js["owner"] != "user" {
		t.Fatalf("add --format json: %v, %v", js, err)
	}
	rewrite := filepath.Join(t.TempDir(), "rewrite")
	mustRun(t, "--catalog", cat, "compact", "ev", "--dir", rewrite)
	mustRun(t, "--catalog", cat, "expire", "--older-than", "0s", "--allow-short-retention")
	out = mustRun(t, "--catalog", cat, "cleanup", "--grace", "0s")
	if !strings.Contains(out, "deleted 2 files, forgot 2 (left on disk)") {
		t.Fatalf("cleanup: %q", out)
	}
	for _, p := range handed {
		if fileExists(p) {
			t.Errorf("a file handed over is left: %s", p)
		}
	}
	for _, p := range mine {
		if !fileExists(p) {
			t.Errorf("the user's file is gone: %s", p)
		}
	}
	if !fileExists(staging) || strings.Contains(out, "removed empty directory") {
		t.Errorf("cleanup removed the user's directory %s: %q", staging, out)
	}
	if q := mustRun(t, "--catalog", cat, "--format", "csv", "query", "SELECT count(*) FROM ev"); !strings.Contains(q, "120") {
		t.Errorf("query after cleanup: %q", q)
	}
}

// Cleanup deletes only files scheduled at least the grace period ago;
// younger ones wait, still scheduled, and go on a later run.
func TestCleanupGracePeriod(t *testing.T) {
	cat := newCatalogDir(t)
	data := filepath.Join(t.TempDir(), "data")
	writeEvents(t, data, 2)
	mustRun(t, "--catalog", cat, "add", "ev", data, "--create")
	mustRun(t, "--catalog", cat, "optimize", "ev", "--sort-by", "user_id", "--dir", filepath.Join(data, "a"))
	mustRun(t, "--catalog", cat, "optimize", "ev", "--sort-by", "v", "--dir", filepath.Join(data, "b"))
	mustRun(t, "--catalog", cat, "expire", "--older-than", "0s", "--allow-short-retention")
	rocklakes := filepath.Join(data, "a", "part-00000.parquet")

	// The default grace is an hour: the rewrite file waits.
	out := mustRun(t, "--catalog", cat, "cleanup")
	if !strings.Contains(out, "waiting "+rocklakes+" (scheduled ") || !strings.Contains(out, "deleted 0 files, forgot 2 (left on disk), kept 0; 1 waiting for the 1h0m0s grace period") {
		t.Fatalf("cleanup within the grace period: %q", out)
	}
	if !fileExists(rocklakes) {
		t.Fatal("a file within its grace period was deleted")
	}
	if out := mustRun(t, "--catalog", cat, "cleanup", "--grace", "1m"); !strings.Contains(out, "1 waiting") || !fileExists(rocklakes) {
		t.Fatalf("cleanup --grace 1m: %q", out)
	}
	time.Sleep(150 * time.Millisecond)
	out = mustRun(t, "--catalog", cat, "cleanup", "--grace", "100ms")
	if !strings.Contains(out, "deleted "+rocklakes+"\n") || !strings.Contains(out, "0 waiting") || fileExists(rocklakes) {
		t.Fatalf("cleanup after the grace period: %q", out)
	}
	if _, err := run(t, "--catalog", cat, "cleanup", "--grace", "-1h"); err == nil || !strings.Contains(err.Error(), "--grace") {
		t.Fatalf("cleanup --grace -1h: %v", err)
	}
}

// The retention floor: under 7 days is refused (dry runs too) with the
// override named; 7 days and more are not.
func TestExpireRetentionFloor(t *testing.T) {
	cat := newCatalogDir(t)
	data := filepath.Join(t.TempDir(), "data")
	writeEvents(t, data, 2)
	mustRun(t, "--catalog", cat, "add", "ev", data, "--create")
	for _, age := range []string{"0s", "90m", "6d", "167h", time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)} {
		for _, dry := range []bool{false, true} {
			args := []string{"--catalog", cat, "expire", "--older-than", age}
			if dry {
				args = append(args, "--dry-run")
			}
			_, err := run(t, args...)
			if err == nil || !strings.Contains(err.Error(), "pass --allow-short-retention") {
				t.Errorf("expire --older-than %s (dry run %v): %v", age, dry, err)
			}
		}
	}
	for _, age := range []string{"7d", "168h", "30d"} {
		if out := mustRun(t, "--catalog", cat, "expire", "--older-than", age); !strings.Contains(out, "no snapshot older than") {
			t.Errorf("expire --older-than %s: %q", age, out)
		}
	}
	out := mustRun(t, "--catalog", cat, "expire", "--older-than", "0s", "--allow-short-retention", "--dry-run")
	if !strings.Contains(out, "would expire 1 snapshot ") || !strings.Contains(out, "would forget 0 files") {
		t.Errorf("expire --dry-run: %q", out)
	}
	if q := mustRun(t, "--catalog", cat, "--format", "csv", "query", "--snapshot", "0", "SELECT 1"); !strings.Contains(q, "1") {
		t.Errorf("a dry run expired snapshot 0: %q", q)
	}
}

// Help text states the rules.
func TestHelpStatesOwnershipRules(t *testing.T) {
	for cmd, want := range map[string][]string{
		"add":     {"--take-ownership", "never", "leave the catalog, not the disk"},
		"cleanup": {"--grace", "never deleted", "stay on disk", "no other directory"},
		"expire":  {"--allow-short-retention", "7d", "stay on disk"},
	} {
		out := mustRun(t, cmd, "--help")
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%s --help does not say %q", cmd, w)
			}
		}
	}
}

// A column named rowid or __rn used to make compact and optimize commit
// snapshots reading no rows; names a rewrite uses itself made optimize
// fail. Every row survives every rewrite now.
func TestRewritesKeepRowsOfColumnsNamedRowid(t *testing.T) {
	cat := newCatalogDir(t)
	data := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	names := []string{"rowid", "__rn", "__rocklake_curve", "__rocklake_k0", "file_row_number", "filename", "order", `say "hi"`, "two words"}
	for f := range 3 {
		cols := make([]pqwrite.Column, len(names))
		for i, n := range names {
			vals := make([]*types.Value, 10)
			for j := range vals {
				v := types.IntValue(int64((f*10+j)*(i+1)) % 17)
				vals[j] = &v
			}
			cols[i] = pqwrite.Column{Name: n, Type: types.MustParseType("int64"), Values: vals}
		}
		if err := pqwrite.Write(filepath.Join(data, fmt.Sprintf("f%d.parquet", f)), cols, pqwrite.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	mustRun(t, "--catalog", cat, "add", "t", data, "--create")
	digest := func(snap string) string {
		sel := []string{"count(*)"}
		for _, n := range names {
			q := `"` + strings.ReplaceAll(n, `"`, `""`) + `"`
			sel = append(sel, fmt.Sprintf("sum(%s)", q), fmt.Sprintf("sum(hash(%s))", q))
		}
		return mustRun(t, "--catalog", cat, "--format", "csv", "query", "--snapshot", snap, "SELECT "+strings.Join(sel, ", ")+" FROM t")
	}
	want := digest("1")
	if !strings.Contains(want, "30,") {
		t.Fatalf("before: %q", want)
	}
	for i, args := range [][]string{
		{"compact", "t"},
		{"optimize", "t", "--sort-by", "rowid", "--rows-per-file", "7"},
		{"compact", "t", "--rows-per-file", "100"},
		{"optimize", "t", "--sort-by", "__rn,rowid", "--curve", "zorder", "--rows-per-file", "12"},
		{"optimize", "t", "--sort-by", "__rocklake_curve,__rocklake_k0", "--curve", "hilbert"},
	} {
		out := mustRun(t, append([]string{"--catalog", cat}, args...)...)
		if !strings.Contains(out, "(30 rows, ") {
			t.Fatalf("%v: %q", args, out)
		}
		if got := digest(fmt.Sprint(i + 2)); got != want {
			t.Fatalf("%v changed the table:\n got %s\nwant %s", args, got, want)
		}
	}
}
