package server_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/rocklake/rocklake/server"
)

// scrape reads one series of /metrics without a *testing.T, for a
// goroutine watching the server.
func scrape(addr, series string) (float64, error) {
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			return strconv.ParseFloat(v, 64)
		}
	}
	return 0, sc.Err()
}

// watchPeak records the highest value a series takes until the returned
// function is called, which gives it.
func watchPeak(t *testing.T, f *fixture, series string) (stop func() float64) {
	t.Helper()
	var peak atomic.Int64
	done, ended := make(chan struct{}), make(chan struct{})
	addr := f.srv.HTTPAddr().String()
	go func() {
		defer close(ended)
		for {
			select {
			case <-done:
				return
			default:
			}
			if v, err := scrape(addr, series); err == nil && int64(v) > peak.Load() {
				peak.Store(int64(v))
			}
			time.Sleep(time.Millisecond)
		}
	}()
	var once sync.Once
	stop = func() float64 {
		once.Do(func() { close(done); <-ended })
		return float64(peak.Load())
	}
	t.Cleanup(func() { stop() })
	return stop
}

// answer is what a raw client read of one answer: rows, the width of the
// last one's second column, and how it ended.
type answer struct {
	rows, width int
	complete    bool
	err         *pgproto3.ErrorResponse
}

// readAnswer reads up to ReadyForQuery (or the connection's end).
func readAnswer(c net.Conn, fe *pgproto3.Frontend) (answer, error) {
	var a answer
	c.SetReadDeadline(time.Now().Add(2 * time.Minute))
	for {
		msg, err := fe.Receive()
		if err != nil {
			return a, err
		}
		switch m := msg.(type) {
		case *pgproto3.DataRow:
			a.rows++
			if len(m.Values) > 1 {
				a.width = len(m.Values[1])
			}
		case *pgproto3.CommandComplete:
			a.complete = true
		case *pgproto3.ErrorResponse:
			e := *m
			a.err = &e
			if m.Severity == "FATAL" {
				return a, nil
			}
		case *pgproto3.ReadyForQuery:
			return a, nil
		}
	}
}

const budgetFlag = "--max-buffered-bytes"

// Many clients asking for answers of large rows and reading none: the
// bytes the sessions hold stay within the buffer limit all along, the
// sessions that would pass it fail with 53200 naming the limit and its
// flag, a client reading its answer meanwhile gets all of it, the stuck
// ones that were not refused get their whole answers once they read,
// and when they are gone nothing is held.
func TestBufferedRowsBounded(t *testing.T) {
	cfg := newConfig()
	cfg.MaxConns = 16
	cfg.MaxBufferedBytes = 4 << 20
	cfg.WriteTimeout = 10 * time.Minute
	f := newFixture(t, cfg)
	peak := watchPeak(t, f, "rocklake_pg_buffered_bytes")
	// Rows over a session's share of the limit, answers beyond what the
	// sockets take, more clients than the rest of the limit has room for
	// (12 rows held would be 4.8 MB).
	const stuck, rows, width = 12, 24, 400_000
	q := fmt.Sprintf("SELECT i, repeat('x', %d) AS pad FROM range(%d) r(i)", width, rows)
	type client struct {
		c  net.Conn
		fe *pgproto3.Frontend
	}
	var cs []client
	for i := range stuck {
		c, fe := rawLogin(t, f, "stuck"+itoa(i), 0)
		fe.Send(&pgproto3.Query{String: q})
		if err := fe.Flush(); err != nil {
			t.Fatal(err)
		}
		cs = append(cs, client{c, fe})
	}
	waitMetric(t, f, `rocklake_query_errors_total{sqlstate="53200"}`, "a session refused for the buffer limit", func(v float64) bool { return v >= 1 })

	// A client that reads, while the stuck ones hold what they may.
	ctx := context.Background()
	other := f.connect(t, pgx.QueryExecModeSimpleProtocol)
	var n, sum int
	if err := other.QueryRow(ctx, "SELECT count(*), sum(length(p)) FROM (SELECT repeat('y', 1000) AS p FROM range(3000))").Scan(&n, &sum); err != nil || n != 3000 || sum != 3000*1000 {
		t.Errorf("a reading client's aggregate: %d %d %v", n, sum, err)
	}
	got, err := other.Query(ctx, "SELECT i, repeat('y', 1000) FROM range(3000) r(i)")
	if err != nil {
		t.Fatal(err)
	}
	n = 0
	for got.Next() {
		var i int64
		var s string
		if err := got.Scan(&i, &s); err != nil || i != int64(n) || len(s) != 1000 {
			t.Fatalf("row %d: %d %d %v", n, i, len(s), err)
		}
		n++
	}
	if err := got.Err(); err != nil || n != 3000 {
		t.Errorf("a reading client got %d rows of 3000 while others were stuck: %v", n, err)
	}
	if p := peak(); p > float64(cfg.MaxBufferedBytes) {
		t.Errorf("the sessions held %v bytes, over the limit of %d", p, cfg.MaxBufferedBytes)
	}

	// Each stuck client, reading now, gets its whole answer or the 53200.
	refused := 0
	for i, c := range cs {
		a, err := readAnswer(c.c, c.fe)
		switch {
		case err != nil:
			t.Errorf("stuck client %d: %v after %d rows", i, err, a.rows)
		case a.err != nil:
			refused++
			if a.err.Code != "53200" || a.err.Severity != "ERROR" || !strings.Contains(a.err.Message, strconv.Itoa(4<<20)) || !strings.Contains(a.err.Message, budgetFlag) {
				t.Errorf("stuck client %d: %s %s %q", i, a.err.Severity, a.err.Code, a.err.Message)
			}
		case !a.complete || a.rows != rows || a.width != width:
			t.Errorf("stuck client %d got %d rows of %d (width %d, complete %v)", i, a.rows, rows, a.width, a.complete)
		}
	}
	if refused == 0 {
		t.Error("no stuck client was refused")
	}
	if refused == stuck {
		t.Error("every stuck client was refused")
	}
	if d := metric(t, f, `rocklake_pg_clients_dropped_total{reason="write_timeout"}`); d != 0 {
		t.Errorf("%v clients dropped for the write timeout", d)
	}
	// The refused sessions go on.
	cs[0].fe.Send(&pgproto3.Query{String: "SELECT 1, 'ok'"})
	cs[0].fe.Flush()
	if a, err := readAnswer(cs[0].c, cs[0].fe); err != nil || a.err != nil || a.rows != 1 {
		t.Errorf("a stuck client's next query: %+v %v", a, err)
	}
	for _, c := range cs {
		c.c.Close()
	}
	waitMetric(t, f, "rocklake_pg_connections", "after the stuck clients left", func(v float64) bool { return v == 1 })
	waitMetric(t, f, "rocklake_pg_buffered_bytes", "after the stuck clients left", func(v float64) bool { return v == 0 })
	if p := peak(); p > float64(cfg.MaxBufferedBytes) {
		t.Errorf("the sessions held %v bytes, over the limit of %d", p, cfg.MaxBufferedBytes)
	}
}

// Many clients that send most of a large message and then stop: what
// the server holds of them stays within the limit, those it has no room
// for get a FATAL 53200 naming the limit and its flag, a client meanwhile
// is served, and those that had room are answered once they send the
// rest.
func TestBufferedMessagesBounded(t *testing.T) {
	cfg := newConfig()
	cfg.MaxConns = 16
	cfg.MaxBufferedBytes = 4 << 20
	cfg.WriteTimeout = 10 * time.Minute
	f := newFixture(t, cfg)
	peak := watchPeak(t, f, "rocklake_pg_buffered_bytes")
	// 8 messages of 1 MiB, 700 KB of each sent: 5.6 MB held without a
	// limit.
	const senders, size, sent = 8, 1 << 20, 700_000
	body := append([]byte("SELECT 7 AS seven -- "), bytes.Repeat([]byte("z"), size-len("SELECT 7 AS seven -- ")-1)...)
	body = append(body, 0)
	msg := append(header('Q', uint32(4+len(body))), body...)
	type client struct {
		c  *net.TCPConn
		fe *pgproto3.Frontend
	}
	var cs []client
	var writes sync.WaitGroup
	for i := range senders {
		c, fe := rawLogin(t, f, "sender"+itoa(i), 0)
		cs = append(cs, client{c, fe})
		writes.Add(1)
		go func() {
			defer writes.Done()
			c.SetWriteDeadline(time.Now().Add(time.Minute))
			c.Write(msg[:sent])
		}()
	}
	writes.Wait()
	waitMetric(t, f, `rocklake_pg_clients_dropped_total{reason="buffer_limit"}`, "a sender refused for the buffer limit", func(v float64) bool { return v >= 1 })

	ctx := context.Background()
	other := f.connect(t, pgx.QueryExecModeSimpleProtocol)
	var n int
	if err := other.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil || n != 300 {
		t.Errorf("another client while senders are stuck: %d %v", n, err)
	}

	// Those refused read their FATAL; the others send the rest.
	var kept []client
	for i, c := range cs {
		c.c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		m, err := c.fe.Receive()
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			kept = append(kept, c)
			continue
		}
		er, ok := m.(*pgproto3.ErrorResponse)
		if err != nil || !ok || er.Severity != "FATAL" || er.Code != "53200" || !strings.Contains(er.Message, strconv.Itoa(4<<20)) ||
			!strings.Contains(er.Message, budgetFlag) || !strings.Contains(er.Message, strconv.Itoa(len(msg))) {
			t.Errorf("sender %d: %#v %v", i, m, err)
		}
	}
	refused := len(cs) - len(kept)
	if refused == 0 || len(kept) == 0 {
		t.Errorf("%d senders refused, %d kept", refused, len(kept))
	}
	if d := metric(t, f, `rocklake_pg_clients_dropped_total{reason="buffer_limit"}`); int(d) != refused {
		t.Errorf("buffer_limit drops: %v, refused senders: %d", d, refused)
	}
	// One of those kept, alone now, has room for its whole message.
	for _, c := range kept[1:] {
		c.c.Close()
	}
	waitMetric(t, f, "rocklake_pg_connections", "after the senders but one left", func(v float64) bool { return v == 2 })
	c := kept[0]
	c.c.SetWriteDeadline(time.Now().Add(time.Minute))
	if _, err := c.c.Write(msg[sent:]); err != nil {
		t.Fatal(err)
	}
	if a, err := readAnswer(c.c, c.fe); err != nil || a.err != nil || a.rows != 1 || !a.complete {
		t.Errorf("the sender kept: %+v %v", a, err)
		if a.err != nil {
			t.Errorf("%s %s", a.err.Code, a.err.Message)
		}
	}
	if p := peak(); p > float64(cfg.MaxBufferedBytes) || p < 1<<20 {
		t.Errorf("the sessions held at most %v bytes; the limit is %d", p, cfg.MaxBufferedBytes)
	}
	c.c.Close()
	waitMetric(t, f, "rocklake_pg_buffered_bytes", "after the senders left", func(v float64) bool { return v == 0 })
}

// The server refuses a buffer limit that leaves connections no share.
func TestBufferLimitTooSmall(t *testing.T) {
	cfg := newConfig()
	cfg.MaxConns = 64
	cfg.MaxBufferedBytes = 1 << 20
	cfg.PGListen, cfg.HTTPListen = "127.0.0.1:0", "127.0.0.1:0"
	f := newFixture(t, newConfig()) // a lake to serve
	if srv, err := server.New(f.lake, cfg); err == nil {
		srv.Shutdown(context.Background())
		t.Fatal("a 1 MiB buffer limit for 64 connections was accepted")
	} else if !strings.Contains(err.Error(), budgetFlag) || !strings.Contains(err.Error(), "--max-connections") {
		t.Errorf("error: %v", err)
	}
}
