package server

import (
	"fmt"
	"strings"

	"github.com/rocklake/rocklake/internal/sqllex"
)

// A statement over the system catalogs is PostgreSQL's SQL; DuckDB runs
// it once these differences are rewritten, token by token, outside
// strings and comments:
//
//	pg_catalog.R, R          R a relation of pg_catalog: snapshot N's (or
//	                         the static) copy; unqualified names resolve
//	                         to pg_catalog first, as in PostgreSQL
//	information_schema.R     likewise
//	pg_catalog.F(, F(        F a function the catalogs define (format_type,
//	                         pg_table_is_visible, ...): the snapshot's
//	pg_catalog.X             anything else: X, DuckDB's own (a type, a
//	                         function such as pg_catalog.lower)
//	OPERATOR(pg_catalog.op)  op
//	COLLATE name             dropped: DuckDB compares bytes, as "C" does
//	a ~ b, ~*, !~, !~*       a ~ '(?s:.*)(?:' || b || ')(?s:.*)': DuckDB's ~
//	                         matches the whole string, PostgreSQL's any part
//	'x'::regclass            the OID of relation x (regtype, regnamespace,
//	                         regrole likewise; regproc stays a name)
//	e::regclass              e, an OID already; e::regclass::text the name
//	::name, ::"char"         ::VARCHAR
//
// PostgreSQL's regular expressions are not RE2's (DuckDB's): the
// difference is left to the pattern.

type sysTokKind uint8

const (
	stSpace  sysTokKind = iota // white space or a comment
	stIdent                    // a bare name
	stQuoted                   // a "quoted" name
	stString                   // a string constant ('…', E'…', $$…$$)
	stNumber
	stParam
	stOp    // an operator
	stPunct // ( ) [ ] , ; . ::
)

type sysToken struct {
	kind sysTokKind
	text string
}

// name is a name token's value: lower-cased when bare, as PostgreSQL
// folds it.
func (t sysToken) name() string {
	switch t.kind {
	case stIdent:
		return strings.ToLower(t.text)
	case stQuoted:
		inner := strings.TrimPrefix(t.text, `"`)
		if len(inner) > 0 && strings.HasSuffix(inner, `"`) {
			inner = inner[:len(inner)-1]
		}
		return strings.ReplaceAll(inner, `""`, `"`)
	}
	return ""
}

func (t sysToken) isName() bool { return t.kind == stIdent || t.kind == stQuoted }

func (t sysToken) is(s string) bool {
	return (t.kind == stPunct || t.kind == stOp) && t.text == s || t.kind == stIdent && strings.EqualFold(t.text, s)
}

// operators are PostgreSQL's multi-character operators DuckDB knows, longest first.
var operators = []string{"!~~*", "~~*", "!~~", "!~*", "->>", "#>>", "~~", "~*", "!~", "<=", ">=", "<>", "!=", "||", "->", "#>", "@>", "<@", "&&", "**", "<<", ">>"}

func sysTokenize(q string) []sysToken {
	var toks []sysToken
	for i := 0; i < len(q); {
		c := q[i]
		start := i
		kind := stPunct
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			for i < len(q) && strings.IndexByte(" \t\n\r\f", q[i]) >= 0 {
				i++
			}
			kind = stSpace
		case strings.HasPrefix(q[i:], "--"):
			j := strings.IndexByte(q[i:], '\n')
			if j < 0 {
				i = len(q)
			} else {
				i += j
			}
			kind = stSpace
		case strings.HasPrefix(q[i:], "/*"):
			depth := 0
			for i < len(q) {
				if strings.HasPrefix(q[i:], "/*") {
					depth++
					i += 2
				} else if strings.HasPrefix(q[i:], "*/") {
					depth--
					i += 2
					if depth == 0 {
						break
					}
				} else {
					i++
				}
			}
			kind = stSpace
		case c == '\'' || (c == 'E' || c == 'e') && i+1 < len(q) && q[i+1] == '\'':
			esc := c != '\''
			if esc {
				i++
			}
			i++
			for i < len(q) {
				if esc && q[i] == '\\' {
					// A backslash ending the input escapes nothing.
					i = min(i+2, len(q))
					continue
				}
				if q[i] == '\'' {
					if i+1 < len(q) && q[i+1] == '\'' {
						i += 2
						continue
					}
					i++
					break
				}
				i++
			}
			kind = stString
		case c == '"':
			i++
			for i < len(q) {
				if q[i] == '"' {
					if i+1 < len(q) && q[i+1] == '"' {
						i += 2
						continue
					}
					i++
					break
				}
				i++
			}
			kind = stQuoted
		case c == '$' && i+1 < len(q) && sqllex.IsDigit(q[i+1]):
			i++
			for i < len(q) && sqllex.IsDigit(q[i]) {
				i++
			}
			kind = stParam
		case c == '$':
			j := i + 1
			for j < len(q) && sqllex.IsNamePart(q[j]) {
				j++
			}
			if j < len(q) && q[j] == '$' {
				tag := q[i : j+1]
				if k := strings.Index(q[j+1:], tag); k >= 0 {
					i = j + 1 + k + len(tag)
				} else {
					i = len(q)
				}
				kind = stString
			} else {
				i++
				kind = stOp
			}
		case sqllex.IsNameStart(c):
			for i < len(q) && (sqllex.IsNamePart(q[i]) || q[i] == '$') {
				i++
			}
			kind = stIdent
		case sqllex.IsDigit(c) || c == '.' && i+1 < len(q) && sqllex.IsDigit(q[i+1]):
			for i < len(q) && (sqllex.IsDigit(q[i]) || q[i] == '.' || q[i] == 'e' || q[i] == 'E' ||
				(q[i] == '+' || q[i] == '-') && (q[i-1] == 'e' || q[i-1] == 'E')) {
				i++
			}
			kind = stNumber
		case strings.HasPrefix(q[i:], "::"):
			i += 2
		case strings.IndexByte("()[],;.:", c) >= 0:
			i++
		default:
			kind = stOp
			i++
			for _, op := range operators {
				if strings.HasPrefix(q[start:], op) {
					i = start + len(op)
					break
				}
			}
		}
		toks = append(toks, sysToken{kind, q[start:i]})
	}
	return toks
}

// sysRewriter rewrites one statement for snapshot N's schemas.
type sysRewriter struct {
	in  []sysToken // significant tokens of the input, spaces kept apart
	out []sysToken
	pc  string // pc_N
	is  string // is_N
	// reads: the statement names a system relation or a pg_catalog
	// name; calls: it calls a catalog function; from: it has a FROM.
	reads, calls, from bool
	// bare are the system relations named without a schema, which a
	// rocklake table of the same name takes instead (systemRoute).
	bare []string
	// parens are the open parentheses: whether each opened a function
	// called in a FROM clause. clause is the clause being read at the
	// current depth ("FROM" or another), by depth.
	parens []bool
	clause []string
}

// clauseWords start the clauses of a SELECT.
var clauseWords = map[string]bool{"SELECT": true, "FROM": true, "WHERE": true, "GROUP": true, "HAVING": true, "ORDER": true,
	"LIMIT": true, "OFFSET": true, "ON": true, "USING": true, "UNION": true, "EXCEPT": true, "INTERSECT": true, "WINDOW": true, "JOIN": true}

func (w *sysRewriter) inFrom() bool {
	return len(w.clause) > 0 && w.clause[len(w.clause)-1] == "FROM"
}

// track follows clauses and parentheses through token i. A function
// called in FROM and given an alias without a column list names its
// column too, as PostgreSQL does (generate_series(1, 3) s reads s as
// the number, not DuckDB's row): the alias becomes alias(alias).
func (w *sysRewriter) track(i int) (handled int, ok bool) {
	if len(w.clause) == 0 {
		w.clause = []string{""}
	}
	t := w.in[i]
	switch {
	case t.kind == stIdent && clauseWords[strings.ToUpper(t.text)]:
		c := strings.ToUpper(t.text)
		if c == "FROM" {
			w.from = true
		}
		if c == "JOIN" {
			c = "FROM"
		}
		w.clause[len(w.clause)-1] = c
	case t.is("("):
		p := w.prev()
		fn := false
		if w.inFrom() && p.isName() {
			// the name's predecessor: FROM, JOIN, LATERAL, a comma or a dot
			last := len(w.out) - 1
			for last >= 0 && w.out[last].kind == stSpace {
				last--
			}
			for k := last - 1; k >= 0; k-- {
				if w.out[k].kind == stSpace {
					continue
				}
				q := w.out[k]
				fn = q.is("FROM") || q.is("JOIN") || q.is("LATERAL") || q.is(",") || q.is(".")
				break
			}
		}
		w.parens = append(w.parens, fn)
		w.clause = append(w.clause, "")
	case t.is(")"):
		if len(w.parens) == 0 {
			return 0, false
		}
		fn := w.parens[len(w.parens)-1]
		w.parens = w.parens[:len(w.parens)-1]
		w.clause = w.clause[:len(w.clause)-1]
		if !fn {
			return 0, false
		}
		w.out = append(w.out, t)
		j := w.next(i + 1)
		if w.at(j).is("AS") {
			j = w.next(j + 1)
		}
		alias := w.at(j)
		if !alias.isName() || alias.kind == stIdent && (clauseWords[strings.ToUpper(alias.text)] || sqlKeywords[strings.ToUpper(alias.text)] ||
			alias.is("LEFT") || alias.is("RIGHT") || alias.is("INNER") || alias.is("CROSS") || alias.is("FULL") || alias.is("NATURAL") || alias.is("WITH")) {
			return i + 1, true
		}
		if w.at(w.next(j + 1)).is("(") {
			return i + 1, true // a column list of its own
		}
		w.out = append(w.out, w.in[i+1:j+1]...)
		w.emit(stPunct, "("+alias.text+")")
		return j + 1, true
	}
	return 0, false
}

// rewriteSystemQuery is q as DuckDB runs it over snapshot id's system
// catalogs, and whether q is for them: it names a system relation,
// qualifies a name with pg_catalog, or calls a catalog function and
// reads no table.
func rewriteSystemQuery(q string, id int64) (string, bool) {
	w := &sysRewriter{pc: fmt.Sprintf("pc_%d", id), is: fmt.Sprintf("is_%d", id)}
	w.in = sysTokenize(q)
	w.run()
	var b strings.Builder
	for _, t := range w.out {
		b.WriteString(t.text)
	}
	// A catalog function called bare is PostgreSQL's only in a statement
	// that reads no table (SELECT format_type(23, -1)): with a FROM, the
	// statement may read rocklake's tables, where DuckDB's function of
	// that name (current_schema(), say) answers.
	return b.String(), w.reads || w.calls && !w.from
}

// namesSystemCatalog says whether q reads PostgreSQL's system catalogs.
func namesSystemCatalog(q string) bool {
	reads, _ := systemRoute(q)
	return reads
}

// systemRoute says whether q is for the system catalogs, and which
// system relations it names without a schema. Every query the server
// runs asks: most name none of the words that could, and are not
// tokenized.
func systemRoute(q string) (reads bool, bare []string) {
	if !mayNameSystemCatalog(q) {
		return false, nil
	}
	w := &sysRewriter{pc: "pc_0", is: "is_0"}
	w.in = sysTokenize(q)
	w.run()
	return w.reads || w.calls && !w.from, w.bare
}

// mayNameSystemCatalog: q holds pg_, information_schema, reg (of a
// ::regclass cast) or the name of a catalog function, anywhere (strings
// and comments included).
func mayNameSystemCatalog(q string) bool {
	lower := strings.ToLower(q)
	if strings.Contains(lower, "pg_") || strings.Contains(lower, "information_schema") || strings.Contains(lower, "reg") {
		return true
	}
	for name := range catalogMacros()["pg_catalog"] {
		if strings.Contains(lower, name) {
			return true
		}
	}
	return false
}

// next is the index of the first significant token at or after i.
func (w *sysRewriter) next(i int) int {
	for i < len(w.in) && w.in[i].kind == stSpace {
		i++
	}
	return i
}

func (w *sysRewriter) at(i int) sysToken {
	if i < len(w.in) {
		return w.in[i]
	}
	return sysToken{kind: stSpace}
}

// prev is the last significant token emitted.
func (w *sysRewriter) prev() sysToken {
	for i := len(w.out) - 1; i >= 0; i-- {
		if w.out[i].kind != stSpace {
			return w.out[i]
		}
	}
	return sysToken{kind: stSpace}
}

func (w *sysRewriter) emit(kind sysTokKind, text string) { w.out = append(w.out, sysToken{kind, text}) }

// relation is where a system relation of nsp named name is read, or "".
func (w *sysRewriter) relation(nsp, name string) string {
	r := loadSysDefs().byKey[nsp+"."+name]
	if r == nil {
		return ""
	}
	w.reads = true
	schema := r.schema()
	if r.dynamic {
		schema = w.pc
		if nsp == "information_schema" {
			schema = w.is
		}
	}
	return schema + "." + sqllex.QuoteName(name)
}

// function is where a catalog function of nsp named name is, or "".
func (w *sysRewriter) function(nsp, name string) string {
	if !catalogMacros()[nsp][name] {
		return ""
	}
	w.calls = true
	if nsp == "information_schema" {
		return "iss." + name
	}
	return w.pc + "." + name
}

func (w *sysRewriter) run() {
	for i := 0; i < len(w.in); {
		i = w.step(i)
	}
}

// step rewrites from token i and returns the index after what it took.
func (w *sysRewriter) step(i int) int {
	t := w.in[i]
	if t.kind == stSpace {
		w.out = append(w.out, t)
		return i + 1
	}
	if next, ok := w.track(i); ok {
		return next
	}
	switch {
	case t.is("OPERATOR"):
		// OPERATOR ( [schema .] op )
		j := w.next(i + 1)
		if w.at(j).is("(") {
			k := w.next(j + 1)
			if w.at(k).isName() && w.at(w.next(k+1)).is(".") {
				k = w.next(w.next(k+1) + 1)
			}
			if op := w.at(k); op.kind == stOp && w.at(w.next(k+1)).is(")") {
				return w.step2(op, w.next(k+1)+1)
			}
		}
	case t.is("COLLATE"):
		j := w.next(i + 1)
		if w.at(j).isName() {
			j++
			if k := w.next(j); w.at(k).is(".") && w.at(w.next(k+1)).isName() {
				j = w.next(k+1) + 1
			}
			return j
		}
	case t.kind == stOp && (t.text == "~" || t.text == "~*" || t.text == "!~" || t.text == "!~*"):
		return w.step2(t, i+1)
	case t.is("::"):
		return w.cast(i)
	case t.is("=") || t.is("<>") || t.is("!="):
		if end, ok := w.anyArray(t, i); ok {
			return end
		}
	case t.isName() && !w.prev().is(".") && !w.prev().is("::"):
		j := w.next(i + 1)
		if nsp := t.name(); (nsp == "pg_catalog" || nsp == "information_schema") && w.at(j).is(".") && w.at(w.next(j+1)).isName() {
			k := w.next(j + 1)
			name := w.in[k].name()
			call := w.at(w.next(k + 1)).is("(")
			if !call {
				if rel := w.relation(nsp, name); rel != "" {
					w.emit(stIdent, rel)
					return k + 1
				}
			} else if fn := w.function(nsp, name); fn != "" {
				w.reads = true // qualified: PostgreSQL's, wherever it stands
				w.emit(stIdent, fn)
				return k + 1
			}
			if alias := functionAliases[name]; call && nsp == "pg_catalog" && alias != "" {
				w.reads = true
				w.emit(stIdent, alias)
				return k + 1
			}
			if nsp == "pg_catalog" {
				// DuckDB's own, run in the catalogs' database: the
				// engine's has no schema of that name.
				w.reads = true
				return k
			}
		} else if !w.at(j).is(".") && !w.prev().is("AS") {
			if w.at(j).is("(") {
				if fn := w.function("pg_catalog", t.name()); fn != "" {
					w.emit(stIdent, fn)
					return i + 1
				}
				if alias := functionAliases[t.name()]; alias != "" && t.kind == stIdent {
					w.emit(stIdent, alias)
					return i + 1
				}
			} else if t.kind == stIdent || t.kind == stQuoted {
				if rel := w.relation("pg_catalog", t.name()); rel != "" {
					w.bare = append(w.bare, t.name())
					w.emit(stIdent, rel)
					return i + 1
				}
			}
		}
	}
	w.out = append(w.out, t)
	return i + 1
}

// step2 emits a binary operator found at OPERATOR(...) or bare, from
// token i on: a regular-expression match takes its right operand as a
// pattern found anywhere in the left one.
func (w *sysRewriter) step2(op sysToken, i int) int {
	neg := strings.HasPrefix(op.text, "!")
	fold := strings.HasSuffix(op.text, "*")
	if op.text != "~" && op.text != "~*" && op.text != "!~" && op.text != "!~*" {
		w.emit(stOp, op.text)
		return i
	}
	if p := w.prev(); p.kind == stOp || p.kind == stSpace || p.is("(") || p.is(",") ||
		p.kind == stIdent && (sqlKeywords[strings.ToUpper(p.text)] || clauseWords[strings.ToUpper(p.text)]) {
		w.emit(stOp, op.text) // unary: bitwise NOT
		return i
	}
	start := w.next(i)
	if start >= len(w.in) {
		w.emit(stOp, op.text) // no operand: DuckDB reports it
		return i
	}
	end := min(w.operandEnd(start), len(w.in))
	sub := &sysRewriter{in: w.in[start:end], pc: w.pc, is: w.is}
	sub.run()
	w.reads, w.calls, w.from = w.reads || sub.reads, w.calls || sub.calls, w.from || sub.from
	var rhs strings.Builder
	for _, t := range sub.out {
		rhs.WriteString(t.text)
	}
	prefix := "(?s:.*)(?:"
	if fold {
		prefix = "(?i)" + prefix
	}
	text := "~"
	if neg {
		text = "!~"
	}
	w.emit(stOp, text)
	w.emit(stSpace, " ")
	w.emit(stPunct, "("+sqllex.QuoteString(prefix)+" || ("+rhs.String()+") || "+sqllex.QuoteString(")(?s:.*)")+")")
	return end
}

// anyArray rewrites x = ANY (array) and x <> ALL (array), the operator
// at token i, to list_contains: DuckDB reads ANY of a list as a subquery,
// which it cannot join on outside an inner join.
func (w *sysRewriter) anyArray(op sysToken, i int) (int, bool) {
	j := w.next(i + 1)
	q := w.at(j)
	eq := op.is("=")
	if !(eq && (q.is("ANY") || q.is("SOME")) || !eq && q.is("ALL")) {
		return 0, false
	}
	open := w.next(j + 1)
	if !w.at(open).is("(") {
		return 0, false
	}
	if first := w.at(w.next(open + 1)); first.is("SELECT") || first.is("WITH") || first.is("VALUES") || first.is("(") {
		return 0, false
	}
	end := w.closeParen(open)
	if end-1 <= open || !w.in[end-1].is(")") {
		return 0, false // not closed: DuckDB reports it
	}
	sub := &sysRewriter{in: w.in[open+1 : end-1], pc: w.pc, is: w.is}
	sub.run()
	w.reads, w.calls, w.from = w.reads || sub.reads, w.calls || sub.calls, w.from || sub.from
	var arr strings.Builder
	for _, t := range sub.out {
		arr.WriteString(t.text)
	}
	start := w.operandStart()
	var lhs strings.Builder
	for _, t := range w.out[start:] {
		lhs.WriteString(t.text)
	}
	w.out = w.out[:start]
	text := "list_contains((" + arr.String() + "), " + strings.TrimSpace(lhs.String()) + ")"
	if !eq {
		text = "NOT " + text
	}
	w.emit(stPunct, text)
	return end, true
}

// operandEnd is the index after the primary expression starting at i: a
// constant, parameter, name chain, parenthesized expression or function
// call, with any casts after it.
func (w *sysRewriter) operandEnd(i int) int {
	j := i
	switch t := w.at(j); {
	case t.is("("):
		j = w.closeParen(j)
	case t.kind == stString || t.kind == stNumber || t.kind == stParam:
		j++
	case t.isName():
		j++
		for {
			k := w.next(j)
			if w.at(k).is(".") && w.at(w.next(k+1)).isName() {
				j = w.next(k+1) + 1
				continue
			}
			break
		}
		if k := w.next(j); w.at(k).is("(") {
			j = w.closeParen(k)
		}
	default:
		return j + 1
	}
	for {
		k := w.next(j)
		if !w.at(k).is("::") {
			return j
		}
		k = w.next(k + 1)
		if !w.at(k).isName() {
			return j
		}
		j = k + 1
		if m := w.next(j); w.at(m).is(".") && w.at(w.next(m+1)).isName() {
			j = w.next(m+1) + 1
		}
		if m := w.next(j); w.at(m).is("[") && w.at(w.next(m+1)).is("]") {
			j = w.next(m+1) + 1
		}
	}
}

// closeParen is the index after the parenthesis that closes the one at i.
func (w *sysRewriter) closeParen(i int) int {
	depth := 0
	for j := i; j < len(w.in); j++ {
		switch {
		case w.in[j].is("("):
			depth++
		case w.in[j].is(")"):
			depth--
			if depth == 0 {
				return j + 1
			}
		}
	}
	return len(w.in)
}

// functionAliases are PostgreSQL's functions DuckDB has by another name
// (the variadic ones, which a macro cannot be).
var functionAliases = map[string]string{"json_build_object": "json_object", "json_build_array": "json_array",
	"jsonb_build_object": "json_object", "jsonb_build_array": "json_array", "string_to_array": "string_split"}

// regTypes are PostgreSQL's OID alias types the catalogs are read with.
var regTypes = map[string]string{"regclass": "regclass", "regtype": "regtype", "regnamespace": "regnamespace", "regrole": "regrole",
	"regproc": "regproc", "regprocedure": "regproc"}

// castType reads the type name of a cast whose :: is at token i: the
// name token (without a pg_catalog qualifier) and the index after it;
// ok false when no name follows.
func (w *sysRewriter) castType(i int) (t sysToken, end int, ok bool) {
	j := w.next(i + 1)
	if tt := w.at(j); tt.isName() && tt.name() == "pg_catalog" && w.at(w.next(j+1)).is(".") {
		j = w.next(w.next(j+1) + 1)
	}
	t = w.at(j)
	return t, j + 1, t.isName()
}

// cast rewrites a cast at token i (::) to a type DuckDB lacks.
func (w *sysRewriter) cast(i int) int {
	tt, end, ok := w.castType(i)
	if !ok {
		w.emit(stPunct, "::")
		return i + 1
	}
	switch name := tt.name(); {
	case name == "name" || name == "char" && tt.kind == stQuoted:
		w.emit(stPunct, "::")
		w.emit(stIdent, "VARCHAR")
		return end
	case regTypes[name] != "":
		reg := regTypes[name]
		start := w.operandStart()
		operand := w.out[start:]
		text := ""
		for _, t := range operand {
			text += t.text
		}
		w.out = w.out[:start]
		if lit := firstSignificant(operand); lit.kind == stString || lit.kind == stParam {
			w.emit(stIdent, fmt.Sprintf("%s.__to_%s(%s)", w.pc, reg, text))
			w.reads = true
			return end
		}
		// An OID already: as text, the object's name.
		if k := w.next(end); w.at(k).is("::") {
			if t2, end2, ok := w.castType(k); ok && (t2.name() == "text" || t2.name() == "varchar" || t2.name() == "name") {
				w.emit(stIdent, fmt.Sprintf("%s.__%s_name(%s)", w.pc, reg, text))
				w.reads = true
				return end2
			}
		}
		w.out = append(w.out, operand...)
		return end
	}
	w.emit(stPunct, "::")
	w.emit(tt.kind, tt.text)
	return end
}

func firstSignificant(toks []sysToken) sysToken {
	for _, t := range toks {
		if t.kind != stSpace {
			return t
		}
	}
	return sysToken{kind: stSpace}
}

// operandStart is where, in what was emitted, the operand of a cast now
// being read begins: a constant, parameter, name chain, parenthesized
// expression or function call, with any casts before this one.
func (w *sysRewriter) operandStart() int {
	k := len(w.out) - 1
	skip := func() {
		for k >= 0 && w.out[k].kind == stSpace {
			k--
		}
	}
	for {
		skip()
		if k < 0 {
			return 0
		}
		t := w.out[k]
		switch {
		case t.is(")") || t.is("]"):
			open, close := "(", ")"
			if t.is("]") {
				open, close = "[", "]"
			}
			depth := 0
			for ; k >= 0; k-- {
				if w.out[k].is(close) {
					depth++
				} else if w.out[k].is(open) {
					depth--
					if depth == 0 {
						break
					}
				}
			}
			start := k
			m := k - 1
			for m >= 0 && w.out[m].kind == stSpace {
				m--
			}
			if m >= 0 && w.out[m].isName() && !(w.out[m].kind == stIdent && sqlKeywords[strings.ToUpper(w.out[m].text)]) {
				start = m // a function's name
			}
			return max(start, 0)
		case t.kind == stString || t.kind == stNumber || t.kind == stParam || t.isName():
			start := k
			for {
				m := start - 1
				for m >= 0 && w.out[m].kind == stSpace {
					m--
				}
				if m >= 1 && w.out[m].is(".") {
					n := m - 1
					for n >= 0 && w.out[n].kind == stSpace {
						n--
					}
					if n >= 0 && w.out[n].isName() {
						start = n
						continue
					}
				}
				break
			}
			// A type name of an earlier cast: the operand is before it.
			m := start - 1
			for m >= 0 && w.out[m].kind == stSpace {
				m--
			}
			if m >= 0 && w.out[m].is("::") {
				k = m - 1
				continue
			}
			return start
		default:
			return k + 1
		}
	}
}

// sqlKeywords are the words that may stand before a parenthesis without
// being a function's name.
var sqlKeywords = map[string]bool{"SELECT": true, "WHERE": true, "AND": true, "OR": true, "NOT": true, "IN": true, "ON": true, "BY": true,
	"AS": true, "WHEN": true, "THEN": true, "ELSE": true, "CASE": true, "ANY": true, "ALL": true, "SOME": true, "EXISTS": true,
	"FROM": true, "JOIN": true, "HAVING": true, "USING": true, "VALUES": true, "LIKE": true, "ILIKE": true, "IS": true,
	"BETWEEN": true, "LATERAL": true, "RETURN": true, "WITH": true, "UNION": true, "EXCEPT": true, "INTERSECT": true}
