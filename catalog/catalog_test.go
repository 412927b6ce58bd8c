package catalog

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/rocklake/rocklake/catalog/catalogpb"
	"github.com/rocklake/rocklake/kv"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

func TestTagsAreDistinct(t *testing.T) {
	seen := map[byte]string{}
	for name, tag := range allTags {
		if other, ok := seen[tag]; ok {
			t.Fatalf("tags %s and %s are both 0x%02x", name, other, tag)
		}
		seen[tag] = name
	}
	if tagFileColumnStats != 0x09 {
		t.Fatal("file column stats keep DuckLake's tag 0x09")
	}
	if len(allTags) != 27 {
		t.Fatalf("allTags lists %d tags; update it with every new tag", len(allTags))
	}
}

func TestEnvelope(t *testing.T) {
	in := &catalogpb.Snapshot{Id: 42, NextFileId: 7}
	b, err := encodeValue(in)
	if err != nil {
		t.Fatal(err)
	}
	if b[0] != envelopeVersion || b[1] != 'R' || b[2] != 'L' {
		t.Fatalf("envelope header % x", b[:3])
	}
	var out catalogpb.Snapshot
	if err := decodeValue(b, &out); err != nil || out.Id != 42 || out.NextFileId != 7 {
		t.Fatalf("round trip: %v %v", &out, err)
	}
	for name, bad := range map[string][]byte{
		"empty":     nil,
		"short":     {1, 'R'},
		"magic":     append([]byte{1, 'X', 'L'}, b[3:]...),
		"version":   append([]byte{9, 'R', 'L'}, b[3:]...),
		"truncated": b[:len(b)-1],
	} {
		if err := decodeValue(bad, &out); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: want ErrCorrupt, got %v", name, err)
		}
	}
}

// fixedNow makes commit times deterministic.
func fixedNow() func() time.Time {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	n := 0
	return func() time.Time { n++; return t0.Add(time.Duration(n) * time.Second) }
}

func newMemCatalog(t testing.TB) *Catalog {
	t.Helper()
	c, err := CreateInStore(kvtest.Store(t), Options{Now: fixedNow()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// dump hashes every key and value, to show that a failed operation left
// the store exactly as it was.
func dump(t *testing.T, c *Catalog) string {
	t.Helper()
	return kvtest.Digest(t, c.store)
}

func commit(t testing.TB, c *Catalog, fn func(tx *Txn)) Snapshot {
	t.Helper()
	tx, err := c.Begin()
	if err != nil {
		t.Fatal(err)
	}
	fn(tx)
	s, err := tx.Commit()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func enc(t testing.TB, typ, text string) []byte {
	t.Helper()
	c, ok := types.CodecFor(types.MustParseType(typ))
	if !ok {
		t.Fatalf("no codec for %s", typ)
	}
	v, err := c.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Encode(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// intFile is a file whose BIGINT column x spans [lo, hi] with nulls.
func intFile(t testing.TB, path string, lo, hi, nulls int64) NewFile {
	rows := hi - lo + 1 + nulls
	return NewFile{
		Path: path, RecordCount: rows, FileSizeBytes: 1000, FooterSize: 100, RowGroupCount: 1,
		Columns: []FileColumn{{
			Path: []string{"x"},
			Stats: stats.Column{
				Min: stats.Known(enc(t, "int64", fmt.Sprint(lo))), Max: stats.Known(enc(t, "int64", fmt.Sprint(hi))),
				NullCount: stats.Known(nulls), ValueCount: stats.Known(hi - lo + 1), RowCount: rows,
				ContainsNull: stats.Known(nulls > 0), MinIsExact: true, MaxIsExact: true, ColumnSizeBytes: 10,
			},
			RowGroups: []RowGroupStats{{
				Index: 0, FirstRow: 0,
				Stats: stats.Column{Min: stats.Known(enc(t, "int64", fmt.Sprint(lo))), Max: stats.Known(enc(t, "int64", fmt.Sprint(hi))),
					NullCount: stats.Known(nulls), RowCount: rows, MinIsExact: true, MaxIsExact: true},
				ColumnIndex: Location{Offset: 500, Length: 40}, OffsetIndex: Location{Offset: 540, Length: 20},
			}},
		}},
	}
}

func decodeInt(t *testing.T, b stats.Maybe[[]byte]) string {
	t.Helper()
	if !b.Known {
		return "?"
	}
	c, _ := types.CodecFor(types.MustParseType("int64"))
	v, err := c.Decode(b.V)
	if err != nil {
		t.Fatal(err)
	}
	return c.Format(v)
}

func TestCreateTableEveryType(t *testing.T) {
	c := newMemCatalog(t)
	var defs []ColumnDef
	names := []string{"boolean", "int8", "int16", "int32", "int64", "int128", "uint8", "uint16", "uint32",
		"uint64", "uint128", "float32", "float64", "decimal(4,2)", "decimal(38,10)", "date", "time", "timetz",
		"timestamp", "timestamp_s", "timestamp_ms", "timestamp_ns", "timestamptz", "interval", "uuid",
		"varchar", "blob", "json", "enum('a', 'b')", "variant", "geometry", "int32[]", "int32[3]",
		"struct(a int32, b varchar[])", "map(varchar, float64)", "bitstring"}
	for i, n := range names {
		defs = append(defs, ColumnDef{Name: fmt.Sprintf("c%d", i), Type: n})
	}
	commit(t, c, func(tx *Txn) { tx.CreateTable("all_types", defs) })
	r, err := c.Read(Latest)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tb, err := r.Table("ALL_TYPES")
	if err != nil {
		t.Fatal(err)
	}
	cols, err := r.Columns(tb.ID)
	if err != nil {
		t.Fatal(err)
	}
	var top []Column
	children := map[int64][]string{}
	for _, col := range cols {
		if col.Parent.Known {
			children[col.Parent.V] = append(children[col.Parent.V], col.Name+" "+col.Type.DuckLakeName())
		} else {
			top = append(top, col)
		}
	}
	if len(top) != len(names) {
		t.Fatalf("%d top-level columns, want %d", len(top), len(names))
	}
	for i, col := range top {
		if col.Type.DuckLakeName() != types.MustParseType(names[i]).DuckLakeName() {
			t.Errorf("column %d: type %s, want %s", i, col.Type, names[i])
		}
	}
	want := map[string][]string{
		"int32[]":                      {"element int32"},
		"int32[3]":                     {"element int32"},
		"struct(a int32, b varchar[])": {"a int32", "b varchar[]"},
		"map(varchar, float64)":        {"key varchar", "value float64"},
	}
	for i, col := range top {
		if w, ok := want[names[i]]; ok && fmt.Sprint(children[col.ID]) != fmt.Sprint(w) {
			t.Errorf("%s children: %v, want %v", names[i], children[col.ID], w)
		}
	}
}

func TestFilesAcrossSnapshotsAndTimeTravel(t *testing.T) {
	c := newMemCatalog(t)
	s1 := commit(t, c, func(tx *Txn) { tx.CreateTable("t", []ColumnDef{{Name: "x", Type: "bigint"}}) })
	s2 := commit(t, c, func(tx *Txn) {
		tx.AddFiles("t", intFile(t, "a.parquet", 0, 9, 0), intFile(t, "b.parquet", 10, 19, 2))
	})
	s3 := commit(t, c, func(tx *Txn) { tx.AddFiles("t", intFile(t, "c.parquet", -100, -50, 1)) })
	r3, _ := c.Read(s3.ID)
	tb, _ := r3.Table("t")
	files3, _ := r3.Files(tb.ID)
	r3.Close()
	var bID int64
	for _, f := range files3 {
		if f.Path == "b.parquet" {
			bID = f.ID
		}
	}
	s4 := commit(t, c, func(tx *Txn) { tx.RemoveFiles("t", bID) })

	wantFiles := map[int64][]string{
		0: nil, s1.ID: nil, s2.ID: {"a.parquet", "b.parquet"},
		s3.ID: {"a.parquet", "b.parquet", "c.parquet"}, s4.ID: {"a.parquet", "c.parquet"},
	}
	for snap, want := range wantFiles {
		r, err := c.Read(snap)
		if err != nil {
			t.Fatal(err)
		}
		tb, err := r.Table("t")
		if snap == 0 {
			if !errors.Is(err, ErrNoSuchTable) {
				t.Fatalf("table visible at snapshot 0: %v", err)
			}
			r.Close()
			continue
		}
		files, _ := r.Files(tb.ID)
		var got []string
		for _, f := range files {
			got = append(got, f.Path)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("snapshot %d: files %v, want %v", snap, got, want)
		}
		var statFiles int
		_ = r.FileColumnStats(tb.ID, 1, func(int64, *stats.Column) error { statFiles++; return nil })
		if statFiles != len(want) {
			t.Errorf("snapshot %d: %d stats rows visible, want %d", snap, statFiles, len(want))
		}
		r.Close()
	}
	// Row ids are allocated in order and never reused.
	r, _ := c.Read(Latest)
	defer r.Close()
	files, _ := r.Files(tb.ID)
	if files[0].RowIDStart != 0 || files[1].RowIDStart != 22 {
		t.Errorf("row id starts %d, %d; want 0, 22", files[0].RowIDStart, files[1].RowIDStart)
	}
	rgs, err := r.RowGroupStats(tb.ID, 1, files[0].ID)
	if err != nil || len(rgs) != 1 || rgs[0].ColumnIndex != (Location{500, 40}) || decodeInt(t, rgs[0].Stats.Max) != "9" {
		t.Errorf("row group stats: %+v, %v", rgs, err)
	}
}

func TestTableStatsWidenAndNarrow(t *testing.T) {
	c := newMemCatalog(t)
	commit(t, c, func(tx *Txn) { tx.CreateTable("t", []ColumnDef{{Name: "x", Type: "bigint"}}) })
	s2 := commit(t, c, func(tx *Txn) { tx.AddFiles("t", intFile(t, "a", 0, 9, 0)) })
	s3 := commit(t, c, func(tx *Txn) { tx.AddFiles("t", intFile(t, "b", 100, 200, 3)) })
	check := func(snap int64, lo, hi string, nulls stats.Maybe[bool], records int64) {
		t.Helper()
		r, err := c.Read(snap)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		tb, _ := r.Table("t")
		ts, err := r.TableStats(tb.ID)
		if err != nil {
			t.Fatal(err)
		}
		cs := ts.Columns[1]
		if decodeInt(t, cs.Min) != lo || decodeInt(t, cs.Max) != hi || cs.ContainsNull != nulls || ts.RecordCount != records {
			t.Errorf("snapshot %d: [%s, %s] nulls %v records %d; want [%s, %s] %v %d", snap,
				decodeInt(t, cs.Min), decodeInt(t, cs.Max), cs.ContainsNull, ts.RecordCount, lo, hi, nulls, records)
		}
		// Whatever path served them, the stats equal a fresh fold of the
		// snapshot's file stats.
		fresh, err := r.computeTableStats(tb.ID)
		if err != nil {
			t.Fatal(err)
		}
		if f := fresh.Columns[1]; !bytes.Equal(f.Min.V, cs.Min.V) || !bytes.Equal(f.Max.V, cs.Max.V) || f.ContainsNull != cs.ContainsNull {
			t.Errorf("snapshot %d: served stats differ from a fresh fold", snap)
		}
	}
	check(s2.ID, "0", "9", stats.Known(false), 10)
	check(s3.ID, "0", "200", stats.Known(true), 114)
	// Remove the wide file: stats narrow, next_file_id advances although
	// the commit writes no file.
	r, _ := c.Read(Latest)
	tb, _ := r.Table("t")
	files, _ := r.Files(tb.ID)
	r.Close()
	s4 := commit(t, c, func(tx *Txn) { tx.RemoveFiles("t", files[1].ID) })
	if s4.NextFileID != s3.NextFileID+1 {
		t.Fatalf("narrowing commit: next_file_id %d, want %d", s4.NextFileID, s3.NextFileID+1)
	}
	check(s4.ID, "0", "9", stats.Known(false), 10)
	check(s3.ID, "0", "200", stats.Known(true), 114) // time travel reads the old, wider bounds
	check(s2.ID, "0", "9", stats.Known(false), 10)
}

// TestCachedTableStatsNeverCrossSnapshots: readers opened at different
// snapshots, before and after a narrowing commit, in either order, each get
// their own snapshot's stats.
func TestCachedTableStatsNeverCrossSnapshots(t *testing.T) {
	for _, order := range []string{"old-first", "new-first"} {
		t.Run(order, func(t *testing.T) {
			c := newMemCatalog(t)
			commit(t, c, func(tx *Txn) { tx.CreateTable("t", []ColumnDef{{Name: "x", Type: "bigint"}}) })
			commit(t, c, func(tx *Txn) { tx.AddFiles("t", intFile(t, "a", 0, 9, 0), intFile(t, "b", 50, 60, 0)) })
			oldR, _ := c.Read(Latest)
			defer oldR.Close()
			tb, _ := oldR.Table("t")
			files, _ := oldR.Files(tb.ID)
			commit(t, c, func(tx *Txn) { tx.RemoveFiles("t", files[1].ID) })
			newR, _ := c.Read(Latest)
			defer newR.Close()
			readers := []*Reader{oldR, newR}
			if order == "new-first" {
				readers = []*Reader{newR, oldR}
			}
			got := map[*Reader]string{}
			for range 2 { // second round is served from the cache
				for _, r := range readers {
					ts, err := r.TableStats(tb.ID)
					if err != nil {
						t.Fatal(err)
					}
					got[r] = decodeInt(t, ts.Columns[1].Max)
					if r == oldR && got[r] != "60" || r == newR && got[r] != "9" {
						t.Fatalf("reader at snapshot %d got max %s", r.Snapshot().ID, got[r])
					}
				}
			}
		})
	}
}

func TestRacingWriters(t *testing.T) {
	c := newMemCatalog(t)
	commit(t, c, func(tx *Txn) {
		tx.CreateTable("t", []ColumnDef{{Name: "x", Type: "bigint"}})
		tx.CreateTable("u", []ColumnDef{{Name: "x", Type: "bigint"}})
	})
	a, _ := c.Begin()
	b, _ := c.Begin()
	d, _ := c.Begin()
	a.AddFiles("t", intFile(t, "a", 0, 1, 0))
	b.AddFiles("t", intFile(t, "b", 0, 1, 0))
	d.AddFiles("u", intFile(t, "d", 0, 1, 0))
	if _, err := a.Commit(); err != nil {
		t.Fatal(err)
	}
	before := dump(t, c)
	if _, err := b.Commit(); !errors.Is(err, ErrConflict) {
		t.Fatalf("second writer on the same table: want ErrConflict, got %v", err)
	}
	if dump(t, c) != before {
		t.Fatal("a conflicting commit changed the store")
	}
	if _, err := d.Commit(); err != nil {
		t.Fatalf("a writer on another table must not conflict: %v", err)
	}
	retry := commit(t, c, func(tx *Txn) { tx.AddFiles("t", intFile(t, "b", 0, 1, 0)) })
	r, _ := c.Read(retry.ID)
	defer r.Close()
	tb, _ := r.Table("t")
	files, _ := r.Files(tb.ID)
	if len(files) != 2 {
		t.Fatalf("after retry: %d files, want 2", len(files))
	}
	// Two writers creating the same name: one conflicts.
	x, _ := c.Begin()
	y, _ := c.Begin()
	x.CreateTable("v", []ColumnDef{{Name: "x", Type: "int"}})
	y.CreateTable("V", []ColumnDef{{Name: "x", Type: "int"}})
	if _, err := x.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := y.Commit(); !errors.Is(err, ErrConflict) {
		t.Fatalf("creating a name created concurrently: want ErrConflict, got %v", err)
	}
}

func TestConcurrentCommitsAndReaders(t *testing.T) {
	c := newMemCatalog(t)
	commit(t, c, func(tx *Txn) { tx.CreateTable("t", []ColumnDef{{Name: "x", Type: "bigint"}}) })
	const writers, perWriter = 4, 15
	errs := make(chan error, writers+2)
	done := make(chan struct{})
	for w := range writers {
		go func() {
			for i := range perWriter {
				for {
					tx, _ := c.Begin()
					tx.AddFiles("t", intFile(t, fmt.Sprintf("w%d-%d", w, i), int64(i), int64(i+10), 1))
					_, err := tx.Commit()
					if errors.Is(err, ErrConflict) {
						continue // retry on the new state
					}
					if err != nil {
						errs <- err
						return
					}
					break
				}
			}
			errs <- nil
		}()
	}
	go func() { // a reader checks each snapshot it sees is consistent
		for {
			select {
			case <-done:
				errs <- nil
				return
			default:
			}
			r, err := c.Read(Latest)
			if err != nil {
				errs <- err
				return
			}
			tb, _ := r.Table("t")
			files, _ := r.Files(tb.ID)
			ts, err := r.TableStats(tb.ID)
			if err != nil {
				errs <- err
				return
			}
			var rows int64
			for _, f := range files {
				rows += f.RecordCount
			}
			if ts.RecordCount != rows || ts.FileCount != int64(len(files)) {
				errs <- fmt.Errorf("snapshot %d: table stats %d rows / %d files, files say %d / %d",
					r.Snapshot().ID, ts.RecordCount, ts.FileCount, rows, len(files))
			}
			r.Close()
		}
	}()
	for range writers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	snaps, _ := c.Snapshots()
	if len(snaps) != 2+writers*perWriter {
		t.Fatalf("%d snapshots, want %d", len(snaps), 2+writers*perWriter)
	}
	for i := 1; i < len(snaps); i++ {
		if snaps[i].ID != snaps[i-1].ID+1 || snaps[i].NextFileID < snaps[i-1].NextFileID {
			t.Fatalf("ids went backwards at snapshot %d", snaps[i].ID)
		}
	}
}

func TestBadInputLeavesStoreUnchanged(t *testing.T) {
	c := newMemCatalog(t)
	commit(t, c, func(tx *Txn) {
		tx.CreateTable("t", []ColumnDef{{Name: "x", Type: "bigint"}, {Name: "s", Type: "varchar"}})
	})
	commit(t, c, func(tx *Txn) { tx.AddFiles("t", intFile(t, "a", 0, 9, 0)) })
	r, _ := c.Read(Latest)
	tb, _ := r.Table("t")
	files, _ := r.Files(tb.ID)
	r.Close()

	badBound := intFile(t, "bad-bound", 0, 1, 0)
	badBound.Columns[0].Stats.Min = stats.Known([]byte{1, 2, 3})
	inverted := intFile(t, "inverted", 0, 1, 0)
	inverted.Columns[0].Stats.Min, inverted.Columns[0].Stats.Max = inverted.Columns[0].Stats.Max, inverted.Columns[0].Stats.Min
	unknownCol := intFile(t, "unknown-col", 0, 1, 0)
	unknownCol.Columns[0].Path = []string{"nope"}
	twice := intFile(t, "twice", 0, 1, 0)
	twice.Columns = append(twice.Columns, twice.Columns[0])

	cases := []struct {
		name string
		fn   func(tx *Txn)
		want error
	}{
		{"unknown table", func(tx *Txn) { tx.AddFiles("nope", intFile(t, "x", 0, 1, 0)) }, ErrNoSuchTable},
		{"duplicate table", func(tx *Txn) { tx.CreateTable("T", []ColumnDef{{Name: "x", Type: "int"}}) }, ErrDuplicate},
		{"duplicate column", func(tx *Txn) {
			tx.CreateTable("n", []ColumnDef{{Name: "x", Type: "int"}, {Name: "X", Type: "int"}})
		}, ErrDuplicate},
		{"invalid type", func(tx *Txn) { tx.CreateTable("n", []ColumnDef{{Name: "x", Type: "decimal(99,1)"}}) }, ErrInvalid},
		{"no columns", func(tx *Txn) { tx.CreateTable("n", nil) }, ErrInvalid},
		{"empty name", func(tx *Txn) { tx.CreateTable(" ", []ColumnDef{{Name: "x", Type: "int"}}) }, ErrInvalid},
		{"unknown column in stats", func(tx *Txn) { tx.AddFiles("t", unknownCol) }, ErrNoSuchColumn},
		{"undecodable bound", func(tx *Txn) { tx.AddFiles("t", badBound) }, ErrInvalid},
		{"inverted bounds", func(tx *Txn) { tx.AddFiles("t", inverted) }, ErrInvalid},
		{"stats twice", func(tx *Txn) { tx.AddFiles("t", twice) }, ErrInvalid},
		{"same path again", func(tx *Txn) { tx.AddFiles("t", intFile(t, "a", 0, 1, 0)) }, ErrDuplicate},
		{"same path twice in one commit", func(tx *Txn) {
			tx.AddFiles("t", intFile(t, "z", 0, 1, 0), intFile(t, "z", 0, 1, 0))
		}, ErrDuplicate},
		{"remove missing file", func(tx *Txn) { tx.RemoveFiles("t", 999) }, ErrNoSuchFile},
		{"remove twice", func(tx *Txn) { tx.RemoveFiles("t", files[0].ID, files[0].ID) }, ErrNoSuchFile},
		{"one bad op spoils all", func(tx *Txn) {
			tx.CreateTable("fine", []ColumnDef{{Name: "x", Type: "int"}})
			tx.AddFiles("t", intFile(t, "fine", 0, 1, 0))
			tx.AddFiles("nope", intFile(t, "x", 0, 1, 0))
		}, ErrNoSuchTable},
	}
	for _, tc := range cases {
		before := dump(t, c)
		tx, _ := c.Begin()
		tc.fn(tx)
		_, err := tx.Commit()
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: want %v, got %v", tc.name, tc.want, err)
		}
		if dump(t, c) != before {
			t.Errorf("%s: the failed commit changed the store", tc.name)
		}
	}
	if _, err := c.Read(99); !errors.Is(err, ErrNoSuchSnapshot) {
		t.Errorf("reading a missing snapshot: want ErrNoSuchSnapshot, got %v", err)
	}
	r, _ = c.Read(Latest)
	defer r.Close()
	if _, err := r.Table("nope"); err == nil || !errors.Is(err, ErrNoSuchTable) || !bytes.Contains([]byte(err.Error()), []byte("tables: t")) {
		t.Errorf("a missing table's error must list the tables: %v", err)
	}
	if _, err := r.Column(tb.ID, "nope"); !errors.Is(err, ErrNoSuchColumn) {
		t.Errorf("missing column: %v", err)
	}
}

func TestEmptyStringBoundSurvives(t *testing.T) {
	c := newMemCatalog(t)
	commit(t, c, func(tx *Txn) { tx.CreateTable("t", []ColumnDef{{Name: "s", Type: "varchar"}}) })
	commit(t, c, func(tx *Txn) {
		tx.AddFiles("t", NewFile{Path: "f", RecordCount: 2, Columns: []FileColumn{{
			Path:  []string{"s"},
			Stats: stats.Column{Min: stats.Known([]byte{}), Max: stats.Known([]byte("zz")), NullCount: stats.Known[int64](0), RowCount: 2},
		}}})
	})
	r, _ := c.Read(Latest)
	defer r.Close()
	tb, _ := r.Table("t")
	var got stats.Column
	_ = r.FileColumnStats(tb.ID, 1, func(_ int64, st *stats.Column) error { got = *st; return nil })
	if !got.Min.Known || len(got.Min.V) != 0 || string(got.Max.V) != "zz" {
		t.Fatalf("empty-string min lost: %+v", got)
	}
	if got.ContainsNaN.Known || got.DistinctCount.Known || got.ValueCount.Known {
		t.Fatalf("unknown stats came back known: %+v", got)
	}
	ts, _ := r.TableStats(tb.ID)
	if !ts.Columns[1].Min.Known || len(ts.Columns[1].Min.V) != 0 {
		t.Fatalf("table min lost the empty string: %+v", ts.Columns[1])
	}
}

func TestVariantStats(t *testing.T) {
	c := newMemCatalog(t)
	commit(t, c, func(tx *Txn) { tx.CreateTable("t", []ColumnDef{{Name: "v", Type: "variant"}}) })
	file := func(path string, vs ...VariantStats) NewFile {
		return NewFile{Path: path, RecordCount: 10, Columns: []FileColumn{{Path: []string{"v"}, Variants: vs}}}
	}
	a := VariantStats{Path: `"a"`, ShreddedType: "int64", ValueCount: 5, NullCount: 5,
		Min: stats.Known(enc(t, "int64", "1")), Max: stats.Known(enc(t, "int64", "5"))}
	b := VariantStats{Path: `"b"`, ShreddedType: "varchar", ValueCount: 10}
	a2 := a
	a2.Min, a2.Max = stats.Known(enc(t, "int64", "-3")), stats.Known(enc(t, "int64", "2"))
	b2 := b
	b2.ShreddedType = "int64" // shredded differently: dropped from the table level
	commit(t, c, func(tx *Txn) { tx.AddFiles("t", file("f1", a, b), file("f2", a2, b2)) })
	r, _ := c.Read(Latest)
	defer r.Close()
	tb, _ := r.Table("t")
	files, _ := r.Files(tb.ID)
	fv, _ := r.FileVariantStats(tb.ID, 1, files[0].ID)
	if len(fv) != 2 {
		t.Fatalf("file variant stats: %+v", fv)
	}
	ts, _ := r.TableStats(tb.ID)
	vs := ts.Columns[1].Variants
	if len(vs) != 1 || vs[0].Path != `"a"` || decodeInt(t, vs[0].Min) != "-3" || decodeInt(t, vs[0].Max) != "5" || vs[0].ValueCount != 10 {
		t.Fatalf("table variant stats: %+v", vs)
	}
	fresh, _ := r.computeTableStats(tb.ID)
	if fmt.Sprint(fresh.Columns[1].Variants) != fmt.Sprint(vs) {
		t.Fatalf("stored and recomputed variant stats differ:\n%+v\n%+v", vs, fresh.Columns[1].Variants)
	}
}

func TestDropTableKeepsHistory(t *testing.T) {
	c := newMemCatalog(t)
	commit(t, c, func(tx *Txn) { tx.CreateTable("t", []ColumnDef{{Name: "x", Type: "bigint"}}) })
	s2 := commit(t, c, func(tx *Txn) { tx.AddFiles("t", intFile(t, "a", 0, 9, 0)) })
	s3 := commit(t, c, func(tx *Txn) { tx.DropTable("t") })
	if s3.SchemaVersion <= s2.SchemaVersion {
		t.Fatal("DROP must advance schema_version")
	}
	r, _ := c.Read(Latest)
	if _, err := r.Table("t"); !errors.Is(err, ErrNoSuchTable) {
		t.Fatalf("dropped table still visible: %v", err)
	}
	r.Close()
	old, _ := c.Read(s2.ID)
	defer old.Close()
	tb, err := old.Table("t")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := old.Files(tb.ID)
	if len(files) != 1 {
		t.Fatalf("time travel before the drop: %d files", len(files))
	}
	// The name can be reused.
	commit(t, c, func(tx *Txn) { tx.CreateTable("t", []ColumnDef{{Name: "y", Type: "int"}}) })
}

func TestPebbleCatalogReopenAndErrors(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lake")
	c, err := Create(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	commit(t, c, func(tx *Txn) { tx.CreateTable("t", []ColumnDef{{Name: "x", Type: "bigint"}}) })
	commit(t, c, func(tx *Txn) { tx.AddFiles("t", intFile(t, "a", 0, 9, 0), intFile(t, "b", 5, 50, 1)) })
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrLocked) {
		t.Fatalf("second open: want ErrLocked, got %v", err)
	}
	if _, err := Create(dir, Options{}); !errors.Is(err, ErrLocked) && !errors.Is(err, ErrExists) {
		t.Fatalf("create over an open catalog: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Create(dir, Options{}); !errors.Is(err, ErrExists) {
		t.Fatalf("create over a catalog: want ErrExists, got %v", err)
	}
	c, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, _ := c.Read(Latest)
	defer r.Close()
	tb, _ := r.Table("t")
	ts, err := r.TableStats(tb.ID)
	if err != nil || ts.RecordCount != 57 || decodeInt(t, ts.Columns[1].Max) != "50" {
		t.Fatalf("after reopen: %+v, %v", ts, err)
	}
	snaps, _ := c.Snapshots()
	if len(snaps) != 3 {
		t.Fatalf("after reopen: %d snapshots", len(snaps))
	}
}

func TestOpenSomethingElse(t *testing.T) {
	base := t.TempDir()
	if _, err := Open(filepath.Join(base, "missing"), Options{}); !errors.Is(err, ErrNotCatalog) {
		t.Fatalf("missing dir: want ErrNotCatalog, got %v", err)
	}
	if _, err := os.Stat(filepath.Join(base, "missing")); !os.IsNotExist(err) {
		t.Fatal("opening a missing catalog created its directory")
	}
	other := filepath.Join(base, "other")
	_ = os.MkdirAll(other, 0o755)
	_ = os.WriteFile(filepath.Join(other, "notes.txt"), []byte("hello"), 0o644)
	if _, err := Open(other, Options{}); !errors.Is(err, ErrNotCatalog) {
		t.Fatalf("plain directory: want ErrNotCatalog, got %v", err)
	}
	entries, _ := os.ReadDir(other)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	if fmt.Sprint(names) != "[notes.txt]" {
		t.Fatalf("opening a non-catalog directory changed it: %v", names)
	}
	if _, err := Create(other, Options{}); err == nil {
		t.Fatal("create in a non-empty non-catalog directory must fail")
	}
	// A key-value store that is not a catalog.
	kvDir := filepath.Join(base, "kv")
	s, _ := kv.OpenPebble(kvDir, kv.PebbleOptions{Create: true})
	s.Close()
	if _, err := Open(kvDir, Options{}); !errors.Is(err, ErrNotCatalog) {
		t.Fatalf("bare store: want ErrNotCatalog, got %v", err)
	}
}

func TestParseColumnDefs(t *testing.T) {
	defs, err := ParseColumnDefs(`id BIGINT, "Full Name" VARCHAR, tags STRUCT(a INT, b VARCHAR[]), m MAP(INT, INT)`)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(defs)
	want := `[{id int64 false } {Full Name varchar false } {tags struct(a int32, b varchar[]) false } {m map(int32, int32) false }]`
	if got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	for _, bad := range []string{"", "x", "x int,", "x decimal(50,1)", "x int, x int", "(x int)"} {
		if _, err := ParseColumnDefs(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("%q: want ErrInvalid, got %v", bad, err)
		}
	}
}

func TestDropAndRecreateConflictsWithConcurrentInsert(t *testing.T) {
	c := newMemCatalog(t)
	commit(t, c, func(tx *Txn) { tx.CreateTable("x", []ColumnDef{{Name: "x", Type: "bigint"}}) })
	recreate, _ := c.Begin()
	recreate.DropTable("x")
	recreate.CreateTable("x", []ColumnDef{{Name: "x", Type: "bigint"}})
	commit(t, c, func(tx *Txn) { tx.AddFiles("x", intFile(t, "a", 0, 1, 0)) })
	if _, err := recreate.Commit(); !errors.Is(err, ErrConflict) {
		t.Fatalf("drop+create over a concurrent insert: want ErrConflict, got %v", err)
	}
}

func TestRejectsNonCanonicalAndBadVariantBounds(t *testing.T) {
	c := newMemCatalog(t)
	commit(t, c, func(tx *Txn) {
		tx.CreateTable("t", []ColumnDef{{Name: "f", Type: "double"}, {Name: "v", Type: "variant"}})
	})
	negZero := []byte{0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff} // -0.0 unfolded
	cases := map[string]NewFile{
		"unfolded -0.0": {Path: "a", RecordCount: 1, Columns: []FileColumn{{Path: []string{"f"},
			Stats: stats.Column{Min: stats.Known(negZero), Max: stats.Known(negZero), RowCount: 1}}}},
		"inverted variant bounds": {Path: "b", RecordCount: 1, Columns: []FileColumn{{Path: []string{"v"},
			Variants: []VariantStats{{Path: `"a"`, ShreddedType: "int64", Min: stats.Known(enc(t, "int64", "100")), Max: stats.Known(enc(t, "int64", "5"))}}}}},
		"short variant bound": {Path: "c", RecordCount: 1, Columns: []FileColumn{{Path: []string{"v"},
			Variants: []VariantStats{{Path: `"a"`, ShreddedType: "int64", Min: stats.Known([]byte{1})}}}}},
	}
	for name, nf := range cases {
		before := dump(t, c)
		tx, _ := c.Begin()
		tx.AddFiles("t", nf)
		if _, err := tx.Commit(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: want ErrInvalid, got %v", name, err)
		}
		if dump(t, c) != before {
			t.Errorf("%s: store changed", name)
		}
	}
}

// TestSharedReaderConcurrency runs under -race in CI: one Reader used by
// several goroutines.
func TestSharedReaderConcurrency(t *testing.T) {
	c := newMemCatalog(t)
	commit(t, c, func(tx *Txn) { tx.CreateTable("t", []ColumnDef{{Name: "x", Type: "bigint"}}) })
	commit(t, c, func(tx *Txn) { tx.AddFiles("t", intFile(t, "a", 0, 9, 0), intFile(t, "b", 5, 50, 0)) })
	r, _ := c.Read(Latest)
	defer r.Close()
	tb, _ := r.Table("t")
	done := make(chan int)
	for range 4 {
		go func() {
			n := 0
			_ = r.FileColumnStats(tb.ID, 1, func(int64, *stats.Column) error { n++; return nil })
			_, _ = r.TableStats(tb.ID)
			done <- n
		}()
	}
	for range 4 {
		if n := <-done; n != 2 {
			t.Fatalf("a goroutine saw %d files", n)
		}
	}
}

func TestAllNullFilesDoNotPoisonBounds(t *testing.T) {
	c := newMemCatalog(t)
	commit(t, c, func(tx *Txn) { tx.CreateTable("t", []ColumnDef{{Name: "x", Type: "bigint"}}) })
	allNull := NewFile{Path: "nulls", RecordCount: 5, Columns: []FileColumn{{Path: []string{"x"},
		Stats: stats.Column{NullCount: stats.Known[int64](5), ValueCount: stats.Known[int64](0), RowCount: 5}}}}
	unknown := NewFile{Path: "unknown", RecordCount: 5} // no stats row at all
	check := func(lo, hi string, noValues bool) {
		t.Helper()
		r, _ := c.Read(Latest)
		defer r.Close()
		tb, _ := r.Table("t")
		ts, _ := r.TableStats(tb.ID)
		cs := ts.Columns[1]
		if decodeInt(t, cs.Min) != lo || decodeInt(t, cs.Max) != hi || cs.NoValues != noValues {
			t.Fatalf("bounds [%s, %s] no_values %v; want [%s, %s] %v", decodeInt(t, cs.Min), decodeInt(t, cs.Max), cs.NoValues, lo, hi, noValues)
		}
		fresh, _ := r.computeTableStats(tb.ID)
		if f := fresh.Columns[1]; decodeInt(t, f.Min) != lo || decodeInt(t, f.Max) != hi || f.NoValues != noValues {
			t.Fatalf("recomputed stats differ from stored")
		}
	}
	commit(t, c, func(tx *Txn) { tx.AddFiles("t", allNull) })
	check("?", "?", true)
	commit(t, c, func(tx *Txn) { tx.AddFiles("t", intFile(t, "a", 3, 8, 0)) })
	check("3", "8", false)
	commit(t, c, func(tx *Txn) { tx.AddFiles("t", unknown) })
	check("?", "?", false) // a file without stats makes the bounds unknown
}

func TestColumnStatsOfAlignsWithFiles(t *testing.T) {
	c := newMemCatalog(t)
	commit(t, c, func(tx *Txn) { tx.CreateTable("t", []ColumnDef{{Name: "x", Type: "bigint"}}) })
	commit(t, c, func(tx *Txn) {
		tx.AddFiles("t", intFile(t, "a", 0, 1, 0), NewFile{Path: "nostats", RecordCount: 3}, intFile(t, "c", 5, 9, 0))
	})
	r0, _ := c.Read(Latest)
	tb, _ := r0.Table("t")
	files0, _ := r0.Files(tb.ID)
	r0.Close()
	commit(t, c, func(tx *Txn) { tx.RemoveFiles("t", files0[0].ID) })
	r, _ := c.Read(Latest)
	defer r.Close()
	files, _ := r.Files(tb.ID)
	sts, err := r.ColumnStatsOf(tb.ID, 1, files)
	if err != nil || len(files) != 2 || len(sts) != 2 || sts[0] != nil || decodeInt(t, sts[1].Min) != "5" {
		t.Fatalf("files %v stats %v err %v", files, sts, err)
	}
}

func TestPathIndex(t *testing.T) {
	c := newMemCatalog(t)
	commit(t, c, func(tx *Txn) { tx.CreateTable("t", []ColumnDef{{Name: "x", Type: "bigint"}}) })
	commit(t, c, func(tx *Txn) { tx.AddFiles("t", intFile(t, "a", 0, 1, 0), intFile(t, "b", 0, 1, 0)) })
	r, _ := c.Read(Latest)
	tb, _ := r.Table("t")
	files, _ := r.Files(tb.ID)
	r.Close()
	// Re-adding a path is refused while the file is live...
	tx, _ := c.Begin()
	tx.AddFiles("t", intFile(t, "a", 0, 1, 0))
	if _, err := tx.Commit(); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("re-adding a live path: %v", err)
	}
	// ...allowed once it is removed, even in the same commit...
	commit(t, c, func(tx *Txn) {
		tx.RemoveFiles("t", files[0].ID)
		tx.AddFiles("t", intFile(t, "a", 5, 6, 0))
	})
	// ...and refused again afterwards.
	tx, _ = c.Begin()
	tx.AddFiles("t", intFile(t, "a", 0, 1, 0))
	if _, err := tx.Commit(); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("re-adding the re-added path: %v", err)
	}
	// A dropped table frees its paths for a new table of the same name.
	commit(t, c, func(tx *Txn) { tx.DropTable("t") })
	commit(t, c, func(tx *Txn) {
		tx.CreateTable("t", []ColumnDef{{Name: "x", Type: "bigint"}})
		tx.AddFiles("t", intFile(t, "a", 0, 1, 0), intFile(t, "b", 0, 1, 0))
	})
}

func TestDataRootConfinesFiles(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "lake")
	outside := filepath.Join(dir, "elsewhere")
	for _, d := range []string{root, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	inside := filepath.Join(root, "a.parquet")
	escape := filepath.Join(root, "link")
	if err := os.Symlink(outside, escape); err != nil {
		t.Skipf("symlinks unavailable: %v", err)
	}
	for _, p := range []string{inside, filepath.Join(outside, "b.parquet")} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	store := kv.NewMemory()
	c, err := CreateInStore(store, Options{Now: fixedNow(), DataRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	commit(t, c, func(tx *Txn) { tx.CreateTable("t", []ColumnDef{{Name: "x", Type: "bigint"}}) })
	commit(t, c, func(tx *Txn) { tx.AddFiles("t", intFile(t, inside, 0, 9, 0)) })

	refused := map[string]NewFile{
		"outside":      intFile(t, filepath.Join(outside, "b.parquet"), 0, 9, 0),
		"dot-dot":      intFile(t, filepath.Join(root, "..", "elsewhere", "b.parquet"), 0, 9, 0),
		"symlink":      intFile(t, filepath.Join(escape, "b.parquet"), 0, 9, 0),
		"prefix-twin":  intFile(t, root+"2/c.parquet", 0, 9, 0),
		"relative-up":  func() NewFile { f := intFile(t, "../x.parquet", 0, 9, 0); f.PathIsRelative = true; return f }(),
		"relative-abs": func() NewFile { f := intFile(t, "/etc/x.parquet", 0, 9, 0); f.PathIsRelative = true; return f }(),
	}
	before := dump(t, c)
	for name, f := range refused {
		tx, err := c.Begin()
		if err != nil {
			t.Fatal(err)
		}
		tx.AddFiles("t", f)
		if _, err := tx.Commit(); !errors.Is(err, ErrOutsideRoot) {
			t.Errorf("%s: want ErrOutsideRoot, got %v", name, err)
		}
		if dump(t, c) != before {
			t.Fatalf("%s: refused add changed the store", name)
		}
	}

	// The root survives reopening: it is catalog metadata, not an option
	// every caller must repeat.
	re, err := OpenStore(store, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if re.DataRoot() != c.DataRoot() || re.DataRoot() == "" {
		t.Fatalf("reopened root %q, created %q", re.DataRoot(), c.DataRoot())
	}
	tx, err := re.Begin()
	if err != nil {
		t.Fatal(err)
	}
	tx.AddFiles("t", refused["outside"])
	if _, err := tx.Commit(); !errors.Is(err, ErrOutsideRoot) {
		t.Errorf("after reopen: want ErrOutsideRoot, got %v", err)
	}
}

// A second handle on the same store caches table stats before the first
// handle narrows them (a rewrite retiring files): it must serve the
// narrowed stats at the new snapshot and the wide ones at the old.
func TestSecondHandleNeverServesStaleTableStats(t *testing.T) {
	store := kv.NewMemory()
	c1, err := CreateInStore(store, Options{Now: fixedNow()})
	if err != nil {
		t.Fatal(err)
	}
	commit(t, c1, func(tx *Txn) { tx.CreateTable("t", []ColumnDef{{Name: "x", Type: "bigint"}}) })
	old := commit(t, c1, func(tx *Txn) { tx.AddFiles("t", intFile(t, "a", 0, 9, 0), intFile(t, "b", 50, 60, 0)) })
	c2, err := OpenStore(store, Options{})
	if err != nil {
		t.Fatal(err)
	}
	maxAt := func(c *Catalog, snap int64) string {
		t.Helper()
		r, err := c.Read(snap)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		tb, _ := r.Table("t")
		ts, err := r.TableStats(tb.ID)
		if err != nil {
			t.Fatal(err)
		}
		return decodeInt(t, ts.Columns[1].Max)
	}
	if got := maxAt(c2, Latest); got != "60" { // cached by c2
		t.Fatalf("before the rewrite: max %s", got)
	}
	r, _ := c1.Read(Latest)
	tb, _ := r.Table("t")
	files, _ := r.Files(tb.ID)
	r.Close()
	commit(t, c1, func(tx *Txn) { tx.RemoveFiles("t", files[1].ID) })
	for range 2 {
		if got := maxAt(c2, Latest); got != "9" {
			t.Fatalf("second handle after the narrowing commit: max %s, want 9", got)
		}
		if got := maxAt(c2, old.ID); got != "60" {
			t.Fatalf("second handle at the old snapshot: max %s, want 60", got)
		}
	}
}
