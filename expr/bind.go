package expr

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/types"
)

// BindError reports a predicate that names something that is not there or
// a literal that cannot be cast, with the byte offset.
type BindError struct {
	Text string
	Pos  int
	Msg  string
	// Err is the sentinel the failure is an instance of (ErrNoSuchColumn),
	// nil for others; Unwrap hands it to errors.Is.
	Err error
}

func (e *BindError) Error() string {
	return fmt.Sprintf("at offset %d: %s%s", e.Pos, e.Msg, context(e.Text, max(e.Pos, 0)))
}

// Unwrap is the sentinel the error is an instance of, if any.
func (e *BindError) Unwrap() error { return e.Err }

// ErrNoSuchColumn is wrapped by the error for an unknown column. It is
// catalog.ErrNoSuchColumn itself, so a caller tests for one sentinel
// whether the catalog or a predicate named the missing column.
var ErrNoSuchColumn = catalog.ErrNoSuchColumn

// Bound is a predicate bound to a table's columns.
type Bound struct {
	Text    string
	Pred    Pred
	Columns []*Column // the columns Pred refers to
}

// Compile parses and binds a WHERE clause against a table's columns.
func Compile(text string, cols []catalog.Column) (*Bound, error) {
	n, err := Parse(text)
	if err != nil {
		return nil, err
	}
	return Bind(n, text, cols)
}

// Bind resolves columns, casts literals as DuckDB would, folds constants and
// pushes NOT down under SQL's three-valued logic. What it cannot use
// (functions of columns, column against column) becomes Opaque, never an
// error; errors are for unknown columns and literals that cannot be cast.
func Bind(n Node, text string, cols []catalog.Column) (*Bound, error) {
	b := &binder{text: text, byPath: map[string][]catalog.Column{}, used: map[int64]*Column{}}
	for _, c := range cols {
		k := pathKey(c.Path)
		b.byPath[k] = append(b.byPath[k], c)
	}
	p, err := b.bind(b.subFields(n), false)
	if err != nil {
		return nil, err
	}
	out := &Bound{Text: text, Pred: simplify(p)}
	for _, c := range b.used {
		out.Columns = append(out.Columns, c)
	}
	sort.Slice(out.Columns, func(i, j int) bool { return out.Columns[i].ID < out.Columns[j].ID })
	return out, nil
}

type binder struct {
	text   string
	byPath map[string][]catalog.Column
	used   map[int64]*Column
	depth  int
}

func (b *binder) errf(pos int, format string, args ...any) error {
	return &BindError{Text: b.text, Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

// pathKey is the lookup key of a column path: its parts, case-folded,
// each prefixed with its length, so that a top-level column named "a.b"
// and the field b of a struct a never share a key.
func pathKey(parts []string) string {
	var sb strings.Builder
	for _, p := range parts {
		p = types.FoldIdent(p)
		sb.WriteString(strconv.Itoa(len(p)))
		sb.WriteByte(':')
		sb.WriteString(p)
	}
	return sb.String()
}

func samePath(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// column resolves a column reference: one identifier names a top-level
// column (a quoted "a.b" is one identifier), a dotted reference a struct
// field (a.b, "a"."b").
func (b *binder) column(id *Ident) (*Column, error) {
	if id.sub != nil {
		return b.subColumn(id.sub), nil
	}
	cands := b.byPath[pathKey(id.Parts)]
	var pick *catalog.Column
	switch {
	case len(cands) == 1:
		pick = &cands[0]
	case len(cands) > 1:
		// Names differing only in case: a quoted name picks exactly.
		for i := range cands {
			if samePath(cands[i].Path, id.Parts) {
				pick = &cands[i]
			}
		}
		if pick == nil {
			return nil, b.errf(id.At, "column %q is ambiguous", strings.Join(id.Parts, "."))
		}
	}
	if pick == nil {
		var names []string
		for _, cs := range b.byPath {
			if !cs[0].Parent.Known {
				names = append(names, types.FoldIdent(cs[0].Name))
			}
		}
		sort.Strings(names)
		return nil, &BindError{Text: b.text, Pos: id.At, Msg: fmt.Sprintf("%v %q (columns: %s)", ErrNoSuchColumn, strings.Join(id.Parts, "."), strings.Join(names, ", ")), Err: ErrNoSuchColumn}
	}
	if c, ok := b.used[pick.ID]; ok {
		return c, nil
	}
	c := &Column{Column: *pick, Name: strings.Join(pick.Path, ".")}
	if codec, ok := types.CodecFor(pick.Type); ok && codec.Ordered() {
		c.Codec = codec
	}
	b.used[pick.ID] = c
	return c, nil
}

// bind binds n, or its negation when neg is set (NOT pushed down).
func (b *binder) bind(n Node, neg bool) (Pred, error) {
	b.depth++
	defer func() { b.depth-- }()
	if b.depth > maxDepth {
		return nil, b.errf(n.Pos(), "predicate nested deeper than %d", maxDepth)
	}
	switch n := n.(type) {
	case *Unary:
		if n.Op == "NOT" {
			return b.bind(n.X, !neg)
		}
		return &Opaque{Why: "arithmetic"}, b.check(n)
	case *Binary:
		switch n.Op {
		case "AND", "OR":
			l, err := b.bind(n.L, neg)
			if err != nil {
				return nil, err
			}
			r, err := b.bind(n.R, neg)
			if err != nil {
				return nil, err
			}
			if (n.Op == "AND") != neg { // De Morgan
				return &And{Args: []Pred{l, r}}, nil
			}
			return &Or{Args: []Pred{l, r}}, nil
		case "=", "<>", "<", "<=", ">", ">=":
			op := map[string]Op{"=": OpEq, "<>": OpNe, "<": OpLt, "<=": OpLe, ">": OpGt, ">=": OpGe}[n.Op]
			return b.comparison(n.L, op, n.R, neg, n.At, nil)
		}
		return &Opaque{Why: "operator " + n.Op}, b.check(n)
	case *Between:
		// DuckDB compares all three in one type, the common type of the
		// column and both bounds (a string bound is cast to it).
		var ctx *cmpCtx
		if x, ok := n.X.(*Ident); ok {
			c, err := b.column(x)
			if err != nil {
				return nil, err
			}
			lc := listCtx(c, []Node{n.Lo, n.Hi})
			if lc.unknown {
				return &Opaque{Why: "BETWEEN with an expression"}, b.check(n)
			}
			ctx = &lc
		}
		// x BETWEEN a AND b is x >= a AND x <= b.
		lo, err := b.comparison(n.X, OpGe, n.Lo, false, n.At, ctx)
		if err != nil {
			return nil, err
		}
		hi, err := b.comparison(n.X, OpLe, n.Hi, false, n.At, ctx)
		if err != nil {
			return nil, err
		}
		if n.Not != neg {
			nlo, _ := b.comparison(n.X, OpLt, n.Lo, false, n.At, ctx)
			nhi, _ := b.comparison(n.X, OpGt, n.Hi, false, n.At, ctx)
			return &Or{Args: []Pred{nlo, nhi}}, nil
		}
		return &And{Args: []Pred{lo, hi}}, nil
	case *Distinct:
		return b.distinct(n, n.Not != neg)
	case *IsBool:
		return b.isBool(n, neg)
	case *In:
		return b.in(n, n.Not != neg)
	case *IsNull:
		x, ok := n.X.(*Ident)
		if !ok {
			if l, isLit := n.X.(*Lit); isLit {
				return &Const{Value: (l.Kind == LitNull) != (n.Not != neg)}, nil
			}
			return &Opaque{Why: "IS NULL of an expression"}, b.check(n.X)
		}
		c, err := b.column(x)
		if err != nil {
			return nil, err
		}
		return &NullTest{Col: c, Not: n.Not != neg}, nil
	case *Like:
		return b.like(n, n.Not != neg)
	case *Call:
		return b.call(n, neg)
	case *Ident:
		// A bare boolean column: col is col = true.
		c, err := b.column(n)
		if err != nil {
			return nil, err
		}
		if c.Variant != nil && c.Type.Kind == types.KindVariant {
			return &Opaque{Why: "VARIANT sub-field " + c.Name + " as a condition"}, nil
		}
		if c.Type.Kind != types.KindBoolean {
			return nil, b.errf(n.At, "column %q is %s, not a boolean condition", c.Name, c.Type)
		}
		return b.comparison(n, OpEq, &Lit{Kind: LitBool, Text: "true", At: n.At}, neg, n.At, nil)
	case *Lit:
		switch n.Kind {
		case LitBool:
			return &Const{Value: (n.Text == "true") != neg}, nil
		case LitNull:
			return &Const{Value: false}, nil // NULL, and NOT NULL, are never TRUE
		}
		return nil, b.errf(n.At, "a %s literal is not a condition", kindName(n.Kind))
	case *Cast:
		return &Opaque{Why: "cast of an expression"}, b.check(n.X)
	}
	return &Opaque{Why: "expression"}, nil
}

// check resolves the columns inside an opaque expression, so that unknown
// columns are still errors.
func (b *binder) check(n Node) error {
	switch n := n.(type) {
	case *Ident:
		_, err := b.column(n)
		return err
	case *Binary:
		if err := b.check(n.L); err != nil {
			return err
		}
		return b.check(n.R)
	case *Unary:
		return b.check(n.X)
	case *Call:
		for _, a := range n.Args {
			if err := b.check(a); err != nil {
				return err
			}
		}
	case *Cast:
		return b.check(n.X)
	case *Between:
		for _, x := range []Node{n.X, n.Lo, n.Hi} {
			if err := b.check(x); err != nil {
				return err
			}
		}
	case *In:
		if err := b.check(n.X); err != nil {
			return err
		}
		for _, x := range n.List {
			if err := b.check(x); err != nil {
				return err
			}
		}
	case *IsNull:
		return b.check(n.X)
	case *IsBool:
		return b.check(n.X)
	case *Distinct:
		if err := b.check(n.L); err != nil {
			return err
		}
		return b.check(n.R)
	case *Like:
		if err := b.check(n.X); err != nil {
			return err
		}
		return b.check(n.Pattern)
	}
	return nil
}

func kindName(k LitKind) string {
	return [...]string{"number", "string", "boolean", "NULL"}[k]
}

// comparison binds l op r (negated when neg). ctx, when set, is the
// common type of a list the comparison belongs to (BETWEEN, IN).
func (b *binder) comparison(l Node, op Op, r Node, neg bool, at int, ctx *cmpCtx) (Pred, error) {
	if neg {
		op = op.negate()
	}
	li, lIsCol := l.(*Ident)
	ri, rIsCol := r.(*Ident)
	ll, lIsLit := l.(*Lit)
	rl, rIsLit := r.(*Lit)
	switch {
	case lIsCol && rIsLit:
		c, err := b.column(li)
		if err != nil {
			return nil, err
		}
		return b.colCmp(c, op, rl, ctxOr(ctx, rl))
	case lIsLit && rIsCol:
		c, err := b.column(ri)
		if err != nil {
			return nil, err
		}
		return b.colCmp(c, op.flip(), ll, ctxOr(ctx, ll))
	case lIsLit && rIsLit:
		return foldLiterals(ll, op, rl), nil
	}
	if err := b.check(l); err != nil {
		return nil, err
	}
	if err := b.check(r); err != nil {
		return nil, err
	}
	return &Opaque{Why: "comparison of expressions"}, nil
}

// colCmp binds column op literal.
func (b *binder) colCmp(c *Column, op Op, l *Lit, ctx cmpCtx) (Pred, error) {
	if l.Kind == LitNull {
		return &Const{Value: false}, nil
	}
	if c.Codec == nil {
		// Still cast-check string literals? DuckDB would; rocklake cannot
		// use the column anyway.
		return &Opaque{Why: "column " + c.Name + " has no ordered statistics"}, nil
	}
	lv, ok, err := b.cast(c, l, ctx)
	if err != nil {
		return nil, err
	}
	if !ok {
		return &Opaque{Why: "literal not comparable to " + c.Name}, nil
	}
	notNull := &NullTest{Col: c, Not: true}
	switch {
	case lv.nan:
		return &Cmp{Col: c, Op: op, NaN: true, Exact: true}, nil
	case lv.below:
		// Every value of the column is above the literal.
		if op == OpNe || op == OpGt || op == OpGe {
			return notNull, nil
		}
		return &Const{Value: false}, nil
	case lv.above:
		if op == OpNe || op == OpLt || op == OpLe {
			return notNull, nil
		}
		return &Const{Value: false}, nil
	case lv.exact:
		return &Cmp{Col: c, Op: op, Value: lv.lo, Exact: true}, nil
	case !lv.ambiguous:
		// The literal lies strictly between two neighbouring values lo < r < hi
		// of the type, and the comparison is exact.
		switch op {
		case OpEq:
			return &Const{Value: false}, nil
		case OpNe:
			return notNull, nil
		case OpLt, OpLe:
			return &Cmp{Col: c, Op: OpLe, Value: lv.lo, Exact: true}, nil
		default:
			return &Cmp{Col: c, Op: OpGe, Value: lv.hi, Exact: true}, nil
		}
	}
	// Ambiguous: the literal is some value in [lo, hi]; keep every row
	// any of them could match.
	inexact := &Opaque{Why: "inexact literal"}
	switch op {
	case OpEq:
		var args []Pred
		if !lv.noLo {
			args = append(args, &Cmp{Col: c, Op: OpGe, Value: lv.lo})
		}
		if !lv.noHi {
			args = append(args, &Cmp{Col: c, Op: OpLe, Value: lv.hi})
		}
		if len(args) == 0 {
			return inexact, nil
		}
		return &And{Args: args}, nil
	case OpNe:
		return inexact, nil
	case OpLt, OpLe:
		if lv.noHi {
			return inexact, nil
		}
		return &Cmp{Col: c, Op: OpLe, Value: lv.hi}, nil
	default:
		if lv.noLo {
			return inexact, nil
		}
		return &Cmp{Col: c, Op: OpGe, Value: lv.lo}, nil
	}
}

func (b *binder) in(n *In, not bool) (Pred, error) {
	id, ok := n.X.(*Ident)
	if !ok {
		if err := b.check(n); err != nil {
			return nil, err
		}
		return &Opaque{Why: "IN of an expression"}, nil
	}
	c, err := b.column(id)
	if err != nil {
		return nil, err
	}
	// DuckDB compares the column and every item in their common type.
	ctx := listCtx(c, n.List)
	if ctx.unknown {
		return &Opaque{Why: "IN list with an expression"}, b.check(n)
	}
	if len(n.List) == 0 {
		if not {
			return &Opaque{Why: "NOT IN ()"}, nil
		}
		return &Const{Value: false}, nil
	}
	var args []Pred
	for _, item := range n.List {
		l, isLit := item.(*Lit)
		if !isLit {
			if err := b.check(item); err != nil {
				return nil, err
			}
			args = append(args, &Opaque{Why: "IN item"})
			continue
		}
		if l.Kind == LitNull {
			if not {
				// x NOT IN (..., NULL) is never TRUE.
				return &Const{Value: false}, nil
			}
			continue
		}
		op := OpEq
		if not {
			op = OpNe
		}
		p, err := b.colCmp(c, op, l, ctx)
		if err != nil {
			return nil, err
		}
		args = append(args, p)
	}
	if not {
		return &And{Args: args}, nil
	}
	return &Or{Args: args}, nil
}

func (b *binder) like(n *Like, not bool) (Pred, error) {
	id, isCol := n.X.(*Ident)
	pat, isLit := n.Pattern.(*Lit)
	if !isCol || !isLit || pat.Kind != LitString {
		if err := b.check(n); err != nil {
			return nil, err
		}
		return &Opaque{Why: "LIKE of an expression"}, nil
	}
	c, err := b.column(id)
	if err != nil {
		return nil, err
	}
	if c.Type.Kind != types.KindVarchar || c.Codec == nil {
		return &Opaque{Why: "LIKE on " + c.Type.String()}, nil
	}
	esc := byte(0)
	if n.Escape != nil {
		el, ok := n.Escape.(*Lit)
		if !ok || el.Kind != LitString || len(el.Text) != 1 {
			return nil, b.errf(n.At, "ESCAPE takes a one-character string")
		}
		esc = el.Text[0]
	}
	prefix, rest, err := likePrefix(pat.Text, esc)
	if err != nil {
		return nil, b.errf(pat.At, "%v", err)
	}
	switch {
	case rest == "" && !not:
		// No wildcard: equality.
		enc, _ := c.Codec.Encode(types.StringValue(prefix))
		return &Cmp{Col: c, Op: OpEq, Value: enc, Exact: true}, nil
	case rest == "" && not:
		enc, _ := c.Codec.Encode(types.StringValue(prefix))
		return &Cmp{Col: c, Op: OpNe, Value: enc, Exact: true}, nil
	case rest == "%":
		return &Prefix{Col: c, Prefix: []byte(prefix), Not: not, Exact: true}, nil
	case not:
		return &Opaque{Why: "NOT LIKE with inner wildcards"}, nil
	}
	return &Prefix{Col: c, Prefix: []byte(prefix), Exact: false}, nil
}

// likePrefix splits a LIKE pattern into its literal prefix (escapes
// resolved) and the rest from the first wildcard.
func likePrefix(pat string, esc byte) (prefix, rest string, err error) {
	var sb strings.Builder
	for i := 0; i < len(pat); i++ {
		c := pat[i]
		switch {
		case esc != 0 && c == esc:
			if i+1 >= len(pat) {
				return "", "", fmt.Errorf("LIKE pattern ends with the escape character")
			}
			i++
			sb.WriteByte(pat[i])
		case c == '%' || c == '_':
			rest = pat[i:]
			if strings.Trim(rest, "%") == "" {
				rest = "%"
			}
			return sb.String(), rest, nil
		default:
			sb.WriteByte(c)
		}
	}
	return sb.String(), "", nil
}

func (b *binder) call(n *Call, neg bool) (Pred, error) {
	switch n.Name {
	case "starts_with", "prefix":
		if len(n.Args) == 2 {
			id, isCol := n.Args[0].(*Ident)
			l, isLit := n.Args[1].(*Lit)
			if isCol && isLit && l.Kind == LitString {
				c, err := b.column(id)
				if err != nil {
					return nil, err
				}
				if c.Type.Kind == types.KindVarchar && c.Codec != nil {
					return &Prefix{Col: c, Prefix: []byte(l.Text), Not: neg, Exact: true}, nil
				}
			}
		}
	case "isnan":
		if len(n.Args) == 1 {
			if id, isCol := n.Args[0].(*Ident); isCol {
				c, err := b.column(id)
				if err != nil {
					return nil, err
				}
				if isFloat(c.Type.Kind) {
					return &IsNaN{Col: c, Not: neg}, nil
				}
			}
		}
	case "&&", "st_intersects_extent":
		if p, ok, err := b.extent(n, neg); ok || err != nil {
			return p, err
		}
	}
	if err := b.check(n); err != nil {
		return nil, err
	}
	return &Opaque{Why: "function " + n.Name}, nil
}

// extent binds a GEOMETRY column's extent test against a literal geometry
// written as WKT (a string, or one cast to GEOMETRY), in either order.
// Only the test itself prunes: its negation holds for rows of any extent
// (and for empty geometries), so NOT of it may match.
func (b *binder) extent(n *Call, neg bool) (Pred, bool, error) {
	if len(n.Args) != 2 {
		return nil, false, nil
	}
	id, isCol := n.Args[0].(*Ident)
	l, isLit := n.Args[1].(*Lit)
	if !isCol || !isLit {
		id, isCol = n.Args[1].(*Ident)
		l, isLit = n.Args[0].(*Lit)
	}
	if !isCol || !isLit || l.Kind != LitString || (l.Type != "" && !strings.EqualFold(l.Type, "GEOMETRY")) {
		return nil, false, nil
	}
	c, err := b.column(id)
	if err != nil {
		return nil, false, err
	}
	if c.Type.Kind != types.KindGeometry || neg {
		return nil, false, nil
	}
	e, ok := types.WKTExtent(l.Text)
	switch {
	case !ok:
		return &Opaque{Why: "geometry literal " + clip(l.Text)}, true, nil
	case e.Empty:
		// DuckDB: no extent meets an empty geometry's.
		return &Const{Value: false}, true, nil
	}
	// One step outward, in case a coordinate's text rounds differently.
	bx := e.Box
	bx.XMin, bx.YMin = math.Nextafter(bx.XMin, math.Inf(-1)), math.Nextafter(bx.YMin, math.Inf(-1))
	bx.XMax, bx.YMax = math.Nextafter(bx.XMax, math.Inf(1)), math.Nextafter(bx.YMax, math.Inf(1))
	return &Extent{Col: c, Box: bx}, true, nil
}

// simplify folds constants through AND and OR and flattens them.
func simplify(p Pred) Pred {
	switch p := p.(type) {
	case *And:
		var args []Pred
		for _, a := range p.Args {
			a = simplify(a)
			switch a := a.(type) {
			case *Const:
				if !a.Value {
					return &Const{Value: false}
				}
				continue
			case *And:
				args = append(args, a.Args...)
				continue
			}
			args = append(args, a)
		}
		switch len(args) {
		case 0:
			return &Const{Value: true}
		case 1:
			return args[0]
		}
		return &And{Args: args}
	case *Or:
		var args []Pred
		for _, a := range p.Args {
			a = simplify(a)
			switch a := a.(type) {
			case *Const:
				if a.Value {
					return &Const{Value: true}
				}
				continue
			case *Or:
				args = append(args, a.Args...)
				continue
			}
			args = append(args, a)
		}
		switch len(args) {
		case 0:
			return &Const{Value: false}
		case 1:
			return args[0]
		}
		return &Or{Args: args}
	}
	return p
}

// distinct binds l IS DISTINCT FROM r (or, with not, IS NOT DISTINCT
// FROM). Against a non-NULL literal it is x <> v OR x IS NULL; IS NOT
// DISTINCT FROM is x = v (a NULL x makes it FALSE, and = NULL); against
// NULL it is IS NOT NULL (IS NULL).
func (b *binder) distinct(n *Distinct, not bool) (Pred, error) {
	l, r := n.L, n.R
	if _, ok := l.(*Lit); ok {
		l, r = r, l
	}
	id, isCol := l.(*Ident)
	lit, isLit := r.(*Lit)
	if ll, ok := l.(*Lit); ok && isLit {
		lnull, rnull := ll.Kind == LitNull, lit.Kind == LitNull
		if lnull || rnull {
			return &Const{Value: (lnull && rnull) == not}, nil
		}
		eq := foldLiterals(ll, OpEq, lit)
		if c, ok := eq.(*Const); ok {
			return &Const{Value: c.Value == not}, nil
		}
		return eq, nil
	}
	if !isCol || !isLit {
		if err := b.check(n); err != nil {
			return nil, err
		}
		return &Opaque{Why: "DISTINCT FROM of an expression"}, nil
	}
	c, err := b.column(id)
	if err != nil {
		return nil, err
	}
	if lit.Kind == LitNull {
		return &NullTest{Col: c, Not: !not}, nil
	}
	if not {
		return b.colCmp(c, OpEq, lit, ctxOr(nil, lit))
	}
	ne, err := b.colCmp(c, OpNe, lit, ctxOr(nil, lit))
	if err != nil {
		return nil, err
	}
	return &Or{Args: []Pred{ne, &NullTest{Col: c}}}, nil
}

// isBool binds x IS [NOT] TRUE / FALSE (negated when neg). x IS TRUE keeps
// the rows x keeps and x IS FALSE those NOT x keeps; IS NOT TRUE adds the
// rows where x is NULL, which only an x whose NULLs are known can tell.
func (b *binder) isBool(n *IsBool, neg bool) (Pred, error) {
	if l, ok := n.X.(*Lit); ok && (l.Kind == LitNumber || l.Kind == LitString) {
		return &Opaque{Why: "IS TRUE of a " + kindName(l.Kind)}, nil // DuckDB casts it to BOOLEAN
	}
	if id, ok := n.X.(*Ident); ok {
		c, err := b.column(id)
		if err != nil {
			return nil, err
		}
		if c.Type.Kind != types.KindBoolean {
			return &Opaque{Why: "IS TRUE of " + c.Type.String()}, nil // DuckDB casts it to BOOLEAN
		}
	}
	not := n.Not != neg
	x, err := b.bind(n.X, n.Value == not)
	if err != nil {
		return nil, err
	}
	if !not {
		return x, nil
	}
	return &Or{Args: []Pred{x, b.nullOf(n.X)}}, nil
}

// nullOf is a predicate TRUE exactly for the rows where n is NULL, or may
// match when that is not known.
func (b *binder) nullOf(n Node) Pred {
	switch n := n.(type) {
	case *Lit:
		return &Const{Value: n.Kind == LitNull}
	case *Ident:
		if c, err := b.column(n); err == nil {
			return &NullTest{Col: c}
		}
	case *Unary:
		if n.Op == "NOT" {
			return b.nullOf(n.X)
		}
	case *IsNull, *Distinct, *IsBool:
		return &Const{Value: false}
	case *Binary:
		switch n.Op {
		case "=", "<>", "<", "<=", ">", ">=":
			// A column against a non-NULL literal is NULL where the column is.
			if l, ok := n.R.(*Lit); ok && l.Kind != LitNull {
				if _, ok := n.L.(*Ident); ok {
					return b.nullOf(n.L)
				}
			}
			if l, ok := n.L.(*Lit); ok && l.Kind != LitNull {
				if _, ok := n.R.(*Ident); ok {
					return b.nullOf(n.R)
				}
			}
		}
	}
	return &Opaque{Why: "NULL of an expression"}
}

// parseFloatText casts a string to FLOAT or DOUBLE as DuckDB does: a
// magnitude beyond the type's range is an infinity.
func parseFloatText(t types.Type, text string) (float64, error) {
	fc, _ := types.CodecFor(t)
	v, err := fc.Parse(text)
	if err == nil {
		return v.F, nil
	}
	bits := floatBitsOf(t.Kind)
	f, perr := strconv.ParseFloat(strings.TrimSpace(text), bits)
	if ne, ok := perr.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
		return f, nil
	}
	return 0, err
}
