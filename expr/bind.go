package expr

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/big"
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

// foldLiterals evaluates a comparison of two constants where both are plain
// numbers or plain strings; otherwise it may match.
func foldLiterals(l *Lit, op Op, r *Lit) Pred {
	if l.Kind == LitNull || r.Kind == LitNull {
		return &Const{Value: false}
	}
	var c int
	switch {
	case l.Kind == LitNumber && r.Kind == LitNumber && l.Type == "" && r.Type == "" &&
		!isDoubleNumber(l.Text) && !isDoubleNumber(r.Text):
		// Both exact (INTEGER/DECIMAL): DuckDB compares them exactly.
		a, ok1 := new(big.Rat).SetString(l.Text)
		z, ok2 := new(big.Rat).SetString(r.Text)
		if !ok1 || !ok2 {
			return &Opaque{Why: "constant"}
		}
		c = a.Cmp(z)
	case l.Kind == LitString && r.Kind == LitString && l.Type == "" && r.Type == "":
		c = strings.Compare(l.Text, r.Text)
	default:
		return &Opaque{Why: "constant"}
	}
	return &Const{Value: [...]bool{c == 0, c != 0, c < 0, c <= 0, c > 0, c >= 0}[op]}
}

// isDoubleNumber reports whether DuckDB types a number literal as DOUBLE:
// written with an exponent; a decimal of more than 38 digits, leading and
// trailing zeros included (0.<37 zeros>1 is a DOUBLE); an integer beyond
// HUGEINT and UHUGEINT.
func isDoubleNumber(text string) bool {
	if strings.ContainsAny(text, "eE") {
		return true
	}
	digits := strings.Count(text, "0") + strings.Count(text, "1") + strings.Count(text, "2") +
		strings.Count(text, "3") + strings.Count(text, "4") + strings.Count(text, "5") + strings.Count(text, "6") +
		strings.Count(text, "7") + strings.Count(text, "8") + strings.Count(text, "9")
	if strings.Contains(text, ".") {
		return digits > 38
	}
	n, ok := new(big.Int).SetString(text, 10)
	if !ok {
		return true
	}
	return n.Cmp(minHugeInt) < 0 || n.Cmp(maxUHugeInt) > 0
}

var (
	minHugeInt  = new(big.Int).Neg(new(big.Int).Lsh(big.NewInt(1), 127))
	maxHugeInt  = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 127), big.NewInt(1))
	maxUHugeInt = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 128), big.NewInt(1))
)

// cmpCtx is the type a comparison's operands are cast to, as far as the
// literal alone does not say.
type cmpCtx struct {
	// bits: a FLOAT (32) or DOUBLE (64) operand makes DuckDB compare
	// numbers in that type, every operand cast to it.
	bits int
	// strScale ≥ 0: a string operand is cast to a DECIMAL of that scale
	// (the common type of an IN list or BETWEEN with a wider number).
	strScale int
	// strOpaque: a string operand is cast to the type of another operand
	// in the list, not to the column's: may match.
	strOpaque bool
	// unknown: an operand is an expression, whose type the planner does
	// not know, so neither the common type: the list may match.
	unknown bool
}

// ctxOr is ctx, or the context of a single comparison with l.
func ctxOr(ctx *cmpCtx, l *Lit) cmpCtx {
	if ctx != nil {
		return *ctx
	}
	return cmpCtx{bits: litFloatBits(l), strScale: -1}
}

// listCtx is the context of a column compared with each item of a list:
// DuckDB casts the column and every item to their common type, and a
// string item to that type rather than to the column's.
func listCtx(c *Column, items []Node) cmpCtx {
	ctx := cmpCtx{strScale: -1}
	k := c.Type.Kind
	for _, it := range items {
		ctx.bits = max(ctx.bits, litFloatBits(it))
		if _, ok := it.(*Lit); !ok {
			ctx.unknown = true
		}
	}
	switch {
	case isFloat(k) || ctx.bits != 0 && isExactNumber(k):
		return ctx
	case isExactNumber(k):
		scale, numbers := int(c.Type.Scale), false
		for _, it := range items {
			l, ok := it.(*Lit)
			if !ok || l.Kind == LitNull {
				continue
			}
			if l.Type == "" && l.Kind == LitNumber {
				numbers = true
				if _, s, ok := decimalParts(l.Text); ok {
					scale = max(scale, s)
				}
			}
			if lt, err := types.ParseType(l.Type); l.Type != "" && err == nil && isExactNumber(lt.Kind) {
				numbers = true
				scale = max(scale, int(lt.Scale))
			}
		}
		if numbers {
			ctx.strScale = scale
		}
		return ctx
	}
	for _, it := range items {
		if l, ok := it.(*Lit); ok && l.Kind != LitNull && l.Type != "" {
			if lt, err := types.ParseType(l.Type); err != nil || (!lt.Equal(c.Type) && lt.Kind != types.KindVarchar) {
				ctx.strOpaque = true
			}
		}
	}
	return ctx
}

func isExactNumber(k types.Kind) bool { return isInt(k) || k == types.KindDecimal }

// litValue is a literal cast to a column's type: one value (exact), or the
// two neighbours lo < literal < hi when the literal falls between values of
// the type, or a literal below or above the type's whole range.
type litValue struct {
	nan          bool
	exact        bool
	lo, hi       []byte
	below, above bool
	// ambiguous: the literal is one of the values in [lo, hi] (DuckDB's
	// conversion is not known exactly, or two readings of the column
	// differ); leaves are then only implied. noLo, noHi: that end is
	// unbounded.
	ambiguous  bool
	noLo, noHi bool
}

func isInt(k types.Kind) bool {
	switch k {
	case types.KindTinyInt, types.KindSmallInt, types.KindInteger, types.KindBigInt, types.KindHugeInt,
		types.KindUTinyInt, types.KindUSmallInt, types.KindUInteger, types.KindUBigInt, types.KindUHugeInt:
		return true
	}
	return false
}

func isFloat(k types.Kind) bool { return k == types.KindFloat || k == types.KindDouble }

func isTimestamp(k types.Kind) bool {
	switch k {
	case types.KindTimestamp, types.KindTimestampS, types.KindTimestampMS, types.KindTimestampNS, types.KindTimestampTZ:
		return true
	}
	return false
}

// cast turns a literal into a value of the column's type, following what
// DuckDB does with the comparison. ok is false when rocklake cannot tell
// (the comparison then may match).
func (b *binder) cast(c *Column, l *Lit, ctx cmpCtx) (lv litValue, ok bool, err error) {
	k := c.Type.Kind
	codec := c.Codec
	if codec == nil {
		return lv, false, nil
	}
	if l.Kind == LitBool && l.Type == "" {
		if k != types.KindBoolean {
			return lv, false, nil
		}
		enc, _ := codec.Encode(types.BoolValue(l.Text == "true"))
		return litValue{exact: true, lo: enc, hi: enc}, true, nil
	}
	var lt types.Type
	if l.Type != "" {
		var perr error
		lt, perr = types.ParseType(l.Type)
		if perr != nil || lt.Kind == types.KindUnknown {
			return lv, false, b.errf(l.At, "unknown type %q", l.Type)
		}
	}
	str := l.Kind == LitString && (l.Type == "" || lt.Kind == types.KindVarchar)
	if isFloat(k) || isExactNumber(k) {
		return b.numberOperand(c, l, lt, str, ctx)
	}
	if str {
		if ctx.strOpaque {
			return lv, false, nil
		}
		// DuckDB casts a string literal to the column's type.
		return b.castText(c, l.Text, l.At)
	}
	if l.Type == "" {
		return lv, false, nil // a number against a column of another kind
	}
	// A typed literal: first its own type, then to the column's.
	lc, lok := types.CodecFor(lt)
	if !lok {
		return lv, false, nil
	}
	v, perr := lc.ParseInUTC(l.Text)
	if perr != nil {
		return lv, false, b.errf(l.At, "cannot cast %q to %s: %v", clip(l.Text), lt, clipErr(perr))
	}
	if lt.Equal(c.Type) {
		enc, eerr := codec.Encode(v)
		if eerr != nil {
			return lv, false, nil
		}
		return litValue{exact: true, lo: enc, hi: enc}, true, nil
	}
	switch {
	case lt.Kind == types.KindDate && isTimestamp(k):
		// DuckDB widens the date to a timestamp at midnight (UTC).
		text := lc.Format(v)
		if k == types.KindTimestampTZ {
			text += " 00:00:00+00"
		}
		return b.rounded(c, text, false)
	case isTimestamp(lt.Kind) && isTimestamp(k):
		// DuckDB casts the coarser of the two to the finer unit (the
		// column to TIMESTAMP for a TIMESTAMP literal, the literal to
		// TIMESTAMP_NS for a TIMESTAMP_NS column): the instants compare
		// exactly.
		text := lc.Format(v)
		if k == types.KindTimestampTZ && lt.Kind != types.KindTimestampTZ {
			text += "+00"
		}
		if lt.Kind == types.KindTimestampTZ && k != types.KindTimestampTZ {
			text = strings.TrimSuffix(text, "+00")
		}
		return b.rounded(c, text, false)
	}
	return lv, false, nil
}

// numberOperand casts a literal compared with a number column.
func (b *binder) numberOperand(c *Column, l *Lit, lt types.Type, str bool, ctx cmpCtx) (litValue, bool, error) {
	k := c.Type.Kind
	colBits := floatBitsOf(k)
	bits := max(ctx.bits, colBits) // > 0: the comparison is made in FLOAT or DOUBLE
	var (
		x     fnum
		haveX bool
		n     *big.Int // or the exact value n / 10^scale
		scale int
	)
	switch {
	case str && bits != 0:
		ft := types.Simple(types.KindFloat)
		if bits == 64 {
			ft = types.Simple(types.KindDouble)
		}
		f, err := parseFloatText(ft, l.Text)
		if err != nil {
			return litValue{}, false, b.errf(l.At, "cannot cast %q to %s (column %s): %v", clip(l.Text), ft, c.Name, clipErr(err))
		}
		x, haveX = fnum{bits: bits, lo: f, hi: f, nan: math.IsNaN(f)}, true
	case str && ctx.strScale >= 0:
		dc, ok := types.CodecFor(types.Type{Kind: types.KindDecimal, Precision: 38, Scale: uint8(ctx.strScale)})
		v, err := types.Value{}, errors.New("no codec")
		if ok {
			v, err = dc.Parse(l.Text)
		}
		if err != nil {
			return b.castText(c, l.Text, l.At)
		}
		n, scale = v.I.Big(), ctx.strScale
	case str:
		return b.castText(c, l.Text, l.At)
	case l.Kind == LitNumber && l.Type == "":
		if isDoubleNumber(l.Text) {
			f, ok := parseDouble(l.Text)
			if !ok {
				return litValue{}, false, b.errf(l.At, "bad number %q", l.Text)
			}
			x, haveX = fnum{bits: 64, lo: f, hi: f}, true
			break
		}
		var ok bool
		if n, scale, ok = decimalParts(l.Text); !ok {
			return litValue{}, false, b.errf(l.At, "bad number %q", l.Text)
		}
		if n.Cmp(maxHugeInt) > 0 && k != types.KindUHugeInt && bits == 0 {
			// A UHUGEINT literal: DuckDB may compare it with another
			// integer in DOUBLE.
			return litValue{}, false, nil
		}
	case isFloat(lt.Kind):
		lb := floatBitsOf(lt.Kind)
		switch {
		case l.Kind == LitString:
			f, err := parseFloatText(lt, l.Text)
			if err != nil {
				return litValue{}, false, b.errf(l.At, "cannot cast %q to %s: %v", clip(l.Text), lt, clipErr(err))
			}
			x = fnum{bits: lb, lo: f, hi: f, nan: math.IsNaN(f)}
		case l.Kind == LitNumber && isDoubleNumber(l.Text):
			// A DOUBLE literal cast to FLOAT: rounded twice.
			f, ok := parseDouble(l.Text)
			if !ok {
				return litValue{}, false, b.errf(l.At, "bad number %q", l.Text)
			}
			f = roundFloat(f, lb)
			x = fnum{bits: lb, lo: f, hi: f}
		case l.Kind == LitNumber:
			dn, ds, ok := decimalParts(l.Text)
			if !ok {
				return litValue{}, false, b.errf(l.At, "bad number %q", l.Text)
			}
			x = exactToFloat(dn, ds, lb)
		default:
			return litValue{}, false, nil
		}
		haveX = true
	case isExactNumber(lt.Kind):
		if l.Kind == LitNumber && isDoubleNumber(l.Text) {
			// CAST(2.5e0 AS INTEGER) converts a DOUBLE, rounding half to
			// even (and to DECIMAL from the binary value): not what the
			// text says.
			return litValue{}, false, nil
		}
		if (lt.Kind == types.KindHugeInt || lt.Kind == types.KindUHugeInt || k == types.KindHugeInt || k == types.KindUHugeInt) &&
			isInt(lt.Kind) && isInt(k) && lt.Kind != k {
			// HUGEINT against UHUGEINT (or either against another integer
			// width) may be compared in DOUBLE.
			return litValue{}, false, nil
		}
		lc, _ := types.CodecFor(lt)
		if lc == nil {
			return litValue{}, false, nil
		}
		v, err := lc.Parse(l.Text)
		if err != nil {
			return litValue{}, false, b.errf(l.At, "cannot cast %q to %s: %v", clip(l.Text), lt, clipErr(err))
		}
		switch {
		case lt.Kind == types.KindDecimal:
			n, scale = v.I.Big(), int(lt.Scale)
		case lt.Kind == types.KindUTinyInt || lt.Kind == types.KindUSmallInt || lt.Kind == types.KindUInteger ||
			lt.Kind == types.KindUBigInt || lt.Kind == types.KindUHugeInt:
			n = v.U.Big()
		default:
			n = v.I.Big()
		}
	default:
		return litValue{}, false, nil
	}
	if !haveX && bits != 0 {
		x, haveX = exactToFloat(n, scale, bits), true
	}
	if haveX {
		x.bits = max(x.bits, bits) // FLOAT to DOUBLE is exact
		if colBits != 0 {
			lv, ok := floatOperand(c, x)
			return lv, ok, nil
		}
		lv, ok := b.intOperand(c, x)
		return lv, ok, nil
	}
	return b.castNumber(c, ratText(n, scale), l.At)
}

// castText casts a string as DuckDB's CAST(text AS column type) does.
func (b *binder) castText(c *Column, text string, at int) (litValue, bool, error) {
	v, err := c.Codec.ParseInUTC(text)
	if err != nil && c.Type.Kind == types.KindDate {
		// DuckDB reads the date at the start of the text and ignores what
		// follows a space or T ('2024-06-01 12:00:00' is 2024-06-01, and so
		// is '2024-06-01 (BC)' after a time): may match.
		if i := strings.IndexAny(text, " Tt"); i > 0 {
			if _, perr := c.Codec.Parse(text[:i]); perr == nil {
				return litValue{}, false, nil
			}
		}
	}
	if err != nil {
		return litValue{}, false, b.errf(at, "cannot cast %q to %s (column %s): %v", clip(text), c.Type, c.Name, clipErr(err))
	}
	if isFloat(c.Type.Kind) && math.IsNaN(v.F) {
		return litValue{nan: true}, true, nil
	}
	switch c.Type.Kind {
	case types.KindTimestampS, types.KindTimestampMS, types.KindTime, types.KindTimeTZ:
		// DuckDB casts the text to the column's unit (rounding to the
		// second or millisecond, truncating to the microsecond). But
		// DuckDB reads a Parquet TIMESTAMP(MILLIS) as TIMESTAMP and a
		// TIME(NANOS) as TIME_NS, where the text keeps its digits: keep
		// every row either reading matches.
		if _, exact, err := c.Codec.ParseRounded(text, types.Floor); err == nil && !exact {
			return b.rounded(c, text, true)
		}
	}
	enc, err := c.Codec.Encode(v)
	if err != nil {
		return litValue{}, false, nil
	}
	return litValue{exact: true, lo: enc, hi: enc}, true, nil
}

// rounded brackets a text between the column type's values below and above
// it (or finds it exact).
func (b *binder) rounded(c *Column, text string, ambiguous bool) (litValue, bool, error) {
	lo, loExact, err1 := c.Codec.ParseRounded(text, types.Floor)
	hi, _, err2 := c.Codec.ParseRounded(text, types.Ceil)
	if err1 != nil || err2 != nil {
		return litValue{}, false, nil
	}
	elo, e1 := c.Codec.Encode(lo)
	ehi, e2 := c.Codec.Encode(hi)
	if e1 != nil || e2 != nil {
		return litValue{}, false, nil
	}
	exact := loExact && bytes.Equal(elo, ehi)
	return litValue{exact: exact, lo: elo, hi: ehi, ambiguous: ambiguous && !exact}, true, nil
}

// castNumber compares an exact number (an integer or decimal) with an
// integer or decimal column: DuckDB compares them exactly, in a wide
// enough decimal.
func (b *binder) castNumber(c *Column, text string, at int) (litValue, bool, error) {
	r, ok := new(big.Rat).SetString(text)
	if !ok {
		return litValue{}, false, b.errf(at, "bad number %q", text)
	}
	if lv, ok, _ := b.rounded(c, text, false); ok {
		return lv, true, nil
	}
	// Out of the type's range: below or above all of it.
	if r.Sign() < 0 {
		return litValue{below: true}, true, nil
	}
	return litValue{above: true}, true, nil
}

// clip shortens a literal for an error message.
func clip(s string) string {
	if len(s) > 64 {
		return s[:61] + "..."
	}
	return s
}

// clipErr shortens an error that quotes a long literal.
func clipErr(err error) string {
	m := err.Error()
	if len(m) > 200 {
		return m[:197] + "..."
	}
	return m
}

// exactFloatText writes a float's exact decimal value.
func exactFloatText(f float64) string {
	if math.IsInf(f, 1) {
		return "inf"
	}
	if math.IsInf(f, -1) {
		return "-inf"
	}
	s := new(big.Float).SetFloat64(f).Text('f', 1100)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
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
