package catalog

import (
	"errors"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/stats"
)

// Partition columns and per-file partition values round-trip; a commit
// refuses a file whose values are missing, doubled, unknown or do not
// parse, and leaves the catalog as it was.
func TestPartitionValues(t *testing.T) {
	c, err := CreateInStore(kvtest.Store(t), Options{Now: fixedNow()})
	if err != nil {
		t.Fatal(err)
	}
	defs, _ := ParseColumnDefs("x BIGINT, k BIGINT, d DATE")
	if err := PartitionBy(defs, []string{"K", "d"}); err != nil {
		t.Fatal(err)
	}
	if err := PartitionBy(defs, []string{"nope"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("an unknown partition column: %v", err)
	}
	bad, _ := ParseColumnDefs("s STRUCT(a INT)")
	bad[0].Partition = PartitionHive
	tx, _ := c.Begin()
	tx.CreateTable("bad", bad)
	if _, err := tx.Commit(); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "scalar type") {
		t.Errorf("a nested partition column: %v", err)
	}
	tx, _ = c.Begin()
	tx.CreateTable("t", defs)
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	file := func(path string, vals ...NewPartitionValue) NewFile {
		return NewFile{Path: path, RecordCount: 1, FileSizeBytes: 10, PartitionValues: vals}
	}
	k := func(v string) NewPartitionValue { return NewPartitionValue{Column: "k", Value: stats.Known(v)} }
	d := func(v string) NewPartitionValue { return NewPartitionValue{Column: "d", Value: stats.Known(v)} }
	dNull := NewPartitionValue{Column: "D"}
	before, _ := c.Snapshots()
	for _, tc := range []struct {
		f    NewFile
		want string
	}{
		{file("/a", k("1")), `no value for partition column "d"`},
		{file("/a", k("1"), d("2024-01-01"), k("2")), `two values for partition column "k"`},
		{file("/a", k("1"), d("2024-01-01"), NewPartitionValue{Column: "x"}), `"x" is not a partition column`},
		{file("/a", k("one"), d("2024-01-01")), `value "one" does not read as BIGINT: "one" is not a number`},
	} {
		tx, _ := c.Begin()
		tx.AddFiles("t", tc.f)
		if _, err := tx.Commit(); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.f.PartitionValues, err, tc.want)
		}
	}
	if after, _ := c.Snapshots(); len(after) != len(before) {
		t.Fatal("a refused commit made a snapshot")
	}
	tx, _ = c.Begin()
	tx.AddFiles("t", file("/a", k("7"), d("2024-01-01")), file("/b", dNull, k("-1")))
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	r, _ := c.Read(Latest)
	defer r.Close()
	tb, _ := r.Table("t")
	cols, _ := r.Columns(tb.ID)
	var parts []string
	for _, col := range cols {
		parts = append(parts, col.Name+":"+col.Partition)
	}
	if got := strings.Join(parts, " "); got != "x: k:hive d:hive" {
		t.Errorf("columns: %s", got)
	}
	fs, _ := r.Files(tb.ID)
	for _, f := range fs {
		kv, okK := f.PartitionValue(cols[1].ID)
		dv, okD := f.PartitionValue(cols[2].ID)
		switch f.Path {
		case "/a":
			if !okK || !okD || kv != stats.Known("7") || dv != stats.Known("2024-01-01") {
				t.Errorf("/a: %+v %+v", kv, dv)
			}
		case "/b":
			if !okK || !okD || kv != stats.Known("-1") || dv.Known {
				t.Errorf("/b: %+v %+v", kv, dv)
			}
		}
	}
}
