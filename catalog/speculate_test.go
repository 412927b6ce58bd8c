package catalog

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake/internal/pgtest"
	"github.com/rocklake/rocklake/kv/pgkv"
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

// On PostgreSQL each speculation holds a pooled connection from its
// first write to its end, so at most half the pool may be open at once:
// one more fails at once with ErrBusy, and meanwhile readers and commits
// go on; once one closes, another may open. The pool's size comes from
// the URL's pool_max_conns.
func TestSpeculationsLeaveRoomOnPostgres(t *testing.T) {
	url := pgtest.URL(t)
	c, err := Create(url, Options{Now: fixedNow()})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	c, err = Open(url+sep+"pool_max_conns=6", Options{Postgres: pgkv.Options{Timeout: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	commit(t, c, func(tx *Txn) { tx.CreateTable("t", []ColumnDef{{Name: "x", Type: "bigint"}}) })
	var open []*Catalog
	for range 3 {
		spec, _, err := c.Speculate()
		if err != nil {
			t.Fatalf("speculation %d of 3: %v", len(open)+1, err)
		}
		open = append(open, spec)
	}
	if _, _, err := c.Speculate(); !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "3 already") {
		t.Fatalf("a fourth speculation over a pool of 6: %v", err)
	}
	r, err := c.Read(Latest)
	if err != nil {
		t.Fatalf("a read beside 3 speculations: %v", err)
	}
	r.Close()
	commit(t, c, func(tx *Txn) { tx.AddFiles("t", intFile(t, "a.parquet", 0, 9, 0)) })
	open[0].Close()
	spec, _, err := c.Speculate()
	if err != nil {
		t.Fatalf("a speculation after one closed: %v", err)
	}
	spec.Close()
	for _, s := range open[1:] {
		s.Close()
	}
}
