// Command query compares rocklake with DuckDB on an events table of
// DuckDB-written Parquet files, one per hour (-rows rows each): for each
// table size in -sizes, every query runs -runs times through rocklake
// (catalog, pruning, DuckDB over the kept files; once more as a query text
// never seen, which DuckDB must parse), DuckDB over the glob
// dir/*.parquet, and DuckDB over exactly the files that hold matching rows
// (the oracle), interleaved, and the medians are printed and written as
// JSON (-json). Answers are checked equal to the glob's.
//
//	go run ./bench/query -sizes 100,1000,10000 -json bench/results/query.json
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rocklake/rocklake/bench/internal/events"
	"github.com/rocklake/rocklake/bench/internal/results"
	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/ingest"
)

// Result is one query at one table size.
type Result struct {
	Files      int     `json:"files"`
	Query      string  `json:"query"`
	SQL        string  `json:"sql"`
	RocklakeMS float64 `json:"rocklake_ms"`
	// A query text never seen: DuckDB parses it and prints its conjuncts.
	RocklakeNewMS float64 `json:"rocklake_new_text_ms"`
	GlobMS        float64 `json:"glob_ms"`
	OracleMS      float64 `json:"oracle_ms"`
	OracleFiles   int     `json:"oracle_files"`
	KeptFiles     int     `json:"rocklake_files_read"`
	Metadata      bool    `json:"answered_from_metadata"`
	VsOracle      float64 `json:"rocklake_over_oracle"`
	GlobOver      float64 `json:"glob_over_rocklake"`
}

func main() {
	sizes := flag.String("sizes", "100,1000,10000", "table sizes (files), comma-separated")
	rows := flag.Int("rows", 2000, "rows per file")
	runs := flag.Int("runs", 5, "timed runs per query and contender")
	dir := flag.String("dir", "", "where the data sets live (kept and reused; default: a temporary directory)")
	jsonOut := flag.String("json", "", "write the results here as JSON")
	flag.Parse()
	root := *dir
	if root == "" {
		var err error
		if root, err = os.MkdirTemp("", "rocklake-bench-query-"); err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(root)
	}
	ns, err := results.Sizes(*sizes, 2)
	if err != nil {
		log.Fatalf("-sizes: %v", err)
	}
	var all []Result
	for _, n := range ns {
		res, err := benchSize(filepath.Join(root, fmt.Sprintf("events-%d-%d", n, *rows)), n, *rows, *runs)
		if err != nil {
			log.Fatal(err)
		}
		all = append(all, res...)
	}
	if err := results.WriteJSON(*jsonOut, all); err != nil {
		log.Fatal(err)
	}
}

func benchSize(dir string, n, rows, runs int) ([]Result, error) {
	ctx := context.Background()
	data := filepath.Join(dir, "data")
	// DuckDB for the glob, and a separate one for the oracle, so that
	// neither's caches or heap serve the other.
	duck, err := engine.Open("")
	if err != nil {
		return nil, err
	}
	defer duck.Close()
	oracleDB, err := engine.Open("")
	if err != nil {
		return nil, err
	}
	defer oracleDB.Close()
	fmt.Printf("== %d files x %d rows (%s)\n", n, rows, data)
	if err := events.Generate(duck, data, n, rows); err != nil {
		return nil, fmt.Errorf("writing the data: %w", err)
	}
	lakeDir := filepath.Join(dir, "lake")
	os.RemoveAll(lakeDir)
	cat, err := catalog.Create(lakeDir, catalog.Options{})
	if err != nil {
		return nil, err
	}
	defer cat.Close()
	t0 := time.Now()
	if _, err := ingest.Add(cat, "events", []string{data}, ingest.Options{Create: true}); err != nil {
		return nil, err
	}
	fmt.Printf("registered in %.2fs\n", time.Since(t0).Seconds())
	eng, err := engine.New(cat)
	if err != nil {
		return nil, err
	}
	defer eng.Close()

	// A user_id that occurs: the first row of the middle file.
	var uid int64
	mid := n / 2
	if err := duck.QueryRow(fmt.Sprintf("SELECT user_id FROM read_parquet('%s') LIMIT 1",
		events.File(data, mid))).Scan(&uid); err != nil {
		return nil, err
	}
	ts := events.TS
	last := n - max(1, n/100)
	queries := []struct{ name, where, sel string }{
		{"one hour", fmt.Sprintf("ts >= '%s' AND ts < '%s'", ts(mid), ts(mid+1)), "count(*), sum(amount)"},
		{"user_id = v", fmt.Sprintf("user_id = %d", uid), "count(*), sum(amount)"},
		{"category AND last 1%", fmt.Sprintf("category = 'cat7' AND ts >= '%s'", ts(last)), "count(*), sum(amount)"},
		{"full count(*)", "", "count(*)"},
		{"full scan sum", "", "count(*), sum(amount)"},
	}
	glob := fmt.Sprintf("read_parquet('%s')", filepath.Join(data, "*.parquet"))
	var out []Result
	for _, q := range queries {
		where := ""
		if q.where != "" {
			where = " WHERE " + q.where
		}
		// The oracle's files: those holding a matching row.
		var oracle []string
		rs, err := duck.Query(fmt.Sprintf("SELECT DISTINCT filename FROM read_parquet('%s', filename=true)%s ORDER BY 1",
			filepath.Join(data, "*.parquet"), where))
		if err != nil {
			return nil, err
		}
		for rs.Next() {
			var f string
			rs.Scan(&f)
			oracle = append(oracle, "'"+f+"'")
		}
		rs.Close()
		oracleSrc := "read_parquet([" + strings.Join(oracle, ",") + "])"
		if len(oracle) == n {
			oracleSrc = glob
		}
		sqlFor := func(src string) string { return fmt.Sprintf("SELECT %s FROM %s%s", q.sel, src, where) }
		runDuck := func(db *sql.DB, src string) (string, time.Duration, error) {
			t := time.Now()
			ans, err := results.DuckDBAnswer(db, sqlFor(src))
			return ans, time.Since(t), err
		}
		var tr, tn, tg, to []time.Duration
		var kept int
		var meta bool
		var want string
		for i := range runs + 1 {
			t := time.Now()
			res, err := eng.Query(ctx, sqlFor("events"), engine.QueryOptions{Snapshot: catalog.Latest})
			if err != nil {
				return nil, err
			}
			dr := time.Since(t)
			got := results.Answer(res.Rows)
			t = time.Now()
			if _, err := eng.Query(ctx, sqlFor("events"), engine.QueryOptions{Snapshot: catalog.Latest, NoParseCache: true}); err != nil {
				return nil, err
			}
			dn := time.Since(t)
			gAns, dg, err := runDuck(duck, glob)
			if err != nil {
				return nil, err
			}
			oAns, do, err := runDuck(oracleDB, oracleSrc)
			if err != nil {
				return nil, err
			}
			if !results.SameAnswer(got, gAns) || oAns != gAns {
				return nil, fmt.Errorf("%s: rocklake %q, glob %q, oracle %q", q.name, got, gAns, oAns)
			}
			want = gAns
			if i == 0 {
				continue // warm-up: first reads of footers and the catalog
			}
			tr, tn, tg, to = append(tr, dr), append(tn, dn), append(tg, dg), append(to, do)
			meta = res.Metadata
			kept = 0
			for _, tp := range res.Tables {
				kept += tp.Plan.Files.Kept
			}
		}
		r := Result{Files: n, Query: q.name, SQL: sqlFor("events"), RocklakeMS: results.MedianMS(tr), RocklakeNewMS: results.MedianMS(tn), GlobMS: results.MedianMS(tg),
			OracleMS: results.MedianMS(to), OracleFiles: len(oracle), KeptFiles: kept, Metadata: meta}
		r.VsOracle, r.GlobOver = r.RocklakeMS/r.OracleMS, r.GlobMS/r.RocklakeMS
		fmt.Printf("%-22s rocklake %8.2f ms (new text %6.2f, %5d files%s)  oracle %8.2f ms (%5d files)  glob %8.2f ms   rocklake/oracle %5.2fx  glob/rocklake %7.1fx   answer %s\n",
			q.name, r.RocklakeMS, r.RocklakeNewMS, kept, map[bool]string{true: ", metadata", false: ""}[meta], r.OracleMS, len(oracle), r.GlobMS, r.VsOracle, r.GlobOver, want)
		out = append(out, r)
	}
	return out, nil
}
