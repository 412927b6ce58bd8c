package catalog

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// Delete files: one current per data file at a snapshot, each version
// holding every position deleted up to it; a version that merged an older
// one than the current is refused, leaving the store as it was; time
// travel sees each snapshot's version; retiring the data file ends its
// delete file; table stats subtract the deleted rows and stop calling
// their bounds exact (while the stored rows a commit widens keep counting
// them); expire schedules the versions no kept snapshot applies.
func TestDeleteFiles(t *testing.T) {
	c := newMemCatalog(t)
	commit(t, c, func(tx *Txn) { tx.CreateTable("t", []ColumnDef{{Name: "x", Type: "bigint"}}) })
	s2 := commit(t, c, func(tx *Txn) { tx.AddFiles("t", intFile(t, "/d/a", 0, 9, 0), intFile(t, "/d/b", 100, 199, 2)) })
	r, _ := c.Read(Latest)
	tb, _ := r.Table("t")
	files, _ := r.Files(tb.ID)
	r.Close()
	a, b := files[0], files[1]
	current := func(snap int64) map[int64]DeleteFile {
		t.Helper()
		r, err := c.Read(snap)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		ds, err := r.DeleteFiles(tb.ID)
		if err != nil {
			t.Fatal(err)
		}
		return ds
	}
	records := func(snap int64) (int64, bool) {
		t.Helper()
		r, _ := c.Read(snap)
		defer r.Close()
		ts, err := r.TableStats(tb.ID)
		if err != nil {
			t.Fatal(err)
		}
		return ts.RecordCount, ts.Columns[1].MinIsExact
	}
	s3 := commit(t, c, func(tx *Txn) {
		tx.SetDeletes("t", NewDeleteFile{DataFileID: a.ID, Path: "/d/del-1.parquet", DeleteCount: 3, FileSizeBytes: 10})
	})
	d3 := current(s3.ID)[a.ID]
	if d3.DeleteCount != 3 || d3.Begin != s3.ID || d3.Owner != OwnerRocklake || len(current(s3.ID)) != 1 {
		t.Fatalf("after the first delete: %+v", current(s3.ID))
	}
	if s3.NextFileID <= s2.NextFileID {
		t.Errorf("a delete file took no file id: next_file_id %d then %d", s2.NextFileID, s3.NextFileID)
	}
	if n, exact := records(s3.ID); n != 112-3 || exact {
		t.Errorf("table stats after a delete: %d rows, min exact %v; want 109, false", n, exact)
	}
	if n, exact := records(s2.ID); n != 112 || !exact {
		t.Errorf("table stats before the delete: %d rows, min exact %v; want 112, true", n, exact)
	}

	// A second delete of a's rows that merged nothing (as if it read the
	// file before the first) is refused; one that merged the first lands.
	before := dump(t, c)
	tx, _ := c.Begin()
	tx.SetDeletes("t", NewDeleteFile{DataFileID: a.ID, Path: "/d/del-2.parquet", DeleteCount: 4})
	if _, err := tx.Commit(); !errors.Is(err, ErrConflict) {
		t.Fatalf("a delete file that merged an older state: %v, want ErrConflict", err)
	}
	for _, bad := range []NewDeleteFile{
		{DataFileID: a.ID, Path: "/d/x", DeleteCount: 2, Replaces: d3.ID},  // fewer than before
		{DataFileID: a.ID, Path: "/d/x", DeleteCount: 11, Replaces: d3.ID}, // more than the file's rows
		{DataFileID: a.ID, Path: "rel", DeleteCount: 4, Replaces: d3.ID},   // not absolute
		{DataFileID: 999, Path: "/d/x", DeleteCount: 1},                    // no such file
	} {
		tx, _ := c.Begin()
		tx.SetDeletes("t", bad)
		if _, err := tx.Commit(); err == nil {
			t.Errorf("%+v: committed", bad)
		}
	}
	if dump(t, c) != before {
		t.Fatal("a refused delete file changed the store")
	}
	s4 := commit(t, c, func(tx *Txn) {
		tx.SetDeletes("t",
			NewDeleteFile{DataFileID: a.ID, Path: "/d/del-2.parquet", DeleteCount: 5, Replaces: d3.ID},
			NewDeleteFile{DataFileID: b.ID, Path: "/d/del-3.parquet", DeleteCount: 100})
	})
	if ds := current(s4.ID); ds[a.ID].Path != "/d/del-2.parquet" || ds[a.ID].DeleteCount != 5 || ds[b.ID].DeleteCount != 100 {
		t.Fatalf("after the second delete: %+v", ds)
	}
	if ds := current(s3.ID); ds[a.ID].Path != "/d/del-1.parquet" || len(ds) != 1 {
		t.Fatalf("time travel to the first delete: %+v", ds)
	}
	if len(current(s2.ID)) != 0 {
		t.Fatal("time travel before any delete sees delete files")
	}
	if n, _ := records(s4.ID); n != 112-5-100 {
		t.Errorf("table stats after both deletes: %d rows, want 7", n)
	}

	// An append widens the stored stats from the files' own counts: a
	// delete is subtracted once, on read.
	s5 := commit(t, c, func(tx *Txn) { tx.AddFiles("t", intFile(t, "/d/c", 0, 0, 0)) })
	if n, _ := records(s5.ID); n != 8 {
		t.Errorf("table stats after an append: %d rows, want 8", n)
	}

	// Retiring b (a fold) ends its delete file.
	s6 := commit(t, c, func(tx *Txn) { tx.RemoveFiles("t", b.ID) })
	if ds := current(s6.ID); len(ds) != 1 || ds[a.ID].ID == 0 {
		t.Fatalf("after retiring b: %+v", ds)
	}
	if n, _ := records(s6.ID); n != 6 {
		t.Errorf("table stats after retiring b: %d rows, want 6", n)
	}

	// Expire up to s6: del-1 (ended at s4) and del-3 (ended at s6) are
	// no kept snapshot's; del-2 stays.
	if _, err := c.ExpireSnapshots(time.Now().Add(time.Hour), false); err != nil {
		t.Fatal(err)
	}
	sched, err := c.ScheduledFiles()
	if err != nil {
		t.Fatal(err)
	}
	var locs []string
	for _, s := range sched {
		locs = append(locs, s.Location)
	}
	for _, want := range []string{"/d/del-1.parquet", "/d/del-3.parquet", "/d/b"} {
		if !slices.Contains(locs, want) {
			t.Errorf("expire did not schedule %s: %v", want, locs)
		}
	}
	if slices.Contains(locs, "/d/del-2.parquet") {
		t.Errorf("expire scheduled the current delete file: %v", locs)
	}
	if ds := current(Latest); ds[a.ID].Path != "/d/del-2.parquet" {
		t.Fatalf("after expire: %+v", ds)
	}
}
