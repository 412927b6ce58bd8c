package server

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rocklake/rocklake/internal/sqllex"
)

// SQL's prepared statements:
//
//	PREPARE name [(type, ...)] AS statement
//	EXECUTE name [(argument, ...)]
//	DEALLOCATE [PREPARE] name | ALL
//
// They are the protocol's named statements (Parse makes them too, and
// EXECUTE runs one made by Parse, as in PostgreSQL). A statement is kept
// as text; EXECUTE puts each argument in for its $n as Bind puts a
// parameter in: a constant is checked against the parameter's type and
// written as a literal (so the planner prunes with it), any other
// expression goes in parenthesised.

func (ss *pgSession) preparedCommand(kw, q string, formats []int16) (*result, error) {
	switch kw {
	case "PREPARE":
		return ss.prepare(q)
	case "EXECUTE":
		text, err := ss.executeText(q)
		if err != nil {
			return nil, err
		}
		return ss.start(text, formats)
	}
	lx := &copyLexer{src: strings.TrimRight(strings.TrimSpace(q), "; \t\r\n")}
	lx.next() // DEALLOCATE
	if lx.peek().isWord("PREPARE") {
		lx.next()
	}
	t := lx.next()
	if e := lx.next(); e.kind != tokEnd {
		return nil, lx.syntax(e, "the end of the statement")
	}
	if t.isWord("ALL") {
		ss.clearStmts()
		return &result{tag: "DEALLOCATE ALL", s: ss.s}, nil
	}
	name, ok := identOf(t)
	if !ok {
		return nil, lx.syntax(t, "a prepared statement's name")
	}
	if _, ok := ss.stmts[name]; !ok {
		return nil, noStatement(name)
	}
	ss.delStmt(name)
	return &result{tag: "DEALLOCATE", s: ss.s}, nil
}

func noStatement(name string) error {
	return &pgError{code: "26000", msg: fmt.Sprintf("prepared statement %q does not exist", name)}
}

func (ss *pgSession) prepare(q string) (*result, error) {
	lx := &copyLexer{src: strings.TrimRight(strings.TrimSpace(q), "; \t\r\n")}
	lx.next() // PREPARE
	name, ok := identOf(lx.next())
	if !ok {
		return nil, lx.syntax(lx.peek(), "a name after PREPARE")
	}
	var declared []uint32
	if lx.peek().is("(") {
		lx.next()
		var words []string
		depth := 0
		for closed := false; !closed; {
			t := lx.next()
			switch {
			case t.kind == tokEnd:
				return nil, lx.syntax(t, ") after the parameter types")
			case depth == 0 && (t.is(",") || t.is(")")):
				if len(words) == 0 {
					return nil, lx.syntax(t, "a type name")
				}
				oid, err := typeNamed(strings.Join(words, " "))
				if err != nil {
					return nil, err
				}
				declared, words, closed = append(declared, oid), nil, t.is(")")
			default:
				if t.is("(") {
					depth++
				} else if t.is(")") {
					depth--
				}
				words = append(words, t.text)
			}
		}
	}
	if t := lx.next(); !t.isWord("AS") {
		return nil, lx.syntax(t, "AS and the statement")
	}
	stmt := strings.TrimSpace(lx.src[lx.off:])
	switch kw := sqllex.LeadingKeyword(stmt); {
	case readsOnly(stmt), kw == "INSERT", kw == "UPDATE", kw == "DELETE", kw == "MERGE":
	default:
		return nil, &pgError{code: "42601", msg: "PREPARE ... AS takes a SELECT, VALUES, INSERT, UPDATE, DELETE or MERGE"}
	}
	n, err := countParams(stmt)
	if err != nil {
		return nil, err
	}
	if _, taken := ss.stmts[name]; taken {
		return nil, &pgError{code: "42P05", msg: fmt.Sprintf("prepared statement %q already exists", name)}
	}
	oids := make([]uint32, max(n, len(declared)))
	copy(oids, declared)
	if slices.Contains(oids, 0) {
		ss.inferParams(stmt, oids)
	}
	if err := ss.putStmt(name, &prepared{sql: stmt, paramOIDs: oids}); err != nil {
		return nil, err
	}
	return &result{tag: "PREPARE", s: ss.s}, nil
}

// typeNamed is the OID of a type as PREPARE names it: PostgreSQL's
// names and their SQL spellings, a modifier ((10,2), (255)) ignored.
func typeNamed(name string) (uint32, error) {
	n := strings.ToLower(name)
	if i := strings.IndexByte(n, '('); i >= 0 {
		if j := strings.LastIndexByte(n, ')'); j > i {
			n = n[:i] + n[j+1:]
		}
	}
	n = strings.Join(strings.Fields(n), " ")
	n = strings.TrimPrefix(n, "pg_catalog . ")
	switch n {
	case "smallint", "int2":
		return oidInt2, nil
	case "integer", "int", "int4":
		return oidInt4, nil
	case "bigint", "int8":
		return oidInt8, nil
	case "real", "float4":
		return oidFloat4, nil
	case "double precision", "float8", "float":
		return oidFloat8, nil
	case "numeric", "decimal":
		return oidNumeric, nil
	case "text", "name", "char", "character", "bpchar":
		return oidText, nil
	case "varchar", "character varying":
		return oidVarchar, nil
	case "boolean", "bool":
		return oidBool, nil
	case "bytea":
		return oidBytea, nil
	case "date":
		return oidDate, nil
	case "time", "time without time zone":
		return oidTime, nil
	case "timestamp", "timestamp without time zone":
		return oidTimestamp, nil
	case "timestamptz", "timestamp with time zone":
		return oidTimestamptz, nil
	case "interval":
		return oidInterval, nil
	case "uuid":
		return oidUUID, nil
	case "json", "jsonb":
		return oidJSON, nil
	case "unknown":
		return 0, nil
	}
	return 0, &pgError{code: "42704", msg: fmt.Sprintf("type %q does not exist", name)}
}

// executeArgs reads an EXECUTE: the statement it runs and its arguments.
func (ss *pgSession) executeArgs(q string) (*prepared, []string, error) {
	src := strings.TrimRight(strings.TrimSpace(q), "; \t\r\n")
	lx := &copyLexer{src: src}
	lx.next() // EXECUTE
	name, ok := identOf(lx.next())
	if !ok {
		return nil, nil, lx.syntax(lx.peek(), "a prepared statement's name after EXECUTE")
	}
	var args []string
	if open := lx.peek(); open.is("(") {
		var err error
		if args, err = splitArgs(src, open.at); err != nil {
			return nil, nil, err
		}
	} else if open.kind != tokEnd {
		return nil, nil, lx.syntax(open, "( and the arguments, or the end of the statement")
	}
	st := ss.stmts[name]
	if st == nil {
		return nil, nil, noStatement(name)
	}
	if sqllex.LeadingKeyword(st.sql) == "EXECUTE" {
		return nil, nil, &pgError{code: "42601", msg: fmt.Sprintf("prepared statement %q is an EXECUTE itself", name)}
	}
	if len(args) != len(st.paramOIDs) {
		return nil, nil, &pgError{code: "42601", msg: fmt.Sprintf("wrong number of parameters for prepared statement %q", name),
			hint: fmt.Sprintf("it takes %d, and %d were given", len(st.paramOIDs), len(args))}
	}
	return st, args, nil
}

// describeExecute is the answer's columns of the statement an EXECUTE
// runs, whatever its arguments (a Describe sees parameters unbound).
func (ss *pgSession) describeExecute(q string) (*result, error) {
	st, _, err := ss.executeArgs(q)
	if err != nil {
		return nil, err
	}
	samples := make([]string, len(st.paramOIDs))
	for i, o := range st.paramOIDs {
		samples[i] = sampleLiteral(o)
	}
	text, err := substituteParams(st.sql, samples)
	if err != nil {
		return nil, err
	}
	return ss.describeOnly(text)
}

// inferExecuteParams types the parameters of an EXECUTE that stand alone
// as its arguments as the prepared statement's parameters are typed.
func (ss *pgSession) inferExecuteParams(q string, oids []uint32) {
	st, args, err := ss.executeArgs(q)
	if err != nil {
		return
	}
	for i, a := range args {
		if n, err := strconv.Atoi(strings.TrimPrefix(a, "$")); err == nil && a[0] == '$' && n >= 1 && n <= len(oids) && oids[n-1] == 0 {
			oids[n-1] = st.paramOIDs[i]
		}
	}
}

// executeText is the statement an EXECUTE runs, its arguments in.
func (ss *pgSession) executeText(q string) (string, error) {
	st, args, err := ss.executeArgs(q)
	if err != nil {
		return "", err
	}
	lits := make([]string, len(args))
	for i, a := range args {
		lit, err := argLiteral(ss, st.paramOIDs[i], a)
		if err != nil {
			return "", &pgError{code: "22P02", msg: fmt.Sprintf("parameter $%d: %v", i+1, err)}
		}
		lits[i] = lit
	}
	return substituteParams(st.sql, lits)
}

// splitArgs reads the parenthesised, comma-separated arguments that open
// at src[open], which must end the statement.
func splitArgs(src string, open int) ([]string, error) {
	end := closingParen(src, open)
	if end < 0 {
		return nil, &pgError{code: "42601", msg: "syntax error at end of input: expected ) after EXECUTE's arguments"}
	}
	if rest := strings.TrimSpace(src[end+1:]); rest != "" {
		return nil, &pgError{code: "42601", msg: fmt.Sprintf("syntax error at or near %q: expected the end of the statement", clipText(rest))}
	}
	masked := sqllex.Mask(src)
	var args []string
	depth, from := 0, open+1
	for i := open + 1; i <= end; i++ {
		switch c := masked[i]; {
		case c == '(':
			depth++
		case c == ')' && i < end:
			depth--
		case c == ',' && depth == 0, i == end:
			args = append(args, strings.TrimSpace(src[from:i]))
			from = i + 1
		}
	}
	if len(args) == 1 && args[0] == "" {
		return nil, nil // EXECUTE name ()
	}
	for _, a := range args {
		if a == "" {
			return nil, &pgError{code: "42601", msg: "syntax error: an empty argument to EXECUTE"}
		}
	}
	return args, nil
}

// argLiteral is the SQL put in for one EXECUTE argument of the type oid
// (0: unknown).
func argLiteral(ss *pgSession, oid uint32, arg string) (string, error) {
	lx := &copyLexer{src: arg}
	t := lx.next()
	if lx.next().kind == tokEnd {
		switch {
		case t.kind == tokString:
			return literal(ss.typeMap(), oid, 0, []byte(t.text))
		case t.kind == tokNumber:
			if _, err := strconv.ParseFloat(t.text, 64); err == nil {
				if oid == 0 {
					return " " + t.text, nil
				}
				return literal(ss.typeMap(), oid, 0, []byte(t.text))
			}
		case t.isWord("NULL"):
			return nullLiteral(oid), nil
		case (t.isWord("TRUE") || t.isWord("FALSE")) && (oid == 0 || oid == oidBool):
			return literal(ss.typeMap(), oidBool, 0, []byte(t.text))
		}
	}
	return "(" + arg + ")", nil
}
