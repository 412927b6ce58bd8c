package catalog

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// propsAt is a table's sort key and write options as snapshot snap reads
// them, spelled as `set` takes them.
func propsAt(t *testing.T, c *Catalog, snap int64, table string) string {
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
	return fmt.Sprintf("sorted by [%s] options %v", SortKeyText(tb.SortedBy, cols), tb.WriteOptions.Settings())
}

// refused commits an alteration that must fail with an error holding
// want, and checks that it left the store as it was.
func refused(t *testing.T, c *Catalog, table string, a Alteration, want string) {
	t.Helper()
	before := dump(t, c)
	tx, err := c.Begin()
	if err != nil {
		t.Fatal(err)
	}
	tx.AlterTable(table, a)
	if _, err := tx.Commit(); err == nil || !strings.Contains(err.Error(), want) || errors.Is(err, ErrUnchanged) {
		t.Errorf("%s: %v, want an error saying %q", a, err, want)
	}
	if dump(t, c) != before {
		t.Errorf("%s: a refused alteration changed the store", a)
	}
}

// The sort key and the write options are table properties of their own
// snapshots: read back as set, each older snapshot keeping what it had,
// and carried over by a rename of the table.
func TestTablePropertiesRoundTripAndTimeTravel(t *testing.T) {
	c := newMemCatalog(t)
	defs, _ := ParseColumnDefs("ts TIMESTAMP, id BIGINT, s VARCHAR")
	s0 := commit(t, c, func(tx *Txn) { tx.CreateTable("t", defs) })
	s1 := alter(t, c, "t", Alteration{Kind: SetSorting, Sorting: []string{"id", "ts"}})
	s2 := alter(t, c, "t", Alteration{Kind: SetSorting, Sorting: []string{"s", "id", "ts"}, Curve: "hilbert"})
	s3 := alter(t, c, "t", Alteration{Kind: SetOption, Option: "target_file_rows", Value: "250_000"})
	s4 := alter(t, c, "t", Alteration{Kind: SetOption, Option: "TARGET_FILE_SIZE", Value: "64MiB"})
	s5 := alter(t, c, "t", Alteration{Kind: SetOption, Option: "sorted", Value: "FALSE"})
	s6 := alter(t, c, "t", Alteration{Kind: ResetOption, Option: "target_file_rows"})
	s7 := alter(t, c, "t", Alteration{Kind: SetSorting})
	for _, tc := range []struct {
		snap Snapshot
		want string
	}{
		{s0, "sorted by [] options []"},
		{s1, "sorted by [id, ts] options []"},
		{s2, "sorted by [hilbert(s, id, ts)] options []"},
		{s3, "sorted by [hilbert(s, id, ts)] options [target_file_rows = 250000]"},
		{s4, "sorted by [hilbert(s, id, ts)] options [target_file_rows = 250000 target_file_size = 64MiB]"},
		{s5, "sorted by [hilbert(s, id, ts)] options [target_file_rows = 250000 target_file_size = 64MiB sorted = false]"},
		{s6, "sorted by [hilbert(s, id, ts)] options [target_file_size = 64MiB sorted = false]"},
		{s7, "sorted by [] options [target_file_size = 64MiB sorted = false]"},
	} {
		if got := propsAt(t, c, tc.snap.ID, "t"); got != tc.want {
			t.Errorf("at %d: %s, want %s", tc.snap.ID, got, tc.want)
		}
	}
	r, _ := c.Read(s5.ID)
	tb, _ := r.Table("t")
	r.Close()
	if tb.SortedBy == nil || tb.SortedBy.Curve != "hilbert" || fmt.Sprint(tb.SortedBy.Columns) != "[3 2 1]" ||
		tb.WriteOptions != (WriteOptions{TargetFileRows: 250000, TargetFileBytes: 64 << 20, Unsorted: true}) {
		t.Errorf("at %d: %+v %+v", s5.ID, tb.SortedBy, tb.WriteOptions)
	}
	for _, s := range []Snapshot{s1, s2, s3, s4, s5, s6, s7} {
		if fmt.Sprint(s.Changes.AlteredTables) != fmt.Sprint([]int64{tb.ID}) {
			t.Errorf("snapshot %d changes %+v: want the table altered", s.ID, s.Changes)
		}
	}
	alter(t, c, "t", Alteration{Kind: SetSorting, Sorting: []string{"ts"}})
	s := commit(t, c, func(tx *Txn) { tx.RenameTable("t", "u") })
	if got := propsAt(t, c, s.ID, "u"); got != "sorted by [ts] options [target_file_size = 64MiB sorted = false]" {
		t.Errorf("renamed: %s", got)
	}
}

// A sort key names columns by id: a rename keeps it (under the new name),
// a widening moves it to the new column, and dropping a column it holds is
// refused, naming the key, until the key goes without it.
func TestSortKeyFollowsColumns(t *testing.T) {
	c := newMemCatalog(t)
	defs, _ := ParseColumnDefs("a INTEGER, b VARCHAR, c DOUBLE")
	commit(t, c, func(tx *Txn) { tx.CreateTable("t", defs) })
	alter(t, c, "t", Alteration{Kind: SetSorting, Sorting: []string{"a", "b"}, Curve: "zorder"})
	s1 := alter(t, c, "t", Alteration{Kind: RenameColumn, Column: "b", NewName: "name"})
	if got := propsAt(t, c, s1.ID, "t"); got != "sorted by [zorder(a, name)] options []" {
		t.Errorf("after rename: %s", got)
	}
	s2 := alter(t, c, "t", Alteration{Kind: SetColumnType, Column: "a", Type: "BIGINT"})
	r, _ := c.Read(s2.ID)
	tb, _ := r.Table("t")
	cols, _ := r.Columns(tb.ID)
	r.Close()
	if got := propsAt(t, c, s2.ID, "t"); got != "sorted by [zorder(a, name)] options []" {
		t.Errorf("after widening: %s", got)
	}
	for _, col := range TopLevel(cols) {
		if col.Name == "a" && (tb.SortedBy.Columns[0] != col.ID || col.Type.DuckLakeName() != "int64") {
			t.Errorf("after widening the key holds %v, want the new column %d", tb.SortedBy.Columns, col.ID)
		}
	}
	refused(t, c, "t", Alteration{Kind: DropColumn, Column: "name"}, `column "name" is in the table's sort key (sorted by zorder(a, name))`)
	refused(t, c, "t", Alteration{Kind: DropColumn, Column: "a"}, "in the table's sort key")
	// Narrowing and unorderable types are no widening, so a sort column
	// keeps an orderable type.
	refused(t, c, "t", Alteration{Kind: SetColumnType, Column: "a", Type: "INTERVAL"}, "cannot change")
	alter(t, c, "t", Alteration{Kind: DropColumn, Column: "c"})
	alter(t, c, "t", Alteration{Kind: SetSorting, Sorting: []string{"a"}})
	s3 := alter(t, c, "t", Alteration{Kind: DropColumn, Column: "name"})
	if got := propsAt(t, c, s3.ID, "t"); got != "sorted by [a] options []" {
		t.Errorf("after dropping a column the key no longer holds: %s", got)
	}
	if got := propsAt(t, c, s1.ID, "t"); got != "sorted by [zorder(a, name)] options []" {
		t.Errorf("time travel to before the drop: %s", got)
	}
}

// Refused property changes name what is wrong and leave the store as it
// was.
func TestTablePropertiesRefused(t *testing.T) {
	c := newMemCatalog(t)
	defs, _ := ParseColumnDefs("a INTEGER, b VARCHAR, st STRUCT(x INTEGER, y INTEGER), l INTEGER[], iv INTERVAL, c1 INTEGER, c2 INTEGER, c3 INTEGER, c4 INTEGER, c5 INTEGER, c6 INTEGER, c7 INTEGER, c8 INTEGER")
	commit(t, c, func(tx *Txn) { tx.CreateTable("t", defs) })
	alter(t, c, "t", Alteration{Kind: SetSorting, Sorting: []string{"a"}})
	nine := []string{"a", "c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8"}
	for _, tc := range []struct {
		a    Alteration
		want string
	}{
		{Alteration{Kind: SetSorting, Sorting: []string{"nope"}}, `no such column "nope"`},
		{Alteration{Kind: SetSorting, Sorting: []string{"st.x"}}, `"st.x" is a nested field`},
		{Alteration{Kind: SetSorting, Sorting: []string{"st"}}, `column "st" cannot be in a sort key`},
		{Alteration{Kind: SetSorting, Sorting: []string{"l"}}, `column "l" cannot be in a sort key`},
		{Alteration{Kind: SetSorting, Sorting: []string{"iv"}}, `column "iv" cannot be in a sort key`},
		{Alteration{Kind: SetSorting, Sorting: []string{"a", "b", "A"}}, "given twice"},
		{Alteration{Kind: SetSorting, Sorting: nine, Curve: "zorder"}, "at most 8 columns, got 9"},
		{Alteration{Kind: SetSorting, Sorting: []string{"a"}, Curve: "hilbert"}, "two or more columns"},
		{Alteration{Kind: SetSorting, Sorting: []string{"a", "b"}, Curve: "peano"}, "unknown curve"},
		{Alteration{Kind: SetOption, Option: "target_file_rows", Value: "0"}, "1 or more"},
		{Alteration{Kind: SetOption, Option: "target_file_rows", Value: "lots"}, "1 or more"},
		{Alteration{Kind: SetOption, Option: "target_file_size", Value: "big"}, "a size such as 128MB"},
		{Alteration{Kind: SetOption, Option: "target_file_size", Value: "0MB"}, "a size such as 128MB"},
		{Alteration{Kind: SetOption, Option: "sorted", Value: "maybe"}, "true or false"},
		{Alteration{Kind: SetOption, Option: "compression", Value: "zstd"}, `option "compression": unknown`},
		{Alteration{Kind: ResetOption, Option: "compression"}, `option "compression": unknown`},
	} {
		refused(t, c, "t", tc.a, tc.want)
	}
	// Eight columns is a curve's most.
	alter(t, c, "t", Alteration{Kind: SetSorting, Sorting: nine[:8], Curve: "zorder"})

	hive, _ := ParseColumnDefs("region VARCHAR, x BIGINT")
	if err := PartitionBy(hive, []string{"region"}); err != nil {
		t.Fatal(err)
	}
	commit(t, c, func(tx *Txn) { tx.CreateTable("h", hive) })
	refused(t, c, "h", Alteration{Kind: SetSorting, Sorting: []string{"x", "region"}}, `column "region" cannot be in a sort key: a Hive partition column`)
}

// Setting a property to the value it has makes no snapshot: Commit says
// ErrUnchanged with the newest snapshot, and the store is as it was. A
// no-op beside a real change leaves the real change to commit.
func TestTablePropertiesUnchangedMakeNoSnapshot(t *testing.T) {
	c := newMemCatalog(t)
	defs, _ := ParseColumnDefs("ts TIMESTAMP, id BIGINT")
	commit(t, c, func(tx *Txn) { tx.CreateTable("t", defs) })
	alter(t, c, "t", Alteration{Kind: SetPartitioning, Partitioning: []string{"day(ts)"}})
	alter(t, c, "t", Alteration{Kind: SetSorting, Sorting: []string{"id", "ts"}, Curve: "zorder"})
	head := alter(t, c, "t", Alteration{Kind: SetOption, Option: "target_file_size", Value: "128MB"})
	for _, a := range []Alteration{
		{Kind: SetPartitioning, Partitioning: []string{"DAY(TS)"}},
		{Kind: SetSorting, Sorting: []string{"ID", "ts"}, Curve: "ZORDER"},
		{Kind: SetOption, Option: "target_file_size", Value: "128 MB"},
		{Kind: SetOption, Option: "target_file_size", Value: "128000kB"},
		{Kind: SetOption, Option: "sorted", Value: "true"},
		{Kind: ResetOption, Option: "target_file_rows"},
	} {
		before := dump(t, c)
		tx, _ := c.Begin()
		tx.AlterTable("t", a)
		s, err := tx.Commit()
		if !errors.Is(err, ErrUnchanged) || s.ID != head.ID {
			t.Errorf("%s: snapshot %d, %v; want ErrUnchanged at %d", a, s.ID, err, head.ID)
		}
		if dump(t, c) != before {
			t.Errorf("%s: an unchanged property changed the store", a)
		}
	}
	// Different in one respect only: the curve, the order, the unit's
	// value.
	for _, a := range []Alteration{
		{Kind: SetSorting, Sorting: []string{"id", "ts"}},
		{Kind: SetSorting, Sorting: []string{"ts", "id"}},
		{Kind: SetOption, Option: "target_file_size", Value: "128MiB"},
	} {
		if s := alter(t, c, "t", a); s.ID != head.ID+1 {
			t.Errorf("%s: snapshot %d, want %d", a, s.ID, head.ID+1)
		} else {
			head = s
		}
	}
	alter(t, c, "t", Alteration{Kind: SetPartitioning})
	alter(t, c, "t", Alteration{Kind: SetSorting})
	for _, a := range []Alteration{{Kind: SetPartitioning}, {Kind: SetSorting}} {
		tx, _ := c.Begin()
		tx.AlterTable("t", a)
		if _, err := tx.Commit(); !errors.Is(err, ErrUnchanged) {
			t.Errorf("%s with none declared: %v, want ErrUnchanged", a, err)
		}
	}
	commit(t, c, func(tx *Txn) { tx.CreateTable("u", defs) })
	s := commit(t, c, func(tx *Txn) {
		tx.AlterTable("t", Alteration{Kind: SetSorting})
		tx.AlterTable("u", Alteration{Kind: SetSorting, Sorting: []string{"id"}})
	})
	if got := propsAt(t, c, s.ID, "u"); got != "sorted by [id] options []" {
		t.Errorf("beside a no-op: %s", got)
	}
}

// A write begun before a change of the table's properties conflicts with
// it: its files were laid out for properties the table no longer has.
func TestSetSortingConflictsWithConcurrentAdd(t *testing.T) {
	c := newMemCatalog(t)
	defs, _ := ParseColumnDefs("x BIGINT")
	commit(t, c, func(tx *Txn) { tx.CreateTable("t", defs) })
	tx, _ := c.Begin()
	tx.AddFiles("t", intFile(t, "/a", 1, 2, 0))
	alter(t, c, "t", Alteration{Kind: SetSorting, Sorting: []string{"x"}})
	if _, err := tx.Commit(); !errors.Is(err, ErrConflict) {
		t.Errorf("an add begun before set sorted by: %v, want ErrConflict", err)
	}
}

func TestParseTablePropertyAlterations(t *testing.T) {
	for in, want := range map[string]string{
		"set sorted by a, b":                        "set sorted by a, b",
		"SET SORTED BY a,b":                         "set sorted by a, b",
		"set sorted by zorder(a, b)":                "set sorted by zorder(a, b)",
		"set sorted by HILBERT( a , b, c )":         "set sorted by hilbert(a, b, c)",
		`set sorted by "Event TS", "x(1)"`:          `set sorted by "Event TS", "x(1)"`,
		`set sorted by zorder("a,b", c)`:            `set sorted by zorder("a,b", c)`,
		"reset sorted by":                           "reset sorted by",
		"reset sorting":                             "reset sorted by",
		"reset partitioned by":                      "reset partitioning",
		"set option target_file_rows = 1000":        "set option target_file_rows = 1000",
		"set option target_file_rows=1000":          "set option target_file_rows = 1000",
		"set option TARGET_FILE_SIZE = 128 MB":      "set option target_file_size = 128 MB",
		"set option target_file_size 64MiB":         "set option target_file_size = 64MiB",
		"set option sorted = false":                 "set option sorted = false",
		"reset option Sorted":                       "reset option sorted",
		"set partitioned by day(ts), bucket(4, id)": "set partitioned by day(ts), bucket(4, id)",
	} {
		a, err := ParseAlteration(strings.Fields(in))
		if err != nil || a.String() != want {
			t.Errorf("%q: %v %q, want %q", in, err, a, want)
			continue
		}
		// What String spells reads back as the same alteration.
		b, err := ParseAlteration(strings.Fields(a.String()))
		if err != nil || b.String() != want {
			t.Errorf("%q read back: %v %q", a, err, b)
		}
	}
	for in, want := range map[string]string{
		"set sorted by":                      "want `add column",
		"set sorted":                         "want `add column",
		"set sorted by a,,b":                 "want columns in order",
		"set sorted by a desc":               "want columns in order",
		"set sorted by a b":                  "want columns in order",
		"set sorted by zorder(a, b":          "want columns in order",
		"set sorted by peano(a, b)":          "unknown curve",
		"set sorted by zorder()":             "want columns in order",
		"reset sorted":                       "want `add column",
		"set option":                         "want `add column",
		"set option target_file_rows":        "want `set option NAME = VALUE`",
		"set option target_file_rows =":      "want `set option NAME = VALUE`",
		"set option target_file_rows = -1":   "1 or more",
		"set option target_file_size = 12XB": "a size such as 128MB",
		"set option sorted = yes":            "true or false",
		"set option nope = 1":                `option "nope": unknown`,
		"reset option nope":                  `option "nope": unknown`,
		"reset option":                       "want `add column",
	} {
		if _, err := ParseAlteration(strings.Fields(in)); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want ErrInvalid saying %q", in, err, want)
		}
	}
}

func TestSizeTextReadsBack(t *testing.T) {
	for _, n := range []int64{1, 999, 1000, 1024, 1500, 128e6, 64 << 20, 3 << 30, 5e12, 1 << 50} {
		got, err := ParseSize(SizeText(n))
		if err != nil || got != n {
			t.Errorf("%d: %s reads back as %d %v", n, SizeText(n), got, err)
		}
	}
	if SizeText(128e6) != "128MB" || SizeText(64<<20) != "64MiB" || SizeText(1500) != "1500B" {
		t.Errorf("%s %s %s", SizeText(128e6), SizeText(64<<20), SizeText(1500))
	}
}
