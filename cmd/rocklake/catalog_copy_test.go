package main

import (
	"bytes"
	"encoding/json"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
)

// runSplit runs the CLI in-process and returns stdout and stderr apart.
func runSplit(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), errOut.String(), err
}

// TestCatalogCopyCommand copies a directory catalog into PostgreSQL and
// back: every command reads the same catalog from each, no output shows
// the password, and a destination that holds a catalog is refused.
func TestCatalogCopyCommand(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "lake")
	paths := writeEvents(t, filepath.Join(base, "data"), 4)
	mustRun(t, "--catalog", dir, "init")
	mustRun(t, "--catalog", dir, "table", "create", "other", "id BIGINT, name VARCHAR")
	mustRun(t, "--catalog", dir, "add", "events", paths[0], paths[1], "--create")
	mustRun(t, "--catalog", dir, "add", "events", paths[2], paths[3])
	mustRun(t, "--catalog", dir, "rm", "events", paths[1])

	loc, password := pgCatalog(t)
	k := secretKeeper{t, []string{password}}
	out := k.mustRun("catalog", "copy", dir, loc)
	if !strings.HasPrefix(out, "copied catalog "+dir+" to "+named) || !strings.Contains(out, "reads back equal") {
		t.Fatal(k.hide("copy to PostgreSQL: %q", out))
	}
	back := filepath.Join(base, "back")
	stdout, stderr, err := runSplit(t, "--format", "json", "catalog", "copy", "--progress", loc, back)
	k.check([]string{"catalog", "copy", loc, back}, stdout, stderr)
	if err != nil {
		t.Fatal(k.hide("copy back: %v", err))
	}
	var res struct {
		Source, Destination string
		Keys, Bytes         int64
		Snapshot            int64 `json:"snapshot_id"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || !strings.HasPrefix(res.Source, named) || res.Destination != back || res.Keys < 20 || res.Bytes < 1000 || res.Snapshot != 4 {
		t.Fatal(k.hide("copy back: %+v %v\n%s", res, err, stdout))
	}
	if !strings.Contains(stderr, "copied ") || !strings.Contains(stderr, "checked ") {
		t.Errorf("--progress printed %q; want the copy's and the check's progress", stderr)
	}

	for _, cmd := range [][]string{
		{"--format", "json", "snapshots"},
		{"table", "list"},
		{"files", "events"},
		{"--format", "json", "stats", "events", "--column", "user_id"},
		{"files", "events", "--snapshot", "2"},
		{"--format", "csv", "query", "SELECT user_id, count(*) FROM events GROUP BY ALL ORDER BY ALL"},
	} {
		want := mustRun(t, append([]string{"--catalog", dir}, cmd...)...)
		for _, c := range []string{loc, back} {
			if got := k.mustRun(append([]string{"--catalog", c}, cmd...)...); got != want {
				t.Error(k.hide("rocklake --catalog %s %s:\n%s\nwant (the original's)\n%s", c, strings.Join(cmd, " "), got, want))
			}
		}
	}

	k.fails([]string{"catalog", "copy", dir, loc}, named, "already exists", "never overwrites")
	k.fails([]string{"catalog", "copy", loc, back}, back, "already exists")
	wrong := withURL(t, loc, func(u *url.URL) { u.User = url.UserPassword(u.User.Username(), "wrong-pw-31c9") })
	k.secrets = append(k.secrets, "wrong-pw-31c9")
	k.fails([]string{"catalog", "copy", wrong, filepath.Join(base, "never")}, "copy source", named, "password authentication failed")
	k.fails([]string{"catalog", "copy", dir, wrong}, "copy destination", named, "password authentication failed")
	if fileExists(filepath.Join(base, "never")) {
		t.Error("a copy from a source that did not open made its destination")
	}
}

func TestCatalogCopyUsage(t *testing.T) {
	for args, want := range map[string]string{
		"catalog":           "needs a command: compact, copy",
		"catalog copy /a":   "accepts 2 arg",
		"catalog cp /a /b":  `unknown command "cp"`,
		"catalog copy -x a": "unknown shorthand flag",
	} {
		_, err := run(t, strings.Fields(args)...)
		if err == nil || exitCode(err) != exitUsage || !strings.Contains(err.Error(), want) {
			t.Errorf("rocklake %s: exit %d, %v; want a usage error saying %q", args, exitCode(err), err, want)
		}
	}
}
