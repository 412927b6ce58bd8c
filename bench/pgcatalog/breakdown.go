package main

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"rocklake/bench/internal/results"
	"rocklake/bench/internal/synth"
	"rocklake/catalog"
	"rocklake/kv"
	"rocklake/kv/pgkv"
	"rocklake/prune"
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
	sv, used, fresh := results.MS(rep.server), results.MS(rep.fetchUsed), results.MS(rep.fetchNew)
	add("Read + PlanTable, through a timed store", "ms", results.MedianMS(total[0]), results.MedianMS(total[1]))
	add("  inside the store's calls", "ms", results.MedianMS(in[0]), kvPG)
	add(fmt.Sprintf("    round trips: %d x %.3f ms (SELECT 1)", last.trips, rtt), "ms", 0, trips)
	add(fmt.Sprintf("    server executing the %d pages (EXPLAIN ANALYZE)", rep.pages), "ms", 0, sv)
	add("    server sending, transfer, pgx reading rows", "ms", 0, used-sv-float64(rep.pages)*rtt)
	add("    a new connection's first reads, over a used one's", "ms", 0, fresh-used)
	add("    rest: pgkv copying rows, the timer", "ms", 0, kvPG-trips-fresh+float64(rep.pages)*rtt)
	add("  outside: catalog decoding and pruning", "ms", results.MedianMS(outside(0)), results.MedianMS(outside(1)))
	add("  rows read", "", float64(last.t.rows), float64(last.t.rows))
	add("  bytes of keys and values read", "KB", float64(last.t.bytes)/1000, float64(last.t.bytes)/1000)
	return out
}

// replayed is what replay measured.
type replayed struct {
	rtt       time.Duration // an empty statement, median of 200
	pages     int           // page queries
	fetchNew  time.Duration // the pages fetched once, on a new connection
	fetchUsed time.Duration // the same, on that connection afterwards (medians of 3)
	server    time.Duration // the server's execution of the pages (EXPLAIN ANALYZE, medians of 3)
}

// replay reads the plan's scans that returned more than a row again, page
// by page as pgkv reads them (pageMin rows, then four times more up to
// pageMax, as in kv/pgkv/read.go), through pgx, reading rows in place but
// copying nothing: first once on a new connection, as a cold plan does,
// then again on the same connection, with the server's execution time of
// each page (EXPLAIN ANALYZE) and the latency of an empty statement.
func replay(loc string, scans []*scanRec) (rep replayed, err error) {
	const pageMin, pageMax = 32, 16384
	type page struct {
		q    string
		args []any
	}
	var pages []page
	fetch := func(ctx context.Context, conn *pgx.Conn, q string, args []any) (n int, last []byte, d time.Duration, err error) {
		t0 := time.Now()
		rows, err := conn.Query(ctx, q, args...)
		if err != nil {
			return 0, nil, 0, err
		}
		for rows.Next() {
			n++
			last = rows.RawValues()[0]
		}
		last = append([]byte(nil), last...)
		return n, last, time.Since(t0), rows.Err()
	}
	err = withConn(loc, func(ctx context.Context, conn *pgx.Conn) error {
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
				got, last, d, err := fetch(ctx, conn, q, args)
				if err != nil {
					return err
				}
				rep.fetchNew += d
				pages = append(pages, page{q, args})
				if got < n {
					break
				}
				from, op = last, ">"
			}
		}
		rep.pages = len(pages)
		for _, p := range pages {
			var fetches, execs []time.Duration
			for range 3 {
				_, _, d, err := fetch(ctx, conn, p.q, p.args)
				if err != nil {
					return err
				}
				fetches = append(fetches, d)
				var raw []byte
				if err := conn.QueryRow(ctx, "EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) "+p.q, p.args...).Scan(&raw); err != nil {
					return err
				}
				var plan []struct {
					Execution float64 `json:"Execution Time"`
					Planning  float64 `json:"Planning Time"`
				}
				if err := json.Unmarshal(raw, &plan); err != nil || len(plan) != 1 {
					return fmt.Errorf("EXPLAIN output %.200s: %v", raw, err)
				}
				execs = append(execs, time.Duration((plan[0].Execution+plan[0].Planning)*float64(time.Millisecond)))
			}
			rep.fetchUsed += median(fetches)
			rep.server += median(execs)
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
	return rep, err
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
