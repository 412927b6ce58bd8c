package main

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/prune"
)

// Output formats of query beside text and json.
const (
	formatTable = "table" // the same as text: an aligned table
	formatCSV   = "csv"
	formatTSV   = "tsv"
	formatJSONL = "jsonl" // one JSON object per row
	// formatAligned is the prompt's table: numbers right-aligned, as
	// psql and DuckDB's shell show them. Not a --format: scripts keep
	// the text table as it is.
	formatAligned = "aligned"
)

// queryFormats are the formats query accepts.
var queryFormats = []string{formatText, formatTable, formatCSV, formatTSV, formatJSON, formatJSONL}

// tableLookAhead is how many rows the text table reads before it prints:
// column widths fit them, and a longer value later widens only its own
// line. The table so starts printing after at most this many rows, in
// memory bounded by them, however long the answer.
const tableLookAhead = 1000

// rowPrinter prints a query's rows in one format as they arrive.
type rowPrinter interface {
	begin(cols []engine.Column, res *engine.Result) error
	row(vals []any) error
	end(res *engine.Result, n int64) error
}

// newRowPrinter makes the printer of format, writing to w. null is how
// the text formats show NULL (csv and tsv: empty by default; the table:
// NULL).
func newRowPrinter(format string, w *bufio.Writer, null *string) rowPrinter {
	switch format {
	case formatCSV, formatTSV:
		cw := csv.NewWriter(w)
		if format == formatTSV {
			cw.Comma = '\t'
		}
		p := &csvPrinter{w: cw}
		if null != nil {
			p.null = *null
		}
		return p
	case formatJSON:
		return &jsonPrinter{w: w}
	case formatJSONL:
		return &jsonlPrinter{w: w}
	}
	p := &tablePrinter{w: w, null: "NULL", alignNumbers: format == formatAligned}
	if null != nil {
		p.null = *null
	}
	return p
}

type csvPrinter struct {
	w    *csv.Writer
	null string
	rec  []string
}

func (p *csvPrinter) begin(cols []engine.Column, _ *engine.Result) error {
	p.rec = make([]string, len(cols))
	for i, c := range cols {
		p.rec[i] = c.Name
	}
	return p.w.Write(p.rec)
}

func (p *csvPrinter) row(vals []any) error {
	for i, v := range vals {
		p.rec[i] = p.null
		if v != nil {
			p.rec[i] = engine.Text(v)
		}
	}
	return p.w.Write(p.rec)
}

func (p *csvPrinter) end(*engine.Result, int64) error {
	p.w.Flush()
	return p.w.Error()
}

// tablePrinter aligns columns to the widest of the first tableLookAhead
// rows, two spaces apart.
type tablePrinter struct {
	w       *bufio.Writer
	null    string
	widths  []int
	pending [][]string // rows read ahead, the header first
	started bool
	// alignNumbers right-aligns the columns of numeric types (the
	// prompt's table); right says which those are.
	alignNumbers bool
	right        []bool
}

func (p *tablePrinter) begin(cols []engine.Column, _ *engine.Result) error {
	head := make([]string, len(cols))
	for i, c := range cols {
		head[i] = c.Name
	}
	p.widths = make([]int, len(cols))
	p.right = make([]bool, len(cols))
	if p.alignNumbers {
		for i, c := range cols {
			p.right[i] = numericType(c.Type)
		}
	}
	p.pending = [][]string{head}
	return nil
}

// numericType says whether a DuckDB type name is of numbers.
func numericType(t string) bool {
	switch t {
	case "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE":
		return true
	}
	return strings.HasPrefix(t, "DECIMAL")
}

func (p *tablePrinter) row(vals []any) error {
	cells := make([]string, len(vals))
	for i, v := range vals {
		cells[i] = p.null
		if v != nil {
			cells[i] = engine.Text(v)
		}
	}
	if p.started {
		return p.line(cells)
	}
	p.pending = append(p.pending, cells)
	if len(p.pending) > tableLookAhead {
		return p.flushPending()
	}
	return nil
}

func (p *tablePrinter) flushPending() error {
	for _, cells := range p.pending {
		for i, c := range cells {
			p.widths[i] = max(p.widths[i], utf8.RuneCountInString(c))
		}
	}
	p.started = true
	for _, cells := range p.pending {
		if err := p.line(cells); err != nil {
			return err
		}
	}
	p.pending = nil
	return nil
}

func (p *tablePrinter) line(cells []string) error {
	for i, c := range cells {
		pad := strings.Repeat(" ", max(0, p.widths[i]-utf8.RuneCountInString(c)))
		if p.right[i] {
			p.w.WriteString(pad)
			pad = ""
		}
		p.w.WriteString(c)
		if i < len(cells)-1 {
			p.w.WriteString(pad + "  ")
		}
	}
	return p.w.WriteByte('\n')
}

func (p *tablePrinter) end(*engine.Result, int64) error {
	if !p.started {
		return p.flushPending()
	}
	return nil
}

// objectKeys are the JSON keys of a row object: the column names, a
// repeated name made unique with _1, _2, … (as DuckDB names the columns of
// SELECT * over a join that repeats a name), each quoted once.
func objectKeys(cols []engine.Column) (names []string, quoted [][]byte) {
	seen := map[string]bool{}
	for _, c := range cols {
		name := c.Name
		for i := 1; seen[name]; i++ {
			name = fmt.Sprintf("%s_%d", c.Name, i)
		}
		seen[name] = true
		q, _ := marshalJSON(name, "", "")
		names = append(names, name)
		quoted = append(quoted, append(q, ':'))
	}
	return names, quoted
}

// appendObject appends one row as a JSON object.
func appendObject(b []byte, keys [][]byte, vals []any) []byte {
	b = append(b, '{')
	for i, v := range vals {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, keys[i]...)
		b = engine.AppendJSON(b, v)
	}
	return append(b, '}')
}

type jsonlPrinter struct {
	w    *bufio.Writer
	keys [][]byte
	buf  []byte
}

func (p *jsonlPrinter) begin(cols []engine.Column, _ *engine.Result) error {
	_, p.keys = objectKeys(cols)
	return nil
}

func (p *jsonlPrinter) row(vals []any) error {
	p.buf = append(appendObject(p.buf[:0], p.keys, vals), '\n')
	_, err := p.w.Write(p.buf)
	return err
}

func (p *jsonlPrinter) end(*engine.Result, int64) error { return nil }

// jsonPrinter writes one JSON document: what is known before the rows
// (columns, plans, DuckDB's plan), the rows as they arrive, then counts
// and times.
type jsonPrinter struct {
	w    *bufio.Writer
	keys [][]byte
	buf  []byte
	n    int64
}

// tablePlanJSON is how one table reference was pruned, in query's JSON.
type tablePlanJSON struct {
	Table      string            `json:"table"`
	Alias      string            `json:"alias,omitempty"`
	Predicates []string          `json:"predicates"`
	ReadWhole  string            `json:"read_whole,omitempty"`
	Files      prune.Counts      `json:"files"`
	RowGroups  prune.Counts      `json:"row_groups"`
	Bytes      prune.Bytes       `json:"bytes"`
	Bloom      prune.BloomCounts `json:"bloom"`
	// Reads says how each kept file was read: whole, its row ranges, or
	// its pages (engine.FileRead).
	Reads []engine.FileRead `json:"reads,omitempty"`
}

func tablePlans(res *engine.Result) []tablePlanJSON {
	out := []tablePlanJSON{}
	for _, tp := range res.Tables {
		j := tablePlanJSON{Table: tp.Table, Alias: tp.Alias, Predicates: nonNil(tp.Predicates), ReadWhole: tp.ReadWhole}
		if p := tp.Plan; p != nil {
			j.Files, j.RowGroups, j.Bytes, j.Bloom = p.Files, p.RowGroups, p.Bytes, p.Bloom
		}
		j.Reads = tp.Reads
		out = append(out, j)
	}
	return out
}

// fieldJSON writes `"name": value,` on a line of its own, indented as
// writeJSON indents.
func fieldJSON(w io.Writer, name string, v any) error {
	b, err := marshalJSON(v, "  ", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "  %q: %s,\n", name, b)
	return err
}

func (p *jsonPrinter) begin(cols []engine.Column, res *engine.Result) error {
	names, keys := objectKeys(cols)
	p.keys = keys
	named := make([]engine.Column, len(cols))
	for i, c := range cols {
		named[i] = engine.Column{Name: names[i], Type: c.Type}
	}
	p.w.WriteString("{\n")
	if err := fieldJSON(p.w, "columns", named); err != nil {
		return err
	}
	if err := fieldJSON(p.w, "tables", tablePlans(res)); err != nil {
		return err
	}
	if err := fieldJSON(p.w, "answered_from_metadata", res.Metadata); err != nil {
		return err
	}
	if res.Explain != "" {
		if err := fieldJSON(p.w, "explain", res.Explain); err != nil {
			return err
		}
	}
	_, err := p.w.WriteString(`  "rows": [`)
	return err
}

func (p *jsonPrinter) row(vals []any) error {
	p.buf = p.buf[:0]
	if p.n > 0 {
		p.buf = append(p.buf, ',')
	}
	p.buf = append(p.buf, "\n    "...)
	p.buf = appendObject(p.buf, p.keys, vals)
	p.n++
	_, err := p.w.Write(p.buf)
	return err
}

// phaseJSON is one phase of a query in seconds.
type phaseJSON struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
	Detail  string  `json:"detail,omitempty"`
}

func (p *jsonPrinter) end(res *engine.Result, n int64) error {
	if p.n > 0 {
		p.w.WriteString("\n  ")
	}
	p.w.WriteString("],\n")
	if err := fieldJSON(p.w, "row_count", n); err != nil {
		return err
	}
	if err := fieldJSON(p.w, "seconds", res.Elapsed.Seconds()); err != nil {
		return err
	}
	if err := fieldJSON(p.w, "rows_from_statistics", res.StatsRows); err != nil {
		return err
	}
	if err := fieldJSON(p.w, "object_storage", res.Objects); err != nil {
		return err
	}
	phases := []phaseJSON{}
	for _, ph := range res.Phases {
		phases = append(phases, phaseJSON{ph.Name, ph.Time.Seconds(), ph.Detail})
	}
	b, err := marshalJSON(phases, "  ", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(p.w, "  \"phases\": %s\n}\n", b)
	return err
}
