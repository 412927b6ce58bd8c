package types

// A frozen copy of the type parser as it was before its quote scanning was
// shared with package expr, kept to show the two agree (see
// TestParseTypeMatchesFrozen).

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseType reads a DuckDB or DuckLake type name, case-insensitively. A name
// it does not know becomes an Unknown type that keeps its text: such a column
// can be stored but is never used to prune. Text that is not well formed, or
// a known type with impossible parameters (decimal(40,2)), is an error.
func frozenParseType(text string) (Type, error) {
	p := &frozenTypeParser{src: text}
	p.next()
	if p.tok.kind == ftokEOF {
		return Type{}, &TypeError{Text: text, Msg: "empty type"}
	}
	t, err := p.parseType()
	if err != nil {
		return Type{}, err
	}
	if p.tok.kind != ftokEOF {
		return Type{}, p.errf("unexpected %s after the type", p.tok)
	}
	return t, nil
}

type frozenTokKind uint8

const (
	ftokEOF frozenTokKind = iota
	ftokIdent
	ftokQuoted // "identifier"
	ftokString // 'literal'
	ftokNumber
	ftokPunct
	ftokBad
)

type frozenToken struct {
	kind frozenTokKind
	text string // identifier lower-cased; quoted/string unescaped
	raw  string
	pos  int
}

func (t frozenToken) String() string {
	if t.kind == ftokEOF {
		return "end of text"
	}
	return strconv.Quote(t.raw)
}

type frozenTypeParser struct {
	src string
	off int
	tok frozenToken
}

func (p *frozenTypeParser) errf(format string, args ...any) error {
	return &TypeError{Text: p.src, Pos: p.tok.pos, Msg: fmt.Sprintf(format, args...)}
}

func (p *frozenTypeParser) next() {
	s := p.src
	for p.off < len(s) && (s[p.off] == ' ' || s[p.off] == '\t' || s[p.off] == '\n' || s[p.off] == '\r') {
		p.off++
	}
	start := p.off
	if p.off >= len(s) {
		p.tok = frozenToken{kind: ftokEOF, pos: start}
		return
	}
	c := s[p.off]
	switch {
	case c == '"' || c == '\'':
		var sb strings.Builder
		p.off++
		for {
			if p.off >= len(s) {
				p.tok = frozenToken{kind: ftokBad, raw: s[start:], pos: start}
				return
			}
			if s[p.off] == c {
				if p.off+1 < len(s) && s[p.off+1] == c {
					sb.WriteByte(c)
					p.off += 2
					continue
				}
				p.off++
				break
			}
			sb.WriteByte(s[p.off])
			p.off++
		}
		kind := ftokQuoted
		if c == '\'' {
			kind = ftokString
		}
		p.tok = frozenToken{kind: kind, text: sb.String(), raw: s[start:p.off], pos: start}
	case c >= '0' && c <= '9':
		for p.off < len(s) && s[p.off] >= '0' && s[p.off] <= '9' {
			p.off++
		}
		p.tok = frozenToken{kind: ftokNumber, text: s[start:p.off], raw: s[start:p.off], pos: start}
	case frozenIsIdentByte(c):
		for p.off < len(s) && (frozenIsIdentByte(s[p.off]) || (s[p.off] >= '0' && s[p.off] <= '9')) {
			p.off++
		}
		raw := s[start:p.off]
		p.tok = frozenToken{kind: ftokIdent, text: strings.ToLower(raw), raw: raw, pos: start}
	case strings.IndexByte("()[],", c) >= 0:
		p.off++
		p.tok = frozenToken{kind: ftokPunct, text: string(c), raw: string(c), pos: start}
	default:
		p.off++
		p.tok = frozenToken{kind: ftokBad, raw: string(c), pos: start}
	}
}

func frozenIsIdentByte(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80
}

func (p *frozenTypeParser) isPunct(c string) bool { return p.tok.kind == ftokPunct && p.tok.text == c }

func (p *frozenTypeParser) expect(c string) error {
	if !p.isPunct(c) {
		return p.errf("expected %q, found %s", c, p.tok)
	}
	p.next()
	return nil
}

// peekWords reports whether the identifiers after the current frozenToken spell
// words, without consuming anything.
func (p *frozenTypeParser) peekWords(words ...string) bool {
	save, saveTok := p.off, p.tok
	defer func() { p.off, p.tok = save, saveTok }()
	for _, w := range words {
		p.next()
		if p.tok.kind != ftokIdent || p.tok.text != w {
			return false
		}
	}
	return true
}

func (p *frozenTypeParser) skipWords(n int) {
	for range n {
		p.next()
	}
}

func (p *frozenTypeParser) parseType() (Type, error) {
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
		if p.tok.kind != ftokNumber {
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

func (p *frozenTypeParser) parseBase() (Type, error) {
	if p.tok.kind != ftokIdent {
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
func (p *frozenTypeParser) parseUnknown(start int) (Type, error) {
	end := p.off
	p.next()
	if p.isPunct("(") {
		depth := 0
		for {
			switch {
			case p.tok.kind == ftokEOF:
				return Type{}, p.errf("unbalanced parentheses")
			case p.tok.kind == ftokBad:
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

func (p *frozenTypeParser) number(what string, max int) (int, error) {
	if p.tok.kind != ftokNumber {
		return 0, p.errf("expected %s, found %s", what, p.tok)
	}
	n, err := strconv.Atoi(p.tok.text)
	if err != nil || n > max {
		return 0, p.errf("%s %s is out of range (at most %d)", what, p.tok.text, max)
	}
	p.next()
	return n, nil
}

func (p *frozenTypeParser) finishDecimal() (Type, error) {
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
func (p *frozenTypeParser) finishVarchar() (Type, error) {
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

func (p *frozenTypeParser) finishStruct() (Type, error) {
	if !p.isPunct("(") {
		return Simple(KindStruct), nil
	}
	p.next()
	t := Type{Kind: KindStruct, Fields: []Field{}}
	seen := map[string]bool{}
	for {
		if p.tok.kind != ftokIdent && p.tok.kind != ftokQuoted && p.tok.kind != ftokString {
			return Type{}, p.errf("expected a struct field name, found %s", p.tok)
		}
		name := p.tok.text
		if p.tok.kind == ftokIdent {
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

func (p *frozenTypeParser) finishMap() (Type, error) {
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

func (p *frozenTypeParser) finishEnum() (Type, error) {
	if !p.isPunct("(") {
		return Simple(KindEnum), nil
	}
	p.next()
	labels := []string{}
	seen := map[string]bool{}
	for {
		if p.tok.kind != ftokString {
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
