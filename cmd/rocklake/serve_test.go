package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rocklake/rocklake/catalog"
)

// While `rocklake serve` holds a directory catalog, the commands that run
// through it print exactly what they print without a server, exit with
// the same status, and see what the server's writers add; the others are
// refused with a message naming the server. After the server stops, the
// catalog opens directly again.
func TestCommandsThroughServer(t *testing.T) {
	dir := t.TempDir()
	writeExampleData(t, dir)
	lake := filepath.Join(dir, "lake")
	mustRun(t, "--catalog", lake, "init")
	mustRun(t, "--catalog", lake, "add", "events", filepath.Join(dir, "data", "events", "2024-01-01.parquet"), "--create")
	sqlFile := filepath.Join(dir, "report.sql")
	commands := [][]string{
		{"query", "SELECT kind, count(*) AS n, min(ts) FROM events GROUP BY kind ORDER BY kind"},
		{"query", "SELECT user_id, value FROM events WHERE user_id = 3 ORDER BY value", "--format", "csv"},
		{"query", "SELECT count(*) FROM events", "--format", "json"},
		{"query", "-f", sqlFile},
		{"query", "SELECT * FROM nosuch"},
		{"query", "SELECT * FROM nosuch", "--format", "json"},
		{"plan", "events", "user_id = 3", "--format", "json"},
		{"plan", "events", "kind = 'buy'"},
		{"stats", "events", "--format", "json"},
		{"snapshots"},
		{"files", "events"},
		{"table", "list"},
		{"table", "describe", "events"},
	}
	type outcome struct {
		out  string
		code int
	}
	runAll := func() []outcome {
		var res []outcome
		for _, c := range commands {
			out, err := run(t, append([]string{"--catalog", lake}, c...)...)
			if err != nil {
				var buf bytes.Buffer
				reportError(&buf, err, jsonRequested("", c), c)
				out += buf.String()
			}
			res = append(res, outcome{stripTimes(out), exitCode(err)})
		}
		return res
	}
	direct := runAll()

	stop := serveInBackground(t, lake)
	defer stop()
	served := runAll()
	for i, c := range commands {
		if served[i] != direct[i] {
			t.Errorf("%v through the server:\n%q (exit %d)\ndirectly:\n%q (exit %d)", c, served[i].out, served[i].code, direct[i].out, direct[i].code)
		}
	}
	// A relative path to add is the client's, not the server's.
	wd, _ := os.Getwd()
	os.Chdir(dir)
	out, err := run(t, "--catalog", lake, "add", "events", filepath.Join("data", "events", "2024-01-02.parquet"))
	os.Chdir(wd)
	if exitCode(err) != 0 || !strings.Contains(out, "2024-01-02.parquet") && !strings.Contains(out, "1 file") {
		t.Errorf("add through the server: %q %v", out, err)
	}
	out, _ = run(t, "--catalog", lake, "query", "SELECT count(*) FROM events")
	if !strings.Contains(out, "80") {
		t.Errorf("after the add through the server: %q", out)
	}
	// table alter runs in the server too: a change, a refusal, and a
	// default that looks like a flag.
	out, err = run(t, "--catalog", lake, "table", "alter", "events", "rename", "column", "value", "to", "amount")
	if exitCode(err) != 0 || !strings.Contains(out, "altered table events at snapshot") {
		t.Errorf("table alter through the server: %q %v", out, err)
	}
	out, err = run(t, "--catalog", lake, "--format", "json", "table", "alter", "events", "add", "column", "score", "INTEGER", "DEFAULT", "-5")
	if exitCode(err) != 0 || !strings.Contains(out, `"alteration": "add column score INTEGER default '-5'"`) {
		t.Errorf("table alter --format json through the server: %q %v", out, err)
	}
	out, err = run(t, "--catalog", lake, "table", "alter", "events", "drop", "column", "nosuch")
	if exitCode(err) == 0 || !strings.Contains(out+errText(err), `"nosuch"`) {
		t.Errorf("a refused table alter through the server: %q %v", out, err)
	}
	out, _ = run(t, "--catalog", lake, "--format", "csv", "query", "SELECT count(amount), min(score), max(score) FROM events")
	if out != "count(amount),min(score),max(score)\n80,-5,-5\n" {
		t.Errorf("after table alter through the server: %q", out)
	}
	_, err = run(t, "--catalog", lake, "verify", "events")
	if !errors.Is(err, catalog.ErrLocked) || !strings.Contains(err.Error(), "rocklake serve") {
		t.Errorf("verify while served: %v", err)
	}

	stop()
	if _, err := os.Stat(filepath.Join(lake, socketName)); err == nil {
		t.Error("the socket outlived the server")
	}
	if _, err := run(t, "--catalog", lake, "verify", "events"); err != nil {
		t.Errorf("verify after the server stopped: %v", err)
	}
}

// serveInBackground runs `rocklake serve` on a directory catalog (loopback
// ports the system picks) until its socket is up; stop ends it and waits,
// and may be called more than once.
func serveInBackground(t *testing.T, lake string) (stop func()) {
	t.Helper()
	stop, _ = serveWith(t, lake)
	return stop
}

// serveWith is serveInBackground with more serve flags; out is what the
// server printed so far.
func serveWith(t *testing.T, lake string, flags ...string) (stop func(), out func() string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	root := newRootCmd()
	var serveOut syncWriter
	root.SetOut(&serveOut)
	root.SetErr(&serveOut)
	root.SetArgs(append([]string{"--catalog", lake, "serve", "--pg-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0"}, flags...))
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	deadline := time.Now().Add(2 * time.Minute)
	for socketFor(lake) == "" {
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("the server did not start: %s", serveOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("serve after its context ended: %v", err)
				}
			case <-time.After(time.Minute):
				t.Error("serve did not stop")
			}
		})
	}, serveOut.String
}

// errText is err's message, or "" for none.
func errText(err error) string {
	if err == nil {
		return ""
	}
	var buf bytes.Buffer
	reportError(&buf, err, false, nil)
	return err.Error() + buf.String()
}

// stripTimes drops the timing line of text query output, which differs
// run to run.
func stripTimes(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "(") && strings.Contains(l, " in ") {
			continue
		}
		if strings.Contains(l, `"seconds"`) || strings.Contains(l, `"elapsed`) || strings.Contains(l, `"ns"`) {
			continue
		}
		keep = append(keep, l)
	}
	return strings.Join(keep, "\n")
}

// syncWriter is a buffer a running command writes while the test reads.
type syncWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// A served directory catalog without a data root takes writes in SQL: the
// served DuckDB may write and read the catalog's rewrite directory, where
// their files go. Here over the local socket's POST /v1/sql; the rows are
// then seen by a query through the server.
func TestWritesThroughServe(t *testing.T) {
	dir := t.TempDir()
	writeExampleData(t, dir)
	lake := filepath.Join(dir, "lake")
	mustRun(t, "--catalog", lake, "init")
	mustRun(t, "--catalog", lake, "add", "events", filepath.Join(dir, "data", "events", "2024-01-01.parquet"), "--create")
	stop := serveInBackground(t, lake)
	defer stop()
	sock := socketFor(lake)
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	for _, q := range []string{
		"CREATE TABLE buys AS SELECT user_id, value FROM events WHERE kind = 'buy'",
		"INSERT INTO events BY NAME SELECT 999 AS user_id",
	} {
		body, _ := json.Marshal(map[string]string{"sql": q})
		resp, err := client.Post("http://rocklake/v1/sql", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", q, resp.StatusCode, b)
		}
	}
	out, err := run(t, "--catalog", lake, "--format", "csv", "query", "SELECT (SELECT count(*) FROM buys) > 0 AS bought, (SELECT count(*) FROM events WHERE user_id = 999) AS added")
	if exitCode(err) != 0 || out != "bought,added\ntrue,1\n" {
		t.Errorf("after the writes: %q %v", out, err)
	}
}
