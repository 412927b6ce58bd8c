package rocklake_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/rocklake/rocklake"
	"github.com/rocklake/rocklake/internal/pathgate/gatetest"
)

// A lake opened with a sandbox registers only files its engine may read,
// judged after links are resolved: every case of the class is refused or
// admitted as the gate decides, and a refusal commits nothing.
func TestAddThroughTheGate(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	write := func(t *testing.T, p string) { writeParquet(t, p, "SELECT range AS id FROM range(3)") }
	cases := gatetest.Cases(t, data, write)
	first := filepath.Join(data, "first.parquet")
	write(t, first)
	loc := filepath.Join(dir, "lake")
	lake, err := rocklake.Create(ctx, loc, rocklake.OpenOptions{Sandbox: &rocklake.Sandbox{Dirs: []string{data}}})
	if err != nil {
		t.Fatal(err)
	}
	defer lake.Close()
	if _, err := lake.Add(ctx, "t", []string{first}, rocklake.AddOptions{Create: true}); err != nil {
		t.Fatal(err)
	}
	snaps := func() int {
		s, err := lake.Snapshots(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return len(s)
	}
	for _, tc := range cases {
		before := snaps()
		_, err := lake.Add(ctx, "t", []string{tc.Arg}, rocklake.AddOptions{})
		switch {
		case tc.Admit && err != nil:
			t.Errorf("%s (%s): %v", tc.Name, tc.Arg, err)
		case !tc.Admit && err == nil:
			t.Errorf("%s (%s): registered", tc.Name, tc.Arg)
		case !tc.Admit && snaps() != before:
			t.Errorf("%s: refused (%v) but committed", tc.Name, err)
		}
	}
	// Whatever was refused, every query still reads the table.
	if _, err := lake.Query(ctx, "SELECT count(*) FROM t", rocklake.QueryOptions{}); err != nil {
		t.Fatalf("a query after the refusals: %v", err)
	}
	// The refusal names the class: the link outside, as a sentinel.
	_, err = lake.Add(ctx, "t", []string{cases[0].Arg}, rocklake.AddOptions{})
	if !errors.Is(err, rocklake.ErrOutsideReadDirs) {
		t.Errorf("a link outside: %v, want ErrOutsideReadDirs", err)
	}
}
