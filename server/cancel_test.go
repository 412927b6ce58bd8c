package server_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"
)

// A cancel request for a session blocked writing to a client that reads
// nothing ends the session long before the write timeout: its query's
// rows closed, its buffers and its connection slot given back.
func TestCancelEndsBlockedWrite(t *testing.T) {
	cfg := newConfig()
	cfg.MaxConns = 1
	cfg.WriteTimeout = 10 * time.Minute
	f := newFixture(t, cfg)
	c, fe, key := rawLoginKey(t, f, "stuck", 16<<10)
	fe.Send(&pgproto3.Query{String: "SELECT i, repeat('x', 1000) AS pad FROM range(30000) r(i)"})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	waitMetric(t, f, "rocklake_pg_buffered_bytes", "the stuck answer", func(v float64) bool { return v > 0 })
	// The session stays blocked: the write timeout is far away.
	time.Sleep(500 * time.Millisecond)
	if n := metric(t, f, "rocklake_pg_connections"); n != 1 {
		t.Fatalf("the stuck session ended by itself (%v connections)", n)
	}
	if n := metric(t, f, "rocklake_query_seconds_count"); n != 0 {
		t.Fatalf("the stuck query ended by itself")
	}

	start := time.Now()
	cancel, err := net.DialTimeout("tcp", f.srv.PGAddr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel.Close()
	cfe := pgproto3.NewFrontend(cancel, cancel)
	cfe.Send(&pgproto3.CancelRequest{ProcessID: key.ProcessID, SecretKey: key.SecretKey})
	if err := cfe.Flush(); err != nil {
		t.Fatal(err)
	}

	// A bound on a hung session, far under the write timeout.
	within := func(what, series string, ok func(float64) bool) {
		t.Helper()
		for deadline := start.Add(30 * time.Second); ; {
			v := metric(t, f, series)
			if ok(v) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %s is %v 30 s after the cancel request (write timeout %v)", what, series, v, cfg.WriteTimeout)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	within("the session", "rocklake_pg_connections", func(v float64) bool { return v == 0 })
	within("its buffers", "rocklake_pg_buffered_bytes", func(v float64) bool { return v == 0 })
	within("its query", "rocklake_query_seconds_count", func(v float64) bool { return v == 1 })
	within("the drop", `rocklake_pg_clients_dropped_total{reason="cancelled"}`, func(v float64) bool { return v == 1 })
	if d := metric(t, f, `rocklake_pg_clients_dropped_total{reason="write_timeout"}`); d != 0 {
		t.Errorf("%v write-timeout drops", d)
	}
	if n := metric(t, f, "rocklake_query_cancels_total"); n != 1 {
		t.Errorf("cancels: %v", n)
	}

	// Its slot, the only one, is free.
	var n int
	for deadline := time.Now().Add(30 * time.Second); ; {
		cfg, _ := pgx.ParseConfig(f.pgURL("next", "", "disable"))
		ctx, stop := context.WithTimeout(context.Background(), 20*time.Second)
		next, err := pgx.ConnectConfig(ctx, cfg)
		if err == nil {
			err = next.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n)
			next.Close(ctx)
		}
		stop()
		if err == nil {
			break
		}
		if sqlstate(err) != "53300" || time.Now().After(deadline) {
			t.Fatalf("a client after the cancelled one: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n != 300 {
		t.Errorf("a client after the cancelled one: %d", n)
	}

	// What reached the stuck client is a part, and no end.
	a, _ := readAnswer(c, fe)
	if a.complete || a.rows >= 30000 {
		t.Errorf("the cancelled client got %d rows (complete %v)", a.rows, a.complete)
	}
}

// A cancel request for a client that reads its answer as it comes stops
// the query with 57014 and leaves the session working: the shortened
// write deadline does not touch a client that takes what it is sent.
func TestCancelWhileReading(t *testing.T) {
	cfg := newConfig()
	cfg.WriteTimeout = 10 * time.Minute
	f := newFixture(t, cfg)
	ctx := context.Background()
	c := f.connect(t, pgx.QueryExecModeSimpleProtocol)
	rows, err := c.Query(ctx, "SELECT i, repeat('x', 100) FROM range(900000) r(i)")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		n++
		if n == 1000 {
			cctx, stop := context.WithTimeout(ctx, 20*time.Second)
			if err := c.PgConn().CancelRequest(cctx); err != nil {
				t.Fatal(err)
			}
			stop()
		}
	}
	if err := rows.Err(); sqlstate(err) != "57014" {
		t.Fatalf("after %d rows and a cancel: %v", n, err)
	}
	if n >= 900000 {
		t.Errorf("the cancelled query sent all %d rows", n)
	}
	var one int
	if err := c.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Errorf("the session after the cancel: %d %v", one, err)
	}
	if d := metric(t, f, `rocklake_pg_clients_dropped_total{reason="cancelled"}`); d != 0 {
		t.Errorf("%v sessions dropped for the cancel", d)
	}
}
