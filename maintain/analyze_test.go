package maintain

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/types"
)

// clusteredFiles writes 10 files of 100 rows, two row groups each: column
// s sorted across the files (file f holds f*100 .. f*100+99), column r
// random over 0..999 in every file.
func clusteredFiles(t *testing.T) []string {
	t.Helper()
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(8, 9))
	var paths []string
	for f := range 10 {
		var sorted, random []*types.Value
		for i := range 100 {
			s := types.IntValue(int64(f*100 + i))
			x := types.IntValue(r.Int64N(1000))
			sorted, random = append(sorted, &s), append(random, &x)
		}
		p := filepath.Join(dir, fmt.Sprintf("f%d.parquet", f))
		if err := pqwrite.Write(p, []pqwrite.Column{
			{Name: "s", Type: types.MustParseType("int64"), Values: sorted},
			{Name: "r", Type: types.MustParseType("int64"), Values: random},
		}, pqwrite.Options{RowGroupRows: 50}); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

func TestAnalyzeClustering(t *testing.T) {
	c, _ := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	if _, err := ingest.Add(c, "t", clusteredFiles(t), ingest.Options{Create: true}); err != nil {
		t.Fatal(err)
	}
	rd, err := c.Read(catalog.Latest)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	s, err := Analyze(rd, "t", "s")
	if err != nil {
		t.Fatal(err)
	}
	if s.Files.AvgDepth != 1 || s.Files.MaxDepth != 1 || s.RowGroups.Units != 20 || s.RowGroups.AvgDepth != 1 || math.Abs(s.Files.PointRead-0.1) > 1e-9 {
		t.Fatalf("sorted column: %+v %+v", s.Files, s.RowGroups)
	}
	x, _ := Analyze(rd, "t", "r")
	if x.Files.AvgDepth < 9 || x.Files.PointRead < 0.5 {
		t.Fatalf("random column: %+v", x.Files)
	}
	// Every file has bounds, placed on the column's own axis.
	pos, numeric := x.Positions()
	if len(x.FileRanges) != 10 || !numeric {
		t.Fatalf("file ranges: %d, numeric %v", len(x.FileRanges), numeric)
	}
	for _, r := range x.FileRanges {
		if !r.Known || pos(r.Min) < 0 || pos(r.Max) > 999 || pos(r.Min) > pos(r.Max) {
			t.Fatalf("file range %s: known %v, [%v, %v]", r.Label, r.Known, pos(r.Min), pos(r.Max))
		}
	}
	if _, err := Analyze(rd, "t", "nope"); err == nil {
		t.Fatal("unknown column must fail")
	}
}
