// Command plan measures planning time: a table of -files files with
// synthetic statistics (one file per hour, ts clustered, 10 columns) is
// registered straight into a catalog, then a one-column range predicate and
// a two-column AND are planned -runs times on a freshly opened catalog
// (first run: stats read from Pebble) and again (later runs), at file level
// only. Medians are printed.
//
//	go run ./bench/plan -files 100000
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"runtime/pprof"
	"sort"
	"time"

	"rocklake/catalog"
	"rocklake/prune"
	"rocklake/types"
)

func main() {
	files := flag.Int("files", 100000, "files in the table")
	runs := flag.Int("runs", 5, "timed plans per predicate")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the planning runs to this file")
	flag.Parse()
	dir, err := os.MkdirTemp("", "rocklake-bench-plan-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
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
	for done := 0; done < *files; {
		tx, _ := c.Begin()
		var nfs []catalog.NewFile
		for j := 0; j < 5000 && done < *files; j++ {
			nf := catalog.NewFile{Path: fmt.Sprintf("/data/h%07d.parquet", done), RecordCount: 2000, FileSizeBytes: 100_000, RowGroupCount: 1}
			for ci, d := range defs {
				st := catalog.ColumnStats{RowCount: 2000, NullCount: catalog.Known[int64](0), MinIsExact: true, MaxIsExact: true}
				if ci == 0 {
					st.Min, st.Max = catalog.Known(enc(tsC, base+int64(done)*hour)), catalog.Known(enc(tsC, base+int64(done+1)*hour-1))
				} else {
					st.Min, st.Max = catalog.Known(enc(iC, 0)), catalog.Known(enc(iC, 1_000_000))
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
	fmt.Printf("registered %d files x %d columns in %.1fs\n", *files, len(defs), time.Since(t0).Seconds())
	if err := c.Compact(); err != nil {
		log.Fatal(err)
	}
	c.Close()
	mid := time.UnixMicro(base + int64(*files/2)*hour).UTC().Format("2006-01-02 15:04:05+00")
	next := time.UnixMicro(base + int64(*files/2+1)*hour).UTC().Format("2006-01-02 15:04:05+00")
	preds := map[string]string{
		"one column (ts range)":        fmt.Sprintf("ts >= '%s' AND ts < '%s'", mid, next),
		"two columns (ts AND user_id)": fmt.Sprintf("ts >= '%s' AND ts < '%s' AND user_id = 5", mid, next),
		"half the files kept":          fmt.Sprintf("ts >= '%s' AND user_id = 5", mid),
	}
	names := []string{"one column (ts range)", "two columns (ts AND user_id)", "half the files kept"}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	for _, name := range names {
		c, err := catalog.Open(dir+"/lake", catalog.Options{})
		if err != nil {
			log.Fatal(err)
		}
		var times []time.Duration
		var kept int
		for range *runs {
			r, _ := c.Read(catalog.Latest)
			t := time.Now()
			p, err := prune.PlanTable(r, "events", preds[name], prune.Options{FilesOnly: true})
			if err != nil {
				log.Fatal(err)
			}
			times = append(times, time.Since(t))
			kept = p.Files.Kept
			if os.Getenv("PLAN_DEBUG") != "" {
				fmt.Println(p.Bound)
			}
			r.Close()
		}
		first := times[0]
		sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
		fmt.Printf("%-30s first (cold open) %8.1f ms   median of %d %8.1f ms   kept %d of %d files\n",
			name, ms(first), *runs, ms(times[len(times)/2]), kept, *files)
		c.Close()
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
