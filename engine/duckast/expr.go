package duckast

import (
	"encoding/json"
	"math/big"
	"strconv"
	"strings"

	"github.com/rocklake/rocklake/expr"
	"github.com/rocklake/rocklake/internal/sqllex"
)

// Expr is one expression node of DuckDB's parse tree, with the fields of
// the node kinds the planner reads. Class and Type are DuckDB's
// ("COMPARISON" / "COMPARE_EQUAL", "FUNCTION" / "FUNCTION", ...).
type Expr struct {
	Class, Type string
	Alias       string // AS name, in a select list
	At          int    // byte offset in the query text; 0 where DuckDB gives none

	Children            []*Expr // CONJUNCTION, OPERATOR, FUNCTION
	Left, Right         *Expr   // COMPARISON
	Child               *Expr   // CAST, COLLATE
	Input, Lower, Upper *Expr   // BETWEEN
	ColumnNames         []string
	Value               *Constant    // CONSTANT
	CastType            *LogicalType // CAST
	TryCast             bool
	Function            *Function // FUNCTION
}

// Function is what a FUNCTION node says beyond its arguments.
type Function struct {
	Name, Schema, Catalog string
	IsOperator            bool
	// Aggregate is set for DISTINCT, FILTER, ORDER BY or export_state:
	// aggregate syntax the planner never reads.
	Aggregate bool
}

// Constant is a CONSTANT's value: Raw is the JSON value as decoded (a
// json.Number, string, bool, or {"upper","lower"} for 128-bit integers).
type Constant struct {
	Type LogicalType
	Null bool
	Raw  any
}

// LogicalType is a type as DuckDB serialises it: an id ("INTEGER",
// "TIMESTAMP WITH TIME ZONE", "DECIMAL", "LIST", ...) and what the id
// needs (width and scale, a child type, an array size, a type name).
type LogicalType struct {
	ID           string
	Width, Scale int
	Child        *LogicalType
	Size         int
	Name         string // UNBOUND/USER types
	Other        bool   // type info this package does not read (STRUCT fields, modifiers, ...)
}

// ExprOf reads an expression node of a decoded parse tree; nil for
// anything that is not one.
func ExprOf(x any) *Expr {
	m, ok := x.(map[string]any)
	if !ok {
		return nil
	}
	e := &Expr{Class: str(m, "class"), Type: str(m, "type"), Alias: str(m, "alias"), At: location(m)}
	for _, c := range list(m, "children") {
		e.Children = append(e.Children, ExprOf(c))
	}
	e.Left, e.Right, e.Child = ExprOf(m["left"]), ExprOf(m["right"]), ExprOf(m["child"])
	e.Input, e.Lower, e.Upper = ExprOf(m["input"]), ExprOf(m["lower"]), ExprOf(m["upper"])
	e.ColumnNames = ColumnNames(m)
	if v, ok := m["value"].(map[string]any); ok && e.Class == "CONSTANT" {
		c := &Constant{Raw: v["value"]}
		c.Null, _ = v["is_null"].(bool)
		if t := typeOf(v["type"]); t != nil {
			c.Type = *t
		}
		e.Value = c
	}
	e.CastType = typeOf(m["cast_type"])
	e.TryCast, _ = m["try_cast"].(bool)
	if e.Class == "FUNCTION" {
		f := &Function{Name: str(m, "function_name"), Schema: str(m, "schema"), Catalog: str(m, "catalog")}
		f.IsOperator, _ = m["is_operator"].(bool)
		distinct, _ := m["distinct"].(bool)
		export, _ := m["export_state"].(bool)
		orders := 0
		if ob, ok := m["order_bys"].(map[string]any); ok {
			orders = len(list(ob, "orders"))
		}
		f.Aggregate = distinct || export || m["filter"] != nil || orders > 0
		e.Function = f
	}
	return e
}

func typeOf(x any) *LogicalType {
	m, ok := x.(map[string]any)
	if !ok {
		return nil
	}
	t := &LogicalType{ID: str(m, "id")}
	info, ok := m["type_info"].(map[string]any)
	if !ok {
		return t
	}
	switch str(info, "type") {
	case "DECIMAL_TYPE_INFO":
		t.Width, t.Scale = integer(info["width"]), integer(info["scale"])
	case "LIST_TYPE_INFO":
		t.Child = typeOf(info["child_type"])
	case "ARRAY_TYPE_INFO":
		t.Child, t.Size = typeOf(info["child_type"]), integer(info["size"])
	case "GENERIC_TYPE_INFO":
		// GEOMETRY is a BLOB with an alias in DuckDB's tree; other aliases
		// are not read.
		if t.ID == "BLOB" && strings.EqualFold(str(info, "alias"), "GEOMETRY") {
			t.ID = "GEOMETRY"
		} else {
			t.Other = true
		}
	case "UNBOUND_TYPE_INFO", "USER_TYPE_INFO":
		t.Name = str(info, "name")
		if t.Name == "" {
			t.Name = str(info, "user_type_name")
		}
		t.Other = str(info, "catalog") != "" || str(info, "schema") != "" || len(list(info, "user_type_modifiers")) > 0
	default:
		t.Other = true
	}
	return t
}

// SQL is the type as DuckDB prints it in a CAST; false for types whose
// text this package does not build (STRUCT, MAP, UNION, ENUM, modifiers).
func (t *LogicalType) SQL() (string, bool) {
	if t == nil || t.Other || t.ID == "" {
		return "", false
	}
	switch t.ID {
	case "DECIMAL":
		return "DECIMAL(" + strconv.Itoa(t.Width) + "," + strconv.Itoa(t.Scale) + ")", true
	case "LIST":
		c, ok := t.Child.SQL()
		return c + "[]", ok
	case "ARRAY":
		c, ok := t.Child.SQL()
		return c + "[" + strconv.Itoa(t.Size) + "]", ok
	case "UNBOUND", "USER":
		if t.Name == "" {
			return "", false
		}
		return sqllex.QuoteName(t.Name), true
	case "STRUCT", "MAP", "UNION", "ENUM", "INVALID", "UNKNOWN", "ANY":
		return "", false
	}
	return t.ID, true
}

// Predicate turns a WHERE conjunct into the planner's expression: the
// nodes expr.Parse makes of the SQL DuckDB would print for it. A node kind
// the planner cannot read becomes expr.Unknown (it binds to "may match");
// ok is false when the whole conjunct is one. strip rewrites a column
// reference's names (dropping a table qualifier); nil keeps them.
func Predicate(e *Expr, strip func([]string) []string) (n expr.Node, ok bool) {
	c := converter{strip: strip}
	n = c.node(e)
	_, unknown := n.(*expr.Unknown)
	return n, !unknown
}

type converter struct{ strip func([]string) []string }

func unknown(e *Expr, what string) expr.Node {
	at := 0
	if e != nil {
		at = e.At
	}
	return &expr.Unknown{What: what, At: at}
}

var comparisonOps = map[string]string{
	"COMPARE_EQUAL": "=", "COMPARE_NOTEQUAL": "<>", "COMPARE_LESSTHAN": "<", "COMPARE_GREATERTHAN": ">",
	"COMPARE_LESSTHANOREQUALTO": "<=", "COMPARE_GREATERTHANOREQUALTO": ">=",
}

// arithmetic is the operator functions the parser reads as binary
// operators.
var arithmetic = map[string]bool{"+": true, "-": true, "*": true, "/": true, "%": true, "||": true}

func (c converter) node(e *Expr) expr.Node {
	if e == nil {
		return unknown(e, "missing expression")
	}
	switch e.Class {
	case "CONSTANT":
		return constant(e)
	case "COLUMN_REF":
		names := e.ColumnNames
		if c.strip != nil {
			names = c.strip(names)
		}
		if len(names) == 0 {
			return unknown(e, "column")
		}
		id := &expr.Ident{Parts: names, Quoted: make([]bool, len(names)), At: e.At}
		for i := range id.Quoted {
			id.Quoted[i] = true
		}
		return id
	case "COMPARISON":
		l, r := c.node(e.Left), c.node(e.Right)
		if op, ok := comparisonOps[e.Type]; ok {
			return &expr.Binary{Op: op, L: l, R: r, At: e.At}
		}
		switch e.Type {
		case "COMPARE_DISTINCT_FROM":
			return &expr.Distinct{L: l, R: r, At: e.At}
		case "COMPARE_NOT_DISTINCT_FROM":
			return &expr.Distinct{L: l, R: r, Not: true, At: e.At}
		}
	case "CONJUNCTION":
		op := map[string]string{"CONJUNCTION_AND": "AND", "CONJUNCTION_OR": "OR"}[e.Type]
		if op == "" || len(e.Children) == 0 {
			break
		}
		out := c.node(e.Children[0])
		for _, ch := range e.Children[1:] {
			out = &expr.Binary{Op: op, L: out, R: c.node(ch), At: e.At}
		}
		return out
	case "OPERATOR":
		switch e.Type {
		case "OPERATOR_NOT":
			if len(e.Children) == 1 {
				return &expr.Unary{Op: "NOT", X: c.node(e.Children[0]), At: e.At}
			}
		case "OPERATOR_IS_NULL", "OPERATOR_IS_NOT_NULL":
			if len(e.Children) == 1 {
				return &expr.IsNull{X: c.node(e.Children[0]), Not: e.Type == "OPERATOR_IS_NOT_NULL", At: e.At}
			}
		case "COMPARE_IN", "COMPARE_NOT_IN":
			if len(e.Children) >= 1 {
				in := &expr.In{X: c.node(e.Children[0]), Not: e.Type == "COMPARE_NOT_IN", At: e.At}
				for _, ch := range e.Children[1:] {
					in.List = append(in.List, c.node(ch))
				}
				return in
			}
		}
	case "BETWEEN":
		if e.Type == "COMPARE_BETWEEN" {
			return &expr.Between{X: c.node(e.Input), Lo: c.node(e.Lower), Hi: c.node(e.Upper), At: e.At}
		}
	case "CAST":
		x := c.node(e.Child)
		if e.TryCast {
			return &expr.Call{Name: "try_cast", Args: []expr.Node{x}, At: e.At}
		}
		typ, ok := e.CastType.SQL()
		if !ok {
			break
		}
		return expr.CastTo(x, typ, e.At)
	case "FUNCTION":
		return c.function(e)
	}
	return unknown(e, strings.ToLower(e.Type))
}

func (c converter) function(e *Expr) expr.Node {
	f := e.Function
	if f == nil || f.Aggregate || f.Catalog != "" {
		return unknown(e, "function")
	}
	if s := f.Schema; s != "" && !strings.EqualFold(s, "main") && !strings.EqualFold(s, "pg_catalog") {
		return unknown(e, "function "+s+"."+f.Name)
	}
	args := make([]expr.Node, len(e.Children))
	for i, ch := range e.Children {
		args[i] = c.node(ch)
	}
	name := f.Name
	if f.IsOperator {
		switch {
		case name == "-" && len(args) == 1:
			return expr.Negate(args[0], e.At)
		case name == "+" && len(args) == 1:
			return args[0]
		case arithmetic[name] && len(args) == 2:
			return &expr.Binary{Op: name, L: args[0], R: args[1], At: e.At}
		case name == "&&" && len(args) == 2:
			return &expr.Call{Name: "&&", Args: args, At: e.At}
		case (name == "~~" || name == "!~~") && len(args) == 2:
			return &expr.Like{X: args[0], Pattern: args[1], Not: name == "!~~", At: e.At}
		case (name == "~~*" || name == "!~~*") && len(args) == 2:
			var n expr.Node = &expr.Call{Name: "ilike", Args: args, At: e.At}
			if name == "!~~*" {
				n = &expr.Unary{Op: "NOT", X: n, At: e.At}
			}
			return n
		}
		return unknown(e, "operator "+name)
	}
	name = strings.ToLower(name)
	if (name == "like_escape" || name == "not_like_escape") && len(args) == 3 {
		return &expr.Like{X: args[0], Pattern: args[1], Escape: args[2], Not: name == "not_like_escape", At: e.At}
	}
	return &expr.Call{Name: name, Args: args, At: e.At}
}

// constant is a literal as DuckDB prints it: integers and decimals as
// numbers (a decimal's digits placed by its scale), a DOUBLE as a string
// cast to DOUBLE (DuckDB prints 1e3 as 1000.0, which would read as an
// exact decimal), text as a string.
func constant(e *Expr) expr.Node {
	v := e.Value
	if v == nil {
		return unknown(e, "constant")
	}
	if v.Null {
		return &expr.Lit{Kind: expr.LitNull, At: e.At}
	}
	switch v.Type.ID {
	case "BOOLEAN":
		if b, ok := v.Raw.(bool); ok {
			return &expr.Lit{Kind: expr.LitBool, Text: strconv.FormatBool(b), At: e.At}
		}
	case "VARCHAR":
		if s, ok := v.Raw.(string); ok {
			return &expr.Lit{Kind: expr.LitString, Text: s, At: e.At}
		}
	case "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "HUGEINT", "UHUGEINT":
		if z, ok := integerValue(v.Raw, v.Type.ID == "UHUGEINT"); ok {
			return &expr.Lit{Kind: expr.LitNumber, Text: z.String(), At: e.At}
		}
	case "DECIMAL":
		if z, ok := integerValue(v.Raw, false); ok {
			return &expr.Lit{Kind: expr.LitNumber, Text: decimalText(z, v.Type.Width, v.Type.Scale), At: e.At}
		}
	case "DOUBLE", "FLOAT":
		var text string
		switch x := v.Raw.(type) {
		case json.Number:
			text = x.String()
		case string: // NaN, Infinity, -Infinity, quoted on decoding
			text = x
		}
		if text != "" {
			return &expr.Lit{Kind: expr.LitString, Text: text, Type: v.Type.ID, At: e.At}
		}
	}
	return unknown(e, "constant of type "+v.Type.ID)
}

// integerValue reads an integer: a JSON number, or a 128-bit one as
// {"upper": high 64 bits (signed unless unsigned), "lower": low 64 bits}.
func integerValue(x any, unsigned bool) (*big.Int, bool) {
	switch x := x.(type) {
	case json.Number:
		z, ok := new(big.Int).SetString(x.String(), 10)
		return z, ok
	case map[string]any:
		up, ok1 := x["upper"].(json.Number)
		lo, ok2 := x["lower"].(json.Number)
		if !ok1 || !ok2 {
			return nil, false
		}
		hi, okh := new(big.Int).SetString(up.String(), 10)
		low, okl := new(big.Int).SetString(lo.String(), 10)
		if !okh || !okl || low.Sign() < 0 || (unsigned && hi.Sign() < 0) {
			return nil, false
		}
		return hi.Lsh(hi, 64).Add(hi, low), true
	}
	return nil, false
}

// decimalText places a decimal's digits as DuckDB prints them: the scale's
// digits after the point, and no leading 0 when the width has no integer
// digit (.5 is DECIMAL(1,1)).
func decimalText(z *big.Int, width, scale int) string {
	if scale <= 0 {
		return z.String()
	}
	sign := ""
	if z.Sign() < 0 {
		sign = "-"
	}
	digits := new(big.Int).Abs(z).String()
	for len(digits) < scale {
		digits = "0" + digits
	}
	whole, frac := digits[:len(digits)-scale], digits[len(digits)-scale:]
	if whole == "" && width > scale {
		whole = "0"
	}
	return sign + whole + "." + frac
}
