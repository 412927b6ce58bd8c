// Command procs compares whole new processes, as a user at a shell would
// run them, on bench/query's events table (DuckDB-written Parquet files,
// one per hour, -rows rows each; written once under -dir and reused):
//
//   - rocklake: `rocklake query` (built here from ./cmd/rocklake) on a
//     catalog made by `rocklake init` and `rocklake add events DATA
//     --create`, which builds membership filters for user_id;
//   - glob: a new DuckDB process over read_parquet('DATA/*.parquet');
//   - exact files: a new DuckDB process over exactly the files holding a
//     matching row, found once by a full scan in this process.
//
// Beside them, the floor (bench/internal/baseline.BuildFloor): the same
// DuckDB program, and the SELECT 1 one, each with a blank import of every
// package cmd/rocklake imports, so that it initialises and loads what
// rocklake does before main and then does only the DuckDB program's work.
// rocklake over the floor is what rocklake's own work costs; the floor
// over the DuckDB program is what its dependencies cost a process.
//
// There is no DuckDB CLI to run, so a "DuckDB process" is a Go program
// linking rocklake's own duckdb-go (built from rocklake's go.mod, see
// bench/internal/baseline) that opens an in-memory DuckDB, runs the SQL
// given as its argument and prints the rows. Every query runs -runs times
// per contender, the contenders one after another within a round (the
// order rotating) so that a load change on the machine falls on all of
// them alike, after one warm-up round; medians are printed and written as
// JSON (-json). The printed answers must agree, or the bench stops. Beside
// the full count(*), which rocklake answers from the catalog, the DuckDB
// SELECT 1 program shows what a DuckDB process costs before any work.
// `rocklake plan` of each WHERE is timed too, in the same rounds but not
// compared: it is rocklake's catalog work without DuckDB.
//
// -served also times `rocklake query` forwarded to a `rocklake serve`
// that holds the catalog (remote.go: a new process sends its command line
// through the server's socket in the catalog directory, and the server
// runs it on its open catalog and DuckDB): "a new process answers as fast
// as a warm one would" when a server holds the catalog. The server, on
// loopback only (its PostgreSQL and HTTP listeners on ports the kernel
// picks), serves a copy of the catalog made by `rocklake catalog copy`,
// since a served directory is not opened by other processes and the plain
// rocklake contender must open its own; it runs in the same rounds, its
// answers checked, and is stopped at the end or when the bench fails.
//
// -plan-catalog DIR also times `rocklake plan` in a new process over the
// catalog bench/plan keeps (-keep DIR), with its peak memory; it is made
// by `go run ./bench/plan -files 1000000 -runs 2 -keep DIR`. With
// -before BIN (a rocklake built from an earlier commit) the two
// binaries take turns, run by run, and both are reported. -sizes none
// times only the plan.
//
//	go run ./bench/procs -sizes 1000,10000 -dir /tmp/bprocs -runs 5 -json bench/results/procs.json
package main

import (
	"bytes"
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rocklake/rocklake/bench/internal/baseline"
	"github.com/rocklake/rocklake/bench/internal/events"
	"github.com/rocklake/rocklake/bench/internal/results"
	"github.com/rocklake/rocklake/bench/internal/synth"
	"github.com/rocklake/rocklake/engine"
)

// Result is one query at one table size; times are medians of new
// processes' wall clock (CPU: user + system).
type Result struct {
	Files       int     `json:"files"`
	Query       string  `json:"query"`
	SQL         string  `json:"sql"`
	Answer      string  `json:"answer"`
	ExactFiles  int     `json:"exact_files"`
	KeptFiles   int     `json:"rocklake_files_kept"`
	RocklakeMS  float64 `json:"rocklake_ms"`
	RocklakeCPU float64 `json:"rocklake_cpu_ms"`
	GlobMS      float64 `json:"glob_ms"`
	GlobCPU     float64 `json:"glob_cpu_ms"`
	ExactMS     float64 `json:"exact_ms"`
	ExactCPU    float64 `json:"exact_cpu_ms"`
	// ExactIsGlob: every file matches, so the exact contender reads the
	// glob (a list of them all would also pass the kernel's limit on one
	// argument, 128 KiB, at 10,000 files).
	ExactIsGlob bool    `json:"exact_is_glob,omitempty"`
	PlanMS      float64 `json:"rocklake_plan_ms"`
	SelectOneMS float64 `json:"duckdb_select_1_ms,omitempty"`
	VsExact     float64 `json:"rocklake_over_exact"`
	GlobOver    float64 `json:"glob_over_rocklake"`
	VsSelectOne float64 `json:"rocklake_over_select_1,omitempty"`
	// ServedMS is `rocklake query` forwarded to a server holding a copy of
	// the catalog (-served), in the same rounds; 0 without -served.
	ServedMS          float64 `json:"served_ms,omitempty"`
	ServedCPU         float64 `json:"served_cpu_ms,omitempty"`
	ServedVsExact     float64 `json:"served_over_exact,omitempty"`
	ServedVsSelectOne float64 `json:"served_over_select_1,omitempty"`
	// FloorExactMS is the exact-files program linking every package
	// cmd/rocklake imports (the floor; not run when the exact files are
	// the glob), FloorSelectOneMS the SELECT 1 program so linked (beside
	// the full count), both in the same rounds.
	FloorExactMS       float64 `json:"floor_exact_ms,omitempty"`
	FloorExactCPU      float64 `json:"floor_exact_cpu_ms,omitempty"`
	FloorSelectOneMS   float64 `json:"floor_select_1_ms,omitempty"`
	VsFloorExact       float64 `json:"rocklake_over_floor_exact,omitempty"`
	FloorExactVsExact  float64 `json:"floor_exact_over_exact,omitempty"`
	VsFloorSelectOne   float64 `json:"rocklake_over_floor_select_1,omitempty"`
	FloorSelectOneVsSO float64 `json:"floor_select_1_over_select_1,omitempty"`
	// BeforeMS is -before's `rocklake query` in the same rounds, and
	// VsBefore this build's over it; both 0 without -before.
	BeforeMS  float64 `json:"before_ms,omitempty"`
	BeforeCPU float64 `json:"before_cpu_ms,omitempty"`
	VsBefore  float64 `json:"rocklake_over_before,omitempty"`
	MaxRSSKB  struct {
		Rocklake int64 `json:"rocklake"`
		Glob     int64 `json:"glob"`
		Exact    int64 `json:"exact"`
		Plan     int64 `json:"rocklake_plan"`
		Served   int64 `json:"rocklake_served,omitempty"`
	} `json:"max_rss_kb"`
}

// PlanProcess is `rocklake plan` over a large catalog in a new process.
type PlanProcess struct {
	Catalog   string  `json:"catalog"`
	Predicate string  `json:"predicate"`
	Runs      int     `json:"runs"`
	WallMS    float64 `json:"wall_ms"`
	CPUMS     float64 `json:"cpu_ms"`
	MaxRSSKB  int64   `json:"max_rss_kb"`
	Kept      int     `json:"files_kept"`
	Total     int     `json:"files_total"`
	// Before is the same, timed in the same rounds, of -before.
	Before *PlanProcess `json:"before,omitempty"`
}

// Output is the JSON written with -json.
type Output struct {
	Runs   int  `json:"runs"`
	Rows   int  `json:"rows_per_file"`
	Served bool `json:"served,omitempty"`
	// LoadBefore and LoadAfter are the machine's load averages (1, 5, 15
	// minutes) before and after the timed rounds.
	LoadBefore string       `json:"load_average_before,omitempty"`
	LoadAfter  string       `json:"load_average_after,omitempty"`
	Setup      []Setup      `json:"setup"`
	Results    []Result     `json:"results"`
	Plan       *PlanProcess `json:"plan_process,omitempty"`
}

// Setup is the catalog made for one size by the CLI.
type Setup struct {
	Files        int     `json:"files"`
	AddSeconds   float64 `json:"add_seconds"`
	CatalogBytes int64   `json:"catalog_bytes"`
}

// proc is one command line, timed over all rounds.
type proc struct {
	args        []string
	wall, cpu   []time.Duration
	rss         int64 // peak resident set of an untimed run, KiB
	answer      string
	compareRows bool // its output is an answer to check
}

func main() {
	sizes := flag.String("sizes", "1000,10000", "table sizes (files), comma-separated")
	rows := flag.Int("rows", 2000, "rows per file")
	runs := flag.Int("runs", 5, "timed rounds (at least 1; 5 or more for a median worth the name)")
	dir := flag.String("dir", "", "where the data sets and catalogs live (data kept and reused; default: a temporary directory)")
	jsonOut := flag.String("json", "", "write the results here as JSON")
	planCatalog := flag.String("plan-catalog", "", "also time `rocklake plan` over DIR/plan-N/lake, kept by bench/plan -keep DIR (skipped when empty)")
	planFiles := flag.Int("plan-files", 1_000_000, "N in -plan-catalog's plan-N")
	before := flag.String("before", "", "a rocklake binary of an earlier build, timed in turns with this one: its `rocklake query` over this build's catalogs, and its `rocklake plan` with -plan-catalog")
	served := flag.Bool("served", false, "also time `rocklake query` forwarded to a `rocklake serve` (loopback) holding a copy of the catalog")
	flag.Parse()
	if *runs < 1 {
		fatal("-runs must be at least 1")
	}
	var ns []int
	if *sizes != "none" {
		var err error
		if ns, err = results.Sizes(*sizes, 2); err != nil {
			fatalf("-sizes: %v", err)
		}
	}
	tmp, err := os.MkdirTemp("", "rocklake-bench-procs-")
	if err != nil {
		fatal(err)
	}
	defer os.RemoveAll(tmp)
	atExit = append(atExit, func() { os.RemoveAll(tmp) })
	root := *dir
	if root == "" {
		root = filepath.Join(tmp, "data")
	}
	mod, err := baseline.ModuleRoot()
	if err != nil {
		fatal(err)
	}
	bin := bins{rocklake: filepath.Join(tmp, "rocklake"), runSQL: filepath.Join(tmp, "runsql"), selectOne: filepath.Join(tmp, "selectone"),
		floorRunSQL: filepath.Join(tmp, "floorrunsql"), floorSelectOne: filepath.Join(tmp, "floorselectone")}
	baseline.GoBuild(mod, bin.rocklake, "./cmd/rocklake")
	if len(ns) > 0 {
		baseline.Build(mod, filepath.Join(tmp, "baseline"), map[string]string{
			"runsql/main.go":    baseline.RunSQLSrc,
			"selectone/main.go": baseline.SelectOneSrc,
		}, map[string]string{"./runsql": bin.runSQL, "./selectone": bin.selectOne})
		baseline.BuildFloor(mod, "benchfloorrunsql", baseline.RunSQLSrc, bin.floorRunSQL)
		baseline.BuildFloor(mod, "benchfloorselectone", baseline.SelectOneSrc, bin.floorSelectOne)
	}

	if *before != "" {
		*before = baseline.FreshCopy(*before, tmp, "before")
	}
	out := Output{Runs: *runs, Rows: *rows, Served: *served, LoadBefore: results.LoadAverage()}
	fmt.Printf("load average before: %s\n", out.LoadBefore)
	for _, n := range ns {
		setup, res := benchSize(bin, *before, *served, filepath.Join(root, fmt.Sprintf("events-%d-%d", n, *rows)), n, *rows, *runs)
		out.Setup = append(out.Setup, setup)
		out.Results = append(out.Results, res...)
	}
	out.LoadAfter = results.LoadAverage()
	if len(ns) > 0 {
		printTable(out)
	}
	if *planCatalog != "" {
		out.Plan = planProcess(bin.rocklake, *before, filepath.Join(*planCatalog, fmt.Sprintf("plan-%d", *planFiles), "lake"), *planFiles, *runs)
	}
	if err := results.WriteJSON(*jsonOut, out); err != nil {
		fatal(err)
	}
}

type bins struct{ rocklake, runSQL, selectOne, floorRunSQL, floorSelectOne string }

func benchSize(bin bins, before string, served bool, dir string, n, rows, runs int) (Setup, []Result) {
	data := filepath.Join(dir, "data")
	// This process's DuckDB writes the data and finds the exact files; it
	// is never timed.
	duck, err := engine.Open("")
	if err != nil {
		fatal(err)
	}
	defer duck.Close()
	fmt.Printf("== %d files x %d rows (%s)\n", n, rows, data)
	if err := events.Generate(duck, data, n, rows); err != nil {
		fatalf("writing the data: %v", err)
	}

	// The catalog is made anew each time, by the CLI as a user would, so
	// that it is what the rocklake under test writes.
	lake := filepath.Join(dir, "cli-lake")
	if err := os.RemoveAll(lake); err != nil {
		fatal(err)
	}
	mustRun(bin.rocklake, "--catalog", lake, "init")
	t0 := time.Now()
	mustRun(bin.rocklake, "--catalog", lake, "add", "events", data, "--create")
	setup := Setup{Files: n, AddSeconds: time.Since(t0).Seconds(), CatalogBytes: dirBytes(lake)}
	fmt.Printf("rocklake init + add --create: %.2fs, catalog %d bytes\n", setup.AddSeconds, setup.CatalogBytes)
	servedLake := ""
	if served {
		servedLake = filepath.Join(dir, "served-lake")
		if err := os.RemoveAll(servedLake); err != nil {
			fatal(err)
		}
		mustRun(bin.rocklake, "catalog", "copy", lake, servedLake)
		stop := startServer(bin.rocklake, servedLake)
		defer stop()
	}

	glob := filepath.Join(data, "*.parquet")
	uid := pickUserID(duck, glob, data, n)
	ts := events.TS
	mid, last := n/2, n-max(1, n/100)
	queries := []struct{ name, where, sel string }{
		{"one hour", fmt.Sprintf("ts >= '%s' AND ts < '%s'", ts(mid), ts(mid+1)), "count(*), sum(amount)"},
		{"user_id = v", fmt.Sprintf("user_id = %d", uid), "count(*), sum(amount)"},
		{"category AND last 1%", fmt.Sprintf("category = 'cat7' AND ts >= '%s'", ts(last)), "count(*), sum(amount)"},
		{"full count(*)", "", "count(*)"},
	}

	type qjob struct {
		res                                                    Result
		rocklake, glob, exact, plan, selectOne, before, served *proc
		floorExact, floorSelectOne                             *proc
	}
	var jobs []*qjob
	for _, q := range queries {
		where := ""
		if q.where != "" {
			where = " WHERE " + q.where
		}
		exact := exactFiles(duck, glob, where)
		if len(exact) == 0 {
			fatalf("%s: no file holds a matching row", q.name)
		}
		exactSrc := "read_parquet([" + strings.Join(quoteAll(exact), ", ") + "])"
		exactIsGlob := len(exact) == n
		if exactIsGlob {
			exactSrc = fmt.Sprintf("read_parquet('%s')", glob)
		}
		sqlFor := func(src string) string { return fmt.Sprintf("SELECT %s FROM %s%s", q.sel, src, where) }
		j := &qjob{
			res:      Result{Files: n, Query: q.name, SQL: sqlFor("events"), ExactFiles: len(exact), ExactIsGlob: exactIsGlob},
			rocklake: &proc{args: []string{bin.rocklake, "--catalog", lake, "--format", "csv", "query", sqlFor("events")}, compareRows: true},
			glob:     &proc{args: []string{bin.runSQL, sqlFor(fmt.Sprintf("read_parquet('%s')", glob))}, compareRows: true},
			exact:    &proc{args: []string{bin.runSQL, sqlFor(exactSrc)}, compareRows: true},
		}
		pred := q.where
		if pred == "" {
			pred = "true"
		}
		if before != "" {
			j.before = &proc{args: append([]string{before}, j.rocklake.args[1:]...), compareRows: true}
		}
		if servedLake != "" {
			j.served = &proc{args: []string{bin.rocklake, "--catalog", servedLake, "--format", "csv", "query", sqlFor("events")}, compareRows: true}
		}
		j.plan = &proc{args: []string{bin.rocklake, "--catalog", lake, "--format", "json", "plan", "events", pred}}
		if !exactIsGlob {
			j.floorExact = &proc{args: []string{bin.floorRunSQL, sqlFor(exactSrc)}, compareRows: true}
		}
		if q.where == "" {
			j.selectOne = &proc{args: []string{bin.selectOne}}
			j.floorSelectOne = &proc{args: []string{bin.floorSelectOne}}
		}
		jobs = append(jobs, j)
	}

	// Round 0 warms the page cache and is not counted.
	for round := range runs + 1 {
		for _, j := range jobs {
			ps := []*proc{j.rocklake, j.glob, j.exact, j.plan}
			if j.selectOne != nil {
				ps = append(ps, j.selectOne)
			}
			if j.before != nil {
				ps = append(ps, j.before)
			}
			if j.served != nil {
				ps = append(ps, j.served)
			}
			for _, p := range []*proc{j.floorExact, j.floorSelectOne} {
				if p != nil {
					ps = append(ps, p)
				}
			}
			// Rotate the order so that no contender always follows another.
			for k := range ps {
				p := ps[(k+round)%len(ps)]
				stdout, wall, cpu, _ := runProc(p.args)
				if p.compareRows {
					ans, err := answer(stdout)
					if err != nil {
						fatalf("%s: %v in %q", j.res.Query, err, stdout)
					}
					p.answer = ans
				}
				if p == j.plan && round == 0 {
					var pl struct {
						Files struct{ Kept int } `json:"files"`
					}
					if err := json.Unmarshal(stdout, &pl); err != nil {
						fatalf("rocklake plan --format json: %v", err)
					}
					j.res.KeptFiles = pl.Files.Kept
				}
				if round == 0 {
					p.rss = peakRSS(p.args)
					continue
				}
				p.wall, p.cpu = append(p.wall, wall), append(p.cpu, cpu)
			}
			// Every run's answers are checked, not only the first's.
			if j.before != nil && j.before.answer != j.rocklake.answer {
				fatalf("%s at %d files: -before answers %q, this build %q", j.res.Query, n, j.before.answer, j.rocklake.answer)
			}
			if j.floorExact != nil && j.floorExact.answer != j.exact.answer {
				fatalf("%s at %d files: the floor's exact files %q, DuckDB's %q", j.res.Query, n, j.floorExact.answer, j.exact.answer)
			}
			if j.served != nil && j.served.answer != j.rocklake.answer {
				fatalf("%s at %d files: through the server %q, directly %q", j.res.Query, n, j.served.answer, j.rocklake.answer)
			}
			if !results.SameAnswer(j.rocklake.answer, j.glob.answer) || j.glob.answer != j.exact.answer {
				fatalf("%s at %d files: answers differ: rocklake %q, glob %q, exact files %q",
					j.res.Query, n, j.rocklake.answer, j.glob.answer, j.exact.answer)
			}
		}
	}

	var out []Result
	for _, j := range jobs {
		r := j.res
		r.Answer = j.glob.answer
		r.RocklakeMS, r.RocklakeCPU = results.MedianMS(j.rocklake.wall), results.MedianMS(j.rocklake.cpu)
		r.GlobMS, r.GlobCPU = results.MedianMS(j.glob.wall), results.MedianMS(j.glob.cpu)
		r.ExactMS, r.ExactCPU = results.MedianMS(j.exact.wall), results.MedianMS(j.exact.cpu)
		r.PlanMS = results.MedianMS(j.plan.wall)
		r.VsExact, r.GlobOver = round2(r.RocklakeMS/r.ExactMS), round2(r.GlobMS/r.RocklakeMS)
		if j.selectOne != nil {
			r.SelectOneMS = results.MedianMS(j.selectOne.wall)
			r.VsSelectOne = round2(r.RocklakeMS / r.SelectOneMS)
		}
		if j.before != nil {
			r.BeforeMS, r.BeforeCPU = results.MedianMS(j.before.wall), results.MedianMS(j.before.cpu)
			r.VsBefore = round2(r.RocklakeMS / r.BeforeMS)
		}
		if j.floorExact != nil {
			r.FloorExactMS, r.FloorExactCPU = results.MedianMS(j.floorExact.wall), results.MedianMS(j.floorExact.cpu)
			r.VsFloorExact, r.FloorExactVsExact = round2(r.RocklakeMS/r.FloorExactMS), round2(r.FloorExactMS/r.ExactMS)
		}
		if j.floorSelectOne != nil {
			r.FloorSelectOneMS = results.MedianMS(j.floorSelectOne.wall)
			r.VsFloorSelectOne, r.FloorSelectOneVsSO = round2(r.RocklakeMS/r.FloorSelectOneMS), round2(r.FloorSelectOneMS/r.SelectOneMS)
		}
		if j.served != nil {
			r.ServedMS, r.ServedCPU = results.MedianMS(j.served.wall), results.MedianMS(j.served.cpu)
			r.ServedVsExact = round2(r.ServedMS / r.ExactMS)
			if j.selectOne != nil {
				r.ServedVsSelectOne = round2(r.ServedMS / r.SelectOneMS)
			}
			r.MaxRSSKB.Served = j.served.rss
		}
		r.MaxRSSKB.Rocklake, r.MaxRSSKB.Glob, r.MaxRSSKB.Exact, r.MaxRSSKB.Plan = j.rocklake.rss, j.glob.rss, j.exact.rss, j.plan.rss
		out = append(out, r)
	}
	return setup, out
}

// pickUserID takes the first user_id of the middle file, or of a later one
// if that value also occurs in more than two files: the query is meant to
// need one or two files, which min/max bounds of a random id cannot find.
func pickUserID(duck *sql.DB, glob, data string, n int) int64 {
	for h := n / 2; h < n; h++ {
		var uid int64
		if err := duck.QueryRow(fmt.Sprintf("SELECT user_id FROM read_parquet('%s') LIMIT 1", events.File(data, h))).Scan(&uid); err != nil {
			fatal(err)
		}
		if k := len(exactFiles(duck, glob, fmt.Sprintf(" WHERE user_id = %d", uid))); k <= 2 {
			return uid
		}
	}
	fatal("no user_id in one or two files")
	return 0
}

// exactFiles are the files holding a row that passes where, by a full scan.
func exactFiles(duck *sql.DB, glob, where string) []string {
	rs, err := duck.Query(fmt.Sprintf("SELECT DISTINCT filename FROM read_parquet('%s', filename=true)%s ORDER BY 1", glob, where))
	if err != nil {
		fatal(err)
	}
	defer rs.Close()
	var files []string
	for rs.Next() {
		var f string
		if err := rs.Scan(&f); err != nil {
			fatal(err)
		}
		files = append(files, f)
	}
	if err := rs.Err(); err != nil {
		fatal(err)
	}
	return files
}

func quoteAll(paths []string) []string {
	q := make([]string, len(paths))
	for i, p := range paths {
		q[i] = "'" + strings.ReplaceAll(p, "'", "''") + "'"
	}
	return q
}

// runProc runs args as a new process and returns its standard output, its
// wall time, its CPU time (user + system) and its ru_maxrss (KiB; see
// peakRSS for why that is not the child's alone).
func runProc(args []string) (stdout []byte, wall, cpu time.Duration, maxRSS int64) {
	cmd := exec.Command(args[0], args[1:]...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	t := time.Now()
	if err := cmd.Run(); err != nil {
		fatalf("%s: %v: %s", shortArgs(args), err, strings.TrimSpace(e.String()))
	}
	wall = time.Since(t)
	cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		maxRSS = ru.Maxrss
	}
	return o.Bytes(), wall, cpu, maxRSS
}

// peakRSS is a run of args' peak resident set in KiB, from /usr/bin/time
// when installed. The child's own rusage is a fallback only: Go starts a
// child with vfork, so until exec it shares this process's memory, and
// Linux counts that memory (the bench's DuckDB, hundreds of MiB after the
// full scans) in the child's ru_maxrss. /usr/bin/time forks a copy of its
// own small image instead. It is a run of its own, never timed.
func peakRSS(args []string) int64 {
	if _, err := os.Stat("/usr/bin/time"); err != nil {
		_, _, _, rss := runProc(args)
		return rss
	}
	f, err := os.CreateTemp("", "rocklake-bench-procs-time-")
	if err != nil {
		fatal(err)
	}
	f.Close()
	defer os.Remove(f.Name())
	runProc(append([]string{"/usr/bin/time", "-v", "-o", f.Name()}, args...))
	b, err := os.ReadFile(f.Name())
	if err != nil {
		fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "Maximum resident set size (kbytes): "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				fatalf("/usr/bin/time: %q", line)
			}
			return n
		}
	}
	fatalf("/usr/bin/time -v printed no maximum resident set size: %s", b)
	return 0
}

func mustRun(args ...string) {
	runProc(args)
}

// atExit runs before the bench exits on a failure (fatalf), last added
// first: it stops the server -served started and removes the temporary
// directory.
var atExit []func()

func fatalf(format string, args ...any) {
	for i := len(atExit) - 1; i >= 0; i-- {
		atExit[i]()
	}
	log.Fatalf(format, args...)
}

func fatal(args ...any) { fatalf("%s", fmt.Sprint(args...)) }

// startServer starts `rocklake serve` on lake, listening on loopback only
// (ports the kernel picks), waits until its socket in lake answers, and
// returns the function that stops it (SIGTERM, then SIGKILL after a
// minute), which fatalf also calls. Should the bench die otherwise (a
// signal), the kernel sends the server SIGTERM (Pdeathsig).
func startServer(rocklake, lake string) (stop func()) {
	logf, err := os.CreateTemp("", "rocklake-bench-procs-serve-")
	if err != nil {
		fatal(err)
	}
	cmd := exec.Command(rocklake, "--catalog", lake, "serve", "--pg-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				log.Printf("rocklake serve: %v (log: %s)", err, logf.Name())
				return
			}
		case <-time.After(time.Minute):
			cmd.Process.Kill()
			<-exited
			log.Printf("rocklake serve did not stop in a minute: killed (log: %s)", logf.Name())
			return
		}
		logf.Close()
		os.Remove(logf.Name())
	}
	atExit = append(atExit, stop)
	sock := filepath.Join(lake, "rocklake.sock")
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if c, err := net.DialTimeout("unix", sock, time.Second); err == nil {
			c.Close()
			break
		}
		select {
		case err := <-exited:
			exited <- err
			b, _ := os.ReadFile(logf.Name())
			fatalf("rocklake serve exited (%v): %s", err, b)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logf.Name())
			fatalf("rocklake serve: no answer on %s after 2 minutes: %s", sock, b)
		}
	}
	fmt.Printf("rocklake serve holds %s (pid %d)\n", lake, cmd.Process.Pid)
	return stop
}

// shortArgs is a command line for a message, with a long SQL (a list of
// files) cut.
func shortArgs(args []string) string {
	s := strings.Join(args, " ")
	if len(s) > 400 {
		s = s[:400] + "…"
	}
	return s
}

// answer is a CSV result's data rows, the header left out (rocklake and
// DuckDB may name an aggregate's column alike or not), as v|v|…; rows.
func answer(out []byte) (string, error) {
	recs, err := csv.NewReader(bytes.NewReader(out)).ReadAll()
	if err != nil {
		return "", err
	}
	if len(recs) < 2 {
		return "", fmt.Errorf("no result rows")
	}
	var b strings.Builder
	for _, r := range recs[1:] {
		b.WriteString(strings.Join(r, "|"))
		b.WriteString(";")
	}
	return b.String(), nil
}

func printTable(out Output) {
	fmt.Printf("\nnew processes, median of %d rounds (wall ms; CPU ms in brackets); each round runs every contender once\n", out.Runs)
	fmt.Printf("%6s %-21s %6s %6s %16s %16s %16s %9s %9s %8s  %s\n",
		"FILES", "QUERY", "EXACT", "KEPT", "ROCKLAKE", "EXACT FILES", "GLOB", "RL/EXACT", "GLOB/RL", "RL PLAN", "ANSWER")
	for _, r := range out.Results {
		exact := fmt.Sprint(r.ExactFiles)
		if r.ExactIsGlob {
			exact += "*"
		}
		fmt.Printf("%6d %-21s %6s %6d %16s %16s %16s %8.2fx %8.1fx %8.2f  %s\n",
			r.Files, r.Query, exact, r.KeptFiles, msCPU(r.RocklakeMS, r.RocklakeCPU), msCPU(r.ExactMS, r.ExactCPU),
			msCPU(r.GlobMS, r.GlobCPU), r.VsExact, r.GlobOver, r.PlanMS, r.Answer)
	}
	fmt.Println("EXACT: files holding a matching row (* all of them: that contender reads the glob); KEPT: files rocklake's plan keeps;")
	fmt.Println("RL PLAN: `rocklake plan` of the same WHERE alone, in a new process (catalog work, no DuckDB)")
	for _, r := range out.Results {
		if r.SelectOneMS > 0 {
			fmt.Printf("%6d files: full count(*): rocklake %.2f ms, DuckDB SELECT 1 process %.2f ms: rocklake/SELECT 1 %.2fx\n",
				r.Files, r.RocklakeMS, r.SelectOneMS, r.VsSelectOne)
		}
	}
	fmt.Println("the floor: the same DuckDB programs linking every package cmd/rocklake imports")
	for _, r := range out.Results {
		switch {
		case r.FloorExactMS > 0:
			fmt.Printf("%6d files, %-21s floor, exact files %s (%.2fx DuckDB's); rocklake %.2fx the floor, %.1f ms above it\n",
				r.Files, r.Query, msCPU(r.FloorExactMS, r.FloorExactCPU), r.FloorExactVsExact, r.VsFloorExact, r.RocklakeMS-r.FloorExactMS)
		case r.FloorSelectOneMS > 0:
			fmt.Printf("%6d files, %-21s floor, SELECT 1 %.1f ms (%.2fx DuckDB's); rocklake %.2fx the floor, %.1f ms above it\n",
				r.Files, r.Query, r.FloorSelectOneMS, r.FloorSelectOneVsSO, r.VsFloorSelectOne, r.RocklakeMS-r.FloorSelectOneMS)
		}
	}
	fmt.Printf("load average at the start %s, at the end %s\n", out.LoadBefore, out.LoadAfter)
	for _, r := range out.Results {
		if r.ServedMS > 0 {
			vs := fmt.Sprintf("served/exact %.2fx", r.ServedVsExact)
			if r.ServedVsSelectOne > 0 {
				vs = fmt.Sprintf("served/SELECT 1 %.2fx", r.ServedVsSelectOne)
			}
			fmt.Printf("%6d files, %-21s through a server (-served) %s, directly %s: %s\n",
				r.Files, r.Query, msCPU(r.ServedMS, r.ServedCPU), msCPU(r.RocklakeMS, r.RocklakeCPU), vs)
		}
	}
	for _, r := range out.Results {
		if r.BeforeMS > 0 {
			fmt.Printf("%6d files, %-21s before (-before) %s, this build %s: %.2fx\n",
				r.Files, r.Query, msCPU(r.BeforeMS, r.BeforeCPU), msCPU(r.RocklakeMS, r.RocklakeCPU), r.VsBefore)
		}
	}
	fmt.Println("peak resident set of one untimed run of each (/usr/bin/time -v when installed):")
	for _, r := range out.Results {
		served := ""
		if r.MaxRSSKB.Served > 0 {
			served = fmt.Sprintf("  through a server (client) %6.1f", float64(r.MaxRSSKB.Served)/1024)
		}
		fmt.Printf("%6d files, %-21s peak RSS MiB: rocklake %6.1f  exact files %6.1f  glob %6.1f  rocklake plan %6.1f%s\n", r.Files, r.Query,
			float64(r.MaxRSSKB.Rocklake)/1024, float64(r.MaxRSSKB.Exact)/1024, float64(r.MaxRSSKB.Glob)/1024, float64(r.MaxRSSKB.Plan)/1024, served)
	}
}

func msCPU(wall, cpu float64) string { return fmt.Sprintf("%.1f (%.1f)", wall, cpu) }

// planProcess times `rocklake plan` of bench/plan's one-column range
// predicate over a large catalog, each run a new process; with before, the
// earlier binary's runs alternate with this one's.
func planProcess(rocklake, before, lake string, n, runs int) *PlanProcess {
	if _, err := os.Stat(lake); err != nil {
		fatalf("-plan-catalog: %v (make it with go run ./bench/plan -files %d -runs 2 -keep DIR)", err, n)
	}
	pred := synth.Predicates(n)[0].SQL
	bins := []string{rocklake}
	if before != "" {
		bins = append(bins, before)
	}
	ps := make([]*PlanProcess, len(bins))
	walls, cpus := make([][]time.Duration, len(bins)), make([][]time.Duration, len(bins))
	// The first round warms the page cache and is not counted.
	for i := range runs + 1 {
		for k, bin := range bins {
			args := []string{bin, "--catalog", lake, "--format", "json", "plan", synth.Table, pred}
			stdout, w, c, _ := runProc(args)
			if i > 0 {
				walls[k], cpus[k] = append(walls[k], w), append(cpus[k], c)
				continue
			}
			p := &PlanProcess{Catalog: lake, Predicate: pred, Runs: runs, MaxRSSKB: peakRSS(args)}
			var pl struct {
				Files struct{ Total, Kept int } `json:"files"`
			}
			if err := json.Unmarshal(stdout, &pl); err != nil {
				fatalf("%s plan --format json: %v", bin, err)
			}
			p.Kept, p.Total = pl.Files.Kept, pl.Files.Total
			ps[k] = p
		}
	}
	for k, p := range ps {
		p.WallMS, p.CPUMS = results.MedianMS(walls[k]), results.MedianMS(cpus[k])
		name := "rocklake plan"
		if k == 1 {
			name = "before: " + before + " plan"
		}
		fmt.Printf("\n%s %s %q over %s, new process, median of %d: wall %.1f ms, CPU %.1f ms, peak RSS %.1f MiB; %d of %d files kept\n",
			name, synth.Table, pred, lake, runs, p.WallMS, p.CPUMS, float64(p.MaxRSSKB)/1024, p.Kept, p.Total)
	}
	if len(ps) > 1 {
		ps[0].Before = ps[1]
	}
	return ps[0]
}

func round2(x float64) float64 { return float64(int(x*100+0.5)) / 100 }

// dirBytes is the size of the files under dir.
func dirBytes(dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return nil
	})
	return n
}
