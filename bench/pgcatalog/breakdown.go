package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rocklake/rocklake/bench/internal/results"
	"github.com/rocklake/rocklake/bench/internal/synth"
	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/kv"
	"github.com/rocklake/rocklake/kv/pgkv"
	"github.com/rocklake/rocklake/prune"
)

// The breakdown splits a cold plan's Read + PlanTable into the time spent
// inside the store's calls and the rest (catalog decoding and pruning),
// by wrapping the store in a timer; for PostgreSQL it then splits the
// store's time by replaying what the plan read: round trips × the
// latency of an empty statement, the server's execution time of the same
// scans (EXPLAIN ANALYZE), and what remains, which is the client reading
// rows (pgx) and pgkv copying them.

// timing accumulates the time spent in a store's calls. The catalog reads
// from one goroutine during a plan, but the lock keeps it exact anyway.
type timing struct {
	mu    sync.Mutex
	in    time.Duration
	rows  int
	bytes int64
	scans []*scanRec
}

// scanRec is one iterator's range and what it returned.
type scanRec struct {
	lower, upper []byte
	rows         int
}

func (t *timing) since(t0 time.Time) {
	d := time.Since(t0)
	t.mu.Lock()
	t.in += d
	t.mu.Unlock()
}

type timedReader struct {
	r kv.Reader
	t *timing
}

func (r timedReader) Get(k []byte) ([]byte, error) {
	defer r.t.since(time.Now())
	return r.r.Get(k)
}

func (r timedReader) NewIter(lower, upper []byte) (kv.Iterator, error) {
	defer r.t.since(time.Now())
	it, err := r.r.NewIter(lower, upper)
	if err != nil {
		return nil, err
	}
	rec := &scanRec{lower: append([]byte(nil), lower...), upper: append([]byte(nil), upper...)}
	r.t.mu.Lock()
	r.t.scans = append(r.t.scans, rec)
	r.t.mu.Unlock()
	return &timedIter{Iterator: it, t: r.t, rec: rec}, nil
}

type timedStore struct {
	timedReader
	s kv.Store
}

func (s timedStore) NewSnapshot() (kv.Snapshot, error) {
	defer s.t.since(time.Now())
	sn, err := s.s.NewSnapshot()
	if err != nil {
		return nil, err
	}
	return timedSnapshot{timedReader{sn, s.t}, sn}, nil
}

func (s timedStore) NewBatch() kv.Batch { return s.s.NewBatch() }
func (s timedStore) Close() error       { return s.s.Close() }

type timedSnapshot struct {
	timedReader
	sn kv.Snapshot
}

func (s timedSnapshot) Close() error {
	defer s.t.since(time.Now())
	return s.sn.Close()
}

type timedIter struct {
	kv.Iterator
	t   *timing
	rec *scanRec
}

// moved times one move and counts the row it lands on.
func (it *timedIter) moved(t0 time.Time, ok bool) bool {
	d := time.Since(t0)
	it.t.mu.Lock()
	it.t.in += d
	if ok {
		it.t.rows++
		it.t.bytes += int64(len(it.Key()) + len(it.Value()))
		it.rec.rows++
	}
	it.t.mu.Unlock()
	return ok
}

func (it *timedIter) First() bool { t0 := time.Now(); return it.moved(t0, it.Iterator.First()) }
func (it *timedIter) Last() bool  { t0 := time.Now(); return it.moved(t0, it.Iterator.Last()) }
func (it *timedIter) Next() bool  { t0 := time.Now(); return it.moved(t0, it.Iterator.Next()) }
func (it *timedIter) Prev() bool  { t0 := time.Now(); return it.moved(t0, it.Iterator.Prev()) }
func (it *timedIter) SeekGE(k []byte) bool {
	t0 := time.Now()
	return it.moved(t0, it.Iterator.SeekGE(k))
}
func (it *timedIter) Close() error {
	defer it.t.since(time.Now())
	return it.Iterator.Close()
}

// timedPlan is one cold Read + PlanTable on a freshly opened store, timed
// inside and outside the store.
type timedPlan struct {
	total time.Duration
	t     *timing
	trips int64
	kept  int
}

func planTimed(be backend, pg bool, pred string) timedPlan {
	var store kv.Store
	var err error
	if pg {
		store, err = pgkv.Open(context.Background(), be.loc, pgkv.Options{})
	} else {
		store, err = kv.OpenPebble(be.loc, kv.PebbleOptions{ReadOnly: true})
	}
	if err != nil {
		fatalf("%s: %v", be.name, err)
	}
	defer store.Close()
	t := &timing{}
	c, err := catalog.OpenStore(timedStore{timedReader{store, t}, store}, catalog.Options{})
	if err != nil {
		fatalf("%s: %v", be.name, err)
	}
	runtime.GC()
	t.mu.Lock()
	t.in, t.rows, t.bytes, t.scans = 0, 0, 0, nil // OpenStore's reads are not the plan's
	t.mu.Unlock()
	trips := func() int64 {
		if rt, ok := store.(interface{ RoundTrips() int64 }); ok {
			return rt.RoundTrips()
		}
		return -1
	}
	trips0 := trips()
	t0 := time.Now()
	r, err := c.Read(catalog.Latest)
	if err != nil {
		fatalf("%s: %v", be.name, err)
	}
	p, err := prune.PlanTable(r, synth.Table, pred, prune.Options{FilesOnly: true})
	if err != nil {
		fatalf("%s: %v", be.name, err)
	}
	total := time.Since(t0)
	r.Close()
	return timedPlan{total: total, t: t, trips: trips() - trips0, kept: p.Files.Kept}
}

func (b bench) coldBreakdown(backends []backend, pred string, kept int) []Figure {
	var total, in [2][]time.Duration
	var last timedPlan
	for range b.runs {
		for i, be := range backends {
			tp := planTimed(be, i == 1, pred)
			if tp.kept != kept {
				fatalf("the timed cold plan kept %d files on %s, the others %d", tp.kept, be.name, kept)
			}
			total[i] = append(total[i], tp.total)
			in[i] = append(in[i], tp.t.in)
			if i == 1 {
				last = tp
			}
		}
	}
	rep, err := replay(backends[1].loc, last.t.scans)
	if err != nil {
		fatalf("replay: %v", err)
	}
	outside := func(i int) []time.Duration {
		var d []time.Duration
		for j := range total[i] {
			d = append(d, total[i][j]-in[i][j])
		}
		return d
	}
	kvPG := results.MedianMS(in[1])
	rtt := results.MS(rep.rtt)
	trips := float64(last.trips) * rtt
	var out []Figure
	add := func(name, unit string, p, q float64) {
		out = append(out, Figure{Name: name, Unit: unit, Pebble: p, Postgres: q, Ratio: ratio(q, p)})
	}
	// Measured figures only: differences between them are left to the
	// reader, since on a busy machine a difference of medians taken at
	// different moments can come out below zero.
	add("Read + PlanTable, through a timed store", "ms", results.MedianMS(total[0]), results.MedianMS(total[1]))
	add("  inside the store's calls", "ms", results.MedianMS(in[0]), kvPG)
	add(fmt.Sprintf("    the same %d pages by pgx alone, no copies, new connection", rep.pages), "ms", 0, results.MS(rep.fetchNew))
	if rep.faultsNew >= 0 {
		add("      server process's minor page faults", "", 0, float64(rep.faultsNew))
	}
	add("    the same, on a connection that read them before", "ms", 0, results.MS(rep.fetchUsed))
	if rep.faultsUsed >= 0 {
		add("      server process's minor page faults", "", 0, float64(rep.faultsUsed))
	}
	add("    server executing the pages (EXPLAIN ANALYZE)", "ms", 0, results.MS(rep.server))
	add("      8 KiB blocks they visit (shared_buffers hits + reads)", "", 0, float64(rep.hits+rep.reads))
	add("      of which read into shared_buffers", "", 0, float64(rep.reads))
	add(fmt.Sprintf("    round trips: %d x %.3f ms (SELECT 1)", last.trips, rtt), "ms", 0, trips)
	add("  outside: catalog decoding and pruning", "ms", results.MedianMS(outside(0)), results.MedianMS(outside(1)))
	add("  rows read", "", float64(last.t.rows), float64(last.t.rows))
	add("  bytes of keys and values read", "KB", float64(last.t.bytes)/1000, float64(last.t.bytes)/1000)
	return out
}

// replayed is what replay measured.
type replayed struct {
	rtt       time.Duration // an empty statement, median of 200
	pages     int           // page queries
	fetchNew  time.Duration // the pages fetched once on a new connection (medians of 3 connections)
	fetchUsed time.Duration // the same, on a connection that has read them before (medians of 3)
	server    time.Duration // the server's execution of the pages (EXPLAIN ANALYZE, medians of 3)
	hits      int64         // blocks the pages found in shared buffers
	reads     int64         // blocks they read in (from the OS cache or disk)
	// The server process's minor page faults over one pass, on a new
	// connection and on a used one; -1 where /proc does not show them.
	faultsNew, faultsUsed int64
}

type pageQuery struct {
	q    string
	args []any
}

// replay reads the plan's scans that returned more than a row again, page
// by page as pgkv reads them (pageMin rows, then four times more up to
// pageMax, as in kv/pgkv/read.go), through pgx, reading rows in place but
// copying nothing: once on each of three new connections, as a cold plan
// does, then three more times on the last of them, then three times with
// the server's execution time of each page (EXPLAIN ANALYZE); and it
// measures the latency of an empty statement. Every pass goes over all
// the pages in the plan's order, so that the server's buffers hold what
// they hold during a plan.
func replay(loc string, scans []*scanRec) (rep replayed, err error) {
	pages, err := pagesOf(loc, scans)
	if err != nil {
		return rep, err
	}
	rep.pages = len(pages)
	pass := func(ctx context.Context, conn *pgx.Conn, into [][]time.Duration) (faults int64, err error) {
		var pid uint32
		if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
			return 0, err
		}
		f0 := minorFaults(pid)
		for i, p := range pages {
			t0 := time.Now()
			rows, err := conn.Query(ctx, p.q, p.args...)
			if err != nil {
				return 0, err
			}
			for rows.Next() {
				_ = rows.RawValues()
			}
			if err := rows.Err(); err != nil {
				return 0, err
			}
			into[i] = append(into[i], time.Since(t0))
		}
		if f0 < 0 {
			return -1, nil
		}
		return minorFaults(pid) - f0, nil
	}
	fresh := make([][]time.Duration, len(pages))
	used := make([][]time.Duration, len(pages))
	execs := make([][]time.Duration, len(pages))
	var faults []time.Duration // as counts, for median
	for c := range 3 {
		err := withConn(loc, func(ctx context.Context, conn *pgx.Conn) error {
			f, err := pass(ctx, conn, fresh)
			if err != nil {
				return err
			}
			faults = append(faults, time.Duration(f))
			if c < 2 {
				return nil
			}
			for k := range 3 {
				f, err := pass(ctx, conn, used)
				if err != nil {
					return err
				}
				if k == 2 {
					rep.faultsUsed = f
				}
			}
			for k := range 3 {
				for i, p := range pages {
					var raw []byte
					if err := conn.QueryRow(ctx, "EXPLAIN (ANALYZE, BUFFERS, TIMING OFF, FORMAT JSON) "+p.q, p.args...).Scan(&raw); err != nil {
						return err
					}
					var plan []struct {
						Execution float64 `json:"Execution Time"`
						Planning  float64 `json:"Planning Time"`
						Plan      struct {
							Hit  int64 `json:"Shared Hit Blocks"`
							Read int64 `json:"Shared Read Blocks"`
						}
					}
					if err := json.Unmarshal(raw, &plan); err != nil || len(plan) != 1 {
						return fmt.Errorf("EXPLAIN output %.200s: %v", raw, err)
					}
					execs[i] = append(execs[i], time.Duration((plan[0].Execution+plan[0].Planning)*float64(time.Millisecond)))
					if k == 0 {
						rep.hits += plan[0].Plan.Hit
						rep.reads += plan[0].Plan.Read
					}
				}
			}
			var ds []time.Duration
			for range 200 {
				t0 := time.Now()
				if _, err := conn.Exec(ctx, "SELECT 1"); err != nil {
					return err
				}
				ds = append(ds, time.Since(t0))
			}
			rep.rtt = median(ds)
			return nil
		})
		if err != nil {
			return rep, err
		}
	}
	for i := range pages {
		rep.fetchNew += median(fresh[i])
		rep.fetchUsed += median(used[i])
		rep.server += median(execs[i])
	}
	rep.faultsNew = int64(median(faults))
	return rep, nil
}

// pagesOf lists the page queries pgkv sends for the scans.
func pagesOf(loc string, scans []*scanRec) ([]pageQuery, error) {
	const pageMin, pageMax = 32, 16384
	var pages []pageQuery
	err := withConn(loc, func(ctx context.Context, conn *pgx.Conn) error {
		for _, s := range scans {
			if s.rows <= 1 {
				continue
			}
			from, op := s.lower, ">="
			for n := pageMin; ; n = min(n*4, pageMax) {
				var conds []string
				var args []any
				if from != nil {
					args = append(args, from)
					conds = append(conds, fmt.Sprintf("k %s $%d", op, len(args)))
				}
				if s.upper != nil {
					args = append(args, s.upper)
					conds = append(conds, fmt.Sprintf("k < $%d", len(args)))
				}
				args = append(args, n)
				q := "SELECT k, v FROM " + pgkv.TableName
				if len(conds) > 0 {
					q += " WHERE " + strings.Join(conds, " AND ")
				}
				q += fmt.Sprintf(" ORDER BY k LIMIT $%d", len(args))
				pages = append(pages, pageQuery{q, args})
				rows, err := conn.Query(ctx, q, args...)
				if err != nil {
					return err
				}
				got := 0
				var last []byte
				for rows.Next() {
					got++
					last = rows.RawValues()[0]
				}
				last = append([]byte(nil), last...)
				if err := rows.Err(); err != nil {
					return err
				}
				if got < n {
					break
				}
				from, op = last, ">"
			}
		}
		return nil
	})
	return pages, err
}

// minorFaults is a process's count of minor page faults so far (field 10
// of /proc/PID/stat), or -1 if it cannot be read (a server elsewhere).
func minorFaults(pid uint32) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	// The command name, in parentheses, may hold spaces: count fields
	// after its closing parenthesis, where field 3 (state) starts.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 8 {
		return -1
	}
	n, err := strconv.ParseInt(f[7], 10, 64)
	if err != nil {
		return -1
	}
	return n
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
