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
}

// Report is the whole run.
type Report struct {
	Files      int     `json:"files"`
	Rows       int     `json:"rows_per_file"`
	Clients    int     `json:"clients"`
	DurationS  float64 `json:"duration_s"`
	Queries    []Query `json:"queries"`
	Total      int     `json:"load_queries"`
	QPS        float64 `json:"load_queries_per_s"`
	P50MS      float64 `json:"load_p50_ms"`
	P99MS      float64 `json:"load_p99_ms"`
	Errors     int64   `json:"errors"`
	Mismatches int64   `json:"mismatches"`
	FilesAdded int64   `json:"files_added"`
	AddErrors  int64   `json:"add_errors"`
	Snapshots  int     `json:"snapshots_read"`
	Checked    int64   `json:"answers_checked"`
	MaxProcs   int     `json:"gomaxprocs"`
	Note       string  `json:"note"`
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
	adds := int(duration/addEvery) + 1
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

	// The load.
	rep := Report{Files: n, Rows: rows, Clients: clients, DurationS: duration.Seconds(), MaxProcs: runtime.GOMAXPROCS(0)}
	var (
		mu       sync.Mutex
		lat      = make([][]time.Duration, len(queries))
		all      []time.Duration
		errs     atomic.Int64
		mismatch atomic.Int64
		checked  atomic.Int64
		added    atomic.Int64
		addErrs  atomic.Int64
		firstErr atomic.Value
	)
	expected := sync.Map{} // "query|snapshot" → answer text
	want := func(qi int, snap string) (string, error) {
		key := fmt.Sprint(qi, "|", snap)
		if v, ok := expected.Load(key); ok {
			return v.(string), nil
		}
		var id int64
		fmt.Sscan(snap, &id)
		res, err := lake.Query(ctx, queries[qi].SQL, rocklake.QueryOptions{Snapshot: rocklake.AtSnapshot(id)})
		if err != nil {
			return "", err
		}
		expected.Store(key, text(res))
		return text(res), nil
	}
	deadline := time.Now().Add(duration)
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			conn, err := pgx.Connect(ctx, url)
			if err != nil {
				errs.Add(1)
				firstErr.CompareAndSwap(nil, err.Error())
				return
			}
			defer conn.Close(ctx)
			for i := c; time.Now().Before(deadline); i++ {
				qi := i % len(queries)
				snap, got, d, err := pinnedQuery(ctx, conn, queries[qi].SQL)
				if err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				w, err := want(qi, snap)
				if err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				checked.Add(1)
				if w != got {
					mismatch.Add(1)
				}
				mu.Lock()
				lat[qi] = append(lat[qi], d)
				all = append(all, d)
				mu.Unlock()
			}
		}(c)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		client := &http.Client{Timeout: 30 * time.Second}
		tick := time.NewTicker(addEvery)
		defer tick.Stop()
		for h := 0; h < adds && time.Now().Before(deadline); h++ {
			<-tick.C
			body := fmt.Sprintf(`{"paths": [%q]}`, events.File(extra, n+h))
			resp, err := client.Post("http://"+srv.HTTPAddr().String()+"/v1/tables/events/files", "application/json", strings.NewReader(body))
			if err != nil || resp.StatusCode != 200 {
				addErrs.Add(1)
				if resp != nil {
					resp.Body.Close()
				}
				continue
			}
			resp.Body.Close()
			added.Add(1)
		}
	}()
	wg.Wait()
	for i := range queries {
		queries[i].Count = len(lat[i])
		queries[i].P50MS, queries[i].P99MS = pct(lat[i], 0.50), pct(lat[i], 0.99)
	}
	rep.Queries, rep.Total = queries, len(all)
	rep.QPS = float64(len(all)) / duration.Seconds()
	rep.P50MS, rep.P99MS = pct(all, 0.50), pct(all, 0.99)
	rep.Errors, rep.Mismatches, rep.Checked = errs.Load(), mismatch.Load(), checked.Load()
	rep.FilesAdded, rep.AddErrors = added.Load(), addErrs.Load()
	expected.Range(func(k, _ any) bool { rep.Snapshots++; return true })
	if e := firstErr.Load(); e != nil {
		rep.Note = "first error: " + e.(string)
	}
	fmt.Printf("load: %d clients, %.0fs: %d queries (%.0f/s), p50 %.2f ms, p99 %.2f ms, errors %d, mismatches %d of %d checked, files added %d (add errors %d)\n",
		clients, duration.Seconds(), rep.Total, rep.QPS, rep.P50MS, rep.P99MS, rep.Errors, rep.Mismatches, rep.Checked, rep.FilesAdded, rep.AddErrors)
	for _, q := range queries {
		fmt.Printf("  %-22s %6d queries, p50 %.2f ms, p99 %.2f ms\n", q.Name, q.Count, q.P50MS, q.P99MS)
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
