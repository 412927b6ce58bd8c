package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/catalog"
)

// TestColumnAliasesMatchDuckDB: a table aliased with a column list,
// t AS s(b, a), gives its columns new names by position, so a name may
// come to mean another column; pruning must follow the positions. Every
// answer equals DuckDB's.
func TestColumnAliasesMatchDuckDB(t *testing.T) {
	db, e, list := castEdgeLake(t)
	ctx := context.Background()
	for _, q := range []string{
		"SELECT count(*) FROM t AS s(id2, x2, d2, tss2, tms2, dt2) WHERE x2 = 9007199254740993",
		"SELECT max(x2) FROM t AS s(id2, x2)",
	} {
		res, err := e.Query(ctx, q, QueryOptions{Snapshot: catalog.Latest})
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		want, _ := baseline(t, db, strings.Replace(q, "FROM t", "FROM read_parquet("+list+")", 1))
		if got := rowText(res.Rows[0]); got != want[0] {
			t.Errorf("%s: rocklake %s, DuckDB %s", q, got, want[0])
		}
	}
}
