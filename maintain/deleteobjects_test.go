package maintain

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/internal/s3test"
	"github.com/rocklake/rocklake/storage"
)

// Merge-on-read over a table of objects: a DELETE uploads a delete file
// beside the table's objects (recorded with its ETag) and rewrites
// nothing; a second one merges its positions into one new delete file;
// queries (whole files, row ranges, pages), time travel and the change
// feed apply them; a delete object replaced under its key fails queries
// rather than bring rows back. Then the erasure procedure: fold rewrites
// the file into a new object, and after expire and cleanup no object under
// the data root holds the id, in any page, and no delete object is left.
func TestDeleteFilesOfObjects(t *testing.T) {
	srv := s3test.StartWithEnv(t, "lake")
	ctx := context.Background()
	c, e := objectLake(t, "s3://lake/root/")
	mustWrite(t, e, "CREATE TABLE events (user_id VARCHAR, n BIGINT)")
	for k := range 3 {
		mustWrite(t, e, fmt.Sprintf("INSERT INTO events SELECT CASE WHEN i = 4242 THEN '%s' ELSE 'user-' || i END, i FROM range(%d, %d) r(i)", victim, k*3000, (k+1)*3000))
	}
	pred := "user_id = '" + victim + "'"
	count := "SELECT count(*), count(*) FILTER (WHERE " + pred + ") FROM events"
	before := latestID(t, c)
	if r := mustWrite(t, e, "DELETE FROM events WHERE "+pred); r.Rows != 1 || r.FilesRemoved != 0 || r.DeleteFiles != 1 {
		t.Fatalf("delete: %+v", r)
	}
	objectDeletes(t, c, "events")
	first := deletesOf(t, c, "events")
	for _, d := range first {
		if !strings.HasPrefix(d.Path, "s3://lake/root/_rocklake/table-") || !strings.Contains(d.Path, "/delete-") {
			t.Fatalf("delete file %s is not under the data root's rewrite prefix", d.Path)
		}
	}
	if got := answerOf(t, e, catalog.Latest, count); got != "8999|0" {
		t.Fatalf("after the delete: %s", got)
	}
	if got := answerOf(t, e, catalog.Latest, "SELECT count(*) FROM events"); got != "8999" {
		t.Fatalf("count(*) from statistics after the delete: %s", got)
	}
	if got := answerOf(t, e, before, count); got != "9000|1" {
		t.Fatalf("the snapshot before the delete: %s", got)
	}
	between := latestID(t, c)
	if r := mustWrite(t, e, "DELETE FROM events WHERE n BETWEEN 4000 AND 4009"); r.Rows != 10 || r.FilesRemoved != 0 || r.DeleteFiles != 1 {
		t.Fatalf("second delete: %+v", r)
	}
	second := deletesOf(t, c, "events")
	if len(second) != 1 {
		t.Fatalf("%d current delete files after two deletes of one file", len(second))
	}
	for id, d := range second {
		if d.DeleteCount != 11 || d.Path == first[id].Path {
			t.Fatalf("the second delete file %s holds %d positions (want both deletes' 11, in a new object)", d.Path, d.DeleteCount)
		}
	}
	if got := answerOf(t, e, between, "SELECT count(*) FROM events"); got != "8999" {
		t.Fatalf("the snapshot between the deletes: %s", got)
	}
	// 4000..4300 less the ten and the victim, by every read path.
	q := "SELECT count(*), sum(n) FROM events WHERE n BETWEEN 4000 AND 4300"
	want := answerOf(t, e, catalog.Latest, q)
	if want != fmt.Sprintf("290|%d", (4000+4300)*301/2-(4000+4009)*10/2-4242) {
		t.Fatalf("%s: %s", q, want)
	}
	for _, mode := range []engine.PartialMode{engine.PartialForceRows, engine.PartialForce} {
		res, err := e.Query(ctx, q, engine.QueryOptions{Snapshot: catalog.Latest, Partial: mode, NoMetadataAnswers: true})
		if err != nil {
			t.Fatalf("partial mode %d: %v", mode, err)
		}
		if got := rowString(res.Rows[0]); got != want {
			t.Fatalf("partial mode %d: %s, want %s", mode, got, want)
		}
	}
	feed := fmt.Sprintf("SELECT count(*), sum(n) FROM table_changes('events', %d, %d) WHERE change_type = 'delete'", before+1, latestID(t, c))
	if got := answerOf(t, e, catalog.Latest, feed); got != fmt.Sprintf("11|%d", (4000+4009)*10/2+4242) {
		t.Fatalf("the change feed's deletes: %s", got)
	}

	// The erasure procedure.
	step := func(want ...string) {
		t.Helper()
		rep, err := CheckErased(ctx, e, "events", pred)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, h := range rep.Holders {
			got = append(got, h.State)
		}
		if strings.Join(got, ",") != strings.Join(want, ",") || rep.Erased != (len(want) == 0) {
			t.Fatalf("holders %v (erased %v), want %v: %+v", got, rep.Erased, want, rep.Holders)
		}
	}
	step("deleted")
	res, err := FoldDeletes(ctx, e, "events")
	if err != nil {
		t.Fatal(err)
	}
	if res.FilesBefore != 1 || res.FilesAfter != 1 || res.Rows != 2989 || !strings.HasPrefix(res.Dir, "s3://lake/root/_rocklake/") {
		t.Fatalf("fold: %+v", res)
	}
	if got := answerOf(t, e, catalog.Latest, count); got != "8989|0" {
		t.Fatalf("after the fold: %s", got)
	}
	step("retired")
	time.Sleep(10 * time.Millisecond)
	if _, err := c.Expire(time.Now(), catalog.ExpireOptions{MinRetention: -1}); err != nil {
		t.Fatal(err)
	}
	step("expired")
	cl, err := c.Cleanup(catalog.CleanupOptions{Grace: -1, DeleteObject: storage.EnvDeleter(ctx)})
	if err != nil {
		t.Fatal(err)
	}
	if len(cl.Failed) > 0 {
		t.Fatalf("cleanup failed: %v", cl.Failed)
	}
	step()
	dir := t.TempDir()
	for _, k := range keysUnder(t, srv, "lake", "root/") {
		if strings.Contains(k, "/delete-") {
			t.Errorf("cleanup left the delete object %s", k)
		}
		download(t, srv, "lake", k, filepath.Join(dir, strings.ReplaceAll(k, "/", "_")))
	}
	if n := filesHolding(t, e.DB(), dir, victim); n != 0 {
		t.Fatalf("the id is still in %d objects under the data root", n)
	}

	// A delete object replaced under its key fails the query, naming it.
	mustWrite(t, e, "DELETE FROM events WHERE n = 7")
	for _, d := range deletesOf(t, c, "events") {
		srv.Put(t, d.Path, []byte("other bytes"))
		_, err := e.Query(ctx, "SELECT count(*) FROM events WHERE n < 100", engine.QueryOptions{Snapshot: catalog.Latest, NoMetadataAnswers: true})
		if !errors.Is(err, engine.ErrDataFileChanged) || !strings.Contains(err.Error(), d.Path) {
			t.Fatalf("a query over a replaced delete object: %v", err)
		}
	}
}

// deletesOf is a table's current delete files, by data file id.
func deletesOf(t *testing.T, c *catalog.Catalog, table string) map[int64]catalog.DeleteFile {
	t.Helper()
	r, err := c.Read(catalog.Latest)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tb, err := r.Table(table)
	if err != nil {
		t.Fatal(err)
	}
	dels, err := r.DeleteFiles(tb.ID)
	if err != nil {
		t.Fatal(err)
	}
	return dels
}

// download copies an object to a local file.
func download(t *testing.T, srv *s3test.Server, bucket, key, to string) {
	t.Helper()
	out, err := srv.Client().GetObject(context.Background(), &s3.GetObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Changes of a table of objects that read the same snapshot each upload
// under a prefix of their own: the one whose commit loses deletes only its
// own objects, never those the winner committed (which left the table
// unreadable, its rows lost under copy-on-write). Both delete modes; each
// round two DELETEs race on rows of one file, and after it the table
// holds exactly the rows no acknowledged DELETE took.
func TestRacingChangesOfObjects(t *testing.T) {
	s3test.StartWithEnv(t, "lake")
	ctx := context.Background()
	for _, mode := range []string{"merge-on-read", catalog.CopyOnWrite} {
		t.Run(mode, func(t *testing.T) {
			c, e := objectLake(t, "s3://lake/"+mode+"/")
			mustWrite(t, e, "CREATE TABLE ev (n BIGINT)")
			mustWrite(t, e, "INSERT INTO ev SELECT i FROM range(0, 1000) r(i)")
			alterTable(t, c, "ev", "set", "option", "delete_mode", "=", mode)
			gone := map[int]bool{}
			for round := range 6 {
				var wg sync.WaitGroup
				errs := make([]error, 2)
				for k := range 2 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						_, errs[k] = Write(ctx, e, fmt.Sprintf("DELETE FROM ev WHERE n = %d", round*2+k), WriteOptions{Query: engine.QueryOptions{Snapshot: catalog.Latest}, NoMerge: true})
					}()
				}
				wg.Wait()
				for k, err := range errs {
					switch {
					case err == nil:
						gone[round*2+k] = true
					case !errors.Is(err, ErrWriteRaced):
						t.Fatalf("round %d: %v", round, err)
					}
				}
				want := 0
				for n := range 12 {
					if !gone[n] {
						want += n
					}
				}
				got := answerOf(t, e, catalog.Latest, "SELECT count(*), sum(n) FILTER (WHERE n < 12) FROM ev")
				if exp := fmt.Sprintf("%d|%d", 1000-len(gone), want); got != exp {
					t.Fatalf("round %d (errors %v): %s, want %s", round, errs, got, exp)
				}
			}
		})
	}
}
