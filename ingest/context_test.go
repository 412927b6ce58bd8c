package ingest

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/rocklake/rocklake/catalog"
)

// A cancel stops the footer reads where they are and commits nothing; a
// context cancelled before the commit commits nothing either.
func TestAddContextStops(t *testing.T) {
	dir := realDir(t)
	var paths []string
	for i := range 5 {
		paths = append(paths, writeInts(t, filepath.Join(dir, fmt.Sprintf("f%d.parquet", i)), "id", 10))
	}
	c, err := catalog.Create(filepath.Join(dir, "cat"), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	before := snapshotCount(t, c)

	ctx, cancel := context.WithCancel(context.Background())
	read := 0
	_, err = AddContext(ctx, c, "t", paths, Options{Create: true, Workers: 1, Progress: func(done, total int) {
		read = done
		cancel() // after the first footer: no other may be read
	}})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("AddContext cancelled during the reads: err = %v, want context.Canceled", err)
	}
	if read != 1 {
		t.Errorf("%d footers read after the cancel at the first, want 1", read)
	}
	if n := snapshotCount(t, c); n != before {
		t.Errorf("%d snapshots after a cancelled add, want %d", n, before)
	}

	if _, err := AddContext(ctx, c, "t", paths, Options{Create: true}); !errors.Is(err, context.Canceled) {
		t.Errorf("AddContext with a done context: err = %v, want context.Canceled", err)
	}
	if n := snapshotCount(t, c); n != before {
		t.Errorf("%d snapshots after an add with a done context, want %d", n, before)
	}

	res, err := AddContext(context.Background(), c, "t", paths, Options{Create: true})
	if err != nil || res.Files != 5 {
		t.Fatalf("AddContext with a live context: %d files, %v; want 5", res.Files, err)
	}
}
