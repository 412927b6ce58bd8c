package server_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rocklake/rocklake/server"
)

// DuckDB's own COPY (copystream.go) writes what the row path writes,
// byte for byte and in the same order, with the same tag: over a
// generated table of every type it takes (NULLs, and values that need
// escaping, quoting, or collide with the NULL string), in the text and
// CSV formats under every option that changes a byte, and for the
// types it leaves to the row path, which must still answer.
func TestCopyStreamMatchesRowPath(t *testing.T) {
	f := newFixture(t, newConfig())
	ctx := context.Background()
	c := f.connect(t, pgx.QueryExecModeSimpleProtocol)
	rowPathOnly := map[string]bool{"FLOAT": true, "DOUBLE": true, "INTERVAL": true, "BIGINT[]": true, "VARCHAR[]": true}
	var defs, names []string
	for _, col := range everyType {
		if !rowPathOnly[col.typ] {
			defs, names = append(defs, col.name+" "+col.typ), append(names, col.name)
		}
	}
	if _, err := c.Exec(ctx, "CREATE TABLE st (id BIGINT, "+strings.Join(defs, ", ")+")"); err != nil {
		t.Fatal(err)
	}
	rnd := rand.New(rand.NewPCG(7, 38))
	var values []string
	for r := 0; r < 400; r++ {
		row := []string{fmt.Sprint(r)}
		for _, col := range everyType {
			switch {
			case rowPathOnly[col.typ]:
				continue
			case r == 0 || rnd.IntN(7) == 0:
				row = append(row, "NULL")
			default:
				row = append(row, col.vals[rnd.IntN(len(col.vals))])
			}
		}
		values = append(values, "("+strings.Join(row, ", ")+")")
	}
	if _, err := c.Exec(ctx, "INSERT INTO st VALUES "+strings.Join(values, ", ")); err != nil {
		t.Fatal(err)
	}
	all := "SELECT * FROM st ORDER BY id"
	statements := []string{}
	for _, opts := range []string{
		"", "(DELIMITER '|')", "(DELIMITER ',', NULL 'NULL')", "(DELIMITER ':')", "(DELIMITER ' ')", "(DELIMITER '-')", "(NULL '')", "(NULL '0')",
		"(FORMAT csv)", "(FORMAT csv, HEADER)", "(FORMAT csv, DELIMITER ';')", "(FORMAT csv, DELIMITER '-')", "(FORMAT csv, DELIMITER 'x')",
		"(FORMAT csv, DELIMITER ':', NULL '1')", "(FORMAT csv, QUOTE '''', ESCAPE '\\')", "(FORMAT csv, NULL 'NULL')",
		"(FORMAT csv, NULL '0')", "(FORMAT csv, FORCE_QUOTE *)", "(FORMAT csv, FORCE_QUOTE (s, i8, dt))", "(FORMAT csv, DELIMITER E'\\t')",
	} {
		statements = append(statements, "COPY ("+all+") TO STDOUT "+opts)
	}
	statements = append(statements,
		"COPY (SELECT s FROM st ORDER BY id) TO STDOUT (FORMAT csv)", // one column: \. is quoted
		"COPY (SELECT s FROM st ORDER BY id) TO STDOUT",
		"COPY (SELECT id, "+strings.Join(names, ", ")+" FROM st WHERE id % 3 = 1 ORDER BY id DESC) TO STDOUT (FORMAT csv)",
		"COPY st (s, id) TO STDOUT (FORMAT csv)",
		"COPY (SELECT id, f4, f8 FROM (SELECT id, 1.5::FLOAT AS f4, 0.1::DOUBLE AS f8 FROM st) ORDER BY id) TO STDOUT", // the row path's
		"COPY (SELECT * FROM st WHERE id < 0) TO STDOUT (FORMAT csv, HEADER)",
	)
	streamed := server.StreamedCopies()
	for _, q := range statements {
		was := server.SetStreamCopies(false)
		want, wantTag, wantErr := copyOut(t, c.PgConn(), q)
		server.SetStreamCopies(was)
		got, tag, err := copyOut(t, c.PgConn(), q)
		if err != nil || wantErr != nil {
			t.Errorf("%s: %v (the row path: %v)", q, err, wantErr)
			continue
		}
		if tag != wantTag || got != want {
			t.Errorf("%s: DuckDB's COPY gave %s, %d bytes; the row path %s, %d bytes\nfirst difference at %d: %q vs %q",
				q, tag, len(got), wantTag, len(want), firstDiff(got, want), clip(got, firstDiff(got, want)), clip(want, firstDiff(got, want)))
		}
	}
	// Every statement but the one with FLOAT and DOUBLE took DuckDB's COPY.
	if n := server.StreamedCopies() - streamed; n != int64(len(statements)-1) {
		t.Errorf("%d of %d statements took DuckDB's COPY, want %d", n, len(statements), len(statements)-1)
	}
}

func firstDiff(a, b string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func clip(s string, at int) string {
	return s[max(0, at-40):min(len(s), at+40)]
}

// DuckDB's COPY ends as the row path's does, and leaves nothing behind:
// past the server's row limit (54000), cancelled by the client midway
// (57014), failing on a late row; each time the session answers next,
// and no pipe is left in the server's temporary directory.
func TestCopyStreamEnds(t *testing.T) {
	cfg := newConfig()
	cfg.MaxResultRows = 50_000
	f := newFixture(t, cfg)
	ctx := context.Background()
	c := f.connect(t, pgx.QueryExecModeSimpleProtocol)
	leftovers := func() []string {
		m, _ := filepath.Glob(filepath.Join(f.dir, "tmp", "copy-*"))
		return m
	}
	streamed := server.StreamedCopies()
	_, _, err := copyOut(t, c.PgConn(), "COPY (SELECT i, 'row ' || i AS s FROM range(200000) r(i)) TO STDOUT")
	if sqlstate(err) != "54000" {
		t.Errorf("past the row limit: %v, want 54000", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	w := &cancelAfter{n: 1 << 20, cancel: cancel}
	_, err = c.PgConn().CopyTo(cctx, w, "COPY (SELECT i, repeat('x', 200) AS s FROM range(40000) r(i)) TO STDOUT")
	if err == nil {
		t.Errorf("a COPY cancelled after %d bytes ended without an error", w.got)
	}
	c = f.connect(t, pgx.QueryExecModeSimpleProtocol) // pgx closes a connection whose context was cancelled
	_, _, err = copyOut(t, c.PgConn(), "COPY (SELECT ('' || CASE WHEN i < 30000 THEN '1' ELSE 'x' END)::INT AS v FROM range(40000) r(i)) TO STDOUT (FORMAT csv)")
	if sqlstate(err) != "22P02" {
		t.Errorf("a late row that does not cast: %v, want 22P02", err)
	}
	if got := firstAnswer(t, c, "SELECT count(*) FROM t"); got != "300" {
		t.Errorf("after the failed COPYs: %s", got)
	}
	if n := server.StreamedCopies() - streamed; n != 3 {
		t.Errorf("%d COPYs took DuckDB's COPY, want 3", n)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(leftovers()) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond) // a cancelled session closes off the client's path
	}
	if l := leftovers(); len(l) > 0 {
		t.Errorf("pipes left behind: %v", l)
	}
}

// cancelAfter cancels a context once n bytes came.
type cancelAfter struct {
	n, got int
	cancel func()
}

func (w *cancelAfter) Write(p []byte) (int, error) {
	w.got += len(p)
	if w.got >= w.n {
		w.cancel()
	}
	return len(p), nil
}
