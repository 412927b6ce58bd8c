//go:build linux

package storage_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rocklake/rocklake/internal/s3test"
	"github.com/rocklake/rocklake/storage"
)

// blackhole is a loopback address where connecting times out: a socket
// listening with a backlog of 0 that never accepts, its one queued
// connection taken, so that Linux drops every further SYN.
func blackhole(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if c2, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
		c2.Close()
		t.Skip("connections to a full backlog are not dropped here")
	}
	return addr
}

// Connecting that times out is a store down too: the requests in flight
// all wait out one connect timeout (at most DownAfter), not MaxAttempts
// each.
func TestS3ConnectTimeout(t *testing.T) {
	srv := s3test.Start(t)
	addr := blackhole(t)
	opts := storage.S3Options{MaxAttempts: 6, MaxBackoff: 50 * time.Millisecond, DownAfter: 500 * time.Millisecond}
	st := newStore(t, srv, "http://"+addr, opts)
	objs := make([]storage.Object, 200)
	for i := range objs {
		objs[i] = storage.Object{Location: fmt.Sprintf("s3://lake/x/%d.parquet", i), Size: 100, ETag: `"e"`}
	}
	start := time.Now()
	err := fetchAll(&storage.Cache{Dir: t.TempDir()}, st, objs)
	t.Logf("%s, %d attempts: %v", time.Since(start), st.Counts().Requests, err)
	if !errors.Is(err, storage.ErrUnreachable) || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "200 objects not reached") {
		t.Fatalf("connect timeouts: %v", err)
	}
	if n := st.Counts().Requests; n > int64(16+opts.MaxAttempts) {
		t.Errorf("%d attempts, want at most the 16 in flight and MaxAttempts", n)
	}

	// After the cool-down (a second) one request probes; while its
	// connect times out, every other request fails at once, without an
	// attempt.
	time.Sleep(1100 * time.Millisecond)
	before := st.Counts().Requests
	probed := make(chan error, 1)
	go func() {
		_, err := st.Stat(context.Background(), objs[0].Location)
		probed <- err
	}()
	for st.Counts().Requests == before {
		time.Sleep(time.Millisecond)
	}
	for _, o := range objs[1:21] {
		if _, err := st.Stat(context.Background(), o.Location); !errors.Is(err, storage.ErrUnreachable) {
			t.Fatalf("a request while the probe is in flight: %v", err)
		}
	}
	select {
	case <-probed:
		t.Error("the requests beside the probe waited for it")
	default:
	}
	if n := st.Counts().Requests - before; n != 1 {
		t.Errorf("the probe and 20 requests beside it made %d attempts, want 1", n)
	}
	if err := <-probed; !errors.Is(err, storage.ErrUnreachable) {
		t.Errorf("the probe: %v", err)
	}
}
