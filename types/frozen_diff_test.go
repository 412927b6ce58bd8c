package types

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// sameType fails t unless ParseType and the frozen parser agree on s.
func sameType(t *testing.T, s string) {
	t.Helper()
	got, gotErr := ParseType(s)
	want, wantErr := frozenParseType(s)
	if (gotErr == nil) != (wantErr == nil) || gotErr != nil && !reflect.DeepEqual(gotErr, wantErr) {
		t.Fatalf("%q: error %#v, frozen parser %#v", s, gotErr, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: %#v, frozen parser %#v", s, got, want)
	}
}

var typeFragments = []string{
	"int", "INTEGER", "varchar", "decimal", "numeric", "struct", "row", "map", "list", "enum", "array",
	"timestamp", "time", "with", "without", "zone", "double", "precision", "character", "varying", "foo", "Bar",
	"a", "\"a\"\"b\"", "\"B c\"", "\"open", "'x'", "'it''s'", "'open", "a$b", "ü", "_1",
	"(", ")", "[", "]", "[]", "[3]", ",", "0", "1", "10", "38", "39", "99999999999999999999", "1.5", ".", "-", "@", "::", "--", "/*",
}

func genType(r *rand.Rand) string {
	seps := []string{" ", " ", "", "\n", "\t"}
	var sb strings.Builder
	for range 1 + r.IntN(12) {
		sb.WriteString(typeFragments[r.IntN(len(typeFragments))])
		sb.WriteString(seps[r.IntN(len(seps))])
	}
	return sb.String()
}

func mutateType(r *rand.Rand, s string) string {
	const alphabet = " '\"()[],0aZ_$.\n\x00\xc3\xbc\xff"
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

func cachedCorpus(t *testing.T, target string) []string {
	out, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		return nil
	}
	dirs := []string{filepath.Join(strings.TrimSpace(string(out)), "fuzz", "rocklake", "types", target), filepath.Join("testdata", "fuzz", target)}
	var corpus []string
	for _, dir := range dirs {
		entries, _ := os.ReadDir(dir)
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
	}
	t.Logf("%d inputs from the %s corpus", len(corpus), target)
	return corpus
}

func TestParseTypeMatchesFrozen(t *testing.T) {
	inputs := []string{"", "int", "decimal(38,10)", "struct(a int, \"b\"\"c\" varchar[])[]",
		"map(varchar, enum('x','y'))", "timestamp with time zone", "union(a int)", "int[3][]", "x((((",
		"struct(" + strings.Repeat("a struct(", 200) + "b int" + strings.Repeat(")", 201)}
	inputs = append(inputs, cachedCorpus(t, "FuzzParseType")...)
	for _, s := range inputs {
		sameType(t, s)
		sameType(t, "struct("+s+")")
	}
	r := rand.New(rand.NewPCG(5, 6))
	for range 300000 {
		s := genType(r)
		sameType(t, s)
		sameType(t, mutateType(r, s))
	}
	for range 20 {
		for _, s := range inputs {
			sameType(t, mutateType(r, s))
		}
	}
}

func FuzzParseTypeMatchesFrozen(f *testing.F) {
	r := rand.New(rand.NewPCG(7, 8))
	for range 200 {
		f.Add(genType(r))
	}
	f.Fuzz(func(t *testing.T, s string) { sameType(t, s) })
}
