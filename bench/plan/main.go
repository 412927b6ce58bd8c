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

	"rocklake/bench/internal/results"
	"rocklake/catalog"
	"rocklake/prune"
	"rocklake/stats"
	"rocklake/types"
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
	runs := flag.Int("runs", 7, "timed plans per predicate")
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
	defs := []catalog.ColumnDef{{Name: "ts", Type: "timestamptz"}, {Name: "user_id", Type: "int64"}}
	for i := 2; i < 10; i++ {
		defs = append(defs, catalog.ColumnDef{Name: fmt.Sprintf("c%d", i), Type: "int64"})
	}
	tx, _ := c.Begin()
	tx.CreateTable("events", defs)
	if _, err := tx.Commit(); err != nil {
		log.Fatal(err)
	}
	tsC, _ := types.CodecFor(types.Simple(types.KindTimestampTZ))
	iC, _ := types.CodecFor(types.Simple(types.KindBigInt))
	enc := func(c *types.Codec, x int64) []byte { b, _ := c.Encode(types.IntValue(x)); return b }
	const hour = int64(3_600_000_000)
	base := int64(1_704_067_200_000_000)
	t0 := time.Now()
	for done := 0; done < nfiles; {
		tx, _ := c.Begin()
		var nfs []catalog.NewFile
		for j := 0; j < 5000 && done < nfiles; j++ {
			nf := catalog.NewFile{Path: fmt.Sprintf("/data/h%07d.parquet", done), RecordCount: 2000, FileSizeBytes: 100_000, RowGroupCount: 1}
			for ci, d := range defs {
				st := stats.Column{RowCount: 2000, NullCount: stats.Known[int64](0), MinIsExact: true, MaxIsExact: true}
				if ci == 0 {
					st.Min, st.Max = stats.Known(enc(tsC, base+int64(done)*hour)), stats.Known(enc(tsC, base+int64(done+1)*hour-1))
				} else {
					st.Min, st.Max = stats.Known(enc(iC, 0)), stats.Known(enc(iC, 1_000_000))
				}
				nf.Columns = append(nf.Columns, catalog.FileColumn{Path: []string{d.Name}, Stats: st})
			}
			nfs = append(nfs, nf)
			done++
		}
		tx.AddFiles("events", nfs...)
		if _, err := tx.Commit(); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Printf("registered %d files x %d columns in %.1fs\n", nfiles, len(defs), time.Since(t0).Seconds())
	if err := c.CompactStore(); err != nil {
		log.Fatal(err)
	}
	c.Close()
	mid := time.UnixMicro(base + int64(nfiles/2)*hour).UTC().Format("2006-01-02 15:04:05+00")
	next := time.UnixMicro(base + int64(nfiles/2+1)*hour).UTC().Format("2006-01-02 15:04:05+00")
	preds := map[string]string{
		"one column (ts range)":        fmt.Sprintf("ts >= '%s' AND ts < '%s'", mid, next),
		"two columns (ts AND user_id)": fmt.Sprintf("ts >= '%s' AND ts < '%s' AND user_id = 5", mid, next),
		"half the files kept":          fmt.Sprintf("ts >= '%s' AND user_id = 5", mid),
	}
	names := []string{"one column (ts range)", "two columns (ts AND user_id)", "half the files kept"}
	var out []Result
	for _, name := range names {
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
			p, err := prune.PlanTable(r, "events", preds[name], prune.Options{FilesOnly: true})
			if err != nil {
				log.Fatal(err)
			}
			times = append(times, time.Since(t))
			kept = p.Files.Kept
			r.Close()
		}
		r, _ := c.Read(catalog.Latest)
		tb, _ := r.Table("events")
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
		p, err := prune.PlanTable(r, "events", preds["one column (ts range)"], prune.Options{FilesOnly: true})
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
		tx.AddFiles("events", nf)
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
