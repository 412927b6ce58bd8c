package iceberg

import (
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	ig "github.com/apache/iceberg-go"
	"github.com/google/uuid"

	"github.com/rocklake/rocklake/types"
)

// Filter is a client's Iceberg filter as a rocklake predicate.
type Filter struct {
	// Predicate is a WHERE clause in DuckDB syntax that keeps every row the
	// filter keeps, under Iceberg's semantics and DuckDB's both: what
	// planning with it skips holds no row the client wants.
	Predicate string
	// Untranslated counts the filter's terms kept as "true" (unpruned)
	// because rocklake cannot say them exactly.
	Untranslated int
}

// TranslateFilter binds an Iceberg expression (REST JSON, or nil for none)
// to the table's Iceberg schema and writes it as a predicate for
// rocklake's planner. A term it cannot write exactly becomes true, which
// only keeps more: NOT is pushed to the leaves first (iceberg-go's
// RewriteNotExpr), so no true ends up negated.
func TranslateFilter(s *Schema, raw []byte, caseSensitive bool) (*Filter, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return &Filter{Predicate: "true"}, nil
	}
	e, err := ig.ParseExpr(raw, s.Iceberg)
	if err != nil {
		return nil, fmt.Errorf("filter: %w", err)
	}
	return translate(s, e, caseSensitive)
}

func translate(s *Schema, e ig.BooleanExpression, caseSensitive bool) (*Filter, error) {
	b, err := ig.BindExpr(s.Iceberg, e, caseSensitive)
	if err != nil {
		return nil, fmt.Errorf("filter: %w", err)
	}
	b, err = ig.RewriteNotExpr(b)
	if err != nil {
		return nil, fmt.Errorf("filter: %w", err)
	}
	v := &sqlWriter{s: s}
	text, err := ig.VisitExpr[string](b, v)
	if err != nil {
		return nil, fmt.Errorf("filter: %w", err)
	}
	return &Filter{Predicate: text, Untranslated: v.untranslated}, nil
}

// sqlWriter writes a bound expression, NOTs already at the leaves, as SQL.
type sqlWriter struct {
	s            *Schema
	untranslated int
}

func (w *sqlWriter) VisitTrue() string            { return "true" }
func (w *sqlWriter) VisitFalse() string           { return "false" }
func (w *sqlWriter) VisitNot(child string) string { return "true" } // not reached after RewriteNotExpr; true is sound
func (w *sqlWriter) VisitAnd(l, r string) string  { return "(" + l + " AND " + r + ")" }
func (w *sqlWriter) VisitOr(l, r string) string   { return "(" + l + " OR " + r + ")" }
func (w *sqlWriter) VisitUnbound(ig.UnboundPredicate) string {
	w.untranslated++
	return "true"
}

func (w *sqlWriter) VisitBound(p ig.BoundPredicate) string {
	return ig.VisitBoundPredicate[string](p, w)
}

// column is the SQL for a bound term, and its type, or ok false when the
// term is not a plain column rocklake prunes on: a transform, or a field
// inside a list or map.
func (w *sqlWriter) column(t ig.BoundTerm) (sql string, typ types.Type, ok bool) {
	ref, isRef := t.(ig.BoundReference)
	if !isRef {
		return "", types.Type{}, false
	}
	id := ref.Field().ID
	c, found := w.s.byID[id]
	if !found {
		return "", types.Type{}, false
	}
	path, within := w.s.structPath(id)
	if !within {
		return "", types.Type{}, false
	}
	parts := make([]string, len(path))
	for i, p := range path {
		parts[i] = quoteIdent(p)
	}
	return strings.Join(parts, "."), c.Type, true
}

func (w *sqlWriter) leaf(t ig.BoundTerm, f func(col string, typ types.Type) (string, bool)) string {
	col, typ, ok := w.column(t)
	if ok {
		if s, ok := f(col, typ); ok {
			return s
		}
	}
	w.untranslated++
	return "true"
}

func (w *sqlWriter) compare(t ig.BoundTerm, op string, l ig.Literal) string {
	return w.leaf(t, func(col string, typ types.Type) (string, bool) {
		if !ordered(typ) && op != "=" {
			return "", false
		}
		lit, zero, ok := literal(l, typ)
		if !ok {
			return "", false
		}
		// Java's Iceberg orders -0.0 below +0.0 (Double.compare), DuckDB
		// holds them equal: widen a strict comparison with a zero so that
		// either reading keeps the row.
		if zero {
			switch op {
			case "<":
				op = "<="
			case ">":
				op = ">="
			}
		}
		// NULL fails every comparison, in SQL and in Iceberg, whose binder
		// pushes a NOT into its comparison before evaluating (NOT (x > c)
		// is x <= c, false for NULL); NaN fails < <= = in both, and passes
		// > >= in DuckDB, more than in Iceberg: either way every row an
		// Iceberg reader keeps is kept.
		return col + " " + op + " " + lit, true
	})
}

func (w *sqlWriter) VisitEqual(t ig.BoundTerm, l ig.Literal) string { return w.compare(t, "=", l) }
func (w *sqlWriter) VisitLess(t ig.BoundTerm, l ig.Literal) string  { return w.compare(t, "<", l) }
func (w *sqlWriter) VisitLessEqual(t ig.BoundTerm, l ig.Literal) string {
	return w.compare(t, "<=", l)
}
func (w *sqlWriter) VisitGreater(t ig.BoundTerm, l ig.Literal) string { return w.compare(t, ">", l) }
func (w *sqlWriter) VisitGreaterEqual(t ig.BoundTerm, l ig.Literal) string {
	return w.compare(t, ">=", l)
}

// The negative predicates keep NULL rows: an Iceberg evaluator may read
// not-equal, not-in and not-starts-with of NULL as true (the negation of
// false), where SQL says NULL.
func (w *sqlWriter) VisitNotEqual(t ig.BoundTerm, l ig.Literal) string {
	return w.leaf(t, func(col string, typ types.Type) (string, bool) {
		lit, _, ok := literal(l, typ)
		if !ok {
			return "", false
		}
		return "(" + col + " IS NULL OR " + col + " <> " + lit + ")", true
	})
}

func (w *sqlWriter) set(t ig.BoundTerm, lits ig.Set[ig.Literal], negate bool) string {
	return w.leaf(t, func(col string, typ types.Type) (string, bool) {
		vals := lits.Members()
		if len(vals) == 0 {
			return "", false
		}
		texts := make([]string, 0, len(vals))
		for _, l := range vals {
			s, _, ok := literal(l, typ)
			if !ok {
				return "", false
			}
			texts = append(texts, s)
		}
		in := col + " IN (" + strings.Join(texts, ", ") + ")"
		if negate {
			return "(" + col + " IS NULL OR " + col + " NOT IN (" + strings.Join(texts, ", ") + "))", true
		}
		return in, true
	})
}

func (w *sqlWriter) VisitIn(t ig.BoundTerm, s ig.Set[ig.Literal]) string { return w.set(t, s, false) }
func (w *sqlWriter) VisitNotIn(t ig.BoundTerm, s ig.Set[ig.Literal]) string {
	return w.set(t, s, true)
}

func (w *sqlWriter) VisitIsNull(t ig.BoundTerm) string {
	return w.leaf(t, func(col string, _ types.Type) (string, bool) { return col + " IS NULL", true })
}

func (w *sqlWriter) VisitNotNull(t ig.BoundTerm) string {
	return w.leaf(t, func(col string, _ types.Type) (string, bool) { return col + " IS NOT NULL", true })
}

func (w *sqlWriter) VisitIsNan(t ig.BoundTerm) string {
	return w.leaf(t, func(col string, typ types.Type) (string, bool) {
		if typ.Kind != types.KindFloat && typ.Kind != types.KindDouble {
			return "", false
		}
		return "isnan(" + col + ")", true
	})
}

func (w *sqlWriter) VisitNotNan(t ig.BoundTerm) string {
	return w.leaf(t, func(col string, typ types.Type) (string, bool) {
		if typ.Kind != types.KindFloat && typ.Kind != types.KindDouble {
			return "", false
		}
		return "(" + col + " IS NULL OR NOT isnan(" + col + "))", true
	})
}

func (w *sqlWriter) VisitStartsWith(t ig.BoundTerm, l ig.Literal) string {
	return w.leaf(t, func(col string, typ types.Type) (string, bool) {
		p, ok := l.(ig.StringLiteral)
		if !ok || typ.Kind != types.KindVarchar {
			return "", false
		}
		return "starts_with(" + col + ", " + quoteString(string(p)) + ")", true
	})
}

func (w *sqlWriter) VisitNotStartsWith(t ig.BoundTerm, l ig.Literal) string {
	return w.leaf(t, func(col string, typ types.Type) (string, bool) {
		p, ok := l.(ig.StringLiteral)
		if !ok || typ.Kind != types.KindVarchar {
			return "", false
		}
		return "(" + col + " IS NULL OR NOT starts_with(" + col + ", " + quoteString(string(p)) + "))", true
	})
}

// literal writes a bound literal (already in the field's Iceberg type) as
// DuckDB SQL of that exact value; zero reports a float zero of either
// sign.
func literal(l ig.Literal, col types.Type) (text string, zero, ok bool) {
	switch v := l.(type) {
	case ig.BoolLiteral:
		return strconv.FormatBool(bool(v)), false, true
	case ig.Int32Literal:
		return strconv.FormatInt(int64(v), 10), false, true
	case ig.Int64Literal:
		return strconv.FormatInt(int64(v), 10), false, true
	case ig.Float32Literal:
		f := float64(v)
		if math.IsNaN(f) {
			return "", false, false
		}
		return "CAST('" + strconv.FormatFloat(f, 'g', -1, 32) + "' AS FLOAT)", f == 0, true
	case ig.Float64Literal:
		f := float64(v)
		if math.IsNaN(f) {
			return "", false, false
		}
		return "CAST('" + strconv.FormatFloat(f, 'g', -1, 64) + "' AS DOUBLE)", f == 0, true
	case ig.DecimalLiteral:
		d := ig.Decimal(v)
		return fmt.Sprintf("CAST('%s' AS DECIMAL(38,%d))", d.String(), d.Scale), false, true
	case ig.DateLiteral:
		return "DATE '" + ig.Date(v).ToTime().Format("2006-01-02") + "'", false, true
	case ig.TimeLiteral:
		us := int64(v)
		if us < 0 || us >= 86400*1e6 {
			return "", false, false
		}
		t := time.UnixMicro(us).UTC()
		return "TIME '" + t.Format("15:04:05.000000") + "'", false, true
	case ig.TimestampLiteral:
		t := ig.Timestamp(v).ToTime()
		if t.Year() < 1 || t.Year() > 9999 {
			return "", false, false
		}
		text := t.Format("2006-01-02 15:04:05.000000")
		if col.Kind == types.KindTimestampTZ {
			return "TIMESTAMPTZ '" + text + "+00'", false, true
		}
		return "TIMESTAMP '" + text + "'", false, true
	case ig.StringLiteral:
		if col.Kind == types.KindBlob {
			return "", false, false
		}
		return quoteString(string(v)), false, true
	case ig.UUIDLiteral:
		return "UUID '" + uuid.UUID(v).String() + "'", false, true
	case ig.BinaryLiteral:
		return blob([]byte(v)), false, true
	case ig.FixedLiteral:
		return blob([]byte(v)), false, true
	}
	return "", false, false
}

func blob(b []byte) string {
	var sb strings.Builder
	sb.WriteString("'")
	h := hex.EncodeToString(b)
	for i := 0; i < len(h); i += 2 {
		sb.WriteString(`\x`)
		sb.WriteString(h[i : i+2])
	}
	sb.WriteString("'::BLOB")
	return sb.String()
}

func quoteString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// ordered says whether Iceberg and DuckDB order the type's values alike,
// so that range comparisons mean the same; equality holds for all types
// mapped. UUIDs compare as signed longs in Java's Iceberg and as unsigned
// bytes in DuckDB; JSON compares as JSON in DuckDB.
func ordered(t types.Type) bool {
	switch t.Kind {
	case types.KindUUID, types.KindJSON:
		return false
	}
	return true
}
