package server_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// What a session keeps between messages (prepared statements, by the
// protocol's Parse or by SQL PREPARE, and portals bound inside a block)
// is bounded by the server's buffer limit: a client keeping one more
// statement at a time is refused with 53200 naming the limit, its flag and
// what the session holds, another client is still served meanwhile, and
// every way of letting go (Close, DEALLOCATE, DEALLOCATE ALL, DISCARD
// ALL, ROLLBACK for portals, the session's end) gives all of it back.
func TestKeptStatementsBounded(t *testing.T) {
	cfg := newConfig()
	cfg.MaxConns = 4
	cfg.MaxBufferedBytes = 1 << 20
	f := newFixture(t, cfg)
	ctx := context.Background()
	pad := strings.Repeat("z", 20_000)
	text := func(i int) string { return fmt.Sprintf("SELECT %d AS n -- %s", i, pad) }
	refused := func(err error) bool {
		var pe *pgconn.PgError
		return errors.As(err, &pe) && pe.Code == "53200" && strings.Contains(pe.Message, budgetFlag) &&
			strings.Contains(pe.Message, strconv.Itoa(1<<20)) && strings.Contains(pe.Message, "prepared statements and portals hold")
	}
	held := func() float64 { return metric(t, f, "rocklake_pg_buffered_bytes") }
	released := func(how string) {
		t.Helper()
		waitMetric(t, f, "rocklake_pg_buffered_bytes", "after "+how, func(v float64) bool { return v == 0 })
	}
	// fill keeps statements until the server refuses one; it says how many
	// it kept.
	fill := func(c *pgx.Conn, prefix string, sqlPrepare bool) int {
		t.Helper()
		for i := range 200 {
			var err error
			if sqlPrepare {
				_, err = c.Exec(ctx, fmt.Sprintf("PREPARE %s%d AS %s", prefix, i, text(i)), pgx.QueryExecModeSimpleProtocol)
			} else {
				_, err = c.Prepare(ctx, prefix+strconv.Itoa(i), text(i))
			}
			if err != nil {
				if !refused(err) {
					t.Fatalf("statement %d: %v", i, err)
				}
				if i < 10 {
					t.Fatalf("refused after %d statements of 20 kB with a limit of 1 MiB", i)
				}
				if h := held(); h > float64(cfg.MaxBufferedBytes) || h < float64(i*20_000) {
					t.Fatalf("%d statements kept, %v bytes counted", i, h)
				}
				return i
			}
		}
		t.Fatal("200 statements of 20 kB kept with a limit of 1 MiB")
		return 0
	}
	c := f.connect(t, pgx.QueryExecModeCacheStatement)
	other := f.connect(t, pgx.QueryExecModeSimpleProtocol)
	n := fill(c, "s", false)
	var one int
	if err := other.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("another client while the budget is spent: %d %v", one, err)
	}
	// A statement kept still runs; one refused does not exist.
	if err := c.QueryRow(ctx, "s0").Scan(&one); err != nil || one != 0 {
		t.Fatalf("a kept statement: %d %v", one, err)
	}
	// Close (the protocol's) of each.
	for i := range n {
		if err := c.Deallocate(ctx, "s"+strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	released("Close")
	// SQL's PREPARE, then DEALLOCATE of each.
	n = fill(c, "q", true)
	for i := range n {
		if _, err := c.Exec(ctx, fmt.Sprintf("DEALLOCATE q%d", i), pgx.QueryExecModeSimpleProtocol); err != nil {
			t.Fatal(err)
		}
	}
	released("DEALLOCATE")
	fill(c, "a", true)
	if _, err := c.Exec(ctx, "DEALLOCATE ALL", pgx.QueryExecModeSimpleProtocol); err != nil {
		t.Fatal(err)
	}
	released("DEALLOCATE ALL")
	fill(c, "d", false)
	if _, err := c.Exec(ctx, "DISCARD ALL", pgx.QueryExecModeSimpleProtocol); err != nil {
		t.Fatal(err)
	}
	released("DISCARD ALL")
	fill(c, "e", false)
	c.Close(ctx)
	released("the session's end")

	// Portals: one statement bound to ever more named portals inside a
	// block (outside one, Sync closes them).
	rc, fe := rawLogin(t, f, "tester", 0)
	defer rc.Close()
	send := func(msgs ...pgproto3.FrontendMessage) answer {
		t.Helper()
		for _, m := range msgs {
			fe.Send(m)
		}
		if _, simple := msgs[0].(*pgproto3.Query); !simple {
			fe.Send(&pgproto3.Sync{})
		}
		if err := fe.Flush(); err != nil {
			t.Fatal(err)
		}
		a, err := readAnswer(rc, fe)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	if a := send(&pgproto3.Query{String: "BEGIN"}); a.err != nil {
		t.Fatalf("BEGIN: %s", a.err.Message)
	}
	if a := send(&pgproto3.Parse{Name: "big", Query: text(1)}); a.err != nil {
		t.Fatalf("Parse: %s", a.err.Message)
	}
	bound := 0
	for ; bound < 200; bound++ {
		a := send(&pgproto3.Bind{PreparedStatement: "big", DestinationPortal: "p" + strconv.Itoa(bound)})
		if a.err != nil {
			if a.err.Code != "53200" || !strings.Contains(a.err.Message, "portal") || !strings.Contains(a.err.Message, budgetFlag) {
				t.Fatalf("portal %d: %s %s", bound, a.err.Code, a.err.Message)
			}
			break
		}
	}
	if bound < 10 || bound == 200 {
		t.Fatalf("%d portals of 20 kB bound with a limit of 1 MiB", bound)
	}
	if a := send(&pgproto3.Query{String: "ROLLBACK"}); a.err != nil {
		t.Fatalf("ROLLBACK: %s", a.err.Message)
	}
	if a := send(&pgproto3.Close{ObjectType: 'S', Name: "big"}); a.err != nil {
		t.Fatalf("Close: %s", a.err.Message)
	}
	released("ROLLBACK of the portals")
}
