package server

import (
	"strings"
	"testing"

	"github.com/rocklake/rocklake/internal/sqllex"
)

// The session's own reading of SQL text (statements, parameters, SET,
// the leading keyword) never panics, and putting literals in for the
// parameters leaves the rest of the text as it was.
func FuzzStatementText(f *testing.F) {
	for _, s := range []string{
		"SELECT 1; SELECT $1", "SET rocklake.snapshot = 3", "SET TIME ZONE 'UTC'", "SET x=", "RESET", "SHOW",
		"SELECT '$1' || $2 -- $3\n/* $4 */", "SELECT $$a$1$$ || $1", "DEALLOCATE", "BEGIN; COMMIT",
		"SELECT E'\\'$1' , $1", `SELECT "$1", $1`, "$", "$0", "$99999999999999999999", "SELECT a$1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		splitStatements(q)
		_ = sqllex.LeadingKeyword(q)
		parseSet(strings.Fields(q))
		n, err := countParams(q)
		if err != nil || n == 0 || n > 50 {
			return
		}
		lits := make([]string, n)
		for i := range lits {
			lits[i] = "'x'"
		}
		out, err := substituteParams(q, lits)
		if err != nil {
			return
		}
		if !strings.Contains(out, "'x'") {
			t.Fatalf("%q with %d parameters became %q", q, n, out)
		}
	})
}

func TestNamesSystemCatalog(t *testing.T) {
	for q, want := range map[string]bool{
		"SELECT * FROM pg_catalog.pg_class":                  true,
		"select relname from PG_CLASS":                       true,
		"SELECT * FROM information_schema . tables":          true,
		"SELECT * FROM t WHERE name = 'pg_class'":            false,
		"SELECT pg_types FROM t":                             false,
		"SELECT 1 -- pg_catalog.pg_class\n":                  false,
		`SELECT "pg_catalog.x" FROM t`:                       false,
		"SELECT count(*) FROM t WHERE note = 'pg_catalog.x'": false,
	} {
		if got := namesSystemCatalog(q); got != want {
			t.Errorf("%q: %v, want %v", q, got, want)
		}
	}
}
