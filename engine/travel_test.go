package engine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/kv/kvtest"
)

// A reference with AT (VERSION => n) or AT (TIMESTAMP => ts) reads its
// table at that snapshot, beside references at others in the same query:
// every reference's answer equals the same query run alone at its
// snapshot, pruned or not, and a clause rocklake cannot use is refused.
func TestTimeTravelClause(t *testing.T) {
	dir := t.TempDir()
	clock := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	c, _ := catalog.CreateInStore(kvtest.Store(t), catalog.Options{Now: func() time.Time { clock = clock.Add(time.Hour); return clock }})
	var snaps []int64
	for i := range 4 {
		p := filepath.Join(dir, fmt.Sprintf("f%d.parquet", i))
		writeInts(t, p, int64(10*i), int64(10*i+1), int64(10*i+2))
		res, err := ingest.Add(c, "t", []string{p}, ingest.Options{Create: i == 0})
		if err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, res.Snapshot.ID)
	}
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	answer := func(q string, o QueryOptions) string {
		t.Helper()
		res, err := e.Query(ctx, q, o)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return rowsText(res.Rows)
	}
	at := func(id int64) QueryOptions { return QueryOptions{Snapshot: id} }
	latest := QueryOptions{Snapshot: catalog.Latest}
	for _, o := range []QueryOptions{latest, {Snapshot: catalog.Latest, NoPruning: true}, {Snapshot: catalog.Latest, NoMetadataAnswers: true}} {
		for _, s := range snaps {
			for _, w := range []string{"", " WHERE x >= 20", " WHERE x = 1"} {
				want := answer("SELECT count(*), min(x), max(x) FROM t"+w, QueryOptions{Snapshot: s, NoPruning: o.NoPruning})
				for _, q := range []string{
					fmt.Sprintf("SELECT count(*), min(x), max(x) FROM t AT (VERSION => %d)%s", s, w),
					fmt.Sprintf("SELECT count(*), min(x), max(x) FROM t AS a at (version => %d)%s", s, w),
					fmt.Sprintf("SELECT count(*), min(x), max(x) FROM t AT (TIMESTAMP => '%s')%s", snapTime(t, c, s).Add(time.Minute).Format(time.RFC3339), w),
					fmt.Sprintf("SELECT count(*), min(x), max(x) FROM t AT (TIMESTAMP => TIMESTAMPTZ '%s')%s", snapTime(t, c, s).Format("2006-01-02 15:04:05-07"), w),
				} {
					if got := answer(q, o); got != want {
						t.Errorf("%s: %s, at snapshot %d alone %s", q, got, s, want)
					}
				}
			}
		}
	}
	// Two snapshots in one query: what the second added.
	q := fmt.Sprintf("SELECT x FROM t EXCEPT SELECT x FROM t AT (VERSION => %d) ORDER BY x", snaps[2])
	if got := answer(q, latest); got != "30|;31|;32|;" {
		t.Errorf("%s: %s", q, got)
	}
	q = fmt.Sprintf("SELECT (SELECT count(*) FROM t AT (VERSION => %d)) AS old, count(*) AS now FROM t", snaps[0])
	if got := answer(q, at(snaps[1])); got != "3|6|;" {
		t.Errorf("%s: %s", q, got)
	}
	for _, q := range []string{
		"SELECT * FROM t AT (VERSION => 999)",
		"SELECT * FROM t AT (VERSION => -1)",
		"SELECT * FROM t AT (VERSION => 1 + 1)",
		"SELECT * FROM t AT (TIMESTAMP => now())",
		"SELECT * FROM t AT (TIMESTAMP => '1999-01-01 00:00:00')",
		"SELECT * FROM t AT (TIMESTAMP => 'yesterday-ish')",
	} {
		if _, err := e.Query(ctx, q, latest); err == nil {
			t.Errorf("%s: answered", q)
		} else if strings.Contains(err.Error(), "time travel") {
			t.Errorf("%s: DuckDB's error reached the user: %v", q, err)
		}
	}
}

func snapTime(t *testing.T, c *catalog.Catalog, id int64) time.Time {
	t.Helper()
	snaps, err := c.Snapshots()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range snaps {
		if s.ID == id {
			return s.Time
		}
	}
	t.Fatalf("no snapshot %d", id)
	return time.Time{}
}

// A path registered again as another file (its old registration removed,
// its bytes rewritten, registered anew) is two files to a query reading
// both snapshots: it is refused, never read under the old statistics.
func TestTimeTravelAcrossARegistrationAgain(t *testing.T) {
	dir := t.TempDir()
	c, e := intTable(t, dir, 1, 2, 3)
	file := filepath.Join(dir, "a.parquet")
	r, err := c.Read(catalog.Latest)
	if err != nil {
		t.Fatal(err)
	}
	before := r.Snapshot().ID
	tb, _ := r.Table("t")
	files, _ := r.Files(tb.ID)
	r.Close()
	tx, _ := c.Begin()
	tx.RemoveFiles("t", files[0].ID)
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	writeInts(t, file, 7, 8, 9, 10)
	if _, err := ingest.Add(c, "t", []string{file}, ingest.Options{}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res, err := e.Query(ctx, "SELECT count(*) FROM t", QueryOptions{Snapshot: catalog.Latest})
	if err != nil || rowsText(res.Rows) != "4|;" {
		t.Fatalf("the latest snapshot: %v %v", err, res)
	}
	for _, q := range []string{
		fmt.Sprintf("SELECT count(*) FROM t AT (VERSION => %d)", before),
		fmt.Sprintf("SELECT (SELECT count(*) FROM t AT (VERSION => %d)), count(*) FROM t", before),
		fmt.Sprintf("SELECT count(*) FROM t UNION ALL SELECT count(*) FROM t AT (VERSION => %d)", before),
		fmt.Sprintf("SELECT count(*) FROM t AT (VERSION => %d) UNION ALL SELECT count(*) FROM t", before),
		fmt.Sprintf("SELECT count(*) FROM t a AT (VERSION => %d), t b WHERE a.x = b.x", before),
	} {
		if _, err := e.Query(ctx, q, QueryOptions{Snapshot: catalog.Latest, NoMetadataAnswers: true}); !errors.Is(err, ErrDataFileChanged) {
			t.Errorf("%s: %v, want ErrDataFileChanged", q, err)
		}
	}
}
