package ducklake_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/interop/ducklake"
	"github.com/rocklake/rocklake/maintain"
)

// A table changed under merge-on-read exports its delete files as
// ducklake_delete_file rows (each version, with its data file, count and
// footer); an import of the export's newest state folds them, and a
// history import replays them: the imported table answers as the
// original at its newest snapshot (and, replayed, at every snapshot),
// with and without --copy.
func TestExportDeleteFiles(t *testing.T) {
	c, err := catalog.Create(filepath.Join(t.TempDir(), "lake"), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	e, err := engine.New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	for _, q := range []string{
		"CREATE TABLE t (id BIGINT, v VARCHAR)",
		"INSERT INTO t SELECT i, 'a' || i FROM range(0, 100) r(i)",
		"INSERT INTO t SELECT i, 'b' || i FROM range(100, 200) r(i)",
	} {
		if _, err := maintain.Write(ctx, e, q, maintain.WriteOptions{}); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	tx, _ := c.Begin()
	a, _ := catalog.ParseAlteration([]string{"set", "option", "delete_mode", "=", "merge-on-read"})
	tx.AlterTable("t", a)
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"DELETE FROM t WHERE id % 7 = 0",
		"DELETE FROM t WHERE id BETWEEN 10 AND 12",
		"UPDATE t SET v = 'u' WHERE id = 150",
	} {
		r, err := maintain.Write(ctx, e, q, maintain.WriteOptions{})
		if err != nil || r.DeleteFiles == 0 {
			t.Fatalf("%s: %+v, %v", q, r, err)
		}
	}
	q := "SELECT count(*), CAST(sum(hash(id, v)) AS VARCHAR) FROM t"
	want := answer(t, c, catalog.Latest, q)
	snaps, err := c.Snapshots()
	if err != nil {
		t.Fatal(err)
	}
	for _, opts := range []ducklake.ExportOptions{{}, {CopyFiles: true}} {
		dest, _ := export(t, c, opts)
		db := openDuck(t, dest)
		rows := queryStrings(t, db, `SELECT count(*), count(*) FILTER (WHERE end_snapshot IS NULL), CAST(sum(delete_count) FILTER (WHERE end_snapshot IS NULL) AS VARCHAR), min(footer_size) > 0 FROM ducklake_delete_file`)
		if got := rows[0]; got[0] != "4" || got[1] != "2" || got[2] != "33" || got[3] != "true" {
			// 4 versions: each data file's after the first delete, and
			// after the second delete (file 1) or the update (file 2); 2
			// current, holding 18 + 15 positions.
			t.Errorf("%+v: delete files %v", opts, got)
		}
		db.Close()
		c2, err := catalog.Create(filepath.Join(t.TempDir(), "lake2"), catalog.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ducklake.Import(ctx, c2, dest, ducklake.ImportOptions{Latest: true}); err != nil {
			t.Fatalf("%+v: import: %v", opts, err)
		}
		if got := answer(t, c2, catalog.Latest, q); got != want {
			t.Errorf("%+v: imported %s, want %s", opts, got, want)
		}
		c2.Close()
		c3, err := catalog.Create(filepath.Join(t.TempDir(), "lake3"), catalog.Options{})
		if err != nil {
			t.Fatal(err)
		}
		res, err := ducklake.Import(ctx, c3, dest, ducklake.ImportOptions{})
		if err != nil {
			t.Fatalf("%+v: history import: %v", opts, err)
		}
		if res.DeleteFiles != 4 {
			t.Errorf("%+v: history import replayed %d delete files, want 4", opts, res.DeleteFiles)
		}
		for _, sp := range res.Snapshots {
			if sp.DuckLake < snaps[0].ID {
				continue
			}
			if got, want := answer(t, c3, sp.Rocklake, q), answer(t, c, sp.DuckLake, q); got != want {
				t.Errorf("%+v: DuckLake snapshot %d, imported as %d: %s, want %s", opts, sp.DuckLake, sp.Rocklake, got, want)
			}
		}
		c3.Close()
	}
}
