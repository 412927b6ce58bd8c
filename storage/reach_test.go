package storage_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rocklake/rocklake/internal/s3test"
	"github.com/rocklake/rocklake/storage"
)

// putMany writes n small objects under s3://lake/many/ and lists them.
func putMany(t *testing.T, srv *s3test.Server, st *storage.S3, n int) []storage.Object {
	t.Helper()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			srv.Put(t, fmt.Sprintf("s3://lake/many/%05d.parquet", i), payload(100, byte(i)))
		}()
	}
	wg.Wait()
	objs, err := st.List(context.Background(), "s3://lake/many/")
	if err != nil || len(objs) != n {
		t.Fatalf("listed %d objects, %v; want %d", len(objs), err, n)
	}
	return objs
}

// fetchAll reads every object through the cache, 16 at a time, as a query
// fetches its kept objects.
func fetchAll(cache *storage.Cache, st storage.Store, objs []storage.Object) error {
	return storage.ForEach(len(objs), 16, func(i int) error {
		_, _, release, err := cache.Get(context.Background(), st, objs[i])
		if err == nil {
			release()
		}
		return err
	})
}

// A store that went down fails a fan-out over many objects once: one
// short error naming the endpoint and the objects not reached, after one
// request's retry budget of attempts (spent by all requests together),
// not MaxAttempts per object. Requests made while it stays down make no
// attempt; once it is back, requests succeed again.
func TestS3Unreachable(t *testing.T) {
	srv := s3test.Start(t)
	srv.Bucket(t, "lake")
	const workers = 16
	opts := storage.S3Options{MaxAttempts: 4, MaxBackoff: 20 * time.Millisecond, DownAfter: time.Minute}
	st := newStore(t, srv, srv.Endpoint, opts)
	objs := putMany(t, srv, st, 2000)
	host := strings.TrimPrefix(srv.Endpoint, "http://")

	srv.Stop()
	cache := &storage.Cache{Dir: t.TempDir()}
	before := st.Counts()
	start := time.Now()
	err := fetchAll(cache, st, objs)
	took := time.Since(start)
	attempts := st.Counts().Sub(before).Requests
	t.Logf("2000 objects, store down: %d attempts, %s: %v", attempts, took, err)
	if !errors.Is(err, storage.ErrUnreachable) {
		t.Fatalf("fetch with the store down: %v, want ErrUnreachable", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, host) || !strings.Contains(msg, "2000 objects not reached") {
		t.Errorf("error %q should name the endpoint %s and the 2000 objects not reached", msg, host)
	}
	if strings.Contains(msg, "\n") || len(msg) > 300 {
		t.Errorf("error of %d bytes (or several lines): %q", len(msg), msg)
	}
	for _, secret := range []string{srv.SecretKey, srv.AccessKey} {
		if strings.Contains(msg, secret) {
			t.Fatal("the error shows a credential")
		}
	}
	// The budget is MaxAttempts attempts in all: those of the requests
	// already in flight when the first failed, and the probes after.
	if attempts < int64(opts.MaxAttempts) || attempts > int64(workers+opts.MaxAttempts) {
		t.Errorf("%d attempts, want between MaxAttempts (%d) and workers + MaxAttempts (%d)", attempts, opts.MaxAttempts, workers+opts.MaxAttempts)
	}

	// While it stays down, requests fail at once with the same error: at
	// most one probes (once the cool-down is over).
	before = st.Counts()
	for _, o := range objs[:50] {
		if _, err := st.Stat(context.Background(), o.Location); !errors.Is(err, storage.ErrUnreachable) || !strings.Contains(err.Error(), o.Location) {
			t.Fatalf("stat with the store down: %v, want ErrUnreachable naming the object", err)
		}
	}
	if _, err := storage.OpenParts(context.Background(), st, cache, objs[0], storage.FooterPrefetch); !errors.Is(err, storage.ErrUnreachable) {
		t.Errorf("open parts with the store down: %v", err)
	}
	if d := st.Counts().Sub(before).Requests; d > 1 {
		t.Errorf("51 requests to a store known to be down made %d attempts, want at most 1", d)
	}

	// Back up: after the cool-down, a request probes and succeeds.
	srv.Restart(t)
	var serr error
	for range 300 {
		if _, serr = st.Stat(context.Background(), objs[0].Location); serr == nil {
			break
		}
		if !errors.Is(serr, storage.ErrUnreachable) {
			t.Fatalf("stat while the store comes back: %v", serr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if serr != nil {
		t.Fatalf("the store is back, but requests still fail: %v", serr)
	}
	if err := fetchAll(cache, st, objs); err != nil {
		t.Fatalf("fetch once the store is back: %v", err)
	}
}

// Requests in flight when the store goes away wait while one probes, and
// all go on when it is back within the budget: a restart of the server is
// no failure. The failed attempts are those in flight when the first
// failed and one probe per pause (at least MaxBackoff/2), not one per
// waiting request and pause.
func TestS3UnreachableWithinBudget(t *testing.T) {
	srv := s3test.Start(t)
	srv.Bucket(t, "lake")
	opts := storage.S3Options{MaxAttempts: 1000, MaxBackoff: 100 * time.Millisecond, DownAfter: time.Minute}
	st := newStore(t, srv, srv.Endpoint, opts)
	objs := putMany(t, srv, st, 64)
	srv.Stop()
	before := st.Counts()
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- fetchAll(&storage.Cache{Dir: t.TempDir()}, st, objs) }()
	for st.Counts().Sub(before).Requests < 20 {
		time.Sleep(5 * time.Millisecond)
	}
	srv.Restart(t)
	if err := <-done; err != nil {
		t.Fatalf("requests across a restart of the store: %v", err)
	}
	elapsed := time.Since(start)
	failed := st.Counts().Sub(before).Requests - int64(len(objs))
	probes := 1 + int64(elapsed/(opts.MaxBackoff/2))
	t.Logf("%d failed attempts over %s", failed, elapsed)
	if failed > 16+probes {
		t.Errorf("%d failed attempts over %s: more than the 16 in flight and %d probes", failed, elapsed, probes)
	}
}

// A name that does not resolve is as unreachable as a refused connection.
func TestS3UnresolvableEndpoint(t *testing.T) {
	srv := s3test.Start(t)
	opts := storage.S3Options{MaxAttempts: 3, MaxBackoff: 10 * time.Millisecond, DownAfter: time.Minute}
	st := newStore(t, srv, "http://nothing-listens.invalid:9000", opts)
	objs := make([]storage.Object, 300)
	for i := range objs {
		objs[i] = storage.Object{Location: fmt.Sprintf("s3://lake/x/%d.parquet", i), Size: 100, ETag: `"e"`}
	}
	err := fetchAll(&storage.Cache{Dir: t.TempDir()}, st, objs)
	if !errors.Is(err, storage.ErrUnreachable) || !strings.Contains(err.Error(), "nothing-listens.invalid") || !strings.Contains(err.Error(), "300 objects not reached") {
		t.Fatalf("unresolvable endpoint: %v", err)
	}
	if n := st.Counts().Requests; n > int64(16+opts.MaxAttempts) {
		t.Errorf("%d attempts", n)
	}
	u, _ := url.Parse(srv.Endpoint)
	if strings.Contains(err.Error(), u.Host) {
		t.Error("the error names another endpoint")
	}
}
