// Command ingest measures `rocklake add` throughput: it writes Parquet
// files with arrow-go (10 columns of mixed types), then registers them in
// a fresh on-disk catalog, -runs times, and prints each run and the median
// in files per second.
//
//	go run ./bench/ingest -files 1000 -rowgroups 4 -rows 400
//	go run ./bench/ingest -files 100 -rowgroups 100 -rows 10000
//
// With -events it registers the benches' events table instead (DuckDB's
// files, one per hour, -rows rows each; bench/internal/events) with
// membership filters on user_id, and times beside each registration the
// floor: every footer read by as many workers, and nothing else.
//
//	go run ./bench/ingest -events -files 10000 -rows 1000 -json bench/results/ingest-events.json
package main

import (
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/rocklake/rocklake/bench/internal/results"
	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/types"
	"github.com/rocklake/rocklake/types/typestest"
)

func main() {
	files := flag.Int("files", 1000, "files to write and register")
	rowGroups := flag.Int("rowgroups", 4, "row groups per file")
	rows := flag.Int("rows", 400, "rows per file")
	runs := flag.Int("runs", 3, "timed registrations (each into a new catalog)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the registrations to this file")
	filters := flag.String("filter-columns", "", "build membership filters for these columns (c0 is int64, c2 varchar, c7 uuid)")
	eventsTable := flag.Bool("events", false, "register the events table (DuckDB's hourly files) with membership filters on user_id, beside the footer reading alone")
	out := flag.String("json", "", "write the results (with -events) to this file")
	keep := flag.String("dir", "", "with -events: keep the written files under this directory and reuse them in later runs (default: written anew in a temporary directory)")
	flag.Parse()
	if *eventsTable {
		if err := eventsRuns(*files, *rows, *runs, *cpuprofile, *out, *keep); err != nil {
			log.Fatal(err)
		}
		return
	}

	dir, err := os.MkdirTemp("", "rocklake-bench-ingest-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	typeNames := []string{"int64", "timestamptz", "varchar", "float64", "int32", "date", "decimal(18,2)", "uuid", "boolean", "varchar"}
	r := rand.New(rand.NewPCG(1, 2))
	start := time.Now()
	for f := range *files {
		var cols []pqwrite.Column
		for i, tn := range typeNames {
			typ := types.MustParseType(tn)
			vals := make([]*types.Value, *rows)
			for j := range vals {
				v := typestest.Random(r, typ)
				if typ.Kind == types.KindFloat || typ.Kind == types.KindDouble {
					v = types.FloatValue(r.NormFloat64())
				}
				vals[j] = &v
			}
			cols = append(cols, pqwrite.Column{Name: fmt.Sprintf("c%d", i), Type: typ, Values: vals})
		}
		path := filepath.Join(dir, "data", fmt.Sprintf("f%05d.parquet", f))
		_ = os.MkdirAll(filepath.Dir(path), 0o755)
		opts := pqwrite.Options{RowGroupRows: int64((*rows + *rowGroups - 1) / *rowGroups)}
		if err := pqwrite.Write(path, cols, opts); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Printf("wrote %d files (%d row groups, %d rows, 10 columns each) in %.1fs\n",
		*files, *rowGroups, *rows, time.Since(start).Seconds())

	stop, err := results.Profile(*cpuprofile)
	if err != nil {
		log.Fatal(err)
	}
	defer stop()
	var rates []float64
	for run := range *runs {
		cdir := filepath.Join(dir, fmt.Sprintf("lake%d", run))
		c, err := catalog.Create(cdir, catalog.Options{})
		if err != nil {
			log.Fatal(err)
		}
		res, err := ingest.Add(c, "t", []string{filepath.Join(dir, "data")}, ingest.Options{Create: true, FilterColumns: splitList(*filters)})
		if err != nil {
			log.Fatal(err)
		}
		c.Close()
		rate := float64(res.Files) / res.Elapsed.Seconds()
		rates = append(rates, rate)
		fmt.Printf("run %d: %d files in %.3fs = %.0f files/s\n", run+1, res.Files, res.Elapsed.Seconds(), rate)
	}
	sort.Float64s(rates)
	fmt.Printf("median: %.0f files/s\n", rates[len(rates)/2])
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
