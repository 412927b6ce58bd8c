// Command objects measures rocklake over data files in object storage: the
// requests and time of registering N small objects, of a selective query
// (cold: the kept object fetched; warm: served by the cache), and, beside
// them, what a reader without a catalog needs to find the same rows: a
// LIST and every footer, read with the same client and concurrency.
//
// It starts a real S3-compatible server (versitygw, see internal/s3test)
// on loopback and, with -delay, a proxy in front of it that holds every
// request that long (a network's round trip), also on loopback.
//
//	go run ./bench/objects -objects 10000 -delay 15ms -json bench/results/objects.json
//
// With -big N it also writes one big object the way engines write at scale
// (N rows, row groups of 1,000,000 rows, data pages of 80 KB, the page
// index, snappy; a sorted id) and looks one id up in it: the bytes fetched
// by the partial scan (its tail and the pages holding the row, by ranged
// requests), against the pages holding the row and the whole object that
// the whole-file path fetches.
//
//	go run ./bench/objects -objects 0 -big 4000000 -json bench/results/objects-partial.json
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/internal/s3test"
	"github.com/rocklake/rocklake/pqmeta"
	"github.com/rocklake/rocklake/storage"
	"github.com/rocklake/rocklake/types"
)

type figure struct {
	What     string  `json:"what"`
	Requests int64   `json:"requests"`
	Bytes    int64   `json:"bytes"`
	Millis   float64 `json:"ms"`
	Note     string  `json:"note,omitempty"`
}

func main() {
	n := flag.Int("objects", 10000, "objects to write and register")
	rows := flag.Int("rows", 100, "rows per object")
	delay := flag.Duration("delay", 0, "hold every request this long in a proxy before the server (0: no proxy)")
	workers := flag.Int("workers", 64, "requests in flight (registration, and the footer scan beside it): the store's connections")
	runs := flag.Int("runs", 5, "selective queries, cold and warm (medians)")
	jsonOut := flag.String("json", "", "write the figures here")
	big := flag.Int("big", 0, "also look one id up in one object of this many rows (0: not)")
	flag.Parse()
	ctx := context.Background()

	srv, err := s3test.Launch()
	if err != nil {
		log.Fatal(err)
	}
	// A failure panics (fail) so that the deferred calls stop the server
	// and remove its directory before the program exits.
	defer func() {
		if r := recover(); r != nil {
			log.Print(r)
			defer os.Exit(1)
		}
	}()
	defer srv.Close()
	if err := os.Mkdir(filepath.Join(srv.Dir, "lake"), 0o755); err != nil {
		fail(err)
	}
	endpoint := srv.Endpoint
	if *delay > 0 {
		p, stop := delayProxy(srv.Endpoint, *delay)
		defer stop()
		endpoint = p
	}
	for k, v := range srv.Env(endpoint) {
		os.Setenv(k, v)
	}
	work, err := os.MkdirTemp("", "rocklake-bench-objects-")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(work)

	if *n == 0 {
		bigLookup(ctx, srv, work, *big, *runs, *delay, *jsonOut)
		return
	}
	start := time.Now()
	upload(srv, work, *n, *rows)
	log.Printf("wrote and uploaded %d objects of %d rows in %.1fs", *n, *rows, time.Since(start).Seconds())

	opts := storage.S3OptionsFromEnv()
	opts.Connections = *workers
	newStore := func() *storage.S3 {
		st, err := storage.NewS3(ctx, opts)
		if err != nil {
			fail(err)
		}
		return st
	}
	var figs []figure

	// Registration.
	c, err := catalog.Create(filepath.Join(work, "lake"), catalog.Options{})
	if err != nil {
		fail(err)
	}
	defer c.Close()
	st := newStore()
	t0 := time.Now()
	res, err := ingest.Add(c, "ev", []string{"s3://lake/ev/"}, ingest.Options{Create: true, Objects: st, Workers: *workers})
	if err != nil {
		fail(err)
	}
	figs = append(figs, figure{What: fmt.Sprintf("rocklake add, %d objects", res.Files), Requests: res.Fetched.Requests, Bytes: res.Fetched.Bytes,
		Millis: ms(time.Since(t0)), Note: fmt.Sprintf("%d LIST pages + %d footer GETs", (*n+999)/1000, res.Fetched.Requests-int64((*n+999)/1000))})

	// A catalog-less reader: LIST, then every footer.
	st = newStore()
	t0 = time.Now()
	footers, err := scanFooters(ctx, st, *workers)
	if err != nil {
		fail(err)
	}
	scan := figure{What: "no catalog: LIST + every footer", Requests: st.Counts().Requests, Bytes: st.Counts().Bytes, Millis: ms(time.Since(t0)),
		Note: fmt.Sprintf("%d footers, %d in flight", footers, *workers)}
	figs = append(figs, scan)

	// Selective queries: one id, in one object.
	e, err := engine.New(c)
	if err != nil {
		fail(err)
	}
	defer e.Close()
	st = newStore()
	e.UseObjects(st, &storage.Cache{Dir: filepath.Join(work, "cache")})
	query := func(id int) (engine.ObjectReads, time.Duration) {
		t0 := time.Now()
		r, err := e.Query(ctx, fmt.Sprintf("SELECT count(*), sum(v) FROM ev WHERE id = %d", id), engine.QueryOptions{Snapshot: catalog.Latest})
		if err != nil {
			fail(err)
		}
		if len(r.Rows) != 1 || r.Rows[0][0] == nil || *r.Rows[0][0] != "1" {
			fail(fmt.Sprintf("id %d: %v rows, want one", id, r.Rows))
		}
		return r.Objects, time.Since(t0)
	}
	var cold, warm []time.Duration
	var coldReads, warmReads engine.ObjectReads
	for i := range *runs {
		id := (i*7919%*n)**rows + 17
		coldReads, _ = query(id) // first query of a new text parses it too: not timed
		os.RemoveAll(filepath.Join(work, "cache"))
		var d time.Duration
		coldReads, d = query(id)
		cold = append(cold, d)
		warmReads, d = query(id)
		warm = append(warm, d)
	}
	figs = append(figs,
		figure{What: "rocklake query, one id (object fetched)", Requests: coldReads.Requests, Bytes: coldReads.Bytes, Millis: ms(median(cold)),
			Note: fmt.Sprintf("%d of %d objects read; median of %d", coldReads.Objects, *n, *runs)},
		figure{What: "rocklake query, one id (object in the cache)", Requests: warmReads.Requests, Bytes: warmReads.Bytes, Millis: ms(median(warm)),
			Note: "one HEAD checks the ETag"})

	fmt.Printf("%d objects of %d rows, delay %v per request, %d in flight\n\n", *n, *rows, *delay, *workers)
	fmt.Printf("%-46s %10s %12s %10s  %s\n", "", "requests", "bytes", "ms", "")
	for _, f := range figs {
		fmt.Printf("%-46s %10d %12d %10.1f  %s\n", f.What, f.Requests, f.Bytes, f.Millis, f.Note)
	}
	fmt.Printf("\nfooter scan / cold query: %.0fx the time, %.0fx the requests\n", scan.Millis/ms(median(cold)), float64(scan.Requests)/float64(max(coldReads.Requests, 1)))
	if *big > 0 {
		bigLookup(ctx, srv, work, *big, *runs, *delay, "")
	}
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(map[string]any{"objects": *n, "rows": *rows, "delay_ms": ms(*delay), "in_flight": *workers, "figures": figs}, "", "  ")
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			fail(err)
		}
	}
}

// upload writes n files of an events table (ids in ascending blocks, so an
// id lies in one file) and puts each in s3://lake/ev/, 16 at a time.
func upload(srv *s3test.Server, dir string, n, rows int) {
	idx := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range idx {
				ids := make([]*types.Value, rows)
				ts := make([]*types.Value, rows)
				vs := make([]*types.Value, rows)
				for j := range rows {
					id := types.IntValue(int64(i*rows + j))
					t := types.IntValue(int64(i)*3_600_000_000 + int64(j)*1_000_000)
					v := types.FloatValue(float64(j) / 4)
					ids[j], ts[j], vs[j] = &id, &t, &v
				}
				p := filepath.Join(dir, fmt.Sprintf("h%06d.parquet", i))
				err := pqwrite.Write(p, []pqwrite.Column{
					{Name: "id", Type: types.MustParseType("int64"), Values: ids},
					{Name: "ts", Type: types.MustParseType("timestamp"), Values: ts},
					{Name: "v", Type: types.MustParseType("float64"), Values: vs},
				}, pqwrite.Options{})
				var data []byte
				if err == nil {
					data, err = os.ReadFile(p)
				}
				if err == nil {
					err = put(srv, fmt.Sprintf("s3://lake/ev/h%06d.parquet", i), data)
				}
				os.Remove(p)
				if err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
				}
			}
		}()
	}
	for i := range n {
		idx <- i
	}
	close(idx)
	wg.Wait()
	if firstErr != nil {
		fail(firstErr)
	}
}

// scanFooters is what a reader without a catalog does to find which
// objects hold matching rows: list them, then read every footer.
func scanFooters(ctx context.Context, st *storage.S3, workers int) (int, error) {
	objs, err := st.List(ctx, "s3://lake/ev/")
	if err != nil {
		return 0, err
	}
	idx := make(chan int)
	errs := make([]error, len(objs))
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range idx {
				rr, err := storage.NewRangeReader(ctx, st, objs[i], storage.FooterPrefetch)
				if err == nil {
					_, err = pqmeta.ReadAt(rr, objs[i].Size)
				}
				errs[i] = err
			}
		}()
	}
	for i := range objs {
		idx <- i
	}
	close(idx)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return 0, err
		}
	}
	return len(objs), nil
}

// delayProxy forwards to target after holding each request for d; it
// listens on loopback only.
func delayProxy(target string, d time.Duration) (string, func()) {
	u, err := url.Parse(target)
	if err != nil {
		fail(err)
	}
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(u)
		r.Out.Host = r.In.Host // the client signed the host it connected to
	}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail(err)
	}
	s := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(d)
		rp.ServeHTTP(w, r)
	})}
	go s.Serve(l)
	return "http://" + l.Addr().String(), func() { s.Close() }
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func put(srv *s3test.Server, loc string, data []byte) error {
	bucket, key, err := storage.ParseS3(loc)
	if err != nil {
		return err
	}
	_, err = srv.Client().PutObject(context.Background(), &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(data)})
	return err
}

// fail ends the program through main's deferred calls.
func fail(v ...any) { panic(fmt.Sprint(v...)) }
