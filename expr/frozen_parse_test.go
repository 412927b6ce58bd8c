package expr

// A frozen copy of the parser as it was before its binary-operator loops
// were folded and its quote scanning shared with package types, kept to
// show the two agree (see TestParseMatchesFrozen).

import (
	"fmt"
	"strings"
)

// Parse reads a WHERE clause in DuckDB syntax.
func frozenParse(text string) (Node, error) {
	p := &frozenParser{lx: frozenLexer{src: text}}
	p.advance()
	if p.tok.kind == ftEOF {
		return nil, p.errf(0, "empty predicate")
	}
	n, err := p.expr(0)
	if err != nil {
		return nil, err
	}
	if p.err != nil {
		return nil, p.err
	}
	if p.tok.kind != ftEOF {
		return nil, p.errf(p.tok.pos, "unexpected %s", p.tok.describe())
	}
	return n, nil
}

type frozenTokKind uint8

const (
	ftEOF frozenTokKind = iota
	ftIdent
	ftQIdent
	ftString
	ftNumber
	ftOp
)

type frozenToken struct {
	kind frozenTokKind
	text string // identifiers lower-cased (keywords); strings unescaped
	raw  string
	pos  int
}

func (t frozenToken) describe() string {
	if t.kind == ftEOF {
		return "end of text"
	}
	return fmt.Sprintf("%q", t.raw)
}

type frozenLexer struct {
	src string
	off int
}

func (lx *frozenLexer) next() (frozenToken, error) {
	s := lx.src
	for lx.off < len(s) {
		c := s[lx.off]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			lx.off++
			continue
		}
		if c == '-' && lx.off+1 < len(s) && s[lx.off+1] == '-' { // -- comment
			for lx.off < len(s) && s[lx.off] != '\n' {
				lx.off++
			}
			continue
		}
		if c == '/' && lx.off+1 < len(s) && s[lx.off+1] == '*' {
			// /* comment */, nested as in DuckDB.
			start, depth := lx.off, 0
			for {
				switch {
				case lx.off+1 >= len(s):
					return frozenToken{}, &SyntaxError{Text: s, Pos: start, Msg: "unterminated /* comment"}
				case s[lx.off] == '/' && s[lx.off+1] == '*':
					depth++
					lx.off += 2
				case s[lx.off] == '*' && s[lx.off+1] == '/':
					depth--
					lx.off += 2
				default:
					lx.off++
				}
				if depth == 0 {
					break
				}
			}
			continue
		}
		break
	}
	start := lx.off
	if lx.off >= len(s) {
		return frozenToken{kind: ftEOF, pos: start}, nil
	}
	c := s[lx.off]
	switch {
	case c == '\'' || c == '"':
		var sb strings.Builder
		lx.off++
		for {
			if lx.off >= len(s) {
				return frozenToken{}, &SyntaxError{Text: s, Pos: start, Msg: "unterminated quote"}
			}
			if s[lx.off] == c {
				if lx.off+1 < len(s) && s[lx.off+1] == c {
					sb.WriteByte(c)
					lx.off += 2
					continue
				}
				lx.off++
				break
			}
			sb.WriteByte(s[lx.off])
			lx.off++
		}
		k := ftString
		if c == '"' {
			k = ftQIdent
		}
		return frozenToken{kind: k, text: sb.String(), raw: s[start:lx.off], pos: start}, nil
	case c >= '0' && c <= '9' || (c == '.' && lx.off+1 < len(s) && s[lx.off+1] >= '0' && s[lx.off+1] <= '9'):
		for lx.off < len(s) && (s[lx.off] >= '0' && s[lx.off] <= '9' || s[lx.off] == '.' || s[lx.off] == '_') {
			lx.off++
		}
		if lx.off < len(s) && (s[lx.off] == 'e' || s[lx.off] == 'E') {
			j := lx.off + 1
			if j < len(s) && (s[j] == '+' || s[j] == '-') {
				j++
			}
			if j < len(s) && s[j] >= '0' && s[j] <= '9' {
				lx.off = j
				for lx.off < len(s) && s[lx.off] >= '0' && s[lx.off] <= '9' {
					lx.off++
				}
			}
		}
		raw := s[start:lx.off]
		return frozenToken{kind: ftNumber, text: strings.ReplaceAll(raw, "_", ""), raw: raw, pos: start}, nil
	case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80:
		for lx.off < len(s) {
			d := s[lx.off]
			if d == '_' || d >= 'a' && d <= 'z' || d >= 'A' && d <= 'Z' || d >= '0' && d <= '9' || d >= 0x80 || d == '$' {
				lx.off++
				continue
			}
			break
		}
		raw := s[start:lx.off]
		return frozenToken{kind: ftIdent, text: strings.ToLower(raw), raw: raw, pos: start}, nil
	}
	for _, op := range []string{"!~~*", "!~~", "~~*", "~~", "::", "<>", "!=", "<=", ">=", "==", "||", "=", "<", ">", "(", ")", ",", "+", "-", "*", "/", "%", ".", "[", "]"} {
		if strings.HasPrefix(s[lx.off:], op) {
			lx.off += len(op)
			return frozenToken{kind: ftOp, text: op, raw: op, pos: start}, nil
		}
	}
	return frozenToken{}, &SyntaxError{Text: s, Pos: start, Msg: fmt.Sprintf("unexpected character %q", c)}
}

type frozenParser struct {
	lx    frozenLexer
	tok   frozenToken
	err   error
	depth int
}

func (p *frozenParser) advance() {
	if p.err != nil {
		return
	}
	t, err := p.lx.next()
	if err != nil {
		p.err = err
		p.tok = frozenToken{kind: ftEOF, pos: len(p.lx.src)}
		return
	}
	p.tok = t
}

func (p *frozenParser) errf(pos int, format string, args ...any) error {
	if p.err != nil {
		return p.err
	}
	return &SyntaxError{Text: p.lx.src, Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

func (p *frozenParser) isOp(op string) bool { return p.tok.kind == ftOp && p.tok.text == op }
func (p *frozenParser) isKw(kw string) bool { return p.tok.kind == ftIdent && p.tok.text == kw }

func (p *frozenParser) expectOp(op string) error {
	if !p.isOp(op) {
		return p.errf(p.tok.pos, "expected %q, found %s", op, p.tok.describe())
	}
	p.advance()
	return nil
}

func (p *frozenParser) expectKw(kw string) error {
	if !p.isKw(kw) {
		return p.errf(p.tok.pos, "expected %s, found %s", strings.ToUpper(kw), p.tok.describe())
	}
	p.advance()
	return nil
}

// Precedence, lowest first: OR, AND, NOT, comparison/IS/BETWEEN/IN/LIKE,
// || and + -, * / %, unary -, :: and primaries.
func (p *frozenParser) expr(minPrec int) (Node, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxDepth {
		return nil, p.errf(p.tok.pos, "expression nested deeper than %d", maxDepth)
	}
	return p.or()
}

func (p *frozenParser) or() (Node, error) {
	l, err := p.and()
	if err != nil {
		return nil, err
	}
	for p.isKw("or") {
		at := p.tok.pos
		p.advance()
		r, err := p.and()
		if err != nil {
			return nil, err
		}
		l = &Binary{Op: "OR", L: l, R: r, At: at}
	}
	return l, nil
}

func (p *frozenParser) and() (Node, error) {
	l, err := p.not()
	if err != nil {
		return nil, err
	}
	for p.isKw("and") {
		at := p.tok.pos
		p.advance()
		r, err := p.not()
		if err != nil {
			return nil, err
		}
		l = &Binary{Op: "AND", L: l, R: r, At: at}
	}
	return l, nil
}

func (p *frozenParser) not() (Node, error) {
	if p.isKw("not") {
		at := p.tok.pos
		p.advance()
		p.depth++
		defer func() { p.depth-- }()
		if p.depth > maxDepth {
			return nil, p.errf(at, "expression nested deeper than %d", maxDepth)
		}
		x, err := p.not()
		if err != nil {
			return nil, err
		}
		return &Unary{Op: "NOT", X: x, At: at}, nil
	}
	return p.predicate()
}

func (p *frozenParser) predicate() (Node, error) {
	x, err := p.additive()
	if err != nil {
		return nil, err
	}
	for {
		at := p.tok.pos
		switch {
		case p.tok.kind == ftOp && (p.isOp("=") || p.isOp("==") || p.isOp("<>") || p.isOp("!=") || p.isOp("<") || p.isOp("<=") || p.isOp(">") || p.isOp(">=")):
			op := p.tok.text
			switch op {
			case "==":
				op = "="
			case "!=":
				op = "<>"
			}
			p.advance()
			r, err := p.additive()
			if err != nil {
				return nil, err
			}
			x = &Binary{Op: op, L: x, R: r, At: at}
		case p.isOp("~~") || p.isOp("!~~"):
			// DuckDB prints LIKE as ~~ and NOT LIKE as !~~.
			not := p.isOp("!~~")
			p.advance()
			pat, err := p.additive()
			if err != nil {
				return nil, err
			}
			x = &Like{X: x, Pattern: pat, Not: not, At: at}
		case p.isOp("~~*") || p.isOp("!~~*"):
			not := p.isOp("!~~*")
			p.advance()
			pat, err := p.additive()
			if err != nil {
				return nil, err
			}
			x = &Call{Name: "ilike", Args: []Node{x, pat}, At: at}
			if not {
				x = &Unary{Op: "NOT", X: x, At: at}
			}
		case p.isKw("is"):
			p.advance()
			not := false
			if p.isKw("not") {
				not = true
				p.advance()
			}
			switch {
			case p.isKw("null") || p.isKw("unknown"):
				p.advance()
				x = &IsNull{X: x, Not: not, At: at}
			case p.isKw("true") || p.isKw("false"):
				v := p.isKw("true")
				p.advance()
				x = &IsBool{X: x, Value: v, Not: not, At: at}
			case p.isKw("distinct"):
				p.advance()
				if err := p.expectKw("from"); err != nil {
					return nil, err
				}
				r, err := p.additive()
				if err != nil {
					return nil, err
				}
				x = &Distinct{L: x, R: r, Not: not, At: at}
			default:
				return nil, p.errf(p.tok.pos, "expected NULL, TRUE, FALSE, UNKNOWN or DISTINCT FROM after IS, found %s", p.tok.describe())
			}
		case p.isKw("isnull"):
			p.advance()
			x = &IsNull{X: x, At: at}
		case p.isKw("notnull"):
			p.advance()
			x = &IsNull{X: x, Not: true, At: at}
		case p.isKw("not") || p.isKw("between") || p.isKw("in") || p.isKw("like") || p.isKw("ilike"):
			not := false
			if p.isKw("not") {
				not = true
				p.advance()
			}
			switch {
			case p.isKw("between"):
				p.advance()
				if p.isKw("symmetric") {
					// DuckDB parses it but does not run it ("Not implemented
					// Error: Expression type T_List"), so neither does rocklake.
					return nil, p.errf(p.tok.pos, "BETWEEN SYMMETRIC is not supported by DuckDB")
				}
				if p.isKw("asymmetric") {
					p.advance()
				}
				lo, err := p.additive()
				if err != nil {
					return nil, err
				}
				if err := p.expectKw("and"); err != nil {
					return nil, err
				}
				hi, err := p.additive()
				if err != nil {
					return nil, err
				}
				x = &Between{X: x, Lo: lo, Hi: hi, Not: not, At: at}
			case p.isKw("in"):
				p.advance()
				if err := p.expectOp("("); err != nil {
					return nil, err
				}
				var list []Node
				if !p.isOp(")") {
					for {
						e, err := p.expr(0)
						if err != nil {
							return nil, err
						}
						list = append(list, e)
						if p.isOp(",") {
							p.advance()
							continue
						}
						break
					}
				}
				if err := p.expectOp(")"); err != nil {
					return nil, err
				}
				x = &In{X: x, List: list, Not: not, At: at}
			case p.isKw("like") || p.isKw("ilike"):
				name := p.tok.text
				p.advance()
				pat, err := p.additive()
				if err != nil {
					return nil, err
				}
				var esc Node
				if p.isKw("escape") {
					p.advance()
					if esc, err = p.additive(); err != nil {
						return nil, err
					}
				}
				if name == "ilike" {
					// Case-insensitive matching: opaque to the planner.
					x = &Call{Name: "ilike", Args: []Node{x, pat}, At: at}
					if not {
						x = &Unary{Op: "NOT", X: x, At: at}
					}
				} else {
					x = &Like{X: x, Pattern: pat, Escape: esc, Not: not, At: at}
				}
			default:
				return nil, p.errf(p.tok.pos, "expected BETWEEN, IN or LIKE after NOT, found %s", p.tok.describe())
			}
		default:
			return x, nil
		}
	}
}

func (p *frozenParser) additive() (Node, error) {
	l, err := p.multiplicative()
	if err != nil {
		return nil, err
	}
	for p.isOp("+") || p.isOp("-") || p.isOp("||") {
		op, at := p.tok.text, p.tok.pos
		p.advance()
		r, err := p.multiplicative()
		if err != nil {
			return nil, err
		}
		l = &Binary{Op: op, L: l, R: r, At: at}
	}
	return l, nil
}

func (p *frozenParser) multiplicative() (Node, error) {
	l, err := p.unary()
	if err != nil {
		return nil, err
	}
	for p.isOp("*") || p.isOp("/") || p.isOp("%") {
		op, at := p.tok.text, p.tok.pos
		p.advance()
		r, err := p.unary()
		if err != nil {
			return nil, err
		}
		l = &Binary{Op: op, L: l, R: r, At: at}
	}
	return l, nil
}

func (p *frozenParser) unary() (Node, error) {
	if p.isOp("-") || p.isOp("+") {
		op, at := p.tok.text, p.tok.pos
		p.advance()
		p.depth++
		defer func() { p.depth-- }()
		if p.depth > maxDepth {
			return nil, p.errf(at, "expression nested deeper than %d", maxDepth)
		}
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		if l, ok := x.(*Lit); ok && l.Kind == LitNumber && l.Type == "" {
			if op == "-" {
				// - -3 is 3: the sign flips, as DuckDB folds it.
				if t, neg := strings.CutPrefix(l.Text, "-"); neg {
					l.Text = t
				} else {
					l.Text = "-" + l.Text
				}
			}
			l.At = at
			return l, nil
		}
		if l, ok := x.(*Lit); ok && l.Kind == LitNumber && op == "-" && frozenNegatableType(l.Type) {
			// -1.5::FLOAT is -(1.5::FLOAT): the negation of a float or
			// decimal is exact.
			if t, neg := strings.CutPrefix(l.Text, "-"); neg {
				l.Text = t
			} else {
				l.Text = "-" + l.Text
			}
			l.At = at
			return l, nil
		}
		if op == "+" {
			return x, nil
		}
		return &Unary{Op: "-", X: x, At: at}, nil
	}
	return p.postfix()
}

func (p *frozenParser) postfix() (Node, error) {
	x, err := p.primary()
	if err != nil {
		return nil, err
	}
	for p.isOp("::") {
		at := p.tok.pos
		p.advance()
		typ, err := p.typeName()
		if err != nil {
			return nil, err
		}
		x = frozenCastNode(x, typ, at)
	}
	return x, nil
}

// frozenNegatableType reports whether a literal of the type negates exactly
// (FLOAT, DOUBLE, DECIMAL; an integer can overflow).
func frozenNegatableType(typ string) bool {
	t := strings.ToLower(strings.TrimSpace(typ))
	for _, p := range []string{"float", "real", "double", "decimal", "numeric"} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// frozenCastNode makes a typed literal of a cast literal, else a Cast.
func frozenCastNode(x Node, typ string, at int) Node {
	if l, ok := x.(*Lit); ok && l.Kind != LitNull && (l.Type == "" || strings.EqualFold(l.Type, typ)) {
		return &Lit{Kind: l.Kind, Text: l.Text, Type: typ, At: l.At}
	}
	// A cast of a typed literal converts a value, not a text:
	// CAST(CAST('2.5' AS DOUBLE) AS INTEGER) is 2, CAST('2.5' AS INTEGER) 3.
	if l, ok := x.(*Lit); ok && l.Kind == LitNull {
		return l // a typed NULL is still NULL
	}
	return &Cast{X: x, Type: typ, At: at}
}

// typeName reads a type name with its parameters and array suffixes, and
// returns its text.
func (p *frozenParser) typeName() (string, error) {
	if p.tok.kind != ftIdent && p.tok.kind != ftQIdent {
		return "", p.errf(p.tok.pos, "expected a type name, found %s", p.tok.describe())
	}
	start := p.tok.pos
	end := p.tok.pos + len(p.tok.raw)
	p.advance()
	// Multi-word names: TIMESTAMP WITH TIME ZONE, DOUBLE PRECISION, ...
	for p.tok.kind == ftIdent && (p.tok.text == "with" || p.tok.text == "without" || p.tok.text == "time" || p.tok.text == "zone" || p.tok.text == "precision" || p.tok.text == "varying") {
		end = p.tok.pos + len(p.tok.raw)
		p.advance()
	}
	if p.isOp("(") {
		depth := 0
		for {
			if p.tok.kind == ftEOF {
				return "", p.errf(p.tok.pos, "unbalanced parentheses in type")
			}
			if p.isOp("(") {
				depth++
			}
			if p.isOp(")") {
				depth--
			}
			end = p.tok.pos + len(p.tok.raw)
			p.advance()
			if depth == 0 {
				break
			}
		}
	}
	for p.isOp("[") {
		p.advance()
		if p.tok.kind == ftNumber {
			p.advance()
		}
		end = p.tok.pos + len(p.tok.raw)
		if err := p.expectOp("]"); err != nil {
			return "", err
		}
	}
	return p.lx.src[start:end], nil
}

// frozenTypedLiteralKeywords start `TYPE 'text'` literals.
var frozenTypedLiteralKeywords = map[string]bool{
	"date": true, "time": true, "timestamp": true, "timestamptz": true, "interval": true, "uuid": true,
	"decimal": true, "numeric": true, "blob": true, "varchar": true, "integer": true, "bigint": true,
	"double": true, "float": true, "real": true, "boolean": true, "timetz": true, "timestamp_ns": true,
	"timestamp_ms": true, "timestamp_s": true, "hugeint": true, "smallint": true, "tinyint": true,
}

func (p *frozenParser) primary() (Node, error) {
	t := p.tok
	switch t.kind {
	case ftNumber:
		p.advance()
		return &Lit{Kind: LitNumber, Text: t.text, At: t.pos}, nil
	case ftString:
		p.advance()
		return &Lit{Kind: LitString, Text: t.text, At: t.pos}, nil
	case ftQIdent:
		return p.ident()
	case ftOp:
		if t.text == "(" {
			p.advance()
			x, err := p.expr(0)
			if err != nil {
				return nil, err
			}
			if err := p.expectOp(")"); err != nil {
				return nil, err
			}
			return x, nil
		}
		return nil, p.errf(t.pos, "unexpected %s", t.describe())
	case ftEOF:
		return nil, p.errf(t.pos, "unexpected end of text")
	}
	switch t.text {
	case "true", "false":
		p.advance()
		return &Lit{Kind: LitBool, Text: t.text, At: t.pos}, nil
	case "null":
		p.advance()
		return &Lit{Kind: LitNull, At: t.pos}, nil
	case "cast", "try_cast":
		p.advance()
		if err := p.expectOp("("); err != nil {
			return nil, err
		}
		x, err := p.expr(0)
		if err != nil {
			return nil, err
		}
		if err := p.expectKw("as"); err != nil {
			return nil, err
		}
		typ, err := p.typeName()
		if err != nil {
			return nil, err
		}
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
		if t.text == "try_cast" {
			return &Call{Name: "try_cast", Args: []Node{x}, At: t.pos}, nil
		}
		return frozenCastNode(x, typ, t.pos), nil
	case "and", "or", "not", "is", "in", "between", "like", "escape":
		return nil, p.errf(t.pos, "unexpected keyword %s", strings.ToUpper(t.text))
	}
	// TYPE 'text' typed literals.
	if frozenTypedLiteralKeywords[t.text] {
		save := p.lx.off
		saveTok := p.tok
		typ, err := p.typeName()
		if err == nil && p.tok.kind == ftString {
			s := p.tok
			p.advance()
			return &Lit{Kind: LitString, Text: s.text, Type: typ, At: t.pos}, nil
		}
		p.lx.off, p.tok, p.err = save, saveTok, nil
	}
	return p.ident()
}

// ident reads a (dotted) column reference or a function call.
func (p *frozenParser) ident() (Node, error) {
	start := p.tok.pos
	id := &Ident{At: start}
	for {
		switch p.tok.kind {
		case ftIdent:
			id.Parts = append(id.Parts, p.tok.raw)
			id.Quoted = append(id.Quoted, false)
		case ftQIdent:
			id.Parts = append(id.Parts, p.tok.text)
			id.Quoted = append(id.Quoted, true)
		default:
			return nil, p.errf(p.tok.pos, "expected a name, found %s", p.tok.describe())
		}
		p.advance()
		if !p.isOp(".") {
			break
		}
		p.advance()
	}
	qualified := len(id.Parts) == 2 && !id.Quoted[0] && !id.Quoted[1] &&
		(strings.EqualFold(id.Parts[0], "main") || strings.EqualFold(id.Parts[0], "pg_catalog"))
	if p.isOp("(") && (len(id.Parts) == 1 && !id.Quoted[0] || qualified) {
		p.advance()
		call := &Call{Name: strings.ToLower(id.Parts[len(id.Parts)-1]), At: start}
		if !p.isOp(")") {
			for {
				if p.isOp("*") { // count(*)
					p.advance()
				} else {
					a, err := p.expr(0)
					if err != nil {
						return nil, err
					}
					call.Args = append(call.Args, a)
				}
				if p.isOp(",") {
					p.advance()
					continue
				}
				break
			}
		}
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
		// DuckDB prints LIKE … ESCAPE as like_escape(x, pattern, escape).
		if (call.Name == "like_escape" || call.Name == "not_like_escape") && len(call.Args) == 3 {
			return &Like{X: call.Args[0], Pattern: call.Args[1], Escape: call.Args[2], Not: call.Name == "not_like_escape", At: start}, nil
		}
		return call, nil
	}
	return id, nil
}
