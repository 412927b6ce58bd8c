package server

import (
	"context"
	"regexp"
	"strings"

	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/engine/duckast"
	"github.com/rocklake/rocklake/internal/sqllex"
)

// A query's answer columns are named by DuckDB: an unaliased expression
// after its text ("count_star()", "(id + 1)", "CAST(id AS INTEGER)").
// PostgreSQL names them after what they are (FigureColname in its
// parser): a function call after the function ("count"), a cast after
// what it casts or else the type ("int4"), CASE "case", and anything else
// "?column?". Clients key rows by these names (pandas, JDBC's
// getColumnLabel), so the server names columns as PostgreSQL would, from
// the parse tree of the client's own text; an alias is never renamed.

// plainColumn is a name DuckDB gives a column reference or an alias, or
// PostgreSQL would give anyway: a query whose columns all look so is not
// parsed again.
var plainColumn = regexp.MustCompile(`^[a-z_][a-z0-9_$]*$`)

// pgNames are the names PostgreSQL gives the answer columns of query, or
// nil where they cannot be told (DuckDB's names then stand): a statement
// DuckDB's parser does not serialise, or a select list whose stars leave
// positions unknown.
func (ss *pgSession) pgNames(query string, cols []engine.Column) []string {
	parse := false
	seen := make(map[string]bool, len(cols))
	for _, c := range cols {
		seen[c.Name] = true
	}
	for _, c := range cols {
		if !plainColumn.MatchString(c.Name) || c.Name == "true" || c.Name == "false" {
			parse = true
			break
		}
		// DuckDB numbers a repeated name: "count", "count_1".
		if i := strings.LastIndexByte(c.Name, '_'); i > 0 && seen[c.Name[:i]] && strings.Trim(c.Name[i+1:], "0123456789") == "" {
			parse = true
			break
		}
	}
	if !parse {
		return nil
	}
	tree, err := ss.s.lake.Engine().Parse(context.Background(), query)
	if err != nil || tree == nil {
		return nil
	}
	return pgSelectNames(tree.Root(), len(cols), sqllex.Mask(query))
}

// pgSelectNames names the n columns of a query node's select list (the
// first SELECT of a set operation, as PostgreSQL does); "" keeps DuckDB's
// name (what a star expands to).
func pgSelectNames(node map[string]any, n int, masked string) []string {
	nm := namer{masked}
	for node != nil && node["type"] == "SET_OPERATION_NODE" {
		if t, _ := node["setop_type"].(string); strings.Contains(t, "BY_NAME") {
			return nil // UNION BY NAME: columns the first SELECT lacks come after its own
		}
		node, _ = node["left"].(map[string]any)
	}
	if node == nil || node["type"] != "SELECT_NODE" {
		return nil
	}
	items, _ := node["select_list"].([]any)
	out := make([]string, n)
	star := -1
	for i, it := range items {
		e, _ := it.(map[string]any)
		if e == nil {
			return nil
		}
		if e["class"] == "STAR" {
			if star >= 0 {
				return nil // positions between two stars are unknown
			}
			star = i
			continue
		}
		// An item that may stand for several columns: a star within it
		// (COLUMNS(...)::VARCHAR, s.*), or an unnest of a struct.
		if duckast.Any(e, func(m map[string]any) bool {
			if m["class"] == "STAR" {
				return true
			}
			f, _ := m["function_name"].(string)
			return m["class"] == "FUNCTION" && (strings.EqualFold(f, "unnest") || strings.EqualFold(f, "unlist"))
		}) {
			return nil
		}
		pos := i
		if star >= 0 {
			// After a star, counted from the end.
			pos = n - (len(items) - i)
		}
		if pos < 0 || pos >= n {
			return nil
		}
		if alias, _ := e["alias"].(string); alias != "" {
			// As written: DuckDB numbers a repeated name ("count_1"),
			// PostgreSQL repeats it.
			out[pos] = alias
		} else {
			out[pos], _ = nm.name(e)
		}
	}
	if star < 0 && len(items) != n {
		return nil
	}
	return out
}

// namer names expressions of one query, whose text (sqllex.Mask'ed) some
// names need.
type namer struct{ masked string }

// isBoolKeyword says a cast's text is the keyword TRUE or FALSE (DuckDB
// gives such a cast no location of its own; its 't' or 'f' has TRUE's).
func (nm namer) isBoolKeyword(e map[string]any) bool {
	if t, _ := e["cast_type"].(map[string]any); t == nil || t["id"] != "BOOLEAN" {
		return false
	}
	if _, ok := duckast.Location(e); ok {
		return false
	}
	child, _ := e["child"].(map[string]any)
	if child == nil || child["class"] != "CONSTANT" {
		return false
	}
	i, ok := duckast.Location(child)
	if !ok || i >= len(nm.masked) {
		return false
	}
	end := i
	for end < len(nm.masked) && sqllex.IsNamePart(nm.masked[end]) {
		end++
	}
	w := strings.ToLower(nm.masked[i:end])
	return w == "true" || w == "false"
}

// castType is the first word of the type a cast expression's text names
// (x::text, CAST(x AS text)), lowercased; "" when the text does not say.
func (nm namer) castType(e map[string]any) string {
	i, ok := duckast.Location(e)
	q := nm.masked
	if !ok || i >= len(q) {
		return ""
	}
	word := func(at int) string {
		at = sqllex.SkipSpace(q, at)
		end := at
		for end < len(q) && sqllex.IsNamePart(q[end]) {
			end++
		}
		return strings.ToLower(q[at:end])
	}
	if strings.HasPrefix(q[i:], "::") {
		return word(i + 2)
	}
	// CAST( or TRY_CAST(: the type follows the last AS at its depth.
	open := strings.IndexByte(q[i:], '(')
	if open < 0 {
		return ""
	}
	depth, as := 0, -1
	for k := i + open; k < len(q); k++ {
		switch c := q[k]; {
		case c == '(':
			depth++
		case c == ')':
			depth--
			if depth == 0 {
				if as < 0 {
					return ""
				}
				return word(as + 2)
			}
		case depth == 1 && (c == 'a' || c == 'A') && k+2 <= len(q) && strings.EqualFold(q[k:k+2], "as") &&
			!sqllex.IsNamePart(q[k-1]) && (k+2 == len(q) || !sqllex.IsNamePart(q[k+2])):
			as = k
		}
	}
	return ""
}

// name is the name PostgreSQL gives an unaliased expression, with its
// strength as PostgreSQL weighs it: 2 for a name taken from a column or a
// function, 1 for a fallback (CASE, a cast's type), 0 for none
// ("?column?").
func (nm namer) name(e map[string]any) (string, int) {
	switch e["class"] {
	case "COLUMN_REF":
		names, _ := e["column_names"].([]any)
		if len(names) > 0 {
			if s, ok := names[len(names)-1].(string); ok {
				return s, 2
			}
		}
	case "FUNCTION", "WINDOW", "AGGREGATE":
		if op, _ := e["is_operator"].(bool); op {
			break
		}
		name, _ := e["function_name"].(string)
		switch name {
		case "":
			break
		case "count_star":
			return "count", 2
		case "list_value":
			return "array", 2
		default:
			return name, 2
		}
	case "CAST":
		if nm.isBoolKeyword(e) {
			// DuckDB's parser reads TRUE as a cast of 't' to BOOLEAN;
			// to PostgreSQL (15) it is a constant.
			break
		}
		child, _ := e["child"].(map[string]any)
		if name, strength := nm.name(child); strength > 1 {
			return name, strength
		}
		if t, ok := e["cast_type"].(map[string]any); ok {
			if id, _ := t["id"].(string); id != "" {
				if id == "VARCHAR" {
					// DuckDB reads TEXT and VARCHAR alike; PostgreSQL
					// names the cast after the word written.
					if w := nm.castType(e); w == "text" || w == "string" {
						return "text", 1
					}
					return "varchar", 1
				}
				return pgTypeName(id), 1
			}
		}
	case "CASE":
		return "case", 1
	case "COLLATE":
		child, _ := e["child"].(map[string]any)
		return nm.name(child)
	case "OPERATOR":
		children, _ := e["children"].([]any)
		switch e["type"] {
		case "OPERATOR_COALESCE":
			return "coalesce", 2
		case "ARRAY_CONSTRUCTOR":
			return "array", 2
		case "ARRAY_EXTRACT", "ARRAY_SLICE":
			// A subscript names what it subscripts.
			if len(children) > 0 {
				child, _ := children[0].(map[string]any)
				return nm.name(child)
			}
		case "STRUCT_EXTRACT":
			// A field names itself.
			if len(children) > 1 {
				if k, _ := children[1].(map[string]any); k != nil {
					if v, _ := k["value"].(map[string]any); v != nil {
						if f, ok := v["value"].(string); ok {
							return f, 2
						}
					}
				}
			}
		}
	case "SUBQUERY":
		switch e["subquery_type"] {
		case "EXISTS":
			return "exists", 2
		case "SCALAR":
			sub, _ := e["subquery"].(map[string]any)
			node, _ := sub["node"].(map[string]any)
			for node != nil && node["type"] == "SET_OPERATION_NODE" {
				node, _ = node["left"].(map[string]any)
			}
			if node == nil {
				break
			}
			items, _ := node["select_list"].([]any)
			if len(items) == 0 {
				break
			}
			first, _ := items[0].(map[string]any)
			if first == nil || first["class"] == "STAR" {
				break
			}
			// The subquery's column's name, whatever it is: PostgreSQL
			// takes it as strong as a column's, "?column?" included.
			if alias, _ := first["alias"].(string); alias != "" {
				return alias, 2
			}
			name, _ := nm.name(first)
			return name, 2
		}
	}
	return "?column?", 0
}

// pgTypeName is the name PostgreSQL gives a cast to a type DuckDB names
// id: PostgreSQL's own name of the type.
func pgTypeName(id string) string {
	switch strings.ToUpper(id) {
	case "BOOLEAN":
		return "bool"
	case "SMALLINT":
		return "int2"
	case "INTEGER":
		return "int4"
	case "BIGINT":
		return "int8"
	case "FLOAT":
		return "float4"
	case "DOUBLE":
		return "float8"
	case "DECIMAL":
		return "numeric"
	case "VARCHAR":
		return "text"
	case "BLOB":
		return "bytea"
	case "TIMESTAMP WITH TIME ZONE":
		return "timestamptz"
	case "TIME WITH TIME ZONE":
		return "timetz"
	}
	return strings.ToLower(id)
}
