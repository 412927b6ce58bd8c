package catalog

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

func alter(t *testing.T, c *Catalog, table string, a Alteration) Snapshot {
	t.Helper()
	return commit(t, c, func(tx *Txn) { tx.AlterTable(table, a) })
}

func columnsAt(t *testing.T, c *Catalog, snap int64, table string) string {
	t.Helper()
	r, err := c.Read(snap)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tb, err := r.Table(table)
	if err != nil {
		t.Fatal(err)
	}
	cols, err := r.Columns(tb.ID)
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, col := range TopLevel(cols) {
		s := col.Name + " " + col.Type.DuckLakeName()
		if col.Default.Known {
			s += " = " + col.Default.V
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// Each alteration is one snapshot whose columns time travel reads back
// exactly; files keep their names and types as registered (the mapping),
// an added column's stats in older files are its default's, exact, and a
// widened column's are the old ones converted; every read path (file
// rows, blocks, table stats) agrees.
func TestAlterTableColumns(t *testing.T) {
	c := newMemCatalog(t)
	defs, _ := ParseColumnDefs("x BIGINT, n INTEGER")
	commit(t, c, func(tx *Txn) { tx.CreateTable("t", defs) })
	nfile := func(path string, lo, hi int64) NewFile {
		f := intFile(t, path, lo, hi, 0)
		f.Columns = append(f.Columns, FileColumn{Path: []string{"n"}, Stats: stats.Column{
			Min: stats.Known(enc(t, "int32", fmt.Sprint(lo))), Max: stats.Known(enc(t, "int32", fmt.Sprint(hi))),
			NullCount: stats.Known[int64](0), ValueCount: stats.Known(hi - lo + 1), RowCount: hi - lo + 1,
			ContainsNull: stats.Known(false), MinIsExact: true, MaxIsExact: true,
		}, RowGroups: []RowGroupStats{{Index: 0, Stats: stats.Column{
			Min: stats.Known(enc(t, "int32", fmt.Sprint(lo))), Max: stats.Known(enc(t, "int32", fmt.Sprint(hi))), RowCount: hi - lo + 1,
		}}}})
		return f
	}
	s1 := commit(t, c, func(tx *Txn) { tx.AddFiles("t", nfile("/f1", 1, 10)) })
	s2 := alter(t, c, "t", Alteration{Kind: AddColumn, Column: "note", Type: "VARCHAR", Default: stats.Known("hi")})
	s3 := alter(t, c, "t", Alteration{Kind: RenameColumn, Column: "x", NewName: "y"})
	s4 := alter(t, c, "t", Alteration{Kind: SetColumnType, Column: "n", Type: "BIGINT"})
	s5 := alter(t, c, "t", Alteration{Kind: DropColumn, Column: "note"})
	// The narrowing rule: table stats recomputed by a change are never
	// served for an older state (next_file_id moves on).
	for _, pair := range [][2]Snapshot{{s1, s2}, {s2, s3}, {s3, s4}, {s4, s5}} {
		if pair[1].NextFileID <= pair[0].NextFileID || pair[1].SchemaVersion <= pair[0].SchemaVersion {
			t.Errorf("snapshot %d: next_file_id %d, schema %d after %d, %d", pair[1].ID, pair[1].NextFileID, pair[1].SchemaVersion, pair[0].NextFileID, pair[0].SchemaVersion)
		}
	}
	want := map[int64]string{
		s1.ID: "x int64, n int32",
		s2.ID: "x int64, n int32, note varchar = hi",
		s3.ID: "y int64, n int32, note varchar = hi",
		s4.ID: "y int64, n int64, note varchar = hi",
		s5.ID: "y int64, n int64",
	}
	for s, w := range want {
		if got := columnsAt(t, c, s, "t"); got != w {
			t.Errorf("snapshot %d: %s, want %s", s, got, w)
		}
	}

	// At s4 the older file holds y as x, n as int32, and lacks note.
	r, _ := c.Read(s4.ID)
	defer r.Close()
	tb, _ := r.Table("t")
	cols, _ := r.Columns(tb.ID)
	files, _ := r.Files(tb.ID)
	m, err := r.ColumnMapping(tb.ID)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, col := range TopLevel(cols) {
		name, typ, held := m.Source(col, files[0])
		got = append(got, fmt.Sprintf("%s<-%s %s %v", col.Name, name, typ, held))
	}
	if g := strings.Join(got, ", "); g != "y<-x BIGINT true, n<-n INTEGER true, note<- VARCHAR false" {
		t.Errorf("mapping: %s", g)
	}
	fs, _ := r.FileSet(tb.ID)
	ts, _ := r.TableStats(tb.ID)
	for _, col := range TopLevel(cols) {
		cb, err := r.ColumnBounds(tb.ID, col.ID)
		if err != nil {
			t.Fatal(err)
		}
		var st stats.Column
		if !cb.Fill(0, &st) || fs.Len() != 1 {
			t.Fatalf("column %s: no stats in the blocks", col.Name)
		}
		codec, _ := types.CodecFor(col.Type)
		lo, _ := codec.Decode(st.Min.V)
		hi, _ := codec.Decode(st.Max.V)
		text := codec.Format(lo) + ".." + codec.Format(hi)
		wantText := map[string]string{"y": "1..10", "n": "1..10", "note": "hi..hi"}[col.Name]
		if text != wantText || !st.MinIsExact || !st.MaxIsExact || st.NullCount.V != 0 {
			t.Errorf("column %s: %s (exact %v %v, nulls %v), want %s", col.Name, text, st.MinIsExact, st.MaxIsExact, st.NullCount, wantText)
		}
		tcs := ts.Columns[col.ID]
		if tcs == nil || !tcs.Min.Known || string(tcs.Min.V) != string(st.Min.V) || string(tcs.Max.V) != string(st.Max.V) {
			t.Errorf("column %s: table stats %+v", col.Name, tcs)
		}
		rgs, _ := r.RowGroupStats(tb.ID, col.ID, files[0].ID)
		if col.Name == "n" && (len(rgs) != 1 || len(rgs[0].Stats.Min.V) != 8) {
			t.Errorf("widened row-group stats: %+v", rgs)
		}
		// The added column's row groups are the file's, with the default's
		// stats: a planner places them without guessing.
		if col.Name == "note" && (len(rgs) != 1 || rgs[0].Stats.RowCount != 10 || string(rgs[0].Stats.Min.V) != "hi" || rgs[0].Stats.NullCount.V != 0) {
			t.Errorf("added column's row-group stats: %+v", rgs)
		}
	}

	// A file added after the changes holds the columns as they are then.
	s6 := commit(t, c, func(tx *Txn) {
		f := intFile(t, "/f2", 20, 30, 0)
		f.Columns[0].Path = []string{"y"}
		tx.AddFiles("t", f)
	})
	r6, _ := c.Read(s6.ID)
	defer r6.Close()
	cols6, _ := r6.Columns(tb.ID)
	files6, _ := r6.Files(tb.ID)
	m6, _ := r6.ColumnMapping(tb.ID)
	if name, _, held := m6.Source(TopLevel(cols6)[0], files6[1]); name != "y" || !held {
		t.Errorf("a new file holds y as %q (%v)", name, held)
	}
	names := func(cs []Column) string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Name+" "+c.Type.DuckLakeName())
		}
		return strings.Join(out, ", ")
	}
	if a, b := names(m6.Names(files6[0])), names(m6.Names(files6[1])); a != "x int64, n int32" || b != "y int64, n int64" {
		t.Errorf("file columns: %s; %s", a, b)
	}

	// Refusals name the reason and leave the catalog as it was.
	before := dump(t, c)
	for _, tc := range []struct {
		a    Alteration
		want string
	}{
		{Alteration{Kind: SetColumnType, Column: "n", Type: "INTEGER"}, "narrower"},
		{Alteration{Kind: SetColumnType, Column: "y", Type: "DOUBLE"}, "not a widening"},
		{Alteration{Kind: SetColumnType, Column: "y", Type: "BIGINT"}, "already"},
		{Alteration{Kind: RenameColumn, Column: "y", NewName: "N"}, "already exists"},
		{Alteration{Kind: RenameColumn, Column: "zz", NewName: "a"}, "no such column"},
		{Alteration{Kind: AddColumn, Column: "Y", Type: "INT"}, "already exists"},
		{Alteration{Kind: AddColumn, Column: "k", Type: "INT", Default: stats.Known("abc")}, `default "abc" does not read as INTEGER: "abc" is not a number`},
		{Alteration{Kind: AddColumn, Column: "k", Type: "INT[]", Default: stats.Known("1")}, "takes no default"},
		{Alteration{Kind: AddColumn, Column: "k", Type: "FOO"}, `unknown type "FOO"`},
		{Alteration{Kind: SetColumnType, Column: "y", Type: "FOO"}, `unknown type`},
	} {
		tx, _ := c.Begin()
		tx.AlterTable("t", tc.a)
		if _, err := tx.Commit(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.a, err, tc.want)
		}
	}
	if dump(t, c) != before {
		t.Error("a refused alteration changed the store")
	}
	commit(t, c, func(tx *Txn) { tx.DropTable("t") })
	commit(t, c, func(tx *Txn) { tx.CreateTable("one", defs[:1]) })
	before = dump(t, c)
	tx, _ := c.Begin()
	tx.AlterTable("one", Alteration{Kind: DropColumn, Column: "x"})
	if _, err := tx.Commit(); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "only column") {
		t.Errorf("dropping the only column: %v", err)
	}
	if dump(t, c) != before {
		t.Error("a refused alteration changed the store")
	}
}

// A file predating an added column without a default is all NULL; with a
// NaN default it holds NaN only (no bounds, contains_nan).
func TestAddColumnConstantStats(t *testing.T) {
	c := newMemCatalog(t)
	defs, _ := ParseColumnDefs("x BIGINT")
	commit(t, c, func(tx *Txn) { tx.CreateTable("t", defs) })
	commit(t, c, func(tx *Txn) { tx.AddFiles("t", intFile(t, "/a", 1, 5, 2)) })
	alter(t, c, "t", Alteration{Kind: AddColumn, Column: "z", Type: "INT"})
	s := alter(t, c, "t", Alteration{Kind: AddColumn, Column: "f", Type: "DOUBLE", Default: stats.Known("nan")})
	r, _ := c.Read(s.ID)
	defer r.Close()
	tb, _ := r.Table("t")
	for _, name := range []string{"z", "f"} {
		col, err := r.Column(tb.ID, name)
		if err != nil {
			t.Fatal(err)
		}
		var got *stats.Column
		r.FileColumnStats(tb.ID, col.ID, func(_ int64, st *stats.Column) error { got = st; return nil })
		if got == nil {
			t.Fatalf("%s: no stats", name)
		}
		switch name {
		case "z":
			if got.NullCount.V != 7 || got.ValueCount.V != 0 || got.Min.Known || !got.ContainsNull.V {
				t.Errorf("z: %+v", got)
			}
		case "f":
			if got.NullCount.V != 0 || got.ValueCount.V != 7 || got.Min.Known || !got.ContainsNaN.Known || !got.ContainsNaN.V {
				t.Errorf("f: %+v", got)
			}
		}
	}
}

func TestWidens(t *testing.T) {
	for _, tc := range []struct {
		from, to string
		ok       bool
	}{
		{"int32", "int64", true}, {"int8", "int128", true}, {"int64", "int32", false},
		{"uint8", "uint32", true}, {"uint32", "int64", false}, {"float32", "float64", true},
		{"float64", "float32", false}, {"decimal(9,2)", "decimal(18,2)", true},
		{"decimal(9,2)", "decimal(12,4)", true}, {"decimal(9,2)", "decimal(10,3)", true}, {"decimal(9,2)", "decimal(10,4)", false},
		{"decimal(9,2)", "decimal(9,1)", false}, {"int32", "float64", false}, {"varchar", "int32", false},
		{"date", "timestamp", false},
	} {
		ok, why := Widens(types.MustParseType(tc.from), types.MustParseType(tc.to))
		if ok != tc.ok || (!ok && why == "") {
			t.Errorf("%s → %s: %v %q", tc.from, tc.to, ok, why)
		}
	}
}

func TestParseAlteration(t *testing.T) {
	for in, want := range map[string]string{
		"add column note VARCHAR default 'it''s'":               "add column note VARCHAR default 'it''s'",
		"ADD c decimal(10, 2) DEFAULT 1.5":                      "add column c decimal(10, 2) default '1.5'",
		"add column c INT default NULL":                         "add column c INT",
		"rename column a TO b":                                  "rename column a to b",
		"drop c":                                                "drop column c",
		"alter column n set data type BIGINT":                   "alter column n type BIGINT",
		"alter n type BIGINT":                                   "alter column n type BIGINT",
		"set partitioned by year(ts), bucket(16, id), region":   "set partitioned by year(ts), bucket(16, id), region",
		"RESET partitioning":                                    "reset partitioning",
		`set partitioned by year("event ts"), bucket(4, "a,b")`: `set partitioned by year("event ts"), bucket(4, "a,b")`,
	} {
		a, err := ParseAlteration(strings.Fields(in))
		if err != nil || a.String() != want {
			t.Errorf("%q: %v %q, want %q", in, err, a, want)
		}
	}
	for _, in := range []string{"", "add c", "rename a b", "drop", "drop a b", "alter a BIGINT", "add c INT DEFAULT", "truncate t", "set partitioned", "set partitioned by a,,b"} {
		if _, err := ParseAlteration(strings.Fields(in)); !errors.Is(err, ErrInvalid) {
			t.Errorf("%q: %v", in, err)
		}
	}
}

// A layout field names its column as DuckDB would read it: bare, or in
// double quotes with any characters, a doubled quote standing for one.
func TestParsePartitionFieldQuotedNames(t *testing.T) {
	for spec, want := range map[string][2]string{
		`ts`:                   {"ts", "identity"},
		`"Event TS"`:           {"Event TS", "identity"},
		`"x(1)"`:               {"x(1)", "identity"},
		`year("Event TS")`:     {"Event TS", "year"},
		`hour( "say ""hi""" )`: {`say "hi"`, "hour"},
		`bucket(16, "a,b")`:    {"a,b", "bucket(16)"},
		`BUCKET( 2 , id )`:     {"id", "bucket(2)"},
	} {
		col, tr, err := ParsePartitionField(spec)
		if err != nil || col != want[0] || tr != want[1] {
			t.Errorf("%s: %q %q %v, want %q %q", spec, col, tr, err, want[0], want[1])
		}
	}
	// FieldText spells every field so that ParsePartitionField reads it back.
	for _, name := range []string{"ts", "Event TS", "a,b", `say "hi"`, "x(1)", "_7", "7a", "naïve"} {
		for _, tr := range []string{"identity", "year", "bucket(8)"} {
			text := FieldText(PartitionField{Transform: tr}, name)
			col, got, err := ParsePartitionField(text)
			if err != nil || col != name || got != tr {
				t.Errorf("FieldText %q: read back as %q %q %v, want %q %q", text, col, got, err, name, tr)
			}
		}
	}
	for _, spec := range []string{`"unclosed`, `year("a"b)`, `year(a, b)`, `bucket(16 id)`, `bucket(x, id)`, `year()`, `year("")`, `""`, `year(a(b))`} {
		if _, _, err := ParsePartitionField(spec); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", spec, err)
		}
	}
}

// A dropped table's columns all end with it: that is no alteration, and
// its files read by name at the snapshots that still see it.
func TestDroppedTableIsNotAltered(t *testing.T) {
	c := newMemCatalog(t)
	defs, _ := ParseColumnDefs("x BIGINT, y VARCHAR")
	s := commit(t, c, func(tx *Txn) { tx.CreateTable("t", defs) })
	commit(t, c, func(tx *Txn) { tx.DropTable("t") })
	r, _ := c.Read(s.ID)
	defer r.Close()
	tb, _ := r.Table("t")
	m, err := r.ColumnMapping(tb.ID)
	if err != nil || m.Evolved() {
		t.Errorf("a dropped table reads as altered: %v", err)
	}
	commit(t, c, func(tx *Txn) { tx.CreateTable("u", defs) })
	s = alter(t, c, "u", Alteration{Kind: DropColumn, Column: "y"})
	commit(t, c, func(tx *Txn) { tx.DropTable("u") })
	r2, _ := c.Read(s.ID)
	defer r2.Close()
	tb, _ = r2.Table("u")
	if m, _ := r2.ColumnMapping(tb.ID); !m.Evolved() {
		t.Error("a table that dropped a column before it was dropped reads as unaltered")
	}
}

// A declared layout is a snapshot of its own, read back per snapshot; it
// follows a widened column to its new id, keeps a dropped column out, and
// refuses transforms a column's type does not take.
func TestSetPartitioning(t *testing.T) {
	c := newMemCatalog(t)
	defs, _ := ParseColumnDefs("ts TIMESTAMP, id INTEGER, s VARCHAR")
	commit(t, c, func(tx *Txn) { tx.CreateTable("t", defs) })
	s1 := alter(t, c, "t", Alteration{Kind: SetPartitioning, Partitioning: []string{"month(ts)", "bucket(4, id)"}})
	s2 := alter(t, c, "t", Alteration{Kind: SetColumnType, Column: "id", Type: "BIGINT"})
	layout := func(snap int64) string {
		r, _ := c.Read(snap)
		defer r.Close()
		tb, _ := r.Table("t")
		cols, _ := r.Columns(tb.ID)
		var out []string
		for _, f := range tb.PartitionedBy {
			for _, col := range cols {
				if col.ID == f.ColumnID {
					out = append(out, f.Transform+"("+col.Name+" "+col.Type.DuckLakeName()+")")
				}
			}
		}
		return strings.Join(out, ", ")
	}
	if got := layout(s1.ID); got != "month(ts timestamp), bucket(4)(id int32)" {
		t.Errorf("at %d: %s", s1.ID, got)
	}
	if got := layout(s2.ID); got != "month(ts timestamp), bucket(4)(id int64)" {
		t.Errorf("at %d: %s", s2.ID, got)
	}
	before := dump(t, c)
	for _, tc := range []struct {
		a    Alteration
		want string
	}{
		{Alteration{Kind: DropColumn, Column: "ts"}, "in the table's partitioning"},
		{Alteration{Kind: SetPartitioning, Partitioning: []string{"hour(s)"}}, "applies to timestamps"},
		{Alteration{Kind: SetPartitioning, Partitioning: []string{"year(id)"}}, "dates and timestamps"},
		{Alteration{Kind: SetPartitioning, Partitioning: []string{"bucket(0, id)"}}, "from 1 to 65536"},
		{Alteration{Kind: SetPartitioning, Partitioning: []string{"week(ts)"}}, "unknown transform"},
		{Alteration{Kind: SetPartitioning, Partitioning: []string{"nope"}}, "no such column"},
	} {
		tx, _ := c.Begin()
		tx.AlterTable("t", tc.a)
		if _, err := tx.Commit(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.a, err, tc.want)
		}
	}
	if dump(t, c) != before {
		t.Error("a refused alteration changed the store")
	}
	s3 := alter(t, c, "t", Alteration{Kind: SetPartitioning})
	if got := layout(s3.ID); got != "" {
		t.Errorf("after reset: %s", got)
	}
	commit(t, c, func(tx *Txn) { tx.RenameTable("t", "u") })
	r, _ := c.Read(Latest)
	defer r.Close()
	if tb, err := r.Table("u"); err != nil || len(tb.PartitionedBy) != 0 {
		t.Errorf("renamed: %+v %v", tb, err)
	}
}

// BenchmarkAlterAddColumn times one add column with a default on a table
// of 10,000 files: the commit writes the default's statistics for every
// file (a row each and one stats block per file block) and recomputes the
// table statistics.
func BenchmarkAlterAddColumn(b *testing.B) {
	c := newMemCatalog(b)
	defs, _ := ParseColumnDefs("x BIGINT")
	commit(b, c, func(tx *Txn) { tx.CreateTable("t", defs) })
	files := make([]NewFile, 10000)
	for i := range files {
		files[i] = intFile(b, fmt.Sprintf("/f%05d", i), int64(i), int64(i+10), 1)
	}
	commit(b, c, func(tx *Txn) { tx.AddFiles("t", files...) })
	for i := 0; b.Loop(); i++ {
		tx, _ := c.Begin()
		tx.AlterTable("t", Alteration{Kind: AddColumn, Column: fmt.Sprintf("c%d", i), Type: "INTEGER", Default: stats.Known("7")})
		if _, err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
}

// A commit built on the columns before an alteration conflicts with it:
// its files were checked against columns the table no longer has.
func TestAlterConflictsWithConcurrentAdd(t *testing.T) {
	c := newMemCatalog(t)
	defs, _ := ParseColumnDefs("x BIGINT")
	commit(t, c, func(tx *Txn) { tx.CreateTable("t", defs) })
	tx, _ := c.Begin()
	tx.AddFiles("t", intFile(t, "/a", 1, 2, 0))
	alter(t, c, "t", Alteration{Kind: RenameColumn, Column: "x", NewName: "y"})
	if _, err := tx.Commit(); !errors.Is(err, ErrConflict) {
		t.Errorf("an add begun before a rename: %v, want ErrConflict", err)
	}
	tx, _ = c.Begin()
	tx.AlterTable("t", Alteration{Kind: DropColumn, Column: "y"})
	commit(t, c, func(tx *Txn) {
		tx.AddFiles("t", NewFile{Path: "/b", RecordCount: 1, Columns: []FileColumn{{Path: []string{"y"}}}})
	})
	if _, err := tx.Commit(); !errors.Is(err, ErrConflict) {
		t.Errorf("an alteration begun before an add: %v, want ErrConflict", err)
	}
}

// A file's layout values are recorded and read back, shown under the
// column's name now (renamed, widened); a value of a field the table's
// layout lacks is refused, committing nothing.
func TestLayoutValues(t *testing.T) {
	c := newMemCatalog(t)
	defs, _ := ParseColumnDefs("x BIGINT, id INTEGER")
	commit(t, c, func(tx *Txn) { tx.CreateTable("t", defs) })
	alter(t, c, "t", Alteration{Kind: SetPartitioning, Partitioning: []string{"x", "bucket(4, id)"}})
	f := intFile(t, "/f1", 1, 1, 0)
	f.Columns = append(f.Columns, FileColumn{Path: []string{"id"}, Stats: stats.Column{RowCount: 1}})
	f.LayoutValues = []LayoutValue{{ColumnID: 1, Transform: "identity", Value: stats.Known("1")}, {ColumnID: 2, Transform: "bucket(4)"}}
	commit(t, c, func(tx *Txn) { tx.AddFiles("t", f) })
	alter(t, c, "t", Alteration{Kind: RenameColumn, Column: "x", NewName: "y"})
	alter(t, c, "t", Alteration{Kind: SetColumnType, Column: "id", Type: "BIGINT"})
	r, _ := c.Read(Latest)
	tb, _ := r.Table("t")
	files, _ := r.Files(tb.ID)
	cols, _ := r.Columns(tb.ID)
	m, _ := r.ColumnMapping(tb.ID)
	if got := fmt.Sprint(m.LayoutFieldTexts(files[0].LayoutValues, cols), files[0].LayoutValues[0].Value, files[0].LayoutValues[1].Value.Known); got != "[y bucket(4, id)] {1 true} false" {
		t.Errorf("layout values read back: %s", got)
	}
	r.Close()
	before, _ := c.Snapshots()
	g := intFile(t, "/f2", 2, 2, 0)
	g.Columns = append(g.Columns, FileColumn{Path: []string{"id"}, Stats: stats.Column{RowCount: 1}})
	g.LayoutValues = []LayoutValue{{ColumnID: 1, Transform: "year", Value: stats.Known("2")}}
	tx, _ := c.Begin()
	tx.AddFiles("t", g)
	if _, err := tx.Commit(); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "/f2") || !strings.Contains(err.Error(), "year") {
		t.Errorf("a layout value of no field: %v", err)
	}
	if after, _ := c.Snapshots(); len(after) != len(before) {
		t.Error("a refused add committed a snapshot")
	}
}
