package storage_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/rocklake/rocklake/internal/s3test"
	"github.com/rocklake/rocklake/storage"
)

func newStore(t *testing.T, srv *s3test.Server, endpoint string, opts storage.S3Options) *storage.S3 {
	t.Helper()
	for k, v := range srv.Env(endpoint) {
		t.Setenv(k, v)
	}
	env := storage.S3OptionsFromEnv()
	env.MaxAttempts, env.MaxBackoff, env.ResponseTimeout, env.DownAfter = opts.MaxAttempts, opts.MaxBackoff, opts.ResponseTimeout, opts.DownAfter
	st, err := storage.NewS3(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func put(t *testing.T, st *storage.S3, loc string, data []byte) {
	t.Helper()
	bucket, key, err := storage.ParseS3(loc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Client().PutObject(context.Background(), &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(data)}); err != nil {
		t.Fatalf("put %s: %v", loc, err)
	}
}

func payload(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) + seed
	}
	return b
}

func TestS3ListReadFetch(t *testing.T) {
	srv := s3test.Start(t)
	srv.Bucket(t, "lake")
	st := newStore(t, srv, srv.Endpoint, storage.S3Options{})
	ctx := context.Background()
	files := map[string][]byte{
		"s3://lake/ev/a.parquet":        payload(100, 1),
		"s3://lake/ev/b.parquet":        payload(200_000, 2),
		"s3://lake/ev/sub/c.parquet":    payload(10, 3),
		"s3://lake/ev/notes.txt":        payload(5, 4),
		"s3://lake/other/d.parquet":     payload(20, 5),
		"s3://lake/ev2/e.parquet":       payload(30, 6),
		"s3://lake/ev/x[1].parquet":     payload(40, 7),
		"s3://lake/ev/deep/x/y.PARQUET": payload(50, 8),
	}
	for loc, data := range files {
		put(t, st, loc, data)
	}
	locs := func(objs []storage.Object) string {
		var s []string
		for _, o := range objs {
			s = append(s, strings.TrimPrefix(o.Location, "s3://lake/"))
		}
		return strings.Join(s, " ")
	}
	for _, c := range []struct{ pattern, want string }{
		{"s3://lake/ev/", "ev/a.parquet ev/b.parquet ev/deep/x/y.PARQUET ev/sub/c.parquet ev/x[1].parquet"},
		{"s3://lake/ev", "ev/a.parquet ev/b.parquet ev/deep/x/y.PARQUET ev/sub/c.parquet ev/x[1].parquet"},
		{"s3://lake/ev/*.parquet", "ev/a.parquet ev/b.parquet ev/x[1].parquet"},
		{"s3://lake/ev*/*.parquet", "ev/a.parquet ev/b.parquet ev/x[1].parquet ev2/e.parquet"},
		{"s3://lake/ev/?.parquet", "ev/a.parquet ev/b.parquet"},
		{"s3://lake/ev/b.parquet", "ev/b.parquet"},
		{"s3://lake/ev/notes.txt", "ev/notes.txt"}, // named on its own: taken as named
	} {
		objs, err := st.List(ctx, c.pattern)
		if err != nil {
			t.Fatalf("List(%s): %v", c.pattern, err)
		}
		if got := locs(objs); got != c.want {
			t.Errorf("List(%s) = %s, want %s", c.pattern, got, c.want)
		}
	}
	for _, c := range []struct{ pattern, want string }{
		{"s3://lake/nothing.parquet", "no such object"},
		{"s3://lake/ev/*.csv", "no object matches"},
		{"s3://lake/other/sub/", "holds no .parquet objects"},
		{"s3://nobucket/x/", "bucket does not exist"},
		{"s3://lake/a/../ev/", "segment"},
		{"s3:///x", "no bucket"},
	} {
		_, err := st.List(ctx, c.pattern)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("List(%s): error %v, want one saying %q", c.pattern, err, c.want)
		}
	}
	objs, err := st.List(ctx, "s3://lake/ev/b.parquet")
	if err != nil {
		t.Fatal(err)
	}
	b := objs[0]
	if b.Size != 200_000 || b.ETag == "" {
		t.Fatalf("object %+v: want 200000 bytes and an ETag", b)
	}
	stat, err := st.Stat(ctx, b.Location)
	if err != nil || stat.ETag != b.ETag || stat.Size != b.Size {
		t.Fatalf("Stat = %+v, %v; List said %+v", stat, err, b)
	}
	before := st.Counts()
	got, err := st.ReadRange(ctx, b, 1000, 5000)
	if err != nil || !bytes.Equal(got, files[b.Location][1000:6000]) {
		t.Fatalf("ReadRange: %v (equal: %v)", err, bytes.Equal(got, files[b.Location][1000:6000]))
	}
	if d := st.Counts().Sub(before); d.Requests != 1 || d.Bytes != 5000 {
		t.Errorf("one ranged read of 5000 bytes counted %+v", d)
	}
	var buf bytes.Buffer
	if n, err := st.Fetch(ctx, b, &buf); err != nil || n != b.Size || !bytes.Equal(buf.Bytes(), files[b.Location]) {
		t.Fatalf("Fetch: %d bytes, %v", n, err)
	}
	if _, err := st.ReadRange(ctx, b, b.Size-10, 11); err == nil {
		t.Error("a read past the end succeeded")
	}

	// The footer reader: one request for the tail, none for reads inside it.
	before = st.Counts()
	rr, err := storage.NewRangeReader(ctx, st, b, storage.FooterPrefetch)
	if err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 8)
	if _, err := rr.ReadAt(p, b.Size-8); err != nil || !bytes.Equal(p, files[b.Location][b.Size-8:]) {
		t.Fatalf("tail read: %v", err)
	}
	if d := st.Counts().Sub(before); d.Requests != 1 || d.Bytes != storage.FooterPrefetch {
		t.Errorf("tail prefetch counted %+v, want 1 request of %d bytes", d, storage.FooterPrefetch)
	}
	if _, err := rr.ReadAt(p, 0); err != nil || !bytes.Equal(p, files[b.Location][:8]) {
		t.Fatalf("head read: %v", err)
	}
	if d := st.Counts().Sub(before); d.Requests != 2 {
		t.Errorf("a read outside the tail made %d requests in all, want 2", d.Requests)
	}
}

func TestS3ChangedAndVanished(t *testing.T) {
	srv := s3test.Start(t)
	srv.Bucket(t, "lake")
	st := newStore(t, srv, srv.Endpoint, storage.S3Options{})
	ctx := context.Background()
	put(t, st, "s3://lake/a.parquet", payload(1000, 1))
	put(t, st, "s3://lake/b.parquet", payload(1000, 2))
	objs, err := st.List(ctx, "s3://lake/")
	if err != nil {
		t.Fatal(err)
	}
	a, b := objs[0], objs[1]
	// Same size, other bytes: only the ETag tells.
	put(t, st, a.Location, payload(1000, 9))
	_, err = st.ReadRange(ctx, a, 0, 10)
	if !errors.Is(err, storage.ErrChanged) || !strings.Contains(err.Error(), a.Location) {
		t.Errorf("read of a rewritten object: %v, want ErrChanged naming it", err)
	}
	if _, err := st.Fetch(ctx, a, &bytes.Buffer{}); !errors.Is(err, storage.ErrChanged) {
		t.Errorf("fetch of a rewritten object: %v, want ErrChanged", err)
	}
	bucket, key, _ := storage.ParseS3(b.Location)
	if _, err := st.Client().DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &bucket, Key: aws.String(key)}); err != nil {
		t.Fatal(err)
	}
	_, err = st.ReadRange(ctx, b, 0, 10)
	if !errors.Is(err, storage.ErrNotFound) || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), b.Location) {
		t.Errorf("read of a deleted object: %v, want ErrNotFound naming it", err)
	}
}

func TestS3Faults(t *testing.T) {
	srv := s3test.Start(t)
	srv.Bucket(t, "lake")
	direct := newStore(t, srv, srv.Endpoint, storage.S3Options{})
	ctx := context.Background()
	data := payload(300_000, 3)
	put(t, direct, "s3://lake/f.parquet", data)
	obj, err := direct.Stat(ctx, "s3://lake/f.parquet")
	if err != nil {
		t.Fatal(err)
	}
	fast := storage.S3Options{MaxAttempts: 4, MaxBackoff: 20 * time.Millisecond, ResponseTimeout: 300 * time.Millisecond}
	for _, c := range []struct {
		name  string
		fault s3test.Fault
	}{
		{"slowdown", s3test.SlowDown},
		{"500", s3test.ServerError},
		{"dropped", s3test.Drop},
		{"truncated", s3test.Truncate},
		{"timeout", s3test.Delay},
	} {
		t.Run(c.name, func(t *testing.T) {
			// The first two requests for each object fail, the rest pass.
			seen := map[string]int{}
			var mu = make(chan struct{}, 1)
			proxy := srv.Proxy(t, func(r *http.Request, n int64) s3test.Fault {
				mu <- struct{}{}
				defer func() { <-mu }()
				k := r.Method + r.URL.Path
				seen[k]++
				if seen[k] <= 2 {
					return c.fault
				}
				return s3test.Pass
			})
			proxy.Delay = time.Second
			st := newStore(t, srv, proxy.Endpoint, fast)
			var buf bytes.Buffer
			if _, err := st.Fetch(ctx, obj, &buf); err != nil {
				t.Fatalf("fetch through two %s faults: %v", c.name, err)
			}
			if !bytes.Equal(buf.Bytes(), data) {
				t.Fatalf("fetch through %s faults returned other bytes", c.name)
			}
			if proxy.Faults.Load() < 2 {
				t.Errorf("only %d faults were injected", proxy.Faults.Load())
			}
			if got := st.Counts().Requests; got < 3 {
				t.Errorf("%d requests counted, want the attempts too (>= 3)", got)
			}
		})
	}
	t.Run("persistent", func(t *testing.T) {
		proxy := srv.Proxy(t, func(*http.Request, int64) s3test.Fault { return s3test.SlowDown })
		st := newStore(t, srv, proxy.Endpoint, fast)
		_, err := st.ReadRange(ctx, obj, 0, 100)
		if err == nil || !strings.Contains(err.Error(), obj.Location) || !strings.Contains(err.Error(), "SlowDown") {
			t.Fatalf("persistent throttling: %v, want an error naming the object and SlowDown", err)
		}
		if got := proxy.Requests.Load(); got != int64(fast.MaxAttempts) {
			t.Errorf("%d attempts, want MaxAttempts = %d", got, fast.MaxAttempts)
		}
	})
}

func TestS3SecretsStayOut(t *testing.T) {
	srv := s3test.Start(t)
	srv.Bucket(t, "lake")
	st := newStore(t, srv, srv.Endpoint, storage.S3Options{})
	put(t, st, "s3://lake/a.parquet", payload(10, 1))
	wrong := "WRONG" + srv.SecretKey[5:]
	t.Setenv("AWS_SECRET_ACCESS_KEY", wrong)
	bad, err := storage.NewS3(context.Background(), storage.S3OptionsFromEnv())
	if err != nil {
		t.Fatal(err)
	}
	_, err = bad.List(context.Background(), "s3://lake/")
	if err == nil {
		t.Fatal("a wrong secret was accepted")
	}
	msg := fmt.Sprintf("%v %+v", err, err)
	for _, secret := range []string{srv.SecretKey, wrong} {
		if strings.Contains(msg, secret) {
			t.Fatalf("the error shows a secret: %s", msg)
		}
	}
	if !strings.Contains(msg, "s3://lake/") || !strings.Contains(msg, "AWS_SECRET_ACCESS_KEY") {
		t.Errorf("error %q should name the location and what to check", err)
	}
}

func TestLocal(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	for _, n := range []string{"a.parquet", "b.parquet", "c.txt"} {
		if err := os.WriteFile(filepath.Join(dir, n), payload(100, 1), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var st storage.Store = storage.Local{}
	objs, err := st.List(ctx, dir)
	if err != nil || len(objs) != 2 {
		t.Fatalf("List(dir) = %v, %v", objs, err)
	}
	if objs, err := st.List(ctx, filepath.Join(dir, "*.txt")); err != nil || len(objs) != 1 {
		t.Fatalf("List(glob) = %v, %v", objs, err)
	}
	got, err := st.ReadRange(ctx, objs[0], 10, 5)
	if err != nil || !bytes.Equal(got, payload(100, 1)[10:15]) {
		t.Fatalf("ReadRange: %v", err)
	}
	if err := os.WriteFile(objs[0].Location, payload(101, 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ReadRange(ctx, objs[0], 0, 5); !errors.Is(err, storage.ErrChanged) {
		t.Errorf("read of a rewritten file: %v, want ErrChanged", err)
	}
	os.Remove(objs[1].Location)
	if _, err := st.Fetch(ctx, objs[1], &bytes.Buffer{}); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("fetch of a removed file: %v, want ErrNotFound", err)
	}
}

// Put uploads small files in one request and large ones in parts; what it
// describes is what the store then says; Delete removes it.
func TestS3PutDelete(t *testing.T) {
	srv := s3test.Start(t)
	srv.Bucket(t, "lake")
	st := newStore(t, srv, srv.Endpoint, storage.S3Options{})
	ctx := context.Background()
	dir := t.TempDir()
	for _, n := range []int{10, storage.PartSize + 12345} {
		p := filepath.Join(dir, fmt.Sprint(n))
		data := payload(n, byte(n))
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		loc := fmt.Sprintf("s3://lake/up/%d.parquet", n)
		before := st.Counts()
		o, err := st.Put(ctx, loc, p)
		if err != nil {
			t.Fatalf("put %d bytes: %v", n, err)
		}
		reqs := st.Counts().Sub(before).Requests
		if want := int64(1); n < storage.PartSize && reqs != want {
			t.Errorf("%d bytes: %d requests, want one PUT", n, reqs)
		}
		if n >= storage.PartSize && reqs != 4 {
			t.Errorf("%d bytes: %d requests, want create, two parts, complete", n, reqs)
		}
		now, err := st.Stat(ctx, loc)
		if err != nil || now.ETag != o.ETag || now.Size != int64(n) {
			t.Fatalf("after put: %+v, %v; put said %+v", now, err, o)
		}
		var buf bytes.Buffer
		if _, err := st.Fetch(ctx, o, &buf); err != nil || !bytes.Equal(buf.Bytes(), data) {
			t.Fatalf("read back: %v", err)
		}
		if err := st.Delete(ctx, loc); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Stat(ctx, loc); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("after delete: %v", err)
		}
		if err := st.Delete(ctx, loc); err != nil {
			t.Errorf("deleting a missing object: %v", err)
		}
	}
}

// ROCKLAKE_S3_CONNECTIONS sets the requests in flight; a value that is
// not a positive number leaves the default.
func TestS3ConnectionsFromEnv(t *testing.T) {
	for _, c := range []struct {
		env  string
		want int
	}{{"", 64}, {"8", 8}, {"200", 200}, {"0", 64}, {"-3", 64}, {"many", 64}} {
		t.Setenv("ROCKLAKE_S3_CONNECTIONS", c.env)
		st, err := storage.NewS3(context.Background(), storage.S3OptionsFromEnv())
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Connections(); got != c.want {
			t.Errorf("ROCKLAKE_S3_CONNECTIONS=%q: %d connections, want %d", c.env, got, c.want)
		}
	}
}

// ReadSmall reads an object in one GET, up to max bytes: one byte more is
// refused, a missing object is ErrNotFound, an empty one is no bytes. A
// LazyStore makes its store on first use, once, and reports its error
// to every call.
func TestS3ReadSmallAndLazyStore(t *testing.T) {
	srv := s3test.Start(t)
	srv.Bucket(t, "lake")
	st := newStore(t, srv, srv.Endpoint, storage.S3Options{})
	ctx := context.Background()
	for _, n := range []int{0, 1, 100} {
		loc := fmt.Sprintf("s3://lake/small/%d", n)
		data := payload(n, byte(n+1))
		if err := st.PutBytes(ctx, loc, data); err != nil {
			t.Fatal(err)
		}
		before := st.Counts()
		got, err := st.ReadSmall(ctx, loc, 100)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%d bytes: %q, %v", n, got, err)
		}
		if reqs := st.Counts().Sub(before).Requests; reqs != 1 {
			t.Errorf("%d bytes: %d requests, want one GET", n, reqs)
		}
		if n > 0 {
			if _, err := st.ReadSmall(ctx, loc, int64(n-1)); err == nil || !strings.Contains(err.Error(), "more than the") {
				t.Errorf("%d bytes read with a limit of %d: %v", n, n-1, err)
			}
		}
	}
	if _, err := st.ReadSmall(ctx, "s3://lake/small/none", 10); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("a missing object: %v", err)
	}

	made := 0
	lazy := storage.NewLazyStore(func() (storage.ObjectStore, error) { made++; return st, nil })
	if made != 0 {
		t.Fatal("made before use")
	}
	for range 2 {
		if got, err := lazy.ReadSmall(ctx, "s3://lake/small/1", 10); err != nil || len(got) != 1 {
			t.Fatalf("through the lazy store: %q, %v", got, err)
		}
	}
	if made != 1 {
		t.Errorf("made %d times", made)
	}
	// Unfinished multipart uploads, through the lazy store: listed in a
	// dry run, those started before the time given aborted, others left.
	bucket, key := "lake", "up/part-00001.parquet"
	if _, err := srv.Client().CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &bucket, Key: &key}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		before        time.Time
		dry           bool
		done, younger int
	}{{time.Now().Add(-time.Hour), false, 0, 1}, {time.Now().Add(time.Hour), true, 1, 0}, {time.Now().Add(time.Hour), false, 1, 0}, {time.Now().Add(time.Hour), false, 0, 0}} {
		done, younger, err := lazy.AbortUploads(ctx, "s3://lake/up/", c.before, c.dry)
		if err != nil || len(done) != c.done || younger != c.younger || (len(done) == 1 && !strings.HasPrefix(done[0], "s3://lake/"+key+" (upload ")) {
			t.Fatalf("abort uploads before %s (dry run %v): %v, %d younger, %v; want %d and %d", c.before, c.dry, done, younger, err, c.done, c.younger)
		}
	}
	bad := storage.NewLazyStore(func() (storage.ObjectStore, error) { return nil, errors.New("no settings") })
	if err := bad.Delete(ctx, "s3://lake/x"); err == nil || err.Error() != "no settings" {
		t.Errorf("a store that cannot be made: %v", err)
	}
	if _, err := bad.Walk(ctx, "s3://lake/", nil); err == nil {
		t.Error("a store that cannot be made walked")
	}
}
