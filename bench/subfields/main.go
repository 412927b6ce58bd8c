// Command subfields compares rocklake with DuckDB on predicates no
// catalog's column statistics answer: VARIANT sub-fields and GEOMETRY
// extents. Two tables of -files DuckDB-written files each: events whose
// VARIANT payload holds a time-like sub-field (ts, one hour per file) and
// an id-like one (id, ascending across files), and points clustered by
// space (file k holds points of one cell of a square grid). Each query
// runs -runs times through rocklake (catalog, pruning, DuckDB over the
// kept files) and through DuckDB over the glob dir/*.parquet, interleaved;
// medians are printed and written as JSON (-json), and the answers are
// checked equal.
//
//	go run ./bench/subfields -files 1000 -json bench/results/subfields.json
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/rocklake/rocklake/bench/internal/results"
	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/ingest"
)

// Result is one query.
type Result struct {
	Table      string  `json:"table"`
	Query      string  `json:"query"`
	SQL        string  `json:"sql"`
	Files      int     `json:"files"`
	KeptFiles  int     `json:"rocklake_files_read"`
	RocklakeMS float64 `json:"rocklake_ms"`
	GlobMS     float64 `json:"glob_ms"`
	FilesRatio float64 `json:"files_over_files_read"`
	Speedup    float64 `json:"glob_over_rocklake"`
}

func main() {
	files := flag.Int("files", 1000, "files per table")
	rows := flag.Int("rows", 1000, "rows per file")
	runs := flag.Int("runs", 5, "timed runs per query and contender")
	dir := flag.String("dir", "", "where the data sets live (kept and reused; default: a temporary directory)")
	jsonOut := flag.String("json", "", "write the results here as JSON")
	flag.Parse()
	root := *dir
	if root == "" {
		var err error
		if root, err = os.MkdirTemp("", "rocklake-bench-subfields-"); err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(root)
	}
	out, err := run(root, *files, *rows, *runs)
	if err != nil {
		log.Fatal(err)
	}
	if err := results.WriteJSON(*jsonOut, out); err != nil {
		log.Fatal(err)
	}
}

func run(root string, n, rows, runs int) ([]Result, error) {
	ctx := context.Background()
	duck, err := engine.Open("")
	if err != nil {
		return nil, err
	}
	defer duck.Close()
	side := int(math.Ceil(math.Sqrt(float64(n))))
	events, points := filepath.Join(root, "events"), filepath.Join(root, "points")
	for _, d := range []string{events, points} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	t0 := time.Now()
	for k := range n {
		e := filepath.Join(events, fmt.Sprintf("e%05d.parquet", k))
		if _, err := os.Stat(e); err != nil {
			q := fmt.Sprintf(`COPY (SELECT i AS row, {'ts': TIMESTAMP '2024-01-01' + INTERVAL (%d) HOUR + to_microseconds(i * (3600000000 // %d)),
				'id': %d * %d + i, 'kind': 'k' || (i %% 7)::VARCHAR, 'amount': (i %% 100) * 1.5}::VARIANT AS payload
				FROM range(%d) r(i)) TO '%s' (FORMAT parquet)`, k, rows, k, rows, rows, e)
			if _, err := duck.Exec(q); err != nil {
				return nil, err
			}
		}
		p := filepath.Join(points, fmt.Sprintf("p%05d.parquet", k))
		if _, err := os.Stat(p); err != nil {
			cx, cy := (k%side)*100, (k/side)*100
			q := fmt.Sprintf(`COPY (SELECT i AS row, ('POINT(' || (%d + (hash(i) %% 10000) / 100.0)::VARCHAR || ' ' || (%d + (hash(i + 1) %% 10000) / 100.0)::VARCHAR || ')')::GEOMETRY AS g
				FROM range(%d) r(i)) TO '%s' (FORMAT parquet)`, cx, cy, rows, p)
			if _, err := duck.Exec(q); err != nil {
				return nil, err
			}
		}
	}
	fmt.Printf("data: %d + %d files of %d rows in %s (%.1fs)\n", n, n, rows, root, time.Since(t0).Seconds())
	lakeDir := filepath.Join(root, "lake")
	os.RemoveAll(lakeDir)
	cat, err := catalog.Create(lakeDir, catalog.Options{})
	if err != nil {
		return nil, err
	}
	defer cat.Close()
	t0 = time.Now()
	for _, t := range []struct{ name, dir string }{{"events", events}, {"points", points}} {
		if _, err := ingest.Add(cat, t.name, []string{t.dir}, ingest.Options{Create: true, NoAutoFilters: true}); err != nil {
			return nil, err
		}
	}
	fmt.Printf("registered in %.2fs\n", time.Since(t0).Seconds())
	eng, err := engine.New(cat)
	if err != nil {
		return nil, err
	}
	defer eng.Close()
	mid := n / 2
	hour := func(k, min int) string {
		return time.Date(2024, 1, 1, k, min, 0, 0, time.UTC).Format("2006-01-02 15:04:05")
	}
	cx, cy := float64((mid%side)*100), float64((mid/side)*100)
	queries := []struct{ table, name, sel, where string }{
		{"events", "payload.ts in one half hour", "count(*), sum(payload.amount::DOUBLE)",
			fmt.Sprintf("payload.ts::TIMESTAMP >= '%s' AND payload.ts::TIMESTAMP < '%s'", hour(mid, 0), hour(mid, 30))},
		{"events", "payload.id = v", "count(*), min(payload.kind::VARCHAR)",
			fmt.Sprintf("variant_extract(payload, 'id')::BIGINT = %d", mid*rows+rows/3)},
		{"events", "payload.id in a range", "count(*)",
			fmt.Sprintf("payload.id::BIGINT BETWEEN %d AND %d", mid*rows, mid*rows+rows*3/2)},
		{"points", "g && a small box", "count(*)",
			fmt.Sprintf("g && 'POLYGON((%[1]g %[2]g, %[3]g %[2]g, %[3]g %[4]g, %[1]g %[4]g, %[1]g %[2]g))'::GEOMETRY", cx+10, cy+10, cx+60, cy+40)},
		{"points", "st_intersects_extent(g, point)", "count(*)",
			fmt.Sprintf("st_intersects_extent(g, 'POINT(%g %g)'::GEOMETRY)", cx+50, cy+50)},
	}
	var out []Result
	for _, q := range queries {
		glob := fmt.Sprintf("read_parquet('%s')", filepath.Join(root, q.table, "*.parquet"))
		sqlFor := func(src string) string { return fmt.Sprintf("SELECT %s FROM %s WHERE %s", q.sel, src, q.where) }
		var tr, tg []time.Duration
		var kept int
		for i := range runs + 1 {
			t := time.Now()
			res, err := eng.Query(ctx, sqlFor(q.table), engine.QueryOptions{Snapshot: catalog.Latest})
			if err != nil {
				return nil, fmt.Errorf("%s: %w", q.name, err)
			}
			dr := time.Since(t)
			got := results.Answer(res.Rows)
			t = time.Now()
			want, err := results.DuckDBAnswer(duck, sqlFor(glob))
			dg := time.Since(t)
			if err != nil {
				return nil, fmt.Errorf("%s over the glob: %w", q.name, err)
			}
			if !results.SameAnswer(got, want) {
				return nil, fmt.Errorf("%s: rocklake answers %q, DuckDB over the glob %q", q.name, got, want)
			}
			kept = res.Tables[0].Plan.Files.Kept
			if i > 0 { // the first run warms both
				tr, tg = append(tr, dr), append(tg, dg)
			}
		}
		r := Result{Table: q.table, Query: q.name, SQL: sqlFor(q.table), Files: n, KeptFiles: kept,
			RocklakeMS: results.MedianMS(tr), GlobMS: results.MedianMS(tg)}
		r.FilesRatio = float64(n) / float64(max(kept, 1))
		r.Speedup = r.GlobMS / r.RocklakeMS
		fmt.Printf("%-32s files read %4d of %d (%.0fx fewer)  rocklake %8.2f ms  glob %8.2f ms  %.1fx\n",
			q.name, kept, n, r.FilesRatio, r.RocklakeMS, r.GlobMS, r.Speedup)
		out = append(out, r)
	}
	return out, nil
}
