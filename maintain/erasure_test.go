package maintain

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/ingest"
)

// The erasure procedure: a user id held by files written uncompressed (so
// that its bytes are there to find), deleted, then expired and cleaned up.
// CheckErased follows each step (live, retired, expired, erased), and at
// the end no byte of any file under the data root holds the id, in
// compressed or uncompressed pages alike. A file registered in place is
// the user's: CheckErased says rocklake will never delete it.
func TestErasure(t *testing.T) {
	for _, owner := range []catalog.Ownership{catalog.OwnerTaken, catalog.OwnerUser} {
		t.Run(owner.String(), func(t *testing.T) {
			root, c, e := erasureLake(t, owner)
			if n := filesHolding(t, e.DB(), root, victim); n != 1 {
				t.Fatalf("the id's bytes are in %d files before the delete, not 1", n)
			}
			pred := "user_id = '" + victim + "'"
			step := func(want ...string) *ErasureReport {
				t.Helper()
				rep, err := CheckErased(context.Background(), e, "events", pred)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, h := range rep.Holders {
					got = append(got, h.State)
					if h.Rows != 1 || h.Why == "" {
						t.Fatalf("holder %+v", h)
					}
				}
				if strings.Join(got, ",") != strings.Join(want, ",") || rep.Erased != (len(want) == 0) || rep.Checked == 0 {
					t.Fatalf("holders %v (erased %v, %d checked), want %v: %+v", got, rep.Erased, rep.Checked, want, rep.Holders)
				}
				return rep
			}
			step("live")
			if r := mustWrite(t, e, "DELETE FROM events WHERE "+pred); r.Rows != 1 || r.FilesRemoved != 1 {
				t.Fatalf("delete: %+v", r)
			}
			if got := answerOf(t, e, catalog.Latest, "SELECT count(*), count(*) FILTER (WHERE "+pred+") FROM events"); got != "8999|0" {
				t.Fatalf("after the delete: %s", got)
			}
			if owner == catalog.OwnerUser {
				rep := step("user")
				if !strings.Contains(rep.Holders[0].Why, "never deletes it") {
					t.Fatalf("why: %s", rep.Holders[0].Why)
				}
				return
			}
			step("retired")
			time.Sleep(10 * time.Millisecond)
			if _, err := c.Expire(time.Now(), catalog.ExpireOptions{MinRetention: -1}); err != nil {
				t.Fatal(err)
			}
			step("expired")
			if _, err := c.Cleanup(catalog.CleanupOptions{Grace: -1}); err != nil {
				t.Fatal(err)
			}
			step()
			if n := filesHolding(t, e.DB(), root, victim); n != 0 {
				t.Fatalf("the id's bytes are still in %d files under the data root", n)
			}
			// A file rocklake wrote and no snapshot names is found too.
			orphan := filepath.Join(c.RewriteRoot(), fmt.Sprintf("table-%d", 1), "insert-9999")
			os.MkdirAll(orphan, 0o755)
			p := filepath.Join(orphan, "part-00000.parquet")
			if _, err := e.DB().Exec(fmt.Sprintf("COPY (SELECT '%s' AS user_id, 1::BIGINT AS n) TO '%s' (FORMAT parquet)", victim, p)); err != nil {
				t.Fatal(err)
			}
			step("orphan")
			if n := filesHolding(t, e.DB(), root, victim); n != 1 {
				t.Fatalf("the orphan holds the id, but %d files are found holding it", n)
			}
		})
	}
}

// victim is the user id the erasure tests erase.
const victim = "user-4242-erase-me"

// erasureLake is a table "events" of 9,000 rows in three files written
// uncompressed (so that the victim's bytes are there to find), one row
// the victim's, registered with owner.
func erasureLake(t *testing.T, owner catalog.Ownership) (string, *catalog.Catalog, *engine.Engine) {
	t.Helper()
	root, c, e := writeLake(t)
	src := filepath.Join(root, "incoming")
	os.MkdirAll(src, 0o755)
	for k := range 3 {
		p := filepath.Join(src, fmt.Sprintf("f%d.parquet", k))
		q := fmt.Sprintf("COPY (SELECT CASE WHEN i = 4242 THEN '%s' ELSE 'user-' || i END AS user_id, i AS n FROM range(%d, %d) r(i)) TO '%s' (FORMAT parquet, COMPRESSION uncompressed, DICTIONARY_SIZE_LIMIT 0)",
			victim, k*3000, (k+1)*3000, p)
		if _, err := e.DB().Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ingest.Add(c, "events", []string{src}, ingest.Options{Create: true, Owner: owner}); err != nil {
		t.Fatal(err)
	}
	// A DELETE rewrites the file that holds the row (a test of
	// merge-on-read sets it back).
	alterTable(t, c, "events", "set", "option", "delete_mode", "=", catalog.CopyOnWrite)
	return root, c, e
}

// filesHolding counts the files under dir whose raw bytes hold s, or,
// for Parquet files, one of whose rows holds it in its text as DuckDB
// decodes it (compressed pages hide the bytes).
func filesHolding(t *testing.T, db *sql.DB, dir, s string) int {
	t.Helper()
	n := 0
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		found := bytes.Contains(b, []byte(s))
		if !found && strings.HasSuffix(p, ".parquet") {
			var k int
			q := fmt.Sprintf("SELECT count(*) FROM read_parquet('%s') AS x WHERE strpos(x::VARCHAR, '%s') > 0", p, s)
			if err := db.QueryRow(q).Scan(&k); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			found = k > 0
		}
		if found {
			n++
		}
		return nil
	})
	return n
}

// The erasure procedure under merge-on-read: the DELETE leaves the id in
// its data file, taken out by a delete file (CheckErased says "deleted"
// and to fold); fold rewrites the file without it, and expire and cleanup
// then leave no byte of it under the data root. Every step, queries see
// the table without the row, and the snapshot before the DELETE with it.
func TestErasureMergeOnRead(t *testing.T) {
	root, c, e := erasureLake(t, catalog.OwnerTaken)
	alterTable(t, c, "events", "set", "option", "delete_mode", "=", "merge-on-read")
	pred := "user_id = '" + victim + "'"
	step := func(want ...string) {
		t.Helper()
		rep, err := CheckErased(context.Background(), e, "events", pred)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, h := range rep.Holders {
			got = append(got, h.State)
			if h.Rows != 1 || h.Why == "" {
				t.Fatalf("holder %+v", h)
			}
		}
		if strings.Join(got, ",") != strings.Join(want, ",") || rep.Erased != (len(want) == 0) {
			t.Fatalf("holders %v (erased %v), want %v: %+v", got, rep.Erased, want, rep.Holders)
		}
	}
	before := latestID(t, c)
	r := mustWrite(t, e, "DELETE FROM events WHERE "+pred)
	if r.Rows != 1 || r.FilesRemoved != 0 || r.DeleteFiles != 1 {
		t.Fatalf("delete: %+v", r)
	}
	count := "SELECT count(*), count(*) FILTER (WHERE " + pred + ") FROM events"
	if got := answerOf(t, e, catalog.Latest, count); got != "8999|0" {
		t.Fatalf("after the delete: %s", got)
	}
	if got := answerOf(t, e, catalog.Latest, "SELECT count(*) FROM events"); got != "8999" {
		t.Fatalf("count(*) from statistics after the delete: %s", got)
	}
	if got := answerOf(t, e, before, count); got != "9000|1" {
		t.Fatalf("the snapshot before the delete: %s", got)
	}
	step("deleted")
	res, err := FoldDeletes(context.Background(), e, "events")
	if err != nil {
		t.Fatal(err)
	}
	if res.FilesBefore != 1 || res.FilesAfter != 1 || res.Rows != 2999 {
		t.Fatalf("fold: %+v", res)
	}
	if got := answerOf(t, e, catalog.Latest, count); got != "8999|0" {
		t.Fatalf("after the fold: %s", got)
	}
	step("retired")
	time.Sleep(10 * time.Millisecond)
	if _, err := c.Expire(time.Now(), catalog.ExpireOptions{MinRetention: -1}); err != nil {
		t.Fatal(err)
	}
	step("expired")
	if _, err := c.Cleanup(catalog.CleanupOptions{Grace: -1}); err != nil {
		t.Fatal(err)
	}
	step()
	if n := filesHolding(t, e.DB(), root, victim); n != 0 {
		t.Fatalf("the id's bytes are still in %d files under the data root", n)
	}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), "delete-") {
			t.Errorf("cleanup left the delete file (or its directory) %s", p)
		}
		return nil
	})
}
