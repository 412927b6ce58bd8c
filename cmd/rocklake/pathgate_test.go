package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/internal/pathgate/gatetest"
	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/types"
)

// `rocklake add` forwarded to a server registers only files the server's
// engine may read, judged after links are resolved, and a refusal commits
// nothing: the table stays readable for every client.
func TestForwardedAddThroughTheGate(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	write := func(t *testing.T, p string) {
		var ids []*types.Value
		for i := range 3 {
			v := types.IntValue(int64(i))
			ids = append(ids, &v)
		}
		if err := pqwrite.Write(p, []pqwrite.Column{{Name: "id", Type: types.MustParseType("int64"), Values: ids}}, pqwrite.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	cases := gatetest.Cases(t, data, write)
	first := filepath.Join(data, "first.parquet")
	write(t, first)
	lake := filepath.Join(dir, "lake")
	mustRun(t, "--catalog", lake, "init")
	mustRun(t, "--catalog", lake, "add", "t", first, "--create")
	stop := serveInBackground(t, lake)
	defer stop()
	snapshots := func() string {
		out, err := run(t, "--catalog", lake, "snapshots")
		if exitCode(err) != 0 {
			t.Fatalf("snapshots through the server: %v %s", err, out)
		}
		return out
	}
	for _, tc := range cases {
		before := snapshots()
		out, err := run(t, "--catalog", lake, "add", "t", tc.Arg)
		switch {
		case tc.Admit && exitCode(err) != 0:
			t.Errorf("%s (%s): %v %s", tc.Name, tc.Arg, err, out)
		case !tc.Admit && exitCode(err) == 0:
			t.Errorf("%s (%s): registered through the server: %s", tc.Name, tc.Arg, out)
		case !tc.Admit && snapshots() != before:
			t.Errorf("%s: refused but committed", tc.Name)
		}
	}
	out, err := run(t, "--catalog", lake, "query", "SELECT count(*) FROM t")
	if exitCode(err) != 0 || !strings.Contains(out, "12") { // the first file and three admitted ones
		t.Errorf("a query after the refusals: %q %v", out, err)
	}
}
