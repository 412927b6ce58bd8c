package engine

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/duckdb/duckdb-go/v2"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/internal/sqllex"
	"github.com/rocklake/rocklake/pqmeta"
	"github.com/rocklake/rocklake/storage"
	"github.com/rocklake/rocklake/types"
)

// The page path reads a file's kept row ranges with arrow-go: per kept
// row group, each range's first page is found through the offset index
// (page locations and first_row_index) and only the pages from there to
// the range's end are read and decoded, for every column of the table;
// the rows are appended to a temporary table of the query's connection
// (DuckDB's Appender), which the view reads instead of the file. Only
// flat columns of the types below are read so (their values reach DuckDB
// as read_parquet would give them); a file with any other column uses the
// row-range SQL of partial.go.

// pageKind is how one column's values are decoded and stored in the
// temporary table.
type pageKind uint8

const (
	pkInt pageKind = iota + 1 // signed integers, stored as the file's type
	pkUint
	pkFloat32
	pkFloat64
	pkBool
	pkString
	pkDate      // days, stored as INTEGER, read back as DATE
	pkTimestamp // microseconds, stored as BIGINT, read back as TIMESTAMP[TZ]
)

// pageColumn is one table column as the page path reads it.
type pageColumn struct {
	id    int64 // the table column's
	name  string
	leaf  int // the column chunk's index
	kind  pageKind
	store string // the temporary table's column type
	fileT types.Type
	msTS  bool // a TIMESTAMP(MILLIS) column: values × 1000
}

// DeletedPositions reads a delete file's positions (its pos column),
// sorted: the page path applies them, and a change merges them into the
// delete file that replaces it.
func DeletedPositions(path string) (pos []int64, err error) {
	defer func() {
		if r := recover(); r != nil {
			pos, err = nil, fmt.Errorf("arrow-go: %v", r)
		}
	}()
	rdr, err := file.OpenParquetFile(path, false)
	if err != nil {
		return nil, err
	}
	defer rdr.Close()
	col := rdr.MetaData().Schema.ColumnIndexByName("pos")
	if col < 0 {
		return nil, fmt.Errorf("delete file %s has no column pos", path)
	}
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: 65536}, memory.DefaultAllocator)
	if err != nil {
		return nil, err
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		return nil, err
	}
	defer tbl.Release()
	i := tbl.Schema().FieldIndices("pos")
	if len(i) != 1 {
		return nil, fmt.Errorf("delete file %s has no column pos", path)
	}
	for _, chunk := range tbl.Column(i[0]).Data().Chunks() {
		a, ok := chunk.(*array.Int64)
		if !ok {
			return nil, fmt.Errorf("delete file %s: pos is %s, not BIGINT", path, chunk.DataType())
		}
		for j := range a.Len() {
			if a.IsNull(j) {
				return nil, fmt.Errorf("delete file %s holds a NULL position", path)
			}
			pos = append(pos, a.Value(j))
		}
	}
	slices.Sort(pos)
	return pos, nil
}

// pageColumns maps a file's columns (exactly the table's) to the page
// path's, or says why the file cannot be read so.
func pageColumns(f *pqmeta.File, cols []catalog.Column) ([]pageColumn, error) {
	var out []pageColumn
	for _, c := range cols {
		if c.Parent.Known || (c.Partition != "") {
			continue
		}
		var fc *pqmeta.Column
		for _, x := range f.Columns {
			if types.SameIdent(x.Name, c.Name) {
				fc = x
				break
			}
		}
		if fc == nil || len(fc.Leaves) != 1 || fc.Leaves[0].Repeated || fc.Leaves[0].Variant != nil {
			return nil, fmt.Errorf("column %s is not a flat column of the file", c.Name)
		}
		pc := pageColumn{id: c.ID, name: c.Name, leaf: fc.Leaves[0].Index, fileT: fc.Type}
		switch fc.Type.Kind {
		case types.KindTinyInt:
			pc.kind, pc.store = pkInt, "TINYINT"
		case types.KindSmallInt:
			pc.kind, pc.store = pkInt, "SMALLINT"
		case types.KindInteger:
			pc.kind, pc.store = pkInt, "INTEGER"
		case types.KindBigInt:
			pc.kind, pc.store = pkInt, "BIGINT"
		case types.KindUTinyInt:
			pc.kind, pc.store = pkUint, "UTINYINT"
		case types.KindUSmallInt:
			pc.kind, pc.store = pkUint, "USMALLINT"
		case types.KindUInteger:
			pc.kind, pc.store = pkUint, "UINTEGER"
		case types.KindUBigInt:
			pc.kind, pc.store = pkUint, "UBIGINT"
		case types.KindFloat:
			pc.kind, pc.store = pkFloat32, "FLOAT"
		case types.KindDouble:
			pc.kind, pc.store = pkFloat64, "DOUBLE"
		case types.KindBoolean:
			pc.kind, pc.store = pkBool, "BOOLEAN"
		case types.KindVarchar:
			pc.kind, pc.store = pkString, "VARCHAR"
		case types.KindDate:
			pc.kind, pc.store = pkDate, "INTEGER"
		case types.KindTimestamp, types.KindTimestampTZ:
			pc.kind, pc.store = pkTimestamp, "BIGINT"
		default:
			return nil, fmt.Errorf("column %s is %s", c.Name, types.DuckDBName(fc.Type))
		}
		out = append(out, pc)
	}
	return out, nil
}

// pageLoad is the rows of one file's kept ranges, decoded, waiting to be
// appended to their temporary table on the query's connection.
type pageLoad struct {
	table   string
	cols    []pageColumn
	vals    [][]driver.Value // by column, then row
	rows    int              // rows handed over (the row filter's survivors)
	inline  bool             // the rows are a VALUES list in the SQL: nothing to load
	decoded int64            // rows of the predicate's columns decoded
	bytes   int64            // file bytes read while decoding
}

var pageTables atomic.Int64

// countingReader counts the bytes read through it.
type countingReader struct {
	parquet.ReaderAtSeeker
	n atomic.Int64
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.ReaderAtSeeker.ReadAt(p, off)
	c.n.Add(int64(n))
	return n, err
}

// readPages decodes the rows of spans (firsts giving each row group's
// first row) of the given columns. With a row filter, the predicate's
// columns are decoded first, the rows the filter drops are dropped, and
// the other columns are decoded only around the rows left (a seek to each
// run of them, runs closer than seekGap rows read as one). Any error, or a value
// the page path does not hand over (invalid UTF-8, which read_parquet
// refuses; a date or timestamp out of DuckDB's range), sends the file to
// the row-range SQL.
//
// src is the file; pf, when set, is told before each column read which
// byte ranges of src it will need (pageByteRanges), so that an object's
// PartReader fetches them in a few coalesced requests rather than one per
// buffer arrow-go fills.
//
// deleted are the file's deleted positions (its delete file's), sorted:
// those rows are dropped as the row filter's are.
func readPages(ctx context.Context, src parquet.ReaderAtSeeker, pf func([]storage.Range) error, cols []pageColumn, spans []rowSpan, firsts []int64, rf *rowFilter, deleted []int64) (ld *pageLoad, err error) {
	defer func() {
		// arrow-go can panic on files it does not understand.
		if r := recover(); r != nil {
			ld, err = nil, fmt.Errorf("arrow-go: %v", r)
		}
	}()
	cr := &countingReader{ReaderAtSeeker: src}
	mem := memory.DefaultAllocator
	props := parquet.NewReaderProperties(mem)
	// Buffered streams read a column chunk from the page sought, in
	// pieces, instead of loading the whole chunk. Larger pieces read past
	// a range's last page: a point lookup over 80 KB pages read 0.61 MB
	// with 64 KiB pieces, 0.48 MB with 16 KiB ones and with 4 KiB ones.
	props.BufferedStreamEnabled = true
	props.BufferSize = 16 << 10
	rdr, err := file.NewParquetReader(cr, file.WithReadProps(props))
	if err != nil {
		return nil, err
	}
	defer rdr.Close()
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: 8192}, mem)
	if err != nil {
		return nil, err
	}
	readSpans := func(ctx context.Context, fr *pqarrow.FileReader, cols []pageColumn, which []int, g int, in []rowSpan, out [][]driver.Value) error {
		if pf != nil {
			if err := prefetchPages(rdr, pf, cols, which, g, in, int64(props.BufferSize)); err != nil {
				return err
			}
		}
		return readSpans(ctx, fr, cols, which, g, in, out)
	}
	first := make([]int, 0, len(cols)) // columns decoded over the spans
	var rest []int                     // columns decoded around the rows kept
	if rf == nil {
		for i := range cols {
			first = append(first, i)
		}
	} else {
		inPred := map[int]bool{}
		for _, k := range rf.preds {
			inPred[k] = true
		}
		for i := range cols {
			if inPred[i] {
				first = append(first, i)
			} else {
				rest = append(rest, i)
			}
		}
	}
	ld = &pageLoad{cols: cols, vals: make([][]driver.Value, len(cols))}
	for g := 0; g+1 < len(firsts); g++ {
		var in []rowSpan // within row group g
		var n int64
		for _, s := range spans {
			lo, hi := max(s.lo, firsts[g]), min(s.hi, firsts[g+1])
			if lo < hi {
				in = append(in, rowSpan{lo - firsts[g], hi - firsts[g]})
				n += hi - lo
			}
		}
		if len(in) == 0 {
			continue
		}
		vals := make([][]driver.Value, len(cols))
		for _, i := range first {
			vals[i] = make([]driver.Value, 0, n)
		}
		if err := readSpans(ctx, fr, cols, first, g, in, vals); err != nil {
			return nil, err
		}
		ld.decoded += n
		if rf == nil && len(deleted) == 0 {
			for i := range cols {
				ld.vals[i] = append(ld.vals[i], vals[i]...)
			}
			continue
		}
		// The rows the filter keeps, by position among the decoded ones
		// and by row within the row group.
		var pos []int
		var runs []rowSpan
		p := 0
		for _, s := range in {
			for r := s.lo; r < s.hi; r, p = r+1, p+1 {
				if _, gone := slices.BinarySearch(deleted, firsts[g]+r); gone || (rf != nil && !rf.keep(vals, p)) {
					continue
				}
				pos = append(pos, p)
				if k := len(runs); k > 0 && runs[k-1].hi == r {
					runs[k-1].hi++
				} else {
					runs = append(runs, rowSpan{r, r + 1})
				}
			}
		}
		for _, i := range first {
			for _, q := range pos {
				ld.vals[i] = append(ld.vals[i], vals[i][q])
			}
		}
		if len(pos) == 0 || len(rest) == 0 {
			continue
		}
		// Runs close together are read as one span, the rows between
		// decoded and dropped: a seek re-reads and decompresses the page it
		// lands in, so seeking to each run in one page costs more.
		var reads []rowSpan
		for _, r := range runs {
			if k := len(reads); k > 0 && r.lo-reads[k-1].hi <= seekGap {
				reads[k-1].hi = r.hi
			} else {
				reads = append(reads, r)
			}
		}
		var m int64
		for _, r := range reads {
			m += r.hi - r.lo
		}
		for _, i := range rest {
			vals[i] = make([]driver.Value, 0, m)
		}
		if err := readSpans(ctx, fr, cols, rest, g, reads, vals); err != nil {
			return nil, err
		}
		// Positions of the kept rows among those just decoded.
		var pos2 []int
		p, k := 0, 0
		for _, r := range reads {
			for row := r.lo; row < r.hi; row, p = row+1, p+1 {
				for k < len(runs) && runs[k].hi <= row {
					k++
				}
				if k < len(runs) && runs[k].lo <= row {
					pos2 = append(pos2, p)
				}
			}
		}
		if len(pos2) != len(pos) {
			return nil, fmt.Errorf("row filter: %d rows kept, %d found again", len(pos), len(pos2))
		}
		for _, i := range rest {
			for _, q := range pos2 {
				ld.vals[i] = append(ld.vals[i], vals[i][q])
			}
		}
	}
	ld.rows = len(ld.vals[0])
	for _, v := range ld.vals {
		if len(v) != ld.rows {
			return nil, fmt.Errorf("columns decoded to different row counts")
		}
	}
	ld.bytes = cr.n.Load()
	return ld, nil
}

// seekGap is the gap, in rows, below which two runs of kept rows are read
// as one span rather than by a seek to each: about a page of an 8-byte
// column at arrow-go's and parquet-mr's default page size (1 MiB
// uncompressed is 131,072 values; engines writing at scale cut pages of
// 8,000 to 20,000 rows).
const seekGap = 16384

// readSpans decodes rows in (relative to row group g) of the columns
// which (indexes into cols), appending each column's values to out. Each
// column reads exactly the rows of each span (ColumnReader.NextBatch),
// not batches of a fixed size: a batch running past a span's last row
// would read and decompress the page after it, which from an object store
// is bytes fetched for nothing.
func readSpans(ctx context.Context, fr *pqarrow.FileReader, cols []pageColumn, which []int, g int, in []rowSpan, out [][]driver.Value) error {
	leaves := make([]int, len(which))
	for j, i := range which {
		leaves[j] = cols[i].leaf
	}
	rdrs, _, err := fr.GetFieldReaders(ctx, leaves, []int{g})
	if err != nil {
		return err
	}
	defer func() {
		for _, r := range rdrs {
			r.Release()
		}
	}()
	if len(rdrs) != len(which) {
		return fmt.Errorf("%d column readers for %d columns", len(rdrs), len(which))
	}
	for j, i := range which {
		if !types.SameIdent(rdrs[j].Field().Name, cols[i].name) {
			return fmt.Errorf("column reader %s for column %s", rdrs[j].Field().Name, cols[i].name)
		}
	}
	for _, s := range in {
		for j, i := range which {
			if err := rdrs[j].SeekToRow(s.lo); err != nil {
				return err
			}
			for need := s.hi - s.lo; need > 0; {
				k := min(need, pageBatch)
				ch, err := rdrs[j].NextBatch(k)
				if err != nil {
					return err
				}
				var got int64
				for _, a := range ch.Chunks() {
					if err := appendValues(&out[i], cols[i], a, a.Len()); err != nil {
						ch.Release()
						return err
					}
					got += int64(a.Len())
				}
				ch.Release()
				if got != k {
					return fmt.Errorf("row group %d ended before row %d", g, s.hi)
				}
				need -= k
			}
		}
	}
	return nil
}

// pageBatch is the most rows decoded at once.
const pageBatch = 8192

// DuckDB's DATE holds days within ±2^31 but for its infinities; its
// TIMESTAMP microseconds within about ±2^62.9, its infinities at the ends
// of int64. The page path hands over only values well inside.
const (
	maxPageDays   = math.MaxInt32 - 1
	maxPageMicros = int64(1) << 62
)

// appendValues appends the first n values of a to out as the Appender's
// Go values for c.
func appendValues(out *[]driver.Value, c pageColumn, a arrow.Array, n int) error {
	for i := range n {
		if a.IsNull(i) {
			*out = append(*out, nil)
			continue
		}
		var v driver.Value
		switch c.kind {
		case pkInt:
			switch x := a.(type) {
			case *array.Int8:
				v = x.Value(i)
			case *array.Int16:
				v = x.Value(i)
			case *array.Int32:
				v = x.Value(i)
			case *array.Int64:
				v = x.Value(i)
			default:
				return fmt.Errorf("column %s: %s for an integer", c.name, a.DataType())
			}
		case pkUint:
			switch x := a.(type) {
			case *array.Uint8:
				v = x.Value(i)
			case *array.Uint16:
				v = x.Value(i)
			case *array.Uint32:
				v = x.Value(i)
			case *array.Uint64:
				v = x.Value(i)
			default:
				return fmt.Errorf("column %s: %s for an unsigned integer", c.name, a.DataType())
			}
		case pkFloat32:
			x, ok := a.(*array.Float32)
			if !ok {
				return fmt.Errorf("column %s: %s for FLOAT", c.name, a.DataType())
			}
			v = x.Value(i)
		case pkFloat64:
			x, ok := a.(*array.Float64)
			if !ok {
				return fmt.Errorf("column %s: %s for DOUBLE", c.name, a.DataType())
			}
			v = x.Value(i)
		case pkBool:
			x, ok := a.(*array.Boolean)
			if !ok {
				return fmt.Errorf("column %s: %s for BOOLEAN", c.name, a.DataType())
			}
			v = x.Value(i)
		case pkString:
			var s string
			switch x := a.(type) {
			case *array.String:
				s = x.Value(i)
			case *array.LargeString:
				s = x.Value(i)
			default:
				return fmt.Errorf("column %s: %s for VARCHAR", c.name, a.DataType())
			}
			if !utf8.ValidString(s) {
				return fmt.Errorf("column %s: invalid UTF-8", c.name)
			}
			v = strings.Clone(s)
		case pkDate:
			x, ok := a.(*array.Date32)
			if !ok {
				return fmt.Errorf("column %s: %s for DATE", c.name, a.DataType())
			}
			d := int32(x.Value(i))
			if d >= maxPageDays || d <= -maxPageDays {
				return fmt.Errorf("column %s: date out of range", c.name)
			}
			v = d
		case pkTimestamp:
			x, ok := a.(*array.Timestamp)
			if !ok {
				return fmt.Errorf("column %s: %s for a timestamp", c.name, a.DataType())
			}
			us := int64(x.Value(i))
			switch x.DataType().(*arrow.TimestampType).Unit {
			case arrow.Microsecond:
			case arrow.Millisecond:
				if us >= maxPageMicros/1000 || us <= -maxPageMicros/1000 {
					return fmt.Errorf("column %s: timestamp out of range", c.name)
				}
				us *= 1000
			default:
				// Seconds are not a Parquet unit; nanoseconds read as
				// TIMESTAMP_NS, INT96 as rounded microseconds.
				return fmt.Errorf("column %s: timestamp unit %s", c.name, x.DataType())
			}
			if us >= maxPageMicros || us <= -maxPageMicros {
				return fmt.Errorf("column %s: timestamp out of range", c.name)
			}
			v = us
		}
		*out = append(*out, v)
	}
	return nil
}

// pagesSQL reads a loaded file's rows as the table: each column from the
// temporary table, turned back into the file's type, then cast to the
// table's as viewSQL casts a file's.
func pagesSQL(cols []catalog.Column, ld *pageLoad, consts fileConstants) (string, error) {
	var sel []string
	byName := map[string]pageColumn{}
	for _, pc := range ld.cols {
		byName[strings.ToLower(pc.name)] = pc
	}
	for _, c := range cols {
		if c.Parent.Known {
			continue
		}
		dt := types.DuckDBName(c.Type)
		if c.Partition != "" {
			sel = append(sel, fmt.Sprintf("%s AS %s", consts[c.ID], sqllex.QuoteName(c.Name)))
			continue
		}
		pc, ok := byName[strings.ToLower(c.Name)]
		if !ok || dt == "" {
			return "", fmt.Errorf("column %s not loaded", c.Name)
		}
		src := sqllex.QuoteName(pc.name)
		switch pc.kind {
		case pkDate:
			src = fmt.Sprintf("(DATE '1970-01-01' + %s)", src)
		case pkTimestamp:
			if pc.fileT.Kind == types.KindTimestampTZ {
				src = fmt.Sprintf("make_timestamptz(%s)", src)
			} else {
				src = fmt.Sprintf("make_timestamp(%s)", src)
			}
		}
		sel = append(sel, fmt.Sprintf("CAST(%s AS %s) AS %s", src, dt, sqllex.QuoteName(c.Name)))
	}
	if vs, ok := ld.values(); ok {
		ld.inline = true
		return fmt.Sprintf("SELECT %s FROM %s", strings.Join(sel, ", "), vs), nil
	}
	return fmt.Sprintf("SELECT %s FROM temp.%s", strings.Join(sel, ", "), sqllex.QuoteName(ld.table)), nil
}

// inlineRows is the most rows handed over as a VALUES list in the view's
// SQL instead of through a temporary table: creating the table and its
// Appender cost about 1.7 ms, parsing a short list much less.
const inlineRows = 64

// values is the rows as a VALUES list of the temporary table's columns,
// each value a literal cast to the column's type, spelled so that the
// cast gives back exactly the value decoded (floats as their shortest
// round-tripping text, -0, NaN and infinities included); ok is false for
// more than inlineRows rows or a string holding a NUL byte.
func (ld *pageLoad) values() (string, bool) {
	if ld.rows > inlineRows {
		return "", false
	}
	var names []string
	for _, c := range ld.cols {
		names = append(names, sqllex.QuoteName(c.name))
	}
	alias := "__rocklake_rows(" + strings.Join(names, ", ") + ")"
	if ld.rows == 0 {
		var nulls []string
		for _, c := range ld.cols {
			nulls = append(nulls, fmt.Sprintf("CAST(NULL AS %s) AS %s", c.store, sqllex.QuoteName(c.name)))
		}
		return "(SELECT " + strings.Join(nulls, ", ") + " WHERE false) AS " + alias, true
	}
	var b strings.Builder
	b.WriteString("(VALUES ")
	for r := range ld.rows {
		if r > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for i, c := range ld.cols {
			if i > 0 {
				b.WriteString(", ")
			}
			lit, ok := literal(ld.vals[i][r])
			if !ok {
				return "", false
			}
			fmt.Fprintf(&b, "CAST(%s AS %s)", lit, c.store)
		}
		b.WriteByte(')')
	}
	b.WriteString(") AS " + alias)
	return b.String(), true
}

// floatLiteral is a float as a string DuckDB casts back to it exactly:
// the shortest text that round-trips at the bit size, "-0" keeping the
// sign, and DuckDB's spellings of NaN and the infinities.
func floatLiteral(f float64, bits int) string {
	switch {
	case math.IsNaN(f):
		return "'nan'"
	case math.IsInf(f, 1):
		return "'inf'"
	case math.IsInf(f, -1):
		return "'-inf'"
	}
	return "'" + strconv.FormatFloat(f, 'g', -1, bits) + "'"
}

// literal is an Appender value as SQL text whose cast to the value's
// column type gives the value back.
func literal(v driver.Value) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "NULL", true
	case int8, int16, int32, int64, uint8, uint16, uint32, uint64:
		return fmt.Sprintf("%d", x), true
	case float32:
		return floatLiteral(float64(x), 32), true
	case float64:
		return floatLiteral(x, 64), true
	case bool:
		return strconv.FormatBool(x), true
	case string:
		if strings.IndexByte(x, 0) >= 0 {
			return "", false
		}
		return "'" + strings.ReplaceAll(x, "'", "''") + "'", true
	}
	return "", false
}

// load creates the temporary table on conn and appends the rows; the
// table is dropped with the query's views (cleanup).
func (ld *pageLoad) load(ctx context.Context, conn *sql.Conn, cleanup *[]string) error {
	var defs []string
	for _, c := range ld.cols {
		defs = append(defs, sqllex.QuoteName(c.name)+" "+c.store)
	}
	name := sqllex.QuoteName(ld.table)
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("CREATE TEMP TABLE %s (%s)", name, strings.Join(defs, ", "))); err != nil {
		return fmt.Errorf("partial scan: %w", err)
	}
	*cleanup = append(*cleanup, "DROP TABLE IF EXISTS temp."+name+";")
	return conn.Raw(func(dc any) error {
		app, err := duckdb.NewAppender(dc.(driver.Conn), "temp", "main", ld.table)
		if err != nil {
			return fmt.Errorf("partial scan: %w", err)
		}
		row := make([]driver.Value, len(ld.cols))
		for r := range ld.rows {
			for i := range ld.cols {
				row[i] = ld.vals[i][r]
			}
			if err := app.AppendRow(row...); err != nil {
				app.Close()
				return fmt.Errorf("partial scan: %w", err)
			}
		}
		if err := app.Close(); err != nil {
			return fmt.Errorf("partial scan: %w", err)
		}
		return nil
	})
}
