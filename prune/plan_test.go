package prune

import (
	"fmt"
	"path/filepath"
	"testing"

	"rocklake/catalog"
	"rocklake/ingest"
	"rocklake/internal/pqwrite"
	"rocklake/kv"
	"rocklake/types"
)

// TestClusteredTableKeepsOnlyMatchingFiles: on a table clustered by the
// predicate's column (one file per hour), file-level pruning keeps exactly
// the files that hold matches, and row groups narrow further.
func TestClusteredTableKeepsOnlyMatchingFiles(t *testing.T) {
	dir := t.TempDir()
	const hour = int64(3_600_000_000)
	base := int64(1_704_067_200_000_000) // 2024-01-01 00:00:00 UTC
	var paths []string
	for f := range 24 {
		var ts, id []*types.Value
		for i := range 600 {
			tv := types.IntValue(base + int64(f)*hour + int64(i)*6_000_000)
			iv := types.IntValue(int64(f*600 + i))
			ts, id = append(ts, &tv), append(id, &iv)
		}
		p := filepath.Join(dir, fmt.Sprintf("h%02d.parquet", f))
		err := pqwrite.Write(p, []pqwrite.Column{
			{Name: "ts", Type: types.MustParseType("timestamptz"), Values: ts},
			{Name: "id", Type: types.MustParseType("int64"), Values: id},
		}, pqwrite.Options{RowGroupRows: 100})
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	c, _ := catalog.CreateInStore(kv.NewMemory(), catalog.Options{})
	if _, err := ingest.Add(c, "events", paths, ingest.Options{Create: true}); err != nil {
		t.Fatal(err)
	}
	r, _ := c.Read(catalog.Latest)
	defer r.Close()
	cases := []struct {
		pred          string
		files, groups int
		allMatch      int
	}{
		// One hour, aligned: exactly file 5, all of it.
		{"ts >= '2024-01-01 05:00:00+00' AND ts < '2024-01-01 06:00:00+00'", 1, 6, 1},
		// Half an hour across two files: 2 files, 3 row groups each.
		{"ts BETWEEN '2024-01-01 07:45:00+00' AND '2024-01-01 08:14:59+00'", 2, 4, 0},
		{"ts < '2023-12-31 00:00:00+00'", 0, 0, 0},
		{"id = 7250", 1, 1, 0},
		{"id IN (1, 14399)", 2, 2, 0},
		{"id >= 0", 24, 144, 24},
		{"ts IS NULL", 0, 0, 0},
	}
	for _, tc := range cases {
		p, err := PlanTable(r, "events", tc.pred, Options{})
		if err != nil {
			t.Fatalf("%s: %v", tc.pred, err)
		}
		if p.Files.Kept != tc.files || p.RowGroups.Kept != tc.groups || p.Files.AllMatch != tc.allMatch {
			t.Errorf("%s: %s; want %d files (%d all-match), %d row groups", tc.pred, p, tc.files, tc.allMatch, tc.groups)
		}
		if p.Files.Total != 24 || p.RowGroups.Total != 144 {
			t.Errorf("%s: totals %s", tc.pred, p)
		}
	}
}
