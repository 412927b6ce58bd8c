package engine

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/rocklake/rocklake/internal/sqllex"
	"github.com/rocklake/rocklake/types"
)

// Column is one column of a query's answer: the name DuckDB gave it and
// its type as DuckDB spells it (BIGINT, DECIMAL(18,3), VARCHAR[], JSON).
type Column struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

func columnNames(cols []Column) []string {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.Name
	}
	return names
}

// columnsOf is the names and DuckDB types of a result's columns.
func columnsOf(rows *sql.Rows) ([]Column, error) {
	cts, err := rows.ColumnTypes()
	if err != nil {
		return nil, err
	}
	cols := make([]Column, len(cts))
	for i, ct := range cts {
		cols[i] = Column{Name: ct.Name(), Type: ct.DatabaseTypeName()}
	}
	return cols, nil
}

// RowsOptions tune QueryRows.
type RowsOptions struct {
	// NestedJSON returns LIST, ARRAY, STRUCT, MAP and UNION values as JSON
	// text (json.RawMessage, from DuckDB's to_json) instead of DuckDB's
	// text form, for callers that print JSON.
	NestedJSON bool
}

// kind is how one column's values are fetched and handed out.
type kind uint8

const (
	rkText    kind = iota // string: DuckDB's text form, cast by DuckDB
	rkBool                // bool
	rkInt                 // int64 (TINYINT … BIGINT)
	rkUint                // uint64 (UTINYINT … UBIGINT)
	rkBig                 // *big.Int (HUGEINT, UHUGEINT)
	rkFloat               // float64 (DOUBLE)
	rkDecimal             // Decimal
	rkNumber              // json.Number: FLOAT in DuckDB's text, whose digits Go's shortest form does not always match
	rkJSON                // json.RawMessage: a JSON column, or a nested one with NestedJSON
)

func kindOf(typ string, nestedJSON bool) kind {
	switch typ {
	case "BOOLEAN":
		return rkBool
	case "TINYINT", "SMALLINT", "INTEGER", "BIGINT":
		return rkInt
	case "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT":
		return rkUint
	case "HUGEINT", "UHUGEINT":
		return rkBig
	case "DOUBLE":
		return rkFloat
	case "FLOAT":
		return rkNumber
	case "JSON":
		return rkJSON
	}
	if strings.HasPrefix(typ, "DECIMAL(") {
		return rkDecimal
	}
	if nestedJSON && (strings.HasSuffix(typ, "]") || strings.HasPrefix(typ, "STRUCT(") ||
		strings.HasPrefix(typ, "MAP(") || strings.HasPrefix(typ, "UNION(")) {
		return rkJSON
	}
	return rkText
}

// selectExpr fetches column name as its kind needs: typed where Go holds
// the value exactly, else DuckDB's text (or JSON text) of it.
func (k kind) selectExpr(name, typ string) string {
	q := sqllex.QuoteName(name)
	switch k {
	case rkText, rkNumber:
		return q + "::VARCHAR"
	case rkJSON:
		if typ == "JSON" {
			return q + "::VARCHAR"
		}
		return "to_json(" + q + ")::VARCHAR"
	}
	return q
}

// Decimal is a DECIMAL value: Unscaled × 10^-Scale.
type Decimal struct {
	Unscaled *big.Int
	Scale    int
}

// String is DuckDB's text of the value: every digit of the scale.
func (d Decimal) String() string {
	var s string
	if d.Unscaled.IsInt64() && d.Unscaled.Int64() != math.MinInt64 {
		// Most decimals fit 64 bits; big.Int's String costs several times
		// more per value.
		s = strconv.FormatInt(max(d.Unscaled.Int64(), -d.Unscaled.Int64()), 10)
	} else {
		s = new(big.Int).Abs(d.Unscaled).String()
	}
	if d.Scale > 0 {
		if len(s) <= d.Scale {
			s = strings.Repeat("0", d.Scale-len(s)+1) + s
		}
		s = s[:len(s)-d.Scale] + "." + s[len(s)-d.Scale:]
	}
	if d.Unscaled.Sign() < 0 {
		s = "-" + s
	}
	return s
}

// Rows is a query's answer as DuckDB hands it over, one row at a time:
// Rows hold one DuckDB chunk (2,048 rows) however many rows there are.
// (duckdb-go runs queries through DuckDB's materialising API, so DuckDB
// itself holds the whole answer until Close.) Values are typed: nil (NULL), bool, int64, uint64, *big.Int,
// float64, Decimal, json.Number (FLOAT), json.RawMessage (JSON, and nested
// values with RowsOptions.NestedJSON), or string (DuckDB's text form of
// every other type). Rows hold a DuckDB connection and the query's views
// until Close.
type Rows struct {
	rows  *sql.Rows // nil for an answer from statistics
	cols  []Column
	kinds []kind
	scan  []any
	ptrs  []any // &scan[i], for Scan
	vals  []any
	text  [][]*string // the answer from statistics
	next  int
	n     int64
	err   error

	res     *Result
	release func()
	phase   func(string)
	start   time.Time
	closed  bool
	// translate tells DuckDB's error in the query's terms (QueryError).
	translate func(error) error
}

// QueryRows runs a query as Query does and returns its rows as DuckDB
// produces them, typed. The Result's Rows stay empty (but for an answer
// from statistics); its Phases and Elapsed are complete once the Rows are
// closed.
func (e *Engine) QueryRows(ctx context.Context, query string, opts QueryOptions, ro RowsOptions) (*Rows, error) {
	_, rows, err := e.query(ctx, query, opts, &ro)
	return rows, err
}

// streamRows asks DuckDB for the query's column types (the views are made
// in that round trip), then runs it fetching each column as its kind
// needs. Columns are renamed by position for the second statement, so
// duplicate or odd names cannot clash, and get their names back from the
// first.
//
// The columns of a query over catalog tables depend on the query text and
// the tables' schema alone (the views are cast to the tables' types
// whatever files they hold), so they are kept per schema version and text
// (key): a repeated query skips the
// first round trip, and its views are made in the one statement left.
func (e *Engine) streamRows(ctx context.Context, conn *sql.Conn, prefix, rewritten, query, key string, scan *tableScan, cleanup *[]string, ro *RowsOptions) (*Rows, error) {
	// A table function (read_parquet of a path, query()) reads what may
	// change shape under the same text: such queries are not kept.
	keep := scan == nil || !scan.tableFunctions
	cols, known := e.streamed.Get(key)
	if known && keep {
		cols = slices.Clone(cols)
	} else {
		var err error
		cols, err = runColumns(ctx, conn, prefix, "SELECT * FROM (\n"+rewritten+"\n) LIMIT 0")
		if err != nil {
			return nil, err
		}
		prefix = "" // the views exist now
		if slices.ContainsFunc(cols, func(c Column) bool { return strings.Contains(c.Name, "__rocklake_v") }) {
			if orig, err := e.originalColumns(ctx, conn, query, scan, cleanup); err == nil && len(orig) == len(cols) {
				for i := range cols {
					cols[i].Name = orig[i].Name
				}
			}
		}
		if keep {
			e.streamed.Add(key, slices.Clone(cols))
		}
	}
	return typedRows(ctx, conn, prefix, rewritten, cols, ro.NestedJSON)
}

// typedRows runs query (whose columns are cols) fetching each column as
// its kind needs.
func typedRows(ctx context.Context, conn *sql.Conn, prefix, query string, cols []Column, nestedJSON bool) (*Rows, error) {
	r := &Rows{cols: cols, kinds: make([]kind, len(cols))}
	aliases := make([]string, len(cols))
	exprs := make([]string, len(cols))
	for i, c := range cols {
		r.kinds[i] = kindOf(c.Type, nestedJSON)
		alias := fmt.Sprintf("__rocklake_c%d", i)
		aliases[i] = sqllex.QuoteName(alias)
		exprs[i] = r.kinds[i].selectExpr(alias, c.Type)
	}
	rows, err := conn.QueryContext(ctx, prefix+"SELECT "+strings.Join(exprs, ", ")+" FROM (\n"+query+"\n) AS __rocklake_q("+strings.Join(aliases, ", ")+")")
	if err != nil {
		return nil, err
	}
	r.rows = rows
	r.scan = make([]any, len(cols))
	r.ptrs = make([]any, len(cols))
	for i := range r.scan {
		r.ptrs[i] = &r.scan[i]
	}
	r.vals = make([]any, len(cols))
	return r, nil
}

// ConnRows runs a SELECT on conn, a connection to a DuckDB database of
// the caller's own rather than the engine's (nothing is planned, pruned or
// checked), and returns its rows typed as QueryRows types the engine's.
// release runs when the rows close, or before ConnRows returns an error.
func ConnRows(ctx context.Context, conn *sql.Conn, query string, release func()) (*Rows, error) {
	q := strings.TrimRight(query, "; \t\r\n")
	cols, err := runColumns(ctx, conn, "", "SELECT * FROM (\n"+q+"\n) LIMIT 0")
	if err != nil {
		release()
		return nil, err
	}
	r, err := typedRows(ctx, conn, "", q, cols, false)
	if err != nil {
		release()
		return nil, err
	}
	r.release, r.phase, r.res, r.start = release, func(string) {}, &Result{}, time.Now()
	return r, nil
}

// metadataRows hands out an answer from statistics, DuckDB's text of each
// value, typed as DuckDB would have given it.
func metadataRows(res *Result, cols []Column, ro *RowsOptions) (*Rows, error) {
	if len(cols) != len(res.Columns) {
		cols = make([]Column, len(res.Columns))
		for i, name := range res.Columns {
			cols[i] = Column{Name: name, Type: "VARCHAR"}
		}
	}
	r := &Rows{cols: cols, kinds: make([]kind, len(cols)), text: res.Rows, vals: make([]any, len(cols)), res: res, closed: true}
	for i, c := range cols {
		r.kinds[i] = kindOf(c.Type, ro.NestedJSON)
		if r.kinds[i] == rkJSON && c.Type != "JSON" {
			r.kinds[i] = rkText // statistics hold no nested values; never reached
		}
	}
	return r, nil
}

// Columns is the answer's columns.
func (r *Rows) Columns() []Column { return r.cols }

// Next moves to the next row; false at the end or on an error (see Err).
func (r *Rows) Next() bool {
	if r.err != nil {
		return false
	}
	if r.rows == nil {
		if r.next >= len(r.text) {
			return false
		}
		row := r.text[r.next]
		r.next++
		for i, s := range row {
			if s == nil {
				r.vals[i] = nil
				continue
			}
			v, err := parseValue(r.kinds[i], r.cols[i].Type, *s)
			if err != nil {
				r.err = err
				return false
			}
			r.vals[i] = v
		}
		r.n++
		return true
	}
	if !r.rows.Next() {
		r.err = r.rows.Err()
		return false
	}
	if err := r.rows.Scan(r.ptrs...); err != nil {
		r.err = err
		return false
	}
	for i, v := range r.scan {
		if r.vals[i], r.err = typed(r.kinds[i], v); r.err != nil {
			return false
		}
	}
	r.n++
	return true
}

// Values is the current row, valid until the next call of Next.
func (r *Rows) Values() []any { return r.vals }

// Count is the number of rows handed out so far.
func (r *Rows) Count() int64 { return r.n }

// Err is the error that ended Next early, if any.
func (r *Rows) Err() error {
	if r.translate != nil {
		return r.translate(r.err)
	}
	return r.err
}

// Close ends the query and gives the connection back (its views are
// dropped off the caller's path). Closing twice is harmless.
func (r *Rows) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	err := r.rows.Close()
	r.release()
	r.phase("execute")
	r.res.Elapsed = time.Since(r.start)
	return err
}

// Result is the query's plans and phases (complete after Close).
func (r *Rows) Result() *Result { return r.res }

// typed turns what duckdb-go scanned into the kind's Go type.
func typed(k kind, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch k {
	case rkInt:
		switch x := v.(type) {
		case int8:
			return int64(x), nil
		case int16:
			return int64(x), nil
		case int32:
			return int64(x), nil
		case int64:
			return x, nil
		}
	case rkUint:
		switch x := v.(type) {
		case uint8:
			return uint64(x), nil
		case uint16:
			return uint64(x), nil
		case uint32:
			return uint64(x), nil
		case uint64:
			return x, nil
		}
	case rkBig:
		if x, ok := v.(*big.Int); ok {
			return x, nil
		}
	case rkFloat:
		if x, ok := v.(float64); ok {
			return x, nil
		}
	case rkBool:
		if x, ok := v.(bool); ok {
			return x, nil
		}
	case rkDecimal:
		if x, ok := v.(duckdb.Decimal); ok {
			return Decimal{Unscaled: x.Value, Scale: int(x.Scale)}, nil
		}
	case rkText:
		if x, ok := v.(string); ok {
			return x, nil
		}
	case rkNumber:
		if x, ok := v.(string); ok {
			return json.Number(x), nil
		}
	case rkJSON:
		if x, ok := v.(string); ok {
			return json.RawMessage(x), nil
		}
	}
	return nil, fmt.Errorf("engine: unexpected %T from DuckDB for a column of kind %d", v, k)
}

// parseValue reads DuckDB's text of a value (an answer from statistics)
// as the kind's Go type.
func parseValue(k kind, typ, s string) (any, error) {
	var v any
	var err error
	switch k {
	case rkInt:
		v, err = strconv.ParseInt(s, 10, 64)
	case rkUint:
		v, err = strconv.ParseUint(s, 10, 64)
	case rkBig:
		z, ok := new(big.Int).SetString(s, 10)
		if !ok {
			err = strconv.ErrSyntax
		}
		v = z
	case rkFloat:
		v, err = strconv.ParseFloat(s, 64)
	case rkBool:
		v, err = strconv.ParseBool(s)
	case rkDecimal:
		var scale int
		if _, err = fmt.Sscanf(typ, "DECIMAL(%d,%d)", new(int), &scale); err == nil {
			whole, frac, _ := strings.Cut(s, ".")
			frac += strings.Repeat("0", max(0, scale-len(frac)))
			z, ok := new(big.Int).SetString(whole+frac[:scale], 10)
			if !ok || len(frac) != scale {
				err = strconv.ErrSyntax
			}
			v = Decimal{Unscaled: z, Scale: scale}
		}
	case rkNumber:
		v = json.Number(s)
	case rkJSON:
		v = json.RawMessage(s)
	default:
		v = s
	}
	if err != nil {
		return nil, fmt.Errorf("engine: reading %q as %s: %w", s, typ, err)
	}
	return v, nil
}

var doubleCodec, _ = types.CodecFor(types.MustParseType("float64"))

// Text is DuckDB's text form of a value Rows handed out ("NULL" for nil),
// as `CAST(v AS VARCHAR)` gives it.
func Text(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	case *big.Int:
		return x.String()
	case float64:
		return doubleCodec.Format(types.FloatValue(x))
	case Decimal:
		return x.String()
	case json.Number:
		return string(x)
	case json.RawMessage:
		return string(x)
	}
	return fmt.Sprint(v)
}

// maxExact is the largest integer magnitude every double holds exactly:
// integers up to it print as JSON numbers, which JavaScript and most JSON
// readers parse into doubles.
const maxExact = 1 << 53

var (
	maxExactBig = big.NewInt(maxExact)
	minExactBig = big.NewInt(-maxExact)
)

// AppendJSON appends a value Rows handed out as JSON: null, true/false, a
// number where a double holds it exactly (integers within ±2^53, decimals
// of at most 15 significant digits, finite floats), else a string of
// DuckDB's text (64- and 128-bit integers and decimals beyond that, NaN
// and infinities); JSON values as they are; text as a string.
func AppendJSON(dst []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...)
	case bool:
		return strconv.AppendBool(dst, x)
	case int64:
		if x >= -maxExact && x <= maxExact {
			return strconv.AppendInt(dst, x, 10)
		}
		return strconv.AppendQuote(dst, strconv.FormatInt(x, 10))
	case uint64:
		if x <= maxExact {
			return strconv.AppendUint(dst, x, 10)
		}
		return strconv.AppendQuote(dst, strconv.FormatUint(x, 10))
	case *big.Int:
		if x.Cmp(minExactBig) >= 0 && x.Cmp(maxExactBig) <= 0 {
			return x.Append(dst, 10)
		}
		return strconv.AppendQuote(dst, x.String())
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return strconv.AppendQuote(dst, Text(x))
		}
		return append(dst, Text(x)...)
	case Decimal:
		if len(new(big.Int).Abs(x.Unscaled).String()) <= 15 {
			return append(dst, x.String()...)
		}
		return strconv.AppendQuote(dst, x.String())
	case json.Number:
		if _, err := strconv.ParseFloat(string(x), 64); err != nil || strings.ContainsAny(string(x), "iInN") {
			return strconv.AppendQuote(dst, string(x))
		}
		return append(dst, x...)
	case json.RawMessage:
		return append(dst, x...)
	}
	t := Text(v)
	if !strings.ContainsAny(t, "<>&") {
		b, _ := json.Marshal(t)
		return append(dst, b...)
	}
	// json.Marshal would write <, > and & as \u003c, \u003e, \u0026:
	// valid, but not the text (the answer is read, never embedded in HTML).
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(t)
	return append(dst, bytes.TrimSuffix(b.Bytes(), []byte("\n"))...)
}
