package main

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"syscall"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/rocklake/rocklake/bench/internal/events"
	"github.com/rocklake/rocklake/bench/internal/results"
	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/pqmeta"
	"github.com/rocklake/rocklake/storage"
)

// eventsRuns writes the events table once, then alternates, runs times,
// the floor (every footer read, by ingest's number of workers) and a
// registration into a new catalog with membership filters on user_id.
// keep, when set, holds the data across runs of the bench (written once
// per size); the catalogs go with a temporary directory either way.
func eventsRuns(files, rows, runs int, cpuprofile, out, keep string) error {
	dir, err := os.MkdirTemp("", "rocklake-bench-ingest-events-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	data := filepath.Join(dir, "data")
	if keep != "" {
		data = filepath.Join(keep, fmt.Sprintf("events-%d-%d", files, rows))
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return err
	}
	start := time.Now()
	if err := events.Generate(db, data, files, rows); err != nil {
		db.Close()
		return err
	}
	db.Close()
	fmt.Printf("wrote %d events files of %d rows in %.1fs\n", files, rows, time.Since(start).Seconds())
	paths := make([]string, files)
	for h := range paths {
		paths[h] = events.File(data, h)
	}
	stop, err := results.Profile(cpuprofile)
	if err != nil {
		return err
	}
	defer stop()
	var floor, add []time.Duration
	var steps []map[string]float64 // each add's steps, in ms
	for run := range runs {
		t := time.Now()
		if err := readFooters(paths, 2*runtime.GOMAXPROCS(0)); err != nil {
			return err
		}
		floor = append(floor, time.Since(t))
		c, err := catalog.Create(filepath.Join(dir, fmt.Sprintf("lake%d", run)), catalog.Options{})
		if err != nil {
			return err
		}
		// Each add starts with no dirty pages of the runs before it (their
		// catalogs) waiting to be written: its commit's fsync waits for
		// its own writes only.
		syscall.Sync()
		t = time.Now()
		res, err := ingest.Add(c, "events", []string{data}, ingest.Options{Create: true, FilterColumns: []string{"user_id"}})
		took := time.Since(t)
		c.Close()
		if err != nil {
			return err
		}
		if res.Files != files {
			return fmt.Errorf("registered %d files of %d", res.Files, files)
		}
		add = append(add, took)
		st := res.Steps
		steps = append(steps, map[string]float64{"list": results.MS(st.List), "footers": results.MS(st.Footers), "filters": results.MS(st.Filters), "commit": results.MS(st.Commit)})
		fmt.Printf("run %d: footers alone %.0f files/s (%.2fs); add with filters %.0f files/s (%.2fs: list %.2f, footers %.2f, filters %.2f, commit %.2f)\n", run+1,
			float64(files)/floor[run].Seconds(), floor[run].Seconds(), float64(files)/took.Seconds(), took.Seconds(),
			st.List.Seconds(), st.Footers.Seconds(), st.Filters.Seconds(), st.Commit.Seconds())
	}
	median := func(ds []time.Duration) time.Duration {
		s := append([]time.Duration(nil), ds...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		return s[len(s)/2]
	}
	mf, ma := median(floor), median(add)
	fmt.Printf("median: footers alone %.0f files/s, add with filters %.0f files/s (%.2fx the floor's time); the first add (a new process's) %.0f files/s\n",
		float64(files)/mf.Seconds(), float64(files)/ma.Seconds(), ma.Seconds()/mf.Seconds(), float64(files)/add[0].Seconds())
	if out == "" {
		return nil
	}
	return results.WriteJSON(out, map[string]any{
		"files": files, "rows_per_file": rows, "runs": runs, "filter_columns": []string{"user_id"},
		"floor_ms": msList(floor), "add_ms": msList(add), "add_steps_ms": steps,
		"floor_files_per_s": float64(files) / mf.Seconds(), "add_files_per_s": float64(files) / ma.Seconds(),
		"add_vs_floor": ma.Seconds() / mf.Seconds(), "first_add_files_per_s": float64(files) / add[0].Seconds(),
	})
}

func msList(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = results.MS(d)
	}
	return out
}

// readFooters reads every file's footer with workers goroutines, as
// ingest's workers do, and nothing else.
func readFooters(paths []string, workers int) error {
	return storage.ForEach(len(paths), workers, func(i int) error {
		_, err := pqmeta.Read(paths[i], pqmeta.FileIdentity{})
		return err
	})
}
