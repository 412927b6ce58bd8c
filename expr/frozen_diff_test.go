package expr

import (
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// sameParse fails t unless Parse and the frozen parser agree on s: the same
// tree, or the same error at the same offset.
func sameParse(t *testing.T, s string) {
	t.Helper()
	got, gotErr := Parse(s)
	want, wantErr := frozenParse(s)
	if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
		t.Fatalf("%q: error %v, frozen parser %v", s, gotErr, wantErr)
	}
	if gotErr != nil {
		var a, b *SyntaxError
		if !errors.As(gotErr, &a) || !errors.As(wantErr, &b) || *a != *b {
			t.Fatalf("%q: error %#v, frozen parser %#v", s, gotErr, wantErr)
		}
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: trees differ", s)
	}
}

// exprFragments are the pieces generated predicates are made of: every
// keyword, operator and literal form the lexer and parser know, and some
// they refuse.
var exprFragments = []string{
	"i", "s", "\"Mixed Case\"", "\"a\"\"b\"", "a$b", "ü", "st", ".", "a.b", "main", "pg_catalog", "_x1",
	"1", "0", "1.5", ".5", "1e3", "1E-3", "1e+", "1_000", "1.2.3", "3e", "12abc",
	"'x'", "'it''s'", "''", "'unterminated", "\"unterminated", "'a\nb'",
	"=", "==", "<>", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/", "%", "||", "::", "~~", "!~~", "~~*", "!~~*",
	"(", ")", ",", "[", "]", "[]", "@", "#", "?", ";", "!", "~", "|", "&", "^", "$", "{", "}", "\\",
	"AND", "OR", "NOT", "and", "Or", "not", "IS", "NULL", "TRUE", "FALSE", "UNKNOWN", "DISTINCT", "FROM",
	"BETWEEN", "SYMMETRIC", "ASYMMETRIC", "IN", "LIKE", "ILIKE", "ESCAPE", "ISNULL", "NOTNULL",
	"CAST", "TRY_CAST", "AS", "DATE", "TIMESTAMP", "TIME", "WITH", "WITHOUT", "ZONE", "DOUBLE", "PRECISION",
	"VARCHAR", "CHARACTER", "VARYING", "DECIMAL(10,2)", "INTEGER", "FLOAT", "INTERVAL", "UUID", "BLOB",
	"abs(", "count(*)", "starts_with(", "like_escape(", "not_like_escape(", "main.prefix(",
	"-- comment\n", "/* c */", "/* /* nested */ */", "/* open", "*/", "--",
}

var separators = []string{" ", " ", " ", "", "\n", "\t", "\r\n", "/**/", "--x\n"}

// genExpr joins random fragments: mostly nonsense, but with enough
// structure that every parser path is reached.
func genExpr(r *rand.Rand) string {
	var sb strings.Builder
	for range 1 + r.IntN(14) {
		sb.WriteString(exprFragments[r.IntN(len(exprFragments))])
		sb.WriteString(separators[r.IntN(len(separators))])
	}
	return sb.String()
}

// genTree writes a mostly well-formed predicate, so that deep parser paths
// (precedence, postfix forms, casts) are reached as often as the lexer's.
func genTree(r *rand.Rand, depth int) string {
	operand := func() string { return genTree(r, depth-1) }
	if depth <= 0 || r.IntN(4) == 0 {
		atoms := []string{"i", "s", "\"Q\"\"x\"", "st.a", "1", "-2", "1.5e3", "'x'", "'it''s'", "NULL", "TRUE",
			"DATE '2024-01-01'", "TIMESTAMP WITH TIME ZONE '2024-01-01'", "x::INTEGER", "'1'::DECIMAL(10,2)[]",
			"f()", "count(*)", "main.prefix(s, 'x')", "+1", "- -1", "-1.5::FLOAT", "-x::BIGINT"}
		return atoms[r.IntN(len(atoms))]
	}
	switch r.IntN(24) {
	case 0:
		return operand() + " OR " + operand()
	case 1:
		return operand() + " AND " + operand()
	case 2:
		return "NOT " + operand()
	case 3:
		ops := []string{"=", "==", "<>", "!=", "<", "<=", ">", ">=", "~~", "!~~", "~~*", "!~~*"}
		return operand() + " " + ops[r.IntN(len(ops))] + " " + operand()
	case 4:
		ops := []string{"+", "-", "||", "*", "/", "%"}
		return operand() + " " + ops[r.IntN(len(ops))] + " " + operand()
	case 5:
		return "(" + operand() + ")"
	case 6:
		tails := []string{"IS NULL", "IS NOT NULL", "IS TRUE", "IS NOT FALSE", "IS UNKNOWN", "ISNULL", "NOTNULL"}
		return operand() + " " + tails[r.IntN(len(tails))]
	case 7:
		return operand() + " IS NOT DISTINCT FROM " + operand()
	case 8:
		return operand() + " NOT BETWEEN " + operand() + " AND " + operand()
	case 9:
		return operand() + " BETWEEN ASYMMETRIC " + operand() + " AND " + operand()
	case 10:
		return operand() + " IN (" + operand() + ", " + operand() + ")"
	case 11:
		return operand() + " NOT IN ()"
	case 12:
		return operand() + " LIKE " + operand() + " ESCAPE " + operand()
	case 13:
		return operand() + " NOT ILIKE " + operand()
	case 14:
		return "CAST(" + operand() + " AS VARCHAR)"
	case 15:
		return "TRY_CAST(" + operand() + " AS INTEGER[3])"
	case 16:
		return operand() + "::DOUBLE PRECISION"
	case 17:
		return "abs(" + operand() + ", " + operand() + ")"
	case 18:
		return "like_escape(" + operand() + ", " + operand() + ", " + operand() + ")"
	case 19:
		return "-" + operand()
	case 20:
		return "+" + operand()
	case 21:
		return operand() + " /* c */ " + operand()
	case 22:
		return operand() + " IS DISTINCT FROM " + operand()
	default:
		return operand() + " AND NOT " + operand()
	}
}

// mutate edits s at a few random bytes.
func mutate(r *rand.Rand, s string) string {
	const alphabet = " '\"()-*/=<>!~:,.[]aZ09_$\n\x00\xc3\xbc\xff"
	b := []byte(s)
	for range 1 + r.IntN(3) {
		i := 0
		if len(b) > 0 {
			i = r.IntN(len(b) + 1)
		}
		c := alphabet[r.IntN(len(alphabet))]
		switch r.IntN(3) {
		case 0:
			b = append(b[:i], append([]byte{c}, b[i:]...)...)
		case 1:
			if i < len(b) {
				b = append(b[:i], b[i+1:]...)
			}
		default:
			if i < len(b) {
				b[i] = c
			}
		}
	}
	return string(b)
}

// fuzzCorpus reads the string inputs of a fuzz target's cached corpus, if
// there is one on this machine.
func fuzzCorpus(t *testing.T, pkg, target string) []string {
	out, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		return nil
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "fuzz", "rocklake", pkg, target)
	entries, _ := os.ReadDir(dir)
	var corpus []string
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if q, ok := strings.CutPrefix(line, "string("); ok {
				if s, err := strconv.Unquote(strings.TrimSuffix(q, ")")); err == nil {
					corpus = append(corpus, s)
				}
			}
		}
	}
	t.Logf("%d inputs from the cached %s corpus", len(corpus), target)
	return corpus
}

func TestParseMatchesFrozen(t *testing.T) {
	inputs := []string{"", " ", "i = 1", "NOT (a < 'x' OR b IS NULL)", "s LIKE 'a\\%%' ESCAPE '\\'",
		"x IN (1, 2.5, 'a', NULL)", "ts >= TIMESTAMP '2024-01-01' AND ts < DATE '2025-01-01'",
		"CAST(x AS DECIMAL(10,2)) = 1e3", "a OR b AND c OR d", "a + b * c - d / e % f || g",
		"a = b = c", "a IS NULL + 1", "- -3", "-1.5::FLOAT", "x::INTEGER[]::VARCHAR", "NOT NOT a",
		strings.Repeat("NOT ", 20000) + "b", strings.Repeat("(", 6000) + "1" + strings.Repeat(")", 6000),
		strings.Repeat("-", 20000) + "1", strings.Repeat("a + ", 5000) + "b",
	}
	inputs = append(inputs, fuzzCorpus(t, "expr", "FuzzParse")...)
	for _, s := range inputs {
		sameParse(t, s)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		s := genExpr(r)
		sameParse(t, s)
		sameParse(t, mutate(r, s))
	}
	for range 100000 {
		s := genTree(r, 4)
		sameParse(t, s)
		sameParse(t, mutate(r, s))
	}
	for range 20 {
		for _, s := range inputs[:min(len(inputs), 400)] {
			sameParse(t, mutate(r, s))
		}
	}
}

func FuzzParseMatchesFrozen(f *testing.F) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		f.Add(genExpr(r))
		f.Add(genTree(r, 4))
	}
	f.Fuzz(func(t *testing.T, s string) { sameParse(t, s) })
}
