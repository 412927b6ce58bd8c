package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/internal/testkit"
	"github.com/rocklake/rocklake/kv/kvtest"
)

// lakeOf registers files as table t in a new in-memory catalog.
func lakeOf(t *testing.T, paths []string) (*catalog.Catalog, ingest.Result, *Engine) {
	t.Helper()
	c, _ := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	res, err := ingest.Add(c, "t", paths, ingest.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return c, res, e
}

// answerOf is a query's rows at a snapshot, one line each.
func answerOf(t *testing.T, e *Engine, snap int64, q string) string {
	t.Helper()
	res, err := e.Query(context.Background(), q, QueryOptions{Snapshot: snap})
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	var out []string
	for _, row := range res.Rows {
		out = append(out, rowText(row))
	}
	return strings.Join(out, "\n")
}

// twoColumnLake is a table of 20 files whose rows have independent
// uniform x and y: every file spans both columns' whole ranges.
func twoColumnLake(t *testing.T) (string, *catalog.Catalog, ingest.Result, *Engine) {
	t.Helper()
	dir := t.TempDir()
	paths := testkit.TwoColumnFiles(t, dir)
	c, res, e := lakeOf(t, paths)
	return dir, c, res, e
}
