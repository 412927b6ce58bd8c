package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/catalog"
)

// A repeated query reuses DuckDB's parse; a stale parse never changes an
// answer: the same text after a commit, and the parse cache off, agree.
func TestParseCacheKeepsAnswers(t *testing.T) {
	_, c, before, e := twoColumnLake(t)
	q := "SELECT count(*), sum(x) FROM t WHERE y >= 5000 AND y < 5100"
	first := answerOf(t, e, catalog.Latest, q)
	if got := answerOf(t, e, catalog.Latest, q); got != first {
		t.Fatalf("repeat: %s vs %s", got, first)
	}
	// Remove half the files: the cached parse must not carry a stale plan.
	rd, _ := c.Read(before.Snapshot.ID)
	tb, _ := rd.Table("t")
	files, _ := rd.Files(tb.ID)
	rd.Close()
	tx, _ := c.Begin()
	for _, f := range files[:10] {
		tx.RemoveFiles("t", f.ID)
	}
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	cached := answerOf(t, e, catalog.Latest, q)
	res, err := e.Query(context.Background(), q, QueryOptions{Snapshot: catalog.Latest, NoParseCache: true})
	if err != nil {
		t.Fatal(err)
	}
	if fresh := rowText(res.Rows[0]); cached != fresh || cached == first {
		t.Fatalf("after removing files: cached parse %s, fresh parse %s, before %s", cached, fresh, first)
	}
	if old := answerOf(t, e, before.Snapshot.ID, q); old != first {
		t.Fatalf("time travel: %s, want %s", old, first)
	}
	var names []string
	for _, p := range res.Phases {
		names = append(names, p.Name)
	}
	if strings.Join(names, ",") != "parse,plan,bind,execute" {
		t.Errorf("phases %v", names)
	}
}

// A trailing semicolon or -- comment ends the query it follows, and a CTE
// shadows a table only in its own scope.
func TestQueryTextEdges(t *testing.T) {
	_, _, _, e := twoColumnLake(t)
	want := answerOf(t, e, catalog.Latest, "SELECT count(*), sum(x) FROM t WHERE x < 100")
	for _, q := range []string{
		"SELECT count(*), sum(x) FROM t WHERE x < 100;",
		"SELECT count(*), sum(x) FROM t WHERE x < 100 ; \n",
		"SELECT count(*), sum(x) FROM t WHERE x < 100 -- trailing comment",
	} {
		if got := answerOf(t, e, catalog.Latest, q); got != want {
			t.Errorf("%q: %s, want %s", q, got, want)
		}
	}
	// The CTE named t hides the table only inside the first subquery.
	q := "SELECT (WITH t AS (SELECT 1 AS x) SELECT max(x) FROM t), (SELECT count(*) FROM t WHERE x < 100)"
	if got, n := answerOf(t, e, catalog.Latest, q), strings.Split(want, "|")[0]; got != "1|"+n {
		t.Errorf("scoped CTE: %s, want 1|%s", got, n)
	}
}
