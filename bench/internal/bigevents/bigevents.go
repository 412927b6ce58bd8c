// Package bigevents writes the big Parquet files of the partial-scan
// benches (bench/partial, bench/objects -big), laid out the way engines
// write at scale: large row groups, small pages with the page index, a
// sorted id, a clustered ts, a random user_id and amount, and a
// dictionary-encoded kind.
package bigevents

import (
	"math/rand/v2"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// File is one file to write.
type File struct {
	FirstID   int64 // the first row's id; row i has id FirstID+i
	Rows      int
	RowGroup  int   // rows per row group
	PageBytes int   // data page size (arrow-go cuts pages by uncompressed bytes)
	TSBase    int64 // row i's ts is TSBase + id seconds + up to a minute, in µs
	Seed      uint64
}

var schema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}},
	{Name: "user_id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "amount", Type: arrow.PrimitiveTypes.Float64},
	{Name: "kind", Type: arrow.BinaryTypes.String},
}, nil)

// Write writes f at path.
func Write(path string, f File) error {
	kinds := []string{"click", "view", "buy", "scroll", "share"}
	mem := memory.NewGoAllocator()
	r := rand.New(rand.NewPCG(f.Seed, 1))
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	defer out.Close()
	props := parquet.NewWriterProperties(
		parquet.WithMaxRowGroupLength(int64(f.RowGroup)),
		parquet.WithDataPageSize(int64(f.PageBytes)),
		parquet.WithBatchSize(1024),
		parquet.WithPageIndexEnabled(true),
		parquet.WithDictionaryDefault(false),
		parquet.WithDictionaryFor("kind", true),
		parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithStats(true),
	)
	w, err := pqarrow.NewFileWriter(schema, out, props, pqarrow.NewArrowWriterProperties())
	if err != nil {
		return err
	}
	for lo := 0; lo < f.Rows; lo += f.RowGroup {
		n := min(f.RowGroup, f.Rows-lo)
		b := array.NewRecordBuilder(mem, schema)
		ids := b.Field(0).(*array.Int64Builder)
		tss := b.Field(1).(*array.TimestampBuilder)
		users := b.Field(2).(*array.Int64Builder)
		amounts := b.Field(3).(*array.Float64Builder)
		ks := b.Field(4).(*array.StringBuilder)
		for i := range n {
			id := f.FirstID + int64(lo+i)
			ids.Append(id)
			tss.Append(arrow.Timestamp(f.TSBase + id*1_000_000 + r.Int64N(60_000_000)))
			users.Append(r.Int64N(1_000_000))
			amounts.Append(float64(r.IntN(100_000)) / 100)
			ks.Append(kinds[r.IntN(len(kinds))])
		}
		rec := b.NewRecordBatch()
		err := w.Write(rec)
		rec.Release()
		b.Release()
		if err != nil {
			return err
		}
	}
	return w.Close() // closes out too
}
