// Command cachecheck measures what checking cached copies costs: reading
// N objects through the object cache (storage.Cache.Get, 16 at a time, as
// a query fetches its kept objects), cold (every object fetched into an
// empty cache) and warm (every object in the cache: one HEAD each), with
// the CRC-32C check and without it (Cache.NoChecksum), side by side in
// one run, alternating which goes first. The figures are medians.
//
// It starts a real S3-compatible server (versitygw, see internal/s3test)
// on loopback.
//
//	go run ./bench/cachecheck -objects 1000 -size 262144 -runs 7 -json bench/results/cachecheck.json
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/rocklake/rocklake/internal/s3test"
	"github.com/rocklake/rocklake/storage"
)

type figure struct {
	What     string  `json:"what"`
	Check    bool    `json:"check"`
	Millis   float64 `json:"ms"`
	Q1       float64 `json:"ms_q1"`
	Q3       float64 `json:"ms_q3"`
	PerObjUs float64 `json:"us_per_object"`
	Runs     int     `json:"runs"`
}

func main() {
	n := flag.Int("objects", 1000, "objects to read through the cache")
	size := flag.Int("size", 256<<10, "bytes per object")
	runs := flag.Int("runs", 7, "runs of each measurement (medians)")
	jsonOut := flag.String("json", "", "write the figures here")
	flag.Parse()
	ctx := context.Background()

	srv, err := s3test.Launch()
	if err != nil {
		log.Fatal(err)
	}
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
	for k, v := range srv.Env(srv.Endpoint) {
		os.Setenv(k, v)
	}
	work, err := os.MkdirTemp("", "rocklake-bench-cachecheck-")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(work)

	upload(srv, *n, *size)
	st, err := storage.NewS3(ctx, storage.S3OptionsFromEnv())
	if err != nil {
		fail(err)
	}
	objs, err := st.List(ctx, "s3://lake/c/")
	if err != nil || len(objs) != *n {
		fail(fmt.Sprintf("listed %d objects, %v", len(objs), err))
	}

	readAll := func(c *storage.Cache) time.Duration {
		t0 := time.Now()
		err := storage.ForEach(len(objs), 16, func(i int) error {
			_, _, release, err := c.Get(ctx, st, objs[i])
			if err == nil {
				release()
			}
			return err
		})
		if err != nil {
			fail(err)
		}
		return time.Since(t0)
	}
	times := map[string][]time.Duration{}
	key := func(temp string, check bool) string { return fmt.Sprintf("%s/%v", temp, check) }
	for r := range *runs + 1 {
		order := []bool{true, false}
		if r%2 == 1 {
			order = []bool{false, true}
		}
		for _, check := range order {
			dir := filepath.Join(work, fmt.Sprintf("cache-%d-%v", r, check))
			c := &storage.Cache{Dir: dir, NoChecksum: !check}
			cold := readAll(c)
			warm := readAll(c)
			if r > 0 { // the first run warms the server and the client up
				times[key("cold", check)] = append(times[key("cold", check)], cold)
				times[key("warm", check)] = append(times[key("warm", check)], warm)
			}
			os.RemoveAll(dir)
		}
	}

	var figs []figure
	fmt.Printf("%d objects of %d bytes through the object cache, 16 at a time; medians of %d runs\n\n", *n, *size, *runs)
	fmt.Printf("%-34s %10s %19s %14s\n", "", "ms", "quartiles", "µs per object")
	for _, temp := range []string{"cold", "warm"} {
		for _, check := range []bool{false, true} {
			ts := times[key(temp, check)]
			m := quantile(ts, 2)
			what := fmt.Sprintf("%s (%s)", temp, map[bool]string{false: "no check", true: "CRC-32C check"}[check])
			f := figure{What: what, Check: check, Millis: ms(m), Q1: ms(quantile(ts, 1)), Q3: ms(quantile(ts, 3)),
				PerObjUs: float64(m.Microseconds()) / float64(*n), Runs: *runs}
			figs = append(figs, f)
			fmt.Printf("%-34s %10.1f %9.1f–%-9.1f %14.1f\n", f.What, f.Millis, f.Q1, f.Q3, f.PerObjUs)
		}
	}
	fmt.Println()
	for i, temp := range []string{"cold", "warm"} {
		off, on := figs[2*i], figs[2*i+1]
		fmt.Printf("%s: the check costs %+.1f ms (%+.1f%%), %+.1f µs per object\n", temp, on.Millis-off.Millis, 100*(on.Millis-off.Millis)/off.Millis, on.PerObjUs-off.PerObjUs)
	}
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(map[string]any{"objects": *n, "bytes_per_object": *size, "in_flight": 16, "runs": *runs, "figures": figs}, "", "  ")
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			fail(err)
		}
	}
}

// upload puts n objects of size random bytes in s3://lake/c/, 16 at a time.
func upload(srv *s3test.Server, n, size int) {
	idx := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range idx {
				data := make([]byte, size)
				rng := rand.New(rand.NewPCG(uint64(i), 1))
				for j := range data {
					data[j] = byte(rng.Uint32())
				}
				bucket, key := "lake", fmt.Sprintf("c/%06d.parquet", i)
				_, err := srv.Client().PutObject(context.Background(), &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(data)})
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

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// quantile is the q-th quartile of ds (2: the median).
func quantile(ds []time.Duration, q int) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)-1)*q/4]
}

// fail ends the program through main's deferred calls.
func fail(v any) { panic(v) }
