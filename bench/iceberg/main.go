// Command iceberg measures what an Iceberg engine gains from rocklake's
// server-side scan planning: iceberg-go v0.7.0 (its REST catalog client and
// Arrow reader) reads the events table of -files hourly files (user_id a
// BIGINT: the benches' UBIGINT has no Iceberg type) through
// `rocklake serve`'s Iceberg REST catalog, each selective query planned
// locally (iceberg-go reads the manifests rocklake generated: file-level
// min/max) and remotely (rocklake plans: membership filters, row groups),
// the two modes alternating, -runs times each.
//
// Per query and mode it reports the medians of: the plan (PlanFiles), the
// files planned, the bytes the client process read to answer (rchar of
// /proc/self/io around ToArrowTable: manifests, plan responses and data
// files alike; the server runs in a process of its own) and the end-to-end
// time of the scan. Both modes' row counts are checked against DuckDB's
// over every file before any timing.
//
//	go run ./bench/iceberg -files 10000 -json bench/results/iceberg.json
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	ig "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/rocklake/rocklake/bench/internal/baseline"
	"github.com/rocklake/rocklake/bench/internal/events"
	"github.com/rocklake/rocklake/bench/internal/results"
	"github.com/rocklake/rocklake/engine"
)

// Result is one query in one planning mode.
type Result struct {
	Files        int     `json:"files"`
	RowsPerFile  int     `json:"rows_per_file"`
	Query        string  `json:"query"`
	Mode         string  `json:"mode"`
	Rows         int64   `json:"rows"`
	FilesPlanned int     `json:"files_planned"`
	PlanMS       float64 `json:"plan_ms"`
	ScanMS       float64 `json:"scan_ms"`
	BytesRead    int64   `json:"bytes_read"`
	Runs         int     `json:"runs"`
	// LoadTableMS is the first loadTable's time (rocklake writes the
	// manifests then), the same for every row of a run.
	LoadTableMS float64 `json:"load_table_ms"`
}

type query struct {
	name string
	expr ig.BooleanExpression
	sql  string
}

func main() {
	files := flag.Int("files", 10000, "hourly files in the events table")
	rows := flag.Int("rows", 2000, "rows per file")
	runs := flag.Int("runs", 5, "timed scans per query and mode (medians reported)")
	dir := flag.String("dir", "", "where the data set lives (kept and reused; default: a temporary directory)")
	bin := flag.String("bin", "", "the rocklake binary (default: built from this module)")
	jsonOut := flag.String("json", "", "write the results here as JSON")
	flag.Parse()
	if *runs < 1 || *files < 2 {
		log.Fatal("-runs at least 1, -files at least 2")
	}
	tmp, err := os.MkdirTemp("", "rocklake-bench-iceberg-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	fatalf := func(format string, args ...any) {
		os.RemoveAll(tmp)
		log.Fatalf(format, args...)
	}
	root := *dir
	if root == "" {
		root = filepath.Join(tmp, "data")
	}
	rocklake, err := baseline.Rocklake(*bin, tmp)
	if err != nil {
		fatalf("%v", err)
	}
	fmt.Printf("== %d files x %d rows\n", *files, *rows)
	lake, data, err := events.LakeAs(rocklake, root, *files, *rows, "BIGINT")
	if err != nil {
		fatalf("%v", err)
	}
	// Metadata is generated per table content: a fresh directory makes
	// the first loadTable write it, as a new table's would.
	meta := filepath.Join(tmp, "iceberg-metadata")
	port, err := results.FreePort()
	if err != nil {
		fatalf("%v", err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	srv := exec.Command(rocklake, "--catalog", lake, "serve", "--pg-listen", "127.0.0.1:0", "--http-listen", addr, "--iceberg-dir", meta)
	logf, err := os.Create(filepath.Join(tmp, "serve.log"))
	if err != nil {
		fatalf("%v", err)
	}
	srv.Stdout, srv.Stderr = logf, logf
	srv.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := srv.Start(); err != nil {
		fatalf("serve: %v", err)
	}
	defer func() { srv.Process.Signal(syscall.SIGTERM); srv.Wait() }()
	if err := results.WaitFor(addr, 2*time.Minute); err != nil {
		srv.Process.Kill()
		b, _ := os.ReadFile(logf.Name())
		fatalf("serve did not listen: %v\n%s", err, b)
	}

	duck, err := engine.Open("")
	if err != nil {
		fatalf("%v", err)
	}
	defer duck.Close()
	qs, err := queries(duck, data, *files)
	if err != nil {
		fatalf("%v", err)
	}

	ctx := context.Background()
	cat, err := rest.NewCatalog(ctx, "rocklake", "http://"+addr+"/iceberg")
	if err != nil {
		fatalf("connecting iceberg-go's REST catalog: %v", err)
	}
	t0 := time.Now()
	tbl, err := cat.LoadTable(ctx, table.Identifier{"main", "events"})
	if err != nil {
		fatalf("loadTable: %v", err)
	}
	load := time.Since(t0)
	fmt.Printf("first loadTable (metadata and manifests written): %.0f ms\n", results.MS(load))

	modes := []table.ScanPlanningMode{table.ScanPlanningLocal, table.ScanPlanningRemote}
	glob := fmt.Sprintf("read_parquet('%s')", filepath.Join(data, "*.parquet"))
	var out []Result
	fmt.Printf("%-22s %-7s %10s %8s %10s %12s %10s\n", "query", "mode", "rows", "files", "plan ms", "bytes read", "scan ms")
	for _, q := range qs {
		var want int64
		if err := duck.QueryRow("SELECT count(*) FROM " + glob + " WHERE " + q.sql).Scan(&want); err != nil {
			fatalf("%s: DuckDB: %v", q.name, err)
		}
		type acc struct {
			plans, scans []time.Duration
			bytes        []int64
			files        int
			rows         int64
		}
		accs := make([]acc, len(modes))
		for r := range *runs {
			for i := range modes {
				// The modes alternate, and take turns going first.
				m := (i + r) % len(modes)
				scan := tbl.Scan(table.WithRowFilter(q.expr), table.WithScanPlanningMode(modes[m]))
				t0 := time.Now()
				tasks, err := scan.PlanFiles(ctx)
				if err != nil {
					fatalf("%s, %s planning: %v", q.name, modes[m], err)
				}
				plan := time.Since(t0)
				b0, t1 := results.ReadBytes(), time.Now()
				at, err := scan.ToArrowTable(ctx)
				if err != nil {
					fatalf("%s, %s scan: %v", q.name, modes[m], err)
				}
				took, read := time.Since(t1), results.ReadBytes()-b0
				n := at.NumRows()
				at.Release()
				if n != want {
					fatalf("%s, %s: %d rows, DuckDB over every file %d", q.name, modes[m], n, want)
				}
				a := &accs[m]
				a.plans, a.scans, a.bytes = append(a.plans, plan), append(a.scans, took), append(a.bytes, read)
				a.files, a.rows = len(tasks), n
			}
		}
		for m, a := range accs {
			res := Result{Files: *files, RowsPerFile: *rows, Query: q.name, Mode: string(modes[m]), Rows: a.rows,
				FilesPlanned: a.files, PlanMS: results.MedianMS(a.plans), ScanMS: results.MedianMS(a.scans),
				BytesRead: medianInt(a.bytes), Runs: *runs, LoadTableMS: results.MS(load)}
			out = append(out, res)
			fmt.Printf("%-22s %-7s %10d %8d %10.1f %12d %10.1f\n", res.Query, res.Mode, res.Rows, res.FilesPlanned, res.PlanMS, res.BytesRead, res.ScanMS)
		}
		l, r := out[len(out)-2], out[len(out)-1]
		fmt.Printf("%-22s remote reads %.1fx fewer bytes, scans %.1fx faster end to end\n", "",
			float64(l.BytesRead)/float64(max(r.BytesRead, 1)), l.ScanMS/max(r.ScanMS, 0.001))
	}
	fmt.Printf("load average: %s\n", results.LoadAverage())
	if err := results.WriteJSON(*jsonOut, out); err != nil {
		fatalf("%v", err)
	}
}

// queries are bench/query's selective predicates, as Iceberg expressions
// and as SQL for DuckDB's count: one hour of ts, a user_id that occurs
// once (the first row of the middle file), a category in the last 1% of
// hours, and three user_ids of three files.
func queries(duck *sql.DB, data string, n int) ([]query, error) {
	uid := func(h int) (int64, error) {
		var v int64
		err := duck.QueryRow(fmt.Sprintf("SELECT user_id FROM read_parquet('%s') LIMIT 1", events.File(data, h))).Scan(&v)
		return v, err
	}
	mid := n / 2
	u, err := uid(mid)
	if err != nil {
		return nil, err
	}
	var in []int64
	for _, h := range []int{n / 5, n / 3, n - 1} {
		v, err := uid(h)
		if err != nil {
			return nil, err
		}
		in = append(in, v)
	}
	last := n - max(1, n/100)
	at := func(h int) ig.Literal { return ig.NewLiteral(ig.Timestamp(events.Base + int64(h)*events.HourUS)) }
	ts := ig.Reference("ts")
	return []query{
		{"one hour", ig.NewAnd(ig.LiteralPredicate(ig.OpGTEQ, ts, at(mid)), ig.LiteralPredicate(ig.OpLT, ts, at(mid+1))),
			fmt.Sprintf("ts >= '%s' AND ts < '%s'", events.TS(mid), events.TS(mid+1))},
		{"user_id = v", ig.EqualTo(ig.Reference("user_id"), u), fmt.Sprintf("user_id = %d", u)},
		{"category AND last 1%", ig.NewAnd(ig.EqualTo(ig.Reference("category"), "cat7"), ig.LiteralPredicate(ig.OpGTEQ, ts, at(last))),
			fmt.Sprintf("category = 'cat7' AND ts >= '%s'", events.TS(last))},
		{"user_id IN (3 values)", ig.IsIn(ig.Reference("user_id"), in...),
			fmt.Sprintf("user_id IN (%d, %d, %d)", in[0], in[1], in[2])},
	}, nil
}

func medianInt(v []int64) int64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
