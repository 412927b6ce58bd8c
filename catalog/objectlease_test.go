package catalog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake/internal/s3test"
	"github.com/rocklake/rocklake/kv"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/storage"
)

// objectLake is an S3 server with a bucket "lake", a store on it, and a
// catalog whose data root is s3://lake/root/ and whose clock is now.
func objectLake(t *testing.T) (*s3test.Server, *storage.S3, *Catalog, kv.Store, *time.Time) {
	t.Helper()
	srv := s3test.Start(t)
	srv.Bucket(t, "lake")
	srv.SetEnv(t)
	st, err := storage.NewS3(context.Background(), storage.S3OptionsFromEnv())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	kvs := kvtest.Store(t)
	c, err := CreateInStore(kvs, Options{DataRoot: "s3://lake/root/", Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	commit(t, c, func(tx *Txn) { tx.CreateTable("t", []ColumnDef{{Name: "x", Type: "BIGINT"}}) })
	return srv, st, c, kvs, &now
}

// keys lists every key of the bucket, sorted.
func keys(t *testing.T, srv *s3test.Server, bucket string) []string {
	t.Helper()
	k := srv.Keys(t, bucket, "")
	sort.Strings(k)
	return k
}

// without is keys less the objects at locs.
func without(keys []string, locs []string) []string {
	var out []string
	for _, k := range keys {
		if !slices.Contains(locs, "s3://lake/"+k) {
			out = append(out, k)
		}
	}
	return out
}

// Every state a write's prefix can be in, in dry runs and real ones:
// cleanup deletes a part or delete file of a prefix exactly when no kept
// snapshot names it, it is past the grace period, and no live lease keeps
// its prefix (none; put longer ago than LeaseExpiry; naming a process of
// this host that has died); it removes the leases that are not live, and
// leaves no tombstone once a prefix's orphans are gone. Nothing else in
// the bucket is touched.
func TestObjectOrphanCleanup(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Skip("no host name")
	}
	if _, ok := processStart(os.Getpid()); !ok {
		t.Skip("no /proc/self/stat: process start times are unknown here")
	}
	dead := deadPID(t)
	srv, st, c, _, now := objectLake(t)
	ctx := context.Background()
	w := "s3://lake/root/_rocklake/table-1/"
	put := func(loc, body string) { srv.Put(t, loc, []byte(body)) }
	// A registered file of a write whose process died after its commit.
	known := w + "insert-1-aaaaaaaaaaaa/part-00000.parquet"
	put(known, "PAR1")
	put(w+"insert-1-aaaaaaaaaaaa/"+LeaseFile, fmt.Sprintf("host=%s pid=%d\n", host, dead))
	commit(t, c, func(tx *Txn) { tx.AddFiles("t", intFile(t, known, 1, 10, 0)) })
	mine, err := TakeObjectLease(ctx, st, w+"insert-2-bbbbbbbbbbbb/")
	if err != nil {
		t.Fatal(err)
	}
	defer mine.Release()
	put(w+"insert-2-bbbbbbbbbbbb/part-00000.parquet", "PAR1")
	put(w+"update-2-cccccccccccc/"+LeaseFile, fmt.Sprintf("host=%s pid=%d start=1\n", host, dead))
	put(w+"update-2-cccccccccccc/part-00000.parquet", "PAR1")
	put(w+"update-2-cccccccccccc/delete-3.parquet", "PAR1")
	put(w+"update-2-cccccccccccc/year=2024/part-00001.parquet", "PAR1")
	put(w+"optimize-2-dddddddddddd/"+LeaseFile, "host=elsewhere.example pid=7\n")
	put(w+"optimize-2-dddddddddddd/part-00000.parquet", "PAR1")
	put(w+"compact-2-eeeeeeeeeeee/part-00000.parquet", "PAR1") // no lease
	put(w+"merge-2-ffffffffffff/"+LostFile, "")                // an interrupted cleanup's
	put(w+"merge-2-ffffffffffff/part-00000.parquet", "PAR1")
	// Not named as a write names its files, or not in a write's prefix.
	others := []string{
		w + "compact-2-eeeeeeeeeeee/notes.txt",
		w + "compact-2-eeeeeeeeeeee/sub/part-00000.parquet",
		w + "compact-2/part-00000.parquet",
		"s3://lake/root/_rocklake/other/part-00000.parquet",
		"s3://lake/root/a/part-00000.parquet",
		"s3://lake/elsewhere/_rocklake/table-1/insert-1-abababababab/part-00000.parquet",
	}
	for _, o := range others {
		put(o, "x")
	}
	wantInUse := []string{w + "insert-2-bbbbbbbbbbbb/", w + "optimize-2-dddddddddddd/"}
	wantExpired := []string{w + "insert-1-aaaaaaaaaaaa/" + LeaseFile, w + "update-2-cccccccccccc/" + LeaseFile}
	// Within the grace period: every orphan waits, whatever its lease;
	// the leases that are not live go.
	before := keys(t, srv, "lake")
	res, err := c.DeleteOrphans(OrphanOptions{Objects: st})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(res.Expired)
	if len(res.Deleted) != 0 || len(res.Waiting) != 5 || !slices.Equal(res.InUse, wantInUse) || !slices.Equal(res.Expired, wantExpired) {
		t.Fatalf("within the grace period: %+v", res)
	}
	all := without(before, wantExpired)
	if got := keys(t, srv, "lake"); !slices.Equal(got, all) {
		t.Fatalf("within the grace period:\n got  %v\n want %v", got, all)
	}
	wantDeleted := []string{
		w + "compact-2-eeeeeeeeeeee/part-00000.parquet",
		w + "merge-2-ffffffffffff/part-00000.parquet",
		w + "update-2-cccccccccccc/delete-3.parquet",
		w + "update-2-cccccccccccc/part-00000.parquet",
		w + "update-2-cccccccccccc/year=2024/part-00001.parquet",
	}
	for _, dry := range []bool{true, false} {
		res, err := c.DeleteOrphans(OrphanOptions{Objects: st, Grace: -1, DryRun: dry})
		if err != nil {
			t.Fatal(err)
		}
		sort.Strings(res.Deleted)
		sort.Strings(res.Expired)
		if !slices.Equal(res.Deleted, wantDeleted) || !slices.Equal(res.InUse, wantInUse) || len(res.Expired) != 0 ||
			len(res.Waiting) != 0 || len(res.Failed) != 0 {
			t.Fatalf("dry run %v:\n deleted %v\n in use %v\n expired %v\n%+v", dry, res.Deleted, res.InUse, res.Expired, res)
		}
		if dry {
			if got := keys(t, srv, "lake"); !slices.Equal(got, all) {
				t.Fatalf("a dry run changed the bucket:\n%v\n%v", all, got)
			}
		}
	}
	want := without(all, append(wantDeleted, w+"merge-2-ffffffffffff/"+LostFile))
	if got := keys(t, srv, "lake"); !slices.Equal(got, want) {
		t.Fatalf("after cleanup:\n got  %v\n want %v", got, want)
	}
	// Past the expiry, a lease keeps nothing, whoever put it: this
	// process's (a writer stalled) and another host's.
	*now = now.Add(LeaseExpiry + time.Minute)
	res, err = c.DeleteOrphans(OrphanOptions{Objects: st, Grace: -1})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(res.Deleted)
	if !slices.Equal(res.Deleted, []string{w + "insert-2-bbbbbbbbbbbb/part-00000.parquet", w + "optimize-2-dddddddddddd/part-00000.parquet"}) ||
		len(res.InUse) != 0 || len(res.Expired) != 2 {
		t.Fatalf("past the expiry: %+v", res)
	}
	for _, k := range keys(t, srv, "lake") {
		if strings.HasSuffix(k, LostFile) || strings.HasSuffix(k, LeaseFile) {
			t.Errorf("left behind: %s", k)
		}
	}
	if !slices.Contains(keys(t, srv, "lake"), strings.TrimPrefix(known, "s3://lake/")) {
		t.Errorf("the registered %s was deleted", known)
	}
}

// Without an object data root, a write's prefix lies beside the objects
// it rewrote (above their key=value segments): cleanup looks there.
func TestObjectOrphansBesideRegisteredObjects(t *testing.T) {
	srv := s3test.Start(t)
	srv.Bucket(t, "lake")
	srv.SetEnv(t)
	st, err := storage.NewS3(context.Background(), storage.S3OptionsFromEnv())
	if err != nil {
		t.Fatal(err)
	}
	c, err := CreateInStore(kvtest.Store(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	commit(t, c, func(tx *Txn) { tx.CreateTable("t", []ColumnDef{{Name: "x", Type: "BIGINT"}}) })
	user := "s3://lake/ev/year=2024/a.parquet"
	srv.Put(t, user, []byte("PAR1"))
	commit(t, c, func(tx *Txn) { tx.AddFiles("t", intFile(t, user, 1, 10, 0)) })
	orphans := []string{
		"s3://lake/ev/_rocklake/table-1/optimize-1-0123456789ab/year=2024/part-00000.parquet",
		"s3://lake/ev/year=2024/_rocklake/table-1/compact-1-0123456789ab/part-00000.parquet",
	}
	for _, o := range orphans {
		srv.Put(t, o, []byte("PAR1"))
	}
	res, err := c.DeleteOrphans(OrphanOptions{Objects: st, Grace: -1})
	if err != nil {
		t.Fatal(err)
	}
	if sort.Strings(res.Deleted); !slices.Equal(res.Deleted, orphans) {
		t.Fatalf("deleted %v, want %v", res.Deleted, orphans)
	}
	if got := keys(t, srv, "lake"); !slices.Equal(got, []string{"ev/year=2024/a.parquet"}) {
		t.Fatalf("left %v", got)
	}
}

// A write whose lease cleanup found expired cannot commit, whenever
// cleanup ran: before the commit read the head (the files are gone, and
// so is the tombstone), between the commit's checks and its write (the
// fence moved), or while cleanup is still deleting (the tombstone is
// there). A live lease keeps the files, and the commit lands.
func TestObjectCommitFailsWhenItsLeaseWasTaken(t *testing.T) {
	for _, when := range []string{"before", "during", "tombstone", "live"} {
		t.Run(when, func(t *testing.T) {
			srv, st, c, kvs, now := objectLake(t)
			other, err := OpenStore(kvs, Options{Now: func() time.Time { return *now }})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			prefix := "s3://lake/root/_rocklake/table-1/insert-1-0123456789ab/"
			l, err := TakeObjectLease(ctx, st, prefix)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Release()
			part := prefix + "part-00000.parquet"
			srv.Put(t, part, []byte("PAR1"))
			l.Cover(part)
			if when != "live" {
				// The writer stalled: its lease is past its expiry.
				*now = now.Add(LeaseExpiry + time.Minute)
			}
			cleanup := func() {
				res, err := other.DeleteOrphans(OrphanOptions{Grace: -1, Objects: st})
				want := []string{part}
				if when == "live" {
					want = nil
				}
				if err != nil || !slices.Equal(res.Deleted, want) {
					t.Errorf("cleanup: %+v %v", res, err)
				}
			}
			switch when {
			case "before", "live":
				cleanup()
			case "during":
				leasesChecked = func() { leasesChecked = nil; cleanup() }
				defer func() { leasesChecked = nil }()
			case "tombstone":
				srv.Put(t, prefix+LostFile, nil)
			}
			before := dump(t, c)
			tx, err := c.Begin()
			if err != nil {
				t.Fatal(err)
			}
			tx.AddFiles("t", intFile(t, part, 1, 10, 0))
			tx.Hold(l)
			_, err = tx.Commit()
			if when == "live" {
				if err != nil {
					t.Fatalf("commit under a live lease: %v", err)
				}
				if got := keys(t, srv, "lake"); !slices.Contains(got, strings.TrimPrefix(part, "s3://lake/")) {
					t.Fatalf("a live lease's file was deleted: %v", got)
				}
				return
			}
			if !errors.Is(err, ErrLeaseLost) {
				t.Fatalf("commit of files cleanup took: %v", err)
			}
			if dump(t, c) != before && when != "during" {
				t.Fatal("a failed commit changed the catalog")
			}
			r, err := c.Read(Latest)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			tb, _ := r.Table("t")
			if files, err := r.Files(tb.ID); err != nil || len(files) != 0 {
				t.Fatalf("files registered: %v %v", files, err)
			}
		})
	}
}
