// Command serve loads `rocklake serve` the way a team would: -clients
// PostgreSQL-protocol clients (pgx) run the selective queries of
// bench/query for -duration over an events table of -files DuckDB-written
// files, while a writer registers one more file every -add-every through
// the HTTP API. Every answer is checked against the snapshot it read
// (each query runs in BEGIN ... COMMIT, which pins a snapshot; SHOW
// rocklake.snapshot names it; the same query in-process at that snapshot
// is the reference). Before the load, each query's warm in-process time
// and its time over the protocol from one client are measured side by
// side (medians of -runs, interleaved). Loopback only; bounded in time.
//
//	go run ./bench/serve -files 10000 -dir /tmp/bq -json bench/results/serve.json
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rocklake/rocklake"
	"github.com/rocklake/rocklake/bench/internal/events"
	"github.com/rocklake/rocklake/bench/internal/results"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/server"
)

// Query is one query's figures.
type Query struct {
	Name string `json:"name"`
	SQL  string `json:"sql"`
	// Side by side before the load, one client: medians.
	InProcessMS float64 `json:"in_process_warm_ms"`
	PGMS        float64 `json:"pg_protocol_ms"`
	Ratio       float64 `json:"pg_over_in_process"`
	// Under load.
	Count int     `json:"load_count"`
	P50MS float64 `json:"load_p50_ms"`
	P99MS float64 `json:"load_p99_ms"`
	// The same load in process (lake.Query from as many goroutines).
	InProcLoadP50MS float64 `json:"in_process_load_p50_ms"`
	InProcLoadP99MS float64 `json:"in_process_load_p99_ms"`
}

// Report is the whole run.
type Report struct {
	Files     int     `json:"files"`
	Rows      int     `json:"rows_per_file"`
	Clients   int     `json:"clients"`
	DurationS float64 `json:"duration_s"`
	Queries   []Query `json:"queries"`
	Total     int     `json:"load_queries"`
	QPS       float64 `json:"load_queries_per_s"`
	P50MS     float64 `json:"load_p50_ms"`
	P99MS     float64 `json:"load_p99_ms"`
	// The same load in process (lake.Query from as many goroutines).
	InProcQPS   float64 `json:"in_process_load_queries_per_s"`
	InProcP50MS float64 `json:"in_process_load_p50_ms"`
	InProcP99MS float64 `json:"in_process_load_p99_ms"`
	Errors      int64   `json:"errors"`
	Mismatches  int64   `json:"mismatches"`
	FilesAdded  int64   `json:"files_added"`
	AddErrors   int64   `json:"add_errors"`
	Snapshots   int     `json:"snapshots_read"`
	Checked     int64   `json:"answers_checked"`
	MaxProcs    int     `json:"gomaxprocs"`
	Note        string  `json:"note"`
}

func main() {
	files := flag.Int("files", 10000, "files in the table")
	rows := flag.Int("rows", 2000, "rows per file")
	clients := flag.Int("clients", 32, "concurrent PostgreSQL-protocol clients")
	duration := flag.Duration("duration", 60*time.Second, "how long the load runs")
	addEvery := flag.Duration("add-every", time.Second, "the writer registers one file this often")
	runs := flag.Int("runs", 21, "side-by-side runs per query before the load")
	dir := flag.String("dir", "", "where the data sets live (kept and reused; default: a temporary directory)")
	jsonOut := flag.String("json", "", "write the report here as JSON")
	flag.Parse()
	if err := run(*files, *rows, *clients, *duration, *addEvery, *runs, *dir, *jsonOut); err != nil {
		log.Fatal(err)
	}
}

func run(n, rows, clients int, duration, addEvery time.Duration, runs int, dir, jsonOut string) error {
	ctx := context.Background()
	if dir == "" {
		d, err := os.MkdirTemp("", "bench-serve-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	set := filepath.Join(dir, fmt.Sprintf("events-%d-%d", n, rows))
	data := filepath.Join(set, "data")
	duck, err := engine.Open("")
	if err != nil {
		return err
	}
	defer duck.Close()
	if err := events.Generate(duck, data, n, rows); err != nil {
		return err
	}
	// The files the writer adds: the hours after the table's last, in a
	// directory of their own (written again each run: they are few).
	extra := filepath.Join(set, "extra")
	os.RemoveAll(extra)
	adds := 2*int(duration/addEvery) + 2
	if err := writeExtra(duck, extra, n, adds, rows); err != nil {
		return err
	}
	lakeDir := filepath.Join(set, "serve-lake")
	os.RemoveAll(lakeDir)
	lake, err := rocklake.Create(ctx, lakeDir, rocklake.OpenOptions{})
	if err != nil {
		return err
	}
	t0 := time.Now()
	if _, err := lake.Add(ctx, "events", []string{data}, rocklake.AddOptions{Create: true}); err != nil {
		return err
	}
	lake.Close()
	fmt.Printf("registered %d files in %.1fs\n", n, time.Since(t0).Seconds())
	tmp, _ := os.MkdirTemp("", "bench-serve-tmp-")
	defer os.RemoveAll(tmp)
	sb := &rocklake.Sandbox{Dirs: []string{data, extra}, TempDir: tmp}
	lake, err = rocklake.Open(ctx, lakeDir, rocklake.OpenOptions{Sandbox: sb})
	if err != nil {
		return err
	}
	defer lake.Close()
	srv, err := server.New(lake, server.Config{PGListen: "127.0.0.1:0", HTTPListen: "127.0.0.1:0", Sandbox: sb, MaxConns: clients + 8})
	if err != nil {
		return err
	}
	go srv.Serve()
	defer srv.Shutdown(ctx)
	url := fmt.Sprintf("postgres://bench@%s/rocklake?sslmode=disable", srv.PGAddr())

	var uid int64
	if err := duck.QueryRow(fmt.Sprintf("SELECT user_id FROM read_parquet('%s') LIMIT 1", events.File(data, n/2))).Scan(&uid); err != nil {
		return err
	}
	ts, mid, last := events.TS, n/2, n-max(1, n/100)
	queries := []Query{
		{Name: "one hour", SQL: fmt.Sprintf("SELECT count(*), sum(amount) FROM events WHERE ts >= '%s' AND ts < '%s'", ts(mid), ts(mid+1))},
		{Name: "user_id = v", SQL: fmt.Sprintf("SELECT count(*), sum(amount) FROM events WHERE user_id = %d", uid)},
		{Name: "category AND last 1%", SQL: fmt.Sprintf("SELECT count(*), sum(amount) FROM events WHERE category = 'cat7' AND ts >= '%s'", ts(last))},
	}

	// Side by side, one client, interleaved.
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	for i := range queries {
		q := &queries[i]
		var tin, tpg []time.Duration
		for r := 0; r < runs+1; r++ {
			s := time.Now()
			res, err := lake.Query(ctx, q.SQL, rocklake.QueryOptions{})
			din := time.Since(s)
			if err != nil {
				return err
			}
			s = time.Now()
			got, err := pgAnswer(ctx, conn, q.SQL)
			dpg := time.Since(s)
			if err != nil {
				return err
			}
			if want := text(res); got != want {
				return fmt.Errorf("%s: %q over the protocol, %q in process", q.Name, got, want)
			}
			if r > 0 { // the first run of each warms the caches
				tin, tpg = append(tin, din), append(tpg, dpg)
			}
		}
		q.InProcessMS, q.PGMS = results.MedianMS(tin), results.MedianMS(tpg)
		q.Ratio = q.PGMS / q.InProcessMS
		fmt.Printf("%-22s in-process %.2f ms, PostgreSQL protocol %.2f ms (%.2fx)\n", q.Name, q.InProcessMS, q.PGMS, q.Ratio)
	}
	conn.Close(ctx)

	// The load: the same clients in process, then over the protocol, a
	// writer adding files throughout.
	rep := Report{Files: n, Rows: rows, Clients: clients, DurationS: duration.Seconds(), MaxProcs: runtime.GOMAXPROCS(0)}
	ch := &checker{lake: lake, queries: queries}
	next := n
	addFile := func() error {
		body := fmt.Sprintf(`{"paths": [%q]}`, events.File(extra, next))
		next++
		resp, err := http.Post("http://"+srv.HTTPAddr().String()+"/v1/tables/events/files", "application/json", strings.NewReader(body))
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("add: HTTP %d", resp.StatusCode)
		}
		return nil
	}
	inProc := load(clients, duration, addEvery, adds/2, addFile, len(queries), func(c int) (func(qi int) (string, string, time.Duration, error), func(), error) {
		return func(qi int) (string, string, time.Duration, error) {
			r, err := lake.Catalog().Read(-1)
			if err != nil {
				return "", "", 0, err
			}
			id := r.Snapshot().ID
			r.Close()
			s := time.Now()
			res, err := lake.Query(ctx, queries[qi].SQL, rocklake.QueryOptions{Snapshot: rocklake.AtSnapshot(id)})
			if err != nil {
				return "", "", 0, err
			}
			return fmt.Sprint(id), text(res), time.Since(s), nil
		}, func() {}, nil
	}, ch)
	pg := load(clients, duration, addEvery, adds-adds/2, addFile, len(queries), func(c int) (func(qi int) (string, string, time.Duration, error), func(), error) {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			return nil, nil, err
		}
		return func(qi int) (string, string, time.Duration, error) {
			return pinnedQuery(ctx, conn, queries[qi].SQL)
		}, func() { conn.Close(ctx) }, nil
	}, ch)
	for i := range queries {
		queries[i].Count = len(pg.lat[i])
		queries[i].P50MS, queries[i].P99MS = pct(pg.lat[i], 0.50), pct(pg.lat[i], 0.99)
		queries[i].InProcLoadP50MS, queries[i].InProcLoadP99MS = pct(inProc.lat[i], 0.50), pct(inProc.lat[i], 0.99)
	}
	rep.Queries, rep.Total = queries, len(pg.all)
	rep.QPS = float64(len(pg.all)) / duration.Seconds()
	rep.P50MS, rep.P99MS = pct(pg.all, 0.50), pct(pg.all, 0.99)
	rep.InProcQPS = float64(len(inProc.all)) / duration.Seconds()
	rep.InProcP50MS, rep.InProcP99MS = pct(inProc.all, 0.50), pct(inProc.all, 0.99)
	rep.Errors, rep.Mismatches = pg.errs.Load()+inProc.errs.Load(), ch.mismatches.Load()
	rep.Checked = ch.checked.Load()
	rep.FilesAdded, rep.AddErrors = pg.added.Load()+inProc.added.Load(), pg.addErrs.Load()+inProc.addErrs.Load()
	rep.Snapshots = ch.snapshots()
	if e := pg.firstErr.Load(); e != nil {
		rep.Note = "first error: " + e.(string)
	} else if e := inProc.firstErr.Load(); e != nil {
		rep.Note = "first error: " + e.(string)
	}
	fmt.Printf("load, %d clients, %.0fs each, a file added every %v:\n", clients, duration.Seconds(), addEvery)
	fmt.Printf("  in process:          %5d queries (%.0f/s), p50 %.2f ms, p99 %.2f ms\n", len(inProc.all), rep.InProcQPS, rep.InProcP50MS, rep.InProcP99MS)
	fmt.Printf("  PostgreSQL protocol: %5d queries (%.0f/s), p50 %.2f ms, p99 %.2f ms (p50 %.2fx in process)\n", rep.Total, rep.QPS, rep.P50MS, rep.P99MS, rep.P50MS/rep.InProcP50MS)
	fmt.Printf("  errors %d, answers checked %d against %d snapshots, mismatches %d, files added %d (add errors %d)\n",
		rep.Errors, rep.Checked, rep.Snapshots, rep.Mismatches, rep.FilesAdded, rep.AddErrors)
	for _, q := range queries {
		fmt.Printf("  %-22s protocol p50 %.2f ms p99 %.2f ms; in process p50 %.2f ms p99 %.2f ms\n", q.Name, q.P50MS, q.P99MS, q.InProcLoadP50MS, q.InProcLoadP99MS)
	}
	if rep.Note != "" {
		fmt.Println(rep.Note)
	}
	if jsonOut != "" {
		if err := results.WriteJSON(jsonOut, rep); err != nil {
			return err
		}
	}
	if rep.Mismatches > 0 {
		return fmt.Errorf("%d answers differ from the snapshot they read", rep.Mismatches)
	}
	return nil
}

// checker holds each query's answer at each snapshot, computed in process
// once, and counts the answers that differ.
type checker struct {
	lake       *rocklake.Lake
	queries    []Query
	expected   sync.Map // "query|snapshot" → answer text
	checked    atomic.Int64
	mismatches atomic.Int64
}

func (c *checker) check(qi int, snap, got string) error {
	key := fmt.Sprint(qi, "|", snap)
	want, ok := c.expected.Load(key)
	if !ok {
		var id int64
		if _, err := fmt.Sscan(snap, &id); err != nil {
			return fmt.Errorf("snapshot %q: %w", snap, err)
		}
		res, err := c.lake.Query(context.Background(), c.queries[qi].SQL, rocklake.QueryOptions{Snapshot: rocklake.AtSnapshot(id)})
		if err != nil {
			return err
		}
		want, _ = c.expected.LoadOrStore(key, text(res))
	}
	c.checked.Add(1)
	if want.(string) != got {
		c.mismatches.Add(1)
	}
	return nil
}

func (c *checker) snapshots() int {
	seen := map[string]bool{}
	c.expected.Range(func(k, _ any) bool {
		_, snap, _ := strings.Cut(k.(string), "|")
		seen[snap] = true
		return true
	})
	return len(seen)
}

// phase is one load run's latencies and counts.
type phase struct {
	lat                  [][]time.Duration
	all                  []time.Duration
	errs, added, addErrs atomic.Int64
	firstErr             atomic.Value
}

// load runs clients for duration, each from its own connection (open
// gives a client its query function and its close), every answer checked,
// while add runs every addEvery, at most adds times.
func load(clients int, duration, addEvery time.Duration, adds int, add func() error, nq int,
	open func(c int) (func(qi int) (snap, answer string, d time.Duration, err error), func(), error), ch *checker) *phase {
	p := &phase{lat: make([][]time.Duration, nq)}
	fail := func(err error) {
		p.errs.Add(1)
		p.firstErr.CompareAndSwap(nil, err.Error())
	}
	var mu sync.Mutex
	deadline := time.Now().Add(duration)
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			query, closeFn, err := open(c)
			if err != nil {
				fail(err)
				return
			}
			defer closeFn()
			for i := c; time.Now().Before(deadline); i++ {
				qi := i % nq
				snap, got, d, err := query(qi)
				if err == nil {
					err = ch.check(qi, snap, got)
				}
				if err != nil {
					fail(err)
					continue
				}
				mu.Lock()
				p.lat[qi] = append(p.lat[qi], d)
				p.all = append(p.all, d)
				mu.Unlock()
			}
		}(c)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(addEvery)
		defer tick.Stop()
		for h := 0; h < adds && time.Now().Before(deadline); h++ {
			<-tick.C
			if err := add(); err != nil {
				p.addErrs.Add(1)
				continue
			}
			p.added.Add(1)
		}
	}()
	wg.Wait()
	return p
}

// pinnedQuery runs a query in a transaction block, which reads one
// snapshot, and names that snapshot; the time is the query's alone.
func pinnedQuery(ctx context.Context, c *pgx.Conn, q string) (snap, answer string, d time.Duration, err error) {
	tx, err := c.Begin(ctx)
	if err != nil {
		return "", "", 0, err
	}
	defer tx.Rollback(ctx)
	if err := tx.QueryRow(ctx, "SHOW rocklake.snapshot").Scan(&snap); err != nil {
		return "", "", 0, err
	}
	s := time.Now()
	answer, err = pgAnswer(ctx, tx, q)
	d = time.Since(s)
	if err != nil {
		return "", "", 0, err
	}
	return snap, answer, d, tx.Commit(ctx)
}

type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// pgAnswer is an answer's values as text, one row per line.
func pgAnswer(ctx context.Context, c querier, q string) (string, error) {
	rows, err := c.Query(ctx, q, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var sb strings.Builder
	for rows.Next() {
		raw := rows.RawValues()
		for i, v := range raw {
			if i > 0 {
				sb.WriteByte('|')
			}
			if v == nil {
				sb.WriteString("NULL")
			} else {
				sb.Write(v)
			}
		}
		sb.WriteByte('\n')
	}
	return sb.String(), rows.Err()
}

func text(res *rocklake.Result) string {
	var sb strings.Builder
	for _, row := range res.Rows {
		for i, v := range row {
			if i > 0 {
				sb.WriteByte('|')
			}
			if v == nil {
				sb.WriteString("NULL")
			} else {
				sb.WriteString(*v)
			}
		}
		sb.WriteByte('\n')
	}
	return sb.String()
}

func pct(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return results.MS(s[min(len(s)-1, int(p*float64(len(s))))])
}

func writeExtra(db *sql.DB, dir string, first, n, rows int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for h := first; h < first+n; h++ {
		if err := events.WriteHour(db, dir, h, rows); err != nil {
			return err
		}
	}
	return nil
}
