package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/types"
)

// analyze measures a sorted column as perfectly clustered and a random one
// as spread over every file, and --plot draws one bar per file.
func TestAnalyzeCommand(t *testing.T) {
	dir := newCatalogDir(t)
	data := t.TempDir()
	r := rand.New(rand.NewPCG(8, 9))
	var paths []string
	for f := range 10 {
		var sorted, random []*types.Value
		for i := range 100 {
			s := types.IntValue(int64(f*100 + i))
			x := types.IntValue(r.Int64N(1000))
			sorted, random = append(sorted, &s), append(random, &x)
		}
		p := filepath.Join(data, fmt.Sprintf("f%d.parquet", f))
		if err := pqwrite.Write(p, []pqwrite.Column{
			{Name: "s", Type: types.MustParseType("int64"), Values: sorted},
			{Name: "r", Type: types.MustParseType("int64"), Values: random},
		}, pqwrite.Options{RowGroupRows: 50}); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	mustRun(t, append([]string{"--catalog", dir, "add", "t", "--create"}, paths...)...)

	if _, err := run(t, "--catalog", dir, "analyze", "t"); err == nil || !strings.Contains(err.Error(), "--column") {
		t.Fatalf("analyze without --column: %v", err)
	}
	var got struct {
		Files, RowGroups struct {
			Units     int     `json:"units"`
			AvgDepth  float64 `json:"avg_overlap_depth"`
			MaxDepth  int     `json:"max_overlap_depth"`
			PointRead float64 `json:"point_query_fraction"`
		}
	}
	out := mustRun(t, "--catalog", dir, "--format", "json", "analyze", "t", "--column", "s")
	if err := json.Unmarshal([]byte(strings.ReplaceAll(out, `"row_groups"`, `"rowgroups"`)), &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got.Files.Units != 10 || got.Files.AvgDepth != 1 || got.Files.MaxDepth != 1 || got.RowGroups.Units != 20 || got.RowGroups.AvgDepth != 1 {
		t.Fatalf("sorted column: %s", out)
	}

	svg := filepath.Join(t.TempDir(), "r.svg")
	out = mustRun(t, "--catalog", dir, "analyze", "t", "--column", "r", "--plot", svg)
	if !strings.Contains(out, "table t column r (BIGINT)") || !strings.Contains(out, "\nfiles       10") ||
		!strings.Contains(out, "\nrow groups  20") || !strings.Contains(out, "plot written to "+svg) {
		t.Fatalf("analyze --plot: %q", out)
	}
	b, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "<svg") || strings.Count(string(b), "<rect") != 10 || !strings.Contains(string(b), "t.r (BIGINT): 10 files") {
		t.Fatalf("plot: %s", b)
	}
}
