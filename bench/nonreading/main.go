// Command nonreading shows what clients that stop reading cost `rocklake
// serve`: -clients PostgreSQL-protocol clients (raw sockets with a small
// receive buffer) each log in, ask for an answer of -rows rows of -width
// bytes and never read it. The server runs in this process, on loopback,
// with -write-timeout; the clients hold nearly nothing, so the process's
// memory is the server's. Printed and written as JSON (-json), at each
// step: resident memory (VmRSS, and the peak VmHWM, from /proc/self/status),
// the Go heap in use, and what the sessions hold in their buffers
// (rocklake_pg_buffered_bytes):
//
//   - idle: the server started, one query answered;
//   - stuck N: every client's session blocked on its full socket;
//   - dropped N: the server has ended every stuck session (write timeout);
//   - left N: the clients closed their sockets, -settle later.
//
// The clients come -rounds times: a second round that does not raise the
// memory shows the first's was given back to the allocators and used
// again, even where it was not given back to the system. While they are
// stuck, another client (pgx) runs a small query -probes times; its median
// time and failures are reported. DuckDB materializes an answer before its
// first row is sent (duckdb-go reads results whole), so a stuck session's
// memory is its answer, in DuckDB, until the session ends. DuckDB's
// allocator keeps what it freed unless its background threads return it,
// which a sandboxed engine (`rocklake serve`'s) turns on;
// -duckdb-background-threads sets them on an engine without the sandbox.
//
//	go run ./bench/nonreading -clients 64 -json bench/results/nonreading.json
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/rocklake/rocklake"
	"github.com/rocklake/rocklake/bench/internal/results"
	"github.com/rocklake/rocklake/server"
)

// Step is the process's memory at one point.
type Step struct {
	Name          string  `json:"name"`
	RSSMB         float64 `json:"rss_mb"`
	PeakRSSMB     float64 `json:"peak_rss_mb"`
	HeapInuseMB   float64 `json:"go_heap_inuse_mb"`
	BufferedBytes float64 `json:"server_buffered_bytes"`
	Connections   float64 `json:"pg_connections"`
	AtS           float64 `json:"at_s"`
}

// Report is the whole run.
type Report struct {
	Clients       int     `json:"clients"`
	Rounds        int     `json:"rounds"`
	Rows          int     `json:"rows_per_answer"`
	Width         int     `json:"width_bytes"`
	AnswerMB      float64 `json:"answer_mb_each"`
	WriteTimeoutS float64 `json:"write_timeout_s"`
	// BackgroundThreads: DuckDB's allocator_background_threads was on.
	BackgroundThreads bool    `json:"duckdb_allocator_background_threads"`
	Steps             []Step  `json:"steps"`
	Dropped           float64 `json:"write_timeout_drops"`
	ProbeMedianMS     float64 `json:"probe_median_ms"`
	ProbeFailures     int     `json:"probe_failures"`
	RowsReceived      int64   `json:"rows_reaching_stuck_clients"`
	CompleteAnswer    int     `json:"stuck_clients_with_whole_answer"`
	MaxProcs          int     `json:"gomaxprocs"`
	LoadBefore        string  `json:"load_before"`
	LoadAfter         string  `json:"load_after"`

	probes []time.Duration
}

func main() {
	clients := flag.Int("clients", 64, "clients that never read")
	rows := flag.Int("rows", 20000, "rows in each answer")
	width := flag.Int("width", 1000, "bytes of text in each row")
	writeTimeout := flag.Duration("write-timeout", 10*time.Second, "the server's write timeout")
	probes := flag.Int("probes", 20, "small queries another client runs while they are stuck")
	rounds := flag.Int("rounds", 2, "times the clients come, get stuck and are dropped (the second shows whether the first's memory is used again)")
	settle := flag.Duration("settle", 10*time.Second, "how long after the clients left the last step is taken")
	background := flag.Bool("duckdb-background-threads", false, "serve with DuckDB's allocator_background_threads on (the lake then opens without the sandbox, which locks settings)")
	jsonOut := flag.String("json", "", "write the report here as JSON")
	flag.Parse()
	rep, err := run(*clients, *rounds, *rows, *width, *writeTimeout, *probes, *settle, *background)
	if err != nil {
		log.Fatal(err)
	}
	if err := results.WriteJSON(*jsonOut, rep); err != nil {
		log.Fatal(err)
	}
}

func run(clients, rounds, rows, width int, writeTimeout time.Duration, probes int, settle time.Duration, backgroundThreads bool) (*Report, error) {
	ctx := context.Background()
	rep := &Report{Clients: clients, Rounds: rounds, Rows: rows, Width: width, WriteTimeoutS: writeTimeout.Seconds(), BackgroundThreads: backgroundThreads,
		MaxProcs: runtime.GOMAXPROCS(0), LoadBefore: results.LoadAverage()}
	rep.AnswerMB = float64(rows*(width+8)) / (1 << 20)
	dir, err := os.MkdirTemp("", "bench-nonreading-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	tmp := filepath.Join(dir, "tmp")
	os.MkdirAll(tmp, 0o755)
	sb := &rocklake.Sandbox{Dirs: []string{dir}, TempDir: tmp}
	opts := rocklake.OpenOptions{Sandbox: sb}
	if backgroundThreads {
		opts.Sandbox = nil // the sandbox locks DuckDB's settings
	}
	lake, err := rocklake.Create(ctx, filepath.Join(dir, "lake"), opts)
	if err != nil {
		return nil, err
	}
	defer lake.Close()
	if backgroundThreads {
		if _, err := lake.Engine().DB().Exec("SET GLOBAL allocator_background_threads = true"); err != nil {
			return nil, err
		}
	}
	srv, err := server.New(lake, server.Config{PGListen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0", Sandbox: sb,
		MaxConns: clients + 8, WriteTimeout: writeTimeout})
	if err != nil {
		return nil, err
	}
	go srv.Serve()
	defer srv.Shutdown(ctx)
	metricsURL := "http://" + srv.HTTPAddr().String() + "/metrics"
	start := time.Now()
	step := func(name string) error {
		m, err := scrape(metricsURL)
		if err != nil {
			return err
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		rss, hwm := results.ProcStatusMiB("VmRSS"), results.ProcStatusMiB("VmHWM")
		s := Step{Name: name, RSSMB: rss, PeakRSSMB: hwm, HeapInuseMB: float64(ms.HeapInuse) / (1 << 20),
			BufferedBytes: m["rocklake_pg_buffered_bytes"], Connections: m["rocklake_pg_connections"], AtS: time.Since(start).Seconds()}
		rep.Steps = append(rep.Steps, s)
		fmt.Printf("%-8s %6.1fs  RSS %7.1f MB (peak %7.1f)  Go heap %6.1f MB  buffered %9.0f B  connections %3.0f\n",
			s.Name, s.AtS, s.RSSMB, s.PeakRSSMB, s.HeapInuseMB, s.BufferedBytes, s.Connections)
		return nil
	}

	url := fmt.Sprintf("postgres://probe@%s/rocklake?sslmode=disable", srv.PGAddr())
	probe, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, err
	}
	defer probe.Close(ctx)
	small := "SELECT count(*) FROM range(100000) r(i) WHERE i % 7 = 1"
	if _, err := probe.Exec(ctx, small); err != nil {
		return nil, err
	}
	if err := step("idle"); err != nil {
		return nil, err
	}

	big := fmt.Sprintf("SELECT i, repeat('x', %d) AS pad FROM range(%d) r(i)", width, rows)
	for r := 1; r <= rounds; r++ {
		if err := round(rep, r, srv, metricsURL, big, probe, small, probes, step); err != nil {
			return nil, err
		}
		time.Sleep(settle)
		if err := step(fmt.Sprintf("left %d", r)); err != nil {
			return nil, err
		}
	}
	fmt.Printf("rows that reached the stuck clients: %d of %d asked for; whole answers: %d; write-timeout drops: %.0f\n",
		rep.RowsReceived, rounds*clients*rows, rep.CompleteAnswer, rep.Dropped)
	rep.LoadAfter = results.LoadAverage()
	return rep, nil
}

// round runs the clients once: stuck, probed, dropped, gone.
func round(rep *Report, r int, srv *server.Server, metricsURL, big string, probe *pgx.Conn, small string, probes int, step func(string) error) error {
	ctx := context.Background()
	clients := rep.Clients
	conns := make([]net.Conn, clients)
	for i := range conns {
		c, err := stuckClient(srv.PGAddr().String(), fmt.Sprintf("stuck%d", i), big)
		if err != nil {
			return err
		}
		conns[i] = c
	}
	// Every session blocked: each holds a flush it cannot write.
	if err := waitFor(metricsURL, func(m map[string]float64) bool {
		return m["rocklake_pg_buffered_bytes"] >= float64(clients*64<<10)
	}, time.Duration(clients)*10*time.Second); err != nil {
		return fmt.Errorf("waiting for the clients to be stuck: %w", err)
	}
	if err := step(fmt.Sprintf("stuck %d", r)); err != nil {
		return err
	}
	took := []time.Duration{}
	for range probes {
		s := time.Now()
		if _, err := probe.Exec(ctx, small); err != nil {
			rep.ProbeFailures++
			continue
		}
		took = append(took, time.Since(s))
	}
	rep.probes = append(rep.probes, took...)
	if len(rep.probes) > 0 {
		rep.ProbeMedianMS = results.MedianMS(rep.probes)
	}
	fmt.Printf("another client meanwhile: %d queries, median %.2f ms, %d failed so far\n", len(took), rep.ProbeMedianMS, rep.ProbeFailures)

	if err := waitFor(metricsURL, func(m map[string]float64) bool {
		return m[`rocklake_pg_clients_dropped_total{reason="write_timeout"}`] >= float64(r*clients)
	}, 2*time.Duration(rep.WriteTimeoutS*float64(time.Second))+time.Minute); err != nil {
		return fmt.Errorf("waiting for the drops: %w", err)
	}
	m, _ := scrape(metricsURL)
	rep.Dropped = m[`rocklake_pg_clients_dropped_total{reason="write_timeout"}`]
	if err := step(fmt.Sprintf("dropped %d", r)); err != nil {
		return err
	}

	// What reached them, read at once: a small window drains slowly.
	type drained struct {
		rows  int64
		whole bool
	}
	got := make(chan drained, len(conns))
	for _, c := range conns {
		go func() {
			n, whole := drain(c)
			c.Close()
			got <- drained{n, whole}
		}()
	}
	for range conns {
		d := <-got
		rep.RowsReceived += d.rows
		if d.whole {
			rep.CompleteAnswer++
		}
	}
	return nil
}

// stuckClient logs in, sends q and returns without reading its answer;
// its receive buffer is small, so the server's socket fills soon.
func stuckClient(addr, user, q string) (net.Conn, error) {
	d := net.Dialer{Timeout: 10 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	c.(*net.TCPConn).SetReadBuffer(16 << 10)
	fe := pgproto3.NewFrontend(c, c)
	fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: map[string]string{"user": user}})
	if err := fe.Flush(); err != nil {
		c.Close()
		return nil, err
	}
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		msg, err := fe.Receive()
		if err != nil {
			c.Close()
			return nil, err
		}
		if e, ok := msg.(*pgproto3.ErrorResponse); ok {
			c.Close()
			return nil, fmt.Errorf("login: %s %s", e.Code, e.Message)
		}
		if _, ok := msg.(*pgproto3.ReadyForQuery); ok {
			break
		}
	}
	c.SetReadDeadline(time.Time{})
	// The Query message by hand: the frontend's buffer would be read
	// again by nothing.
	msg := binary.BigEndian.AppendUint32([]byte{'Q'}, uint32(4+len(q)+1))
	msg = append(append(msg, q...), 0)
	if _, err := c.Write(msg); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// drain reads what reached a stuck client after the server dropped it:
// its rows, and whether the answer came whole.
func drain(c net.Conn) (rows int64, whole bool) {
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	fe := pgproto3.NewFrontend(c, c)
	for {
		msg, err := fe.Receive()
		if err != nil {
			return rows, whole
		}
		switch msg.(type) {
		case *pgproto3.DataRow:
			rows++
		case *pgproto3.CommandComplete:
			whole = true
		}
	}
}

// scrape reads the server's /metrics into series → value.
func scrape(url string) (map[string]float64, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out, nil
}

func waitFor(url string, ok func(map[string]float64) bool, limit time.Duration) error {
	for deadline := time.Now().Add(limit); ; {
		m, err := scrape(url)
		if err != nil {
			return err
		}
		if ok(m) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not after %v", limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
