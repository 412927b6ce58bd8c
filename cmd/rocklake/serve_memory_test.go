package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dustin/go-humanize"
)

// --memory-limit is divided between DuckDB and the sessions' buffers, the
// two adding up to it: an eighth to the buffers unless
// --max-buffered-bytes says otherwise, which must leave DuckDB some.
func TestMemoryShares(t *testing.T) {
	for _, c := range []struct {
		limit, buffered         string
		total, duckdb, buffers  int64
		usage                   bool
		wantInErr, wantInErrToo string
	}{
		{limit: "4GB", total: 4e9, duckdb: 3.5e9, buffers: 5e8},
		{limit: "4GiB", total: 4 << 30, duckdb: 7 << 29, buffers: 1 << 29},
		{limit: "4GB", buffered: "1GB", total: 4e9, duckdb: 3e9, buffers: 1e9},
		{limit: "1GB", buffered: "65536", total: 1e9, duckdb: 1e9 - 65536, buffers: 65536},
		{limit: "1GB", buffered: "1GB", usage: true, wantInErr: "--max-buffered-bytes", wantInErrToo: "--memory-limit"},
		{limit: "1GB", buffered: "2GB", usage: true, wantInErr: "--max-buffered-bytes", wantInErrToo: "--memory-limit"},
		{limit: "lots", usage: true, wantInErr: "--memory-limit", wantInErrToo: "lots"},
		{limit: "none", usage: true, wantInErr: "--memory-limit", wantInErrToo: "none"},
		{limit: "1GB", buffered: "some", usage: true, wantInErr: "--max-buffered-bytes", wantInErrToo: "some"},
	} {
		m, err := memoryShares(c.limit, c.buffered)
		if c.usage {
			if exitCode(err) != exitUsage || !strings.Contains(errText(err), c.wantInErr) || !strings.Contains(errText(err), c.wantInErrToo) {
				t.Errorf("%q %q: %v (exit %d)", c.limit, c.buffered, err, exitCode(err))
			}
			continue
		}
		if err != nil || m.total != c.total || m.duckdb != c.duckdb || m.buffered != c.buffers {
			t.Errorf("%q %q: %+v %v", c.limit, c.buffered, m, err)
		}
	}
	// Without a limit, DuckDB's own default is the whole.
	m, err := memoryShares("", "")
	if err != nil || m.total <= 0 || m.buffered != m.total/8 || m.duckdb+m.buffered != m.total {
		t.Errorf("DuckDB's default: %+v %v", m, err)
	}
}

// serve divides --memory-limit as it says, and DuckDB takes its part
// (the setting is applied when the first query opens a connection).
func TestServeMemoryLimit(t *testing.T) {
	dir := t.TempDir()
	writeExampleData(t, dir)
	lake := filepath.Join(dir, "lake")
	mustRun(t, "--catalog", lake, "init")
	mustRun(t, "--catalog", lake, "add", "events", filepath.Join(dir, "data", "events", "2024-01-01.parquet"), "--create")

	if _, err := run(t, "--catalog", lake, "serve", "--memory-limit", "1GB", "--max-buffered-bytes", "1GB"); exitCode(err) != exitUsage {
		t.Errorf("buffers as large as the limit: %v", err)
	}
	// 64 connections need 4 MiB of buffers at least.
	if _, err := run(t, "--catalog", lake, "serve", "--memory-limit", "64MB", "--max-buffered-bytes", "1MB", "--pg-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0"); err == nil ||
		!strings.Contains(errText(err), "--max-buffered-bytes") || !strings.Contains(errText(err), "--max-connections") {
		t.Errorf("buffers too small for the connections: %v", err)
	}

	stop, out := serveWith(t, lake, "--memory-limit", "256MiB", "--max-buffered-bytes", "32MiB")
	defer stop()
	want := "memory: " + humanize.IBytes(256<<20) + " in all (--memory-limit), " + humanize.IBytes(224<<20) + " of it for DuckDB, " + humanize.IBytes(32<<20) + " for what sessions hold"
	for deadline := time.Now().Add(time.Minute); !strings.Contains(out(), want); {
		if time.Now().After(deadline) {
			t.Fatalf("serve printed %q, not %q", out(), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
	got, err := run(t, "--catalog", lake, "query", "SELECT kind, count(*) AS n FROM events GROUP BY kind ORDER BY kind")
	if exitCode(err) != 0 || !strings.Contains(got, "click  14") || !strings.Contains(got, "answered by DuckDB") {
		t.Errorf("a query DuckDB runs, through the server: %q %v", got, err)
	}
}
