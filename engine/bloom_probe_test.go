package engine

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/kv/kvtest"
)

// DuckDB 1.5.6 writes bloom filters on dictionary-encoded columns and
// probes them wrongly for BLOB constants (hashed as their escaped text)
// and for a float 0 (missing -0.0): over a file DuckDB wrote, `b = '\xFF'`
// and `f = 0` drop matching rows in DuckDB's own scan. Through rocklake
// every such equality answers as a comparison that DuckDB does not push
// down, with pruning and without.
func TestBloomProbeDeviationsGuarded(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.parquet")
	db, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	src := `SELECT CASE WHEN i % 3 = 0 THEN '\xFF\xFF'::BLOB WHEN i % 3 = 1 THEN '\x01'::BLOB ELSE 'ab'::BLOB END AS b,
		CASE WHEN i < 10 THEN -0.0::FLOAT ELSE 1.5::FLOAT END AS f, CASE WHEN i < 10 THEN -0.0::DOUBLE ELSE 2.5 END AS d, i FROM range(30) r(i)`
	if _, err := db.Exec(fmt.Sprintf("COPY (%s) TO '%s' (FORMAT parquet)", src, p)); err != nil {
		t.Fatal(err)
	}
	var raw int
	if err := db.QueryRow(fmt.Sprintf(`SELECT count(*) FROM read_parquet('%s') WHERE b = '\xFF\xFF'::BLOB`, p)).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if raw != 0 {
		t.Logf("DuckDB's own scan no longer drops the rows (%d): the guard may go", raw)
	}
	c, err := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ingest.Add(c, "t", []string{p}, ingest.Options{Create: true}); err != nil {
		t.Fatal(err)
	}
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for q, want := range map[string]string{
		`SELECT count(*) FROM t WHERE b = '\xFF\xFF'`:           "10",
		`SELECT count(*) FROM t WHERE b = '\x01'::BLOB`:         "10",
		`SELECT count(*) FROM t WHERE b IN ('\xFF\xFF', 'ab')`:  "20",
		`SELECT count(*) FROM t WHERE f = 0`:                    "10",
		`SELECT count(*) FROM t WHERE d = 0.0`:                  "10",
		`SELECT count(*) FROM t WHERE d = 0 AND i >= 0`:         "10",
		`SELECT count(*) FROM t WHERE f = -0.0 OR b = '\x01'`:   "17",
		`SELECT string_agg(d::VARCHAR, ',') FROM t WHERE i < 2`: "-0.0,-0.0",
	} {
		for _, o := range []QueryOptions{{Snapshot: catalog.Latest}, {Snapshot: catalog.Latest, NoPruning: true}, {Snapshot: catalog.Latest, NoMetadataAnswers: true}} {
			res, err := e.Query(context.Background(), q, o)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			if got := *res.Rows[0][0]; got != want {
				t.Errorf("%s (%+v): %s, want %s", q, o, got, want)
			}
		}
	}
}
