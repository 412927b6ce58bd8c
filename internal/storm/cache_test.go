package storm_test

import (
	"fmt"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/internal/pgtest"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

func encBigint(t *testing.T, x int64) []byte {
	t.Helper()
	c, _ := types.CodecFor(types.MustParseType("BIGINT"))
	b, err := c.Encode(types.IntValue(x))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rangeFile is a file whose x spans [lo, hi], one row per value.
func rangeFile(t *testing.T, path string, lo, hi int64) catalog.NewFile {
	n := hi - lo + 1
	return catalog.NewFile{Path: path, RecordCount: n, FileSizeBytes: 100 * n, RowGroupCount: 1,
		Columns: []catalog.FileColumn{{Path: []string{"x"}, Stats: stats.Column{
			Min: stats.Known(encBigint(t, lo)), Max: stats.Known(encBigint(t, hi)), MinIsExact: true, MaxIsExact: true,
			NullCount: stats.Known(int64(0)), ValueCount: stats.Known(n), RowCount: n,
		}}}}
}

func commitTo(t *testing.T, c *catalog.Catalog, fn func(*catalog.Txn)) catalog.Snapshot {
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

// planned is what one handle's reader says of table t at a snapshot,
// through the plan cache (FileSet, ColumnBounds) and the table stats.
type planned struct {
	snap     int64
	paths    []string
	bounds   []string // per file, "[min max]" from ColumnBounds
	rows     int64
	min, max string // table stats of x
}

func plan(t *testing.T, c *catalog.Catalog, snap int64) planned {
	t.Helper()
	r, err := c.Read(snap)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tb, err := r.Table("t")
	if err != nil {
		t.Fatal(err)
	}
	col, err := r.Column(tb.ID, "x")
	if err != nil {
		t.Fatal(err)
	}
	fs, err := r.FileSet(tb.ID)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := r.ColumnBounds(tb.ID, col.ID)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := r.TableStats(tb.ID)
	if err != nil {
		t.Fatal(err)
	}
	codec, _ := types.CodecFor(col.Type)
	show := func(b []byte) string {
		v, err := codec.Decode(b)
		if err != nil {
			t.Fatalf("bound %x: %v", b, err)
		}
		return codec.Format(v)
	}
	p := planned{snap: r.Snapshot().ID, rows: ts.RecordCount}
	for i := range fs.Len() {
		f, err := r.FileAt(fs, i)
		if err != nil {
			t.Fatal(err)
		}
		p.paths = append(p.paths, f.Path)
		var st stats.Column
		if !cb.Fill(i, &st) {
			p.bounds = append(p.bounds, "none")
			continue
		}
		p.bounds = append(p.bounds, fmt.Sprintf("[%s %s]", show(st.Min.V), show(st.Max.V)))
	}
	if cs := ts.Columns[col.ID]; cs != nil && cs.Min.Known && cs.Max.Known {
		p.min, p.max = show(cs.Min.V), show(cs.Max.V)
	}
	return p
}

func (p planned) String() string {
	return fmt.Sprintf("snapshot %d: files %v, bounds %v, %d rows, x in [%s, %s]", p.snap, p.paths, p.bounds, p.rows, p.min, p.max)
}

// Two catalog handles on one database share nothing but the database, as
// two processes would. Handle A plans (file set, column bounds, table
// stats) at the head and so caches them; handle B adds a file, then
// removes it (narrowing the stats). A's reads at each new head see
// exactly the database's state, never its cached older one, and A's
// reads of the older snapshots still see those.
func TestCachesAcrossHandles(t *testing.T) {
	url := pgtest.URL(t)
	a, err := catalog.Create(url, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := catalog.Open(url, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	s1 := commitTo(t, b, func(tx *catalog.Txn) {
		tx.CreateTable("t", []catalog.ColumnDef{{Name: "x", Type: "BIGINT"}})
		tx.AddFiles("t", rangeFile(t, "/d/a", 0, 9), rangeFile(t, "/d/b", 10, 19))
	})
	want1 := "snapshot 1: files [/d/a /d/b], bounds [[0 9] [10 19]], 20 rows, x in [0, 19]"
	if got := plan(t, a, catalog.Latest).String(); got != want1 || s1.ID != 1 {
		t.Fatalf("A at the head after B's first commit (snapshot %d):\n got %s\nwant %s", s1.ID, got, want1)
	}

	commitTo(t, b, func(tx *catalog.Txn) { tx.AddFiles("t", rangeFile(t, "/d/c", 100, 199)) })
	want2 := "snapshot 2: files [/d/a /d/b /d/c], bounds [[0 9] [10 19] [100 199]], 120 rows, x in [0, 199]"
	if got := plan(t, a, catalog.Latest).String(); got != want2 {
		t.Fatalf("A at the head after B added a file:\n got %s\nwant %s", got, want2)
	}

	rb, err := b.Read(catalog.Latest)
	if err != nil {
		t.Fatal(err)
	}
	tb, _ := rb.Table("t")
	files, err := rb.Files(tb.ID)
	rb.Close()
	if err != nil || len(files) != 3 || files[2].Path != "/d/c" {
		t.Fatalf("B's files: %v %v", files, err)
	}
	commitTo(t, b, func(tx *catalog.Txn) { tx.RemoveFiles("t", files[2].ID) })
	want3 := "snapshot 3: files [/d/a /d/b], bounds [[0 9] [10 19]], 20 rows, x in [0, 19]"
	if got := plan(t, a, catalog.Latest).String(); got != want3 {
		t.Fatalf("A at the head after B removed the file (stats must narrow):\n got %s\nwant %s", got, want3)
	}

	// Time travel through A, whose cache now holds all three states.
	for _, c := range []struct {
		snap int64
		want string
	}{{2, want2}, {1, want1}, {3, want3}} {
		if got := plan(t, a, c.snap).String(); got != c.want {
			t.Errorf("A at snapshot %d:\n got %s\nwant %s", c.snap, got, c.want)
		}
	}
}
