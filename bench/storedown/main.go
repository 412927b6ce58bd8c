// Command storedown measures how rocklake fails when its object store is
// down: a query over N registered objects and an add of them, with the
// server stopped (connections refused) and, with -timeouts, at an address
// where connecting times out (Linux: a listen backlog that drops SYNs),
// with the store's default options (MaxAttempts 6, MaxBackoff 2 s, a
// connect timeout of 10 s). It prints the time to fail, the attempts made
// (counted at the HTTP transport) and the size of the error.
//
// It starts a real S3-compatible server (versitygw, see internal/s3test)
// on loopback, writes and registers the objects, then stops it.
//
//	go run ./bench/storedown -objects 2000 -timeouts -json bench/results/storedown.json
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/internal/s3test"
	"github.com/rocklake/rocklake/storage"
	"github.com/rocklake/rocklake/types"
)

type figure struct {
	What       string  `json:"what"`
	Millis     float64 `json:"ms"`
	Attempts   int64   `json:"attempts"`
	ErrorBytes int     `json:"error_bytes"`
	ErrorLines int     `json:"error_lines"`
	Error      string  `json:"error_start"`
}

func main() {
	n := flag.Int("objects", 2000, "objects to register, then fail to read")
	timeouts := flag.Bool("timeouts", false, "also where connecting times out")
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
	work, err := os.MkdirTemp("", "rocklake-bench-storedown-")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(work)
	upload(srv, work, *n)

	c, err := catalog.Create(filepath.Join(work, "lake"), catalog.Options{})
	if err != nil {
		fail(err)
	}
	defer c.Close()
	newStore := func() *storage.S3 {
		st, err := storage.NewS3(ctx, storage.S3OptionsFromEnv())
		if err != nil {
			fail(err)
		}
		return st
	}
	if _, err := ingest.Add(c, "ev", []string{"s3://lake/ev/"}, ingest.Options{Create: true, Objects: newStore()}); err != nil {
		fail(err)
	}
	e, err := engine.New(c)
	if err != nil {
		fail(err)
	}
	defer e.Close()
	st := newStore()
	e.UseObjects(st, &storage.Cache{Dir: filepath.Join(work, "cache")})

	srv.Stop()
	var figs []figure
	measure := func(what string, st *storage.S3, f func() error) {
		before := st.Counts()
		t0 := time.Now()
		err := f()
		d := time.Since(t0)
		if err == nil {
			fail(what + ": succeeded with the store down")
		}
		msg := err.Error()
		first, _, _ := strings.Cut(msg, "\n")
		figs = append(figs, figure{What: what, Millis: float64(d.Microseconds()) / 1000, Attempts: st.Counts().Sub(before).Requests,
			ErrorBytes: len(msg), ErrorLines: strings.Count(msg, "\n") + 1, Error: first[:min(len(first), 300)]})
	}
	both := func(how string, st *storage.S3, newStore func() *storage.S3) {
		e.UseObjects(st, &storage.Cache{Dir: filepath.Join(work, "cache")})
		measure(fmt.Sprintf("query over %d objects, %s", *n, how), st, func() error {
			_, err := e.Query(ctx, "SELECT sum(id % 7) FROM ev", engine.QueryOptions{Snapshot: catalog.Latest})
			return err
		})
		add := newStore()
		measure(fmt.Sprintf("add of their prefix, %s", how), add, func() error {
			_, err := ingest.Add(c, "ev2", []string{"s3://lake/ev/"}, ingest.Options{Create: true, Objects: add})
			return err
		})
	}
	both("refused", st, newStore)
	if *timeouts {
		addr, release, err := blackhole()
		if err != nil {
			fail(err)
		}
		defer release()
		os.Setenv("AWS_ENDPOINT_URL", "http://"+addr)
		both("timing out", newStore(), newStore)
	}

	fmt.Printf("object store down, default options; %d objects\n\n", *n)
	fmt.Printf("%-40s %10s %9s %12s %7s\n", "", "ms", "attempts", "error bytes", "lines")
	for _, f := range figs {
		fmt.Printf("%-40s %10.1f %9d %12d %7d\n", f.What, f.Millis, f.Attempts, f.ErrorBytes, f.ErrorLines)
	}
	fmt.Println()
	for _, f := range figs {
		fmt.Printf("%s: %s\n", f.What, f.Error)
	}
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(map[string]any{"objects": *n, "figures": figs}, "", "  ")
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			fail(err)
		}
	}
}

// upload writes n small Parquet objects under s3://lake/ev/, 16 at a time.
func upload(srv *s3test.Server, dir string, n int) {
	p := filepath.Join(dir, "one.parquet")
	ids := make([]*types.Value, 100)
	for i := range ids {
		v := types.IntValue(int64(i))
		ids[i] = &v
	}
	if err := pqwrite.Write(p, []pqwrite.Column{{Name: "id", Type: types.MustParseType("int64"), Values: ids}}, pqwrite.Options{}); err != nil {
		fail(err)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		fail(err)
	}
	idx := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range idx {
				bucket, key := "lake", fmt.Sprintf("ev/%06d.parquet", i)
				if _, err := srv.Client().PutObject(context.Background(), &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(data)}); err != nil {
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

// fail ends the program through main's deferred calls.
func fail(v any) { panic(v) }
