// Command export measures a whole-table export through `rocklake query`
// as a new process: how long until the first row reaches the reader, how
// long until the last, and the process's peak resident memory, beside a
// DuckDB process writing the same rows. The table is bench/query's events
// table (DuckDB-written Parquet files, one per hour; -files × -rows rows,
// 2,000,000 by default; written once under -dir and reused).
//
// Contenders, each reading stdout through a pipe as a script would:
//
//   - rocklake csv / jsonl / json / table: `rocklake query --format F
//     'SELECT * FROM events'` (built here from ./cmd/rocklake);
//   - before (with -compare before=PATH): another rocklake binary, such
//     as one built from an earlier commit, with --format csv;
//   - DuckDB COPY: a Go program linking rocklake's duckdb-go (see
//     bench/internal/baseline) running COPY (SELECT * FROM
//     read_parquet('DATA/*.parquet')) TO '/dev/stdout' (FORMAT csv):
//     DuckDB's own CSV writer;
//   - DuckDB rows: the same program's query through database/sql, every
//     value cast to VARCHAR by DuckDB and written with encoding/csv.
//
// "First row" is when the first line after the header (the first line for
// jsonl; the line of the first row object for json) arrives. Every
// contender's rows are checked to be the same multiset of lines as
// DuckDB COPY's where the format is the same (csv). Rounds run the
// contenders one after another, rotating the order, after one warm-up
// round; medians are printed and written as JSON (-json).
//
//	go run ./bench/export -dir /tmp/bexport -runs 5 -json bench/results/export.json
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
	"strings"
	"syscall"
	"time"

	"github.com/rocklake/rocklake/bench/internal/baseline"
	"github.com/rocklake/rocklake/bench/internal/events"
	"github.com/rocklake/rocklake/bench/internal/results"
)

// copySrc runs the statement given as its argument with Exec: DuckDB's
// COPY … TO '/dev/stdout' writes the rows itself.
const copySrc = `package main

import (
	"database/sql"
	"fmt"
	"os"

	_ "github.com/duckdb/duckdb-go/v2"
)

func main() {
	db, err := sql.Open("duckdb", "")
	if err == nil {
		_, err = db.Exec(os.Args[1])
		db.Close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
`

// Result is one contender's medians.
type Result struct {
	Name         string  `json:"name"`
	Command      string  `json:"command"`
	FirstRowMS   float64 `json:"first_row_ms"`
	TotalMS      float64 `json:"total_ms"`
	MaxRSSKB     int64   `json:"max_rss_kb"` // the largest of the timed runs
	OutputBytes  int64   `json:"output_bytes"`
	Lines        int64   `json:"lines"`
	SameAsDuckDB *bool   `json:"same_rows_as_duckdb_copy,omitempty"`
}

// Output is the JSON written with -json.
type Output struct {
	Files   int      `json:"files"`
	Rows    int      `json:"rows_per_file"`
	Total   int      `json:"rows"`
	Runs    int      `json:"runs"`
	Results []Result `json:"results"`
}

type contender struct {
	name, format string
	args         []string
	firstLine    int // the line whose arrival counts as the first row (1-based)
	csvRows      bool
	first, total []time.Duration
	rss          int64
	bytes, lines int64
	digest       uint64
}

func main() {
	files := flag.Int("files", 100, "files (one hour each)")
	rows := flag.Int("rows", 20000, "rows per file")
	runs := flag.Int("runs", 5, "timed rounds (at least 1)")
	dir := flag.String("dir", "", "where the data set and catalog live (data kept and reused; default: a temporary directory)")
	jsonOut := flag.String("json", "", "write the results here as JSON")
	compare := flag.String("compare", "", "NAME=PATH: also time this rocklake binary with --format csv")
	flag.Parse()
	if *runs < 1 {
		log.Fatal("-runs must be at least 1")
	}
	tmp, err := os.MkdirTemp("", "rocklake-bench-export-")
	if err != nil {
		log.Fatal(err)
	}
	// log.Fatal skips deferred calls: the binaries built here (hundreds of
	// megabytes) go with every way out.
	fatalf := func(format string, args ...any) {
		os.RemoveAll(tmp)
		log.Fatalf(format, args...)
	}
	defer os.RemoveAll(tmp)
	root := *dir
	if root == "" {
		root = filepath.Join(tmp, "data")
	}
	mod, err := baseline.ModuleRoot()
	if err != nil {
		fatalf("%v", err)
	}
	rocklake, runSQL, copyBin := filepath.Join(tmp, "rocklake"), filepath.Join(tmp, "runsql"), filepath.Join(tmp, "copy")
	baseline.GoBuild(mod, rocklake, "./cmd/rocklake")
	baseline.Build(mod, filepath.Join(tmp, "baseline"), map[string]string{
		"runsql/main.go": baseline.RunSQLSrc,
		"copy/main.go":   copySrc,
	}, map[string]string{"./runsql": runSQL, "./copy": copyBin})

	lake, data, err := events.Lake(rocklake, root, *files, *rows)
	if err != nil {
		fatalf("%v", err)
	}

	const q = "SELECT * FROM events"
	glob := fmt.Sprintf("read_parquet('%s')", filepath.Join(data, "*.parquet"))
	cs := []*contender{
		{name: "DuckDB COPY", format: "csv", args: []string{copyBin, fmt.Sprintf("COPY (SELECT * FROM %s) TO '/dev/stdout' (FORMAT csv)", glob)}, firstLine: 2, csvRows: true},
		{name: "DuckDB rows", format: "csv", args: []string{runSQL, "SELECT * FROM " + glob}, firstLine: 2, csvRows: true},
		{name: "rocklake csv", format: "csv", args: []string{rocklake, "--catalog", lake, "--format", "csv", "query", q}, firstLine: 2, csvRows: true},
		{name: "rocklake jsonl", format: "jsonl", args: []string{rocklake, "--catalog", lake, "--format", "jsonl", "query", q}, firstLine: 1},
		{name: "rocklake json", format: "json", args: []string{rocklake, "--catalog", lake, "--format", "json", "query", q}, firstLine: 0},
		{name: "rocklake table", format: "table", args: []string{rocklake, "--catalog", lake, "query", q}, firstLine: 2},
	}
	if *compare != "" {
		name, path, ok := strings.Cut(*compare, "=")
		if !ok {
			fatalf("-compare wants NAME=PATH")
		}
		cs = append(cs, &contender{name: name + " csv", format: "csv", args: []string{path, "--catalog", lake, "--format", "csv", "query", q}, firstLine: 2, csvRows: true})
	}
	for round := -1; round < *runs; round++ {
		for i := range cs {
			c := cs[(i+max(round, 0))%len(cs)]
			first, total, rss, err := runOnce(c, round < 0)
			if err != nil {
				fatalf("%s: %v", c.name, err)
			}
			if round >= 0 {
				c.first, c.total = append(c.first, first), append(c.total, total)
				c.rss = max(c.rss, rss)
			}
		}
	}
	out := Output{Files: *files, Rows: *rows, Total: *files * *rows, Runs: *runs}
	ref := cs[0]
	fmt.Printf("%d rows (%d files), medians of %d; first row and total wall time, peak RSS\n", out.Total, *files, *runs)
	for _, c := range cs {
		r := Result{Name: c.name, Command: strings.Join(c.args[1:], " "), FirstRowMS: results.MedianMS(c.first), TotalMS: results.MedianMS(c.total),
			MaxRSSKB: c.rss, OutputBytes: c.bytes, Lines: c.lines}
		if c.csvRows {
			same := c.digest == ref.digest && c.lines == ref.lines
			r.SameAsDuckDB = &same
			if !same {
				fatalf("%s: its rows differ from DuckDB COPY's (%d lines against %d)", c.name, c.lines, ref.lines)
			}
		}
		out.Results = append(out.Results, r)
		fmt.Printf("%-16s first row %8.1f ms  total %8.1f ms  peak RSS %6.1f MB  %6.1f MB out\n",
			c.name, r.FirstRowMS, r.TotalMS, float64(r.MaxRSSKB)/1024, float64(r.OutputBytes)/1e6)
	}
	if err := results.WriteJSON(*jsonOut, out); err != nil {
		fatalf("%v", err)
	}
}

// runOnce runs one contender, reading its stdout as it comes. The first
// (warm-up) run also counts and digests its lines: an order-free sum of
// each data line's hash, as files may be read in another order.
func runOnce(c *contender, digest bool) (first, total time.Duration, rssKB int64, err error) {
	cmd := exec.Command(c.args[0], c.args[1:]...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return 0, 0, 0, err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, 0, err
	}
	r := bufio.NewReaderSize(pipe, 1<<20)
	var n, size int64
	var sum uint64
	for {
		line, err := r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			return 0, 0, 0, fmt.Errorf("a line longer than 1 MiB")
		}
		if len(line) == 0 && err != nil {
			if err != io.EOF {
				return 0, 0, 0, err
			}
			break
		}
		n++
		size += int64(len(line))
		if first == 0 && (n == int64(c.firstLine) || c.firstLine == 0 && bytes.HasPrefix(line, []byte("    {"))) {
			first = time.Since(start)
		}
		if digest && c.csvRows && n > 1 {
			h := fnv.New64a()
			h.Write(normalizeCSV(line))
			sum += h.Sum64()
		}
	}
	if err := cmd.Wait(); err != nil {
		return 0, 0, 0, fmt.Errorf("%v: %s", err, stderr.String())
	}
	total = time.Since(start)
	if digest {
		c.bytes, c.lines, c.digest = size, n, sum
	}
	return first, total, cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss, nil
}

// normalizeCSV makes DuckDB COPY's CSV line comparable with encoding/csv's:
// COPY writes a TIMESTAMPTZ with its offset and quotes nothing here, as
// the rows hold no separator; encoding/csv's text is DuckDB's VARCHAR.
func normalizeCSV(line []byte) []byte { return bytes.TrimRight(line, "\r\n") }
