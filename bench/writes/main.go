// Command writes measures SQL writes, side by side with DuckDB in the same
// run:
//
//   - bulk: INSERT INTO t SELECT * FROM read_parquet(src) of -rows rows
//     into a table sorted by a timestamp (files cut at 1,000,000 rows, page
//     indexes, statistics, membership filters, the check of the rows
//     written, the commit), against DuckDB's own COPY (SELECT * FROM
//     read_parquet(src) ORDER BY ts) TO 'x.parquet' (zstd) of the same rows;
//   - small: -small single-row INSERTs into a table, time per insert, then
//     a selective query over the table they made, against the same rows
//     written by one INSERT.
//
// Each side runs -runs times, alternating; the medians and their ratio are
// printed and written as JSON.
//
//	go run ./bench/writes -rows 10000000 -small 10000 -json bench/results/writes.json
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/rocklake/rocklake"
)

func main() {
	rows := flag.Int("rows", 10_000_000, "rows of the bulk insert")
	small := flag.Int("small", 10_000, "single-row inserts")
	runs := flag.Int("runs", 3, "runs of each side of the bulk insert")
	queries := flag.Int("queries", 21, "runs of the selective query on each table")
	out := flag.String("json", "", "write the results to this file")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the bulk inserts to this file")
	smallProfile := flag.String("small-cpuprofile", "", "write a CPU profile of the single-row inserts to this file")
	flag.Parse()
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "rocklake-bench-writes-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	duck, err := sql.Open("duckdb", "")
	if err != nil {
		log.Fatal(err)
	}
	defer duck.Close()
	src := filepath.Join(dir, "src.parquet")
	// Rows in no order of ts: the sort is work for both sides.
	if _, err := duck.Exec(fmt.Sprintf(`COPY (SELECT i AS id, TIMESTAMP '2024-01-01' + to_seconds((hash(i) %% 31536000)::BIGINT) AS ts,
		'kind' || (i %% 17)::VARCHAR AS kind, md5(i::VARCHAR)::UUID AS user_id, (hash(i, 2) %% 100000)::DOUBLE / 100 AS v
		FROM range(%d) r(i)) TO '%s' (FORMAT parquet)`, *rows, src)); err != nil {
		log.Fatal(err)
	}

	var ours, theirs []time.Duration
	var files int
	for run := range *runs {
		base := filepath.Join(dir, fmt.Sprintf("duckdb-%d.parquet", run))
		start := time.Now()
		if _, err := duck.Exec(fmt.Sprintf("COPY (SELECT * FROM read_parquet('%s') ORDER BY ts) TO '%s' (FORMAT parquet, COMPRESSION zstd)", src, base)); err != nil {
			log.Fatal(err)
		}
		theirs = append(theirs, time.Since(start))
		os.Remove(base)

		lake, err := rocklake.Create(ctx, filepath.Join(dir, fmt.Sprintf("lake-%d", run)), rocklake.OpenOptions{})
		if err != nil {
			log.Fatal(err)
		}
		mustExec(ctx, lake, "CREATE TABLE t (id BIGINT, ts TIMESTAMP, kind VARCHAR, user_id UUID, v DOUBLE)")
		a, _ := rocklake.ParseAlteration([]string{"set", "sorted", "by", "ts"})
		if _, err := lake.AlterTable(ctx, "t", a); err != nil {
			log.Fatal(err)
		}
		if *cpuprofile != "" {
			f, err := os.Create(*cpuprofile)
			if err != nil {
				log.Fatal(err)
			}
			pprof.StartCPUProfile(f)
		}
		start = time.Now()
		res := mustExec(ctx, lake, fmt.Sprintf("INSERT INTO t SELECT * FROM read_parquet('%s')", src))
		ours = append(ours, time.Since(start))
		if *cpuprofile != "" {
			pprof.StopCPUProfile()
		}
		files = res.Files
		lake.Close()
		os.RemoveAll(filepath.Join(dir, fmt.Sprintf("lake-%d", run)))
		os.RemoveAll(filepath.Join(dir, fmt.Sprintf("lake-%d.files", run)))
		fmt.Printf("bulk run %d: DuckDB COPY %.2fs, rocklake INSERT %.2fs (%d files)\n", run+1, theirs[run].Seconds(), ours[run].Seconds(), files)
	}
	bulkOurs, bulkTheirs := median(ours), median(theirs)
	fmt.Printf("bulk: %d rows, median DuckDB %.2fs, rocklake %.2fs: %.2fx\n", *rows, bulkTheirs.Seconds(), bulkOurs.Seconds(), bulkOurs.Seconds()/bulkTheirs.Seconds())

	lake, err := rocklake.Create(ctx, filepath.Join(dir, "small"), rocklake.OpenOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer lake.Close()
	mustExec(ctx, lake, "CREATE TABLE s (id BIGINT, v VARCHAR)")
	mustExec(ctx, lake, "CREATE TABLE one (id BIGINT, v VARCHAR)")
	each := make([]time.Duration, *small)
	if *smallProfile != "" {
		f, err := os.Create(*smallProfile)
		if err != nil {
			log.Fatal(err)
		}
		pprof.StartCPUProfile(f)
	}
	start := time.Now()
	for i := range *small {
		t0 := time.Now()
		mustExec(ctx, lake, fmt.Sprintf("INSERT INTO s VALUES (%d, 'value %d')", i, i))
		each[i] = time.Since(t0)
		if (i+1)%1000 == 0 {
			fmt.Printf("small: %d inserts, %.1f ms each so far\n", i+1, float64(time.Since(start).Milliseconds())/float64(i+1))
		}
	}
	total := time.Since(start)
	if *smallProfile != "" {
		pprof.StopCPUProfile()
	}
	mustExec(ctx, lake, fmt.Sprintf("INSERT INTO one SELECT i, 'value ' || i FROM range(%d) r(i)", *small))
	sfiles, err := lake.Files(ctx, "s", rocklake.ReadOptions{})
	if err != nil {
		log.Fatal(err)
	}
	query := func(table string) time.Duration {
		var ds []time.Duration
		for q := range *queries {
			t0 := time.Now()
			res, err := lake.Query(ctx, fmt.Sprintf("SELECT v FROM %s WHERE id = %d", table, (q*7919)%*small), rocklake.QueryOptions{})
			if err != nil || len(res.Rows) != 1 {
				log.Fatalf("%s: %v %v", table, err, res)
			}
			ds = append(ds, time.Since(t0))
		}
		return median(ds)
	}
	var qs, q1 []time.Duration
	for range 3 {
		qs, q1 = append(qs, query("s")), append(q1, query("one"))
	}
	qSmall, qOne := median(qs), median(q1)
	fmt.Printf("small: %d single-row inserts, %.2f ms each (median %.2f ms), %d live files; selective query %.2f ms vs %.2f ms on one file: %.2fx\n",
		*small, float64(total.Microseconds())/1000/float64(*small), float64(median(each).Microseconds())/1000, len(sfiles),
		float64(qSmall.Microseconds())/1000, float64(qOne.Microseconds())/1000, qSmall.Seconds()/qOne.Seconds())

	if *out != "" {
		b, _ := json.MarshalIndent(map[string]any{
			"bulk": map[string]any{"rows": *rows, "runs": *runs, "files": files,
				"duckdb_copy_seconds": secs(theirs), "rocklake_insert_seconds": secs(ours),
				"duckdb_median_seconds": bulkTheirs.Seconds(), "rocklake_median_seconds": bulkOurs.Seconds(),
				"ratio": bulkOurs.Seconds() / bulkTheirs.Seconds()},
			"small": map[string]any{"inserts": *small, "seconds": total.Seconds(), "median_insert_ms": float64(median(each).Microseconds()) / 1000,
				"live_files": len(sfiles), "query_ms": float64(qSmall.Microseconds()) / 1000, "one_file_query_ms": float64(qOne.Microseconds()) / 1000,
				"query_ratio": qSmall.Seconds() / qOne.Seconds()},
		}, "", "  ")
		if err := os.WriteFile(*out, append(b, '\n'), 0o644); err != nil {
			log.Fatal(err)
		}
	}
}

func mustExec(ctx context.Context, lake *rocklake.Lake, q string) *rocklake.WriteResult {
	res, err := lake.Exec(ctx, q, rocklake.ExecOptions{})
	if err != nil {
		log.Fatalf("%s: %v", q, err)
	}
	if res.MergeError != "" {
		log.Fatalf("%s: merge: %s", q, res.MergeError)
	}
	return res
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func secs(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = d.Seconds()
	}
	return out
}
