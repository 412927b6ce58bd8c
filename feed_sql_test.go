package rocklake_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake"
)

// rowsOf is a result's rows, one string each, sorted.
func rowsOf(res *rocklake.Result) []string {
	var out []string
	for _, row := range res.Rows {
		var vals []string
		for _, v := range row {
			if v == nil {
				vals = append(vals, "NULL")
			} else {
				vals = append(vals, *v)
			}
		}
		out = append(out, strings.Join(vals, "|"))
	}
	slices.Sort(out)
	return out
}

// table_changes('t', start, end) in SQL is Lake.Changes over the snapshots
// start to end, both included, for every pair of bounds, given as ids or
// as the snapshots' times; composed with the rest of a query (filters,
// aggregates, a join with the table, aliases); refused clearly where its
// arguments are not constants or reach past the snapshot read; and its
// answer is never taken from statistics.
func TestChangeFeedInSQL(t *testing.T) {
	ctx := context.Background()
	lake, err := rocklake.Create(ctx, filepath.Join(t.TempDir(), "lake"), rocklake.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer lake.Close()
	r := rand.New(rand.NewPCG(3, 9))
	stmts := []string{"CREATE TABLE c (id BIGINT, s VARCHAR)", "INSERT INTO c SELECT i, 's' || i FROM range(20) r(i)"}
	for range 8 {
		switch r.IntN(4) {
		case 0:
			stmts = append(stmts, fmt.Sprintf("INSERT INTO c VALUES (%d, 'n')", r.IntN(100)))
		case 1:
			stmts = append(stmts, fmt.Sprintf("DELETE FROM c WHERE id %% 5 = %d", r.IntN(5)))
		case 2:
			stmts = append(stmts, fmt.Sprintf("UPDATE c SET s = s || 'u' WHERE id < %d", r.IntN(30)))
		default:
			stmts = append(stmts, "MERGE INTO c USING (SELECT 3 AS k) src ON c.id = src.k WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT VALUES (3, 'm')")
		}
	}
	for _, q := range stmts {
		if _, err := lake.Exec(ctx, q, rocklake.ExecOptions{}); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	snaps, err := lake.Snapshots(ctx)
	if err != nil {
		t.Fatal(err)
	}
	last := snaps[len(snaps)-1].ID
	query := func(q string) *rocklake.Result {
		t.Helper()
		res, err := lake.Query(ctx, q, rocklake.QueryOptions{})
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return res
	}
	for start := int64(1); start <= last; start++ { // c is made by snapshot 1
		for end := start; end <= last; end++ {
			want, err := lake.Changes(ctx, "c", max(start-1, 0), rocklake.AtSnapshot(end))
			if err != nil {
				t.Fatal(err)
			}
			got := query(fmt.Sprintf("SELECT * FROM table_changes('c', %d, %d)", start, end))
			if !slices.Equal(rowsOf(got), rowsOf(want)) || !slices.Equal(got.Columns, want.Columns) {
				t.Fatalf("table_changes('c', %d, %d):\n%v %v\nLake.Changes:\n%v %v", start, end, got.Columns, rowsOf(got), want.Columns, rowsOf(want))
			}
			ts := func(i int64) string {
				for _, s := range snaps {
					if s.ID == i {
						return s.Time.UTC().Format("2006-01-02 15:04:05.999999Z07:00")
					}
				}
				t.Fatalf("no snapshot %d", i)
				return ""
			}
			byTime := query(fmt.Sprintf("SELECT * FROM table_changes('c', TIMESTAMPTZ '%s', '%s')", ts(start), ts(end)))
			if !slices.Equal(rowsOf(byTime), rowsOf(want)) {
				t.Fatalf("table_changes('c', <time of %d>, <time of %d>): %v, want %v", start, end, rowsOf(byTime), rowsOf(want))
			}
		}
	}
	all, err := lake.Changes(ctx, "c", 0, rocklake.SnapshotRef{})
	if err != nil {
		t.Fatal(err)
	}
	if got := query("FROM table_changes('c', 0)"); !slices.Equal(rowsOf(got), rowsOf(all)) {
		t.Fatal("table_changes without an end is not the changes up to the latest snapshot")
	}
	inserts := 0
	for _, row := range all.Rows {
		if *row[1] == "insert" {
			inserts++
		}
	}
	composed := map[string]string{
		"SELECT count(*) FROM table_changes('c', 0, " + fmt.Sprint(last) + ") WHERE change_type = 'insert'":                    fmt.Sprint(inserts),
		"SELECT count(*) FROM table_changes('c', 0, " + fmt.Sprint(last) + ") AS f WHERE f.change_type = 'insert'":             fmt.Sprint(inserts),
		"SELECT count(*) FROM MAIN.Table_Changes('c', 0, " + fmt.Sprint(last) + ") WHERE table_changes.change_type = 'insert'": fmt.Sprint(inserts),
		"SELECT count(*) FROM table_changes('c', 1, 1)":                                                                        "0",
		"SELECT count(*) = (SELECT count(*) FROM c) FROM (SELECT id, s FROM table_changes('c', 0, " + fmt.Sprint(last) + ") WHERE change_type = 'insert' EXCEPT ALL SELECT id, s FROM table_changes('c', 0, " + fmt.Sprint(last) + ") WHERE change_type = 'delete')": "true",
		"SELECT count(*) FROM c JOIN table_changes('c', 2, 2) f USING (id)": "",
	}
	for q, want := range composed {
		got := query(q)
		if want != "" && *got.Rows[0][0] != want {
			t.Errorf("%s: %s, want %s", q, *got.Rows[0][0], want)
		}
	}
	for q, says := range map[string]string{
		"SELECT * FROM table_changes('c')":                 "takes a table name",
		"SELECT * FROM table_changes('c', 1, 10000)":       "after snapshot",
		"SELECT * FROM table_changes('nope', 1, 2)":        "nope",
		"SELECT * FROM table_changes('c', 'yesterday', 2)": "neither a snapshot id nor a timestamp",
		"SELECT * FROM table_changes('c', 1 + 1, 2)":       "constants",
		"SELECT * FROM table_changes(lower('C'), 1, 2)":    "constant string",
	} {
		if _, err := lake.Query(ctx, q, rocklake.QueryOptions{}); err == nil || !strings.Contains(err.Error(), says) || strings.Contains(err.Error(), "__rocklake") {
			t.Errorf("%s: %v (want %q)", q, err, says)
		}
	}
	// At an older snapshot the end is bounded by it.
	if _, err := lake.Query(ctx, fmt.Sprintf("SELECT * FROM table_changes('c', 1, %d)", last), rocklake.QueryOptions{Snapshot: rocklake.AtSnapshot(2)}); !errors.Is(err, rocklake.ErrNoSuchSnapshot) {
		t.Errorf("an end past the snapshot read: %v", err)
	}
	if _, err := lake.Expire(ctx, time.Now().Add(time.Second), rocklake.ExpireOptions{MinRetention: -1}); err != nil {
		t.Fatal(err)
	}
	if _, err := lake.Query(ctx, "SELECT * FROM table_changes('c', 1)", rocklake.QueryOptions{}); !errors.Is(err, rocklake.ErrChangesExpired) {
		t.Errorf("after expire: %v", err)
	}
}
