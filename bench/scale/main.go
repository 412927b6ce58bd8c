// Command scale measures a catalog of many files: the synthetic table of
// bench/plan (one file per hour, ts clustered, 10 columns of statistics;
// bench/internal/synth) built straight through the catalog API with
// -files files, -batch per commit, then:
//
//   - its size: bytes on disk per file, and for Pebble the tables (*.sst)
//     beside the logs and everything else, before and after compaction;
//   - a plan in a new process: this program run again (-child) opens the
//     catalog and plans one predicate, files only; wall time from start to
//     exit, the child's own opening and plan, and its peak resident memory
//     (medians of -procs processes per predicate);
//   - the warm plan: later plans on an open catalog, from its cache (median
//     of -runs);
//   - two rewrites of four files into one (one commit each: four removed,
//     their merge added, as optimize or a copy-on-write DELETE commits);
//   - expiring a tenth of the files: one commit removes every tenth file
//     (with -remove oldest, a tenth in a row from the sixth file on, as a
//     retention policy forgets the oldest), then ExpireSnapshots forgets every older snapshot and Cleanup settles
//     the files it scheduled (the synthetic files are the user's: cleanup
//     forgets them and deletes nothing), each timed, with the size after,
//     and each with the process's peak resident memory during that step
//     (VmHWM, reset before it: the whole process, open catalog included);
//   - dropping the table, then expiring and cleaning it up: every key of
//     the table deleted, each of its files scheduled and settled.
//
// The catalog is a Pebble directory, or with -postgres a PostgreSQL
// database (the URL's, or with -postgres private a cluster the command
// starts and removes: internal/pgtest, 127.0.0.1, fsync off).
//
//	go run ./bench/scale -files 10000000 -json bench/results/scale-10m.json
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rocklake/rocklake/bench/internal/results"
	"github.com/rocklake/rocklake/bench/internal/synth"
	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/internal/pgtest"
	"github.com/rocklake/rocklake/kv/pgkv"
	"github.com/rocklake/rocklake/prune"
)

// Size is the catalog's bytes at one point.
type Size struct {
	When         string  `json:"when"`
	Bytes        int64   `json:"bytes"`
	Tables       int64   `json:"tables_bytes,omitempty"`
	Logs         int64   `json:"logs_bytes,omitempty"`
	Other        int64   `json:"other_bytes,omitempty"`
	BytesPerFile float64 `json:"bytes_per_file"`
}

// Plan is one predicate's figures.
type Plan struct {
	Predicate   string  `json:"predicate"`
	Kept        int     `json:"kept_files"`
	ProcWallMS  float64 `json:"new_process_wall_ms"`
	ProcOpenMS  float64 `json:"new_process_open_ms"`
	ProcPlanMS  float64 `json:"new_process_plan_ms"`
	ProcPeakMiB float64 `json:"new_process_peak_rss_mib"`
	WarmMS      float64 `json:"warm_plan_ms"`
}

// Report is what -json writes.
type Report struct {
	Catalog     string             `json:"catalog"`
	Files       int                `json:"files"`
	Batch       int                `json:"batch"`
	BuildS      float64            `json:"build_s"`
	OpenMS      float64            `json:"open_ms"`
	Sizes       []Size             `json:"sizes"`
	Plans       []Plan             `json:"plans"`
	Maintenance map[string]float64 `json:"maintenance_ms"`
	MaintPeak   map[string]float64 `json:"maintenance_peak_rss_mib"`
	// MaintTrips is each maintenance step's statements sent (PostgreSQL
	// only): a round trip each, or a pipeline's share of one.
	MaintTrips   map[string]int64 `json:"maintenance_statements,omitempty"`
	Removed      int              `json:"files_removed"`
	RemoveHow    string           `json:"removed_which"`
	LoadStart    string           `json:"load_average_start"`
	LoadEnd      string           `json:"load_average_end"`
	GoVersion    string           `json:"go"`
	CPUs         int              `json:"cpus"`
	ProcsPerPred int              `json:"processes_per_predicate"`
	WarmRuns     int              `json:"warm_runs"`
}

func main() {
	n := flag.Int("files", 1000000, "files in the table")
	batch := flag.Int("batch", 5000, "files per commit while building")
	runs := flag.Int("runs", 21, "warm plans per predicate (median)")
	procs := flag.Int("procs", 5, "new processes per predicate (medians)")
	pg := flag.String("postgres", "", `a PostgreSQL URL to build the catalog in, or "private" for a cluster the command starts (default: a Pebble directory)`)
	keep := flag.String("keep", "", "build the Pebble catalog here and keep it (default: a temporary directory, removed)")
	jsonOut := flag.String("json", "", "write the figures here")
	maintProfile := flag.String("cpuprofile", "", "write a CPU profile of the expiry steps (removal, expire, cleanup) here")
	memProfile := flag.String("memprofile", "", "write heap profiles of each maintenance step at its peak to this prefix (prefix-remove-a-tenth.pb.gz, prefix-expire.pb.gz, ...)")
	removeHow := flag.String("remove", "every-tenth", `which tenth of the files the expiry forgets: "every-tenth" (scattered, as compaction leaves them) or "oldest" (in a row, as retention does)`)
	child := flag.String("child", "", "internal: open this catalog, plan -pred, print the times")
	pred := flag.Int("pred", 0, "internal: the predicate -child plans")
	childProfile := flag.String("child-cpuprofile", "", "with -child: write a CPU profile of the new process's open and plan here")
	flag.Parse()
	if *removeHow != "every-tenth" && *removeHow != "oldest" {
		log.Fatalf(`-remove %q: want "every-tenth" or "oldest"`, *removeHow)
	}
	if *child != "" {
		stop, err := results.Profile(*childProfile)
		if err != nil {
			log.Fatal(err)
		}
		childPlan(*child, *n, *pred)
		stop()
		return
	}
	rep := Report{Files: *n, Batch: *batch, LoadStart: results.LoadAverage(), GoVersion: runtime.Version(), CPUs: runtime.NumCPU(),
		ProcsPerPred: *procs, WarmRuns: *runs, Maintenance: map[string]float64{}}

	loc, dir := "", ""
	switch {
	case *pg == "private":
		cl, err := pgtest.Launch()
		if err != nil {
			log.Fatal(err)
		}
		defer cl.Close()
		if loc, err = cl.CreateDatabase("scale"); err != nil {
			cl.Close()
			log.Fatal(err)
		}
		rep.Catalog = "PostgreSQL, a private cluster on 127.0.0.1 (internal/pgtest: fsync off)"
	case *pg != "":
		loc = *pg
		rep.Catalog = "PostgreSQL " + pgkv.Redact(loc)
	default:
		dir = *keep
		if dir == "" {
			var err error
			if dir, err = os.MkdirTemp("", "rocklake-bench-scale-"); err != nil {
				log.Fatal(err)
			}
			defer os.RemoveAll(dir)
		}
		loc = filepath.Join(dir, "lake")
		rep.Catalog = "Pebble directory " + loc
	}
	fmt.Printf("%s: %d files, %d per commit; %d CPUs, load %s\n", rep.Catalog, *n, *batch, rep.CPUs, rep.LoadStart)

	c, err := catalog.Create(loc, catalog.Options{})
	if err != nil {
		log.Fatal(err)
	}
	t0 := time.Now()
	if err := synth.BuildProgress(c, *n, *batch, func(done int) {
		if done%(max(*n/10, *batch)) < *batch {
			fmt.Printf("  %d files in %.0f s\n", done, time.Since(t0).Seconds())
		}
	}); err != nil {
		log.Fatal(err)
	}
	rep.BuildS = time.Since(t0).Seconds()
	fmt.Printf("built in %.1f s (%.0f files/s)\n", rep.BuildS, float64(*n)/rep.BuildS)
	size := func(when string) {
		s := measure(loc, dir, when, *n)
		rep.Sizes = append(rep.Sizes, s)
		fmt.Printf("size %-22s %8.1f MB, %6.1f bytes per file", when, float64(s.Bytes)/1e6, s.BytesPerFile)
		if dir != "" {
			fmt.Printf(" (tables %.1f MB, logs %.1f MB, other %.1f MB)", float64(s.Tables)/1e6, float64(s.Logs)/1e6, float64(s.Other)/1e6)
		}
		fmt.Println()
	}
	size("built")
	t0 = time.Now()
	if err := c.CompactStore(); err != nil {
		log.Fatal(err)
	}
	rep.Maintenance["compact"] = results.MS(time.Since(t0))
	c.Close()
	size("compacted")

	preds := synth.Predicates(*n)
	for i, p := range preds {
		pl := Plan{Predicate: p.Name}
		var wall, open, plan []time.Duration
		var peak []float64
		for range *procs {
			w, o, pt, rss, kept := runChild(loc, *n, i)
			wall, open, plan, peak = append(wall, w), append(open, o), append(plan, pt), append(peak, rss)
			pl.Kept = kept
		}
		pl.ProcWallMS, pl.ProcOpenMS, pl.ProcPlanMS = results.MedianMS(wall), results.MedianMS(open), results.MedianMS(plan)
		sort.Float64s(peak)
		pl.ProcPeakMiB = peak[len(peak)/2]
		rep.Plans = append(rep.Plans, pl)
	}

	t0 = time.Now()
	c, err = catalog.Open(loc, catalog.Options{})
	if err != nil {
		log.Fatal(err)
	}
	rep.OpenMS = results.MS(time.Since(t0))
	for i, p := range preds {
		var warm []time.Duration
		for j := range *runs + 1 {
			d, _ := planOnce(c, p.SQL)
			if j > 0 { // the first fills the cache
				warm = append(warm, d)
			}
		}
		rep.Plans[i].WarmMS = results.MedianMS(warm)
	}
	for _, pl := range rep.Plans {
		fmt.Printf("%-30s kept %8d   new process %8.1f ms wall (open %.1f, plan %.1f), peak %6.1f MiB   warm %8.2f ms\n",
			pl.Predicate, pl.Kept, pl.ProcWallMS, pl.ProcOpenMS, pl.ProcPlanMS, pl.ProcPeakMiB, pl.WarmMS)
	}

	// Expire a tenth of the files.
	r, err := c.Read(catalog.Latest)
	if err != nil {
		log.Fatal(err)
	}
	tb, err := r.Table(synth.Table)
	if err != nil {
		log.Fatal(err)
	}
	fset, err := r.FileSet(tb.ID)
	if err != nil {
		log.Fatal(err)
	}
	var gone []int64
	switch *removeHow {
	case "every-tenth":
		for i, id := range fset.IDs {
			if i%10 == 5 {
				gone = append(gone, id)
			}
		}
	case "oldest":
		// From the sixth file: the first rewrite below replaces the
		// second to the fifth.
		gone = slices.Clone(fset.IDs[5:min(5+len(fset.IDs)/10, len(fset.IDs))])
	}
	rep.RemoveHow = *removeHow
	r.Close()
	rep.Removed = len(gone)
	rep.MaintPeak = map[string]float64{}
	step := func(name string, fn func() error) {
		debug.FreeOSMemory() // what the last step freed leaves the count
		results.ResetPeakRSS()
		stopHeap := results.PeakHeapProfile(stepProfile(*memProfile, name))
		trips := func() int64 { return -1 }
		if rt, ok := c.Store().(interface{ RoundTrips() int64 }); ok {
			trips = rt.RoundTrips
		}
		t, before := time.Now(), trips()
		if err := fn(); err != nil {
			log.Fatalf("%s: %v", name, err)
		}
		if err := stopHeap(); err != nil {
			log.Fatal(err)
		}
		rep.Maintenance[name] = results.MS(time.Since(t))
		rep.MaintPeak[name] = results.ProcStatusMiB("VmHWM")
		statements := ""
		if before >= 0 {
			if rep.MaintTrips == nil {
				rep.MaintTrips = map[string]int64{}
			}
			rep.MaintTrips[name] = trips() - before
			statements = fmt.Sprintf("   %d statements", rep.MaintTrips[name])
		}
		fmt.Printf("%-34s %10.1f ms   peak %7.1f MiB%s\n", name, rep.Maintenance[name], rep.MaintPeak[name], statements)
	}
	stopProfile, err := results.Profile(*maintProfile)
	if err != nil {
		log.Fatal(err)
	}
	// An optimize of four files: four removed, one added in their place
	// (the commit a copy-on-write DELETE or a compaction makes), twice:
	// from the table's start and from its middle.
	for _, at := range []int{0, len(fset.IDs) / 2} {
		step(fmt.Sprintf("rewrite 4 files into 1 at %d", at), func() error {
			tx, err := c.Begin()
			if err != nil {
				return err
			}
			tx.RemoveFiles(synth.Table, fset.IDs[at+1:at+5]...)
			tx.AddFiles(synth.Table, synth.Rewrite(fmt.Sprintf("/data/rewrite-%d.parquet", at), at+1, 4))
			_, err = tx.Commit()
			return err
		})
	}
	step("remove a tenth (one commit)", func() error {
		tx, err := c.Begin()
		if err != nil {
			return err
		}
		tx.RemoveFiles(synth.Table, gone...)
		_, err = tx.Commit()
		return err
	})
	var scheduled int
	step("expire", func() error {
		res, err := c.ExpireSnapshots(time.Now(), false)
		if err == nil {
			scheduled = len(res.Scheduled)
		}
		return err
	})
	var forgotten int
	step("cleanup", func() error {
		res, err := c.Cleanup(catalog.CleanupOptions{Grace: -1})
		if err == nil {
			forgotten = len(res.Forgotten) + len(res.Deleted)
		}
		return err
	})
	// The tenth, and the eight files the two rewrites replaced.
	if removed := len(gone) + 8; scheduled != removed || forgotten != removed {
		log.Fatalf("expire scheduled %d files and cleanup settled %d; %d were removed", scheduled, forgotten, removed)
	}
	stopProfile()
	step("compact", c.CompactStore)
	d, kept := planOnce(c, preds[0].SQL)
	fmt.Printf("first plan after expiry: %.1f ms, kept %d\n", results.MS(d), kept)
	c.Close()
	size("expired and compacted")

	// Drop the table and expire it: every key of the table goes, and
	// each of its files is scheduled.
	if c, err = catalog.Open(loc, catalog.Options{}); err != nil {
		log.Fatal(err)
	}
	live := len(fset.IDs) - len(gone) - 8 + 2
	step("drop the table", func() error {
		tx, err := c.Begin()
		if err != nil {
			return err
		}
		tx.DropTable(synth.Table)
		_, err = tx.Commit()
		return err
	})
	step("expire the dropped table", func() error {
		res, err := c.ExpireSnapshots(time.Now(), false)
		if err == nil && (res.TablesForgotten != 1 || len(res.Scheduled) != live) {
			err = fmt.Errorf("forgot %d tables and scheduled %d files; the table had %d", res.TablesForgotten, len(res.Scheduled), live)
		}
		return err
	})
	step("cleanup the dropped table", func() error {
		res, err := c.Cleanup(catalog.CleanupOptions{Grace: -1})
		if err == nil && len(res.Forgotten)+len(res.Deleted) != live {
			err = fmt.Errorf("cleanup settled %d files of %d", len(res.Forgotten)+len(res.Deleted), live)
		}
		return err
	})
	step("compact after the drop", c.CompactStore)
	c.Close()
	size("dropped, expired and compacted")

	rep.LoadEnd = results.LoadAverage()
	if *jsonOut != "" {
		if err := results.WriteJSON(*jsonOut, rep); err != nil {
			log.Fatal(err)
		}
	}
}

// planOnce plans sql on the latest snapshot, files only.
func planOnce(c *catalog.Catalog, sql string) (time.Duration, int) {
	r, err := c.Read(catalog.Latest)
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	t := time.Now()
	p, err := prune.PlanTable(r, synth.Table, sql, prune.Options{FilesOnly: true})
	if err != nil {
		log.Fatal(err)
	}
	return time.Since(t), p.Files.Kept
}

type childResult struct {
	OpenMS float64 `json:"open_ms"`
	PlanMS float64 `json:"plan_ms"`
	Kept   int     `json:"kept"`
}

func childPlan(loc string, n, pred int) {
	t := time.Now()
	var opts catalog.Options
	if !pgkv.IsLocation(loc) {
		opts.Pebble.ReadOnly = true // as `rocklake plan` opens it
	}
	c, err := catalog.Open(loc, opts)
	if err != nil {
		log.Fatal(err)
	}
	open := time.Since(t)
	d, kept := planOnce(c, synth.Predicates(n)[pred].SQL)
	c.Close()
	json.NewEncoder(os.Stdout).Encode(childResult{OpenMS: results.MS(open), PlanMS: results.MS(d), Kept: kept})
}

// runChild plans predicate pred in a new process of this program.
// stepProfile names a step's heap profile after prefix ("" : none).
func stepProfile(prefix, step string) string {
	if prefix == "" {
		return ""
	}
	if strings.HasPrefix(step, "rewrite") {
		return "" // a few milliseconds: nothing to see
	}
	name, _, _ := strings.Cut(step, " (")
	return prefix + "-" + strings.ReplaceAll(name, " ", "-") + ".pb.gz"
}

func runChild(loc string, n, pred int) (wall, open, plan time.Duration, peakMiB float64, kept int) {
	self, err := os.Executable()
	if err != nil {
		log.Fatal(err)
	}
	cmd := exec.Command(self, "-child", loc, "-files", fmt.Sprint(n), "-pred", fmt.Sprint(pred))
	cmd.Stderr = os.Stderr
	t := time.Now()
	out, err := cmd.Output()
	wall = time.Since(t)
	if err != nil {
		log.Fatalf("planning in a new process: %v", err)
	}
	var res childResult
	if err := json.NewDecoder(bufio.NewReader(strings.NewReader(string(out)))).Decode(&res); err != nil {
		log.Fatalf("planning in a new process: %v: %q", err, out)
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		peakMiB = float64(ru.Maxrss) / 1024 // Linux reports KiB
	}
	ms := func(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }
	return wall, ms(res.OpenMS), ms(res.PlanMS), peakMiB, res.Kept
}

// measure is the catalog's size: a Pebble directory's files by kind, or
// the PostgreSQL table's total relation size.
func measure(loc, dir, when string, n int) Size {
	s := Size{When: when}
	if dir == "" {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, loc)
		if err != nil {
			log.Fatal(err)
		}
		defer conn.Close(ctx)
		if err := conn.QueryRow(ctx, "SELECT pg_total_relation_size('rocklake_kv')").Scan(&s.Bytes); err != nil {
			log.Fatal(err)
		}
	} else {
		err := filepath.WalkDir(loc, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			info, err := d.Info()
			if errors.Is(err, fs.ErrNotExist) {
				return nil // an obsolete file Pebble deleted while the walk went by
			}
			if err != nil {
				return err
			}
			switch filepath.Ext(p) {
			case ".sst":
				s.Tables += info.Size()
			case ".log":
				s.Logs += info.Size()
			default:
				s.Other += info.Size()
			}
			return nil
		})
		if err != nil {
			log.Fatal(err)
		}
		s.Bytes = s.Tables + s.Logs + s.Other
	}
	s.BytesPerFile = float64(s.Bytes) / float64(n)
	return s
}
