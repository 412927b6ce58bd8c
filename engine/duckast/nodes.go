package duckast

import "sort"

// Select is a SELECT_NODE, with the parts the engine reads.
type Select struct {
	Node       map[string]any
	FromTable  map[string]any // a table ref
	Where      map[string]any // nil without WHERE
	SelectList []*Expr
	Sampled    bool // USING SAMPLE
	// Plain is set when the SELECT has no GROUP BY (grouping sets, ROLLUP
	// and CUBE included), HAVING, QUALIFY, modifiers (ORDER BY, LIMIT,
	// DISTINCT), WITH or anything this package does not read: its rows are
	// its FROM's rows through its WHERE.
	Plain bool
}

// SelectOf reads a SELECT_NODE; false for any other node.
func SelectOf(x any) (*Select, bool) {
	m, ok := x.(map[string]any)
	if !ok || IsExpression(m) || m["type"] != "SELECT_NODE" {
		return nil, false
	}
	s := &Select{Node: m, Sampled: m["sample"] != nil}
	s.FromTable, _ = m["from_table"].(map[string]any)
	s.Where, _ = m["where_clause"].(map[string]any)
	for _, it := range list(m, "select_list") {
		s.SelectList = append(s.SelectList, ExprOf(it))
	}
	s.Plain = plain(m)
	return s, true
}

// plain reads every key of a SELECT_NODE and holds it to the value that
// leaves the FROM's rows through the WHERE as they are. A key this package
// does not know (a later DuckDB's serialisation) makes the node not plain:
// a construct unread must never let statistics answer for it. Grouping
// sets are their own key (group_sets): GROUPING SETS ((), ()) has no group
// expressions yet returns one row per set.
func plain(m map[string]any) bool {
	for k, v := range m {
		switch k {
		case "type", "select_list", "from_table", "where_clause":
		case "group_expressions", "group_sets", "modifiers":
			if !emptyList(v) {
				return false
			}
		case "having", "qualify", "sample":
			if v != nil {
				return false
			}
		case "aggregate_handling":
			if v != "STANDARD_HANDLING" {
				return false
			}
		case "cte_map":
			if len(CTEs(m)) != 0 {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// TableRef is an item of a FROM clause.
type TableRef struct {
	Node map[string]any
	// Type is DuckDB's: BASE_TABLE, JOIN, SUBQUERY, TABLE_FUNCTION,
	// EXPRESSION_LIST, PIVOT, ...
	Type  string
	Alias string
	// BASE_TABLE: the name as written, and where.
	TableName, SchemaName, CatalogName string
	At                                 int
	HasAt                              bool
	Sampled                            bool // TABLESAMPLE
	RenamesColumns                     bool // t AS s(a, b)
	// Travel is a BASE_TABLE's AT clause (t AT (VERSION => 3), AT
	// (TIMESTAMP => ts)): its unit, VERSION or TIMESTAMP, and expression;
	// nil without one.
	Travel *Travel
	// JOIN: both sides (table refs), REGULAR / NATURAL / CROSS / ASOF /
	// POSITIONAL, and INNER / LEFT / RIGHT / OUTER / SEMI / ANTI.
	Left, Right       map[string]any
	RefType, JoinType string
	// TABLE_FUNCTION: the function's name.
	FunctionName string
}

// TableRefOf reads a table ref; false for expressions and query nodes.
func TableRefOf(x any) (*TableRef, bool) {
	m, ok := x.(map[string]any)
	if !ok || IsExpression(m) {
		return nil, false
	}
	t := &TableRef{Node: m, Type: str(m, "type")}
	switch t.Type {
	case "BASE_TABLE", "SUBQUERY", "TABLE_FUNCTION", "EXPRESSION_LIST", "PIVOT", "JOIN", "COLUMN_DATA", "SHOW_REF", "DELIM_GET":
	default:
		return nil, false
	}
	t.Alias, t.TableName = str(m, "alias"), str(m, "table_name")
	t.SchemaName, t.CatalogName = str(m, "schema_name"), str(m, "catalog_name")
	t.At, t.HasAt = locationOK(m)
	t.Sampled = m["sample"] != nil
	t.RenamesColumns = !emptyList(m["column_name_alias"])
	if ac, ok := m["at_clause"].(map[string]any); ok {
		t.Travel = &Travel{Unit: str(ac, "unit"), Expr: ExprOf(ac["expr"])}
	}
	t.Left, _ = m["left"].(map[string]any)
	t.Right, _ = m["right"].(map[string]any)
	t.RefType, t.JoinType = str(m, "ref_type"), str(m, "join_type")
	if f, ok := m["function"].(map[string]any); ok {
		t.FunctionName = str(f, "function_name")
	}
	return t, true
}

// Travel is a table reference's AT clause.
type Travel struct {
	Unit string // VERSION or TIMESTAMP, as DuckDB spells it
	Expr *Expr
}

// CTE is one WITH entry.
type CTE struct {
	Name string
	Body any // the CTE's query node
}

// CTEs lists the WITH entries a node defines, in order.
func CTEs(m map[string]any) []CTE {
	cm, ok := m["cte_map"].(map[string]any)
	if !ok {
		return nil
	}
	var out []CTE
	for _, e := range list(cm, "map") {
		if em, ok := e.(map[string]any); ok {
			out = append(out, CTE{Name: str(em, "key"), Body: em["value"]})
		}
	}
	return out
}

// Class is an expression node's class (COLUMN_REF, SUBQUERY, ...); "" for
// other nodes.
func Class(m map[string]any) string { return str(m, "class") }

// IsExpression reports whether a node is an expression (it has a class).
func IsExpression(m map[string]any) bool { _, ok := m["class"]; return ok }

// Children lists a node's values other than its WITH entries (read
// through CTEs), in key order so that walks are deterministic.
func Children(m map[string]any) []any {
	keys := make([]string, 0, len(m))
	for k := range m {
		if k != "cte_map" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	out := make([]any, len(keys))
	for i, k := range keys {
		out[i] = m[k]
	}
	return out
}

func emptyList(x any) bool {
	if x == nil {
		return true
	}
	l, ok := x.([]any)
	return ok && len(l) == 0
}

// Any says whether pred holds for x or any map below it, x being a
// decoded parse tree (maps and slices of them).
func Any(x any, pred func(map[string]any) bool) bool {
	switch v := x.(type) {
	case map[string]any:
		if pred(v) {
			return true
		}
		for _, c := range v {
			if Any(c, pred) {
				return true
			}
		}
	case []any:
		for _, c := range v {
			if Any(c, pred) {
				return true
			}
		}
	}
	return false
}
