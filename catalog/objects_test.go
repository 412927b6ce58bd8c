package catalog

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/rocklake/rocklake/kv"
)

// Objects in an S3-compatible store: the ETag is kept, an object root
// confines adds by key prefix, and local files and objects never pass for
// one another's root.
func TestObjectRootAndETag(t *testing.T) {
	store := kv.NewMemory()
	c, err := CreateInStore(store, Options{Now: fixedNow(), DataRoot: "s3://lake/data"})
	if err != nil {
		t.Fatal(err)
	}
	if c.DataRoot() != "s3://lake/data/" {
		t.Fatalf("root %q, want the prefix with its slash", c.DataRoot())
	}
	if c.RewriteRoot() != "" {
		t.Fatalf("an object root gave rewrite root %q", c.RewriteRoot())
	}
	commit(t, c, func(tx *Txn) { tx.CreateTable("t", []ColumnDef{{Name: "x", Type: "bigint"}}) })
	in := intFile(t, "s3://lake/data/ev/a.parquet", 0, 9, 0)
	in.ETag = `"0123abcd"`
	commit(t, c, func(tx *Txn) { tx.AddFiles("t", in) })
	r, err := c.Read(Latest)
	if err != nil {
		t.Fatal(err)
	}
	tb, _ := r.Table("t")
	files, err := r.Files(tb.ID)
	r.Close()
	if err != nil || len(files) != 1 {
		t.Fatal(files, err)
	}
	if f := files[0]; f.ETag != `"0123abcd"` || f.Location(tb) != "s3://lake/data/ev/a.parquet" || f.Identity.Known() {
		t.Errorf("registered %+v", f)
	}
	before := dump(t, c)
	for name, path := range map[string]string{
		"twin prefix":  "s3://lake/data2/a.parquet",
		"other bucket": "s3://lake2/data/a.parquet",
		"local file":   "/tmp/a.parquet",
		"root itself":  "s3://lake/data",
	} {
		tx, err := c.Begin()
		if err != nil {
			t.Fatal(err)
		}
		tx.AddFiles("t", intFile(t, path, 0, 9, 0))
		if _, err := tx.Commit(); !errors.Is(err, ErrOutsideRoot) {
			t.Errorf("%s: want ErrOutsideRoot, got %v", name, err)
		}
		if dump(t, c) != before {
			t.Fatalf("%s: a refused add changed the store", name)
		}
	}
	// A directory root refuses objects.
	local, err := CreateInStore(kv.NewMemory(), Options{Now: fixedNow(), DataRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	commit(t, local, func(tx *Txn) { tx.CreateTable("t", []ColumnDef{{Name: "x", Type: "bigint"}}) })
	tx, _ := local.Begin()
	tx.AddFiles("t", intFile(t, "s3://lake/data/a.parquet", 0, 9, 0))
	if _, err := tx.Commit(); !errors.Is(err, ErrOutsideRoot) {
		t.Errorf("an object under a directory root: %v", err)
	}
	if _, err := CreateInStore(kv.NewMemory(), Options{DataRoot: "s3:///x"}); err == nil {
		t.Error("a root without a bucket was accepted")
	}
}

// Cleanup deletes rocklake's retired objects only through the deleter it
// is given, never with os.Remove; without one they stay scheduled and are
// reported; the user's objects are forgotten, never deleted.
func TestCleanupObjects(t *testing.T) {
	c, now := clockCatalog(t)
	commit(t, c, func(tx *Txn) { tx.CreateTable("t", []ColumnDef{{Name: "x", Type: "bigint"}}) })
	mine := intFile(t, "s3://lake/ev/_rocklake/table-1/optimize-1/part-00000.parquet", 0, 1, 0)
	mine.Owner = OwnerRocklake
	users := intFile(t, "s3://lake/ev/a.parquet", 2, 3, 0)
	commit(t, c, func(tx *Txn) { tx.AddFiles("t", mine, users) })
	commit(t, c, func(tx *Txn) { tx.RemoveFiles("t", 0, 1) })
	*now = now.Add(time.Hour)
	if _, err := c.Expire(*now, ExpireOptions{MinRetention: -1}); err != nil {
		t.Fatal(err)
	}
	cl, err := c.Cleanup(CleanupOptions{Grace: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(cl.Deleted) != 0 || cl.Failed[mine.Path] == nil || !slices.Equal(cl.Forgotten, []string{users.Path}) || len(cl.Dirs) != 0 {
		t.Fatalf("without a deleter: %+v", cl)
	}
	var asked []string
	cl, err = c.Cleanup(CleanupOptions{Grace: -1, DeleteObject: func(loc string) error { asked = append(asked, loc); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(asked, []string{mine.Path}) || !slices.Equal(cl.Deleted, []string{mine.Path}) || len(cl.Dirs) != 0 {
		t.Fatalf("with a deleter: asked %v, %+v", asked, cl)
	}
	if sched, _ := c.ScheduledFiles(); len(sched) != 0 {
		t.Errorf("still scheduled: %v", sched)
	}
}
