package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/cmd/rocklake/internal/clidocs"
)

// The checked-in CLI reference (docs/cli) is what the generator writes
// from the commands now: a command, flag or help text changed without
// regenerating the pages fails here.
func TestCLIReferenceIsCurrent(t *testing.T) {
	// Defaults that follow the environment are rendered as a fresh shell
	// has them, as the generator does.
	t.Setenv("ROCKLAKE_CATALOG", "")
	want, err := clidocs.Markdown(newRootCmd())
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("..", "..", "docs", "cli")
	have, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	stale := 0
	for _, p := range have {
		name := filepath.Base(p)
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		w, ok := want[name]
		switch {
		case !ok:
			t.Errorf("docs/cli/%s documents a command that does not exist", name)
			stale++
		case !bytes.Equal(got, w):
			t.Errorf("docs/cli/%s differs from the command's help:\n%s", name, firstDifference(string(got), string(w)))
			stale++
		}
	}
	for _, name := range clidocs.Names(want) {
		if !slices.Contains(have, filepath.Join(dir, name)) {
			t.Errorf("docs/cli/%s is missing", name)
			stale++
		}
	}
	if stale > 0 {
		t.Errorf("%d pages of docs/cli are stale; regenerate them from the repository's root with\n\t%s", stale, clidocs.Regenerate)
	}
}

// firstDifference shows the first line where two texts differ.
func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d\n\tchecked in: %q\n\tgenerated:  %q", i+1, gl, wl)
		}
	}
	return "(same lines)"
}
