package ingest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/kv/kvtest"
)

// A plain add of files whose rows a rewrite took into the table refuses
// them, before and after expire forgets them, and leaves the store as it
// was; --skip-existing leaves them out; a file rewritten in place since, or
// one a removal retired, is added.
func TestAddRefusesRewrittenFiles(t *testing.T) {
	st := kvtest.Store(t)
	c, err := catalog.CreateInStore(st, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := realDir(t)
	data := filepath.Join(dir, "data")
	for _, n := range []string{"a", "b", "c"} {
		writeInts(t, filepath.Join(data, n+".parquet"), "x", 10)
	}
	if _, err := Add(c, "t", []string{data}, Options{Create: true}); err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, f := range liveFiles(t, c, "t") {
		ids = append(ids, f.ID)
	}
	// What optimize does: one file of rocklake's replaces the three.
	out := writeInts(t, filepath.Join(dir, "out", "part-0.parquet"), "x", 30)
	if _, err := Add(c, "t", []string{out}, Options{Replace: ids, Owner: catalog.OwnerRocklake}); err != nil {
		t.Fatal(err)
	}
	rows := func() int64 {
		var n int64
		for _, f := range liveFiles(t, c, "t") {
			n += f.RecordCount
		}
		return n
	}
	refused := func(when string) {
		t.Helper()
		before := kvtest.Digest(t, st)
		_, err := Add(c, "t", []string{data}, Options{})
		if !errors.Is(err, catalog.ErrDuplicate) || !strings.Contains(err.Error(), "a rewrite") || !strings.Contains(err.Error(), "a.parquet") {
			t.Fatalf("%s: adding the rewritten files again: %v", when, err)
		}
		if kvtest.Digest(t, st) != before {
			t.Fatalf("%s: the refused add changed the store", when)
		}
		res, err := Add(c, "t", []string{data}, Options{SkipExisting: true})
		if err != nil || res.Skipped != 3 || res.Files != 0 {
			t.Fatalf("%s: --skip-existing: %+v, %v", when, res, err)
		}
		if n := rows(); n != 30 {
			t.Fatalf("%s: the table holds %d rows, want 30", when, n)
		}
	}
	refused("before expire")
	if _, err := c.Expire(time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC), catalog.ExpireOptions{MinRetention: -1}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Cleanup(catalog.CleanupOptions{Grace: -1}); err != nil {
		t.Fatal(err)
	}
	refused("after expire and cleanup")
	// The same file under another name (a hard link) is the same rows.
	link := filepath.Join(dir, "a-link.parquet")
	if err := os.Link(filepath.Join(data, "a.parquet"), link); err != nil {
		t.Fatal(err)
	}
	if _, err := Add(c, "t", []string{link}, Options{}); !errors.Is(err, catalog.ErrDuplicate) {
		t.Fatalf("a hard link to a rewritten file: %v", err)
	}
	// b rewritten in place holds new rows: it is added; a and c are not.
	b := filepath.Join(data, "b.parquet")
	writeInts(t, b, "x", 7)
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(b, later, later); err != nil {
		t.Fatal(err)
	}
	if _, err := Add(c, "t", []string{b}, Options{}); err != nil {
		t.Fatalf("adding b, rewritten in place: %v", err)
	}
	if n := rows(); n != 37 {
		t.Fatalf("after adding the new b the table holds %d rows, want 37", n)
	}
	// A file a removal retired comes back when added again.
	u := writeInts(t, filepath.Join(dir, "u.parquet"), "x", 5)
	if _, err := Add(c, "u", []string{u}, Options{Create: true}); err != nil {
		t.Fatal(err)
	}
	tx, err := c.Begin()
	if err != nil {
		t.Fatal(err)
	}
	tx.RemoveFiles("u", liveFiles(t, c, "u")[0].ID)
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := Add(c, "u", []string{u}, Options{}); err != nil {
		t.Fatalf("adding a removed file again: %v", err)
	}
	if n := len(liveFiles(t, c, "u")); n != 1 {
		t.Fatalf("u holds %d files, want 1", n)
	}
}
