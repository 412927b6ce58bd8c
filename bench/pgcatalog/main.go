// Command pgcatalog compares a catalog in PostgreSQL with the embedded
// Pebble catalog, side by side in one run. For each size in -files, the
// synthetic table of bench/plan (one file per hour, ts clustered, 10
// columns; bench/internal/synth) is built in both, committing -batch files
// at a time, and then the two backends take turns run by run (Pebble,
// PostgreSQL, Pebble, PostgreSQL, …) so that noise on a shared machine
// falls on both:
//
//   - cold plan: open the catalog and plan the one-column ts range, files
//     only, as bench/plan does (median of -runs; the opening and the plan
//     also apart, and PostgreSQL's round trips);
//   - warm plan: later plans on the open catalog, from its cache (median
//     of -warm);
//   - one-file commit: p50 and p99 of -commits commits that each add one
//     file to the table;
//   - concurrent commits: -writers goroutines, each committing one file
//     per commit to a table of its own, for -seconds (in two turns per
//     backend): commits per second, p50 and p99. On PostgreSQL each writer
//     has a catalog handle of its own, as separate processes would; a
//     Pebble directory opens only once, so there the writers share one
//     handle.
//
// With -cluster, the cold plans are then timed again after CLUSTER has put
// the PostgreSQL table in key order (the warm plans and commits run on it
// afterwards); with -breakdown, each set of cold plans is followed by
// timed ones that split the time between the store and the catalog, and
// the PostgreSQL store's share between round trips, the server and the
// client, by replaying its page queries.
//
// The table printed gives each figure for both backends and the ratio
// PostgreSQL / Pebble; -json writes the same. The files kept by the cold
// plans must be the same on both backends, or the command fails.
//
// With -storm N, the many-process storm of internal/storm then runs for N
// seconds on PostgreSQL alone: 4 writer processes on one table, 4 on
// tables of their own, 4 reader processes (this program, run again as
// workers), and the catalog is checked against every writer's log; a lost,
// doubled or torn commit fails the command. -storm-shared, -storm-solo and
// -storm-readers set the counts; the report gives each group's spread of
// commits per writer (a writer under a third of its group's median is
// starved) and p99 over p50 of commit latency. -files none runs only the
// storm. -durable starts the private cluster with fsync and
// full_page_writes on, as a production server runs.
//
// PostgreSQL is a private cluster the command starts and removes
// (internal/pgtest: 127.0.0.1, fsync off, so its commits skip the disk
// flush Pebble's make), or, with -postgres, the database of that URL,
// where each size gets a schema of its own, dropped at the end.
//
//	go run ./bench/pgcatalog -files 10000,100000 -storm 60 -json bench/results/pgcatalog.json
//	go run ./bench/pgcatalog -files none -durable -storm 600 -storm-shared 8 -storm-solo 8 -storm-readers 16 -json bench/results/storm-16x16.json
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"log"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rocklake/rocklake/bench/internal/results"
	"github.com/rocklake/rocklake/bench/internal/synth"
	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/internal/pgtest"
	"github.com/rocklake/rocklake/internal/storm"
	"github.com/rocklake/rocklake/kv/pgkv"
	"github.com/rocklake/rocklake/prune"
)

// Figure is one measure at one size on both backends.
type Figure struct {
	Files    int     `json:"files"`
	Name     string  `json:"figure"`
	Unit     string  `json:"unit"`
	Pebble   float64 `json:"pebble"`
	Postgres float64 `json:"postgres"`
	Ratio    float64 `json:"postgres_over_pebble"`
}

// Size is everything measured at one table size.
type Size struct {
	Files     int      `json:"files"`
	Kept      int      `json:"kept_files"`
	Figures   []Figure `json:"figures"`
	Breakdown []Figure `json:"cold_plan_breakdown,omitempty"`
	// BreakdownClustered is the breakdown again after CLUSTER.
	BreakdownClustered []Figure `json:"cold_plan_breakdown_after_cluster,omitempty"`
}

// Report is the JSON output.
type Report struct {
	Postgres string   `json:"postgres"`
	Runs     int      `json:"cold_runs"`
	Warm     int      `json:"warm_runs"`
	Commits  int      `json:"one_file_commits"`
	Writers  int      `json:"writers"`
	Seconds  int      `json:"seconds_per_backend"`
	Batch    int      `json:"files_per_build_commit"`
	FsyncP50 float64  `json:"fsync_4k_p50_ms"`
	Sizes    []Size   `json:"sizes"`
	Notes    []string `json:"notes"`
	// Storm is the many-process run (-storm): writer and reader processes
	// on one PostgreSQL catalog, checked afterwards.
	Storm     *StormResult `json:"storm,omitempty"`
	GoVersion string       `json:"go"`
	CPUs      int          `json:"cpus"`
	// The machine's load averages (1, 5, 15 min) at the start and at
	// the end: other work shares it, and the turns spread that over both
	// backends, but not over the figures of one backend taken apart.
	LoadStart string `json:"load_start"`
	LoadEnd   string `json:"load_end"`
}

// StormResult is what the many-process run measured and checked.
type StormResult struct {
	SharedWriters int     `json:"shared_table_writers"`
	SoloWriters   int     `json:"own_table_writers"`
	Readers       int     `json:"readers"`
	Seconds       float64 `json:"seconds"`
	Acknowledged  int     `json:"commits_acknowledged"`
	Refused       int     `json:"commits_refused_conflict"`
	Failed        int     `json:"commits_failed"`
	Unknown       int     `json:"commits_unknown_outcome"`
	FenceRetries  int     `json:"fence_retries"`
	CommitsPerSec float64 `json:"commits_per_second"`
	P50MS         float64 `json:"commit_p50_ms"`
	P99MS         float64 `json:"commit_p99_ms"`
	MaxMS         float64 `json:"commit_max_ms"`
	ReadsChecked  int64   `json:"snapshots_checked_by_readers"`
	Violations    int     `json:"violations"`
	// P99OverP50 is commit latency's p99 / p50 (the issue asks ≤ 10).
	P99OverP50 float64 `json:"commit_p99_over_p50"`
	// Commits per writer in each group: min, median, max, and the writers
	// under a third of their group's median.
	SharedSpread Spread `json:"shared_table_commits_per_writer"`
	SoloSpread   Spread `json:"own_table_commits_per_writer"`
	// PerWriter is each writer's acknowledged commits, by writer id.
	PerWriter []int `json:"commits_by_writer"`
	// Latency splits commit latency by writer group, then by fences lost
	// inside the commit (storm.Report.Latency).
	Latency []LatencyGroup `json:"commit_latency_by_group"`
}

// LatencyGroup is storm.LatencyGroup as JSON.
type LatencyGroup struct {
	Group   string  `json:"group"`
	Commits int     `json:"commits"`
	P50MS   float64 `json:"p50_ms"`
	P99MS   float64 `json:"p99_ms"`
	MaxMS   float64 `json:"max_ms"`
}

// Spread is storm.Spread as JSON.
type Spread struct {
	Writers int   `json:"writers"`
	Min     int   `json:"min"`
	Median  int   `json:"median"`
	Max     int   `json:"max"`
	Starved []int `json:"starved"`
}

func main() {
	// The storm's writer and reader processes are this program again.
	storm.MaybeWorker()
	stormSecs := flag.Int("storm", 0, "after the sizes, run the many-process storm for this many seconds (writers on one table, writers on tables of their own, readers, each an OS process) and check the catalog; 0 skips it")
	stormShared := flag.Int("storm-shared", 4, "storm writers committing to one table")
	stormSolo := flag.Int("storm-solo", 4, "storm writers each committing to a table of its own")
	stormReaders := flag.Int("storm-readers", 4, "storm readers checking snapshots")
	durable := flag.Bool("durable", false, "start the private PostgreSQL cluster with fsync and full_page_writes on (default off, as tests run it)")
	sizes := flag.String("files", "10000,100000", "files in the table; several sizes comma-separated, or none (with -storm: the storm alone)")
	runs := flag.Int("runs", 5, "cold plans per backend")
	warm := flag.Int("warm", 50, "warm plans per backend")
	commits := flag.Int("commits", 200, "one-file commits per backend")
	writers := flag.Int("writers", 4, "concurrent writers")
	seconds := flag.Int("seconds", 10, "seconds of concurrent commits per backend")
	batch := flag.Int("batch", 5000, "files per commit while building the table")
	pgURL := flag.String("postgres", "", "postgres:// URL of a database to use (each size in a schema of its own, dropped at the end); default: start a private cluster")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the cold plans (both backends) at the largest size to this file")
	breakdown := flag.Bool("breakdown", true, "split the cold plan's time: inside the store, the server, round trips, the rest")
	cluster := flag.Bool("cluster", true, "after the cold plans, CLUSTER the PostgreSQL table on its key and time them again (the later figures run on the clustered table)")
	jsonOut := flag.String("json", "", "write the results here as JSON")
	flag.Parse()
	var ns []int
	if *sizes != "none" {
		var err error
		if ns, err = results.Sizes(*sizes, 2); err != nil {
			fatalf("-files: %v", err)
		}
	} else if *stormSecs <= 0 {
		fatal("-files none leaves nothing to run without -storm")
	}
	if *stormShared < 0 || *stormSolo < 0 || *stormReaders < 0 || *stormShared+*stormSolo == 0 {
		fatal("-storm-shared, -storm-solo and -storm-readers must be at least 0, and the writers at least 1")
	}
	if *runs < 1 || *warm < 1 || *commits < 1 || *writers < 1 || *seconds < 2 || *batch < 1 {
		fatal("-runs, -warm, -commits, -writers and -batch must be at least 1, -seconds at least 2")
	}

	rep := Report{
		LoadStart: results.LoadAverage(),
		Runs:      *runs, Warm: *warm, Commits: *commits, Writers: *writers, Seconds: *seconds, Batch: *batch,
		GoVersion: runtime.Version(), CPUs: runtime.NumCPU(),
	}
	base := *pgURL
	if base == "" {
		launch, how := pgtest.Launch, "fsync off"
		if *durable {
			launch, how = pgtest.LaunchDurable, "fsync and full_page_writes on"
		}
		cl, err := launch()
		if err != nil {
			fatal(err)
		}
		atExit(func() { cl.Close() })
		defer cl.Close()
		if base, err = cl.CreateDatabase("pgcatalog"); err != nil {
			fatal(err)
		}
		rep.Postgres = "private cluster on 127.0.0.1 started by the bench (internal/pgtest: " + how + ", synchronous_commit on)"
	} else {
		rep.Postgres = "-postgres " + pgkv.Redact(base)
	}
	fmt.Printf("PostgreSQL: %s\n", rep.Postgres)
	fmt.Printf("%d CPUs, load average %s\n", rep.CPUs, rep.LoadStart)

	rep.Notes = []string{
		fmt.Sprintf("concurrent commits: on PostgreSQL %d catalog handles, one per writer; on Pebble %d goroutines on one handle (a Pebble directory opens once)", *writers, *writers),
		"PostgreSQL round trips count the statements pgkv's reads send (snapshots, pages, gets), not a commit's writes",
		"cold plan = catalog.Open + Read + prune.PlanTable (FilesOnly) of the one-column ts range; warm plan = PlanTable on an open catalog, as bench/plan times it",
	}
	if *pgURL == "" && !*durable {
		rep.Notes = append(rep.Notes, "the private PostgreSQL cluster runs with fsync off: its commits skip the flush Pebble's make (see fsync p50)")
	}
	if *cluster {
		rep.Notes = append(rep.Notes, "the CLUSTER row times cold plans again after CLUSTER has put the PostgreSQL table in key order; the warm plans and commits after it run on that table")
	}
	for _, n := range rep.Notes {
		fmt.Printf("note: %s\n", n)
	}

	work, err := os.MkdirTemp("", "rocklake-bench-pgcatalog-")
	if err != nil {
		fatal(err)
	}
	atExit(func() { os.RemoveAll(work) })
	defer os.RemoveAll(work)
	fsync := fsyncP50(work)
	rep.FsyncP50 = results.MS(fsync)
	fmt.Printf("fsync of a 4 KiB write in %s: p50 %.2f ms (Pebble pays one per commit; the private PostgreSQL cluster none)\n", os.TempDir(), results.MS(fsync))

	b := bench{runs: *runs, warm: *warm, commits: *commits, writers: *writers, seconds: *seconds, batch: *batch, breakdown: *breakdown, cluster: *cluster}
	largest := 0
	if len(ns) > 0 {
		largest = slices.Max(ns)
	}
	for _, n := range ns {
		b.cpuprofile = ""
		if n == largest {
			b.cpuprofile = *cpuprofile
		}
		rep.Sizes = append(rep.Sizes, b.size(n, base, work))
	}
	if *stormSecs > 0 {
		rep.Storm = runStorm(base, work, *stormSecs, *stormShared, *stormSolo, *stormReaders)
	}
	rep.LoadEnd = results.LoadAverage()
	fmt.Printf("\nload average at the end %s\n", rep.LoadEnd)
	if err := results.WriteJSON(*jsonOut, rep); err != nil {
		fatal(err)
	}
}

type bench struct {
	runs, warm, commits, writers, seconds, batch int
	cpuprofile                                   string
	breakdown, cluster                           bool
}

// backend is one catalog location.
type backend struct {
	name string
	loc  string
}

func (be backend) open() *catalog.Catalog {
	c, err := catalog.Open(be.loc, catalog.Options{})
	if err != nil {
		fatalf("%s: %v", be.name, err)
	}
	return c
}

// roundTrips is the store's count of statements sent, -1 for a store that
// does not count them (Pebble).
func roundTrips(c *catalog.Catalog) int64 {
	if rt, ok := c.Store().(interface{ RoundTrips() int64 }); ok {
		return rt.RoundTrips()
	}
	return -1
}

func (b bench) size(n int, pgBase, work string) Size {
	fmt.Printf("\n== %d files\n", n)
	schema, pgLoc, err := schemaURL(pgBase, n)
	if err != nil {
		fatal(err)
	}
	defer dropSchema(pgBase, schema)
	backends := []backend{
		{name: "Pebble", loc: filepath.Join(work, fmt.Sprintf("lake-%d", n))},
		{name: "PostgreSQL", loc: pgLoc},
	}
	defer os.RemoveAll(backends[0].loc)

	// Build: each backend alone, one after the other.
	var build [2]time.Duration
	for i, be := range backends {
		t0 := time.Now()
		c, err := catalog.Create(be.loc, catalog.Options{})
		if err != nil {
			fatalf("%s: %v", be.name, err)
		}
		if err := synth.Build(c, n, b.batch); err != nil {
			fatalf("%s: build: %v", be.name, err)
		}
		build[i] = time.Since(t0)
		tx, _ := c.Begin()
		for w := range b.writers {
			tx.CreateTable(writerTable(w), synth.Columns())
		}
		if _, err := tx.Commit(); err != nil {
			fatalf("%s: %v", be.name, err)
		}
		// What a catalog that has settled looks like: Pebble compacted
		// (as bench/plan does), PostgreSQL vacuumed and analysed (as
		// autovacuum would soon do after a bulk load).
		if err := c.CompactStore(); err != nil {
			fatal(err)
		}
		c.Close()
		if i == 1 {
			if err := vacuum(pgLoc); err != nil {
				fatal(err)
			}
		}
		fmt.Printf("%-10s built in %.1fs (%d files per commit)\n", be.name, build[i].Seconds(), b.batch)
	}
	pred := synth.Predicates(n)[0]

	// Cold plans, taking turns.
	stop, err := results.Profile(b.cpuprofile)
	if err != nil {
		fatal(err)
	}
	var coldAll, coldOpen, coldPlan [2][]time.Duration
	var trips []int64
	kept := -1
	for range b.runs {
		for i, be := range backends {
			r := cold(be, pred.SQL)
			if kept == -1 {
				kept = r.kept
			}
			if r.kept != kept {
				fatalf("the cold plan kept %d files on %s but %d before: the backends disagree", r.kept, be.name, kept)
			}
			coldAll[i] = append(coldAll[i], r.open+r.plan)
			coldOpen[i] = append(coldOpen[i], r.open)
			coldPlan[i] = append(coldPlan[i], r.plan)
			if i == 1 {
				trips = append(trips, r.trips)
			}
		}
	}
	stop()
	var breakdown []Figure
	if b.breakdown {
		breakdown = b.coldBreakdown(backends, pred.SQL, kept)
		for i := range breakdown {
			breakdown[i].Files = n
		}
	}

	// The heap of a table in PostgreSQL keeps rows in the order they were
	// inserted, so the rows of one column's stats lie spread over every
	// page, among the other columns' rows; CLUSTER puts them in key order
	// once (a later insert is not), which is what Pebble's sorted files
	// have always.
	var clustered [2][]time.Duration
	var clusteredBreakdown []Figure
	if b.cluster {
		if err := withConn(pgLoc, func(ctx context.Context, conn *pgx.Conn) error {
			_, err := conn.Exec(ctx, "CLUSTER "+pgkv.TableName+" USING "+pgkv.TableName+"_pkey; ANALYZE "+pgkv.TableName)
			return err
		}); err != nil {
			fatal(err)
		}
		for range b.runs {
			for i, be := range backends {
				r := cold(be, pred.SQL)
				if r.kept != kept {
					fatalf("after CLUSTER, the cold plan kept %d files on %s, before %d", r.kept, be.name, kept)
				}
				clustered[i] = append(clustered[i], r.open+r.plan)
			}
		}
		if b.breakdown {
			clusteredBreakdown = b.coldBreakdown(backends, pred.SQL, kept)
			for i := range clusteredBreakdown {
				clusteredBreakdown[i].Files = n
			}
		}
	}

	// Warm plans and commits on open catalogs.
	cats := [2]*catalog.Catalog{backends[0].open(), backends[1].open()}
	var warmPlan, warmAll [2][]time.Duration
	var warmTrips []int64
	for _, c := range cats {
		warmOnce(c, pred.SQL) // fills the cache
	}
	for range b.warm {
		for i, c := range cats {
			before := roundTrips(c)
			plan, all, k := warmOnce(c, pred.SQL)
			if k != kept {
				fatalf("a warm plan kept %d files on %s, the cold ones %d", k, backends[i].name, kept)
			}
			warmPlan[i], warmAll[i] = append(warmPlan[i], plan), append(warmAll[i], all)
			if i == 1 {
				warmTrips = append(warmTrips, roundTrips(c)-before)
			}
		}
	}
	var commit [2][]time.Duration
	var commitTrips []int64
	for k := range b.commits {
		for i, c := range cats {
			before := roundTrips(c)
			t0 := time.Now()
			tx, err := c.Begin()
			if err == nil {
				tx.AddFiles(synth.Table, synth.File(fmt.Sprintf("/data/one%07d.parquet", k), n+k))
				_, err = tx.Commit()
			}
			if err != nil {
				fatalf("%s: one-file commit: %v", backends[i].name, err)
			}
			commit[i] = append(commit[i], time.Since(t0))
			if i == 1 {
				commitTrips = append(commitTrips, roundTrips(c)-before)
			}
		}
	}
	for _, c := range cats {
		c.Close()
	}

	// Concurrent commits, in two turns per backend.
	var conc [2]concurrentResult
	turn := time.Duration(b.seconds) * time.Second / 2
	for round := range 2 {
		for i, be := range backends {
			r := b.concurrent(be, i == 1, turn, round)
			conc[i].commits += r.commits
			conc[i].elapsed += r.elapsed
			conc[i].lat = append(conc[i].lat, r.lat...)
			conc[i].trips += r.trips
		}
	}

	s := Size{Files: n, Kept: kept, Breakdown: breakdown, BreakdownClustered: clusteredBreakdown}
	add := func(name, unit string, p, q float64) {
		s.Figures = append(s.Figures, Figure{Files: n, Name: name, Unit: unit, Pebble: p, Postgres: q, Ratio: ratio(q, p)})
	}
	med := func(d [2][]time.Duration) (float64, float64) { return results.MedianMS(d[0]), results.MedianMS(d[1]) }
	pct := func(d [2][]time.Duration, p float64) (float64, float64) {
		return percentileMS(d[0], p), percentileMS(d[1], p)
	}
	p, q := build[0].Seconds(), build[1].Seconds()
	add(fmt.Sprintf("build (%d files per commit)", b.batch), "s", p, q)
	p, q = med(coldAll)
	add(fmt.Sprintf("cold plan: open + first plan, median of %d", b.runs), "ms", p, q)
	p, q = med(coldOpen)
	add("  of which catalog.Open", "ms", p, q)
	p, q = med(coldPlan)
	add("  of which Read + PlanTable", "ms", p, q)
	add("  round trips (PostgreSQL)", "", 0, float64(medianInt(trips)))
	if b.cluster {
		p, q = med(clustered)
		add(fmt.Sprintf("cold plan, PG heap in key order (CLUSTER), median of %d", b.runs), "ms", p, q)
	}
	p, q = med(warmPlan)
	add(fmt.Sprintf("warm plan: PlanTable, median of %d", b.warm), "ms", p, q)
	p, q = med(warmAll)
	add("  with Read and Close", "ms", p, q)
	add("  round trips (PostgreSQL)", "", 0, float64(medianInt(warmTrips)))
	p, q = pct(commit, 0.50)
	add(fmt.Sprintf("one-file commit p50 (of %d)", b.commits), "ms", p, q)
	p, q = pct(commit, 0.99)
	add("one-file commit p99", "ms", p, q)
	add("  read round trips per commit (PostgreSQL)", "", 0, float64(medianInt(commitTrips)))
	rate := func(r concurrentResult) float64 { return float64(r.commits) / r.elapsed.Seconds() }
	add(fmt.Sprintf("%d writers: commits/s (Pebble: one shared handle)", b.writers), "1/s", rate(conc[0]), rate(conc[1]))
	add(fmt.Sprintf("%d writers: commit p50", b.writers), "ms", percentileMS(conc[0].lat, 0.5), percentileMS(conc[1].lat, 0.5))
	add(fmt.Sprintf("%d writers: commit p99", b.writers), "ms", percentileMS(conc[0].lat, 0.99), percentileMS(conc[1].lat, 0.99))
	add(fmt.Sprintf("%d writers: read round trips per commit (PostgreSQL)", b.writers), "", 0, float64(conc[1].trips)/float64(max(conc[1].commits, 1)))
	printTable(s)
	return s
}

type coldResult struct {
	open, plan time.Duration
	trips      int64
	kept       int
}

// cold opens the catalog afresh and plans pred once.
func cold(be backend, pred string) coldResult {
	runtime.GC() // the garbage of the run before is not this run's
	t0 := time.Now()
	c, err := catalog.Open(be.loc, catalog.Options{})
	if err != nil {
		fatalf("%s: %v", be.name, err)
	}
	t1 := time.Now()
	r, err := c.Read(catalog.Latest)
	if err != nil {
		fatalf("%s: %v", be.name, err)
	}
	p, err := prune.PlanTable(r, synth.Table, pred, prune.Options{FilesOnly: true})
	if err != nil {
		fatalf("%s: %v", be.name, err)
	}
	t2 := time.Now()
	res := coldResult{open: t1.Sub(t0), plan: t2.Sub(t1), trips: roundTrips(c), kept: p.Files.Kept}
	r.Close()
	c.Close()
	return res
}

// warmOnce plans pred on an open catalog: plan is PlanTable's time, all
// includes the Read and the Close around it.
func warmOnce(c *catalog.Catalog, pred string) (plan, all time.Duration, kept int) {
	t0 := time.Now()
	r, err := c.Read(catalog.Latest)
	if err != nil {
		fatal(err)
	}
	t1 := time.Now()
	p, err := prune.PlanTable(r, synth.Table, pred, prune.Options{FilesOnly: true})
	if err != nil {
		fatal(err)
	}
	plan = time.Since(t1)
	r.Close()
	return plan, time.Since(t0), p.Files.Kept
}

type concurrentResult struct {
	commits int
	elapsed time.Duration
	lat     []time.Duration
	trips   int64
}

func writerTable(w int) string { return fmt.Sprintf("w%d", w) }

// concurrent runs b.writers committing goroutines for d: each with its
// own catalog handle when handles is set, else all on one.
func (b bench) concurrent(be backend, handles bool, d time.Duration, round int) concurrentResult {
	cats := make([]*catalog.Catalog, b.writers)
	for w := range cats {
		if w == 0 || handles {
			cats[w] = be.open()
		} else {
			cats[w] = cats[0]
		}
	}
	var before int64
	for w, c := range cats {
		if w == 0 || handles {
			before += roundTrips(c)
		}
	}
	runtime.GC()
	lats := make([][]time.Duration, b.writers)
	errs := make([]error, b.writers)
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for w := range b.writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := cats[w]
			for i := 0; time.Now().Before(deadline); i++ {
				t0 := time.Now()
				tx, err := c.Begin()
				if err == nil {
					tx.AddFiles(writerTable(w), synth.File(fmt.Sprintf("/data/w%d/r%d-%07d.parquet", w, round, i), i))
					_, err = tx.Commit()
				}
				if err != nil {
					errs[w] = err
					return
				}
				lats[w] = append(lats[w], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	res := concurrentResult{elapsed: time.Since(start)}
	for w, c := range cats {
		if errs[w] != nil {
			fatalf("%s: writer %d: %v", be.name, w, errs[w])
		}
		res.lat = append(res.lat, lats[w]...)
		if w == 0 || handles {
			res.trips += roundTrips(c)
			c.Close()
		}
	}
	res.trips -= before
	res.commits = len(res.lat)
	return res
}

func printTable(s Size) {
	printFigures(s.Figures)
	fmt.Printf("kept %d of %d files on both backends\n", s.Kept, s.Files)
	if len(s.Breakdown) > 0 {
		fmt.Printf("\ncold plan of %d files, where the time goes (median of the runs; a timer around every store call):\n", s.Files)
		printFigures(s.Breakdown)
	}
	if len(s.BreakdownClustered) > 0 {
		fmt.Printf("\nthe same after CLUSTER (PostgreSQL heap in key order):\n")
		printFigures(s.BreakdownClustered)
	}
}

func printFigures(fs []Figure) {
	fmt.Printf("%-60s %12s %12s %10s\n", "", "Pebble", "PostgreSQL", "PG/Pebble")
	for _, f := range fs {
		unit := ""
		if f.Unit != "" {
			unit = " (" + f.Unit + ")"
		}
		name := f.Name + unit
		if f.Pebble == 0 {
			fmt.Printf("%-60s %12s %12s %10s\n", name, "", num(f.Postgres), "")
			continue
		}
		fmt.Printf("%-60s %12s %12s %9.2fx\n", name, num(f.Pebble), num(f.Postgres), f.Ratio)
	}
}

func num(x float64) string {
	switch {
	case x >= 100:
		return fmt.Sprintf("%.0f", x)
	case x >= 10:
		return fmt.Sprintf("%.1f", x)
	default:
		return fmt.Sprintf("%.2f", x)
	}
}

func ratio(q, p float64) float64 {
	if p == 0 {
		return 0
	}
	return q / p
}

// percentileMS is the nearest-rank percentile p (0 < p ≤ 1) in ms.
func percentileMS(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(float64(len(s))*p+0.999999) - 1
	return results.MS(s[min(max(i, 0), len(s)-1)])
}

func medianInt(xs []int64) int64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]int64(nil), xs...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// fsyncP50 is the median time of writing 4 KiB to a file in dir and
// syncing it: what each Pebble commit waits for at least.
func fsyncP50(dir string) time.Duration {
	f, err := os.Create(filepath.Join(dir, "fsync-probe"))
	if err != nil {
		fatal(err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, 4096)
	var ds []time.Duration
	for range 50 {
		t0 := time.Now()
		if _, err := f.Write(buf); err != nil {
			fatal(err)
		}
		if err := f.Sync(); err != nil {
			fatal(err)
		}
		ds = append(ds, time.Since(t0))
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2]
}

// schemaURL gives size n a fresh schema in the database of base: the URL
// with search_path set to it (pgkv creates the schema).
func schemaURL(base string, n int) (schema, loc string, err error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", "", fmt.Errorf("-postgres must be a postgres:// URL")
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	schema = fmt.Sprintf("rocklake_bench_%d_%s", n, hex.EncodeToString(rnd[:]))
	q := u.Query()
	if q.Get("search_path") != "" {
		return "", "", fmt.Errorf("-postgres: leave search_path out of the URL; the bench sets it")
	}
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return schema, u.String(), nil
}

func withConn(loc string, fn func(ctx context.Context, conn *pgx.Conn) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, loc)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return fn(ctx, conn)
}

func vacuum(loc string) error {
	return withConn(loc, func(ctx context.Context, conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, "VACUUM (ANALYZE) "+pgkv.TableName)
		return err
	})
}

func dropSchema(base, schema string) {
	err := withConn(base, func(ctx context.Context, conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
		return err
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "drop schema %s: %v\n", schema, strings.TrimSpace(err.Error()))
	}
}

var cleanups []func()

// atExit registers what fatal must still undo: the cluster and the temp
// directory outlive a log.Fatal otherwise (the server gets SIGQUIT, its
// directory waits for pgtest's next sweep).
func atExit(f func()) { cleanups = append(cleanups, f) }

func fatal(v ...any) { fatalf("%s", fmt.Sprint(v...)) }

func fatalf(format string, v ...any) {
	for i := len(cleanups) - 1; i >= 0; i-- {
		cleanups[i]()
	}
	log.Fatalf(format, v...)
}

// runStorm runs the storm on a schema of its own and fails loudly when
// the check finds a lost, doubled or torn commit.
func runStorm(base, work string, secs, shared, solo, readers int) *StormResult {
	u, err := url.Parse(base)
	if err != nil {
		fatal(err)
	}
	q := u.Query()
	q.Set("search_path", "storm")
	u.RawQuery = q.Encode()
	dir := filepath.Join(work, "storm")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fatal(err)
	}
	fmt.Printf("\n== storm: %d writers on one table, %d on tables of their own, %d readers, %d s (each an OS process)\n", shared, solo, readers, secs)
	// storm.Config reads 0 as its default and a negative count as none.
	none := func(n int) int {
		if n == 0 {
			return -1
		}
		return n
	}
	r, err := storm.Run(storm.Config{Catalog: u.String(), Dir: dir, Duration: time.Duration(secs) * time.Second,
		SharedWriters: none(shared), SoloWriters: none(solo), Readers: none(readers)})
	fmt.Println(r.String())
	if err != nil {
		fatalf("storm: %v", err)
	}
	sh, so := r.Spreads()
	spread := func(s storm.Spread) Spread {
		return Spread{Writers: s.Writers, Min: s.Min, Median: s.Median, Max: s.Max, Starved: append([]int{}, s.Starved...)}
	}
	var per []int
	for id := range shared + solo {
		if w, ok := r.ByWriter[id]; ok {
			per = append(per, w.Acknowledged)
		} else {
			per = append(per, 0)
		}
	}
	ratio := 0.0
	if r.CommitP50 > 0 {
		ratio = float64(r.CommitP99) / float64(r.CommitP50)
	}
	fmt.Printf("commit latency p99 / p50: %.1f\n", ratio)
	var groups []LatencyGroup
	for _, g := range r.Latency {
		groups = append(groups, LatencyGroup{Group: g.Group, Commits: g.Commits,
			P50MS: results.MS(g.P50), P99MS: results.MS(g.P99), MaxMS: results.MS(g.Max)})
	}
	return &StormResult{
		Latency:       groups,
		SharedWriters: shared, SoloWriters: solo, Readers: r.Readers,
		P99OverP50: ratio, SharedSpread: spread(sh), SoloSpread: spread(so), PerWriter: per, Seconds: r.Elapsed.Seconds(),
		Acknowledged: r.Acknowledged, Refused: r.Refused, Failed: r.Failed, Unknown: r.Unknown,
		FenceRetries: r.Retries, CommitsPerSec: r.CommitsPerSec,
		P50MS: results.MS(r.CommitP50), P99MS: results.MS(r.CommitP99), MaxMS: results.MS(r.CommitMax),
		ReadsChecked: r.ReadsChecked, Violations: len(r.Violations),
	}
}
