package server

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/rocklake/rocklake/engine"
)

const (
	oidBool        = pgtype.BoolOID
	oidBytea       = pgtype.ByteaOID
	oidInt8        = pgtype.Int8OID
	oidInt2        = pgtype.Int2OID
	oidInt4        = pgtype.Int4OID
	oidText        = pgtype.TextOID
	oidJSON        = pgtype.JSONOID
	oidFloat4      = pgtype.Float4OID
	oidFloat8      = pgtype.Float8OID
	oidDate        = pgtype.DateOID
	oidTime        = pgtype.TimeOID
	oidTimestamp   = pgtype.TimestampOID
	oidTimestamptz = pgtype.TimestamptzOID
	oidInterval    = pgtype.IntervalOID
	oidTimetz      = pgtype.TimetzOID
	oidNumeric     = pgtype.NumericOID
	oidUUID        = pgtype.UUIDOID
	oidVarchar     = pgtype.VarcharOID
	oidOID         = pgtype.OIDOID
)

// oidOf maps a DuckDB type to the PostgreSQL type its values are sent as.
// Unsigned and 128-bit integers go up to a type that holds every value
// (numeric past int8); types PostgreSQL has no match for (LIST, STRUCT,
// MAP, UNION, ENUM, VARIANT, GEOMETRY, BIT) go as text in DuckDB's form.
func oidOf(duck string) uint32 {
	switch duck {
	case "BOOLEAN":
		return oidBool
	case "TINYINT", "SMALLINT", "UTINYINT":
		return oidInt2
	case "INTEGER", "USMALLINT":
		return oidInt4
	case "BIGINT", "UINTEGER":
		return oidInt8
	case "UBIGINT", "HUGEINT", "UHUGEINT":
		return oidNumeric
	case "FLOAT":
		return oidFloat4
	case "DOUBLE":
		return oidFloat8
	case "VARCHAR":
		return oidText
	case "BLOB":
		return oidBytea
	case "DATE":
		return oidDate
	case "TIME", "TIME_NS":
		return oidTime
	case "TIMESTAMP", "TIMESTAMP_S", "TIMESTAMP_MS", "TIMESTAMP_NS":
		return oidTimestamp
	case "TIMESTAMPTZ", "TIMESTAMP WITH TIME ZONE":
		return oidTimestamptz
	case "TIMETZ", "TIME WITH TIME ZONE":
		return oidTimetz
	case "INTERVAL":
		return oidInterval
	case "UUID":
		return oidUUID
	case "JSON":
		return oidJSON
	}
	if strings.HasPrefix(duck, "DECIMAL") {
		return oidNumeric
	}
	return oidText
}

// typeSize is pg_type.typlen for the OIDs oidOf gives (-1: variable).
func typeSize(oid uint32) int16 {
	switch oid {
	case oidBool:
		return 1
	case oidInt2:
		return 2
	case oidInt4, oidFloat4, oidDate:
		return 4
	case oidInt8, oidFloat8, oidTime, oidTimestamp, oidTimestamptz:
		return 8
	case oidTimetz:
		return 12
	case oidInterval, oidUUID:
		return 16
	}
	return -1
}

// column is how one answer column is sent.
type column struct {
	oid    uint32
	format int16 // 0 text, 1 binary
}

// columnsFor describes answer columns: named as names says where it says
// (pgNames), else as DuckDB named them, and sent in formats.
func columnsFor(cols []engine.Column, names []string, formats []int16) ([]pgproto3.FieldDescription, []column, error) {
	fields := make([]pgproto3.FieldDescription, len(cols))
	enc := make([]column, len(cols))
	if len(formats) > 1 && len(formats) != len(cols) {
		return nil, nil, &pgError{code: "08P01", msg: fmt.Sprintf("bind message has %d result formats for %d columns", len(formats), len(cols))}
	}
	for i, c := range cols {
		oid := oidOf(c.Type)
		f := formatAt(formats, i)
		if f != 0 && f != 1 {
			return nil, nil, &pgError{code: "08P01", msg: fmt.Sprintf("result format %d is neither text (0) nor binary (1)", f)}
		}
		name := pgColumnName(c.Name)
		if i < len(names) && names[i] != "" {
			name = names[i]
		}
		fields[i] = pgproto3.FieldDescription{Name: []byte(name), DataTypeOID: oid, DataTypeSize: typeSize(oid), TypeModifier: -1, Format: f}
		enc[i] = column{oid: oid, format: f}
	}
	return fields, enc, nil
}

// formatAt is column i's format in a Bind message's result formats:
// none, all text; one, every column's; else one per column.
func formatAt(formats []int16, i int) int16 {
	switch {
	case len(formats) == 1:
		return formats[0]
	case i < len(formats):
		return formats[i]
	}
	return 0
}

// text is PostgreSQL's text form of a value engine.Rows handed out; ok is
// false for NULL. DuckDB's text is PostgreSQL's for most types; booleans,
// float specials, blobs and intervals are spelled differently.
func text(c column, v any) (string, bool, error) {
	switch x := v.(type) {
	case nil:
		return "", false, nil
	case bool:
		if x {
			return "t", true, nil
		}
		return "f", true, nil
	case float64:
		return floatText(x), true, nil
	case json.Number:
		return floatWord(string(x)), true, nil
	case json.RawMessage:
		return string(x), true, nil
	case string:
		switch c.oid {
		case oidBytea:
			b, err := duckBlob(x)
			if err != nil {
				return "", false, err
			}
			return `\x` + hex.EncodeToString(b), true, nil
		case oidInterval:
			return intervalText(x), true, nil
		case oidFloat4, oidFloat8:
			return floatWord(x), true, nil
		case oidDate, oidTimestamp, oidTimestamptz:
			return pgTime(x), true, nil
		}
		return x, true, nil
	}
	return engine.Text(v), true, nil
}

func floatText(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// floatWord spells DuckDB's float specials as PostgreSQL does.
func floatWord(s string) string {
	switch strings.ToLower(s) {
	case "inf", "infinity", "+inf":
		return "Infinity"
	case "-inf", "-infinity":
		return "-Infinity"
	case "nan", "-nan":
		return "NaN"
	}
	return s
}

// duckBlob reads DuckDB's text of a BLOB: printable bytes as themselves,
// every other byte (and the backslash) as \xHH.
func duckBlob(s string) ([]byte, error) {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s)+0 && s[i+1] == 'x' {
			b, err := hex.DecodeString(s[i+2 : i+4])
			if err != nil {
				return nil, fmt.Errorf("blob text %q: %w", s, err)
			}
			out = append(out, b[0])
			i += 3
			continue
		}
		out = append(out, s[i])
	}
	return out, nil
}

// intervalText turns DuckDB's interval text ("1 year 2 months 3 days
// 04:05:06") into PostgreSQL's ("... 2 mons ...").
func intervalText(s string) string {
	f := strings.Fields(s)
	for i, w := range f {
		switch w {
		case "month":
			f[i] = "mon"
		case "months":
			f[i] = "mons"
		}
	}
	return strings.Join(f, " ")
}

// encodeValue is one value of a DataRow in the column's format: binary
// is made from the text form through pgx's codecs, so both formats carry
// the same value.
func encodeValue(m *pgtype.Map, c column, v any) ([]byte, error) {
	if t, ok := v.(pgText); ok {
		return encodeText(m, c, string(t))
	}
	if c.format == 1 {
		if b, ok := binaryValue(c.oid, v); ok {
			return b, nil
		}
	}
	s, ok, err := text(c, v)
	if err != nil || !ok {
		return nil, err
	}
	return encodeText(m, c, s)
}

// encodeText is a value in c's format from its PostgreSQL text.
func encodeText(m *pgtype.Map, c column, s string) ([]byte, error) {
	// Text's and json's binary form is their text; pgx's json codec would
	// read a JSON string and write it back unquoted.
	if c.format == 0 || c.oid == oidText || c.oid == oidVarchar || c.oid == oidJSON {
		return []byte(s), nil
	}
	if b, ok := appendBinary(nil, c.oid, s); ok {
		return b[4:], nil
	}
	return encodeTextPgx(m, c, s)
}

// encodeTextPgx is encodeText through pgx's codecs: its text read into a
// Go value, written again in c's format.
func encodeTextPgx(m *pgtype.Map, c column, s string) ([]byte, error) {
	t, found := m.TypeForOID(c.oid)
	if !found {
		return []byte(s), nil
	}
	val, err := t.Codec.DecodeValue(m, c.oid, pgtype.TextFormatCode, []byte(s))
	if err != nil {
		return nil, fmt.Errorf("value %q as %s: %w", s, t.Name, err)
	}
	if inf, ok := val.(pgtype.InfinityModifier); ok {
		// pgx reads infinity as the bare modifier, which it cannot write.
		switch c.oid {
		case oidDate:
			val = pgtype.Date{InfinityModifier: inf, Valid: true}
		case oidTimestamp:
			val = pgtype.Timestamp{InfinityModifier: inf, Valid: true}
		case oidTimestamptz:
			val = pgtype.Timestamptz{InfinityModifier: inf, Valid: true}
		}
	}
	out, err := m.Encode(c.oid, pgtype.BinaryFormatCode, val, nil)
	if err != nil {
		return nil, fmt.Errorf("value %q as binary %s: %w", s, t.Name, err)
	}
	if out == nil {
		out = []byte{}
	}
	return out, nil
}

// binaryValue is the binary form of the integers, doubles and booleans
// the engine hands over typed, written directly: going through their text
// and pgx's codecs costs more than the rest of a row (oidOf sends each
// integer type as one that holds all its values).
func binaryValue(oid uint32, v any) ([]byte, bool) {
	var n uint64
	switch x := v.(type) {
	case int64:
		n = uint64(x)
	case uint64:
		n = x
	case float64:
		if oid != oidFloat8 {
			return nil, false
		}
		return binary.BigEndian.AppendUint64(nil, math.Float64bits(x)), true
	case bool:
		if oid != oidBool {
			return nil, false
		}
		if x {
			return []byte{1}, true
		}
		return []byte{0}, true
	default:
		return nil, false
	}
	switch oid {
	case oidInt2:
		return binary.BigEndian.AppendUint16(nil, uint16(n)), true
	case oidInt4:
		return binary.BigEndian.AppendUint32(nil, uint32(n)), true
	case oidInt8:
		return binary.BigEndian.AppendUint64(nil, n), true
	}
	return nil, false
}

// literal turns one bound parameter into SQL text for DuckDB: numbers and
// booleans checked and written bare (so the planner sees a literal to
// prune with), everything else as a quoted string, typed when the client
// said the type. Nothing of the value reaches the SQL unquoted.
func literal(m *pgtype.Map, oid uint32, format int16, raw []byte) (string, error) {
	if raw == nil {
		return nullLiteral(oid), nil
	}
	s := string(raw)
	if format == 1 {
		t, ok := m.TypeForOID(oid)
		if !ok {
			return "", fmt.Errorf("binary parameters of type oid %d are not supported; send it as text", oid)
		}
		v, err := t.Codec.DecodeValue(m, oid, pgtype.BinaryFormatCode, raw)
		if err != nil {
			return "", err
		}
		txt, err := m.Encode(oid, pgtype.TextFormatCode, v, nil)
		if err != nil {
			return "", err
		}
		s = string(txt)
	}
	switch oid {
	case oidInt2, oidInt4, oidInt8, oidOID:
		if _, err := strconv.ParseInt(s, 10, 64); err != nil {
			return "", fmt.Errorf("%q is not an integer", s)
		}
		return " " + s, nil
	case oidFloat4, oidFloat8, oidNumeric:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil && !strings.EqualFold(s, "NaN") && !strings.Contains(strings.ToLower(s), "inf") {
			return "", fmt.Errorf("%q is not a number", s)
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return quote(s) + "::DOUBLE", nil
		}
		if oid == oidNumeric {
			return " " + s, nil
		}
		return " " + s + "::" + map[uint32]string{oidFloat4: "FLOAT", oidFloat8: "DOUBLE"}[oid], nil
	case oidBool:
		switch strings.ToLower(s) {
		case "t", "true", "1", "on", "yes", "y":
			return "TRUE", nil
		case "f", "false", "0", "off", "no", "n":
			return "FALSE", nil
		}
		return "", fmt.Errorf("%q is not a boolean", s)
	case oidBytea:
		b, err := hex.DecodeString(strings.TrimPrefix(s, `\x`))
		if err != nil {
			return "", fmt.Errorf("bytea parameter: %w", err)
		}
		var sb strings.Builder
		for _, c := range b {
			fmt.Fprintf(&sb, `\x%02X`, c)
		}
		return quote(sb.String()) + "::BLOB", nil
	case oidDate:
		return "DATE " + quote(duckTime(s)), nil
	case oidTimestamp:
		return "TIMESTAMP " + quote(duckTime(s)), nil
	case oidTimestamptz:
		return "TIMESTAMPTZ " + quote(duckTime(s)), nil
	case oidTime:
		return "TIME " + quote(s), nil
	case oidInterval:
		return "INTERVAL " + quote(s), nil
	case oidUUID:
		return "UUID " + quote(s), nil
	case oidJSON:
		return quote(s) + "::JSON", nil
	}
	return quote(s), nil
}

// pgTime is DuckDB's text of a date or timestamp as PostgreSQL spells
// it: a year before the first is "0044-03-15 (BC) 10:00:00+00" in
// DuckDB's text and "0044-03-15 10:00:00+00 BC" in PostgreSQL's, which
// its clients read.
func pgTime(s string) string {
	date, rest, ok := strings.Cut(s, " (BC)")
	if !ok {
		return s
	}
	return date + rest + " BC"
}

// duckTime is PostgreSQL's text of a date or timestamp as DuckDB reads
// it (pgTime's inverse). The difference is not only of spelling: DuckDB's
// date cast ignores what follows a date, so it read "0044-03-15 BC" as
// the year 44 after Christ.
func duckTime(s string) string {
	t := strings.TrimSpace(s)
	if len(t) < 3 || !strings.EqualFold(t[len(t)-3:], " BC") {
		return s
	}
	t = strings.TrimSpace(t[:len(t)-3])
	// The date ends at the first space, or at ISO 8601's T.
	i := strings.IndexAny(t, " Tt")
	if i < 0 {
		return t + " (BC)"
	}
	return t[:i] + " (BC) " + strings.TrimSpace(t[i+1:])
}

func nullLiteral(oid uint32) string {
	switch oid {
	case oidInt2:
		return "NULL::SMALLINT"
	case oidInt4:
		return "NULL::INTEGER"
	case oidInt8:
		return "NULL::BIGINT"
	case oidFloat4:
		return "NULL::FLOAT"
	case oidFloat8:
		return "NULL::DOUBLE"
	case oidBool:
		return "NULL::BOOLEAN"
	case oidDate:
		return "NULL::DATE"
	case oidTimestamp:
		return "NULL::TIMESTAMP"
	case oidTimestamptz:
		return "NULL::TIMESTAMPTZ"
	case oidBytea:
		return "NULL::BLOB"
	}
	return "NULL"
}

// sampleLiteral stands for a parameter of the type when only the answer's
// columns are wanted: a value of that type, not NULL, whose type DuckDB
// would fold away (a NULL concatenated is a NULL of no type).
func sampleLiteral(oid uint32) string {
	switch oid {
	case oidInt2, oidInt4, oidInt8, oidOID:
		return literalOrNull(oid, "0")
	case oidFloat4, oidFloat8, oidNumeric:
		return literalOrNull(oid, "0")
	case oidBool:
		return "FALSE"
	case oidDate:
		return "DATE '2000-01-01'"
	case oidTimestamp:
		return "TIMESTAMP '2000-01-01 00:00:00'"
	case oidTimestamptz:
		return "TIMESTAMPTZ '2000-01-01 00:00:00+00'"
	case oidTime:
		return "TIME '00:00:00'"
	case oidInterval:
		return "INTERVAL '0 days'"
	case oidUUID:
		return "UUID '00000000-0000-0000-0000-000000000000'"
	case oidBytea:
		return "''::BLOB"
	case oidJSON:
		return "'null'::JSON"
	}
	return "''"
}

func literalOrNull(oid uint32, v string) string {
	lit, err := literal(nil, oid, 0, []byte(v))
	if err != nil {
		return nullLiteral(oid)
	}
	return lit
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
