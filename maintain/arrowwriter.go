package maintain

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/types"
)

// arrowWriter writes rewritten files with arrow-go rather than DuckDB's
// COPY: DuckDB writes no page index, and bloom filters only for
// dictionary-encoded chunks. Rows come out of DuckDB in its text form and
// are parsed back with the column's codec (exact for every type with one:
// the types cross-check against DuckDB tests that round trip).
type arrowWriter struct {
	cols   []catalog.Column
	slots  []int // each column's top-level position: its slot
	codecs []*types.Codec
	opts   pqwrite.Options
}

// Rewritten files: row groups of DuckDB's default size, 64 KiB pages with
// a page index (so a sorted column prunes within row groups), dictionary
// encoding where it pays, and bloom filters for the columns that have
// membership filters (random ids).
const (
	rewriteRowGroupRows = 122_880
	rewritePageBytes    = 64 << 10
)

// newArrowWriter returns nil when a column has a type arrow-go cannot be
// given here (nested, INTERVAL, ...): DuckDB's COPY writes those tables.
func newArrowWriter(st *tableState, hive *hiveLayout) (*arrowWriter, error) {
	w := &arrowWriter{opts: pqwrite.Options{RowGroupRows: rewriteRowGroupRows, PageBytes: rewritePageBytes,
		PageIndex: true, Dictionary: true, Zstd: true}}
	for i, c := range st.cols {
		if c.Parent.Known {
			return nil, nil
		}
		if !hive.held(i) {
			continue // its values are the file's directories'
		}
		w.slots = append(w.slots, i)
		codec, ok := types.CodecFor(c.Type)
		if !ok || !pqwrite.Supported(c.Type) {
			return nil, nil
		}
		w.cols, w.codecs = append(w.cols, c), append(w.codecs, codec)
		has, err := st.r.HasFilters(st.t.ID, c.ID)
		if err != nil {
			return nil, err
		}
		// DuckDB 1.5.6 probes a BLOB column's bloom filter with the hash of
		// the constant's escaped text, dropping matching rows: a reader
		// outside rocklake (DuckLake, DuckDB itself) must find none.
		if has && c.Type.Kind != types.KindBlob {
			w.opts.BloomColumns = append(w.opts.BloomColumns, c.Name)
		}
	}
	return w, nil
}

// read reads the rows "SELECT cols <from>" as columns for pqwrite; from
// holds the table's columns by slot (w.cols are every top-level column).
// Floats come from DuckDB as the driver's float32 and float64, bits
// intact, into arrow arrays (the caller releases them with release);
// DuckDB's text of a float has no NaN sign or payload. Every other type
// comes as text, parsed back with the column's codec.
func (w *arrowWriter) read(ctx context.Context, conn *sql.Conn, from string, rows int64) ([]pqwrite.Column, error) {
	sel := make([]string, len(w.cols))
	out := make([]pqwrite.Column, len(w.cols))
	f32 := make([]*array.Float32Builder, len(w.cols))
	f64 := make([]*array.Float64Builder, len(w.cols))
	defer func() {
		for i := range w.cols {
			if f32[i] != nil {
				f32[i].Release()
			}
			if f64[i] != nil {
				f64[i].Release()
			}
		}
	}()
	for i, c := range w.cols {
		out[i] = pqwrite.Column{Name: c.Name, Type: c.Type}
		switch c.Type.Kind {
		case types.KindFloat:
			sel[i] = slot(w.slots[i])
			f32[i] = array.NewFloat32Builder(memory.DefaultAllocator)
			f32[i].Reserve(int(rows))
		case types.KindDouble:
			sel[i] = slot(w.slots[i])
			f64[i] = array.NewFloat64Builder(memory.DefaultAllocator)
			f64[i].Reserve(int(rows))
		default:
			sel[i] = slot(w.slots[i]) + "::VARCHAR"
			out[i].Values = make([]*types.Value, 0, rows)
		}
	}
	rs, err := conn.QueryContext(ctx, "SELECT "+strings.Join(sel, ", ")+" "+from)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	vals := make([]any, len(w.cols))
	ptrs := make([]any, len(w.cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rs.Next() {
		if err := rs.Scan(ptrs...); err != nil {
			return nil, err
		}
		for i, v := range vals {
			switch {
			case f32[i] != nil:
				switch x := v.(type) {
				case nil:
					f32[i].AppendNull()
				case float32:
					f32[i].Append(x)
				default:
					return nil, fmt.Errorf("column %s: DuckDB gave a %T for a FLOAT", w.cols[i].Name, v)
				}
			case f64[i] != nil:
				switch x := v.(type) {
				case nil:
					f64[i].AppendNull()
				case float64:
					f64[i].Append(x)
				default:
					return nil, fmt.Errorf("column %s: DuckDB gave a %T for a DOUBLE", w.cols[i].Name, v)
				}
			case v == nil:
				out[i].Values = append(out[i].Values, nil)
			default:
				text, ok := v.(string)
				if !ok {
					return nil, fmt.Errorf("column %s: DuckDB gave a %T for text", w.cols[i].Name, v)
				}
				x, err := parseText(w.codecs[i], w.cols[i].Type.Kind, text)
				if err != nil {
					return nil, fmt.Errorf("column %s: DuckDB's text %q does not parse back: %w", w.cols[i].Name, text, err)
				}
				out[i].Values = append(out[i].Values, &x)
			}
		}
	}
	if err := rs.Err(); err != nil {
		return nil, err
	}
	for i := range out {
		switch {
		case f32[i] != nil:
			out[i].Array = f32[i].NewArray()
		case f64[i] != nil:
			out[i].Array = f64[i].NewArray()
		}
	}
	return out, nil
}

// viaParquet reports whether every column has a type whose Parquet form,
// as DuckDB's COPY writes it, arrow-go reads back as the array Write
// takes for it, value for value (floats bit for bit). Those columns come
// out of DuckDB through a file (readFile): its writer and arrow-go's
// reader move whole columns, where the driver hands over one value at a
// time, as text. Others come as text (read): a HUGEINT DuckDB writes as a
// DOUBLE, a TIMESTAMP_S as milliseconds.
func (w *arrowWriter) viaParquet() bool {
	for _, c := range w.cols {
		switch c.Type.Kind {
		case types.KindBoolean, types.KindTinyInt, types.KindSmallInt, types.KindInteger, types.KindBigInt,
			types.KindUTinyInt, types.KindUSmallInt, types.KindUInteger, types.KindUBigInt,
			types.KindFloat, types.KindDouble, types.KindDecimal, types.KindDate, types.KindTime,
			types.KindTimestamp, types.KindTimestampTZ, types.KindVarchar, types.KindBlob, types.KindUUID:
		default:
			return false
		}
	}
	return true
}

// readFile reads the rows "SELECT cols <from>" as columns for pqwrite
// through a Parquet file DuckDB writes at stage (removed before it
// returns), in one row group where DuckDB keeps to it. The rewrite's check
// compares the rows written with the rows read, every bit, whichever way
// they came.
func (w *arrowWriter) readFile(ctx context.Context, conn *sql.Conn, from, stage string) (_ []pqwrite.Column, err error) {
	sel := make([]string, len(w.cols))
	for i := range w.cols {
		sel[i] = slot(w.slots[i])
	}
	defer os.Remove(stage)
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("COPY (SELECT %s %s) TO '%s' (%s, ROW_GROUP_SIZE 100000000)",
		strings.Join(sel, ", "), from, strings.ReplaceAll(stage, "'", "''"), stageCopyOptions)); err != nil {
		return nil, err
	}
	fr, done, err := openStage(stage)
	if err != nil {
		return nil, err
	}
	defer done()
	tbl, err := fr.ReadTable(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the rows DuckDB wrote: %w", err)
	}
	defer tbl.Release()
	if int(tbl.NumCols()) != len(w.cols) {
		return nil, fmt.Errorf("reading the rows DuckDB wrote: %d columns, want %d", tbl.NumCols(), len(w.cols))
	}
	arrays := make([]arrow.Array, len(w.cols))
	for i, c := range w.cols {
		chunks := tbl.Column(i).Data().Chunks()
		for _, ch := range chunks {
			ch.Retain() // joined takes them over; the table keeps its own
		}
		if len(chunks) == 0 {
			err = fmt.Errorf("column %s: DuckDB wrote no values", c.Name)
		} else {
			arrays[i], err = joined(chunks)
		}
		if err != nil {
			releaseAll([][]arrow.Array{arrays[:i]})
			return nil, err
		}
	}
	return w.columns(arrays)
}

// openStage opens a staging file DuckDB wrote for arrow-go to read; done
// closes it.
func openStage(stage string) (_ *pqarrow.FileReader, done func(), _ error) {
	pf, err := file.OpenParquetFile(stage, false)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the rows DuckDB wrote: %w", err)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{Parallel: true, BatchSize: 1 << 16}, memory.DefaultAllocator)
	if err != nil {
		pf.Close()
		return nil, nil, fmt.Errorf("reading the rows DuckDB wrote: %w", err)
	}
	return fr, func() { pf.Close() }, nil
}

// joined is parts (at least one) as one array; it takes parts over.
func joined(parts []arrow.Array) (arrow.Array, error) {
	if len(parts) == 1 {
		return parts[0], nil
	}
	a, err := array.Concatenate(parts, memory.DefaultAllocator)
	releaseAll([][]arrow.Array{parts})
	return a, err
}

// stageCopyOptions are those of the COPYs whose Parquet arrow-go reads
// back (readFile, writeStream): uncompressed, without dictionaries
// (DuckDB's dictionary keys floats by value, so -0.0 would come back
// +0.0), without bloom filters.
const stageCopyOptions = "FORMAT parquet, COMPRESSION uncompressed, DICTIONARY_SIZE_LIMIT 0, WRITE_BLOOM_FILTER false"

// columns are w.cols holding arrays, arrow-go's reading of DuckDB's
// Parquet of them (which columns takes over, released on error): each of
// the array type pqwrite takes for the column, or an error saying which
// is not.
func (w *arrowWriter) columns(arrays []arrow.Array) (_ []pqwrite.Column, err error) {
	out := make([]pqwrite.Column, len(w.cols))
	for i, c := range w.cols {
		out[i] = pqwrite.Column{Name: c.Name, Type: c.Type, Array: arrays[i]}
	}
	defer func() {
		if err != nil {
			release(out)
		}
	}()
	for i, c := range w.cols {
		want, err := pqwrite.ArrowType(c.Type)
		if err != nil {
			return nil, err
		}
		arr := out[i].Array
		if fsb, ok := arr.DataType().(*arrow.FixedSizeBinaryType); ok && fsb.ByteWidth == 16 && c.Type.Kind == types.KindUUID {
			// arrow-go reads a UUID as its extension type only where the
			// extension is registered.
			out[i].Array = array.NewExtensionArrayWithStorage(extensions.NewUUIDType(), arr)
			arr.Release()
		}
		if got := out[i].Array.DataType(); !arrow.TypeEqual(got, want) {
			return nil, fmt.Errorf("column %s (%s): DuckDB's Parquet reads back as %s, not %s", c.Name, c.Type, got, want)
		}
	}
	return out, nil
}

// release frees the arrow arrays of columns read.
func release(cols []pqwrite.Column) {
	for _, c := range cols {
		if c.Array != nil {
			c.Array.Release()
		}
	}
}

// parseText reads DuckDB's text of a value. Integers and strings
// take the standard library's exact parsers (DuckDB prints them in forms
// strconv reads to the same value; the rewrite tests compare every value);
// everything else the codec's CAST parser. (Floats do not come as text.)
func parseText(codec *types.Codec, k types.Kind, s string) (types.Value, error) {
	switch k {
	case types.KindTinyInt, types.KindSmallInt, types.KindInteger, types.KindBigInt:
		if x, err := strconv.ParseInt(s, 10, 64); err == nil {
			return types.IntValue(x), nil
		}
	case types.KindUTinyInt, types.KindUSmallInt, types.KindUInteger, types.KindUBigInt:
		if x, err := strconv.ParseUint(s, 10, 64); err == nil {
			return types.UintValue(x), nil
		}
	case types.KindVarchar:
		return types.StringValue(s), nil
	case types.KindDecimal:
		// DuckDB prints exactly scale fractional digits: the digits are
		// the unscaled value.
		if t := codec.Type(); t.Precision <= 18 {
			whole, frac, _ := strings.Cut(s, ".")
			if len(frac) == int(t.Scale) {
				if x, err := strconv.ParseInt(whole+frac, 10, 64); err == nil && !strings.ContainsAny(whole+frac, "+_") {
					return types.IntValue(x), nil
				}
			}
		}
	}
	return codec.Parse(s)
}
