package pathgate

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGate(t *testing.T) {
	root := t.TempDir()
	data := filepath.Join(root, "data")
	other := filepath.Join(root, "data2")
	for _, d := range []string{data, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A readable directory reached through a link admits its files by
	// their resolved names too.
	linked := filepath.Join(root, "linked")
	if err := os.Symlink(data, linked); err != nil {
		t.Fatal(err)
	}
	g := New([]string{linked + "/"})
	for _, tc := range []struct {
		path string
		ok   bool
	}{
		{filepath.Join(data, "a.parquet"), true},
		{filepath.Join(linked, "a.parquet"), true},
		{filepath.Join(data, "sub", "b.parquet"), true},
		{data, true},
		{filepath.Join(other, "a.parquet"), false}, // a sibling sharing the prefix
		{filepath.Join(data, "..", "data2", "a.parquet"), false},
		{"/etc/passwd", false},
		{root, false},
	} {
		err := g.Check(tc.path)
		if (err == nil) != tc.ok {
			t.Errorf("Check(%s) = %v, want admitted %v", tc.path, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrOutside) {
			t.Errorf("Check(%s) = %v, not ErrOutside", tc.path, err)
		}
	}
	if !New(nil).Open() || New(nil).Check("/etc/passwd") != nil {
		t.Error("a gate of no directories restricts")
	}
	if err := New([]string{data}).CheckNamed(filepath.Join(data, "l.parquet"), "/etc/passwd"); err == nil ||
		!errors.Is(err, ErrOutside) || !strings.Contains(err.Error(), "l.parquet resolves to /etc/passwd") {
		t.Errorf("CheckNamed = %v", err)
	}
}
