// Command deletes measures a DELETE of one user id in a table of many
// files, side by side in one run with two baselines:
//
//   - rocklake: DELETE FROM events WHERE user_id = u, planned with every
//     statistic (min/max, bloom and membership filters);
//   - min/max only: the same DELETE planned from file min/max alone (what
//     a DuckLake or Iceberg planner has), which keeps every file whose
//     range holds u;
//   - the oracle: DuckDB rewriting exactly the files that hold u (found
//     beforehand by a full scan, not timed), each into a new file without
//     u, with no catalog, statistics, filters or check.
//
// The table is -files files of -rows rows in all, in time order, user ids
// random (so min/max cannot tell files apart). rocklake and the oracle
// delete the same -runs ids (the oracle from the files as written, into
// files of its own), min/max only -runs others, alternating; files opened,
// files rewritten (or, with -mode merge-on-read, delete files written) and
// time are printed as medians, rocklake's time over the oracle's as the
// median of the per-id ratios, and written as JSON. -cpuprofile profiles
// -runs more of rocklake's deletes; -queryprofile the selective queries.
//
// With -mode merge-on-read it then deletes a tenth of every file's rows
// (one delete file per data file) and times selective queries, median of
// -runs, before and after rocklake fold, side by side.
//
//	go run ./bench/deletes -files 10000 -rows 20000000 -json bench/results/deletes.json
//	go run ./bench/deletes -files 10000 -rows 20000000 -mode merge-on-read -json bench/results/deletes-mor.json
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
	"strings"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/maintain"
	"github.com/rocklake/rocklake/prune"
)

func main() {
	files := flag.Int("files", 10_000, "data files")
	rows := flag.Int("rows", 20_000_000, "rows in all")
	users := flag.Int("users", 2_000_000, "distinct user ids")
	runs := flag.Int("runs", 3, "ids each side deletes")
	queryRuns := flag.Int("query-runs", 3, "times each selective query runs on each side (merge-on-read), alternating")
	mode := flag.String("mode", catalog.CopyOnWrite, "the table's delete_mode: copy-on-write or merge-on-read")
	out := flag.String("json", "", "write the results to this file")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of rocklake's one-id deletes to this file")
	queryProfile := flag.String("queryprofile", "", "write a CPU profile of the selective queries with delete files (merge-on-read) to this file")
	flag.Parse()
	var prof *os.File
	if *cpuProfile != "" {
		var err error
		if prof, err = os.Create(*cpuProfile); err != nil {
			log.Fatal(err)
		}
		defer prof.Close()
	}
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "rocklake-bench-deletes-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	duck, err := sql.Open("duckdb", "")
	if err != nil {
		log.Fatal(err)
	}
	defer duck.Close()

	src := filepath.Join(dir, "events")
	start := time.Now()
	per := (*rows + *files - 1) / *files
	if _, err := duck.Exec(fmt.Sprintf(`COPY (SELECT i AS id, TIMESTAMP '2024-01-01' + to_seconds(i) AS ts,
		(hash(i) %% %d)::BIGINT AS user_id, 'kind' || (i %% 17)::VARCHAR AS kind, (hash(i, 2) %% 100000)::DOUBLE / 100 AS v,
		i // %d AS f FROM range(%d) r(i)) TO '%s' (FORMAT parquet, PARTITION_BY (f), FILENAME_PATTERN 'part')`, *users, per, *rows, src)); err != nil {
		log.Fatal(err)
	}
	// Flat, one file per former partition: key=value directories would make
	// f a Hive partition column.
	parts, err := filepath.Glob(filepath.Join(src, "f=*", "*.parquet"))
	if err != nil {
		log.Fatal(err)
	}
	flat := filepath.Join(dir, "flat")
	if err := os.MkdirAll(flat, 0o755); err != nil {
		log.Fatal(err)
	}
	for _, p := range parts {
		if err := os.Rename(p, filepath.Join(flat, filepath.Base(filepath.Dir(p))[2:]+".parquet")); err != nil {
			log.Fatal(err)
		}
	}
	src = flat
	fmt.Printf("wrote %d rows in %d files in %.1fs\n", *rows, len(parts), time.Since(start).Seconds())

	c, err := catalog.Create(filepath.Join(dir, "lake"), catalog.Options{DataRoot: dir})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	start = time.Now()
	if _, err := ingest.Add(c, "events", []string{src}, ingest.Options{Create: true, FilterColumns: []string{"user_id"}, Owner: catalog.OwnerTaken}); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("registered in %.1fs\n", time.Since(start).Seconds())
	mor := *mode == catalog.MergeOnRead
	{
		// Set either way: a table that asks for neither mode deletes by file.
		tx, err := c.Begin()
		if err != nil {
			log.Fatal(err)
		}
		a, err := catalog.ParseAlteration([]string{"set", "option", "delete_mode", "=", *mode})
		if err != nil {
			log.Fatal(err)
		}
		tx.AlterTable("events", a)
		if _, err := tx.Commit(); err != nil {
			log.Fatal(err)
		}
	}
	e, err := engine.New(c)
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	// Ids that exist: rocklake deletes ids[2*run], which the oracle also
	// deletes (into files of its own, from the files as written: the same
	// rows, the same files); min/max only deletes ids[2*run+1]. With
	// -cpuprofile, rocklake then deletes -runs more under the profiler.
	// The last id is no side's: the selective query's, so that it reads
	// rows that are there (an id deleted by file keeps its files in the
	// membership filters until folded, which would time pruning, not
	// reading).
	want := 2**runs + 1
	if *cpuProfile != "" {
		want += *runs
	}
	var ids []int64
	for k := 0; len(ids) < want; k++ {
		var n int64
		u := int64((k*7919 + 13) % *users)
		if err := duck.QueryRow(fmt.Sprintf("SELECT count(*) FROM read_parquet('%s/*.parquet') WHERE user_id = %d", src, u)).Scan(&n); err != nil {
			log.Fatal(err)
		}
		if n > 0 {
			ids = append(ids, u)
		}
	}
	holders := func(u int64) []string {
		r, err := duck.Query(fmt.Sprintf("SELECT DISTINCT filename FROM read_parquet('%s/*.parquet', filename = true) WHERE user_id = %d ORDER BY 1", src, u))
		if err != nil {
			log.Fatal(err)
		}
		defer r.Close()
		var out []string
		for r.Next() {
			var f string
			r.Scan(&f)
			out = append(out, f)
		}
		return out
	}

	type side struct {
		name   string
		opened []int
		wrote  []int
		truth  []int // files that hold the id
		times  []time.Duration
	}
	ours, minmax, oracle := &side{name: "rocklake"}, &side{name: "min/max only"}, &side{name: "oracle"}
	del := func(s *side, u int64, po prune.Options) {
		q := fmt.Sprintf("DELETE FROM events WHERE user_id = %d", u)
		t0 := time.Now()
		res, err := maintain.Write(ctx, e, q, maintain.WriteOptions{Query: engine.QueryOptions{Snapshot: catalog.Latest, Prune: po}, NoMerge: true})
		d := time.Since(t0)
		if err != nil {
			log.Fatalf("%s: %v", q, err)
		}
		s.times = append(s.times, d)
		s.opened = append(s.opened, res.Query.Tables[0].Plan.Files.Kept)
		s.wrote = append(s.wrote, res.FilesRemoved+res.DeleteFiles)
	}
	// The files that hold each id, before any delete.
	truth := map[int64][]string{}
	for _, u := range ids {
		truth[u] = holders(u)
	}
	var perID []float64 // rocklake's time over the oracle's, for the same id
	for run := range *runs {
		del(ours, ids[2*run], prune.Options{})
		del(minmax, ids[2*run+1], prune.Options{NoFilters: true, NoBloom: true})
		ours.truth, minmax.truth = append(ours.truth, len(truth[ids[2*run]])), append(minmax.truth, len(truth[ids[2*run+1]]))
		u := ids[2*run]
		hs := truth[u]
		oracle.truth = append(oracle.truth, len(hs))
		t0 := time.Now()
		for i, h := range hs {
			if _, err := duck.Exec(fmt.Sprintf("COPY (SELECT * FROM read_parquet('%s') WHERE user_id <> %d) TO '%s' (FORMAT parquet, COMPRESSION zstd)",
				h, u, filepath.Join(dir, fmt.Sprintf("oracle-%d-%d.parquet", run, i)))); err != nil {
				log.Fatal(err)
			}
		}
		oracle.times = append(oracle.times, time.Since(t0))
		perID = append(perID, ms(ours.times[run])/ms(oracle.times[run]))
		oracle.opened, oracle.wrote = append(oracle.opened, len(hs)), append(oracle.wrote, len(hs))
		fmt.Printf("run %d: rocklake opened %d files (%d hold the id), rewrote %d, %.0f ms; min/max only opened %d (%d hold it), rewrote %d, %.0f ms; oracle %d files, %.0f ms\n", run+1,
			ours.opened[run], ours.truth[run], ours.wrote[run], ms(ours.times[run]), minmax.opened[run], minmax.truth[run], minmax.wrote[run], ms(minmax.times[run]), oracle.opened[run], ms(oracle.times[run]))
		if ours.wrote[run] != ours.truth[run] || minmax.wrote[run] != minmax.truth[run] {
			log.Fatalf("a delete rewrote other files than those holding its id")
		}
	}
	if *cpuProfile != "" {
		if err := pprof.StartCPUProfile(prof); err != nil {
			log.Fatal(err)
		}
		profiled := &side{name: "profiled"}
		for _, u := range ids[2**runs : len(ids)-1] {
			del(profiled, u, prune.Options{})
		}
		pprof.StopCPUProfile()
		fmt.Printf("profiled %d more deletes (median %.0f ms) into %s\n", *runs, ms(median(profiled.times)), *cpuProfile)
	}
	res := map[string]any{"files": *files, "rows": *rows, "users": *users, "runs": *runs, "delete_mode": *mode}
	for _, s := range []*side{ours, minmax, oracle} {
		res[strings.ReplaceAll(strings.ReplaceAll(s.name, "/", ""), " ", "_")] = map[string]any{
			"files_opened": s.opened, "files_rewritten": s.wrote, "files_holding_the_id": s.truth, "ms": msList(s.times),
			"median_files_opened": medianInt(s.opened), "median_ms": ms(median(s.times)),
		}
		fmt.Printf("%-13s median: %d files opened, %.0f ms\n", s.name, medianInt(s.opened), ms(median(s.times)))
	}
	// Files: each id's own holders are its oracle.
	var ratios []float64
	for i := range ours.opened {
		ratios = append(ratios, float64(ours.opened[i])/float64(max(1, ours.truth[i])))
	}
	slices.Sort(ratios)
	slices.Sort(perID)
	ro, rt := ratios[len(ratios)/2], perID[len(perID)/2]
	res["files_vs_oracle"], res["time_vs_oracle"] = ro, rt
	res["minmax_files_vs_rocklake"] = float64(medianInt(minmax.opened)) / float64(max(1, medianInt(ours.opened)))
	res["minmax_time_vs_rocklake"] = ms(median(minmax.times)) / ms(median(ours.times))
	fmt.Printf("rocklake vs oracle: %.2fx the files that hold the id, %.2fx the time (medians per id); min/max only vs rocklake: %.1fx the files, %.1fx the time\n",
		ro, rt, res["minmax_files_vs_rocklake"], res["minmax_time_vs_rocklake"])
	if mor {
		res["selective_queries"] = deletedVsFolded(ctx, e, ids, *queryRuns, *queryProfile)
	}
	if *out != "" {
		b, _ := json.MarshalIndent(res, "", "  ")
		if err := os.WriteFile(*out, append(b, '\n'), 0o644); err != nil {
			log.Fatal(err)
		}
	}
}

// deletedVsFolded deletes a tenth of every file's rows under
// merge-on-read, then times selective queries with the delete files
// applied and again after fold, alternating each query's runs.
func deletedVsFolded(ctx context.Context, e *engine.Engine, ids []int64, runs int, profile string) map[string]any {
	t0 := time.Now()
	r, err := maintain.Write(ctx, e, "DELETE FROM events WHERE hash(id, 7) % 10 = 0", maintain.WriteOptions{NoMerge: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("deleted %d rows (%d delete files) in %.1fs\n", r.Rows, r.DeleteFiles, time.Since(t0).Seconds())
	queries := []string{
		fmt.Sprintf("SELECT count(*), round(sum(v), 2) FROM events WHERE user_id = %d", ids[len(ids)-1]),
		"SELECT count(*), round(sum(v), 2) FROM events WHERE ts BETWEEN TIMESTAMP '2024-01-02' AND TIMESTAMP '2024-01-02 06:00:00'",
		"SELECT kind, count(*) FROM events WHERE id BETWEEN 5000000 AND 5100000 GROUP BY kind ORDER BY kind",
	}
	// phases collects each run's engine phases (parse, plan, bind,
	// execute), by name, to tell where a side's time goes.
	type phases map[string][]time.Duration
	time1 := func(q string, snap int64, ph phases) (time.Duration, string) {
		t0 := time.Now()
		res, err := e.Query(ctx, q, engine.QueryOptions{Snapshot: snap})
		if err != nil {
			log.Fatalf("%s: %v", q, err)
		}
		d := time.Since(t0)
		if ph != nil {
			var sum time.Duration
			for _, p := range res.Phases {
				ph[p.Name] = append(ph[p.Name], p.Time)
				sum += p.Time
			}
			ph["other"] = append(ph["other"], d-sum)
		}
		var text []string
		for _, row := range res.Rows {
			for _, v := range row {
				if v == nil {
					text = append(text, "NULL")
				} else {
					text = append(text, *v)
				}
			}
		}
		return d, strings.Join(text, "|")
	}
	deleted := r.Snapshot.ID
	t0 = time.Now()
	fr, err := maintain.FoldDeletes(ctx, e, "events")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("folded %d files in %.1fs\n", fr.FilesBefore, time.Since(t0).Seconds())
	folded := fr.Snapshot.ID
	out := map[string]any{"rows_deleted": r.Rows, "delete_files": r.DeleteFiles}
	if profile != "" {
		f, err := os.Create(profile)
		if err != nil {
			log.Fatal(err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
		for range runs {
			for _, q := range queries {
				time1(q, deleted, nil)
			}
		}
		pprof.StopCPUProfile()
		fmt.Printf("profiled %d runs of each query with delete files into %s\n", runs, profile)
	}
	var list []map[string]any
	for _, q := range queries {
		var withDeletes, after []time.Duration
		phD, phF := phases{}, phases{}
		for range runs {
			d, a := time1(q, deleted, phD)
			f, b := time1(q, folded, phF)
			if a != b {
				log.Fatalf("%s: %s with delete files, %s folded", q, a, b)
			}
			withDeletes, after = append(withDeletes, d), append(after, f)
		}
		ratio := ms(median(withDeletes)) / ms(median(after))
		fmt.Printf("%s: %.1f ms with delete files, %.1f ms folded (%.2fx)\n", q, ms(median(withDeletes)), ms(median(after)), ratio)
		medians := func(ph phases) map[string]float64 {
			m := map[string]float64{}
			var names []string
			for name, ds := range ph {
				m[name] = ms(median(ds))
				names = append(names, name)
			}
			slices.Sort(names)
			var parts []string
			for _, name := range names {
				parts = append(parts, fmt.Sprintf("%s %.1f", name, m[name]))
			}
			fmt.Printf("  phases (medians, ms): %s\n", strings.Join(parts, ", "))
			return m
		}
		list = append(list, map[string]any{"query": q, "with_delete_files_ms": msList(withDeletes), "folded_ms": msList(after),
			"median_with_delete_files_ms": ms(median(withDeletes)), "median_folded_ms": ms(median(after)), "ratio": ratio,
			"phases_with_delete_files_ms": medians(phD), "phases_folded_ms": medians(phF)})
	}
	out["queries"] = list
	return out
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func msList(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = ms(d)
	}
	return out
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func medianInt(xs []int) int {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
