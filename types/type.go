package types

import (
	"fmt"
	"strings"
)

// Kind names a DuckDB logical type without its parameters.
type Kind uint8

// The kinds rocklake knows. Catalogs keep the type's text (Type.String),
// never a Kind number; still, new kinds go at the end so that a number
// never changes meaning.
const (
	KindUnknown Kind = iota
	KindBoolean
	KindTinyInt
	KindSmallInt
	KindInteger
	KindBigInt
	KindHugeInt
	KindUTinyInt
	KindUSmallInt
	KindUInteger
	KindUBigInt
	KindUHugeInt
	KindFloat
	KindDouble
	KindDecimal
	KindDate
	KindTime
	KindTimeTZ
	KindTimestamp
	KindTimestampS
	KindTimestampMS
	KindTimestampNS
	KindTimestampTZ
	KindInterval
	KindUUID
	KindVarchar
	KindBlob
	KindJSON
	KindEnum
	KindVariant
	KindGeometry
	KindList
	KindArray
	KindStruct
	KindMap
	// KindTimeNS is DuckDB's TIME_NS: what DuckDB reads a Parquet
	// TIME(NANOS) column as.
	KindTimeNS
)

// kindNames holds the canonical DuckLake spelling of each kind, as stored in
// ducklake_column.column_type.
var kindNames = [...]string{
	KindUnknown:     "unknown",
	KindBoolean:     "boolean",
	KindTinyInt:     "int8",
	KindSmallInt:    "int16",
	KindInteger:     "int32",
	KindBigInt:      "int64",
	KindHugeInt:     "int128",
	KindUTinyInt:    "uint8",
	KindUSmallInt:   "uint16",
	KindUInteger:    "uint32",
	KindUBigInt:     "uint64",
	KindUHugeInt:    "uint128",
	KindFloat:       "float32",
	KindDouble:      "float64",
	KindDecimal:     "decimal",
	KindDate:        "date",
	KindTime:        "time",
	KindTimeTZ:      "timetz",
	KindTimestamp:   "timestamp",
	KindTimestampS:  "timestamp_s",
	KindTimestampMS: "timestamp_ms",
	KindTimestampNS: "timestamp_ns",
	KindTimestampTZ: "timestamptz",
	KindInterval:    "interval",
	KindUUID:        "uuid",
	KindVarchar:     "varchar",
	KindBlob:        "blob",
	KindJSON:        "json",
	KindEnum:        "enum",
	KindVariant:     "variant",
	KindGeometry:    "geometry",
	KindList:        "list",
	KindArray:       "array",
	KindStruct:      "struct",
	KindMap:         "map",
	KindTimeNS:      "time_ns",
}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// IntBits describes an integer kind: its width in bits and whether it is
// signed; ok is false for every other kind.
func (k Kind) IntBits() (bits int, signed, ok bool) {
	switch k {
	case KindTinyInt, KindSmallInt, KindInteger, KindBigInt, KindHugeInt:
		signed = true
	case KindUTinyInt, KindUSmallInt, KindUInteger, KindUBigInt, KindUHugeInt:
	default:
		return 0, false, false
	}
	switch k {
	case KindTinyInt, KindUTinyInt:
		bits = 8
	case KindSmallInt, KindUSmallInt:
		bits = 16
	case KindInteger, KindUInteger:
		bits = 32
	case KindBigInt, KindUBigInt:
		bits = 64
	default:
		bits = 128
	}
	return bits, signed, true
}

// IntDigits is the decimal digits of an integer kind's widest value; 0 for
// 128-bit kinds (no DECIMAL holds them) and every other kind.
func (k Kind) IntDigits() int {
	return map[Kind]int{
		KindTinyInt: 3, KindSmallInt: 5, KindInteger: 10, KindBigInt: 19,
		KindUTinyInt: 3, KindUSmallInt: 5, KindUInteger: 10, KindUBigInt: 20,
	}[k]
}

// IsNested reports whether values of the kind are made of other values.
func (k Kind) IsNested() bool {
	switch k {
	case KindList, KindArray, KindStruct, KindMap, KindVariant:
		return true
	}
	return false
}

// Field is one named member of a STRUCT.
type Field struct {
	Name string
	Type Type
}

// Type is a DuckDB logical type with its parameters. The zero value is an
// Unknown type with no text.
type Type struct {
	Kind Kind
	// Precision and Scale of a DECIMAL.
	Precision, Scale uint8
	// Elem is the element type of a LIST or ARRAY; nil when the text named
	// a bare `list` (DuckLake keeps children as separate columns).
	Elem *Type
	// Size is the fixed length of an ARRAY (T[n]).
	Size int
	// Fields of a STRUCT; nil for a bare `struct`.
	Fields []Field
	// Key and Value of a MAP; nil for a bare `map`.
	Key, Value *Type
	// Labels of an ENUM in dictionary order; nil when the text named a
	// bare `enum`, in which case label text cannot be mapped to an index.
	Labels []string
	// Text keeps the original spelling of an Unknown type.
	Text string
}

// Simple returns the parameterless type of kind k.
func Simple(k Kind) Type { return Type{Kind: k} }

// Decimal returns DECIMAL(p,s). It does not validate; ParseType does.
func Decimal(p, s int) Type { return Type{Kind: KindDecimal, Precision: uint8(p), Scale: uint8(s)} }

// List returns elem[].
func List(elem Type) Type { return Type{Kind: KindList, Elem: &elem} }

// Enum returns an ENUM with the given labels in dictionary order.
func Enum(labels ...string) Type { return Type{Kind: KindEnum, Labels: labels} }

// Unknown returns a type rocklake does not know, keeping its text.
func Unknown(text string) Type { return Type{Kind: KindUnknown, Text: text} }

// MarshalText writes a type as users read it, DuckDB's name
// (DisplayName): JSON shows "BIGINT" or "DECIMAL(10,2)" rather than the
// struct. The catalog stores DuckLakeName, never this.
func (t Type) MarshalText() ([]byte, error) { return []byte(DisplayName(t)), nil }

// UnmarshalText reads a type's name back (ParseType reads DuckDB's names
// and DuckLake's alike).
func (t *Type) UnmarshalText(b []byte) error {
	p, err := ParseType(string(b))
	if err != nil {
		return err
	}
	*t = p
	return nil
}

// String is the type as users read it, DuckDB's name (DisplayName): what
// %s and %v print, in errors above all. What is stored or exchanged with
// DuckLake is DuckLakeName, asked for by name.
func (t Type) String() string { return DisplayName(t) }

// DuckLakeName returns the canonical DuckLake spelling (int64, timestamptz,
// decimal(18,3)), which ParseType reads back to an equal Type: the
// catalog stores it, and DuckLake interchange needs it.
func (t Type) DuckLakeName() string {
	var sb strings.Builder
	t.write(&sb)
	return sb.String()
}

func (t Type) write(sb *strings.Builder) {
	switch t.Kind {
	case KindUnknown:
		if t.Text == "" {
			sb.WriteString("unknown")
		} else {
			sb.WriteString(t.Text)
		}
	case KindDecimal:
		fmt.Fprintf(sb, "decimal(%d,%d)", t.Precision, t.Scale)
	case KindList:
		if t.Elem == nil {
			sb.WriteString("list")
			return
		}
		t.Elem.write(sb)
		sb.WriteString("[]")
	case KindArray:
		if t.Elem == nil {
			sb.WriteString("array")
			return
		}
		t.Elem.write(sb)
		fmt.Fprintf(sb, "[%d]", t.Size)
	case KindStruct:
		sb.WriteString("struct")
		if t.Fields == nil {
			return
		}
		sb.WriteByte('(')
		for i, f := range t.Fields {
			if i > 0 {
				sb.WriteString(", ")
			}
			writeIdent(sb, f.Name)
			sb.WriteByte(' ')
			f.Type.write(sb)
		}
		sb.WriteByte(')')
	case KindMap:
		sb.WriteString("map")
		if t.Key == nil || t.Value == nil {
			return
		}
		sb.WriteByte('(')
		t.Key.write(sb)
		sb.WriteString(", ")
		t.Value.write(sb)
		sb.WriteByte(')')
	case KindEnum:
		sb.WriteString("enum")
		if t.Labels == nil {
			return
		}
		sb.WriteByte('(')
		for i, l := range t.Labels {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteByte('\'')
			sb.WriteString(strings.ReplaceAll(l, "'", "''"))
			sb.WriteByte('\'')
		}
		sb.WriteByte(')')
	default:
		sb.WriteString(t.Kind.String())
	}
}

// writeIdent quotes a struct field name unless it is a plain lower-case
// identifier, so that names with spaces, quotes or upper case survive a
// round trip through ParseType.
func writeIdent(sb *strings.Builder, name string) {
	plain := name != ""
	for i, r := range name {
		if !(r == '_' || (r >= 'a' && r <= 'z') || (i > 0 && r >= '0' && r <= '9')) {
			plain = false
			break
		}
	}
	if plain && !reservedFieldName(name) {
		sb.WriteString(name)
		return
	}
	sb.WriteByte('"')
	sb.WriteString(strings.ReplaceAll(name, `"`, `""`))
	sb.WriteByte('"')
}

// reservedFieldName reports names that would read back as something else in
// a field position.
func reservedFieldName(name string) bool {
	switch name {
	case "timestamp", "time", "double", "character":
		// Multi-word type names start with these; quoting keeps the field
		// name apart from the type that follows it.
		return true
	}
	return false
}

// Equal reports whether two types are the same, parameters included.
func (t Type) Equal(o Type) bool {
	if t.Kind != o.Kind {
		return false
	}
	switch t.Kind {
	case KindUnknown:
		return strings.EqualFold(t.Text, o.Text)
	case KindDecimal:
		return t.Precision == o.Precision && t.Scale == o.Scale
	case KindList, KindArray:
		if t.Size != o.Size || (t.Elem == nil) != (o.Elem == nil) {
			return false
		}
		return t.Elem == nil || t.Elem.Equal(*o.Elem)
	case KindStruct:
		if (t.Fields == nil) != (o.Fields == nil) || len(t.Fields) != len(o.Fields) {
			return false
		}
		for i := range t.Fields {
			if t.Fields[i].Name != o.Fields[i].Name || !t.Fields[i].Type.Equal(o.Fields[i].Type) {
				return false
			}
		}
		return true
	case KindMap:
		if (t.Key == nil) != (o.Key == nil) {
			return false
		}
		return t.Key == nil || (t.Key.Equal(*o.Key) && t.Value.Equal(*o.Value))
	case KindEnum:
		if (t.Labels == nil) != (o.Labels == nil) || len(t.Labels) != len(o.Labels) {
			return false
		}
		for i := range t.Labels {
			if t.Labels[i] != o.Labels[i] {
				return false
			}
		}
		return true
	}
	return true
}
