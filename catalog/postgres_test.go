package catalog

import (
	"fmt"
	"testing"

	"github.com/rocklake/rocklake/internal/pgtest"
	"github.com/rocklake/rocklake/stats"
)

// Planning reads a column's bounds over every file in pages, not a round
// trip per file: a cold plan over n files costs O(log n + n/page) trips.
func TestPostgresPlanIsBatched(t *testing.T) {
	const n = 20000
	url := pgtest.URL(t)
	c, err := Create(url, Options{Now: fixedNow()})
	if err != nil {
		t.Fatal(err)
	}
	commit(t, c, func(tx *Txn) {
		tx.CreateTable("t", []ColumnDef{{Name: "x", Type: "bigint"}, {Name: "y", Type: "bigint"}})
	})
	nfs := make([]NewFile, n)
	for i := range nfs {
		nfs[i] = NewFile{Path: fmt.Sprintf("/d/%06d.parquet", i), RecordCount: 10, RowGroupCount: 1}
		for _, col := range []string{"x", "y"} {
			st := stats.Column{RowCount: 10, Min: stats.Known(enc(t, "int64", fmt.Sprint(i))), Max: stats.Known(enc(t, "int64", fmt.Sprint(i+5)))}
			nfs[i].Columns = append(nfs[i].Columns, FileColumn{Path: []string{col}, Stats: st})
		}
	}
	commit(t, c, func(tx *Txn) { tx.AddFiles("t", nfs...) })
	c.Close()

	c, err = Open(url, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	trips := c.Store().(interface{ RoundTrips() int64 })
	before := trips.RoundTrips()
	r, err := c.Read(Latest)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tb, err := r.Table("t")
	if err != nil {
		t.Fatal(err)
	}
	cols, err := r.Columns(tb.ID)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := r.FileSet(tb.ID)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := r.ColumnBounds(tb.ID, cols[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	used := trips.RoundTrips() - before
	t.Logf("cold FileSet + ColumnBounds over %d files: %d round trips", n, used)
	if fs.Len() != n || cb.Len() != n {
		t.Fatalf("%d files, %d bounds; want %d", fs.Len(), cb.Len(), n)
	}
	var st stats.Column
	if !cb.Fill(n-1, &st) || string(st.Min.V) != string(enc(t, "int64", fmt.Sprint(n-1))) {
		t.Fatalf("last file's bounds wrong: %+v", st)
	}
	if used > 60 {
		t.Fatalf("%d round trips for a cold plan over %d files; reads must be batched", used, n)
	}
}
