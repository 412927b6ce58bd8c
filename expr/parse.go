package expr

import (
	"fmt"
	"strings"

	"github.com/rocklake/rocklake/internal/sqllex"
)

// Node is a parsed, unbound WHERE-clause expression.
type Node interface{ Pos() int }

// Ident is a column reference, possibly dotted (s.a for a struct field).
type Ident struct {
	Parts  []string
	Quoted []bool
	At     int
	sub    *subField // set by the binder for a VARIANT sub-field
}

// Lit is a literal: a number, a string, TRUE/FALSE or NULL. Type is set for
// typed literals (DATE '…', '…'::T, CAST(… AS T)) and holds the type text.
type Lit struct {
	Kind LitKind
	Text string
	Type string
	At   int
}

// LitKind says what a literal was written as.
type LitKind uint8

const (
	LitNumber LitKind = iota
	LitString
	LitBool
	LitNull
)

// Binary is a comparison (=, <>, <, <=, >, >=), AND, OR, or an arithmetic or
// string operator the planner treats as opaque.
type Binary struct {
	Op   string
	L, R Node
	At   int
}

// Unary is NOT or unary minus.
type Unary struct {
	Op string
	X  Node
	At int
}

// Between is x [NOT] BETWEEN lo AND hi.
type Between struct {
	X, Lo, Hi Node
	Not       bool
	At        int
}

// In is x [NOT] IN (list).
type In struct {
	X    Node
	List []Node
	Not  bool
	At   int
}

// IsNull is x IS [NOT] NULL.
type IsNull struct {
	X   Node
	Not bool
	At  int
}

// Distinct is l IS [NOT] DISTINCT FROM r: equality in which NULL equals
// NULL, never NULL itself. Not is set for IS NOT DISTINCT FROM.
type Distinct struct {
	L, R Node
	Not  bool
	At   int
}

// IsBool is x IS [NOT] TRUE or x IS [NOT] FALSE: never NULL (NULL IS TRUE
// is false, NULL IS NOT TRUE true).
type IsBool struct {
	X     Node
	Value bool
	Not   bool
	At    int
}

// Like is x [NOT] LIKE pattern [ESCAPE e].
type Like struct {
	X, Pattern Node
	Escape     Node
	Not        bool
	At         int
}

// Call is a function call; Cast a CAST(x AS T) or x::T of a non-literal.
type Call struct {
	Name string
	Args []Node
	At   int
}

type Cast struct {
	X    Node
	Type string
	At   int
}

func (n *Ident) Pos() int    { return n.At }
func (n *Lit) Pos() int      { return n.At }
func (n *Binary) Pos() int   { return n.At }
func (n *Unary) Pos() int    { return n.At }
func (n *Between) Pos() int  { return n.At }
func (n *In) Pos() int       { return n.At }
func (n *IsNull) Pos() int   { return n.At }
func (n *Distinct) Pos() int { return n.At }
func (n *IsBool) Pos() int   { return n.At }
func (n *Like) Pos() int     { return n.At }
func (n *Call) Pos() int     { return n.At }
func (n *Cast) Pos() int     { return n.At }

// SyntaxError reports malformed predicate text with the byte offset.
type SyntaxError struct {
	Text string
	Pos  int
	Msg  string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("syntax error at offset %d: %s%s", e.Pos, e.Msg, context(e.Text, e.Pos))
}

// context shows the text around pos with a caret under it, at most 60
// characters of it.
func context(text string, pos int) string {
	from, to := max(pos-30, 0), min(pos+30, len(text))
	prefix := ""
	if from > 0 {
		prefix = "..."
	}
	snippet := prefix + text[from:to]
	if to < len(text) {
		snippet += "..."
	}
	return fmt.Sprintf("\n  %s\n  %s^", snippet, strings.Repeat(" ", len(prefix)+pos-from))
}

// maxDepth bounds nesting (each parenthesised level costs two) so that
// hostile input cannot exhaust the stack.
const maxDepth = 10000

// Parse reads a WHERE clause in DuckDB syntax.
func Parse(text string) (Node, error) {
	p := &parser{lx: lexer{src: text}}
	p.advance()
	if p.tok.kind == tEOF {
		return nil, p.errf(0, "empty predicate")
	}
	n, err := p.expr()
	if err != nil {
		return nil, err
	}
	if p.err != nil {
		return nil, p.err
	}
	if p.tok.kind != tEOF {
		return nil, p.errf(p.tok.pos, "unexpected %s", p.tok.describe())
	}
	return n, nil
}

type tokKind uint8

const (
	tEOF tokKind = iota
	tIdent
	tQIdent
	tString
	tNumber
	tOp
)

type token struct {
	kind tokKind
	text string // identifiers lower-cased (keywords); strings unescaped
	raw  string
	pos  int
}

func (t token) describe() string {
	if t.kind == tEOF {
		return "end of text"
	}
	return fmt.Sprintf("%q", t.raw)
}

type lexer struct {
	src string
	off int
}

func (lx *lexer) next() (token, error) {
	s := lx.src
	for {
		lx.off = sqllex.SkipSpace(s, lx.off)
		if lx.off >= len(s) {
			break
		}
		c := s[lx.off]
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
					return token{}, &SyntaxError{Text: s, Pos: start, Msg: "unterminated /* comment"}
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
		return token{kind: tEOF, pos: start}, nil
	}
	c := s[lx.off]
	switch {
	case c == '\'' || c == '"':
		text, end, ok := sqllex.Quoted(s, start)
		lx.off = end
		if !ok {
			return token{}, &SyntaxError{Text: s, Pos: start, Msg: "unterminated quote"}
		}
		k := tString
		if c == '"' {
			k = tQIdent
		}
		return token{kind: k, text: text, raw: s[start:end], pos: start}, nil
	case sqllex.IsDigit(c) || (c == '.' && lx.off+1 < len(s) && sqllex.IsDigit(s[lx.off+1])):
		for lx.off < len(s) && (sqllex.IsDigit(s[lx.off]) || s[lx.off] == '.' || s[lx.off] == '_') {
			lx.off++
		}
		if lx.off < len(s) && (s[lx.off] == 'e' || s[lx.off] == 'E') {
			j := lx.off + 1
			if j < len(s) && (s[j] == '+' || s[j] == '-') {
				j++
			}
			if j < len(s) && sqllex.IsDigit(s[j]) {
				lx.off = j
				for lx.off < len(s) && sqllex.IsDigit(s[lx.off]) {
					lx.off++
				}
			}
		}
		raw := s[start:lx.off]
		return token{kind: tNumber, text: strings.ReplaceAll(raw, "_", ""), raw: raw, pos: start}, nil
	case sqllex.IsNameStart(c):
		// '$' continues a name, as in DuckDB.
		for lx.off < len(s) && (sqllex.IsNamePart(s[lx.off]) || s[lx.off] == '$') {
			lx.off++
		}
		raw := s[start:lx.off]
		return token{kind: tIdent, text: strings.ToLower(raw), raw: raw, pos: start}, nil
	}
	for _, op := range []string{"!~~*", "!~~", "~~*", "~~", "::", "&&", "<>", "!=", "<=", ">=", "==", "||", "=", "<", ">", "(", ")", ",", "+", "-", "*", "/", "%", ".", "[", "]"} {
		if strings.HasPrefix(s[lx.off:], op) {
			lx.off += len(op)
			return token{kind: tOp, text: op, raw: op, pos: start}, nil
		}
	}
	return token{}, &SyntaxError{Text: s, Pos: start, Msg: fmt.Sprintf("unexpected character %q", c)}
}

type parser struct {
	lx    lexer
	tok   token
	err   error
	depth int
}

func (p *parser) advance() {
	if p.err != nil {
		return
	}
	t, err := p.lx.next()
	if err != nil {
		p.err = err
		p.tok = token{kind: tEOF, pos: len(p.lx.src)}
		return
	}
	p.tok = t
}

func (p *parser) errf(pos int, format string, args ...any) error {
	if p.err != nil {
		return p.err
	}
	return &SyntaxError{Text: p.lx.src, Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) isOp(op string) bool { return p.tok.kind == tOp && p.tok.text == op }
func (p *parser) isKw(kw string) bool { return p.tok.kind == tIdent && p.tok.text == kw }

func (p *parser) expectOp(op string) error {
	if !p.isOp(op) {
		return p.errf(p.tok.pos, "expected %q, found %s", op, p.tok.describe())
	}
	p.advance()
	return nil
}

func (p *parser) expectKw(kw string) error {
	if !p.isKw(kw) {
		return p.errf(p.tok.pos, "expected %s, found %s", strings.ToUpper(kw), p.tok.describe())
	}
	p.advance()
	return nil
}

// Precedence, lowest first: OR, AND, NOT, comparison/IS/BETWEEN/IN/LIKE,
// || and + -, * / %, unary -, :: and primaries.
func (p *parser) expr() (Node, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxDepth {
		return nil, p.errf(p.tok.pos, "expression nested deeper than %d", maxDepth)
	}
	return p.binary(levelOr)
}

// Levels of left-associative binary operators, loosest first. NOT and the
// predicates bind between AND and +, and unary minus tighter than *, so
// the operands of AND and of * are read by those (see operand).
const (
	levelOr = iota
	levelAnd
	levelAdd
	levelMul
)

func (p *parser) binaryOp(level int) (string, bool) {
	switch level {
	case levelOr:
		return "OR", p.isKw("or")
	case levelAnd:
		return "AND", p.isKw("and")
	case levelAdd:
		return p.tok.text, p.isOp("+") || p.isOp("-") || p.isOp("||")
	}
	return p.tok.text, p.isOp("*") || p.isOp("/") || p.isOp("%")
}

func (p *parser) operand(level int) (Node, error) {
	switch level {
	case levelAnd:
		return p.not()
	case levelMul:
		return p.unary()
	}
	return p.binary(level + 1)
}

// binary groups to the left: a - b - c is (a - b) - c, as in DuckDB.
func (p *parser) binary(level int) (Node, error) {
	l, err := p.operand(level)
	if err != nil {
		return nil, err
	}
	for {
		op, ok := p.binaryOp(level)
		if !ok {
			return l, nil
		}
		at := p.tok.pos
		p.advance()
		r, err := p.operand(level)
		if err != nil {
			return nil, err
		}
		l = &Binary{Op: op, L: l, R: r, At: at}
	}
}

func (p *parser) not() (Node, error) {
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

func (p *parser) predicate() (Node, error) {
	x, err := p.binary(levelAdd)
	if err != nil {
		return nil, err
	}
	for {
		at := p.tok.pos
		switch {
		case p.tok.kind == tOp && (p.isOp("=") || p.isOp("==") || p.isOp("<>") || p.isOp("!=") || p.isOp("<") || p.isOp("<=") || p.isOp(">") || p.isOp(">=")):
			op := p.tok.text
			switch op {
			case "==":
				op = "="
			case "!=":
				op = "<>"
			}
			p.advance()
			r, err := p.binary(levelAdd)
			if err != nil {
				return nil, err
			}
			x = &Binary{Op: op, L: x, R: r, At: at}
		case p.isOp("&&"):
			p.advance()
			r, err := p.binary(levelAdd)
			if err != nil {
				return nil, err
			}
			x = &Call{Name: "&&", Args: []Node{x, r}, At: at}
		case p.isOp("~~") || p.isOp("!~~"):
			// DuckDB prints LIKE as ~~ and NOT LIKE as !~~.
			not := p.isOp("!~~")
			p.advance()
			pat, err := p.binary(levelAdd)
			if err != nil {
				return nil, err
			}
			x = &Like{X: x, Pattern: pat, Not: not, At: at}
		case p.isOp("~~*") || p.isOp("!~~*"):
			not := p.isOp("!~~*")
			p.advance()
			pat, err := p.binary(levelAdd)
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
				r, err := p.binary(levelAdd)
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
				lo, err := p.binary(levelAdd)
				if err != nil {
					return nil, err
				}
				if err := p.expectKw("and"); err != nil {
					return nil, err
				}
				hi, err := p.binary(levelAdd)
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
						e, err := p.expr()
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
				pat, err := p.binary(levelAdd)
				if err != nil {
					return nil, err
				}
				var esc Node
				if p.isKw("escape") {
					p.advance()
					if esc, err = p.binary(levelAdd); err != nil {
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

func (p *parser) unary() (Node, error) {
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
		if op == "+" {
			if l, ok := x.(*Lit); ok && l.Kind == LitNumber && l.Type == "" {
				l.At = at
			}
			return x, nil
		}
		return Negate(x, at), nil
	}
	return p.postfix()
}

func (p *parser) postfix() (Node, error) {
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
		x = castNode(x, typ, at)
	}
	return x, nil
}

// negatableType reports whether a literal of the type negates exactly
// (FLOAT, DOUBLE, DECIMAL; an integer can overflow).
func negatableType(typ string) bool {
	t := strings.ToLower(strings.TrimSpace(typ))
	for _, p := range []string{"float", "real", "double", "decimal", "numeric"} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// castNode makes a typed literal of a cast literal, else a Cast.
func castNode(x Node, typ string, at int) Node {
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
func (p *parser) typeName() (string, error) {
	if p.tok.kind != tIdent && p.tok.kind != tQIdent {
		return "", p.errf(p.tok.pos, "expected a type name, found %s", p.tok.describe())
	}
	start := p.tok.pos
	end := p.tok.pos + len(p.tok.raw)
	p.advance()
	// Multi-word names: TIMESTAMP WITH TIME ZONE, DOUBLE PRECISION, ...
	for p.tok.kind == tIdent && (p.tok.text == "with" || p.tok.text == "without" || p.tok.text == "time" || p.tok.text == "zone" || p.tok.text == "precision" || p.tok.text == "varying") {
		end = p.tok.pos + len(p.tok.raw)
		p.advance()
	}
	if p.isOp("(") {
		depth := 0
		for {
			if p.tok.kind == tEOF {
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
		if p.tok.kind == tNumber {
			p.advance()
		}
		end = p.tok.pos + len(p.tok.raw)
		if err := p.expectOp("]"); err != nil {
			return "", err
		}
	}
	return p.lx.src[start:end], nil
}

// typedLiteralKeywords start `TYPE 'text'` literals.
var typedLiteralKeywords = map[string]bool{
	"date": true, "time": true, "timestamp": true, "timestamptz": true, "interval": true, "uuid": true,
	"decimal": true, "numeric": true, "blob": true, "varchar": true, "integer": true, "bigint": true,
	"double": true, "float": true, "real": true, "boolean": true, "timetz": true, "timestamp_ns": true,
	"timestamp_ms": true, "timestamp_s": true, "hugeint": true, "smallint": true, "tinyint": true,
}

func (p *parser) primary() (Node, error) {
	t := p.tok
	switch t.kind {
	case tNumber:
		p.advance()
		return &Lit{Kind: LitNumber, Text: t.text, At: t.pos}, nil
	case tString:
		p.advance()
		return &Lit{Kind: LitString, Text: t.text, At: t.pos}, nil
	case tQIdent:
		return p.ident()
	case tOp:
		if t.text == "(" {
			p.advance()
			x, err := p.expr()
			if err != nil {
				return nil, err
			}
			if err := p.expectOp(")"); err != nil {
				return nil, err
			}
			return x, nil
		}
		return nil, p.errf(t.pos, "unexpected %s", t.describe())
	case tEOF:
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
		x, err := p.expr()
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
		return castNode(x, typ, t.pos), nil
	case "and", "or", "not", "is", "in", "between", "like", "escape":
		return nil, p.errf(t.pos, "unexpected keyword %s", strings.ToUpper(t.text))
	}
	// TYPE 'text' typed literals.
	if typedLiteralKeywords[t.text] {
		save := p.lx.off
		saveTok := p.tok
		typ, err := p.typeName()
		if err == nil && p.tok.kind == tString {
			s := p.tok
			p.advance()
			return &Lit{Kind: LitString, Text: s.text, Type: typ, At: t.pos}, nil
		}
		p.lx.off, p.tok, p.err = save, saveTok, nil
	}
	return p.ident()
}

// ident reads a (dotted) column reference or a function call.
func (p *parser) ident() (Node, error) {
	start := p.tok.pos
	id := &Ident{At: start}
	for {
		switch p.tok.kind {
		case tIdent:
			id.Parts = append(id.Parts, p.tok.raw)
			id.Quoted = append(id.Quoted, false)
		case tQIdent:
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
					a, err := p.expr()
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
