package engine

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/duckdb/duckdb-go/v2"

	"rocklake/catalog"
	"rocklake/ingest"
	"rocklake/internal/curve"
	"rocklake/internal/pqwrite"
	"rocklake/types"
)

// OptimizeOptions steer a rewrite.
type OptimizeOptions struct {
	// SortBy names top-level columns; rows are written in that order, or,
	// with Curve, along a space-filling curve through all of them.
	SortBy []string
	// Curve, when set, orders rows by their position along a Z-order or
	// Hilbert curve over the SortBy columns' ranks, so that every new file
	// covers a narrow box of each column instead of a narrow range of the
	// first only.
	Curve curve.Kind
	// RowsPerFile sizes the new files (default 1,000,000 rows).
	RowsPerFile int64
	// TargetFileSize, when positive, sizes the new files in bytes instead:
	// rows per file follow the bytes per row of the input, then of the
	// files already written.
	TargetFileSize int64
	// Dir receives the new files; it must not exist yet. Default: beside the
	// table's first live file, named after the table and the snapshot.
	Dir string
}

// The curves OptimizeOptions.Curve takes.
const (
	ZOrder  = curve.ZOrder
	Hilbert = curve.Hilbert
)

// OptimizeResult says what a rewrite did.
type OptimizeResult struct {
	Snapshot    catalog.Snapshot
	FilesBefore int
	FilesAfter  int
	Rows        int64
	Dir         string
	// BytesBefore and BytesAfter total the old and the new files' sizes.
	BytesBefore, BytesAfter int64
}

// ErrNothingToOptimize reports a table without live files.
var ErrNothingToOptimize = errors.New("the table has no files to rewrite")

// Optimize rewrites a table's live files sorted by columns, so that each
// new file covers a narrow range of them, and swaps them in for the old
// files in one snapshot. The old files stay on disk and readable by time
// travel. When the commit fails (another writer retired one of the files
// meanwhile), the new files are deleted and the catalog is unchanged.
func (e *Engine) Optimize(ctx context.Context, table string, o OptimizeOptions) (res *OptimizeResult, err error) {
	if len(o.SortBy) == 0 {
		return nil, errors.New("optimize: no sort column given")
	}
	if o.Curve != "" {
		if _, err := curve.Parse(string(o.Curve)); err != nil {
			return nil, fmt.Errorf("optimize: %w", err)
		}
		if len(o.SortBy) > curve.MaxDims {
			return nil, fmt.Errorf("optimize: a curve takes at most %d columns, got %d", curve.MaxDims, len(o.SortBy))
		}
	}
	st, err := e.openTable(catalog.Latest, table)
	if err != nil {
		return nil, err
	}
	defer st.r.Close()
	t := st.t
	var order []string
	for _, s := range o.SortBy {
		found := false
		for i, c := range topLevel(st.cols) {
			if strings.EqualFold(c.Name, strings.TrimSpace(s)) {
				order, found = append(order, slot(i)), true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("%w: %q in table %q", catalog.ErrNoSuchColumn, s, t.Name)
		}
	}
	if len(st.files) == 0 {
		return nil, fmt.Errorf("%s: %w", t.Name, ErrNothingToOptimize)
	}
	return e.rewrite(ctx, st, st.files, rewriteSpec{order: order, curve: o.Curve,
		sizing: sizing{rows: o.RowsPerFile, bytes: o.TargetFileSize}, dir: o.Dir, what: "optimize"})
}

// rewriteDir matches the default names of rewrite directories.
var rewriteDir = regexp.MustCompile(`-(optimize|compact)-[0-9]+$`)

// sizing says how large the new files are: bytes when positive, else rows
// (default 1,000,000).
type sizing struct{ rows, bytes int64 }

// next is the row count of the next file, given the rows left, the bytes
// per row measured so far (input files, then output files).
func (z sizing) next(left int64, bytesPerRow float64) int64 {
	if z.bytes <= 0 {
		if z.rows <= 0 {
			return min(left, 1_000_000)
		}
		return min(left, z.rows)
	}
	n := int64(1)
	if bytesPerRow > 0 {
		n = max(1, int64(float64(z.bytes)/bytesPerRow))
	}
	// A tail under half a file joins this one rather than making a small
	// file of its own: every file then lies within half a target of it.
	if left-n < n/2 {
		return left
	}
	return n
}

// Inside a rewrite the table's top-level columns go by their positions,
// c0, c1, ... (slot), never by their names: DuckDB resolves a name against
// the user's columns before its own (a column named rowid hides the row
// id), so a name the rewrite adds (rn, curve, k0, ...) must be one no
// column can have. The names come back only when the files are written.

// slot is the name of the i-th top-level column inside a rewrite.
func slot(i int) string { return "c" + strconv.Itoa(i) }

// topLevel returns the table's top-level columns, in order.
func topLevel(cols []catalog.Column) []catalog.Column {
	var out []catalog.Column
	for _, c := range cols {
		if !c.Parent.Known {
			out = append(out, c)
		}
	}
	return out
}

// slotSQL reads files as the table's columns renamed to their slots, by
// position, so that no name is resolved.
func slotSQL(t catalog.Table, cols []catalog.Column, files []string) string {
	top := topLevel(cols)
	slots := make([]string, len(top))
	for i := range top {
		slots[i] = slot(i)
	}
	return fmt.Sprintf("SELECT * FROM (%s) AS src(%s)", viewSQL(t, cols, files, "", true), strings.Join(slots, ", "))
}

// digestSQL returns one row over the slot columns of from: the row count,
// for each column the sum of DuckDB's hash of every value (NULLs
// included), and the sum of the hashes of whole rows. Row order does not
// change it; a value lost, added or altered does, and so does a value
// moved to another row (but for a hash collision).
func digestSQL(from string, n int) string {
	parts := []string{"count(*)::VARCHAR"}
	slots := make([]string, n)
	for i := range n {
		slots[i] = slot(i)
		parts = append(parts, fmt.Sprintf("coalesce(sum(hash(%s))::VARCHAR, '')", slot(i)))
	}
	parts = append(parts, fmt.Sprintf("coalesce(sum(hash(%s))::VARCHAR, '')", strings.Join(slots, ", ")))
	return "SELECT " + strings.Join(parts, ", ") + " FROM " + from
}

func digest(ctx context.Context, conn *sql.Conn, from string, n int) ([]string, error) {
	out := make([]string, n+2)
	ptrs := make([]any, n+2)
	for i := range out {
		ptrs[i] = &out[i]
	}
	if err := conn.QueryRowContext(ctx, digestSQL(from, n)).Scan(ptrs...); err != nil {
		return nil, err
	}
	return out, nil
}

// afterWrite, when set (by tests), sees the written files before they are
// checked: it can damage them as a faulty writer would.
var afterWrite func(written []string)

// ErrRewriteMismatch reports written files whose content differs from the
// rows read; nothing was committed.
var ErrRewriteMismatch = errors.New("the written files do not hold the rows read")

// checkRewrite compares what a rewrite read (the slot columns of tmp) with
// what it wrote (the new files, read back as the table reads them): row
// count and every column's content digest.
func checkRewrite(ctx context.Context, conn *sql.Conn, st *tableState, tmp string, written []string) error {
	top := topLevel(st.cols)
	read, err := digest(ctx, conn, tmp, len(top))
	if err != nil {
		return fmt.Errorf("digest of the rows read: %w", err)
	}
	wrote, err := digest(ctx, conn, "("+slotSQL(st.t, st.cols, written)+")", len(top))
	if err != nil {
		return fmt.Errorf("digest of the files written: %w", err)
	}
	if read[0] != wrote[0] {
		return fmt.Errorf("%w: read %s rows, the files hold %s", ErrRewriteMismatch, read[0], wrote[0])
	}
	for i, c := range top {
		if read[i+1] != wrote[i+1] {
			return fmt.Errorf("%w: column %s holds other values than were read (hash sum %s, read %s)",
				ErrRewriteMismatch, quoteIdent(c.Name), wrote[i+1], read[i+1])
		}
	}
	if n := len(top) + 1; read[n] != wrote[n] {
		return fmt.Errorf("%w: every column holds the values read, but the rows pair them differently", ErrRewriteMismatch)
	}
	return nil
}

type rewriteSpec struct {
	order  []string // slots of the sort columns; empty keeps the present order
	curve  curve.Kind
	sizing sizing
	dir    string
	what   string
}

// rewrite writes the rows of files (in sp's order, or in their present
// order) to new files in sp.dir and swaps them in for files in one
// snapshot.
func (e *Engine) rewrite(ctx context.Context, st *tableState, files []catalog.DataFile, sp rewriteSpec) (res *OptimizeResult, err error) {
	t, cols := st.t, st.cols
	what, dir := sp.what, sp.dir
	paths := make([]string, len(files))
	ids := make([]int64, len(files))
	var inputBytes int64
	for i, f := range files {
		paths[i], ids[i] = f.Location(t), f.ID
		inputBytes += f.FileSizeBytes
	}
	if dir == "" {
		// Beside the first file, or beside the directory of an earlier
		// rewrite, so that rewrites do not nest ever deeper.
		base := filepath.Dir(paths[0])
		if rewriteDir.MatchString(filepath.Base(base)) {
			base = filepath.Dir(base)
		}
		dir = filepath.Join(base, fmt.Sprintf("%s-%s-%d", t.Name, what, st.r.Snapshot().ID))
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%s: output directory: %w", what, err)
	}
	committed := false
	defer func() {
		if !committed {
			os.RemoveAll(dir) // nothing refers to the new files
		}
	}()

	conn, err := e.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	// One pass into a temporary table, numbered, then one COPY per output
	// file: file boundaries fall at exact row counts and every file holds a
	// contiguous run of the order. Without a sort the numbering is the
	// table's rowid, which follows insertion order: DuckDB keeps the scan's
	// order (preserve_insertion_order, on by default) so rows stay in their
	// files' order and whatever clustering they had survives.
	//
	// The temporary table holds the slot columns (and rn, curve), none
	// named by the user, so its rowid is DuckDB's row id.
	const tmp = "__rocklake_rewrite"
	src := slotSQL(t, cols, paths)
	fill := fmt.Sprintf("CREATE OR REPLACE TEMP TABLE %s AS %s", tmp, src)
	rn := "rowid + 1"
	if len(sp.order) > 0 {
		key := strings.Join(sp.order, ", ")
		if sp.curve != "" {
			if src, err = e.curveSQL(conn, sp.curve, sp.order, src); err != nil {
				return nil, fmt.Errorf("%s: %w", what, err)
			}
			key = curveKey + ", " + key
		}
		fill = fmt.Sprintf("CREATE OR REPLACE TEMP TABLE %s AS SELECT *, row_number() OVER (ORDER BY %s) AS rn FROM (%s)",
			tmp, key, src)
		rn = "rn"
	}
	// The files get the table's names back, by position.
	top := topLevel(cols)
	named := make([]string, len(top))
	for i, c := range top {
		named[i] = slot(i) + " AS " + quoteIdent(c.Name)
	}
	sel := strings.Join(named, ", ")
	if _, err := conn.ExecContext(ctx, fill); err != nil {
		return nil, fmt.Errorf("%s: reading the files: %w", what, err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS "+tmp)
	var rows int64
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM "+tmp).Scan(&rows); err != nil {
		return nil, err
	}
	if rows == 0 {
		// Files without rows: nothing to write, only retire them.
		tx, err := e.cat.Begin()
		if err != nil {
			return nil, err
		}
		tx.RemoveFiles(t.Name, ids...)
		snap, err := tx.Commit()
		if err != nil {
			return nil, fmt.Errorf("%s: retiring empty files: %w", what, err)
		}
		return &OptimizeResult{Snapshot: snap, FilesBefore: len(files), BytesBefore: inputBytes}, nil
	}
	w, err := newArrowWriter(st)
	if err != nil {
		return nil, err
	}
	// With arrow-go, file i is encoded in the background while the rows of
	// file i+1 come out of DuckDB (two files in memory at most); sizing
	// then learns from the files finished so far.
	n := 0
	var written []string
	var outRows, outBytes int64
	type inFlight struct {
		path string
		rows int64
		done chan error
	}
	var pending *inFlight
	finish := func() error {
		if pending == nil {
			return nil
		}
		err := <-pending.done
		if err == nil {
			var fi os.FileInfo
			if fi, err = os.Stat(pending.path); err == nil {
				outRows, outBytes = outRows+pending.rows, outBytes+fi.Size()
			}
		}
		if err != nil {
			err = fmt.Errorf("%s: writing %s: %w", what, pending.path, err)
		}
		pending = nil
		return err
	}
	defer finish() // on an early return, let the writer end before the directory goes
	for off := int64(0); off < rows; {
		bpr := float64(inputBytes) / float64(rows)
		if outRows > 0 {
			bpr = float64(outBytes) / float64(outRows)
		}
		step := sp.sizing.next(rows-off, bpr)
		p := filepath.Join(dir, fmt.Sprintf("part-%05d.parquet", n))
		where := fmt.Sprintf("WHERE %s > %d AND %s <= %d ORDER BY %s", rn, off, rn, off+step, rn)
		if w != nil {
			cols, err := w.read(ctx, conn, fmt.Sprintf("FROM %s %s", tmp, where), step)
			if err != nil {
				return nil, fmt.Errorf("%s: reading rows for %s: %w", what, p, err)
			}
			if err := finish(); err != nil {
				return nil, err
			}
			pending = &inFlight{path: p, rows: step, done: make(chan error, 1)}
			go func(done chan error) { done <- pqwrite.Write(p, cols, w.opts) }(pending.done)
		} else {
			_, err := conn.ExecContext(ctx, fmt.Sprintf("COPY (SELECT %s FROM %s %s) TO '%s' (FORMAT parquet)",
				sel, tmp, where, strings.ReplaceAll(p, "'", "''")))
			if err != nil {
				return nil, fmt.Errorf("%s: writing %s: %w", what, p, err)
			}
			pending = &inFlight{path: p, rows: step, done: make(chan error, 1)}
			pending.done <- nil
			if err := finish(); err != nil {
				return nil, err
			}
		}
		written = append(written, p)
		off += step
		n++
	}
	if err := finish(); err != nil {
		return nil, err
	}
	if afterWrite != nil {
		afterWrite(written)
	}
	// Nothing is committed unless the files hold exactly the rows read.
	if err := checkRewrite(ctx, conn, st, tmp, written); err != nil {
		return nil, fmt.Errorf("%s: %w; nothing committed, the new files removed", what, err)
	}
	// The new files are rocklake's own: cleanup may delete them, and the
	// directory made for them, once no kept snapshot reads them.
	release := e.cat.ClaimOwnership(catalog.OwnerRocklake, written...)
	added, err := ingest.Add(e.cat, t.Name, []string{dir}, ingest.Options{Replace: ids})
	release()
	if err != nil {
		return nil, fmt.Errorf("%s: registering the rewritten files: %w", what, err)
	}
	committed = true
	if added.Rows != rows {
		// Cannot happen unless the writer's footers lie; the snapshot is
		// made, so say so loudly (the previous snapshot still reads the
		// old files).
		return nil, fmt.Errorf("%s: wrote %d rows but registered %d at snapshot %d", what, rows, added.Rows, added.Snapshot.ID)
	}
	return &OptimizeResult{Snapshot: added.Snapshot, FilesBefore: len(files), FilesAfter: n, Rows: rows, Dir: dir,
		BytesBefore: inputBytes, BytesAfter: outBytes}, nil
}

// arrowWriter writes rewritten files with arrow-go rather than DuckDB's
// COPY: DuckDB writes no page index, and bloom filters only for
// dictionary-encoded chunks. Rows come out of DuckDB in its text form and
// are parsed back with the column's codec (exact for every type with one:
// the types cross-check against DuckDB tests that round trip).
type arrowWriter struct {
	cols   []catalog.Column
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
func newArrowWriter(st *tableState) (*arrowWriter, error) {
	w := &arrowWriter{opts: pqwrite.Options{RowGroupRows: rewriteRowGroupRows, PageBytes: rewritePageBytes,
		PageIndex: true, Dictionary: true}}
	for _, c := range st.cols {
		if c.Parent.Known {
			return nil, nil
		}
		codec, ok := types.CodecFor(c.Type)
		if !ok || !pqwrite.Supported(c.Type) {
			return nil, nil
		}
		w.cols, w.codecs = append(w.cols, c), append(w.codecs, codec)
		has, err := st.r.HasFilters(st.t.ID, c.ID)
		if err != nil {
			return nil, err
		}
		if has {
			w.opts.BloomColumns = append(w.opts.BloomColumns, c.Name)
		}
	}
	return w, nil
}

// read reads the rows "SELECT cols <from>" as columns for pqwrite; from
// holds the table's columns by slot (w.cols are every top-level column).
func (w *arrowWriter) read(ctx context.Context, conn *sql.Conn, from string, rows int64) ([]pqwrite.Column, error) {
	sel := make([]string, len(w.cols))
	out := make([]pqwrite.Column, len(w.cols))
	for i, c := range w.cols {
		sel[i] = slot(i) + "::VARCHAR"
		out[i] = pqwrite.Column{Name: c.Name, Type: c.Type, Values: make([]*types.Value, 0, rows)}
	}
	rs, err := conn.QueryContext(ctx, "SELECT "+strings.Join(sel, ", ")+" "+from)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	texts := make([]sql.NullString, len(w.cols))
	ptrs := make([]any, len(w.cols))
	for i := range texts {
		ptrs[i] = &texts[i]
	}
	for rs.Next() {
		if err := rs.Scan(ptrs...); err != nil {
			return nil, err
		}
		for i, t := range texts {
			if !t.Valid {
				out[i].Values = append(out[i].Values, nil)
				continue
			}
			v, err := parseText(w.codecs[i], w.cols[i].Type.Kind, t.String)
			if err != nil {
				return nil, fmt.Errorf("column %s: DuckDB's text %q does not parse back: %w", w.cols[i].Name, t.String, err)
			}
			out[i].Values = append(out[i].Values, &v)
		}
	}
	return out, rs.Err()
}

// parseText reads DuckDB's text of a value. Integers, floats and strings
// take the standard library's exact parsers (DuckDB prints them in forms
// strconv reads to the same value; the rewrite tests compare every value);
// everything else, and special floats, the codec's CAST parser.
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
	case types.KindDouble, types.KindFloat:
		bits := 64
		if k == types.KindFloat {
			bits = 32
		}
		// strconv also reads "inf", "nan" and hex floats: leave every
		// non-decimal spelling to the codec.
		if s != "" && strings.Trim(s, "0123456789.-+e") == "" {
			if f, err := strconv.ParseFloat(s, bits); err == nil {
				return types.FloatValue(f), nil
			}
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

// curveKey is the column curveSQL adds; src's columns are slots, so it
// meets none of them.
const curveKey = "curve"

// curveSQL wraps src so that every row gains its position along the curve
// through the order columns. Each column is first mapped to its rank,
// scaled to curve.Bits buckets: ranks, not values, so that skewed or
// non-numeric columns (strings, timestamps) spread evenly over the curve,
// and equal values share a bucket. NULLs rank last.
func (e *Engine) curveSQL(conn *sql.Conn, kind curve.Kind, order []string, src string) (string, error) {
	// A UDF lives in DuckDB's shared catalog: register it once per engine
	// (registering it again, or concurrently, fails).
	fn := "rocklake_curve_" + string(kind)
	v, _ := e.udfs.LoadOrStore(kind, &udfOnce{})
	u := v.(*udfOnce)
	u.once.Do(func() { u.err = duckdb.RegisterScalarUDF(conn, fn, curveUDF{kind}) })
	if u.err != nil {
		return "", fmt.Errorf("registering %s: %w", fn, u.err)
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

type udfOnce struct {
	once sync.Once
	err  error
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

// CompactOptions steer Compact.
type CompactOptions struct {
	// RowsPerFile is the size of the merged files; files with fewer rows
	// are merged (default 1,000,000).
	RowsPerFile int64
	// TargetFileSize, when positive, sizes in bytes instead: files smaller
	// than it are merged into files of about that size.
	TargetFileSize int64
	// Dir receives the merged files; it must not exist yet.
	Dir string
}

// Compact merges a table's small files into larger ones, keeping the rows'
// order, and swaps them in in one snapshot. Fewer than two small files:
// nothing to do, no snapshot, a nil result.
func (e *Engine) Compact(ctx context.Context, table string, o CompactOptions) (*OptimizeResult, error) {
	if o.RowsPerFile <= 0 {
		o.RowsPerFile = 1_000_000
	}
	st, err := e.openTable(catalog.Latest, table)
	if err != nil {
		return nil, err
	}
	defer st.r.Close()
	var small []catalog.DataFile
	for _, f := range st.files {
		if o.TargetFileSize > 0 && f.FileSizeBytes < o.TargetFileSize || o.TargetFileSize <= 0 && f.RecordCount < o.RowsPerFile {
			small = append(small, f)
		}
	}
	if len(small) < 2 {
		return nil, nil
	}
	return e.rewrite(ctx, st, small, rewriteSpec{sizing: sizing{rows: o.RowsPerFile, bytes: o.TargetFileSize}, dir: o.Dir, what: "compact"})
}

// tableState is a table as a snapshot sees it.
type tableState struct {
	r     *catalog.Reader
	t     catalog.Table
	cols  []catalog.Column
	files []catalog.DataFile
}

// openTable reads a table, its columns and its live files at a snapshot;
// the caller closes st.r.
func (e *Engine) openTable(snapshot int64, table string) (*tableState, error) {
	r, err := e.cat.Read(snapshot)
	if err != nil {
		return nil, err
	}
	st := &tableState{r: r}
	if st.t, err = r.Table(table); err == nil {
		if st.cols, err = r.Columns(st.t.ID); err == nil {
			st.files, err = r.Files(st.t.ID)
		}
	}
	if err != nil {
		r.Close()
		return nil, err
	}
	return st, nil
}
