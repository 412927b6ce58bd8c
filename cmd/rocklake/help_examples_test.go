package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/internal/s3test"
	"github.com/rocklake/rocklake/types"
)

// exampleState is what a command's examples expect to find in the
// directory they run in.
type exampleState int

const (
	noCatalog   exampleState = iota // nothing but the data files
	initialized                     // ./lake made by init
	created                         // and table events created, empty
	loaded                          // and data/events/ added in two snapshots (3 is the latest)
)

// exampleStates says, per command, the state its examples start from.
// A command with examples must be listed, so that new examples run too.
var exampleStates = map[string]exampleState{
	"rocklake init":            noCatalog,
	"rocklake table create":    initialized,
	"rocklake add":             created,
	"rocklake table drop":      loaded,
	"rocklake table rename":    loaded,
	"rocklake table alter":     loaded,
	"rocklake files":           loaded,
	"rocklake rm":              loaded,
	"rocklake refresh":         loaded,
	"rocklake erasure":         loaded,
	"rocklake fold":            loaded,
	"rocklake changes":         loaded,
	"rocklake plan":            loaded,
	"rocklake query":           loaded,
	"rocklake expire":          loaded,
	"rocklake cleanup":         loaded,
	"rocklake catalog copy":    loaded,
	"rocklake catalog compact": loaded,
	"rocklake serve passwd":    noCatalog,
	"rocklake serve token":     noCatalog,

	// DuckLake interoperability: the examples export the loaded catalog first.
	"rocklake export ducklake": loaded,
	"rocklake import ducklake": loaded,
	"rocklake sync ducklake":   loaded,
}

// writeExampleData writes what the examples name: events files under
// data/events/ (ts, user_id, kind, value, as the table create example
// declares them), a staging directory, Hive-style partitioned sales under
// data/sales/, events with one more column under data/wide/, and
// report.sql.
func writeExampleData(t *testing.T, dir string) {
	t.Helper()
	write := func(path string, day, n int, extra ...pqwrite.Column) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		ts, ids, kinds, vals := make([]*types.Value, n), make([]*types.Value, n), make([]*types.Value, n), make([]*types.Value, n)
		for i := range n {
			a := types.IntValue((int64(1704067200+day*86400) + int64(i)*60) * 1_000_000)
			b := types.IntValue(int64(i % 7))
			c := types.StringValue([]string{"click", "view", "buy"}[i%3])
			d := types.FloatValue(float64(i) / 4)
			ts[i], ids[i], kinds[i], vals[i] = &a, &b, &c, &d
		}
		err := pqwrite.Write(path, append([]pqwrite.Column{
			{Name: "ts", Type: types.MustParseType("timestamptz"), Values: ts},
			{Name: "user_id", Type: types.MustParseType("int64"), Values: ids},
			{Name: "kind", Type: types.MustParseType("varchar"), Values: kinds},
			{Name: "value", Type: types.MustParseType("float64"), Values: vals},
		}, extra...), pqwrite.Options{})
		if err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, "data", "events", "2024-01-01.parquet"), 0, 40)
	write(filepath.Join(dir, "data", "events", "2024-01-02.parquet"), 1, 40)
	write(filepath.Join(dir, "staging", "day-42", "part-0.parquet"), 41, 20)
	note := types.StringValue("late")
	write(filepath.Join(dir, "data", "wide", "part-0.parquet"), 2, 1, pqwrite.Column{Name: "note", Type: types.MustParseType("varchar"), Values: []*types.Value{&note}})
	for _, p := range []string{"region=eu/day=2024-01-02", "region=us/day=2024-01-03"} {
		amount := types.IntValue(int64(len(p)))
		path := filepath.Join(dir, "data", "sales", p, "part-0.parquet")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := pqwrite.Write(path, []pqwrite.Column{{Name: "amount", Type: types.MustParseType("int64"), Values: []*types.Value{&amount}}}, pqwrite.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	sql := "SELECT kind, count(*) AS n FROM events GROUP BY kind ORDER BY kind;\nSELECT count(*) AS n FROM events;\n"
	if err := os.WriteFile(filepath.Join(dir, "report.sql"), []byte(sql), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestHelpExamplesRun runs every example of every command's --help as a
// shell runs it (globs, quotes, pipes and redirections included), each in
// a directory of its own holding what it names, and wants each to
// succeed. Examples naming a PostgreSQL server elsewhere are left out.
func TestHelpExamplesRun(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh to run the examples with")
	}
	bin := t.TempDir()
	script := fmt.Sprintf("#!/bin/sh\n%s=1 exec %q \"$@\"\n", asCLI, os.Args[0])
	if err := os.WriteFile(filepath.Join(bin, "rocklake"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	writeExampleData(t, data)

	var cmds []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		cmds = append(cmds, c)
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRootCmd())
	// Examples naming s3:// locations run against a server of their own,
	// holding the example data under s3://lake/.
	var s3env []string
	s3ready := false
	objects := func() bool {
		if !s3ready {
			s3ready = true
			if s3env = launchExampleObjects(t, data); s3env != nil {
				s3env = append(s3env, "ROCKLAKE_CACHE_DIR="+t.TempDir())
			}
		}
		return s3env != nil
	}
	ran := 0
	for _, c := range cmds {
		if c.Example == "" {
			continue
		}
		state, ok := exampleStates[c.CommandPath()]
		if !ok {
			t.Errorf("%s has examples but no entry in exampleStates", c.CommandPath())
			continue
		}
		for _, line := range strings.Split(c.Example, "\n") {
			line = strings.TrimSpace(line)
			if line == "" {
				continue
			}
			if strings.Contains(line, "postgres://") {
				t.Logf("left out (needs that PostgreSQL server): %s", line)
				continue
			}
			dir := t.TempDir()
			prepareExampleDir(t, dir, data, state)
			sh := exec.Command("sh", "-c", line)
			sh.Dir = dir
			sh.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "ROCKLAKE_CATALOG=")
			if strings.Contains(line, "s3://") {
				if !objects() {
					continue
				}
				sh.Env = append(sh.Env, s3env...)
			}
			out, err := sh.CombinedOutput()
			if err != nil {
				t.Errorf("example of %s failed: %s\n%v\n%s", c.CommandPath(), line, err, out)
			}
			ran++
		}
	}
	if ran < 20 {
		t.Fatalf("ran %d examples; the walk over the commands found too few", ran)
	}
}

// launchExampleObjects starts a throwaway S3-compatible server holding the
// example events of data (writeExampleData) as s3://lake/events/*.parquet,
// stopped when t ends, and returns the environment that reaches it; nil
// when no such server can be had here (a failure with
// ROCKLAKE_REQUIRE_S3=1, as in CI).
func launchExampleObjects(t *testing.T, data string) []string {
	t.Helper()
	srv, err := s3test.Launch()
	if err != nil {
		if os.Getenv("ROCKLAKE_REQUIRE_S3") == "1" {
			t.Fatal(err)
		}
		t.Logf("examples naming s3:// left out: %v", err)
		return nil
	}
	t.Cleanup(func() { srv.Close() })
	srv.Bucket(t, "lake")
	for _, f := range []string{"2024-01-01.parquet", "2024-01-02.parquet"} {
		b, err := os.ReadFile(filepath.Join(data, "data", "events", f))
		if err != nil {
			t.Fatal(err)
		}
		srv.Put(t, "s3://lake/events/"+f, b)
	}
	var env []string
	for k, v := range srv.Env(srv.Endpoint) {
		env = append(env, k+"="+v)
	}
	return env
}

// prepareExampleDir makes dir hold a copy of the example data in data and
// a catalog ./lake in state: initialized, table events created as the
// data's files have it, and loaded with data/events/ in two snapshots (3 is
// the latest).
func prepareExampleDir(t *testing.T, dir, data string, state exampleState) {
	t.Helper()
	if err := os.CopyFS(dir, os.DirFS(data)); err != nil {
		t.Fatal(err)
	}
	lake := filepath.Join(dir, "lake")
	if state >= initialized {
		mustRun(t, "--catalog", lake, "init")
	}
	if state >= created {
		mustRun(t, "--catalog", lake, "table", "create", "events", "ts TIMESTAMPTZ, user_id BIGINT, kind VARCHAR, value DOUBLE")
	}
	if state >= loaded {
		for _, f := range []string{"2024-01-01.parquet", "2024-01-02.parquet"} {
			mustRun(t, "--catalog", lake, "add", "events", filepath.Join(dir, "data", "events", f))
		}
	}
}
