package maintain

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/internal/s3test"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/storage"
	"github.com/rocklake/rocklake/types"
)

// keysUnder lists the keys of a bucket under a prefix.
func keysUnder(t *testing.T, srv *s3test.Server, bucket, prefix string) []string {
	t.Helper()
	return srv.Keys(t, bucket, prefix)
}

// A rewrite of objects interrupted after its uploads commits nothing and
// deletes every object it uploaded; run again, it rewrites the table with
// the same rows.
func TestRewriteObjectsInterrupted(t *testing.T) {
	srv := s3test.StartWithEnv(t, "lake")
	dir := t.TempDir()
	for f := range 3 {
		vals := make([]*types.Value, 500)
		for i := range vals {
			v := types.IntValue(int64((i*31 + f*7) % 997))
			vals[i] = &v
		}
		p := filepath.Join(dir, fmt.Sprintf("f%d.parquet", f))
		if err := pqwrite.Write(p, []pqwrite.Column{{Name: "x", Type: types.MustParseType("int64"), Values: vals}}, pqwrite.Options{}); err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(p)
		srv.Put(t, fmt.Sprintf("s3://lake/t/f%d.parquet", f), data)
	}
	st, err := storage.NewS3(context.Background(), storage.S3OptionsFromEnv())
	if err != nil {
		t.Fatal(err)
	}
	c, err := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ingest.Add(c, "t", []string{"s3://lake/t/"}, ingest.Options{Create: true, Objects: st}); err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	e.UseObjects(st, &storage.Cache{Dir: t.TempDir()})
	answer := func() string {
		res, err := e.Query(context.Background(), "SELECT count(*), sum(x), min(x), max(x) FROM t", engine.QueryOptions{Snapshot: catalog.Latest, NoMetadataAnswers: true})
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(*res.Rows[0][0], *res.Rows[0][1], *res.Rows[0][2], *res.Rows[0][3])
	}
	want := answer()

	ctx, cancel := context.WithCancelCause(context.Background())
	var uploaded []string
	afterUpload = func(up []string) {
		uploaded = append(uploaded, up...)
		cancel(errors.New("interrupted"))
	}
	defer func() { afterUpload = nil }()
	_, err = Optimize(ctx, e, "t", OptimizeOptions{SortBy: []string{"x"}, RowsPerFile: 400})
	afterUpload = nil
	if err == nil || len(uploaded) != 4 {
		t.Fatalf("interrupted optimize: %v, uploaded %v", err, uploaded)
	}
	if keys := keysUnder(t, srv, "lake", "t/_rocklake/"); len(keys) != 0 {
		t.Errorf("an interrupted rewrite left %v", keys)
	}
	r, _ := c.Read(catalog.Latest)
	snap := r.Snapshot().ID
	r.Close()
	if snap != 1 {
		t.Errorf("an interrupted rewrite committed: snapshot %d", snap)
	}

	res, err := Optimize(context.Background(), e, "t", OptimizeOptions{SortBy: []string{"x"}, RowsPerFile: 400})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Dir, "s3://lake/t/_rocklake/table-1/optimize-1-") || res.FilesAfter != 4 {
		t.Errorf("optimize: %+v", res)
	}
	if keys := keysUnder(t, srv, "lake", "t/_rocklake/"); len(keys) != 4 {
		t.Errorf("after optimize: %v", keys)
	}
	if got := answer(); got != want {
		t.Errorf("after optimize %s, before %s", got, want)
	}
}

// An INSERT into a table of objects that stalls after its uploads past
// its lease's expiry loses them to cleanup --orphans, and its commit then
// fails (ErrLeaseLost) instead of registering objects that are gone: the
// table keeps its rows, and nothing of the write is left in the bucket.
// One whose lease is live keeps its uploads and commits.
func TestObjectWriteStalledPastItsLease(t *testing.T) {
	srv, st, c, e := objectWriteLake(t)
	ctx := context.Background()
	var err error
	opts := WriteOptions{Query: engine.QueryOptions{Snapshot: catalog.Latest}}
	if _, err := Write(ctx, e, "CREATE TABLE t AS SELECT i AS x FROM range(100) r(i)", opts); err != nil {
		t.Fatal(err)
	}
	count := func() string {
		res, err := e.Query(ctx, "SELECT count(*) FROM t", engine.QueryOptions{Snapshot: catalog.Latest, NoMetadataAnswers: true})
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(*res.Rows[0][0])
	}
	for _, stalled := range []bool{true, false} {
		before := count()
		reached, resume := make(chan []string), make(chan struct{})
		afterUpload = func(up []string) { reached <- up; <-resume }
		done := make(chan error)
		go func() {
			_, err := Write(ctx, e, "INSERT INTO t SELECT i AS x FROM range(50) r(i)", opts)
			done <- err
		}()
		up := <-reached
		res, err := orphanCleanup(c, st, stalled)
		if err != nil {
			t.Fatal(err)
		}
		close(resume)
		err = <-done
		afterUpload = nil
		if !stalled {
			if err != nil || len(res.Deleted) != 0 || len(res.InUse) != 1 {
				t.Fatalf("a live write: %v; cleanup %+v", err, res)
			}
			if got := count(); got == before {
				t.Fatalf("a live write committed nothing: %s rows", got)
			}
			continue
		}
		if !slices.Equal(res.Deleted, up) || len(res.Expired) != 1 {
			t.Fatalf("cleanup of a stalled write's uploads %v: %+v", up, res)
		}
		if !errors.Is(err, catalog.ErrLeaseLost) {
			t.Fatalf("the stalled write: %v", err)
		}
		if got := count(); got != before {
			t.Fatalf("%s rows after a write that failed, %s before", got, before)
		}
		prefix := strings.TrimPrefix(up[0][:strings.LastIndexByte(up[0], '/')+1], "s3://lake/")
		if left := keysUnder(t, srv, "lake", prefix); len(left) > 0 {
			t.Fatalf("the failed write left %v", left)
		}
	}
	rep, err := Verify(ctx, e, "t", catalog.Latest, false)
	if err != nil || len(rep.Problems) > 0 {
		t.Fatalf("verify: %v %+v", err, rep)
	}
}

// objectWriteLake is a catalog whose data root is s3://lake/root/ on a
// versitygw of the test's, with an engine writing there.
func objectWriteLake(t *testing.T) (*s3test.Server, *storage.S3, *catalog.Catalog, *engine.Engine) {
	t.Helper()
	srv := s3test.StartWithEnv(t, "lake")
	st, err := storage.NewS3(context.Background(), storage.S3OptionsFromEnv())
	if err != nil {
		t.Fatal(err)
	}
	c, err := catalog.CreateInStore(kvtest.Store(t), catalog.Options{DataRoot: "s3://lake/root/"})
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	e.UseObjects(st, &storage.Cache{Dir: t.TempDir()})
	return srv, st, c, e
}

// orphanCleanup runs cleanup --orphans with no grace period; stalled, as
// if every lease were past its expiry (a writer that stopped renewing).
func orphanCleanup(c *catalog.Catalog, st *storage.S3, stalled bool) (*catalog.OrphanResult, error) {
	if stalled {
		defer func(e time.Duration) { catalog.LeaseExpiry = e }(catalog.LeaseExpiry)
		catalog.LeaseExpiry = -time.Minute
	}
	return c.DeleteOrphans(catalog.OrphanOptions{Grace: -1, Objects: st})
}

// A transaction's statements writing objects hold their prefixes' leases
// until it ends: cleanup --orphans leaves them alone while they are live,
// and the COMMIT lands; a ROLLBACK leaves nothing in the bucket; a
// transaction held past its leases' expiry loses its objects to cleanup,
// and its COMMIT then fails (ErrLeaseLost) with nothing committed.
func TestObjectTxnHoldsItsLeases(t *testing.T) {
	ctx := context.Background()
	for _, end := range []string{"COMMIT", "ROLLBACK", "stalled"} {
		t.Run(end, func(t *testing.T) {
			srv, st, c, e := objectWriteLake(t)
			mustWrite(t, e, "CREATE TABLE t (id BIGINT, v VARCHAR)")
			mustWrite(t, e, "INSERT INTO t SELECT i, 'a' FROM range(10) r(i)")
			before := srv.Keys(t, "lake", "root/_rocklake/")
			tx := NewTxn(e)
			defer tx.Rollback()
			o := WriteOptions{Query: engine.QueryOptions{Snapshot: catalog.Latest}}
			for _, q := range []string{"INSERT INTO t SELECT i, 'b' FROM range(100) r(i)", "UPDATE t SET v = 'c' WHERE id < 5",
				"INSERT INTO t VALUES (1000, 'd')"} {
				if _, err := tx.Exec(ctx, q, o); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			res, err := orphanCleanup(c, st, end == "stalled")
			if err != nil {
				t.Fatal(err)
			}
			if end == "stalled" {
				if len(res.Deleted) == 0 || len(res.InUse) != 0 {
					t.Fatalf("cleanup --orphans of a stalled transaction's objects: %+v", res)
				}
			} else if len(res.Deleted) != 0 || len(res.InUse) != 3 {
				t.Fatalf("cleanup --orphans during an open transaction: %+v", res)
			}
			want := "111|1|10"
			switch end {
			case "COMMIT":
				if _, err := tx.Commit(ctx); err != nil {
					t.Fatalf("COMMIT after cleanup: %v", err)
				}
			case "ROLLBACK":
				tx.Rollback()
				want = "10|0|0"
			case "stalled":
				if _, err := tx.Commit(ctx); !errors.Is(err, catalog.ErrLeaseLost) {
					t.Fatalf("COMMIT of objects cleanup took: %v", err)
				}
				want = "10|0|0"
			}
			q := "SELECT count(*), count(*) FILTER (WHERE v = 'd'), count(*) FILTER (WHERE v = 'c') FROM t"
			if got := answerOf(t, e, catalog.Latest, q); got != want {
				t.Fatalf("after %s: %s, want %s", end, got, want)
			}
			after := srv.Keys(t, "lake", "root/_rocklake/")
			for _, k := range after {
				if strings.HasSuffix(k, catalog.LeaseFile) || strings.HasSuffix(k, catalog.LostFile) {
					t.Errorf("after %s: %s left", end, k)
				}
			}
			if end != "COMMIT" && !slices.Equal(after, before) {
				t.Errorf("after %s the bucket holds\n%v\nnot\n%v", end, after, before)
			}
			if res, err := c.DeleteOrphans(catalog.OrphanOptions{DryRun: true, Grace: -1, Objects: st}); err != nil || len(res.Deleted)+len(res.InUse)+len(res.Expired) != 0 {
				t.Fatalf("after %s, orphans: %+v %v", end, res, err)
			}
		})
	}
}
