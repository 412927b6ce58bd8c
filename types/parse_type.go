package types

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rocklake/rocklake/internal/sqllex"
)

// aliases maps every lower-cased single-word type name rocklake accepts to its
// kind. DuckLake's names win where they clash with DuckDB's: DuckLake stores
// `int8` for an 8-bit integer, while DuckDB's own INT8 alias means BIGINT.
// A catalog's column_type text is DuckLake's, so `int8` is TINYINT here.
var aliases = map[string]Kind{
	"boolean": KindBoolean, "bool": KindBoolean, "logical": KindBoolean,

	"tinyint": KindTinyInt, "int8": KindTinyInt, "int1": KindTinyInt,
	"smallint": KindSmallInt, "int16": KindSmallInt, "int2": KindSmallInt, "short": KindSmallInt,
	"integer": KindInteger, "int32": KindInteger, "int4": KindInteger, "int": KindInteger, "signed": KindInteger,
	"bigint": KindBigInt, "int64": KindBigInt, "long": KindBigInt,
	"hugeint": KindHugeInt, "int128": KindHugeInt,

	"utinyint": KindUTinyInt, "uint8": KindUTinyInt,
	"usmallint": KindUSmallInt, "uint16": KindUSmallInt,
	"uinteger": KindUInteger, "uint32": KindUInteger,
	"ubigint": KindUBigInt, "uint64": KindUBigInt,
	"uhugeint": KindUHugeInt, "uint128": KindUHugeInt,

	"float": KindFloat, "float4": KindFloat, "float32": KindFloat, "real": KindFloat,
	"double": KindDouble, "float8": KindDouble, "float64": KindDouble,

	"decimal": KindDecimal, "numeric": KindDecimal,

	"date":         KindDate,
	"time":         KindTime,
	"time_ns":      KindTimeNS,
	"timetz":       KindTimeTZ,
	"timestamp":    KindTimestamp,
	"datetime":     KindTimestamp,
	"timestamp_us": KindTimestamp,
	"timestamp_s":  KindTimestampS,
	"timestamp_ms": KindTimestampMS,
	"timestamp_ns": KindTimestampNS,
	"timestamptz":  KindTimestampTZ,
	"interval":     KindInterval,
	"uuid":         KindUUID,

	"varchar": KindVarchar, "text": KindVarchar, "string": KindVarchar, "char": KindVarchar,
	"bpchar": KindVarchar, "nvarchar": KindVarchar,
	"blob": KindBlob, "bytea": KindBlob, "binary": KindBlob, "varbinary": KindBlob,
	"json": KindJSON,

	"enum":     KindEnum,
	"variant":  KindVariant,
	"geometry": KindGeometry,
	"list":     KindList,
	"array":    KindArray,
	"struct":   KindStruct,
	"row":      KindStruct,
	"map":      KindMap,
}

// TypeError reports type text that names a known type with bad parameters,
// or that is not well formed.
type TypeError struct {
	Text string // the whole type text
	Pos  int    // byte offset of the problem
	Msg  string
}

func (e *TypeError) Error() string {
	return fmt.Sprintf("invalid type %q at offset %d: %s", e.Text, e.Pos, e.Msg)
}

// ParseType reads a DuckDB or DuckLake type name, case-insensitively. A name
// it does not know becomes an Unknown type that keeps its text: such a column
// can be stored but is never used to prune. Text that is not well formed, or
// a known type with impossible parameters (decimal(40,2)), is an error.
func ParseType(text string) (Type, error) {
	p := &typeParser{src: text}
	p.next()
	if p.tok.kind == tokEOF {
		return Type{}, &TypeError{Text: text, Msg: "empty type"}
	}
	t, err := p.parseType()
	if err != nil {
		return Type{}, err
	}
	if p.tok.kind != tokEOF {
		return Type{}, p.errf("unexpected %s after the type", p.tok)
	}
	return t, nil
}

// MustParseType is ParseType for literals in code and tests.
func MustParseType(text string) Type {
	t, err := ParseType(text)
	if err != nil {
		panic(err)
	}
	return t
}

type tokKind uint8

const (
	tokEOF tokKind = iota
	tokIdent
	tokQuoted // "identifier"
	tokString // 'literal'
	tokNumber
	tokPunct
	tokBad
)

type token struct {
	kind tokKind
	text string // identifier lower-cased; quoted/string unescaped
	raw  string
	pos  int
}

func (t token) String() string {
	if t.kind == tokEOF {
		return "end of text"
	}
	return strconv.Quote(t.raw)
}

type typeParser struct {
	src string
	off int
	tok token
}

func (p *typeParser) errf(format string, args ...any) error {
	return &TypeError{Text: p.src, Pos: p.tok.pos, Msg: fmt.Sprintf(format, args...)}
}

func (p *typeParser) next() {
	s := p.src
	p.off = sqllex.SkipSpace(s, p.off)
	start := p.off
	if p.off >= len(s) {
		p.tok = token{kind: tokEOF, pos: start}
		return
	}
	c := s[p.off]
	switch {
	case c == '"' || c == '\'':
		text, end, ok := sqllex.Quoted(s, start)
		kind := tokQuoted
		switch {
		case !ok:
			kind = tokBad
		case c == '\'':
			kind = tokString
		}
		p.off = end
		p.tok = token{kind: kind, text: text, raw: s[start:end], pos: start}
	case sqllex.IsDigit(c):
		for p.off < len(s) && sqllex.IsDigit(s[p.off]) {
			p.off++
		}
		p.tok = token{kind: tokNumber, text: s[start:p.off], raw: s[start:p.off], pos: start}
	case sqllex.IsNameStart(c):
		for p.off < len(s) && sqllex.IsNamePart(s[p.off]) {
			p.off++
		}
		raw := s[start:p.off]
		p.tok = token{kind: tokIdent, text: strings.ToLower(raw), raw: raw, pos: start}
	case strings.IndexByte("()[],", c) >= 0:
		p.off++
		p.tok = token{kind: tokPunct, text: string(c), raw: string(c), pos: start}
	default:
		p.off++
		p.tok = token{kind: tokBad, raw: string(c), pos: start}
	}
}

func (p *typeParser) isPunct(c string) bool { return p.tok.kind == tokPunct && p.tok.text == c }

func (p *typeParser) expect(c string) error {
	if !p.isPunct(c) {
		return p.errf("expected %q, found %s", c, p.tok)
	}
	p.next()
	return nil
}

// peekWords reports whether the identifiers after the current token spell
// words, without consuming anything.
func (p *typeParser) peekWords(words ...string) bool {
	save, saveTok := p.off, p.tok
	defer func() { p.off, p.tok = save, saveTok }()
	for _, w := range words {
		p.next()
		if p.tok.kind != tokIdent || p.tok.text != w {
			return false
		}
	}
	return true
}

func (p *typeParser) skipWords(n int) {
	for range n {
		p.next()
	}
}

func (p *typeParser) parseType() (Type, error) {
	t, err := p.parseBase()
	if err != nil {
		return Type{}, err
	}
	for p.isPunct("[") {
		p.next()
		if p.isPunct("]") {
			p.next()
			elem := t
			t = Type{Kind: KindList, Elem: &elem}
			continue
		}
		if p.tok.kind != tokNumber {
			return Type{}, p.errf("expected an array size or ']', found %s", p.tok)
		}
		n, err := strconv.Atoi(p.tok.text)
		if err != nil || n <= 0 {
			return Type{}, p.errf("bad array size %s", p.tok)
		}
		p.next()
		if err := p.expect("]"); err != nil {
			return Type{}, err
		}
		elem := t
		t = Type{Kind: KindArray, Elem: &elem, Size: n}
	}
	return t, nil
}

func (p *typeParser) parseBase() (Type, error) {
	if p.tok.kind != tokIdent {
		return Type{}, p.errf("expected a type name, found %s", p.tok)
	}
	start := p.tok.pos
	name := p.tok.text
	// Multi-word SQL spellings.
	switch name {
	case "timestamp", "time":
		if p.peekWords("with", "time", "zone") {
			p.skipWords(4)
			if name == "time" {
				return Simple(KindTimeTZ), nil
			}
			return Simple(KindTimestampTZ), nil
		}
		if p.peekWords("without", "time", "zone") {
			p.skipWords(4)
			if name == "time" {
				return Simple(KindTime), nil
			}
			return Simple(KindTimestamp), nil
		}
	case "double":
		if p.peekWords("precision") {
			p.skipWords(2)
			return Simple(KindDouble), nil
		}
	case "character":
		if p.peekWords("varying") {
			p.skipWords(2)
			return p.finishVarchar()
		}
		p.next()
		return p.finishVarchar()
	}
	kind, known := aliases[name]
	if !known {
		return p.parseUnknown(start)
	}
	p.next()
	switch kind {
	case KindDecimal:
		return p.finishDecimal()
	case KindVarchar, KindBlob:
		if kind == KindVarchar {
			return p.finishVarchar()
		}
	case KindStruct:
		return p.finishStruct()
	case KindMap:
		return p.finishMap()
	case KindEnum:
		return p.finishEnum()
	case KindList:
		if p.isPunct("(") {
			p.next()
			elem, err := p.parseType()
			if err != nil {
				return Type{}, err
			}
			if err := p.expect(")"); err != nil {
				return Type{}, err
			}
			return List(elem), nil
		}
		return Simple(KindList), nil
	}
	if p.isPunct("(") {
		return Type{}, p.errf("type %s takes no parameters", kind)
	}
	return Simple(kind), nil
}

// parseUnknown swallows a name and any balanced parenthesised parameters,
// keeping their text.
func (p *typeParser) parseUnknown(start int) (Type, error) {
	end := p.off
	p.next()
	if p.isPunct("(") {
		depth := 0
		for {
			switch {
			case p.tok.kind == tokEOF:
				return Type{}, p.errf("unbalanced parentheses")
			case p.tok.kind == tokBad:
				return Type{}, p.errf("unexpected %s", p.tok)
			case p.isPunct("("):
				depth++
			case p.isPunct(")"):
				depth--
			}
			end = p.off
			p.next()
			if depth == 0 {
				break
			}
		}
	}
	return Unknown(strings.Trim(p.src[start:end], " \t\r\n")), nil
}

func (p *typeParser) number(what string, max int) (int, error) {
	if p.tok.kind != tokNumber {
		return 0, p.errf("expected %s, found %s", what, p.tok)
	}
	n, err := strconv.Atoi(p.tok.text)
	if err != nil || n > max {
		return 0, p.errf("%s %s is out of range (at most %d)", what, p.tok.text, max)
	}
	p.next()
	return n, nil
}

func (p *typeParser) finishDecimal() (Type, error) {
	if !p.isPunct("(") {
		// DuckDB's bare DECIMAL is DECIMAL(18,3).
		return Decimal(18, 3), nil
	}
	p.next()
	prec, err := p.number("decimal precision", 38)
	if err != nil {
		return Type{}, err
	}
	if prec < 1 {
		return Type{}, p.errf("decimal precision must be between 1 and 38")
	}
	scale := 0
	if p.isPunct(",") {
		p.next()
		if scale, err = p.number("decimal scale", 38); err != nil {
			return Type{}, err
		}
		if scale > prec {
			return Type{}, p.errf("decimal scale %d exceeds precision %d", scale, prec)
		}
	}
	if err := p.expect(")"); err != nil {
		return Type{}, err
	}
	return Decimal(prec, scale), nil
}

// finishVarchar accepts and drops a length: DuckDB ignores it too.
func (p *typeParser) finishVarchar() (Type, error) {
	if p.isPunct("(") {
		p.next()
		if _, err := p.number("varchar length", 1<<31-1); err != nil {
			return Type{}, err
		}
		if err := p.expect(")"); err != nil {
			return Type{}, err
		}
	}
	return Simple(KindVarchar), nil
}

func (p *typeParser) finishStruct() (Type, error) {
	if !p.isPunct("(") {
		return Simple(KindStruct), nil
	}
	p.next()
	t := Type{Kind: KindStruct, Fields: []Field{}}
	seen := map[string]bool{}
	for {
		if p.tok.kind != tokIdent && p.tok.kind != tokQuoted && p.tok.kind != tokString {
			return Type{}, p.errf("expected a struct field name, found %s", p.tok)
		}
		name := p.tok.text
		if p.tok.kind == tokIdent {
			name = p.tok.raw
		}
		// DuckDB field names are case-insensitive: a second field that differs
		// only in case is a duplicate.
		if seen[strings.ToLower(name)] {
			return Type{}, p.errf("duplicate struct field %q", name)
		}
		seen[strings.ToLower(name)] = true
		p.next()
		ft, err := p.parseType()
		if err != nil {
			return Type{}, err
		}
		t.Fields = append(t.Fields, Field{Name: name, Type: ft})
		if p.isPunct(",") {
			p.next()
			continue
		}
		if err := p.expect(")"); err != nil {
			return Type{}, err
		}
		return t, nil
	}
}

func (p *typeParser) finishMap() (Type, error) {
	if !p.isPunct("(") {
		return Simple(KindMap), nil
	}
	p.next()
	k, err := p.parseType()
	if err != nil {
		return Type{}, err
	}
	if err := p.expect(","); err != nil {
		return Type{}, err
	}
	v, err := p.parseType()
	if err != nil {
		return Type{}, err
	}
	if err := p.expect(")"); err != nil {
		return Type{}, err
	}
	return Type{Kind: KindMap, Key: &k, Value: &v}, nil
}

func (p *typeParser) finishEnum() (Type, error) {
	if !p.isPunct("(") {
		return Simple(KindEnum), nil
	}
	p.next()
	labels := []string{}
	seen := map[string]bool{}
	for {
		if p.tok.kind != tokString {
			return Type{}, p.errf("expected an enum label in single quotes, found %s", p.tok)
		}
		if seen[p.tok.text] {
			return Type{}, p.errf("duplicate enum label %s", p.tok)
		}
		seen[p.tok.text] = true
		labels = append(labels, p.tok.text)
		p.next()
		if p.isPunct(",") {
			p.next()
			continue
		}
		if err := p.expect(")"); err != nil {
			return Type{}, err
		}
		return Enum(labels...), nil
	}
}

// TypeNames lists the type names ParseType knows, sorted: what a user may
// write in a column list.
func TypeNames() []string {
	out := make([]string, 0, len(aliases))
	for name := range aliases {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// FirstUnknown returns the text of the first Unknown type in t, nested
// types searched too.
func (t Type) FirstUnknown() (string, bool) {
	switch {
	case t.Kind == KindUnknown:
		return t.Text, true
	case t.Elem != nil:
		if s, ok := t.Elem.FirstUnknown(); ok {
			return s, true
		}
	}
	for _, f := range t.Fields {
		if s, ok := f.Type.FirstUnknown(); ok {
			return s, true
		}
	}
	for _, kv := range []*Type{t.Key, t.Value} {
		if kv != nil {
			if s, ok := kv.FirstUnknown(); ok {
				return s, true
			}
		}
	}
	return "", false
}
