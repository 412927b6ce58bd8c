// Package duckast reads DuckDB's parse tree: the JSON that DuckDB's
// json_serialize_sql gives for a statement. Everything that knows how that
// JSON is shaped lives here, so that a change of DuckDB's serialisation
// breaks one package.
//
//	{"error": false, "statements": [{"node": SELECT_NODE}]}
//	SELECT_NODE   from_table (table ref), where_clause (expression),
//	              select_list, group_expressions, group_sets, aggregate_handling,
//	              having, qualify, sample,
//	              modifiers, cte_map {map: [{key, value}]}
//	table ref     BASE_TABLE (schema_name, table_name, alias, sample,
//	              column_name_alias), JOIN (left, right, ref_type,
//	              join_type), SUBQUERY, TABLE_FUNCTION, ...
//	expression    {class, type, query_location, ...}: see Expr
//
// A statement is decoded once into generic values (Tree), walked for table
// references by the engine, and each WHERE conjunct the planner may use is
// read into a typed Expr and turned into the planner's expression
// (Predicate) without printing it back to SQL.
package duckast

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ErrNotSerializable: DuckDB parses the statement but cannot give its parse
// tree as JSON (a PIVOT with USING, a statement other than SELECT).
var ErrNotSerializable = errors.New("DuckDB cannot serialise this statement")

// ParseError is DuckDB's parser error for a statement: its message, and
// the byte offset in the statement's text where the parser stopped (-1
// where DuckDB gave none).
type ParseError struct {
	Msg    string
	Offset int
}

func (e *ParseError) Error() string { return e.Msg }

// Tree is a decoded parse tree of one statement.
type Tree map[string]any

// Decode reads json_serialize_sql's output for one statement; DuckDB's
// parser error comes back as the error.
func Decode(js string) (Tree, error) {
	dec := json.NewDecoder(strings.NewReader(quoteNonFinite(js)))
	dec.UseNumber() // query locations are uint64, integers up to 128 bits: keep them exact
	var tree map[string]any
	if err := dec.Decode(&tree); err != nil {
		return nil, fmt.Errorf("reading DuckDB's parse tree: %w", err)
	}
	if isErr, _ := tree["error"].(bool); isErr {
		if kind, _ := tree["error_type"].(string); kind == "not implemented" {
			return nil, ErrNotSerializable
		}
		msg, _ := tree["error_message"].(string)
		if msg == "" {
			msg = "DuckDB cannot parse the query"
		}
		pe := &ParseError{Msg: msg, Offset: -1}
		switch p := tree["position"].(type) {
		case json.Number:
			if n, err := p.Int64(); err == nil {
				pe.Offset = int(n)
			}
		case string:
			if n, err := strconv.Atoi(p); err == nil {
				pe.Offset = n
			}
		}
		return nil, pe
	}
	stmts, _ := tree["statements"].([]any)
	if len(stmts) != 1 {
		return nil, fmt.Errorf("expected one SELECT statement, found %d", len(stmts))
	}
	return tree, nil
}

// Root is the statement's top query node.
func (t Tree) Root() map[string]any {
	stmts, _ := t["statements"].([]any)
	if len(stmts) == 0 {
		return nil
	}
	st, _ := stmts[0].(map[string]any)
	root, _ := st["node"].(map[string]any)
	return root
}

// Conjuncts splits a WHERE clause at its top-level ANDs.
func Conjuncts(e map[string]any) []map[string]any {
	if e["type"] == "CONJUNCTION_AND" {
		var out []map[string]any
		for _, c := range list(e, "children") {
			if m, ok := c.(map[string]any); ok {
				out = append(out, Conjuncts(m)...)
			}
		}
		return out
	}
	return []map[string]any{e}
}

// ColumnNames are a COLUMN_REF's dotted names (table qualifier included).
func ColumnNames(m map[string]any) []string {
	raw := list(m, "column_names")
	if len(raw) == 0 {
		return nil
	}
	out := make([]string, 0, len(raw))
	for _, n := range raw {
		s, _ := n.(string)
		out = append(out, s)
	}
	return out
}

func str(m map[string]any, k string) string { s, _ := m[k].(string); return s }

func list(m map[string]any, k string) []any { l, _ := m[k].([]any); return l }

func integer(x any) int {
	n, _ := x.(json.Number)
	i, _ := n.Int64()
	return int(i)
}

// location is a node's query_location, 0 where DuckDB gives none.
func location(m map[string]any) int {
	at, _ := locationOK(m)
	return at
}

// Location is a node's query_location, a byte offset in the query text;
// false where DuckDB gives none.
func Location(m map[string]any) (int, bool) { return locationOK(m) }

// locationOK is a node's query_location; false where DuckDB gives none (it
// writes the largest uint64 then).
func locationOK(m map[string]any) (int, bool) {
	n, ok := m["query_location"].(json.Number)
	if !ok {
		return 0, false
	}
	i, err := n.Int64()
	if err != nil || i < 0 || i > math.MaxInt32 {
		return 0, false
	}
	return int(i), true
}

// quoteNonFinite turns the bare NaN, Infinity and -Infinity DuckDB writes
// for non-finite DOUBLE constants (1e400) into JSON strings.
func quoteNonFinite(s string) string {
	if !strings.Contains(s, "Infinity") && !strings.Contains(s, "NaN") {
		return s
	}
	var b strings.Builder
	inString := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if inString {
			b.WriteByte(c)
			switch c {
			case '\\':
				if i+1 < len(s) {
					i++
					b.WriteByte(s[i])
				}
			case '"':
				inString = false
			}
			continue
		}
		if c == '"' {
			inString = true
			b.WriteByte(c)
			continue
		}
		matched := false
		for _, tok := range []string{"-Infinity", "Infinity", "NaN"} {
			if strings.HasPrefix(s[i:], tok) {
				b.WriteString(`"` + tok + `"`)
				i += len(tok) - 1
				matched = true
				break
			}
		}
		if !matched {
			b.WriteByte(c)
		}
	}
	return b.String()
}
