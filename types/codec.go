package types

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// Rounding says which way a text parse goes when the text holds more
// precision than the type (a decimal with more fraction digits than its
// scale, a timestamp with digits below its unit). Bounds round outward: a
// lower bound with Floor, an upper bound with Ceil, so that the parsed bound
// never excludes a value the text admitted.
type Rounding uint8

const (
	// Cast gives what DuckDB's CAST from VARCHAR gives: decimals, integers
	// and floats round to nearest (decimals half away from zero); TIME,
	// TIMETZ, TIMESTAMP, TIMESTAMPTZ and TIMESTAMP_NS drop digits below
	// their unit; TIMESTAMP_S and TIMESTAMP_MS round to nearest. A planner
	// binding a literal the way DuckDB will uses Cast.
	Cast Rounding = iota
	// Floor rounds toward -inf (use for a lower bound).
	Floor
	// Ceil rounds toward +inf (use for an upper bound).
	Ceil
)

var (
	// ErrNaN is returned when a NaN is encoded: NaN is never a bound; the
	// caller records contains_nan instead.
	ErrNaN = errors.New("NaN is not a bound")
	// ErrNoOffset is returned for TIMESTAMPTZ or TIMETZ text without a UTC
	// offset: its instant is unknown, so it is unusable as a bound.
	ErrNoOffset = errors.New("time zone text has no UTC offset")
	// ErrOutOfRange is returned for a value outside its type's range.
	ErrOutOfRange = errors.New("value out of range")
)

// Codec is the statistics codec of one type: an order-preserving binary
// encoding, its decoding, and the DuckLake text form both ways. Codecs are
// immutable and safe for concurrent use.
type Codec struct {
	typ     Type
	width   int // encoded width in bytes; 0 for variable width
	ordered bool

	enc func(dst []byte, v Value) ([]byte, error)
	dec func(b []byte) (Value, error)
	// ints is the range of an integer type's codec (AppendInt,
	// AppendUint); its zero value marks every other codec.
	ints   intRange
	format func(v Value) string
	parse  func(s string, r Rounding) (v Value, exact bool, err error)
}

// Type returns the type the codec was made for.
func (c *Codec) Type() Type { return c.typ }

// Width returns the encoded width in bytes, or 0 for variable-width types.
func (c *Codec) Width() int { return c.width }

// Ordered reports whether byte order of encodings is the type's value order.
// An unordered codec (INTERVAL) can store a value but must never prune.
func (c *Codec) Ordered() bool { return c.ordered }

// Append appends the encoding of v to dst. Encodings of an ordered codec
// compare with bytes.Compare exactly as DuckDB orders the values.
func (c *Codec) Append(dst []byte, v Value) ([]byte, error) { return c.enc(dst, v) }

// Encode returns the encoding of v in a new slice.
func (c *Codec) Encode(v Value) ([]byte, error) { return c.enc(nil, v) }

// Decode reads a value from exactly its encoding.
func (c *Codec) Decode(b []byte) (Value, error) {
	if c.width != 0 && len(b) != c.width {
		return Value{}, fmt.Errorf("%s: encoding is %d bytes, want %d", c.typ, len(b), c.width)
	}
	return c.dec(b)
}

// Compare orders two encodings of this type. Every ordered codec's encoding
// is built so that this is plain unsigned byte comparison.
func (c *Codec) Compare(a, b []byte) int { return bytes.Compare(a, b) }

// CompareValues orders two values by encoding them.
func (c *Codec) CompareValues(a, b Value) (int, error) {
	ea, err := c.enc(nil, a)
	if err != nil {
		return 0, err
	}
	eb, err := c.enc(nil, b)
	if err != nil {
		return 0, err
	}
	return bytes.Compare(ea, eb), nil
}

// Format returns the DuckLake text form of v, which is DuckDB's
// CAST(v AS VARCHAR) (TIMESTAMPTZ and TIMETZ in UTC).
func (c *Codec) Format(v Value) string { return c.format(v) }

// Parse reads a text form tolerantly, as DuckDB's CAST from VARCHAR would
// where the text is more precise than the type (see Cast).
func (c *Codec) Parse(s string) (Value, error) {
	v, _, err := c.parse(s, Cast)
	return v, err
}

// ParseInUTC is Parse as DuckDB casts text in a session whose time zone
// is UTC, which every rocklake session is: a TIMESTAMPTZ or TIMETZ text
// without an offset is read at UTC instead of refused (ErrNoOffset). For
// what DuckDB itself reads (defaults, literals); never for statistics
// bounds another writer stored.
func (c *Codec) ParseInUTC(s string) (Value, error) {
	v, err := c.Parse(s)
	if errors.Is(err, ErrNoOffset) {
		return c.Parse(strings.TrimSpace(s) + "+00")
	}
	return v, err
}

// ParseRounded reads a text form, rounding as r says, and reports whether
// the result equals the text's value exactly. Floor and Ceil are for bounds;
// "not exact" says nothing about whether DuckDB's comparison with the
// literal can match (DuckDB casts first, see Cast).
func (c *Codec) ParseRounded(s string, r Rounding) (v Value, exact bool, err error) {
	return c.parse(s, r)
}

// A Registry maps types to codecs. Types without one have no statistics.
type Registry struct {
	makers map[Kind]func(Type) (*Codec, bool)
}

// Register sets the codec constructor for a kind; a constructor may decline
// a particular type (for example an ENUM without labels).
func (r *Registry) Register(k Kind, make func(Type) (*Codec, bool)) {
	if r.makers == nil {
		r.makers = map[Kind]func(Type) (*Codec, bool){}
	}
	r.makers[k] = make
}

// Lookup returns the codec of t, or false when t has no statistics: nested
// types, VARIANT, GEOMETRY, JSON and unknown types.
func (r *Registry) Lookup(t Type) (*Codec, bool) {
	mk, ok := r.makers[t.Kind]
	if !ok {
		return nil, false
	}
	return mk(t)
}

// Default holds a codec for every type rocklake keeps statistics for.
var Default = newDefaultRegistry()

// CodecFor is Default.Lookup.
func CodecFor(t Type) (*Codec, bool) { return Default.Lookup(t) }

func newDefaultRegistry() *Registry {
	r := &Registry{}
	fixed := func(c *Codec) func(Type) (*Codec, bool) {
		return func(Type) (*Codec, bool) { return c, true }
	}
	r.Register(KindBoolean, fixed(boolCodec()))
	for _, k := range []Kind{KindTinyInt, KindSmallInt, KindInteger, KindBigInt} {
		r.Register(k, fixed(signedCodec(k)))
	}
	r.Register(KindHugeInt, fixed(hugeintCodec()))
	for _, k := range []Kind{KindUTinyInt, KindUSmallInt, KindUInteger, KindUBigInt} {
		r.Register(k, fixed(unsignedCodec(k)))
	}
	r.Register(KindUHugeInt, fixed(uhugeintCodec()))
	r.Register(KindFloat, fixed(floatCodec(KindFloat)))
	r.Register(KindDouble, fixed(floatCodec(KindDouble)))
	r.Register(KindDecimal, decimalCodec)
	r.Register(KindDate, fixed(dateCodec()))
	r.Register(KindTime, fixed(timeCodec()))
	r.Register(KindTimeNS, fixed(timeNSCodec()))
	r.Register(KindTimeTZ, fixed(timeTZCodec()))
	for _, k := range []Kind{KindTimestamp, KindTimestampS, KindTimestampMS, KindTimestampNS, KindTimestampTZ} {
		r.Register(k, fixed(timestampCodec(k)))
	}
	r.Register(KindInterval, fixed(intervalCodec()))
	r.Register(KindUUID, fixed(uuidCodec()))
	r.Register(KindVarchar, fixed(bytesCodec(KindVarchar)))
	r.Register(KindBlob, fixed(bytesCodec(KindBlob)))
	r.Register(KindEnum, enumCodec)
	return r
}
