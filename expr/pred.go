package expr

import (
	"fmt"
	"strings"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/types"
)

// Pred is a bound predicate: columns resolved, literals cast to their
// column's type and encoded, NOT pushed down to the leaves. Every leaf is
// implied by the original predicate (a row for which the original is TRUE
// makes the leaf TRUE), so a unit in which a leaf cannot be TRUE can be
// skipped. A leaf marked Exact is also equivalent to the original (TRUE
// exactly when it is), which a unit needs before it can be "all match".
type Pred interface{ String() string }

// Op is a comparison.
type Op uint8

const (
	OpEq Op = iota
	OpNe
	OpLt
	OpLe
	OpGt
	OpGe
)

var opText = [...]string{"=", "<>", "<", "<=", ">", ">="}

func (o Op) String() string { return opText[o] }

// negate gives the comparison that is TRUE exactly when o is FALSE (for a
// non-NULL operand, in DuckDB's total order where NaN is the greatest).
func (o Op) negate() Op { return [...]Op{OpNe, OpEq, OpGe, OpGt, OpLe, OpLt}[o] }

// flip gives the comparison with operands swapped (c < x is x > c).
func (o Op) flip() Op { return [...]Op{OpEq, OpNe, OpGt, OpGe, OpLt, OpLe}[o] }

// Column is a column a predicate refers to.
type Column struct {
	catalog.Column
	Codec *types.Codec // nil when the type has no ordered statistics
	Name  string       // dotted path
	// Variant is set for a sub-field of a VARIANT column (v.a::INT): not
	// a column of the table, and read from variant stats only.
	Variant *VariantRef
}

// Const is TRUE or FALSE for every row (NULL folds to FALSE: a row is
// returned only when the predicate is TRUE).
type Const struct{ Value bool }

// Opaque is what the planner cannot reason about: it may match.
type Opaque struct{ Why string }

// Cmp compares a column with a value: Value is the value's encoding in the
// column's type; NaN marks the NaN value (which has no encoding).
type Cmp struct {
	Col   *Column
	Op    Op
	Value []byte
	NaN   bool
	Exact bool
}

// InSet is column IN (values); the values are encodings, sorted, distinct.
type InSet struct {
	Col    *Column
	Values [][]byte
	NaN    bool
	Exact  bool
}

// NullTest is column IS [NOT] NULL.
type NullTest struct {
	Col *Column
	Not bool
}

// Prefix is column LIKE 'p%' (Not: NOT LIKE 'p%').
type Prefix struct {
	Col    *Column
	Prefix []byte
	Not    bool
	Exact  bool
}

// IsNaN is isnan(column), or NOT isnan(column).
type IsNaN struct {
	Col *Column
	Not bool
}

// Extent is column && literal, or st_intersects_extent(column, literal),
// over a GEOMETRY column: TRUE for a row whose geometry's extent meets Box
// (borders included), never for NULL or an empty geometry.
type Extent struct {
	Col *Column
	Box types.Box
}

func (p *Extent) String() string {
	return fmt.Sprintf("%s && BOX(%g %g, %g %g)", p.Col.Name, p.Box.XMin, p.Box.YMin, p.Box.XMax, p.Box.YMax)
}

// And and Or combine predicates.
type And struct{ Args []Pred }
type Or struct{ Args []Pred }

func (p *Const) String() string {
	if p.Value {
		return "TRUE"
	}
	return "FALSE"
}
func (p *Opaque) String() string { return "MAYBE(" + p.Why + ")" }
func (p *Cmp) String() string {
	return fmt.Sprintf("%s %s %s%s", p.Col.Name, p.Op, valueText(p.Col, p.Value, p.NaN), approx(p.Exact))
}
func (p *InSet) String() string {
	parts := make([]string, 0, len(p.Values)+1)
	for _, v := range p.Values {
		parts = append(parts, valueText(p.Col, v, false))
	}
	if p.NaN {
		parts = append(parts, "nan")
	}
	return fmt.Sprintf("%s IN (%s)%s", p.Col.Name, strings.Join(parts, ", "), approx(p.Exact))
}
func (p *NullTest) String() string {
	if p.Not {
		return p.Col.Name + " IS NOT NULL"
	}
	return p.Col.Name + " IS NULL"
}
func (p *Prefix) String() string {
	not := ""
	if p.Not {
		not = "NOT "
	}
	return fmt.Sprintf("%s %sLIKE %q%%%s", p.Col.Name, not, p.Prefix, approx(p.Exact))
}
func (p *IsNaN) String() string {
	if p.Not {
		return "NOT isnan(" + p.Col.Name + ")"
	}
	return "isnan(" + p.Col.Name + ")"
}
func (p *And) String() string { return join(p.Args, " AND ") }
func (p *Or) String() string  { return join(p.Args, " OR ") }

func join(ps []Pred, sep string) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = p.String()
	}
	return "(" + strings.Join(parts, sep) + ")"
}

func approx(exact bool) string {
	if exact {
		return ""
	}
	return " [implied]"
}

func valueText(c *Column, b []byte, nan bool) string {
	if nan {
		return "nan"
	}
	if c.Codec == nil {
		return fmt.Sprintf("%x", b)
	}
	v, err := c.Codec.Decode(b)
	if err != nil {
		return fmt.Sprintf("%x", b)
	}
	return "'" + c.Codec.Format(v) + "'"
}
