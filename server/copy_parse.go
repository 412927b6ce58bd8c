package server

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rocklake/rocklake/internal/sqllex"
	"github.com/rocklake/rocklake/internal/writesql"
)

// copyStmt is a COPY ... FROM STDIN, read.
type copyStmt struct {
	table   string
	colList string   // "(a, b)" as written, or ""
	cols    []string // its names, unquoted
	opts    copyOptions
}

type copyOptions struct {
	format        string // text, csv, binary
	delim         byte
	null          string
	header, match bool
	quote, escape byte
	forceNotNull  []string
	forceNull     []string
	allNotNull    bool
	allNull       bool
	seen          map[string]bool
	delimSet      bool
	nullSet       bool
	quoteSet      bool
	escapeSet     bool
	// to: the options of a COPY ... TO, which FORCE_QUOTE (by column,
	// or all) is for.
	to         bool
	forceQuote []string
	allQuote   bool
}

// parseCopyStdin reads a COPY ... FROM STDIN; nil for any other statement
// (COPY from a path is Lake.Exec's, in DuckDB's syntax).
func parseCopyStdin(q string) (*copyStmt, error) {
	if sqllex.LeadingKeyword(q) != "COPY" {
		return nil, nil
	}
	lx := &copyLexer{src: strings.TrimSpace(q)}
	lx.next() // COPY
	name := lx.next()
	if name.kind != tokWord && name.kind != tokName {
		return nil, nil
	}
	cp := &copyStmt{table: name.text}
	if lx.peek().is(".") {
		return nil, fmt.Errorf("table %s.…: %w: rocklake tables have one-part names", name.text, writesql.ErrUnsupported)
	}
	if open := lx.peek(); open.is("(") {
		var err error
		if cp.cols, err = lx.columnList(); err != nil {
			return nil, err
		}
		cp.colList = strings.TrimSpace(lx.src[open.at:lx.off])
	}
	if !lx.next().isWord("FROM") {
		return nil, nil
	}
	if !lx.next().isWord("STDIN") {
		return nil, nil
	}
	if err := lx.options(&cp.opts); err != nil {
		return nil, err
	}
	if err := cp.opts.check(); err != nil {
		return nil, err
	}
	return cp, nil
}

// columnList reads a parenthesised list of column names.
func (lx *copyLexer) columnList() ([]string, error) {
	lx.next() // (
	var cols []string
	for {
		t := lx.next()
		if t.kind != tokWord && t.kind != tokName {
			return nil, lx.syntax(t, "a column name")
		}
		cols = append(cols, t.text)
		if t = lx.next(); t.is(")") {
			return cols, nil
		} else if !t.is(",") {
			return nil, lx.syntax(t, ", or ) in the column list")
		}
	}
}

// options reads what follows STDIN: [WITH] (option [value], ...), or the
// older option words, then nothing but a semicolon.
func (lx *copyLexer) options(o *copyOptions) error {
	o.seen = map[string]bool{}
	if lx.peek().isWord("WITH") {
		lx.next()
	}
	if lx.peek().is("(") {
		lx.next()
		for {
			t := lx.next()
			if t.kind != tokWord {
				return lx.syntax(t, "a COPY option")
			}
			var val copyValue
			if v := lx.peek(); !v.is(",") && !v.is(")") {
				var err error
				if val, err = lx.value(); err != nil {
					return err
				}
			}
			if err := o.set(strings.ToLower(t.text), val); err != nil {
				return err
			}
			if t = lx.next(); t.is(")") {
				break
			} else if !t.is(",") {
				return lx.syntax(t, ", or ) in the option list")
			}
		}
	} else {
		for {
			t := lx.peek()
			if t.kind != tokWord || t.isWord("WHERE") {
				break
			}
			lx.next()
			word := strings.ToLower(t.text)
			var err error
			switch word {
			case "binary":
				err = o.set("format", copyValue{word: "binary"})
			case "csv":
				err = o.set("format", copyValue{word: "csv"})
			case "freeze", "header":
				err = o.set(word, copyValue{})
			case "delimiter", "null", "quote", "escape", "encoding":
				if lx.peek().isWord("AS") {
					lx.next()
				}
				s := lx.next()
				if s.kind != tokString {
					return lx.syntax(s, "a quoted string after "+strings.ToUpper(word))
				}
				err = o.set(word, copyValue{str: s.text, isStr: true})
			case "force":
				w := lx.next()
				switch {
				case w.isWord("QUOTE"):
					word = "force_quote"
				case w.isWord("NULL"):
					word = "force_null"
				case w.isWord("NOT") && lx.next().isWord("NULL"):
					word = "force_not_null"
				default:
					return lx.syntax(w, "QUOTE, NOT NULL or NULL after FORCE")
				}
				var v copyValue
				if lx.peek().is("*") {
					lx.next()
					v.star = true
				} else {
					for {
						c := lx.next()
						if c.kind != tokWord && c.kind != tokName {
							return lx.syntax(c, "a column name")
						}
						v.cols = append(v.cols, c.text)
						if !lx.peek().is(",") {
							break
						}
						lx.next()
					}
				}
				err = o.set(word, v)
			default:
				return lx.syntax(t, "a COPY option")
			}
			if err != nil {
				return err
			}
		}
	}
	if lx.peek().isWord("WHERE") && !o.to {
		return &pgError{code: "0A000", msg: "COPY FROM STDIN ... WHERE is not supported",
			hint: "copy the rows into a table of their own, then INSERT ... SELECT ... WHERE"}
	}
	if lx.peek().is(";") {
		lx.next()
	}
	if t := lx.next(); t.kind != tokEnd {
		return lx.syntax(t, "the end of the statement")
	}
	return nil
}

// copyValue is an option's argument.
type copyValue struct {
	word  string // lower-cased
	str   string
	isStr bool
	star  bool
	cols  []string
}

func (lx *copyLexer) value() (copyValue, error) {
	t := lx.next()
	switch t.kind {
	case tokWord, tokNumber:
		return copyValue{word: strings.ToLower(t.text)}, nil
	case tokString:
		return copyValue{str: t.text, isStr: true}, nil
	}
	switch {
	case t.is("*"):
		return copyValue{star: true}, nil
	case t.is("("):
		var v copyValue
		for {
			c := lx.next()
			if c.kind != tokWord && c.kind != tokName {
				return v, lx.syntax(c, "a column name")
			}
			v.cols = append(v.cols, c.text)
			if c = lx.next(); c.is(")") {
				return v, nil
			} else if !c.is(",") {
				return v, lx.syntax(c, ", or ) in the column list")
			}
		}
	}
	return copyValue{}, lx.syntax(t, "an option value")
}

// text is a value that may be written as a string or a bare word.
func (v copyValue) text() string {
	if v.isStr {
		return v.str
	}
	return v.word
}

// boolean reads an option's Boolean argument (none is true).
func (v copyValue) boolean(name string) (bool, error) {
	if !v.isStr && v.word == "" {
		return true, nil
	}
	on, ok := parseBool(v.text())
	if !ok {
		return false, &pgError{code: "22023", msg: fmt.Sprintf("%s requires a Boolean value", name)}
	}
	return on, nil
}

// set records one option, checking it as PostgreSQL does.
func (o *copyOptions) set(name string, v copyValue) error {
	if o.seen[name] {
		return &pgError{code: "42601", msg: "conflicting or redundant options", hint: fmt.Sprintf("%s is given twice", name)}
	}
	o.seen[name] = true
	oneByte := func(what string) (byte, error) {
		s := v.text()
		if len(s) != 1 {
			return 0, &pgError{code: "0A000", msg: fmt.Sprintf("COPY %s must be a single one-byte character", what)}
		}
		return s[0], nil
	}
	var err error
	switch name {
	case "format":
		switch f := strings.ToLower(v.text()); f {
		case "text", "csv", "binary":
			o.format = f
		default:
			return &pgError{code: "22023", msg: fmt.Sprintf("COPY format %q not recognized", v.text())}
		}
	case "freeze":
		_, err = v.boolean("freeze")
	case "delimiter":
		o.delim, err = oneByte("delimiter")
		o.delimSet = true
	case "null":
		o.null, o.nullSet = v.text(), true
	case "header":
		if strings.EqualFold(v.text(), "match") {
			if o.to {
				return &pgError{code: "0A000", msg: `cannot use "match" with HEADER in COPY TO`}
			}
			o.header, o.match = true, true
		} else {
			o.header, err = v.boolean("header")
		}
	case "quote":
		o.quote, err = oneByte("quote")
		o.quoteSet = true
	case "escape":
		o.escape, err = oneByte("escape")
		o.escapeSet = true
	case "force_not_null", "force_null":
		if o.to {
			return &pgError{code: "0A000", msg: fmt.Sprintf("COPY %s cannot be used with COPY TO", strings.ToUpper(name))}
		}
		if name == "force_null" {
			o.forceNull, o.allNull = v.cols, v.star
		} else {
			o.forceNotNull, o.allNotNull = v.cols, v.star
		}
	case "force_quote":
		if !o.to {
			return &pgError{code: "0A000", msg: "COPY FORCE_QUOTE cannot be used with COPY FROM"}
		}
		o.forceQuote, o.allQuote = v.cols, v.star
	case "encoding":
		switch strings.ToLower(strings.ReplaceAll(v.text(), "-", "")) {
		case "utf8", "unicode":
		default:
			return &pgError{code: "0A000", msg: fmt.Sprintf("COPY reads and writes UTF8 only, not %q", v.text())}
		}
	case "on_error":
		if o.to {
			return &pgError{code: "0A000", msg: "COPY ON_ERROR cannot be used with COPY TO"}
		}
		if !strings.EqualFold(v.text(), "stop") {
			return &pgError{code: "0A000", msg: fmt.Sprintf("COPY ON_ERROR %s is not supported: a COPY with a bad row writes nothing", v.text())}
		}
	case "log_verbosity":
		// What ON_ERROR's notices say; ON_ERROR stops, so there are none.
	case "default":
		if o.to {
			return &pgError{code: "0A000", msg: "COPY DEFAULT cannot be used with COPY TO"}
		}
		return &pgError{code: "0A000", msg: "COPY DEFAULT is not supported", hint: "leave the column out of the COPY's column list to give it its default"}
	default:
		return &pgError{code: "42601", msg: fmt.Sprintf("option %q not recognized", name)}
	}
	return err
}

// check fills in the defaults and refuses what does not go together, as
// PostgreSQL's ProcessCopyOptions does.
func (o *copyOptions) check() error {
	if o.format == "" {
		o.format = "text"
	}
	csv, bin := o.format == "csv", o.format == "binary"
	unsupported := func(format string) error { return &pgError{code: "0A000", msg: format} }
	if bin {
		switch {
		case o.delimSet:
			return unsupported("cannot specify DELIMITER in BINARY mode")
		case o.nullSet:
			return unsupported("cannot specify NULL in BINARY mode")
		case o.seen["header"]:
			return unsupported("cannot specify HEADER in BINARY mode")
		}
	}
	if !csv {
		switch {
		case o.quoteSet:
			return unsupported("COPY QUOTE requires CSV mode")
		case o.escapeSet:
			return unsupported("COPY ESCAPE requires CSV mode")
		case o.seen["force_not_null"]:
			return unsupported("COPY FORCE_NOT_NULL requires CSV mode")
		case o.seen["force_null"]:
			return unsupported("COPY FORCE_NULL requires CSV mode")
		case o.seen["force_quote"]:
			return unsupported("COPY FORCE_QUOTE requires CSV mode")
		}
	}
	if !o.delimSet {
		o.delim = '\t'
		if csv {
			o.delim = ','
		}
	}
	if !o.nullSet && !csv {
		o.null = `\N`
	}
	if !o.quoteSet {
		o.quote = '"'
	}
	if !o.escapeSet {
		o.escape = o.quote
	}
	bad := func(format string, a ...any) error { return &pgError{code: "22023", msg: fmt.Sprintf(format, a...)} }
	switch {
	case bin:
	case o.delim == '\n' || o.delim == '\r':
		return bad("COPY delimiter cannot be newline or carriage return")
	case strings.ContainsAny(o.null, "\r\n"):
		return bad("COPY null representation cannot use newline or carriage return")
	case !csv && strings.IndexByte(`\.abcdefghijklmnopqrstuvwxyz0123456789`, o.delim) >= 0:
		return bad("COPY delimiter cannot be %q", string(o.delim))
	case csv && o.delim == o.quote:
		return bad("COPY delimiter and quote must be different")
	case strings.IndexByte(o.null, o.delim) >= 0:
		return bad("COPY delimiter character must not appear in the NULL specification")
	case csv && strings.IndexByte(o.null, o.quote) >= 0:
		return bad("CSV quote character must not appear in the NULL specification")
	}
	return nil
}

func containsName(list []string, name string) bool {
	for _, n := range list {
		if n == name || strings.EqualFold(n, name) {
			return true
		}
	}
	return false
}

// copyLexer reads the words of a COPY statement.
type copyLexer struct {
	src    string
	off    int
	peeked *copyToken
}

type tokKind int

const (
	tokEnd tokKind = iota
	tokWord
	tokName   // a quoted identifier, unquoted
	tokString // a string constant, its value
	tokNumber
	tokPunct
)

type copyToken struct {
	kind tokKind
	text string
	at   int
}

func (t copyToken) is(p string) bool { return t.kind == tokPunct && t.text == p }

func (t copyToken) isWord(w string) bool { return t.kind == tokWord && strings.EqualFold(t.text, w) }

func (lx *copyLexer) syntax(t copyToken, want string) error {
	near := "end of statement"
	if t.kind != tokEnd {
		near = fmt.Sprintf("or near %q", clipText(lx.src[t.at:]))
	}
	return &pgError{code: "42601", msg: fmt.Sprintf("syntax error at %s: expected %s", near, want)}
}

func clipText(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		s = f[0]
	}
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return s
}

func (lx *copyLexer) peek() copyToken {
	if lx.peeked == nil {
		t := lx.scan()
		lx.peeked = &t
	}
	return *lx.peeked
}

func (lx *copyLexer) next() copyToken {
	t := lx.peek()
	lx.peeked = nil
	return t
}

func (lx *copyLexer) scan() copyToken {
	s := lx.src
	for lx.off < len(s) {
		switch {
		case s[lx.off] == ' ' || s[lx.off] == '\t' || s[lx.off] == '\n' || s[lx.off] == '\r':
			lx.off++
		case strings.HasPrefix(s[lx.off:], "--"):
			if j := strings.IndexByte(s[lx.off:], '\n'); j >= 0 {
				lx.off += j
			} else {
				lx.off = len(s)
			}
		case strings.HasPrefix(s[lx.off:], "/*"):
			if j := strings.Index(s[lx.off+2:], "*/"); j >= 0 {
				lx.off += j + 4
			} else {
				lx.off = len(s)
			}
		default:
			goto token
		}
	}
	return copyToken{kind: tokEnd, at: lx.off}
token:
	at := lx.off
	c := s[at]
	switch {
	case (c == 'E' || c == 'e') && at+1 < len(s) && s[at+1] == '\'':
		v, end := escapeString(s, at+1)
		lx.off = end
		return copyToken{kind: tokString, text: v, at: at}
	case c == '\'' || c == '"':
		v, end, _ := sqllex.Quoted(s, at)
		lx.off = end
		if c == '"' {
			return copyToken{kind: tokName, text: v, at: at}
		}
		return copyToken{kind: tokString, text: v, at: at}
	case sqllex.IsNameStart(c):
		j := at
		for j < len(s) && sqllex.IsNamePart(s[j]) {
			j++
		}
		lx.off = j
		return copyToken{kind: tokWord, text: s[at:j], at: at}
	case sqllex.IsDigit(c) || c == '-' || c == '+':
		j := at + 1
		for j < len(s) && (sqllex.IsDigit(s[j]) || s[j] == '.') {
			j++
		}
		lx.off = j
		return copyToken{kind: tokNumber, text: s[at:j], at: at}
	}
	lx.off++
	return copyToken{kind: tokPunct, text: string(c), at: at}
}

// escapeString reads an E'...' string whose quote is at s[at]: the
// backslash escapes of PostgreSQL's escape strings (\b \f \n \r \t,
// octal, \x hex, \u and \U, and a backslash before any other byte), and
// the quote doubled.
func escapeString(s string, at int) (string, int) {
	var b strings.Builder
	i := at + 1
	for i < len(s) {
		c := s[i]
		switch {
		case c == '\'' && i+1 < len(s) && s[i+1] == '\'':
			b.WriteByte('\'')
			i += 2
		case c == '\'':
			return b.String(), i + 1
		case c == '\\' && i+1 < len(s):
			i++
			switch e := s[i]; e {
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'x':
				v, n := 0, 0
				for n < 2 && i+1 < len(s) {
					h, ok := hexValue(s[i+1])
					if !ok {
						break
					}
					v, n, i = v<<4|int(h), n+1, i+1
				}
				if n == 0 {
					b.WriteByte('x')
				} else {
					b.WriteByte(byte(v))
				}
			case 'u', 'U':
				n := 4
				if e == 'U' {
					n = 8
				}
				if i+n < len(s) {
					if r, err := strconv.ParseUint(s[i+1:i+1+n], 16, 32); err == nil {
						b.WriteRune(rune(r))
						i += n
						break
					}
				}
				b.WriteByte(e)
			default:
				if isOctal(e) {
					v, n := int(e-'0'), 1
					for n < 3 && i+1 < len(s) && isOctal(s[i+1]) {
						v, n, i = v<<3|int(s[i+1]-'0'), n+1, i+1
					}
					b.WriteByte(byte(v))
				} else {
					b.WriteByte(e)
				}
			}
			i++
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String(), len(s)
}
