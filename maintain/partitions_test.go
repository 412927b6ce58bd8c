package maintain

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/types"
)

// A table with Hive partition columns: deep verify checks the files' own
// columns and finds nothing wrong; optimize and compact, which would write
// files without the values the paths hold, refuse it and commit nothing.
func TestPartitionedTables(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for _, p := range []string{"k=1", "k=2", "k=__HIVE_DEFAULT_PARTITION__"} {
		vals := make([]*types.Value, 20)
		for i := range vals {
			v := types.IntValue(int64(i))
			vals[i] = &v
		}
		path := filepath.Join(dir, p, "f.parquet")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := pqwrite.Write(path, []pqwrite.Column{{Name: "x", Type: types.MustParseType("int64"), Values: vals}}, pqwrite.Options{RowGroupRows: 10}); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, path)
	}
	c, _ := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	if _, err := ingest.Add(c, "t", paths, ingest.Options{Create: true, Hive: true}); err != nil {
		t.Fatal(err)
	}
	e, _ := engine.New(c)
	defer e.Close()
	ctx := context.Background()
	rep, err := Verify(ctx, e, "t", catalog.Latest, true)
	if err != nil || len(rep.Problems) != 0 || rep.Units == 0 {
		t.Fatalf("deep verify of a partitioned table: %+v %v", rep, err)
	}
	before, _ := c.Snapshots()
	if _, err := Optimize(ctx, e, "t", OptimizeOptions{SortBy: []string{"x"}}); err == nil || !strings.Contains(err.Error(), `partition column "k"`) {
		t.Errorf("optimize of a partitioned table: %v", err)
	}
	if _, err := MergeSmallFiles(ctx, e, "t", MergeOptions{}); err == nil || !strings.Contains(err.Error(), `partition column "k"`) {
		t.Errorf("compact of a partitioned table: %v", err)
	}
	if after, _ := c.Snapshots(); len(after) != len(before) {
		t.Error("a refused rewrite committed a snapshot")
	}
}
