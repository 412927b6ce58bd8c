package expr

import (
	"bytes"
	"errors"
	"math"
	"math/big"
	"strings"

	"github.com/rocklake/rocklake/types"
)

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
