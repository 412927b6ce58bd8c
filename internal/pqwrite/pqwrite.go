// Package pqwrite writes Parquet files from columns of typed values
// (package types) with arrow-go. Tests use it to make files whose contents
// they know exactly; the demo uses it to make its data set, and the engine
// to write rewritten files with page indexes and bloom filters.
package pqwrite

import (
	"fmt"
	"io"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/rocklake/rocklake/types"
)

// Column is a named column of values of one DuckDB type; a nil entry is
// NULL.
type Column struct {
	Name   string
	Type   types.Type
	Values []*types.Value
	// Unit, when set, writes a TIME or TIMESTAMP(TZ) column in another
	// unit than the type's own ("ms", "us" or "ns"); the values are then
	// counts of that unit. Tests use it for files DuckDB would not write.
	Unit string
	// Array, when set, holds the column's values as arrow-go built them
	// (Values is then ignored); its type must be the one Write gives the
	// column. It carries what a Value cannot: a FLOAT's exact bits (a
	// float32 signalling NaN widened to float64 comes back quiet).
	Array arrow.Array
}

// Options shape the file. The zero value writes one row group, statistics
// on, no page index, no bloom filters, snappy.
type Options struct {
	RowGroupRows int64 // rows per row group; 0 = all in one
	PageBytes    int64 // target data page size; 0 = arrow-go's default
	PageIndex    bool
	BloomFilters bool
	// BloomColumns limits bloom filters to these columns (all when empty).
	BloomColumns []string
	NoStats      bool
	// Dictionary dictionary-encodes the columns whose values repeat: a
	// sample of them, spread over the column, finds at most half of them
	// distinct. Encoding a column of distinct values (ids, keys) as a
	// dictionary costs a hash of every value, for a dictionary arrow-go
	// then drops for being too large, or keeps at no gain.
	Dictionary bool
	// Zstd compresses pages with zstd instead of snappy: smaller files
	// for the files rocklake keeps (rewrites and writes), at some cost in
	// write time.
	Zstd bool
}

// Supported reports whether Write can write a column of type t.
func Supported(t types.Type) bool {
	switch t.Kind {
	case types.KindHugeInt, types.KindUHugeInt:
		return true
	}
	_, err := arrowType(t)
	return err == nil
}

// A HUGEINT column is written as INT64 when every value fits it, else as
// UINT64 when every value does; a UHUGEINT column as UINT64 (a signed
// file column never fits an unsigned table column). No Parquet type reads
// back as a 128-bit integer (DuckDB writes HUGEINT as DOUBLE, losing
// digits), and a 64-bit one fits a 128-bit table column exactly. Every
// value a table can hold fits one of them unless a file mixes negative
// values with values above 2^63-1, which Write refuses, naming the column.
func narrow(c Column) (Column, error) {
	if c.Array != nil || (c.Type.Kind != types.KindHugeInt && c.Type.Kind != types.KindUHugeInt) {
		return c, nil
	}
	signed, unsigned := true, true
	for _, v := range c.Values {
		if v == nil {
			continue
		}
		if c.Type.Kind == types.KindHugeInt {
			signed = signed && v.I.IsInt64()
			unsigned = unsigned && v.I.Hi == 0
		} else {
			signed = false
			unsigned = unsigned && v.U.Hi == 0
		}
	}
	if c.Type.Kind == types.KindUHugeInt {
		signed = false
	}
	out := c
	switch {
	case signed:
		out.Type = types.Simple(types.KindBigInt)
	case unsigned:
		out.Type = types.Simple(types.KindUBigInt)
		if c.Type.Kind == types.KindHugeInt {
			out.Values = make([]*types.Value, len(c.Values))
			for i, v := range c.Values {
				if v != nil {
					x := types.UintValue(v.I.Lo)
					out.Values[i] = &x
				}
			}
		}
	default:
		return c, fmt.Errorf("pqwrite: column %q (%s) holds values no 64-bit Parquet integer type holds together", c.Name, c.Type)
	}
	return out, nil
}

// Write writes the columns (all the same length) to path.
func Write(path string, cols []Column, opts Options) error {
	if len(cols) == 0 {
		return fmt.Errorf("pqwrite: no columns")
	}
	mem := memory.DefaultAllocator
	fields := make([]arrow.Field, len(cols))
	arrays := make([]arrow.Array, len(cols))
	n := len(cols[0].Values)
	if cols[0].Array != nil {
		n = cols[0].Array.Len()
	}
	for i, c := range cols {
		c, err := narrow(c)
		if err != nil {
			return err
		}
		got := len(c.Values)
		if c.Array != nil {
			got = c.Array.Len()
		}
		if got != n {
			return fmt.Errorf("pqwrite: column %s has %d values, want %d", c.Name, got, n)
		}
		at, err := arrowType(c.Type)
		if err != nil {
			return err
		}
		if c.Unit != "" {
			if at, err = withUnit(at, c.Unit); err != nil {
				return err
			}
		}
		fields[i] = arrow.Field{Name: c.Name, Type: at, Nullable: true}
		if c.Array != nil {
			if !arrow.TypeEqual(c.Array.DataType(), at) {
				return fmt.Errorf("pqwrite: column %s: array of %s, want %s", c.Name, c.Array.DataType(), at)
			}
			arrays[i] = c.Array
			continue
		}
		arr, err := build(mem, at, c)
		if err != nil {
			return err
		}
		defer arr.Release()
		arrays[i] = arr
	}
	schema := arrow.NewSchema(fields, nil)
	rec := array.NewRecordBatch(schema, arrays, int64(n))
	defer rec.Release()
	tbl := array.NewTableFromRecords(schema, []arrow.RecordBatch{rec})
	defer tbl.Release()

	codec := compress.Codecs.Snappy
	if opts.Zstd {
		codec = compress.Codecs.Zstd
	}
	props := []parquet.WriterProperty{
		parquet.WithStats(!opts.NoStats),
		parquet.WithCompression(codec),
		parquet.WithDictionaryDefault(opts.Dictionary),
		parquet.WithPageIndexEnabled(opts.PageIndex),
	}
	if opts.BloomFilters && len(opts.BloomColumns) == 0 {
		props = append(props, parquet.WithBloomFilterEnabled(true))
	}
	for _, c := range opts.BloomColumns {
		props = append(props, parquet.WithBloomFilterEnabledPath(parquet.ColumnPath{c}, true))
	}
	for i, c := range cols {
		if opts.Dictionary && !repeats(arrays[i]) {
			props = append(props, parquet.WithDictionaryPath(parquet.ColumnPath{c.Name}, false))
			continue
		}
		// arrow-go's dictionary keys floats by value: -0.0 would share the
		// entry of +0.0, every NaN that of the first NaN. Plain encoding
		// keeps every bit.
		if k := c.Type.Kind; k == types.KindFloat || k == types.KindDouble {
			props = append(props, parquet.WithDictionaryPath(parquet.ColumnPath{c.Name}, false))
		}
	}
	if opts.PageBytes > 0 {
		props = append(props, parquet.WithDataPageSize(opts.PageBytes), parquet.WithBatchSize(64))
	}
	rg := opts.RowGroupRows
	if rg <= 0 {
		rg = int64(max(n, 1))
	}
	props = append(props, parquet.WithMaxRowGroupLength(rg))
	if opts.BloomFilters || len(opts.BloomColumns) > 0 {
		// Size filters for a row group's values at 1% false positives
		// (arrow-go's default is far larger).
		props = append(props, parquet.WithBloomFilterNDV(min(rg, int64(max(n, 1)))), parquet.WithBloomFilterFPP(0.01))
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	// WriteTable closes a sink that can be closed; keep the file to close
	// it here and see the error.
	sink := struct{ io.Writer }{f}
	if err := pqarrow.WriteTable(tbl, sink, rg, parquet.NewWriterProperties(props...), pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema())); err != nil {
		f.Close()
		return fmt.Errorf("pqwrite: %s: %w", path, err)
	}
	return f.Close()
}

// ArrowType is the arrow-go type of a Column's Array for a column of type
// t.
func ArrowType(t types.Type) (arrow.DataType, error) { return arrowType(t) }

// repeats reports whether a sample of up to dictionarySample of a's
// values, evenly spaced, holds at most half as many distinct values (NULLs
// left out). Only a's encoding depends on it, never its values.
func repeats(a arrow.Array) bool {
	step := max(1, a.Len()/dictionarySample)
	seen := map[string]struct{}{}
	n := 0
	for i := 0; i < a.Len(); i += step {
		if a.IsNull(i) {
			continue
		}
		n++
		seen[a.ValueStr(i)] = struct{}{}
	}
	return 2*len(seen) <= n
}

const dictionarySample = 4096

func arrowType(t types.Type) (arrow.DataType, error) {
	switch t.Kind {
	case types.KindBoolean:
		return arrow.FixedWidthTypes.Boolean, nil
	case types.KindTinyInt:
		return arrow.PrimitiveTypes.Int8, nil
	case types.KindSmallInt:
		return arrow.PrimitiveTypes.Int16, nil
	case types.KindInteger:
		return arrow.PrimitiveTypes.Int32, nil
	case types.KindBigInt:
		return arrow.PrimitiveTypes.Int64, nil
	case types.KindUTinyInt:
		return arrow.PrimitiveTypes.Uint8, nil
	case types.KindUSmallInt:
		return arrow.PrimitiveTypes.Uint16, nil
	case types.KindUInteger:
		return arrow.PrimitiveTypes.Uint32, nil
	case types.KindUBigInt:
		return arrow.PrimitiveTypes.Uint64, nil
	case types.KindFloat:
		return arrow.PrimitiveTypes.Float32, nil
	case types.KindDouble:
		return arrow.PrimitiveTypes.Float64, nil
	case types.KindDecimal:
		return &arrow.Decimal128Type{Precision: int32(t.Precision), Scale: int32(t.Scale)}, nil
	case types.KindDate:
		return arrow.FixedWidthTypes.Date32, nil
	case types.KindTime:
		return arrow.FixedWidthTypes.Time64us, nil
	case types.KindTimeNS:
		return arrow.FixedWidthTypes.Time64ns, nil
	case types.KindTimestampMS:
		return &arrow.TimestampType{Unit: arrow.Millisecond}, nil
	case types.KindTimestamp:
		return &arrow.TimestampType{Unit: arrow.Microsecond}, nil
	case types.KindTimestampNS:
		return &arrow.TimestampType{Unit: arrow.Nanosecond}, nil
	case types.KindTimestampTZ:
		return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, nil
	case types.KindVarchar:
		return arrow.BinaryTypes.String, nil
	case types.KindBlob:
		return arrow.BinaryTypes.Binary, nil
	case types.KindUUID:
		return extensions.NewUUIDType(), nil
	}
	return nil, fmt.Errorf("pqwrite: cannot write %s", t)
}

func withUnit(at arrow.DataType, unit string) (arrow.DataType, error) {
	units := map[string]arrow.TimeUnit{"ms": arrow.Millisecond, "us": arrow.Microsecond, "ns": arrow.Nanosecond}
	u, ok := units[unit]
	if !ok {
		return nil, fmt.Errorf("pqwrite: unknown unit %q", unit)
	}
	switch t := at.(type) {
	case *arrow.TimestampType:
		return &arrow.TimestampType{Unit: u, TimeZone: t.TimeZone}, nil
	case *arrow.Time64Type:
		if u == arrow.Millisecond {
			return arrow.FixedWidthTypes.Time32ms, nil
		}
		return &arrow.Time64Type{Unit: u}, nil
	}
	return nil, fmt.Errorf("pqwrite: a unit applies to times and timestamps, not %s", at)
}

func build(mem memory.Allocator, at arrow.DataType, c Column) (arrow.Array, error) {
	b := array.NewBuilder(mem, at)
	defer b.Release()
	for _, v := range c.Values {
		if v == nil {
			b.AppendNull()
			continue
		}
		switch bb := b.(type) {
		case *array.BooleanBuilder:
			bb.Append(v.Bool())
		case *array.Int8Builder:
			bb.Append(int8(v.Int64()))
		case *array.Int16Builder:
			bb.Append(int16(v.Int64()))
		case *array.Int32Builder:
			bb.Append(int32(v.Int64()))
		case *array.Int64Builder:
			bb.Append(v.Int64())
		case *array.Uint8Builder:
			bb.Append(uint8(v.Uint64()))
		case *array.Uint16Builder:
			bb.Append(uint16(v.Uint64()))
		case *array.Uint32Builder:
			bb.Append(uint32(v.Uint64()))
		case *array.Uint64Builder:
			bb.Append(v.Uint64())
		case *array.Float32Builder:
			bb.Append(float32(v.F))
		case *array.Float64Builder:
			bb.Append(v.F)
		case *array.Decimal128Builder:
			bb.Append(decimal128.New(v.I.Hi, v.I.Lo))
		case *array.Date32Builder:
			bb.Append(arrow.Date32(v.Int64()))
		case *array.Time64Builder:
			bb.Append(arrow.Time64(v.Int64()))
		case *array.Time32Builder:
			bb.Append(arrow.Time32(v.Int64()))
		case *array.TimestampBuilder:
			bb.Append(arrow.Timestamp(v.Int64()))
		case *array.StringBuilder:
			bb.Append(string(v.B))
		case *array.BinaryBuilder:
			bb.Append(v.B)
		case *extensions.UUIDBuilder:
			var u [16]byte
			copy(u[:], v.B)
			bb.AppendBytes(u)
		default:
			return nil, fmt.Errorf("pqwrite: no builder for %s", c.Type)
		}
	}
	return b.NewArray(), nil
}
