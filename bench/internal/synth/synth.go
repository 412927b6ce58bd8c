// Package synth builds the synthetic table the planning benches share: one
// Parquet file per hour with ts clustered (each file holds its own hour),
// 10 columns, statistics registered straight into the catalog with no data
// files behind them.
package synth

import (
	"fmt"
	"time"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

// Table is the table Build creates.
const Table = "events"

const (
	hour = int64(3_600_000_000)
	base = int64(1_704_067_200_000_000) // 2024-01-01 00:00 UTC, in µs
)

// Columns are the table's columns: ts, user_id and c2…c9.
func Columns() []catalog.ColumnDef {
	defs := []catalog.ColumnDef{{Name: "ts", Type: "timestamptz"}, {Name: "user_id", Type: "int64"}}
	for i := 2; i < 10; i++ {
		defs = append(defs, catalog.ColumnDef{Name: fmt.Sprintf("c%d", i), Type: "int64"})
	}
	return defs
}

var (
	tsCodec, _  = types.CodecFor(types.Simple(types.KindTimestampTZ))
	intCodec, _ = types.CodecFor(types.Simple(types.KindBigInt))
)

func encode(c *types.Codec, x int64) []byte { b, _ := c.Encode(types.IntValue(x)); return b }

// File is the file of hour i at path: 2000 rows, ts within that hour,
// every other column in [0, 1,000,000].
func File(path string, i int) catalog.NewFile {
	nf := catalog.NewFile{Path: path, RecordCount: 2000, FileSizeBytes: 100_000, RowGroupCount: 1}
	for ci, d := range Columns() {
		st := stats.Column{RowCount: 2000, NullCount: stats.Known[int64](0), MinIsExact: true, MaxIsExact: true}
		if ci == 0 {
			st.Min, st.Max = stats.Known(encode(tsCodec, base+int64(i)*hour)), stats.Known(encode(tsCodec, base+int64(i+1)*hour-1))
		} else {
			st.Min, st.Max = stats.Known(encode(intCodec, 0)), stats.Known(encode(intCodec, 1_000_000))
		}
		nf.Columns = append(nf.Columns, catalog.FileColumn{Path: []string{d.Name}, Stats: st})
	}
	return nf
}

// Rewrite is the file at path that holds the rows of the files of hours
// first to first+n-1, as optimize writes it: their stats merged.
func Rewrite(path string, first, n int) catalog.NewFile {
	nf := File(path, first)
	nf.RecordCount *= int64(n)
	nf.FileSizeBytes *= int64(n)
	for i := range nf.Columns {
		st := &nf.Columns[i].Stats
		st.RowCount *= int64(n)
		if i == 0 {
			st.Max = stats.Known(encode(tsCodec, base+int64(first+n)*hour-1))
		}
	}
	return nf
}

// Build creates Table in c and registers nfiles files in it, hours 0 to
// nfiles-1 at /data/h%07d.parquet, commitEvery files per commit.
func Build(c *catalog.Catalog, nfiles, commitEvery int) error {
	return BuildProgress(c, nfiles, commitEvery, nil)
}

// BuildProgress is Build, calling progress (when set) with the files
// registered so far after each commit.
func BuildProgress(c *catalog.Catalog, nfiles, commitEvery int, progress func(done int)) error {
	tx, err := c.Begin()
	if err != nil {
		return err
	}
	tx.CreateTable(Table, Columns())
	if _, err := tx.Commit(); err != nil {
		return err
	}
	for done := 0; done < nfiles; {
		tx, err := c.Begin()
		if err != nil {
			return err
		}
		var nfs []catalog.NewFile
		for j := 0; j < commitEvery && done < nfiles; j++ {
			nfs = append(nfs, File(fmt.Sprintf("/data/h%07d.parquet", done), done))
			done++
		}
		tx.AddFiles(Table, nfs...)
		if _, err := tx.Commit(); err != nil {
			return err
		}
		if progress != nil {
			progress(done)
		}
	}
	return nil
}

// Predicate is a filter on Table, by name.
type Predicate struct {
	Name, SQL string
}

// The names of Predicates, in its order.
const (
	OneColumn  = "one column (ts range)"
	TwoColumns = "two columns (ts AND user_id)"
	Half       = "half the files kept"
)

// Predicates are the benches' filters on a table of nfiles files: the hour
// in the middle (one file kept), the same AND user_id = 5 (one file
// kept), and from the middle on with user_id = 5 (half kept).
func Predicates(nfiles int) []Predicate {
	mid := hourText(nfiles / 2)
	next := hourText(nfiles/2 + 1)
	return []Predicate{
		{OneColumn, fmt.Sprintf("ts >= '%s' AND ts < '%s'", mid, next)},
		{TwoColumns, fmt.Sprintf("ts >= '%s' AND ts < '%s' AND user_id = 5", mid, next)},
		{Half, fmt.Sprintf("ts >= '%s' AND user_id = 5", mid)},
	}
}

func hourText(i int) string {
	return time.UnixMicro(base + int64(i)*hour).UTC().Format("2006-01-02 15:04:05+00")
}
