package ducklake_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/interop/ducklake"
	"github.com/rocklake/rocklake/maintain"
)

// Tables written in SQL (a bulk INSERT, a stream of single-row inserts
// and the merges of their small files, CREATE TABLE AS) export to DuckLake
// and import back with every snapshot's rows.
func TestWrittenTablesCrossDuckLake(t *testing.T) {
	ctx := context.Background()
	c, err := catalog.Create(filepath.Join(t.TempDir(), "lake"), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	e, err := engine.New(c)
	if err != nil {
		t.Fatal(err)
	}
	write := func(q string) {
		t.Helper()
		if _, err := maintain.Write(ctx, e, q, maintain.WriteOptions{Query: engine.QueryOptions{Snapshot: catalog.Latest}}); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	write("CREATE TABLE t (id BIGINT, s VARCHAR, v DOUBLE)")
	write("INSERT INTO t SELECT i, 's' || i, i / 3 FROM range(5000) r(i)")
	for i := range 20 {
		write(fmt.Sprintf("INSERT INTO t VALUES (%d, NULL, 'NaN')", 10000+i))
	}
	write("CREATE TABLE u AS SELECT s, count(*) AS n FROM t GROUP BY s")
	e.Close()
	dest, _ := export(t, c, ducklake.ExportOptions{})
	c2, err := catalog.Create(filepath.Join(t.TempDir(), "back"), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	res, err := ducklake.Import(ctx, c2, dest, ducklake.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Snapshots) < 24 {
		t.Fatalf("%d snapshots imported", len(res.Snapshots))
	}
	for _, p := range res.Snapshots {
		for _, tb := range []string{"t", "u"} {
			r, _ := c.Read(p.DuckLake)
			_, terr := r.Table(tb)
			r.Close()
			if terr != nil {
				continue
			}
			q := fmt.Sprintf(`SELECT count(*), CAST(sum(hash(COLUMNS(*))) AS VARCHAR) FROM %s`, tb)
			if want, got := answer(t, c, p.DuckLake, q), answer(t, c2, p.Rocklake, q); got != want {
				t.Errorf("snapshot %d (%d): %s %s, want %s", p.Rocklake, p.DuckLake, tb, got, want)
			}
		}
	}
}
