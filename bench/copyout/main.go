// Command copyout measures moving a whole table out of `rocklake serve`
// with COPY (SELECT * FROM events) TO STDOUT through psql, in the text,
// CSV and binary formats, beside `rocklake query --format csv` of the
// same rows: wall time, and the peak resident memory of the process doing
// the work (the server's, sampled from /proc while psql copies; the CLI's
// own). The table is bench/query's events table (DuckDB-written Parquet
// files, one per hour; -files × -rows rows, written once under -dir and
// reused). Run it at two sizes to see how the server's memory grows with
// the rows.
//
// Every contender's output is read through a pipe and counted; the CSV
// ones are checked to hold the same multiset of lines (COPY's CSV against
// the CLI's, header left out). Rounds rotate the order, after a warm-up;
// medians are printed and written as JSON (-json). Loopback only.
//
//	go run ./bench/copyout -files 100 -rows 20000 -dir /tmp/bcopy -json bench/results/copyout.json
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"hash/fnv"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rocklake/rocklake/bench/internal/baseline"
	"github.com/rocklake/rocklake/bench/internal/events"
	"github.com/rocklake/rocklake/bench/internal/results"
	"github.com/rocklake/rocklake/internal/pgtest"
)

// Result is one contender's figures.
type Result struct {
	Name        string  `json:"name"`
	Command     string  `json:"command"`
	TotalMS     float64 `json:"total_ms"`
	RowsPerS    float64 `json:"rows_per_s"`
	PeakRSSKB   int64   `json:"peak_rss_kb"` // the working process's, largest of the timed runs
	RSSBeforeKB int64   `json:"rss_before_kb,omitempty"`
	GrowthKB    int64   `json:"rss_growth_kb,omitempty"` // the largest peak less the RSS just before, of the timed runs
	OutputBytes int64   `json:"output_bytes"`
	SameRows    *bool   `json:"same_rows_as_cli_csv,omitempty"`
}

// Output is the whole run.
type Output struct {
	Files       int      `json:"files"`
	Rows        int      `json:"rows_per_file"`
	Total       int      `json:"rows"`
	Runs        int      `json:"runs"`
	Results     []Result `json:"results"`
	MemoryLimit string   `json:"server_memory_limit,omitempty"`
	Note        string   `json:"note"`
}

type contender struct {
	name    string
	args    []string
	server  bool   // the work is the server's: sample its memory
	pg      bool   // the work is PostgreSQL's: sample its processes' memory
	shown   string // the command as reported, where args hold a secret
	csvRows bool
	header  bool
	total   []time.Duration
	rss     int64
	before  int64
	growth  int64
	bytes   int64
	lines   int64
	digest  uint64
}

func main() {
	files := flag.Int("files", 100, "files (one hour each)")
	rows := flag.Int("rows", 20000, "rows per file")
	runs := flag.Int("runs", 3, "timed rounds (at least 1)")
	dir := flag.String("dir", "", "where the data set and catalog live (kept and reused; default: a temporary directory)")
	bin := flag.String("rocklake", "", "a rocklake binary to use (default: built here from ./cmd/rocklake)")
	jsonOut := flag.String("json", "", "write the results here as JSON")
	memLimit := flag.String("memory-limit", "", "the server's --memory-limit (default: none, DuckDB's default of 80% of memory)")
	only := flag.String("only", "", "run only the contenders whose names contain one of these comma-separated words (a fresh server's memory without the others' answers in it)")
	withPG := flag.Bool("postgres", true, "also time PostgreSQL 15's own COPY of a native table of the same rows (a throwaway cluster, as the tests start one)")
	flag.Parse()
	if *runs < 1 {
		log.Fatal("-runs must be at least 1")
	}
	psql, err := exec.LookPath("psql")
	if err != nil {
		log.Fatal("psql is not installed (Debian: postgresql-client)")
	}
	tmp, err := os.MkdirTemp("", "rocklake-bench-copyout-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	fatalf := func(format string, args ...any) {
		os.RemoveAll(tmp)
		log.Fatalf(format, args...)
	}
	root := *dir
	if root == "" {
		root = filepath.Join(tmp, "data")
	}
	rocklake, err := baseline.Rocklake(*bin, tmp)
	if err != nil {
		fatalf("%v", err)
	}
	lake, _, err := events.Lake(rocklake, root, *files, *rows)
	if err != nil {
		fatalf("%v", err)
	}
	total := *files * *rows

	port, err := results.FreePort()
	if err != nil {
		fatalf("%v", err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	srv := exec.Command(rocklake, "--catalog", lake, "serve", "--pg-listen", addr, "--http-listen", "",
		"--max-result-rows", strconv.Itoa(total+1), "--max-result-bytes", strconv.FormatInt(1<<40, 10),
		"--statement-timeout", "30m")
	if *memLimit != "" {
		srv.Args = append(srv.Args, "--memory-limit", *memLimit)
	}
	var srvErr bytes.Buffer
	srv.Stderr = &srvErr
	if err := srv.Start(); err != nil {
		fatalf("serve: %v", err)
	}
	defer func() { srv.Process.Signal(syscall.SIGTERM); srv.Wait() }()
	if err := results.WaitFor(addr, 60*time.Second); err != nil {
		srv.Process.Kill()
		fatalf("serve did not listen: %v\n%s", err, srvErr.String())
	}
	url := "postgres://bench@" + addr + "/rocklake?sslmode=disable"
	copyArgs := func(opts string) []string {
		return []string{psql, "-X", "-q", url, "-c", "COPY (SELECT * FROM events) TO STDOUT" + opts}
	}
	cs := []*contender{
		{name: "rocklake query --format csv", args: []string{rocklake, "--catalog", lake, "--format", "csv", "query", "SELECT * FROM events"}, csvRows: true, header: true},
		{name: "COPY TO STDOUT csv (psql)", args: copyArgs(" (FORMAT csv)"), server: true, csvRows: true},
		{name: "COPY TO STDOUT text (psql)", args: copyArgs(""), server: true},
		{name: "COPY TO STDOUT binary (psql)", args: copyArgs(" (FORMAT binary)"), server: true},
	}
	if *only != "" {
		var kept []*contender
		for _, c := range cs {
			for _, w := range strings.Split(*only, ",") {
				if w != "" && strings.Contains(c.name, w) {
					kept = append(kept, c)
					break
				}
			}
		}
		cs = kept
	}
	postmaster := 0
	if *withPG {
		pgURL, pid, stop, err := nativeTable(psql, rocklake, lake)
		if err != nil {
			fatalf("PostgreSQL: %v", err)
		}
		defer stop()
		postmaster = pid
		q := "COPY (SELECT * FROM events) TO STDOUT (FORMAT csv)"
		cs = append(cs, &contender{name: "PostgreSQL 15 COPY TO STDOUT csv (psql)", pg: true, csvRows: true,
			args:  []string{psql, "-X", "-q", pgURL, "-c", q},
			shown: "-X -q postgres://(throwaway cluster)/copybench -c " + q}) // the URL holds the cluster's password
		qb := "COPY (SELECT * FROM events) TO STDOUT (FORMAT binary)"
		cs = append(cs, &contender{name: "PostgreSQL 15 COPY TO STDOUT binary (psql)", pg: true,
			args:  []string{psql, "-X", "-q", pgURL, "-c", qb},
			shown: "-X -q postgres://(throwaway cluster)/copybench -c " + qb})
	}
	for round := -1; round < *runs; round++ {
		for i := range cs {
			c := cs[(i+max(round, 0))%len(cs)]
			d, rss, before, err := runOnce(c, srv.Process.Pid, postmaster, round < 0)
			if err != nil {
				fatalf("%s: %v\n%s", c.name, err, srvErr.String())
			}
			if round >= 0 {
				c.total = append(c.total, d)
				c.rss, c.before, c.growth = max(c.rss, rss), max(c.before, before), max(c.growth, rss-before)
			}
		}
	}
	out := Output{Files: *files, Rows: *rows, Total: total, Runs: *runs, MemoryLimit: *memLimit,
		Note: "peak_rss_kb: for COPY, the server process's (sampled every 10 ms while psql copies; rss_before_kb just before); for PostgreSQL, the sum over its processes (postmaster and backends, shared buffers they touched included); for the CLI, its own. Text and CSV COPY are DuckDB's own COPY into a pipe (server/copystream.go), which keeps no order for a query without ORDER BY and so holds nothing back; binary COPY takes the same pipe, in the text format, and the server writes each value's binary form from its text (server/binfast.go; pgx's codecs for the types it does not read)."}
	if len(cs) == 0 || !cs[0].csvRows {
		fatalf("-only must keep the CLI's CSV, the reference the others' rows are checked against")
	}
	ref := cs[0]
	fmt.Printf("%d rows (%d files), medians of %d\n", total, *files, *runs)
	for _, c := range cs {
		ms := results.MedianMS(c.total)
		cmdline := strings.Join(c.args[1:], " ")
		if c.shown != "" {
			cmdline = c.shown
		}
		r := Result{Name: c.name, Command: cmdline, TotalMS: ms, RowsPerS: float64(total) / (ms / 1000),
			PeakRSSKB: c.rss, RSSBeforeKB: c.before, OutputBytes: c.bytes}
		if c.server || c.pg {
			r.GrowthKB = c.growth
		}
		if c.csvRows {
			same := c.digest == ref.digest && c.lines-b2i(c.header) == ref.lines-b2i(ref.header)
			r.SameRows = &same
			if !same {
				fatalf("%s: its rows differ from the CLI's (%d lines against %d)", c.name, c.lines, ref.lines)
			}
		}
		out.Results = append(out.Results, r)
		before := ""
		if c.server || c.pg {
			before = fmt.Sprintf(" (server before: %.1f MB, grew %.1f MB)", float64(c.before)/1024, float64(c.growth)/1024)
		}
		fmt.Printf("%-30s %9.1f ms  %10.0f rows/s  peak RSS %7.1f MB%s  %7.1f MB out\n",
			c.name, ms, r.RowsPerS, float64(c.rss)/1024, before, float64(c.bytes)/1e6)
	}
	if err := results.WriteJSON(*jsonOut, out); err != nil {
		fatalf("%v", err)
	}
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// runOnce runs a contender, reading its output; for one whose work is the
// server's, the server's resident memory is sampled meanwhile.
func runOnce(c *contender, server, postmaster int, digest bool) (d time.Duration, rssKB, beforeKB int64, err error) {
	cmd := exec.Command(c.args[0], c.args[1:]...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return 0, 0, 0, err
	}
	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	if c.server || c.pg {
		sample := func() int64 { return rss(server) }
		if c.pg {
			sample = func() int64 { return treeRSS(postmaster) }
		}
		beforeKB = sample()
		go func() {
			defer close(sampled)
			for {
				peak.Store(max(peak.Load(), sample()))
				select {
				case <-stop:
					return
				case <-time.After(10 * time.Millisecond):
				}
			}
		}()
	} else {
		close(sampled)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		close(stop)
		return 0, 0, 0, err
	}
	r := bufio.NewReaderSize(pipe, 1<<20)
	var n, size int64
	var sum uint64
	for {
		line, err := r.ReadSlice('\n')
		if len(line) == 0 && err != nil {
			if err != io.EOF && err != bufio.ErrBufferFull {
				close(stop)
				return 0, 0, 0, err
			}
			if err == io.EOF {
				break
			}
		}
		n++
		size += int64(len(line))
		if digest && c.csvRows && (n > 1 || !c.header) {
			h := fnv.New64a()
			h.Write(bytes.TrimRight(line, "\r\n"))
			sum += h.Sum64()
		}
	}
	err = cmd.Wait()
	d = time.Since(start)
	close(stop)
	<-sampled
	if err != nil {
		return 0, 0, 0, fmt.Errorf("%v: %s", err, stderr.String())
	}
	if digest {
		c.bytes, c.lines, c.digest = size, n, sum
	}
	if c.server || c.pg {
		return d, peak.Load(), beforeKB, nil
	}
	return d, cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss, 0, nil
}

// rss is a process's resident memory in KiB, from /proc.
func rss(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// treeRSS is the resident memory in KiB of a process and its children
// (PostgreSQL's postmaster and its backends).
func treeRSS(pid int) int64 {
	total := rss(pid)
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", child))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "PPid:"); ok {
				if ppid, _ := strconv.Atoi(strings.TrimSpace(v)); ppid == pid {
					total += rss(child)
				}
				break
			}
		}
	}
	return total
}

// nativeTable starts a throwaway PostgreSQL 15 cluster (internal/pgtest)
// holding the events table's rows as a native table, loaded with COPY
// from the CLI's CSV of them and vacuumed: its URL (sessions in UTC, so
// timestamps print as DuckDB's), the postmaster's pid, and how to stop it.
func nativeTable(psql, rocklake, lake string) (url string, pid int, stop func(), err error) {
	cl, err := pgtest.Launch()
	if err != nil {
		return "", 0, nil, err
	}
	stop = func() { cl.Close() }
	fail := func(err error) (string, int, func(), error) { stop(); return "", 0, nil, err }
	url, err = cl.CreateDatabase("copybench")
	if err != nil {
		return fail(err)
	}
	url += map[bool]string{true: "&", false: "?"}[strings.Contains(url, "?")] + "options=-c%20TimeZone%3DUTC"
	run := func(stdin io.Reader, args ...string) (string, error) {
		cmd := exec.Command(psql, append([]string{"-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", url}, args...)...)
		cmd.Stdin = stdin
		out, err := cmd.CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	if out, err := run(nil, "-c", "CREATE TABLE events (ts timestamptz, user_id bigint, category text, amount numeric(10,2))"); err != nil {
		return fail(fmt.Errorf("%v: %s", err, out))
	}
	src := exec.Command(rocklake, "--catalog", lake, "--format", "csv", "query", "SELECT * FROM events")
	rows, err := src.StdoutPipe()
	if err != nil {
		return fail(err)
	}
	if err := src.Start(); err != nil {
		return fail(err)
	}
	out, err := run(rows, "-c", `\copy events FROM STDIN (FORMAT csv, HEADER)`)
	if werr := src.Wait(); err == nil && werr != nil {
		err = werr
	}
	if err != nil {
		return fail(fmt.Errorf("loading: %v: %s", err, out))
	}
	if out, err := run(nil, "-c", "VACUUM ANALYZE events"); err != nil {
		return fail(fmt.Errorf("%v: %s", err, out))
	}
	// The postmaster's pid is the first line of postmaster.pid in the
	// data directory (a backend's parent would do, but a psql's backend
	// is gone once psql is).
	dataDir, err := run(nil, "-c", "SHOW data_directory")
	if err != nil {
		return fail(fmt.Errorf("%v: %s", err, dataDir))
	}
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return fail(err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	if pid, err = strconv.Atoi(strings.TrimSpace(first)); err != nil || pid <= 1 {
		return fail(fmt.Errorf("postmaster.pid holds %q", first))
	}
	return url, pid, stop, nil
}
