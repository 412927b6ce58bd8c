package main

import (
	"bytes"
	"encoding/json"
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
		code string // the error code --format json gives
		args []string
	}{
		{0, "", []string{"version"}},
		{0, "", []string{"query", "SELECT count(*) FROM events"}},
		{0, "", []string{"verify", "events"}},
		{2, codeUsage, []string{"frobnicate"}},
		{2, codeUsage, []string{"table"}},
		{2, codeUsage, []string{"snapshots", "--bogus"}},
		{2, codeUsage, []string{"stats"}},
		{2, codeUsage, []string{"stats", "events", "--snapshot", "abc"}},
		{2, codeUsage, []string{"stats", "events", "--snapshot", "-5"}},
		{2, codeUsage, []string{"expire", "--older-than", "seven days"}},
		{2, codeUsage, []string{"expire"}},
		{2, codeUsage, []string{"cleanup", "--grace", "-1h"}},
		{2, codeUsage, []string{"compact", "events", "--rows-per-file", "0"}},
		{2, codeUsage, []string{"compact", "events", "--target-file-size", "huge"}},
		{2, codeUsage, []string{"optimize", "events"}},
		{2, codeUsage, []string{"optimize", "events", "--sort-by", "user_id", "--curve", "peano"}},
		{2, codeUsage, []string{"analyze", "events"}},
		{1, codeNotFound, []string{"stats", "nosuch"}},
		{1, codeNotFound, []string{"files", "events", "--snapshot", "99"}},
		{1, codeQuery, []string{"query", "SELECT nosuch FROM events"}},
		{1, codeInvalid, []string{"query", "COPY (SELECT * FROM events) TO '/tmp/x.csv'"}},
		{1, codeExists, []string{"table", "create", "events", "id INT"}},
		{1, codeInvalid, []string{"add", "events", "../../go.mod"}},
		{1, codeNotFound, []string{"rm", "events", "../../go.mod"}},
		{3, codeCheckFailed, []string{"verify", "gone"}},
	} {
		for _, format := range []string{formatText, formatJSON} {
			args := append([]string{"--catalog", dir}, c.args...)
			if format == formatJSON {
				args = append(args, "--format", "json")
			}
			line := strings.Join(args[2:], " ")
			code, stdout, stderr := runProcess(t, "", args...)
			if code != c.want {
				t.Errorf("rocklake %s: exit %d, want %d (stderr %q)", line, code, c.want, stderr)
				continue
			}
			switch {
			case c.want == 0:
				if stderr != "" && format == formatJSON && !strings.HasPrefix(stderr, "(") {
					t.Errorf("rocklake %s succeeded with stderr %q", line, stderr)
				}
			case format == formatText:
				if c.want != exitProblems && !strings.HasPrefix(stderr, "rocklake: ") {
					t.Errorf("rocklake %s: stderr %q, want a rocklake: message", line, stderr)
				}
			default:
				// One JSON object on one line, with the code of the kind of
				// failure and the same message as the text form.
				var e errorJSON
				if err := json.Unmarshal([]byte(stderr), &e); err != nil || strings.Count(stderr, "\n") != 1 {
					t.Errorf("rocklake %s: stderr is not one JSON line (%v): %q", line, err, stderr)
					continue
				}
				if e.Error.Code != c.code || e.Error.Message == "" || strings.HasPrefix(e.Error.Message, "rocklake:") {
					t.Errorf("rocklake %s: error %+v, want code %q and a message", line, e.Error, c.code)
				}
				if c.want != exitProblems && stdout != "" {
					t.Errorf("rocklake %s failed but printed %q", line, stdout)
				}
			}
		}
	}
	// Nothing the failed commands did changed the catalog.
	if _, out, _ := runProcess(t, "", "--catalog", dir, "snapshots"); strings.Count(out, "\n") != 4 {
		t.Errorf("snapshots after the failures:\n%s", out)
	}
}

// TestJSONErrorKeepsPasswordsOut: a PostgreSQL location's password never
// reaches an error message, in either format.
func TestJSONErrorKeepsPasswordsOut(t *testing.T) {
	loc := "postgres://someone:s3cretPassw0rd@127.0.0.1:1/nodb?connect_timeout=1"
	for _, format := range []string{formatText, formatJSON} {
		code, stdout, stderr := runProcess(t, "", "--catalog", loc, "--format", format, "snapshots")
		if code != exitFailure || strings.Contains(stdout+stderr, "s3cretPassw0rd") || !strings.Contains(stderr, "someone") {
			t.Errorf("--format %s: exit %d, output %q %q; want exit 1 naming the user, not the password", format, code, stdout, stderr)
		}
		var e errorJSON
		if format == formatJSON && (json.Unmarshal([]byte(stderr), &e) != nil || e.Error.Code != codeUnavailable) {
			t.Errorf("a server that refuses the connection: %q, want code %q", stderr, codeUnavailable)
		}
	}
}

// TestWordingOfOne: counts of one read as English, and --snapshot's help
// names its default once.
func TestWordingOfOne(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "lake")
	paths := writeEvents(t, filepath.Join(base, "data"), 1)
	mustRun(t, "--catalog", dir, "init")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"table", "create", "one", "id BIGINT"}, "created table one (1 column) at snapshot 1"},
		{[]string{"add", "events", paths[0], "--create"}, "added 1 file, 30 rows,"},
		{[]string{"add", "events", paths[0], "--skip-existing"}, "all 1 file is registered already"},
		{[]string{"verify", "events"}, "1 file checked, 0 problems"},
		{[]string{"query", "SELECT count(*) FROM events"}, "(1 row in "},
		{[]string{"rm", "events", paths[0]}, "removed 1 file from events"},
		{[]string{"expire", "--older-than", "0s", "--allow-short-retention", "--dry-run"}, "would expire 3 snapshots (0..2)"},
		{[]string{"stats", "--help"}, "read as of this snapshot id (default latest)\n"},
	} {
		out := mustRun(t, append([]string{"--catalog", dir}, c.args...)...)
		if !strings.Contains(out, c.want) {
			t.Errorf("rocklake %s:\n%s\nwant %q", strings.Join(c.args, " "), out, c.want)
		}
	}
}
