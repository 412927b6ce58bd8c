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

	"rocklake/catalog"
	"rocklake/types"
)

// BindError reports a predicate that names something that is not there or
// a literal that cannot be cast, with the byte offset.
type BindError struct {
	Text string
	Pos  int
	Msg  string
}

func (e *BindError) Error() string {
	return fmt.Sprintf("at offset %d: %s%s", e.Pos, e.Msg, context(e.Text, max(e.Pos, 0)))
}

// ErrNoSuchColumn is wrapped by the error for an unknown column.
var ErrNoSuchColumn = errors.New("no such column")

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
		k := strings.ToLower(strings.Join(c.Path, "."))
		b.byPath[k] = append(b.byPath[k], c)
	}
	p, err := b.bind(n, false)
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

func (b *binder) column(id *Ident) (*Column, error) {
	key := strings.ToLower(strings.Join(id.Parts, "."))
	cands := b.byPath[key]
	var pick *catalog.Column
	switch {
	case len(cands) == 1:
		pick = &cands[0]
	case len(cands) > 1:
		// Names differing only in case: a quoted name picks exactly.
		want := strings.Join(id.Parts, ".")
		for i := range cands {
			if strings.Join(cands[i].Path, ".") == want {
				pick = &cands[i]
			}
		}
		if pick == nil {
			return nil, b.errf(id.At, "column %q is ambiguous", want)
		}
	}
	if pick == nil {
		var names []string
		for k, cs := range b.byPath {
			if !cs[0].Parent.Known {
				names = append(names, k)
			}
		}
		sort.Strings(names)
		return nil, &BindError{Text: b.text, Pos: id.At, Msg: fmt.Sprintf("%v %q (columns: %s)", ErrNoSuchColumn, strings.Join(id.Parts, "."), strings.Join(names, ", "))}
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
			return b.comparison(n.L, op, n.R, neg, n.At)
		}
		return &Opaque{Why: "operator " + n.Op}, b.check(n)
	case *Between:
		if x, ok := n.X.(*Ident); ok && (isDoubleLit(n.Lo) || isDoubleLit(n.Hi)) {
			// DuckDB compares all three in one type: DOUBLE here.
			c, err := b.column(x)
			if err != nil {
				return nil, err
			}
			if !exactInDouble(c.Type) {
				return &Opaque{Why: "BETWEEN in DOUBLE"}, nil
			}
		}
		// x BETWEEN a AND b is x >= a AND x <= b.
		lo, err := b.comparison(n.X, OpGe, n.Lo, false, n.At)
		if err != nil {
			return nil, err
		}
		hi, err := b.comparison(n.X, OpLe, n.Hi, false, n.At)
		if err != nil {
			return nil, err
		}
		if n.Not != neg {
			nlo, _ := b.comparison(n.X, OpLt, n.Lo, false, n.At)
			nhi, _ := b.comparison(n.X, OpGt, n.Hi, false, n.At)
			return &Or{Args: []Pred{nlo, nhi}}, nil
		}
		return &And{Args: []Pred{lo, hi}}, nil
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
		if c.Type.Kind != types.KindBoolean {
			return nil, b.errf(n.At, "column %q is %s, not a boolean condition", c.Name, c.Type)
		}
		return b.comparison(n, OpEq, &Lit{Kind: LitBool, Text: "true", At: n.At}, neg, n.At)
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

// comparison binds l op r (negated when neg).
func (b *binder) comparison(l Node, op Op, r Node, neg bool, at int) (Pred, error) {
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
		return b.colCmp(c, op, rl)
	case lIsLit && rIsCol:
		c, err := b.column(ri)
		if err != nil {
			return nil, err
		}
		return b.colCmp(c, op.flip(), ll)
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

// significantDigits counts the digits of a number's text, leading zeros
// aside.
func significantDigits(text string) int {
	n, started := 0, false
	for _, c := range text {
		if c == 'e' || c == 'E' {
			break
		}
		if c >= '1' && c <= '9' {
			started = true
		}
		if started && c >= '0' && c <= '9' {
			n++
		}
	}
	return n
}

// isDoubleNumber reports whether DuckDB types a number literal as DOUBLE:
// written with an exponent, or with more digits than a DECIMAL or HUGEINT
// holds.
func isDoubleNumber(text string) bool {
	return strings.ContainsAny(text, "eE") || significantDigits(text) > 38
}

// isDoubleLit reports whether a literal is a DOUBLE or FLOAT in DuckDB.
func isDoubleLit(n Node) bool {
	l, ok := n.(*Lit)
	if !ok {
		return false
	}
	if l.Type != "" {
		t, err := types.ParseType(l.Type)
		return err == nil && isFloat(t.Kind)
	}
	return l.Kind == LitNumber && isDoubleNumber(l.Text)
}

// exactInDouble reports whether every value of a column converts to DOUBLE
// exactly, so that a comparison DuckDB makes in DOUBLE is exact.
func exactInDouble(t types.Type) bool {
	return isFloat(t.Kind) || smallEnoughForDouble(t) || !(isInt(t.Kind) || t.Kind == types.KindDecimal)
}

// litValue is a literal cast to a column's type: one value (exact), or the
// two neighbours lo < literal < hi when the literal falls between values of
// the type, or a literal below or above the type's whole range.
type litValue struct {
	nan          bool
	exact        bool
	lo, hi       []byte
	below, above bool
	// ambiguous: DuckDB may compare in the column's type (literal rounded)
	// or in a wider one (exactly); leaves are then only implied.
	ambiguous bool
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
func (b *binder) cast(c *Column, l *Lit) (lv litValue, ok bool, err error) {
	k := c.Type.Kind
	codec := c.Codec
	if codec == nil {
		return lv, false, nil
	}
	switch {
	case l.Kind == LitBool:
		if k != types.KindBoolean {
			return lv, false, nil
		}
		enc, _ := codec.Encode(types.BoolValue(l.Text == "true"))
		return litValue{exact: true, lo: enc, hi: enc}, true, nil
	case l.Kind == LitNumber && l.Type == "":
		return b.castNumber(c, l.Text, isDoubleNumber(l.Text), l.At)
	case l.Kind == LitString && l.Type == "":
		// DuckDB casts a string literal to the column's type.
		return b.castText(c, l.Text, l.At)
	}
	// A typed literal: first its own type, then to the column's.
	lt, perr := types.ParseType(l.Type)
	if perr != nil || lt.Kind == types.KindUnknown {
		return lv, false, b.errf(l.At, "unknown type %q", l.Type)
	}
	if l.Kind == LitNumber && isDoubleNumber(l.Text) && !isFloat(lt.Kind) {
		// CAST(2.5e0 AS INTEGER) converts a DOUBLE, rounding half to even
		// (and to DECIMAL from the binary value): not what the text says.
		return lv, false, nil
	}
	if (lt.Kind == types.KindHugeInt || lt.Kind == types.KindUHugeInt || k == types.KindHugeInt || k == types.KindUHugeInt) &&
		isInt(lt.Kind) && isInt(k) && lt.Kind != k {
		// HUGEINT against UHUGEINT (or either against another integer
		// width) may be compared in DOUBLE.
		return lv, false, nil
	}
	if lt.Kind == types.KindVarchar {
		return b.castText(c, l.Text, l.At)
	}
	lc, lok := types.CodecFor(lt)
	if !lok {
		return lv, false, nil
	}
	v, perr := lc.Parse(l.Text)
	if perr != nil && errors.Is(perr, types.ErrNoOffset) {
		v, perr = lc.Parse(l.Text + "+00") // the session time zone is UTC
	}
	if perr != nil {
		return lv, false, b.errf(l.At, "cannot cast %q to %s: %v", clip(l.Text), lt, clipErr(perr))
	}
	if lt.Equal(c.Type) {
		if isFloat(k) && math.IsNaN(v.F) {
			return litValue{nan: true}, true, nil
		}
		enc, eerr := codec.Encode(v)
		if eerr != nil {
			return lv, false, nil
		}
		return litValue{exact: true, lo: enc, hi: enc}, true, nil
	}
	switch {
	case (isInt(lt.Kind) || lt.Kind == types.KindDecimal) && (isInt(k) || k == types.KindDecimal || isFloat(k)):
		return b.castNumber(c, lc.Format(v), false, l.At)
	case isFloat(lt.Kind) && (isInt(k) || k == types.KindDecimal || isFloat(k)):
		if math.IsNaN(v.F) {
			if isFloat(k) {
				return litValue{nan: true}, true, nil
			}
			return lv, false, nil
		}
		return b.castNumber(c, exactFloatText(v.F), true, l.At)
	case lt.Kind == types.KindDate && isTimestamp(k):
		// DuckDB widens the date to a timestamp at midnight (UTC).
		text := lc.Format(v)
		if k == types.KindTimestampTZ {
			text += " 00:00:00+00"
		}
		return b.castText(c, text, l.At)
	case isTimestamp(lt.Kind) && isTimestamp(k):
		text := lc.Format(v)
		if k == types.KindTimestampTZ && lt.Kind != types.KindTimestampTZ {
			text += "+00"
		}
		if lt.Kind == types.KindTimestampTZ && k != types.KindTimestampTZ {
			text = strings.TrimSuffix(text, "+00")
		}
		return b.rounded(c, text, true)
	}
	return lv, false, nil
}

// castText casts a string as DuckDB's CAST(text AS column type) does.
func (b *binder) castText(c *Column, text string, at int) (litValue, bool, error) {
	if k := c.Type.Kind; k == types.KindTimestampS || k == types.KindTimestampMS {
		// DuckDB compares a TIMESTAMP_S/_MS column with a string as
		// TIMESTAMP (µs): read the text as microseconds, then bracket it
		// between the column's values, comparing exactly.
		us, _ := types.CodecFor(types.Simple(types.KindTimestamp))
		v, err := us.Parse(text)
		if err != nil {
			return litValue{}, false, b.errf(at, "cannot cast %q to %s (column %s): %v", clip(text), c.Type, c.Name, clipErr(err))
		}
		return b.rounded(c, us.Format(v), false)
	}
	v, err := c.Codec.Parse(text)
	if err != nil && errors.Is(err, types.ErrNoOffset) {
		v, err = c.Codec.Parse(text + "+00") // the session time zone is UTC
	}
	if err != nil {
		return litValue{}, false, b.errf(at, "cannot cast %q to %s (column %s): %v", clip(text), c.Type, c.Name, clipErr(err))
	}
	if isFloat(c.Type.Kind) && math.IsNaN(v.F) {
		return litValue{nan: true}, true, nil
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
	return litValue{exact: loExact && bytes.Equal(elo, ehi), lo: elo, hi: ehi, ambiguous: ambiguous}, true, nil
}

// castNumber handles a numeric literal against a numeric column. DuckDB
// compares integers and decimals exactly (in a wide enough decimal); a
// DOUBLE literal (written with an exponent) converts the column to DOUBLE;
// a FLOAT column may compare in FLOAT (literal rounded) or in DOUBLE.
func (b *binder) castNumber(c *Column, text string, double bool, at int) (litValue, bool, error) {
	k := c.Type.Kind
	switch {
	case isFloat(k):
		if double {
			f, err := strconv.ParseFloat(text, 64)
			if err != nil {
				return litValue{}, false, b.errf(at, "bad number %q", text)
			}
			text = exactFloatText(f)
		}
		lv, ok, err := b.rounded(c, text, true)
		return lv, ok, err
	case isInt(k) || k == types.KindDecimal:
		if double {
			f, err := strconv.ParseFloat(text, 64)
			if err != nil {
				return litValue{}, false, b.errf(at, "bad number %q", text)
			}
			// The column becomes DOUBLE: exact only while its values are.
			if !smallEnoughForDouble(c.Type) || math.IsInf(f, 0) {
				return litValue{}, false, nil
			}
			text = exactFloatText(f)
		}
		r, ok := new(big.Rat).SetString(text)
		if !ok {
			return litValue{}, false, b.errf(at, "bad number %q", text)
		}
		lv, ok, _ := b.rounded(c, text, false)
		if ok {
			return lv, true, nil
		}
		// Out of the type's range: below or above all of it.
		if r.Sign() < 0 {
			return litValue{below: true}, true, nil
		}
		return litValue{above: true}, true, nil
	}
	return litValue{}, false, nil
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

// smallEnoughForDouble reports whether every value of t converts to a
// DOUBLE exactly.
func smallEnoughForDouble(t types.Type) bool {
	switch t.Kind {
	case types.KindTinyInt, types.KindSmallInt, types.KindInteger, types.KindUTinyInt, types.KindUSmallInt, types.KindUInteger:
		return true
	case types.KindDecimal:
		return t.Precision <= 15 && t.Scale == 0
	}
	return false
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
func (b *binder) colCmp(c *Column, op Op, l *Lit) (Pred, error) {
	if l.Kind == LitNull {
		return &Const{Value: false}, nil
	}
	if c.Codec == nil {
		// Still cast-check string literals? DuckDB would; rocklake cannot
		// use the column anyway.
		return &Opaque{Why: "column " + c.Name + " has no ordered statistics"}, nil
	}
	lv, ok, err := b.cast(c, l)
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
	// Ambiguous: DuckDB compares with the literal itself or rounded to
	// either neighbour; keep every row either reading could match.
	switch op {
	case OpEq:
		return &And{Args: []Pred{&Cmp{Col: c, Op: OpGe, Value: lv.lo}, &Cmp{Col: c, Op: OpLe, Value: lv.hi}}}, nil
	case OpNe:
		return &Opaque{Why: "inexact literal"}, nil
	case OpLt, OpLe:
		return &Cmp{Col: c, Op: OpLe, Value: lv.hi}, nil
	default:
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
	for _, item := range n.List {
		if isDoubleLit(item) && !exactInDouble(c.Type) {
			// One DOUBLE item makes DuckDB compare the whole list in DOUBLE.
			if err := b.check(n); err != nil {
				return nil, err
			}
			return &Opaque{Why: "IN list in DOUBLE"}, nil
		}
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
		p, err := b.colCmp(c, op, l)
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
	}
	if err := b.check(n); err != nil {
		return nil, err
	}
	return &Opaque{Why: "function " + n.Name}, nil
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
