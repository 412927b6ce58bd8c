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

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/rocklake/rocklake/internal/s3test"
	"github.com/rocklake/rocklake/kv"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/storage"
)

// objectLake is an S3 server with a bucket "lake", a store on it, and a
// catalog whose data root is s3://lake/root/ and whose clock is now.
func objectLake(t *testing.T) (*s3test.Server, *storage.S3, *Catalog, kv.Store, *time.Time) {
	t.Helper()
	srv := s3test.StartWithEnv(t, "lake")
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
// cleanup deletes a part or delete file of a prefix exactly when the
// prefix is this catalog's (its lease or tombstone names it), no kept
// snapshot names the file, it is past the grace period, and no live lease
// keeps the prefix (put longer ago than LeaseExpiry, or naming a process
// of this host that has died); it removes this catalog's leases that are
// not live once their prefix holds no orphan, and leaves no tombstone
// once a prefix's orphans are gone. Nothing else in the bucket is
// touched: not another catalog's prefix, not a prefix without a lease.
func TestObjectOrphanCleanup(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Skip("no host name")
	}
	if _, ok := processStart(os.Getpid()); !ok {
		t.Skip("no /proc/self/stat: process start times are unknown here")
	}
	dead := deadPID(t)
	srv, st, c, _, _ := objectLake(t)
	ctx := context.Background()
	w := "s3://lake/root/_rocklake/table-1/"
	put := func(loc, body string) { srv.Put(t, loc, []byte(body)) }
	ours := "\n" + catalogField + c.UUID() + "\n"
	// A registered file of a write whose process died after its commit.
	known := w + "insert-1-aaaaaaaaaaaa/part-00000.parquet"
	put(known, "PAR1")
	put(w+"insert-1-aaaaaaaaaaaa/"+LeaseFile, fmt.Sprintf("host=%s pid=%d", host, dead)+ours)
	commit(t, c, func(tx *Txn) { tx.AddFiles("t", intFile(t, known, 1, 10, 0)) })
	mine, err := c.TakeObjectLease(ctx, st, w+"insert-2-bbbbbbbbbbbb/")
	if err != nil {
		t.Fatal(err)
	}
	defer mine.Release()
	put(w+"insert-2-bbbbbbbbbbbb/part-00000.parquet", "PAR1")
	put(w+"update-2-cccccccccccc/"+LeaseFile, fmt.Sprintf("host=%s pid=%d start=1", host, dead)+ours)
	put(w+"update-2-cccccccccccc/part-00000.parquet", "PAR1")
	put(w+"update-2-cccccccccccc/delete-3.parquet", "PAR1")
	put(w+"update-2-cccccccccccc/year=2024/part-00001.parquet", "PAR1")
	put(w+"optimize-2-dddddddddddd/"+LeaseFile, "host=elsewhere.example pid=7"+ours)
	put(w+"optimize-2-dddddddddddd/part-00000.parquet", "PAR1")
	put(w+"merge-2-ffffffffffff/"+LostFile, ours) // an interrupted cleanup's
	put(w+"merge-2-ffffffffffff/part-00000.parquet", "PAR1")
	// Never this catalog's to delete: a prefix without a lease (a write
	// that committed and let go), another catalog's, files not named as
	// a write names its files or not in a write's prefix.
	others := []string{
		w + "compact-2-eeeeeeeeeeee/part-00000.parquet",
		w + "merge-3-abcdefabcdef/part-00000.parquet",
		w + "update-2-cccccccccccc/notes.txt",
		w + "update-2-cccccccccccc/sub/part-00000.parquet",
		w + "compact-2/part-00000.parquet",
		"s3://lake/root/_rocklake/other/part-00000.parquet",
		"s3://lake/root/a/part-00000.parquet",
		"s3://lake/elsewhere/_rocklake/table-1/insert-1-abababababab/part-00000.parquet",
	}
	for _, o := range others {
		put(o, "x")
	}
	put(w+"merge-3-abcdefabcdef/"+LeaseFile, fmt.Sprintf("host=%s pid=%d\n%sanother-catalog\n", host, dead, catalogField))
	wantInUse := []string{w + "insert-2-bbbbbbbbbbbb/", w + "optimize-2-dddddddddddd/"}
	// Within the grace period: every orphan waits, whatever its lease; a
	// lease that is not live goes where its prefix holds no orphan.
	before := keys(t, srv, "lake")
	res, err := c.DeleteOrphans(OrphanOptions{Objects: st})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Deleted) != 0 || len(res.Waiting) != 4 || !slices.Equal(res.InUse, wantInUse) ||
		!slices.Equal(res.Expired, []string{w + "insert-1-aaaaaaaaaaaa/" + LeaseFile}) || len(res.Failed) != 0 {
		t.Fatalf("within the grace period: %+v", res)
	}
	all := without(before, res.Expired)
	if got := keys(t, srv, "lake"); !slices.Equal(got, all) {
		t.Fatalf("within the grace period:\n got  %v\n want %v", got, all)
	}
	wantDeleted := []string{
		w + "merge-2-ffffffffffff/part-00000.parquet",
		w + "update-2-cccccccccccc/delete-3.parquet",
		w + "update-2-cccccccccccc/part-00000.parquet",
		w + "update-2-cccccccccccc/year=2024/part-00001.parquet",
	}
	wantExpired := []string{w + "update-2-cccccccccccc/" + LeaseFile}
	for _, dry := range []bool{true, false} {
		res, err := c.DeleteOrphans(OrphanOptions{Objects: st, Grace: -1, DryRun: dry})
		if err != nil {
			t.Fatal(err)
		}
		sort.Strings(res.Deleted)
		if !slices.Equal(res.Deleted, wantDeleted) || !slices.Equal(res.InUse, wantInUse) || !slices.Equal(res.Expired, wantExpired) ||
			len(res.Waiting) != 0 || len(res.Failed) != 0 {
			t.Fatalf("dry run %v:\n deleted %v\n in use %v\n expired %v\n%+v", dry, res.Deleted, res.InUse, res.Expired, res)
		}
		if dry {
			if got := keys(t, srv, "lake"); !slices.Equal(got, all) {
				t.Fatalf("a dry run changed the bucket:\n%v\n%v", all, got)
			}
		}
	}
	want := without(all, append(append(wantDeleted, wantExpired...), w+"merge-2-ffffffffffff/"+LostFile))
	if got := keys(t, srv, "lake"); !slices.Equal(got, want) {
		t.Fatalf("after cleanup:\n got  %v\n want %v", got, want)
	}
	// Past the expiry, a lease keeps nothing, whoever put it: this
	// process's (a writer stalled) and another host's.
	defer func(e time.Duration) { LeaseExpiry = e }(LeaseExpiry)
	LeaseExpiry = -time.Minute
	res, err = c.DeleteOrphans(OrphanOptions{Objects: st, Grace: -1})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(res.Deleted)
	if !slices.Equal(res.Deleted, []string{w + "insert-2-bbbbbbbbbbbb/part-00000.parquet", w + "optimize-2-dddddddddddd/part-00000.parquet"}) ||
		len(res.InUse) != 0 || len(res.Expired) != 2 {
		t.Fatalf("past the expiry: %+v", res)
	}
	left := keys(t, srv, "lake")
	for _, k := range left {
		if (strings.HasSuffix(k, LostFile) || strings.HasSuffix(k, LeaseFile)) && !strings.Contains(k, "merge-3-") {
			t.Errorf("left behind: %s", k)
		}
	}
	for _, o := range append(others, known) {
		if !slices.Contains(left, strings.TrimPrefix(o, "s3://lake/")) {
			t.Errorf("%s was deleted", o)
		}
	}
}

// Without an object data root, a write's prefix lies beside the objects
// it rewrote (above their key=value segments): cleanup looks there, and
// takes only its own catalog's orphans, never what another catalog that
// registers the same objects wrote beside them.
func TestObjectOrphansBesideRegisteredObjects(t *testing.T) {
	srv := s3test.StartWithEnv(t, "lake")
	st, err := storage.NewS3(context.Background(), storage.S3OptionsFromEnv())
	if err != nil {
		t.Fatal(err)
	}
	host, err := os.Hostname()
	if err != nil {
		t.Skip("no host name")
	}
	dead := deadPID(t)
	user := "s3://lake/ev/year=2024/a.parquet"
	srv.Put(t, user, []byte("PAR1"))
	var cats []*Catalog
	for range 2 {
		c, err := CreateInStore(kvtest.Store(t), Options{})
		if err != nil {
			t.Fatal(err)
		}
		commit(t, c, func(tx *Txn) { tx.CreateTable("t", []ColumnDef{{Name: "x", Type: "BIGINT"}}) })
		commit(t, c, func(tx *Txn) { tx.AddFiles("t", intFile(t, user, 1, 10, 0)) })
		cats = append(cats, c)
	}
	a, b := cats[0], cats[1]
	// a's writes killed after their uploads.
	orphans := []string{
		"s3://lake/ev/_rocklake/table-1/optimize-1-0123456789ab/year=2024/part-00000.parquet",
		"s3://lake/ev/year=2024/_rocklake/table-1/compact-1-0123456789ab/part-00000.parquet",
	}
	for _, o := range orphans {
		srv.Put(t, o, []byte("PAR1"))
		prefix := o[:strings.Index(o, "0123456789ab/")+len("0123456789ab/")]
		srv.Put(t, prefix+LeaseFile, []byte(fmt.Sprintf("host=%s pid=%d\n%s%s\n", host, dead, catalogField, a.UUID())))
	}
	// b's write, committed (its lease let go) beside the same objects.
	bs := "s3://lake/ev/_rocklake/table-1/optimize-1-ba9876543210/part-00000.parquet"
	srv.Put(t, bs, []byte("PAR1"))
	commit(t, b, func(tx *Txn) { tx.AddFiles("t", intFile(t, bs, 1, 10, 0)) })
	res, err := b.DeleteOrphans(OrphanOptions{Objects: st, Grace: -1})
	if err != nil || len(res.Deleted)+len(res.Expired)+len(res.InUse) != 0 {
		t.Fatalf("b's cleanup of a's prefixes: %+v %v", res, err)
	}
	res, err = a.DeleteOrphans(OrphanOptions{Objects: st, Grace: -1})
	if err != nil {
		t.Fatal(err)
	}
	if sort.Strings(res.Deleted); !slices.Equal(res.Deleted, orphans) || len(res.Expired) != 2 {
		t.Fatalf("a's cleanup: deleted %v, want %v; %+v", res.Deleted, orphans, res)
	}
	if got := keys(t, srv, "lake"); !slices.Equal(got, []string{strings.TrimPrefix(bs, "s3://lake/"), "ev/year=2024/a.parquet"}) {
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
			l, err := c.TakeObjectLease(ctx, st, prefix)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Release()
			part := prefix + "part-00000.parquet"
			srv.Put(t, part, []byte("PAR1"))
			l.Cover(part)
			if when != "live" {
				// The writer stalled: its lease is past its expiry.
				defer func(e time.Duration) { LeaseExpiry = e }(LeaseExpiry)
				LeaseExpiry = -time.Minute
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

// A write killed beside a table's objects (no object data root: its
// prefix lies beside them) is found by cleanup --orphans even once nothing
// registered lies beside it any more (the table dropped and expired),
// because the write recorded the prefix's root in the catalog before its
// first upload; and the multipart upload it left unfinished is aborted
// (listed in a dry run, left alone while younger than the grace period,
// and the prefix's lease kept until then).
func TestObjectOrphansOfAGoneTable(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Skip("no host name")
	}
	dead := deadPID(t)
	srv := s3test.StartWithEnv(t, "lake")
	st, err := storage.NewS3(context.Background(), storage.S3OptionsFromEnv())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c, err := CreateInStore(kvtest.Store(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	user := "s3://lake/ev/a.parquet"
	srv.Put(t, user, []byte("PAR1"))
	commit(t, c, func(tx *Txn) { tx.CreateTable("t", []ColumnDef{{Name: "x", Type: "BIGINT"}}) })
	snap := commit(t, c, func(tx *Txn) { tx.AddFiles("t", intFile(t, user, 1, 10, 0)) })
	prefix := c.ObjectRewritePrefix(user, 1, snap.ID, "insert", "-0123456789ab")
	if want := "s3://lake/ev/_rocklake/table-1/insert-" + fmt.Sprint(snap.ID) + "-0123456789ab/"; prefix != want {
		t.Fatalf("prefix %s, want %s", prefix, want)
	}
	lease, err := c.TakeObjectLease(ctx, st, prefix)
	if err != nil {
		t.Fatal(err)
	}
	part := prefix + "part-00000.parquet"
	srv.Put(t, part, []byte("PAR1"))
	bucket, key := "lake", strings.TrimPrefix(prefix+"part-00001.parquet", "s3://lake/")
	up, err := srv.Client().CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &bucket, Key: &key})
	if err != nil {
		t.Fatal(err)
	}
	uploads := func() int {
		out, err := srv.Client().ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: &bucket})
		if err != nil {
			t.Fatal(err)
		}
		return len(out.Uploads)
	}
	// The writer dies: its lease stays, naming a process that is gone.
	lease.Release()
	srv.Put(t, prefix+LeaseFile, []byte(fmt.Sprintf("host=%s pid=%d\n%s%s\n", host, dead, catalogField, c.UUID())))
	commit(t, c, func(tx *Txn) { tx.DropTable("t") })
	if _, err := c.ExpireSnapshots(time.Now().Add(time.Hour), false); err != nil {
		t.Fatal(err)
	}
	// Cleanup forgets the user's file: no row names anything beside the
	// write's prefix now.
	if res, err := c.Cleanup(CleanupOptions{Grace: -1}); err != nil || !slices.Equal(res.Forgotten, []string{user}) {
		t.Fatalf("cleanup: %+v %v", res, err)
	}
	// A young upload waits, and so does the lease that finds it again.
	res, err := c.DeleteOrphans(OrphanOptions{Objects: st, Grace: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Aborted) != 0 || len(res.Expired) != 0 || uploads() != 1 || !slices.Contains(srv.Keys(t, "lake", ""), strings.TrimPrefix(prefix+LeaseFile, "s3://lake/")) {
		t.Fatalf("within the grace period: %+v, %d uploads", res, uploads())
	}
	// With no grace period nothing waits on a clock, not even on a store
	// whose Date header lags the times it reports (some servers cache it).
	lagging := laggingStore{st, 5 * time.Second}
	res, err = c.DeleteOrphans(OrphanOptions{Objects: lagging, Grace: -1, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Deleted, []string{part}) || len(res.Aborted) != 1 || !strings.Contains(res.Aborted[0], key) || uploads() != 1 {
		t.Fatalf("dry run: %+v, %d uploads left", res, uploads())
	}
	res, err = c.DeleteOrphans(OrphanOptions{Objects: lagging, Grace: -1})
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("s3://lake/%s (upload %s)", key, *up.UploadId)
	if !slices.Equal(res.Deleted, []string{part}) || !slices.Equal(res.Aborted, []string{want}) || len(res.Expired) != 1 {
		t.Fatalf("cleanup: %+v", res)
	}
	if n := uploads(); n != 0 {
		t.Fatalf("%d unfinished uploads left", n)
	}
	if got := keys(t, srv, "lake"); !slices.Equal(got, []string{"ev/a.parquet"}) {
		t.Fatalf("left %v", got)
	}
	// The root stays recorded.
	if roots, err := c.recordedObjectRoots(); err != nil || !slices.Equal(roots, []string{"s3://lake/ev/"}) {
		t.Fatalf("recorded roots %v %v", roots, err)
	}
}

// laggingStore is a bucket whose clock, as its listings report it, runs
// behind the modification times they carry.
type laggingStore struct {
	*storage.S3
	lag time.Duration
}

func (l laggingStore) Walk(ctx context.Context, prefix string, fn func(loc string, modified time.Time) error) (time.Time, error) {
	now, err := l.S3.Walk(ctx, prefix, fn)
	return now.Add(-l.lag), err
}
