package expr

import (
	"github.com/rocklake/rocklake/internal/sqllex"
	"sort"
	"strings"
)

// Building expressions without text: a caller holding another parser's
// tree (DuckDB's, on the query path) makes the same nodes Parse would make
// from that tree's SQL, through the constructors below, and binds them once.

// Unknown stands for an expression the builder could not translate (a
// CASE, a subquery, a collation). It binds to "may match", as any
// expression the planner cannot read; What names it in plans.
type Unknown struct {
	What string
	At   int
}

func (n *Unknown) Pos() int { return n.At }

// CastTo is `x::typ`: a typed literal when x is a literal, as the parser
// makes of CAST('…' AS T), else a Cast.
func CastTo(x Node, typ string, at int) Node { return castNode(x, typ, at) }

// Negate is unary minus as DuckDB folds it: the sign of an untyped number
// literal flips in place (- -3 is 3), and so does a FLOAT, DOUBLE or
// DECIMAL one's (-1.5::FLOAT is -(1.5::FLOAT): their negation is exact);
// anything else, an integer of a given type included (it can overflow),
// is a Unary.
func Negate(x Node, at int) Node {
	if l, ok := x.(*Lit); ok && l.Kind == LitNumber && (l.Type == "" || negatableType(l.Type)) {
		if t, neg := strings.CutPrefix(l.Text, "-"); neg {
			l.Text = t
		} else {
			l.Text = "-" + l.Text
		}
		l.At = at
		return l
	}
	return &Unary{Op: "-", X: x, At: at}
}

// Conjoin is the conjunction of predicates bound separately against the
// same table: its columns are the union of theirs (by id), its text their
// texts joined by AND. Nil when there are none.
func Conjoin(bs ...*Bound) *Bound {
	switch len(bs) {
	case 0:
		return nil
	case 1:
		return bs[0]
	}
	out := &Bound{}
	var texts []string
	var preds []Pred
	seen := map[int64]bool{}
	for _, b := range bs {
		texts = append(texts, b.Text)
		preds = append(preds, b.Pred)
		for _, c := range b.Columns {
			if !seen[c.ID] {
				seen[c.ID] = true
				out.Columns = append(out.Columns, c)
			}
		}
	}
	sort.Slice(out.Columns, func(i, j int) bool { return out.Columns[i].ID < out.Columns[j].ID })
	out.Text = strings.Join(texts, " AND ")
	out.Pred = simplify(&And{Args: preds})
	return out
}

// Format prints an expression as SQL that Parse reads back to the same
// nodes (positions aside); an Unknown prints as a placeholder Parse
// refuses.
func Format(n Node) string {
	var sb strings.Builder
	format(&sb, n)
	return sb.String()
}

func format(sb *strings.Builder, n Node) {
	list := func(xs []Node) {
		for i, x := range xs {
			if i > 0 {
				sb.WriteString(", ")
			}
			format(sb, x)
		}
	}
	not := func(b bool) {
		if b {
			sb.WriteString(" NOT")
		}
	}
	switch n := n.(type) {
	case *Ident:
		for i, p := range n.Parts {
			if i > 0 {
				sb.WriteByte('.')
			}
			sb.WriteString(sqllex.QuoteName(p))
		}
	case *Lit:
		var text string
		switch n.Kind {
		case LitNumber:
			text = n.Text
		case LitString:
			text = "'" + strings.ReplaceAll(n.Text, "'", "''") + "'"
		case LitBool:
			text = strings.ToUpper(n.Text)
		case LitNull:
			text = "NULL"
		}
		if n.Type != "" && n.Kind != LitNull {
			text = "CAST(" + text + " AS " + n.Type + ")"
		}
		sb.WriteString(text)
	case *Binary:
		sb.WriteByte('(')
		format(sb, n.L)
		sb.WriteString(" " + n.Op + " ")
		format(sb, n.R)
		sb.WriteByte(')')
	case *Unary:
		if n.Op == "NOT" {
			sb.WriteString("(NOT ")
		} else {
			sb.WriteString("(" + n.Op)
		}
		format(sb, n.X)
		sb.WriteByte(')')
	case *Between:
		sb.WriteByte('(')
		format(sb, n.X)
		not(n.Not)
		sb.WriteString(" BETWEEN ")
		format(sb, n.Lo)
		sb.WriteString(" AND ")
		format(sb, n.Hi)
		sb.WriteByte(')')
	case *In:
		sb.WriteByte('(')
		format(sb, n.X)
		not(n.Not)
		sb.WriteString(" IN (")
		list(n.List)
		sb.WriteString("))")
	case *IsNull:
		sb.WriteByte('(')
		format(sb, n.X)
		sb.WriteString(" IS")
		not(n.Not)
		sb.WriteString(" NULL)")
	case *Distinct:
		sb.WriteByte('(')
		format(sb, n.L)
		sb.WriteString(" IS")
		not(n.Not)
		sb.WriteString(" DISTINCT FROM ")
		format(sb, n.R)
		sb.WriteByte(')')
	case *IsBool:
		sb.WriteByte('(')
		format(sb, n.X)
		sb.WriteString(" IS")
		not(n.Not)
		if n.Value {
			sb.WriteString(" TRUE)")
		} else {
			sb.WriteString(" FALSE)")
		}
	case *Like:
		sb.WriteByte('(')
		format(sb, n.X)
		not(n.Not)
		sb.WriteString(" LIKE ")
		format(sb, n.Pattern)
		if n.Escape != nil {
			sb.WriteString(" ESCAPE ")
			format(sb, n.Escape)
		}
		sb.WriteByte(')')
	case *Call:
		if n.Name == "try_cast" && len(n.Args) == 1 {
			// The parser keeps TRY_CAST's argument and drops its type.
			sb.WriteString("TRY_CAST(")
			format(sb, n.Args[0])
			sb.WriteString(" AS VARCHAR)")
			return
		}
		if n.Name == "&&" && len(n.Args) == 2 {
			sb.WriteByte('(')
			format(sb, n.Args[0])
			sb.WriteString(" && ")
			format(sb, n.Args[1])
			sb.WriteByte(')')
			return
		}
		sb.WriteString(n.Name + "(")
		list(n.Args)
		sb.WriteByte(')')
	case *Cast:
		sb.WriteString("CAST(")
		format(sb, n.X)
		sb.WriteString(" AS " + n.Type + ")")
	case *Unknown:
		sb.WriteString("<" + n.What + ">")
	}
}
