package expr

import (
	"encoding/binary"
	"hash/fnv"
	"math"
	"math/big"
	"strings"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

// VariantRef marks a Column that is a sub-field of a top-level VARIANT
// column rather than a column of the table: v.a, v.a.b, v."a.b",
// variant_extract(v, 'a'), each usually cast (v.a::INT). Such a column has
// a synthetic negative ID, no Path, and the cast's type (VARIANT when
// uncast, which only IS [NOT] NULL can use); its statistics come from the
// catalog's per-sub-field variant stats through SubFieldStats.
type VariantRef struct {
	ColumnID int64  // the VARIANT column
	Column   string // its name (a dotted path)
	Path     string // DuckLake's variant_path: root, "a", "a"."b"
	Cast     bool   // compared after a cast to the Column's Type
}

// subField is what a sub-field reference resolved to before binding.
type subField struct {
	col    catalog.Column
	fields []string
	cast   *types.Type
}

// subFields rewrites sub-field references of VARIANT columns into
// identifiers that resolve to a sub-field Column, so that every shape the
// binder reads a column in (comparisons, IN, BETWEEN, IS NULL, LIKE,
// starts_with) reads a cast sub-field the same way: `v.a::INT > 5` is a
// comparison of an INTEGER "column" with 5, under DuckDB's rules for an
// INTEGER operand. The input is not modified (callers cache parse trees).
func (b *binder) subFields(n Node) Node {
	switch n := n.(type) {
	case *Cast:
		if sf, ok := b.variantTarget(n.X); ok {
			if t, err := types.ParseType(n.Type); err == nil {
				sf.cast = &t
				return &Ident{Parts: displayParts(sf), At: n.At, sub: sf}
			}
		}
		if x := b.subFields(n.X); x != n.X {
			c := *n
			c.X = x
			return &c
		}
	case *Ident:
		if sf, ok := b.variantTarget(n); ok && len(sf.fields) > 0 {
			return &Ident{Parts: n.Parts, Quoted: n.Quoted, At: n.At, sub: sf}
		}
	case *Call:
		if sf, ok := b.variantTarget(n); ok {
			return &Ident{Parts: displayParts(sf), At: n.At, sub: sf}
		}
		var args []Node
		for i, a := range n.Args {
			if x := b.subFields(a); x != a {
				if args == nil {
					args = append([]Node(nil), n.Args...)
				}
				args[i] = x
			}
		}
		if args != nil {
			c := *n
			c.Args = args
			return &c
		}
	case *Binary:
		l, r := b.subFields(n.L), b.subFields(n.R)
		if l != n.L || r != n.R {
			c := *n
			c.L, c.R = l, r
			return &c
		}
	case *Unary:
		if x := b.subFields(n.X); x != n.X {
			c := *n
			c.X = x
			return &c
		}
	case *Between:
		x, lo, hi := b.subFields(n.X), b.subFields(n.Lo), b.subFields(n.Hi)
		if x != n.X || lo != n.Lo || hi != n.Hi {
			c := *n
			c.X, c.Lo, c.Hi = x, lo, hi
			return &c
		}
	case *In:
		c := *n
		changed := false
		if c.X = b.subFields(n.X); c.X != n.X {
			changed = true
		}
		c.List = make([]Node, len(n.List))
		for i, it := range n.List {
			if c.List[i] = b.subFields(it); c.List[i] != it {
				changed = true
			}
		}
		if changed {
			return &c
		}
	case *IsNull:
		if x := b.subFields(n.X); x != n.X {
			c := *n
			c.X = x
			return &c
		}
	case *IsBool:
		if x := b.subFields(n.X); x != n.X {
			c := *n
			c.X = x
			return &c
		}
	case *Distinct:
		l, r := b.subFields(n.L), b.subFields(n.R)
		if l != n.L || r != n.R {
			c := *n
			c.L, c.R = l, r
			return &c
		}
	case *Like:
		x, p := b.subFields(n.X), b.subFields(n.Pattern)
		if x != n.X || p != n.Pattern {
			c := *n
			c.X, c.Pattern = x, p
			return &c
		}
	}
	return n
}

func displayParts(sf *subField) []string {
	return append(append([]string(nil), sf.col.Path...), sf.fields...)
}

// variantTarget reads n as a sub-field of a top-level VARIANT column: an
// identifier v.a.b whose first part names the VARIANT column (and that is
// not itself a column path), the bare column v (the root), or
// variant_extract(x, 'name') of such a target. Field names are exact:
// DuckDB finds VARIANT fields by case-sensitive name, and
// variant_extract(v, 'a.b') is the field named "a.b", as v."a.b" is.
func (b *binder) variantTarget(n Node) (*subField, bool) {
	switch n := n.(type) {
	case *Ident:
		if n.sub != nil || len(b.byPath[pathKey(n.Parts)]) > 0 && len(n.Parts) > 1 {
			return nil, false
		}
		col, ok := b.variantColumn(n)
		if !ok {
			return nil, false
		}
		return &subField{col: col, fields: append([]string(nil), n.Parts[1:]...)}, true
	case *Call:
		if n.Name != "variant_extract" || len(n.Args) != 2 {
			return nil, false
		}
		l, ok := n.Args[1].(*Lit)
		if !ok || l.Kind != LitString || (l.Type != "" && !strings.EqualFold(l.Type, "VARCHAR")) {
			return nil, false
		}
		sf, ok := b.variantTarget(n.Args[0])
		if !ok {
			return nil, false
		}
		sf.fields = append(sf.fields, l.Text)
		return sf, true
	}
	return nil, false
}

// variantColumn finds the top-level VARIANT column an identifier starts
// with, resolving its first part as a column name is resolved.
func (b *binder) variantColumn(id *Ident) (catalog.Column, bool) {
	var pick *catalog.Column
	cands := b.byPath[pathKey(id.Parts[:1])]
	for i := range cands {
		if cands[i].Parent.Known {
			continue
		}
		if len(cands) == 1 || cands[i].Path[0] == id.Parts[0] {
			pick = &cands[i]
		}
	}
	if pick == nil || pick.Type.Kind != types.KindVariant {
		return catalog.Column{}, false
	}
	return *pick, true
}

// subColumn is the Column a sub-field reference binds to: one per
// (column, path, type), with an ID derived from them, so that predicates
// bound separately (the query path binds each conjunct on its own and
// conjoins them) share it.
func (b *binder) subColumn(sf *subField) *Column {
	ref := &VariantRef{ColumnID: sf.col.ID, Column: strings.Join(sf.col.Path, "."), Path: VariantPath(sf.fields), Cast: sf.cast != nil && sf.cast.Kind != types.KindVariant}
	typ := types.Simple(types.KindVariant)
	if ref.Cast {
		typ = *sf.cast
	}
	name := strings.Join(sf.col.Path, ".")
	if len(sf.fields) > 0 {
		name += "." + ref.Path
	}
	if sf.cast != nil {
		name += "::" + typ.DuckLakeName()
	}
	h := fnv.New64a()
	h.Write(binary.BigEndian.AppendUint64(nil, uint64(sf.col.ID)))
	h.Write([]byte(ref.Path))
	h.Write([]byte{0})
	h.Write([]byte(typ.DuckLakeName()))
	id := int64(h.Sum64() | 1<<63) // negative: never a real column's
	if c, ok := b.used[id]; ok {
		return c
	}
	c := &Column{Column: catalog.Column{ID: id, Name: name, Type: typ}, Name: name, Variant: ref}
	if codec, ok := types.CodecFor(typ); ok && codec.Ordered() && ref.Cast {
		c.Codec = codec
	}
	b.used[id] = c
	return c
}

// VariantPath renders object field names as DuckLake's variant_path: each
// name double-quoted with inner quotes doubled, joined by "."; "root" for
// none.
func VariantPath(fields []string) string {
	if len(fields) == 0 {
		return "root"
	}
	parts := make([]string, len(fields))
	for i, f := range fields {
		parts[i] = `"` + strings.ReplaceAll(f, `"`, `""`) + `"`
	}
	return strings.Join(parts, ".")
}

// SubFieldStats gives a sub-field Column's statistics in one unit (a file
// or a row group) from the unit's variant stats of its path, in the type
// the predicate compares it in, or ok=false when they cannot be used.
//
// They are used only when sound: the catalog keeps a row only for a
// sub-field whose every value in the unit sits in its typed leaf or is
// missing, so NULL counts and bounds describe v.a exactly (missing fields,
// SQL NULL rows and non-objects are NULL in the leaf and in DuckDB alike);
// the counts
// add up to the unit's rows, and the cast from the shredded type to the
// compared type is one DuckDB performs monotonically on every value the
// bounds cover, so the cast bounds bound every cast value (rounded
// outward: DuckDB rounds DOUBLE to INTEGER half to even and DECIMAL half
// away from zero, and either stays inside the floor and ceiling). A cast
// that is not monotone (a number to VARCHAR, a string to a number: '9' >
// '10') or depends on the session (TIMESTAMP to TIMESTAMPTZ) gives no
// bounds. Nor does a unit whose bounds do not fit the compared type, or
// may hold NaN cast to a number: DuckDB's cast fails on such a value and
// fails the query, which reading no row of the unit would hide. Bounds are
// never exact, so a comparison never makes a unit all-match (IS [NOT]
// NULL can, from the counts).
func (c *Column) SubFieldStats(shredded string, valueCount, nullCount, rows int64, min, max stats.Maybe[[]byte], nan stats.Maybe[bool]) (stats.Column, bool) {
	if c.Variant == nil || valueCount < 0 || nullCount < 0 || valueCount+nullCount != rows {
		return stats.Column{}, false
	}
	st := stats.Column{RowCount: rows, NullCount: stats.Known(nullCount), ValueCount: stats.Known(valueCount), ContainsNull: stats.Known(nullCount > 0)}
	if !c.Variant.Cast {
		return st, true // IS [NOT] NULL only: the VARIANT has no order
	}
	s, err := types.ParseType(shredded)
	if err != nil {
		return stats.Column{}, false
	}
	conv, ok := castRule(s, c.Type)
	if !ok {
		return stats.Column{}, false
	}
	// A cast either gives a value or fails the query: it never turns a
	// value into NULL, so the counts stand for every supported cast.
	if valueCount == 0 {
		st.ContainsNaN = stats.Known(false)
		return st, true
	}
	sFloat, tFloat := isFloat(s.Kind), isFloat(c.Type.Kind)
	switch {
	case sFloat && tFloat:
		st.ContainsNaN = nan
	case tFloat:
		st.ContainsNaN = stats.Known(false)
	case sFloat && (!nan.Known || nan.V):
		// NaN fails the cast: DuckDB would fail the query.
		return stats.Column{}, false
	}
	if !min.Known || !max.Known {
		return stats.Column{}, false
	}
	sc, ok1 := types.CodecFor(s)
	tc, ok2 := types.CodecFor(c.Type)
	if !ok1 || !ok2 || !sc.Ordered() || !tc.Ordered() {
		return stats.Column{}, false
	}
	lo, err1 := sc.Decode(min.V)
	hi, err2 := sc.Decode(max.V)
	if err1 != nil || err2 != nil {
		return stats.Column{}, false
	}
	clo, ok1 := conv(s, c.Type, lo, false)
	chi, ok2 := conv(s, c.Type, hi, true)
	if !ok1 || !ok2 {
		return stats.Column{}, false
	}
	elo, err1 := tc.Encode(clo)
	ehi, err2 := tc.Encode(chi)
	if err1 != nil || err2 != nil || tc.Compare(elo, ehi) > 0 {
		return stats.Column{}, false
	}
	st.Min, st.Max = stats.Known(elo), stats.Known(ehi)
	return st, true
}

// A conversion maps a bound of the shredded type to one of the compared
// type: rounded down for a lower bound, up for an upper one (up), and
// false when the bound does not fit (the cast could fail).
type conversion func(s, t types.Type, v types.Value, up bool) (types.Value, bool)

// castRule says whether DuckDB's cast of a VARIANT holding a value of type
// s to type t is monotone over s, and how bounds map.
func castRule(s, t types.Type) (conversion, bool) {
	_, _, sInt := s.Kind.IntBits()
	_, _, tInt := t.Kind.IntBits()
	switch {
	case s.Equal(t) && !s.Kind.IsNested() && s.Kind != types.KindUnknown && s.Kind != types.KindInterval &&
		s.Kind != types.KindVariant && s.Kind != types.KindEnum && s.Kind != types.KindJSON &&
		s.Kind != types.KindTimeTZ && s.Kind != types.KindGeometry:
		return func(_, _ types.Type, v types.Value, _ bool) (types.Value, bool) { return v, true }, true
	case (sInt || s.Kind == types.KindDecimal || isFloat(s.Kind)) && (tInt || isFloat(t.Kind)):
		return numericBound, true
	case sInt && t.Kind == types.KindDecimal:
		return numericBound, true
	case timeUnit(s.Kind) != nil && timeUnit(t.Kind) != nil:
		return timeBound, true
	}
	return nil, false
}

// exactValue is a numeric value as an exact rational (nil for NaN and
// infinities).
func exactValue(t types.Type, v types.Value) *big.Rat {
	switch {
	case t.Kind == types.KindDecimal:
		return new(big.Rat).SetFrac(v.I.Big(), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(t.Scale)), nil))
	case isFloat(t.Kind):
		if math.IsNaN(v.F) || math.IsInf(v.F, 0) {
			return nil
		}
		return new(big.Rat).SetFloat64(v.F)
	}
	_, signed, _ := t.Kind.IntBits()
	if signed {
		return new(big.Rat).SetInt(v.I.Big())
	}
	return new(big.Rat).SetInt(v.U.Big())
}

func numericBound(s, t types.Type, v types.Value, up bool) (types.Value, bool) {
	if isFloat(s.Kind) && isFloat(t.Kind) {
		f := v.F
		if t.Kind == types.KindFloat && s.Kind == types.KindDouble {
			if math.IsNaN(f) || math.Abs(f) > math.MaxFloat32 {
				return types.Value{}, false
			}
			f32 := float32(f)
			if up {
				f32 = math.Nextafter32(f32, float32(math.Inf(1)))
			} else {
				f32 = math.Nextafter32(f32, float32(math.Inf(-1)))
			}
			f = float64(f32)
		}
		return types.FloatValue(f), true // FLOAT to DOUBLE is exact
	}
	r := exactValue(s, v)
	if r == nil {
		return types.Value{}, false
	}
	if isFloat(t.Kind) {
		// DuckDB converts an integer in one rounding, a decimal in two (the
		// unscaled integer, then a division by the scale's power of ten):
		// each step outward covers one.
		steps := 1
		if s.Kind == types.KindDecimal {
			steps = 3
		}
		f, _ := r.Float64()
		dir := math.Inf(-1)
		if up {
			dir = math.Inf(1)
		}
		if t.Kind == types.KindFloat {
			if math.Abs(f) > math.MaxFloat32 {
				return types.Value{}, false
			}
			f32 := float32(f)
			for range steps {
				f32 = math.Nextafter32(f32, float32(dir))
			}
			return types.FloatValue(float64(f32)), !math.IsInf(float64(f32), 0)
		}
		for range steps {
			f = math.Nextafter(f, dir)
		}
		return types.FloatValue(f), !math.IsInf(f, 0)
	}
	scale := 0
	if t.Kind == types.KindDecimal {
		scale = int(t.Scale)
	}
	r.Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)))
	z := new(big.Int)
	m := new(big.Int)
	z.DivMod(r.Num(), r.Denom(), m) // floor, Denom > 0
	if up && m.Sign() != 0 {
		z.Add(z, big.NewInt(1))
	}
	if t.Kind == types.KindDecimal {
		if new(big.Int).Abs(z).Cmp(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(t.Precision)), nil)) >= 0 {
			return types.Value{}, false
		}
		x, ok := types.Int128FromBig(z)
		return types.Int128Value(x), ok
	}
	bits, signed, _ := t.Kind.IntBits()
	if signed {
		lim := new(big.Int).Lsh(big.NewInt(1), uint(bits-1))
		if z.Cmp(lim) >= 0 || z.Cmp(new(big.Int).Neg(lim)) < 0 {
			return types.Value{}, false
		}
		x, ok := types.Int128FromBig(z)
		return types.Int128Value(x), ok
	}
	if z.Sign() < 0 || z.BitLen() > bits {
		return types.Value{}, false
	}
	x, ok := types.Uint128FromBig(z)
	return types.Uint128Value(x), ok
}

// timeUnit is the nanoseconds in one unit of a date or timestamp kind
// without a time zone; nil for other kinds.
func timeUnit(k types.Kind) *big.Int {
	switch k {
	case types.KindDate:
		return big.NewInt(86400e9)
	case types.KindTimestampS:
		return big.NewInt(1e9)
	case types.KindTimestampMS:
		return big.NewInt(1e6)
	case types.KindTimestamp:
		return big.NewInt(1e3)
	case types.KindTimestampNS:
		return big.NewInt(1)
	}
	return nil
}

// timeBound converts between DATE and the TIMESTAMP units: exact to a
// finer unit, floor or ceiling to a coarser one (DuckDB truncates to DATE
// and rounds to TIMESTAMP_S; both stay inside). DuckDB's infinite dates
// and timestamps are the extreme values of the type and have no image.
func timeBound(s, t types.Type, v types.Value, up bool) (types.Value, bool) {
	if !v.I.IsInt64() {
		return types.Value{}, false
	}
	x := v.I.Big()
	if n := x.Int64(); n == math.MaxInt64 || n == -math.MaxInt64 || n == math.MinInt64 ||
		s.Kind == types.KindDate && (n == math.MaxInt32 || n == -math.MaxInt32) {
		return types.Value{}, false
	}
	x.Mul(x, timeUnit(s.Kind))
	m := new(big.Int)
	x.DivMod(x, timeUnit(t.Kind), m)
	if up && m.Sign() != 0 {
		x.Add(x, big.NewInt(1))
	}
	if !x.IsInt64() || t.Kind == types.KindDate && (x.Int64() >= math.MaxInt32 || x.Int64() <= -math.MaxInt32) {
		return types.Value{}, false
	}
	return types.IntValue(x.Int64()), true
}
