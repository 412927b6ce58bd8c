package maintain

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

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
