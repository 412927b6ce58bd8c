// Command partial measures reading only what a plan kept inside big
// files: an events table of -files files of -rows rows each, written the
// way engines write at scale (arrow-go: row groups of -rowgroup rows,
// data pages of -page bytes — some 10,000 rows of an 8-byte column — the
// page index, snappy), with a sorted id, a clustered ts (one per second,
// jittered by up to a minute), a random user_id, an amount and a
// low-cardinality kind. Each query (a lookup by id, four over ranges of
// ts, the last two aggregated in part from statistics) runs -runs times,
// interleaved, through
// rocklake (the cost rule choosing each file's read), rocklake with the
// partial scan off (every kept file whole), DuckDB over the glob and
// DuckDB over exactly the files rocklake kept; medians and the bytes each
// read (the process's read bytes, /proc/self/io rchar, around the query)
// are printed and written as JSON (-json). Answers are checked equal.
//
//	go run ./bench/partial -json bench/results/partial.json
//	go run ./bench/partial -files 20 -rows 5000000 -dir /tmp/bp   # the size
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/rocklake/rocklake/bench/internal/bigevents"
	"github.com/rocklake/rocklake/bench/internal/results"
	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/ingest"
)

// Result is one query's medians.
type Result struct {
	Query string `json:"query"`
	SQL   string `json:"sql"`
	Rows  int64  `json:"matching_rows"`
	// rocklake with the cost rule; how it read the kept files
	RocklakeMS    float64 `json:"rocklake_ms"`
	RocklakeBytes int64   `json:"rocklake_bytes"`
	Reads         string  `json:"rocklake_reads"`
	// rows whose part of the answer came from statistics (a split count,
	// min and max)
	StatsRows int64  `json:"rocklake_rows_from_statistics,omitempty"`
	Phases    string `json:"rocklake_phases"` // of the median run
	// rocklake with every kept file read whole
	WholeMS    float64 `json:"rocklake_whole_files_ms"`
	WholeBytes int64   `json:"rocklake_whole_files_bytes"`
	GlobMS     float64 `json:"glob_ms"`
	GlobBytes  int64   `json:"glob_bytes"`
	KeptMS     float64 `json:"duckdb_kept_files_ms"`
	KeptBytes  int64   `json:"duckdb_kept_files_bytes"`
	KeptFiles  int     `json:"kept_files"`
	// the compressed bytes of the pages, of every column, that hold the
	// matching rows (offset index), for the lookup and the narrow range
	MatchPageBytes int64 `json:"match_page_bytes,omitempty"`
}

// Setup is what was run.
type Setup struct {
	Files       int      `json:"files"`
	Rows        int      `json:"rows_per_file"`
	RowGroup    int      `json:"row_group_rows"`
	PageBytes   int      `json:"page_bytes"`
	Runs        int      `json:"runs"`
	DataBytes   int64    `json:"data_bytes"`
	Results     []Result `json:"results"`
	GeneratedIn float64  `json:"generated_seconds"`
}

const tsBase = int64(1_704_067_200_000_000) // 2024-01-01 00:00:00 UTC, µs

func main() {
	files := flag.Int("files", 4, "files")
	rows := flag.Int("rows", 4_000_000, "rows per file")
	rg := flag.Int("rowgroup", 1_000_000, "rows per row group")
	page := flag.Int("page", 80_000, "data page size, bytes (arrow-go cuts pages by uncompressed bytes)")
	runs := flag.Int("runs", 7, "timed runs per query and contender")
	dir := flag.String("dir", "", "where the data set lives (kept and reused; default: a temporary directory)")
	jsonOut := flag.String("json", "", "write the results here as JSON")
	filters := flag.Bool("filters", false, "let rocklake add build membership filters (id and user_id: read by every plan)")
	flag.Parse()
	root := *dir
	if root == "" {
		var err error
		if root, err = os.MkdirTemp("", "rocklake-bench-partial-"); err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(root)
	}
	data := filepath.Join(root, fmt.Sprintf("events-%d-%d-%d-%d", *files, *rows, *rg, *page))
	t0 := time.Now()
	if err := generate(data, *files, *rows, *rg, *page); err != nil {
		log.Fatal(err)
	}
	setup := Setup{Files: *files, Rows: *rows, RowGroup: *rg, PageBytes: *page, Runs: *runs, GeneratedIn: time.Since(t0).Seconds()}
	ents, _ := filepath.Glob(filepath.Join(data, "*.parquet"))
	for _, e := range ents {
		if st, err := os.Stat(e); err == nil {
			setup.DataBytes += st.Size()
		}
	}
	fmt.Printf("== %d files x %d rows, row groups of %d, pages of %d bytes, %d MB (%s)\n", *files, *rows, *rg, *page, setup.DataBytes>>20, data)
	res, err := run(root, data, *files, *rows, *runs, *filters)
	if err != nil {
		log.Fatal(err)
	}
	setup.Results = res
	if err := results.WriteJSON(*jsonOut, setup); err != nil {
		log.Fatal(err)
	}
}

// generate writes the files unless data is marked COMPLETE.
func generate(data string, files, rows, rg, page int) error {
	if _, err := os.Stat(filepath.Join(data, "COMPLETE")); err == nil {
		return nil
	}
	os.RemoveAll(data)
	if err := os.MkdirAll(data, 0o755); err != nil {
		return err
	}
	for f := range files {
		path := filepath.Join(data, fmt.Sprintf("part-%03d.parquet", f))
		if err := bigevents.Write(path, bigevents.File{FirstID: int64(f) * int64(rows), Rows: rows, RowGroup: rg, PageBytes: page,
			TSBase: tsBase, Seed: uint64(f)}); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "  wrote %s\n", path)
	}
	return os.WriteFile(filepath.Join(data, "COMPLETE"), nil, 0o644)
}

func ts(sec int64) string {
	return time.UnixMicro(tsBase + sec*1_000_000).UTC().Format("2006-01-02 15:04:05")
}

func run(root, data string, files, rows, runs int, filters bool) ([]Result, error) {
	ctx := context.Background()
	lakeDir := filepath.Join(root, "lake")
	os.RemoveAll(lakeDir)
	cat, err := catalog.Create(lakeDir, catalog.Options{})
	if err != nil {
		return nil, err
	}
	defer cat.Close()
	if _, err := ingest.Add(cat, "events", []string{data}, ingest.Options{Create: true, NoAutoFilters: !filters}); err != nil {
		return nil, err
	}
	eng, err := engine.New(cat)
	if err != nil {
		return nil, err
	}
	defer eng.Close()
	// DuckDB for the glob and one for the kept files, so that neither's
	// caches serve the other.
	glob, err := engine.Open("")
	if err != nil {
		return nil, err
	}
	defer glob.Close()
	keptDB, err := engine.Open("")
	if err != nil {
		return nil, err
	}
	defer keptDB.Close()

	total := int64(files) * int64(rows)
	mid := total/2 + 12_345
	// A query of one row has no ORDER BY: count, min and max alone are
	// then split between statistics and DuckDB (engine/split.go).
	queries := []struct {
		name, sel, where string
		oneRow           bool
	}{
		{"point lookup by id", "id, ts, user_id, amount, kind", fmt.Sprintf("id = %d", mid), false},
		{"narrow ts range (10 minutes)", "count(*), sum(amount::DECIMAL(18,2)), min(id), max(id)", fmt.Sprintf("ts >= '%s' AND ts < '%s'", ts(mid), ts(mid+600)), false},
		{"broad: last 90% of ts", "count(*), sum(amount::DECIMAL(18,2))", fmt.Sprintf("ts >= '%s'", ts(total/10)), false},
		{"count: 30% of ts", "count(*)", fmt.Sprintf("ts >= '%s' AND ts < '%s'", ts(mid-total*15/100), ts(mid+total*15/100)), true},
		{"count, min, max: 30% of ts", "count(*), min(id), max(id)", fmt.Sprintf("ts >= '%s' AND ts < '%s'", ts(mid-total*15/100), ts(mid+total*15/100)), true},
	}
	globSrc := fmt.Sprintf("read_parquet('%s')", filepath.Join(data, "*.parquet"))
	var out []Result
	for _, q := range queries {
		sqlFor := func(src string) string {
			if q.oneRow {
				return fmt.Sprintf("SELECT %s FROM %s WHERE %s", q.sel, src, q.where)
			}
			return fmt.Sprintf("SELECT %s FROM %s WHERE %s ORDER BY ALL", q.sel, src, q.where)
		}
		lake := sqlFor("events")
		res, err := eng.Query(ctx, lake, engine.QueryOptions{Snapshot: catalog.Latest})
		if err != nil {
			return nil, err
		}
		// The kept files, every one listed: a query answered in part from
		// statistics lists only those DuckDB read.
		full, err := eng.Query(ctx, lake, engine.QueryOptions{Snapshot: catalog.Latest, NoMetadataAnswers: true})
		if err != nil {
			return nil, err
		}
		var kept []string
		for _, kf := range full.Tables[0].Plan.KeptFiles {
			kept = append(kept, "'"+kf.Path+"'")
		}
		keptSrc := "read_parquet([" + strings.Join(kept, ", ") + "])"
		r := Result{Query: q.name, SQL: lake, KeptFiles: len(kept), Reads: describeReads(res.Tables[0].Reads), StatsRows: res.StatsRows}
		var tr, tw, tg, tk []time.Duration
		var br, bw, bg, bk []int64
		var phases []string
		for i := range runs + 1 {
			b0, t0 := results.ReadBytes(), time.Now()
			res, err := eng.Query(ctx, lake, engine.QueryOptions{Snapshot: catalog.Latest})
			if err != nil {
				return nil, err
			}
			dr, dbr := time.Since(t0), results.ReadBytes()-b0
			var ph []string
			for _, p := range res.Phases {
				ph = append(ph, fmt.Sprintf("%s %.2f ms", p.Name, float64(p.Time.Microseconds())/1000))
			}
			b0, t0 = results.ReadBytes(), time.Now()
			whole, err := eng.Query(ctx, lake, engine.QueryOptions{Snapshot: catalog.Latest, Partial: engine.PartialOff})
			if err != nil {
				return nil, err
			}
			dw, dbw := time.Since(t0), results.ReadBytes()-b0
			b0, t0 = results.ReadBytes(), time.Now()
			g, err := results.DuckDBAnswer(glob, sqlFor(globSrc))
			if err != nil {
				return nil, err
			}
			dg, dbg := time.Since(t0), results.ReadBytes()-b0
			b0, t0 = results.ReadBytes(), time.Now()
			k, err := results.DuckDBAnswer(keptDB, sqlFor(keptSrc))
			if err != nil {
				return nil, err
			}
			dk, dbk := time.Since(t0), results.ReadBytes()-b0
			a, w := results.Answer(res.Rows), results.Answer(whole.Rows)
			if !results.SameAnswer(a, g) || !results.SameAnswer(w, g) || k != g {
				return nil, fmt.Errorf("%s: answers differ: rocklake %q, whole files %q, glob %q, kept files %q", q.name, a, w, g, k)
			}
			if i == 0 {
				continue // warm-up
			}
			tr, tw, tg, tk = append(tr, dr), append(tw, dw), append(tg, dg), append(tk, dk)
			br, bw, bg, bk = append(br, dbr), append(bw, dbw), append(bg, dbg), append(bk, dbk)
			phases = append(phases, strings.Join(ph, ", "))
		}
		r.RocklakeMS, r.WholeMS, r.GlobMS, r.KeptMS = results.MedianMS(tr), results.MedianMS(tw), results.MedianMS(tg), results.MedianMS(tk)
		r.RocklakeBytes, r.WholeBytes, r.GlobBytes, r.KeptBytes = median(br), median(bw), median(bg), median(bk)
		r.Phases = phases[medianIndex(tr)]
		var n int64
		if err := glob.QueryRow(fmt.Sprintf("SELECT count(*) FROM %s WHERE %s", globSrc, q.where)).Scan(&n); err != nil {
			return nil, err
		}
		r.Rows = n
		if n > 0 && n < 1_000_000 {
			if r.MatchPageBytes, err = matchPageBytes(glob, globSrc, q.where); err != nil {
				return nil, err
			}
		}
		fmt.Printf("%-30s %9d rows (pages holding them: %s)  rocklake %8.2f ms %10s  whole files %8.2f ms %10s  DuckDB glob %8.2f ms %10s  DuckDB kept files (%d) %8.2f ms %10s  kept/rocklake %5.2fx\n      reads: %s (rows from statistics: %d)\n      rocklake phases: %s\n",
			q.name, n, mb(r.MatchPageBytes), r.RocklakeMS, mb(r.RocklakeBytes), r.WholeMS, mb(r.WholeBytes), r.GlobMS, mb(r.GlobBytes), r.KeptFiles, r.KeptMS, mb(r.KeptBytes), r.KeptMS/r.RocklakeMS, r.Reads, r.StatsRows, r.Phases)
		out = append(out, r)
	}
	return out, nil
}

// medianIndex is the index of the median of ds.
func medianIndex(ds []time.Duration) int {
	idx := make([]int, len(ds))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return ds[idx[a]] < ds[idx[b]] })
	return idx[len(idx)/2]
}

// matchPageBytes sums, over every column, the compressed sizes of the data
// pages holding a row that matches where (found by DuckDB with
// file_row_number; the page locations from the offset index).
func matchPageBytes(db *sql.DB, src, where string) (int64, error) {
	src = strings.TrimSuffix(src, ")") + ", file_row_number = true, filename = true)"
	rows, err := db.Query(fmt.Sprintf("SELECT filename, file_row_number FROM %s WHERE %s", src, where))
	if err != nil {
		return 0, err
	}
	byFile := map[string][]int64{}
	for rows.Next() {
		var f string
		var r int64
		if err := rows.Scan(&f, &r); err != nil {
			rows.Close()
			return 0, err
		}
		byFile[f] = append(byFile[f], r)
	}
	rows.Close()
	var total int64
	for f, rs := range byFile {
		rdr, err := file.OpenParquetFile(f, false)
		if err != nil {
			return 0, err
		}
		md := rdr.MetaData()
		first := int64(0)
		for g := range md.NumRowGroups() {
			n := md.RowGroup(g).NumRows()
			rg, err := rdr.GetPageIndexReader().RowGroup(g)
			if err != nil || rg == nil {
				rdr.Close()
				return 0, fmt.Errorf("%s: no page index", f)
			}
			for c := range md.NumColumns() {
				oi, err := rg.GetOffsetIndex(c)
				if err != nil || oi == nil {
					rdr.Close()
					return 0, fmt.Errorf("%s: no offset index", f)
				}
				locs := oi.GetPageLocations()
				for k, pl := range locs {
					lo := first + pl.FirstRowIndex
					hi := first + n
					if k+1 < len(locs) {
						hi = first + locs[k+1].FirstRowIndex
					}
					for _, r := range rs {
						if r >= lo && r < hi {
							total += int64(pl.CompressedPageSize)
							break
						}
					}
				}
			}
			first += n
		}
		rdr.Close()
	}
	return total, nil
}

func mb(n int64) string { return fmt.Sprintf("%.2f MB", float64(n)/1e6) }

func median(xs []int64) int64 {
	s := append([]int64(nil), xs...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s[len(s)/2]
}

func describeReads(reads []engine.FileRead) string {
	var parts []string
	for _, rd := range reads {
		s := fmt.Sprintf("%s %s (%s)", filepath.Base(rd.Path), rd.How, rd.Why)
		if rd.How != engine.ReadWhole {
			s += fmt.Sprintf(": %d of %d rows (%d handed to DuckDB), %d ranges, %d row groups, %d of %d bytes", rd.Rows, rd.FileRows, rd.Handed, rd.Ranges, rd.RowGroups, rd.Bytes, rd.FileBytes)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}
