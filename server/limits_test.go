package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// rawLogin logs in without a driver (the fixture asks no password) and
// returns once the server is ready for a query.
func rawLogin(t *testing.T, f *fixture, user string, rcvbuf int) (*net.TCPConn, *pgproto3.Frontend) {
	t.Helper()
	c, fe, _ := rawLoginKey(t, f, user, rcvbuf)
	return c, fe
}

// rawLoginKey is rawLogin, with the session's key for a CancelRequest.
func rawLoginKey(t *testing.T, f *fixture, user string, rcvbuf int) (*net.TCPConn, *pgproto3.Frontend, *pgproto3.BackendKeyData) {
	t.Helper()
	c, err := net.DialTimeout("tcp", f.srv.PGAddr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	tc := c.(*net.TCPConn)
	t.Cleanup(func() { tc.Close() })
	if rcvbuf > 0 {
		tc.SetReadBuffer(rcvbuf)
	}
	fe := pgproto3.NewFrontend(tc, tc)
	fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: map[string]string{"user": user}})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	tc.SetReadDeadline(time.Now().Add(20 * time.Second))
	defer tc.SetReadDeadline(time.Time{})
	var key *pgproto3.BackendKeyData
	for {
		msg, err := fe.Receive()
		if err != nil {
			t.Fatalf("login: %v", err)
		}
		switch m := msg.(type) {
		case *pgproto3.ErrorResponse:
			t.Fatalf("login: %s %s", m.Code, m.Message)
		case *pgproto3.BackendKeyData:
			key = &pgproto3.BackendKeyData{ProcessID: m.ProcessID, SecretKey: append([]byte(nil), m.SecretKey...)}
		case *pgproto3.ReadyForQuery:
			return tc, fe, key
		}
	}
}

// metric reads one series of the server's /metrics (labels as written
// there, e.g. `{reason="write_timeout"}`); absent is 0.
func metric(t *testing.T, f *fixture, series string) float64 {
	t.Helper()
	_, body := httpCall(t, f, "GET", "/metrics", "")
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %q", series, v)
			}
			return x
		}
	}
	return 0
}

// waitMetric polls a series until ok says yes; it fails the test after a
// minute (a bound on a hung server, not a claim about speed).
func waitMetric(t *testing.T, f *fixture, series, what string, ok func(float64) bool) float64 {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; {
		if v := metric(t, f, series); ok(v) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s is %v", what, series, metric(t, f, series))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func header(typ byte, length uint32) []byte {
	return binary.BigEndian.AppendUint32([]byte{typ}, length)
}

func heap() runtime.MemStats {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m
}

// A logged-in client claiming a 2 GB message gets a FATAL 54000 naming
// the limit and its connection closed, and the server makes no room for
// the claim; a claim under the limit takes memory only as its bytes
// arrive, and gives it back when the client leaves.
func TestOversizedMessageRefused(t *testing.T) {
	f := newFixture(t, newConfig())
	const claim = 1<<31 - 1
	c, fe := rawLogin(t, f, "big", 0)
	before := heap()
	if _, err := c.Write(header('Q', claim)); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	msg, err := fe.Receive()
	if err != nil {
		t.Fatalf("no answer to a 2 GB claim: %v", err)
	}
	er, ok := msg.(*pgproto3.ErrorResponse)
	if !ok || er.Severity != "FATAL" || er.Code != "54000" || !strings.Contains(er.Message, strconv.Itoa(64<<20)) {
		t.Fatalf("answer to a 2 GB claim: %#v", msg)
	}
	after := heap()
	if d := after.TotalAlloc - before.TotalAlloc; d > 64<<20 {
		t.Errorf("the server allocated %d bytes for a claim of %d", d, claim)
	}
	if d := int64(after.HeapSys) - int64(before.HeapSys); d > 64<<20 {
		t.Errorf("the heap grew by %d bytes for a claim of %d", d, claim)
	}
	if _, err := fe.Receive(); err == nil {
		t.Error("the connection stayed open after the FATAL")
	}
	if n := metric(t, f, `rocklake_pg_clients_dropped_total{reason="message_too_large"}`); n != 1 {
		t.Errorf("message_too_large drops: %v", n)
	}

	// Under the limit: 60 MiB claimed, a few bytes sent.
	c2, _ := rawLogin(t, f, "slow", 0)
	before = heap()
	sent := append(header('Q', 60<<20), "SELECT 1 -- and the rest is on its way"...)
	if _, err := c2.Write(sent); err != nil {
		t.Fatal(err)
	}
	// Until the server shows it holds what was sent, or its heap shows it
	// made room for the claim.
	var held float64
	for deadline := time.Now().Add(time.Minute); ; {
		held = metric(t, f, "rocklake_pg_buffered_bytes")
		after = heap()
		if held >= float64(len(sent)) || after.TotalAlloc-before.TotalAlloc >= 60<<20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server shows neither the part sent nor room for the claim (holds %v)", held)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if held > 1<<20 {
		t.Errorf("the server holds %v bytes of a message it has %d of", held, len(sent))
	}
	if d := after.TotalAlloc - before.TotalAlloc; d > 16<<20 {
		t.Errorf("the server allocated %d bytes for a message of which %d arrived", d, len(sent))
	}
	c2.Close()
	waitMetric(t, f, "rocklake_pg_buffered_bytes", "after the client left", func(v float64) bool { return v == 0 })

	// Others are served throughout.
	var n int
	if err := f.connect(t, pgx.QueryExecModeSimpleProtocol).QueryRow(context.Background(), "SELECT count(*) FROM t").Scan(&n); err != nil || n != 300 {
		t.Errorf("another client: %d %v", n, err)
	}
}

// Through a driver: a message under a lowered limit is served whole (it
// arrives in many reads), one over it fails with 54000 naming the limit,
// and the driver reads the error even though it was still sending.
func TestMessageLimitThroughDriver(t *testing.T) {
	cfg := newConfig()
	cfg.MaxMessageBytes = 1 << 20
	f := newFixture(t, cfg)
	ctx := context.Background()
	c := f.connect(t, pgx.QueryExecModeSimpleProtocol)
	var n int
	if err := c.QueryRow(ctx, "SELECT length('"+strings.Repeat("x", 512<<10)+"')").Scan(&n); err != nil || n != 512<<10 {
		t.Fatalf("a 512 KiB query: %d %v", n, err)
	}
	_, err := c.Exec(ctx, "SELECT length('"+strings.Repeat("x", 2<<20)+"')")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "54000" || !strings.Contains(pe.Message, strconv.Itoa(1<<20)) {
		t.Fatalf("a 2 MiB query over a 1 MiB limit: %v", err)
	}
	if !c.IsClosed() {
		if err := c.Ping(ctx); err == nil {
			t.Error("the connection still works after the FATAL")
		}
	}
	other := f.connect(t, pgx.QueryExecModeSimpleProtocol)
	if err := other.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil || n != 300 {
		t.Errorf("another client: %d %v", n, err)
	}
}

// A client that asks for a large answer and never reads it: the server
// holds a bounded part of it while the socket is full, serves another
// client meanwhile, drops the reader after the write timeout (its query
// closed, its bytes released), and it never got the whole answer.
func TestNonReadingClientDropped(t *testing.T) {
	cfg := newConfig()
	cfg.WriteTimeout = 5 * time.Second
	f := newFixture(t, cfg)
	const rows, width = 30000, 1000 // about 30 MB, beyond any socket's buffers
	c, fe := rawLogin(t, f, "stuck", 16<<10)
	fe.Send(&pgproto3.Query{String: "SELECT i, repeat('x', " + strconv.Itoa(width) + ") AS pad FROM range(" + strconv.Itoa(rows) + ") r(i)"})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	held := waitMetric(t, f, "rocklake_pg_buffered_bytes", "the stuck answer", func(v float64) bool { return v > 0 })
	if held > 1<<20 {
		t.Errorf("the server holds %v bytes of an answer no one reads", held)
	}

	ctx := context.Background()
	other := f.connect(t, pgx.QueryExecModeSimpleProtocol)
	var n int
	if err := other.QueryRow(ctx, "SELECT count(*) FROM t WHERE id < 150").Scan(&n); err != nil || n != 150 {
		t.Errorf("another client while one is stuck: %d %v", n, err)
	}
	if held := metric(t, f, "rocklake_pg_buffered_bytes"); held > 1<<20 {
		t.Errorf("the server holds %v bytes of an answer no one reads", held)
	}
	if d := metric(t, f, `rocklake_pg_clients_dropped_total{reason="write_timeout"}`); d != 0 {
		t.Logf("the stuck client was dropped before the other's query ended (a slow machine?)")
	}

	waitMetric(t, f, `rocklake_pg_clients_dropped_total{reason="write_timeout"}`, "the stuck client's drop", func(v float64) bool { return v == 1 })
	waitMetric(t, f, "rocklake_pg_buffered_bytes", "after the drop", func(v float64) bool { return v == 0 })
	waitMetric(t, f, "rocklake_pg_connections", "after the drop", func(v float64) bool { return v == 1 })

	// What reached the stuck client is what the sockets held: a part.
	got, complete := 0, false
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	for {
		msg, err := fe.Receive()
		if err != nil {
			break
		}
		switch msg.(type) {
		case *pgproto3.DataRow:
			got++
		case *pgproto3.CommandComplete:
			complete = true
		}
	}
	if complete || got >= rows {
		t.Errorf("the stuck client got %d rows of %d (complete %v)", got, rows, complete)
	}
	if err := other.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil || n != 300 {
		t.Errorf("the other client after the drop: %d %v", n, err)
	}
}
