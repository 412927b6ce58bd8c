// Command plan measures planning time: for each size in -files, a table of
// that many files with synthetic statistics (one file per hour, ts
// clustered, 10 columns) is registered straight into a catalog, then a
// one-column range predicate, a two-column AND and a predicate keeping
// half the files are planned -runs times on a freshly opened catalog (cold:
// opening the catalog and the first plan, which reads stats from Pebble;
// warm: later runs, from the catalog's cache), at file level only. Medians are printed, and written as
// JSON with -json.
//
//	go run ./bench/plan -files 10000,100000,1000000 -json bench/results/plan.json
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/rocklake/rocklake/bench/internal/results"
	"github.com/rocklake/rocklake/bench/internal/synth"
	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/prune"
)

// Result is one predicate at one table size.
type Result struct {
	Files        int     `json:"files"`
	Predicate    string  `json:"predicate"`
	ColdMS       float64 `json:"cold_ms"`
	WarmMS       float64 `json:"warm_ms"`
	Kept         int     `json:"kept_files"`
	CacheBytesPF float64 `json:"cached_bytes_per_file_column"`
}

func main() {
	sizes := flag.String("files", "100000", "files in the table; several sizes comma-separated")
	runs := flag.Int("runs", 7, "timed plans per predicate: the first cold, the rest warm (at least 2)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the planning runs to this file")
	jsonOut := flag.String("json", "", "write the results here as JSON")
	keep := flag.String("keep", "", "keep each catalog under this directory (plan-N/lake), e.g. to time `rocklake plan` in a new process")
	flag.Parse()
	stop, err := results.Profile(*cpuprofile)
	if err != nil {
		log.Fatal(err)
	}
	defer stop()
	ns, err := results.Sizes(*sizes, 2)
	if err != nil {
		log.Fatalf("-files: %v", err)
	}
	if *runs < 2 {
		log.Fatalf("-runs %d: at least 2 (one cold plan, then the warm ones the median is taken of)", *runs)
	}
	var all []Result
	for _, n := range ns {
		all = append(all, benchSize(n, *runs, *keep)...)
	}
	if err := results.WriteJSON(*jsonOut, all); err != nil {
		log.Fatal(err)
	}
}

func benchSize(nfiles, runs int, keep string) []Result {
	fmt.Printf("== %d files\n", nfiles)
	dir := keep
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "rocklake-bench-plan-"); err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(dir)
	} else {
		dir = filepath.Join(dir, fmt.Sprintf("plan-%d", nfiles))
		if err := os.RemoveAll(dir); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("catalog kept in %s/lake\n", dir)
	}
	c, err := catalog.Create(dir+"/lake", catalog.Options{})
	if err != nil {
		log.Fatal(err)
	}
	t0 := time.Now()
	if err := synth.Build(c, nfiles, 5000); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("registered %d files x %d columns in %.1fs\n", nfiles, len(synth.Columns()), time.Since(t0).Seconds())
	if err := c.CompactStore(); err != nil {
		log.Fatal(err)
	}
	c.Close()
	preds := synth.Predicates(nfiles)
	var out []Result
	for _, pred := range preds {
		name := pred.Name
		// Cold: opening the catalog (Pebble) and the first plan, which
		// decodes the stats from Pebble; warm: later plans, from the cache.
		t := time.Now()
		c, err := catalog.Open(dir+"/lake", catalog.Options{})
		if err != nil {
			log.Fatal(err)
		}
		var times []time.Duration
		var kept int
		for i := range runs {
			r, _ := c.Read(catalog.Latest)
			if i > 0 {
				t = time.Now()
			}
			p, err := prune.PlanTable(r, synth.Table, pred.SQL, prune.Options{FilesOnly: true})
			if err != nil {
				log.Fatal(err)
			}
			times = append(times, time.Since(t))
			kept = p.Files.Kept
			r.Close()
		}
		r, _ := c.Read(catalog.Latest)
		tb, _ := r.Table(synth.Table)
		col, _ := r.Column(tb.ID, "ts")
		cb, _ := r.ColumnBounds(tb.ID, col.ID)
		r.Close()
		warm := times[1:]
		res := Result{Files: nfiles, Predicate: name, ColdMS: results.MS(times[0]), WarmMS: results.MedianMS(warm), Kept: kept, CacheBytesPF: cb.BytesPerFile()}
		fmt.Printf("%-30s cold (open + first plan) %8.1f ms   warm median of %d %7.2f ms   kept %d of %d files   cache %.0f B per file and column\n",
			name, res.ColdMS, len(warm), res.WarmMS, kept, nfiles, res.CacheBytesPF)
		out = append(out, res)
		c.Close()
	}

	// A commit that appends one file makes a new cache key: the first plan
	// after it extends the cached entries instead of decoding every row.
	c, err = catalog.Open(dir+"/lake", catalog.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	name := "one column, after appending"
	plan := func() (time.Duration, int) {
		r, _ := c.Read(catalog.Latest)
		defer r.Close()
		t := time.Now()
		p, err := prune.PlanTable(r, synth.Table, preds[0].SQL, prune.Options{FilesOnly: true})
		if err != nil {
			log.Fatal(err)
		}
		return time.Since(t), p.Files.Kept
	}
	plan() // cache filled
	var after []time.Duration
	var kept int
	for i := range runs {
		tx, _ := c.Begin()
		nf := catalog.NewFile{Path: fmt.Sprintf("/data/appended%03d.parquet", i), RecordCount: 2000, FileSizeBytes: 100_000, RowGroupCount: 1}
		tx.AddFiles(synth.Table, nf)
		if _, err := tx.Commit(); err != nil {
			log.Fatal(err)
		}
		d, k := plan()
		after, kept = append(after, d), k
	}
	res := Result{Files: nfiles, Predicate: name, ColdMS: results.MedianMS(after), WarmMS: results.MedianMS(after), Kept: kept}
	fmt.Printf("%-30s first plan after a one-file commit, median of %d %7.2f ms   kept %d files\n", name, runs, res.ColdMS, kept)
	return append(out, res)
}
