package catalog

import (
	"slices"
	"testing"
)

// livePaths lists a table's live files at the latest snapshot of c.
func livePaths(t *testing.T, c *Catalog, table string) []string {
	t.Helper()
	r, err := c.Read(Latest)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tb, err := r.Table(table)
	if err != nil {
		t.Fatal(err)
	}
	files, err := r.Files(tb.ID)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		out = append(out, f.Path)
	}
	slices.Sort(out)
	return out
}

// TestSpeculationIsPrivate: commits in a speculation are read back by it
// and by nothing else, the catalog's store is left exactly as it was, and
// commits to the catalog after the speculation began stay out of it.
func TestSpeculationIsPrivate(t *testing.T) {
	c := newMemCatalog(t)
	commit(t, c, func(tx *Txn) { tx.CreateTable("t", []ColumnDef{{Name: "x", Type: "bigint"}}) })
	commit(t, c, func(tx *Txn) { tx.AddFiles("t", intFile(t, "a.parquet", 0, 9, 0)) })
	before := dump(t, c)

	spec, base, err := c.Speculate()
	if err != nil {
		t.Fatal(err)
	}
	defer spec.Close()
	r, _ := c.Read(Latest)
	if latest := r.Snapshot(); latest.ID != base.ID {
		t.Fatalf("speculation base %d, catalog latest %d", base.ID, latest.ID)
	}
	r.Close()

	s := commit(t, spec, func(tx *Txn) { tx.AddFiles("t", intFile(t, "b.parquet", 10, 19, 0)) })
	if s.ID != base.ID+1 {
		t.Fatalf("speculative snapshot %d, want %d", s.ID, base.ID+1)
	}
	if got := livePaths(t, spec, "t"); !slices.Equal(got, []string{"a.parquet", "b.parquet"}) {
		t.Fatalf("speculation reads %v", got)
	}
	if got := dump(t, c); got != before {
		t.Fatal("a speculative commit changed the catalog's store")
	}
	commit(t, c, func(tx *Txn) { tx.AddFiles("t", intFile(t, "c.parquet", 20, 29, 0)) })
	if got := livePaths(t, spec, "t"); !slices.Equal(got, []string{"a.parquet", "b.parquet"}) {
		t.Fatalf("after a commit to the catalog the speculation reads %v", got)
	}
	if got := livePaths(t, c, "t"); !slices.Equal(got, []string{"a.parquet", "c.parquet"}) {
		t.Fatalf("the catalog reads %v", got)
	}
	if err := spec.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := spec.Read(Latest); err == nil {
		t.Fatal("a closed speculation still reads")
	}
}
