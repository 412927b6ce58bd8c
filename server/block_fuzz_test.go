package server_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2"
	"github.com/jackc/pgx/v5"
)

// Random transaction blocks of INSERTs, INSERT ... SELECTs, DELETEs,
// UPDATEs and queries over two tables, run through the server and, as the oracle, in a DuckDB
// transaction (which reads its own writes, as PostgreSQL does). Every
// statement either answers as the oracle does or is refused with 0A000,
// and only where it reads a table the block already wrote to (a refusal
// is not required there: a change of no rows leaves nothing unread); a refused
// statement ends both blocks with ROLLBACK, a block that ran through ends
// with COMMIT or ROLLBACK on both; after each block the tables hold the
// oracle's rows.
func TestBlocksAnswerAsATransactionDoes(t *testing.T) {
	f := newFixture(t, newConfig())
	ctx := context.Background()
	c := f.connect(t, pgx.QueryExecModeSimpleProtocol)
	oracle, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer oracle.Close()
	oracle.SetMaxOpenConns(1)
	for _, q := range []string{"CREATE TABLE a (x BIGINT)", "CREATE TABLE b (x BIGINT)", "INSERT INTO a VALUES (1), (2)", "INSERT INTO b VALUES (10)"} {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
		if _, err := oracle.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	answer := func(rows interface{ Next() bool }, scan func(...any) error) string {
		var s sql.NullString
		for rows.Next() {
			if err := scan(&s); err != nil {
				t.Fatal(err)
			}
		}
		return s.String
	}
	r := rand.New(rand.NewPCG(7, 7))
	tables := []string{"a", "b"}
	var refused, answered, blocks int
	for range 60 {
		blocks++
		tx, err := c.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		otx, err := oracle.Begin()
		if err != nil {
			t.Fatal(err)
		}
		written := map[string]bool{}
		ended := false
		for step := range 1 + r.IntN(5) {
			x, y := tables[r.IntN(2)], tables[r.IntN(2)]
			var q string
			reads := ""
			switch r.IntN(5) {
			case 0:
				q = fmt.Sprintf("INSERT INTO %s VALUES (%d)", x, r.IntN(100))
			case 1:
				q, reads = fmt.Sprintf("INSERT INTO %s SELECT x + %d FROM %s WHERE x < 1000", x, step+1, y), y
			case 2:
				q, reads = fmt.Sprintf("DELETE FROM %s WHERE x %% 3 = %d", x, r.IntN(3)), x
			case 3:
				q, reads = fmt.Sprintf("UPDATE %s SET x = x + 7 WHERE x < %d", x, r.IntN(60)), x
			default:
				q, reads = fmt.Sprintf("SELECT count(*) || '/' || coalesce(sum(x), 0) FROM %s", y), y
			}
			if q[0] == 'S' {
				var got string
				rows, err := tx.Query(ctx, q)
				if err == nil {
					got = answer(rows, rows.Scan)
					rows.Close()
					err = rows.Err()
				}
				if sqlstate(err) == "0A000" && written[reads] {
					refused++
					tx.Rollback(ctx)
					otx.Rollback()
					ended = true
					break
				}
				if err != nil {
					t.Fatalf("%s: %v", q, err)
				}
				orows, err := otx.Query(q)
				if err != nil {
					t.Fatal(err)
				}
				want := answer(orows, orows.Scan)
				orows.Close()
				if got != want {
					t.Fatalf("%s in a block: %s, a transaction answers %s", q, got, want)
				}
				answered++
				continue
			}
			if _, err := tx.Exec(ctx, q); sqlstate(err) == "0A000" && written[reads] {
				// Refused (it reads a table the block changed), and the
				// block with it.
				refused++
				tx.Rollback(ctx)
				otx.Rollback()
				ended = true
				break
			} else if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			if _, err := otx.Exec(q); err != nil {
				t.Fatal(err)
			}
			written[x] = true
		}
		if !ended {
			if r.IntN(4) == 0 {
				tx.Rollback(ctx)
				otx.Rollback()
			} else {
				if err := tx.Commit(ctx); err != nil {
					t.Fatal(err)
				}
				if err := otx.Commit(); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, tb := range tables {
			q := "SELECT coalesce(string_agg(x::VARCHAR, ',' ORDER BY x), '') FROM " + tb
			got := firstAnswer(t, c, q)
			var want string
			if err := oracle.QueryRow(q).Scan(&want); err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("after block %d, %s holds %s, the oracle %s", blocks, tb, got, want)
			}
		}
	}
	t.Logf("%d blocks: %d reads answered as a transaction does, %d refused", blocks, answered, refused)
	if refused == 0 || answered == 0 {
		t.Fatalf("the generator made %d refused and %d answered reads: both kinds must occur", refused, answered)
	}
}
