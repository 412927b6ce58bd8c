package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runProcess runs the CLI as a process of its own and returns its exit
// status, standard output and standard error: the status is what main
// makes of the command's error, which in-process runs never see.
func runProcess(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := cli(args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Stdin = strings.NewReader(stdin)
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String(), errb.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String(), errb.String()
	}
	t.Fatalf("rocklake %s: %v", strings.Join(args, " "), err)
	return 0, "", ""
}

// exitCatalog is a catalog with table events over two files, and a third
// file registered and then deleted from disk in table gone (so verify of
// gone finds a problem).
func exitCatalog(t *testing.T) string {
	t.Helper()
	base := t.TempDir()
	dir := filepath.Join(base, "lake")
	paths := writeEvents(t, filepath.Join(base, "data"), 3)
	mustRun(t, "--catalog", dir, "init")
	mustRun(t, "--catalog", dir, "add", "events", paths[0], paths[1], "--create")
	mustRun(t, "--catalog", dir, "add", "gone", paths[2], "--create")
	if err := os.Remove(paths[2]); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestExitStatus: scripts tell a command line that is wrong (2) from a
// command that ran and failed (1) and from a check that found problems
// (3), as psql does.
func TestExitStatus(t *testing.T) {
	dir := exitCatalog(t)
	for _, c := range []struct {
		want int
		args []string
	}{
		{0, []string{"version"}},
		{0, []string{"query", "SELECT count(*) FROM events"}},
		{0, []string{"verify", "events"}},
		{2, []string{"frobnicate"}},
		{2, []string{"table"}},
		{2, []string{"snapshots", "--bogus"}},
		{2, []string{"stats"}},
		{2, []string{"stats", "events", "--snapshot", "abc"}},
		{2, []string{"stats", "events", "--snapshot", "-5"}},
		{2, []string{"query", "--format", "xml", "SELECT 1"}},
		{2, []string{"expire", "--older-than", "seven days"}},
		{2, []string{"expire"}},
		{2, []string{"cleanup", "--grace", "-1h"}},
		{2, []string{"compact", "events", "--rows-per-file", "0"}},
		{2, []string{"compact", "events", "--target-file-size", "huge"}},
		{2, []string{"optimize", "events"}},
		{2, []string{"optimize", "events", "--sort-by", "user_id", "--curve", "peano"}},
		{2, []string{"analyze", "events"}},
		{1, []string{"stats", "nosuch"}},
		{1, []string{"query", "SELECT nosuch FROM events"}},
		{1, []string{"query", "SELECT * FROM nosuch"}},
		{1, []string{"table", "create", "events", "id INT"}},
		{3, []string{"verify", "gone"}},
	} {
		code, _, stderr := runProcess(t, "", append([]string{"--catalog", dir}, c.args...)...)
		if code != c.want {
			t.Errorf("rocklake %s: exit %d, want %d (stderr %q)", strings.Join(c.args, " "), code, c.want, stderr)
		}
		if c.want != 0 && c.want != 3 && !strings.HasPrefix(stderr, "rocklake: ") {
			t.Errorf("rocklake %s: stderr %q, want one rocklake: line", strings.Join(c.args, " "), stderr)
		}
	}
	// Nothing the failed commands did changed the catalog.
	if _, out, _ := runProcess(t, "", "--catalog", dir, "snapshots"); strings.Count(out, "\n") != 4 {
		t.Errorf("snapshots after the failures:\n%s", out)
	}
}
