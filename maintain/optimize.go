package maintain

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/internal/curve"
)

// OptimizeOptions steer a rewrite.
type OptimizeOptions struct {
	// SortBy names top-level columns; rows are written in that order, or,
	// with Curve, along a space-filling curve through all of them. Empty:
	// the table's declared sort key (catalog.Table.SortedBy) and its
	// curve, and an error when it declares none.
	SortBy []string
	// Curve, when set, orders rows by their position along a Z-order or
	// Hilbert curve over the SortBy columns' ranks, so that every new file
	// covers a narrow box of each column instead of a narrow range of the
	// first only. With SortBy empty it replaces the declared key's curve.
	Curve curve.Kind
	// RowsPerFile sizes the new files. 0, with TargetFileSize 0 too: the
	// table's write options (catalog.Table.WriteOptions: target_file_size,
	// else target_file_rows), else 1,000,000 rows.
	RowsPerFile int64
	// TargetFileSize, when positive, sizes the new files in bytes instead:
	// rows per file follow the bytes per row of the input, then of the
	// files already written.
	TargetFileSize int64
	// Dir receives the new files; it must not exist yet. Default: a new
	// directory under the catalog's rewrite root (Catalog.RewriteRoot),
	// named by the table's id and the snapshot, never by its name.
	Dir string
}

// The curves OptimizeOptions.Curve takes.
const (
	ZOrder  = curve.ZOrder
	Hilbert = curve.Hilbert
)

// ErrNothingToOptimize reports a table without live files.
var ErrNothingToOptimize = errors.New("the table has no files to rewrite")

// ErrNoSortKey reports an optimize given no sort columns of a table that
// declares no sort key.
var ErrNoSortKey = errors.New("no sort column given and the table declares no sort key")

// Optimize rewrites a table's live files sorted by columns, so that each
// new file covers a narrow range of them, and swaps them in for the old
// files in one snapshot. The old files stay on disk and readable by time
// travel. When the commit fails (another writer retired one of the files
// meanwhile), the new files are deleted and the catalog is unchanged.
func Optimize(ctx context.Context, e *engine.Engine, table string, o OptimizeOptions) (res *RewriteResult, err error) {
	if o.Curve != "" {
		if _, err := curve.Parse(string(o.Curve)); err != nil {
			return nil, fmt.Errorf("optimize: %w", err)
		}
	}
	st, err := openTable(e.Catalog(), catalog.Latest, table)
	if err != nil {
		return nil, err
	}
	defer st.r.Close()
	t := st.t
	top := catalog.TopLevel(st.cols)
	var order []string
	kind := o.Curve
	if len(o.SortBy) > 0 {
		for _, s := range o.SortBy {
			i := slices.IndexFunc(top, func(c catalog.Column) bool { return strings.EqualFold(c.Name, strings.TrimSpace(s)) })
			if i < 0 {
				return nil, fmt.Errorf("%w: %q in table %q", catalog.ErrNoSuchColumn, s, t.Name)
			}
			order = append(order, slot(i))
		}
	} else {
		k := t.SortedBy
		if k == nil {
			return nil, fmt.Errorf("optimize %s: %w (give --sort-by, or declare one: rocklake table alter %s set sorted by COL, ...)", t.Name, ErrNoSortKey, t.Name)
		}
		for _, id := range k.Columns {
			i := slices.IndexFunc(top, func(c catalog.Column) bool { return c.ID == id })
			if i < 0 {
				return nil, fmt.Errorf("table %q: its sort key names column %d, which the table lacks", t.Name, id)
			}
			order = append(order, slot(i))
		}
		if kind == "" {
			kind = curve.Kind(k.Curve)
		}
	}
	if kind != "" && len(order) > curve.MaxDims {
		return nil, fmt.Errorf("optimize: a curve takes at most %d columns, got %d", curve.MaxDims, len(order))
	}
	z := sizing{rows: o.RowsPerFile, bytes: o.TargetFileSize}
	if z.rows <= 0 && z.bytes <= 0 {
		z = sizing{rows: t.WriteOptions.TargetFileRows, bytes: t.WriteOptions.TargetFileBytes}
	}
	if len(st.files) == 0 {
		return nil, fmt.Errorf("%s: %w", t.Name, ErrNothingToOptimize)
	}
	return rewrite(ctx, e, st, st.files, rewriteSpec{order: order, curve: kind,
		sizing: z, dir: o.Dir, what: "optimize"})
}

// curveKey is the column curveSQL adds; src's columns are slots, so it
// meets none of them.
const curveKey = "curve"

// curveSQL wraps src so that every row gains its position along the curve
// through the order columns. Each column is first mapped to its rank,
// scaled to curve.Bits buckets: ranks, not values, so that skewed or
// non-numeric columns (strings, timestamps) spread evenly over the curve,
// and equal values share a bucket. NULLs rank last.
func curveSQL(ctx context.Context, e *engine.Engine, kind curve.Kind, order []string, src string) (string, error) {
	fn := "rocklake_curve_" + string(kind)
	if err := e.RegisterScalarUDF(ctx, fn, curveUDF{kind}); err != nil {
		return "", err
	}
	bits := curve.Bits(len(order))
	var ranks, args, drop []string
	for i, c := range order {
		k := fmt.Sprintf("k%d", i)
		ranks = append(ranks, fmt.Sprintf("((rank() OVER (ORDER BY %s NULLS LAST) - 1) * %d // count(*) OVER ())::UBIGINT AS %s",
			c, int64(1)<<bits, k))
		args, drop = append(args, k), append(drop, k)
	}
	return fmt.Sprintf("SELECT * EXCLUDE (%s), %s(%d::UTINYINT, %s) AS %s FROM (SELECT *, %s FROM (%s))",
		strings.Join(drop, ", "), fn, bits, strings.Join(args, ", "), curveKey, strings.Join(ranks, ", "), src), nil
}

// curveUDF is the DuckDB scalar function (bits UTINYINT, bucket UBIGINT...)
// → position UBIGINT.
type curveUDF struct{ kind curve.Kind }

func (f curveUDF) Config() duckdb.ScalarFuncConfig {
	u8, _ := duckdb.NewTypeInfo(duckdb.TYPE_UTINYINT)
	u64, _ := duckdb.NewTypeInfo(duckdb.TYPE_UBIGINT)
	return duckdb.ScalarFuncConfig{InputTypeInfos: []duckdb.TypeInfo{u8}, VariadicTypeInfo: u64, ResultTypeInfo: u64}
}

func (f curveUDF) Executor() duckdb.ScalarFuncExecutor {
	return duckdb.ScalarFuncExecutor{RowExecutor: func(values []driver.Value) (any, error) {
		bits, ok := values[0].(uint8)
		if !ok || len(values)-1 > curve.MaxDims {
			return nil, fmt.Errorf("curve: bad arguments %v", values)
		}
		var buf [curve.MaxDims]uint32
		x := buf[:len(values)-1]
		for i, v := range values[1:] {
			u, ok := v.(uint64)
			if !ok {
				return nil, fmt.Errorf("curve: bucket %v is %T, want uint64", v, v)
			}
			x[i] = uint32(u)
		}
		return f.kind.Index(x, int(bits)), nil
	}}
}
