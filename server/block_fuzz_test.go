package server_test

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2"
	"github.com/jackc/pgx/v5"

	"github.com/rocklake/rocklake/server"
)

var blockFuzzN = flag.Int("blockfuzz.n", 60, "transaction blocks TestBlocksAnswerAsATransactionDoes runs")

// Random transaction blocks of INSERTs, INSERT ... SELECTs, DELETEs,
// UPDATEs, MERGEs and queries over two tables, run through the server
// and, as the oracle, in a DuckDB transaction (which reads its own
// writes, as PostgreSQL does). Every statement answers as the oracle does
// (the rows a change touched, the rows a query returns), whatever the
// block wrote before it; a block ends with COMMIT or ROLLBACK on both;
// after each block the tables hold the oracle's rows.
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
	cursors0, copies0 := server.StreamedCursors(), server.StreamedCopies()
	r := rand.New(rand.NewPCG(7, 7))
	tables := []string{"a", "b"}
	var answered, afterWrites, changes, blocks int
	for range *blockFuzzN {
		blocks++
		tx, err := c.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		otx, err := oracle.Begin()
		if err != nil {
			t.Fatal(err)
		}
		written := false
		for step := range 1 + r.IntN(8) {
			x, y := tables[r.IntN(2)], tables[r.IntN(2)]
			var q string
			switch k := r.IntN(8); k {
			case 6, 7:
				// The table's rows through a cursor fetched in batches, or
				// through COPY TO STDOUT: streamed by DuckDB's COPY before
				// the block writes, answered at DECLARE after.
				q = "SELECT x FROM " + y + " ORDER BY x"
				var got []string
				if k == 6 {
					if _, err := tx.Exec(ctx, "DECLARE c CURSOR FOR "+q); err != nil {
						t.Fatalf("block %d: DECLARE c CURSOR FOR %s: %v", blocks, q, err)
					}
					for {
						rows, err := tx.Query(ctx, fmt.Sprintf("FETCH %d FROM c", 1+r.IntN(7)))
						if err != nil {
							t.Fatalf("block %d: FETCH: %v", blocks, err)
						}
						n := len(got)
						for rows.Next() {
							var v int64
							if err := rows.Scan(&v); err != nil {
								t.Fatal(err)
							}
							got = append(got, fmt.Sprint(v))
						}
						if rows.Close(); rows.Err() != nil {
							t.Fatalf("block %d: FETCH: %v", blocks, rows.Err())
						}
						if len(got) == n {
							break
						}
					}
					if _, err := tx.Exec(ctx, "CLOSE c"); err != nil {
						t.Fatal(err)
					}
				} else {
					var b strings.Builder
					if _, err := c.PgConn().CopyTo(ctx, &b, "COPY ("+q+") TO STDOUT"); err != nil {
						t.Fatalf("block %d: COPY (%s) TO STDOUT: %v", blocks, q, err)
					}
					got = strings.Fields(b.String())
				}
				var want string
				if err := otx.QueryRow("SELECT coalesce(string_agg(x::VARCHAR, ',' ORDER BY x), '') FROM " + y).Scan(&want); err != nil {
					t.Fatal(err)
				}
				if strings.Join(got, ",") != want {
					t.Fatalf("block %d: %s (%s): %s, a transaction answers %s", blocks, q, map[int]string{6: "cursor", 7: "COPY"}[k], strings.Join(got, ","), want)
				}
				answered++
				if written {
					afterWrites++
				}
				continue
			case 0:
				q = fmt.Sprintf("INSERT INTO %s VALUES (%d)", x, r.IntN(100))
			case 1:
				// Bounded, so that long runs do not grow the tables without end
				// (ties in x make the same multiset everywhere).
				q = fmt.Sprintf("INSERT INTO %s SELECT x + %d FROM %s WHERE x < 1000 ORDER BY x LIMIT 40", x, step+1, y)
			case 2:
				q = fmt.Sprintf("DELETE FROM %s WHERE x %% 3 = %d", x, r.IntN(3))
			case 3:
				q = fmt.Sprintf("UPDATE %s SET x = x + 7 WHERE x < %d", x, r.IntN(60))
			case 4:
				q = fmt.Sprintf("MERGE INTO %s USING (SELECT DISTINCT x %% 50 AS k FROM %s) s ON %s.x = s.k "+
					"WHEN MATCHED AND s.k %% 2 = 0 THEN DELETE WHEN MATCHED THEN UPDATE SET x = x + 100 WHEN NOT MATCHED THEN INSERT VALUES (s.k + 1000)", x, y, x)
			default:
				q = fmt.Sprintf("SELECT count(*) || '/' || coalesce(sum(x), 0) || '/' || coalesce(max(x), 0) FROM %s", y)
			}
			if q[0] == 'S' {
				var got string
				rows, err := tx.Query(ctx, q)
				if err == nil {
					got = answer(rows, rows.Scan)
					rows.Close()
					err = rows.Err()
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
					t.Fatalf("block %d: %s: %s, a transaction answers %s", blocks, q, got, want)
				}
				answered++
				if written {
					afterWrites++
				}
				continue
			}
			tag, err := tx.Exec(ctx, q)
			if err != nil {
				t.Fatalf("block %d: %s: %v", blocks, q, err)
			}
			ores, err := otx.Exec(q)
			if err != nil {
				t.Fatal(err)
			}
			if n, _ := ores.RowsAffected(); tag.RowsAffected() != n {
				t.Fatalf("block %d: %s: %d rows, a transaction %d", blocks, q, tag.RowsAffected(), n)
			}
			written = true
			changes++
		}
		{
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
	cursors, copies := server.StreamedCursors()-cursors0, server.StreamedCopies()-copies0
	t.Logf("%d blocks: %d writes, %d reads answered as a transaction does, %d of them after a write in the block; %d cursors and %d COPYs streamed",
		blocks, changes, answered, afterWrites, cursors, copies)
	if afterWrites == 0 {
		t.Fatal("the generator made no read after a write in a block")
	}
	if *blockFuzzN >= 20 && (cursors == 0 || copies == 0) {
		t.Fatal("the generator streamed no cursor or no COPY")
	}
}
