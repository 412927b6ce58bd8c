// Command catalogsize measures the catalog's size on disk: a table of
// -columns columns gets -files files (one row group each) with realistic
// statistics, committed -batch files per snapshot; after a full compaction
// it prints the bytes per file-column stats entry and per row-group entry.
//
//	go run ./bench/catalogsize -files 10000 -columns 10
package main

import (
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"time"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

func main() {
	files := flag.Int("files", 10000, "data files to register")
	columns := flag.Int("columns", 10, "columns in the table")
	batch := flag.Int("batch", 500, "files per commit")
	flag.Parse()

	dir, err := os.MkdirTemp("", "rocklake-catalogsize-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	c, err := catalog.Create(dir+"/lake", catalog.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	// A mix of the types events tables hold.
	kinds := []string{"timestamptz", "int64", "varchar", "float64", "int32", "date", "decimal(18,2)", "uuid", "boolean", "varchar"}
	var defs []catalog.ColumnDef
	codecs := make([]*types.Codec, *columns)
	for i := range *columns {
		typ := kinds[i%len(kinds)]
		defs = append(defs, catalog.ColumnDef{Name: fmt.Sprintf("c%d", i), Type: typ})
		codecs[i], _ = types.CodecFor(types.MustParseType(typ))
	}
	tx, _ := c.Begin()
	tx.CreateTable("events", defs)
	if _, err := tx.Commit(); err != nil {
		log.Fatal(err)
	}

	r := rand.New(rand.NewPCG(1, 2))
	start := time.Now()
	for done := 0; done < *files; {
		tx, _ := c.Begin()
		var nfs []catalog.NewFile
		for j := 0; j < *batch && done < *files; j++ {
			nfs = append(nfs, fakeFile(r, done, defs, codecs))
			done++
		}
		tx.AddFiles("events", nfs...)
		if _, err := tx.Commit(); err != nil {
			log.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	if err := c.CompactStore(); err != nil {
		log.Fatal(err)
	}
	use, err := c.SpaceUsage()
	if err != nil {
		log.Fatal(err)
	}
	entries := float64(*files * *columns)
	fmt.Printf("files=%d columns=%d commits=%d commit_time=%.2fs (%.0f files/s)\n",
		*files, *columns, (*files+*batch-1) / *batch, elapsed.Seconds(), float64(*files)/elapsed.Seconds())
	fmt.Printf("file_column_stats: %d bytes, %.1f bytes/entry\n", use["file_column_stats"], float64(use["file_column_stats"])/entries)
	fmt.Printf("row_group_stats:   %d bytes, %.1f bytes/entry\n", use["row_group_stats"], float64(use["row_group_stats"])/entries)
	fmt.Printf("data_file:         %d bytes, %.1f bytes/file\n", use["data_file"], float64(use["data_file"])/float64(*files))
	fmt.Printf("store total:       %d bytes, %.1f bytes/file\n", use["total"], float64(use["total"])/float64(*files))
}

// fakeFile makes one file's stats: an hour of events, bounds drawn per type.
func fakeFile(r *rand.Rand, n int, defs []catalog.ColumnDef, codecs []*types.Codec) catalog.NewFile {
	rows := int64(2000)
	f := catalog.NewFile{
		Path: fmt.Sprintf("/data/events/hour=%06d/part-0.parquet", n), RecordCount: rows,
		FileSizeBytes: 150_000 + r.Int64N(10_000), FooterSize: 4_000, RowGroupCount: 1,
	}
	for i, d := range defs {
		lo, hi := bounds(r, n, codecs[i])
		st := stats.Column{
			Min: stats.Known(lo), Max: stats.Known(hi), NullCount: stats.Known(r.Int64N(20)),
			RowCount: rows, ColumnSizeBytes: 10_000 + r.Int64N(5_000), MinIsExact: true, MaxIsExact: true,
		}
		st.ValueCount = stats.Known(rows - st.NullCount.V)
		st.ContainsNull = stats.Known(st.NullCount.V > 0)
		if codecs[i].Type().Kind == types.KindDouble {
			st.ContainsNaN = stats.Known(false)
		}
		f.Columns = append(f.Columns, catalog.FileColumn{
			Path: []string{d.Name}, Stats: st,
			RowGroups: []catalog.RowGroupStats{{Index: 0, Stats: st,
				ColumnIndex: catalog.Location{Offset: 140_000 + int64(i)*100, Length: 90},
				OffsetIndex: catalog.Location{Offset: 141_000 + int64(i)*40, Length: 30}}},
		})
	}
	return f
}

func bounds(r *rand.Rand, n int, c *types.Codec) ([]byte, []byte) {
	var lo, hi types.Value
	switch c.Type().Kind {
	case types.KindTimestampTZ:
		base := int64(1_700_000_000_000_000) + int64(n)*3_600_000_000
		lo, hi = types.IntValue(base), types.IntValue(base+3_599_999_999)
	case types.KindVarchar:
		lo, hi = types.StringValue(fmt.Sprintf("user-%05d", r.IntN(1000))), types.StringValue(fmt.Sprintf("user-%05d", 9000+r.IntN(1000)))
	case types.KindDouble:
		lo, hi = types.FloatValue(-r.Float64()*1000), types.FloatValue(r.Float64()*1000)
	case types.KindUUID:
		a, b := make([]byte, 16), make([]byte, 16)
		a[0], b[0] = byte(r.IntN(8)), byte(248+r.IntN(8))
		lo, hi = types.BytesValue(a), types.BytesValue(b)
	case types.KindBoolean:
		lo, hi = types.BoolValue(false), types.BoolValue(true)
	case types.KindDate:
		lo, hi = types.IntValue(19000+int64(n/24)), types.IntValue(19000+int64(n/24))
	default:
		x := r.Int64N(1_000_000)
		lo, hi = types.IntValue(x), types.IntValue(x+r.Int64N(1_000_000))
	}
	a, err := c.Encode(lo)
	if err != nil {
		log.Fatal(err)
	}
	b, err := c.Encode(hi)
	if err != nil {
		log.Fatal(err)
	}
	return a, b
}
