package server_test

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"
)

// execTag runs one statement and returns its command tag.
func execTag(t *testing.T, c *pgx.Conn, q string, args ...any) string {
	t.Helper()
	tag, err := c.Exec(context.Background(), q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return tag.String()
}

// Cursors through pgx, in both protocols: DECLARE in a transaction
// block, FETCH in batches until none is left, MOVE, CLOSE, and
// PostgreSQL's errors and command tags.
func TestCursors(t *testing.T) {
	f := newFixture(t, newConfig())
	ctx := context.Background()
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		c := f.connect(t, mode)
		if err := func() error { _, err := c.Exec(ctx, "DECLARE c CURSOR FOR SELECT id FROM t"); return err }(); sqlstate(err) != "25P01" {
			t.Errorf("%v: DECLARE outside a block: %v, want 25P01", mode, err)
		}
		execTag(t, c, "BEGIN")
		if tag := execTag(t, c, "DECLARE c NO SCROLL CURSOR WITHOUT HOLD FOR SELECT id, name FROM t ORDER BY id"); tag != "DECLARE CURSOR" {
			t.Errorf("DECLARE's tag %q", tag)
		}
		var ids []int64
		for batch := 0; ; batch++ {
			rows, err := c.Query(ctx, "FETCH 70 FROM c")
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for rows.Next() {
				var id int64
				var name string
				if err := rows.Scan(&id, &name); err != nil {
					t.Fatal(err)
				}
				if name != fmt.Sprintf("n%d", id) {
					t.Errorf("row %d: name %q", id, name)
				}
				ids = append(ids, id)
				n++
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("FETCH %d", n); rows.CommandTag().String() != want {
				t.Errorf("tag %q, want %q", rows.CommandTag(), want)
			}
			if n == 0 {
				break
			}
			if batch > 10 {
				t.Fatal("the cursor does not end")
			}
		}
		if len(ids) != 300 || ids[0] != 0 || ids[299] != 299 {
			t.Errorf("%v: fetched %d rows", mode, len(ids))
		}
		execTag(t, c, "CLOSE c")
		execTag(t, c, `DECLARE "Mixed" CURSOR FOR SELECT id FROM t WHERE id < 20 ORDER BY id`)
		for _, step := range []struct{ q, want string }{
			{`MOVE 5 IN "Mixed"`, "MOVE 5"},
			{`FETCH NEXT FROM "Mixed"`, "5"},
			{`FETCH FORWARD 2 FROM "Mixed"`, "6\n7"},
			{`FETCH RELATIVE 3 FROM "Mixed"`, "10"},
			{`FETCH ABSOLUTE 12 FROM "Mixed"`, "11"},
			{`FETCH "Mixed"`, "12"},
			{`MOVE FORWARD ALL FROM "Mixed"`, "MOVE 7"},
			{`FETCH ALL FROM "Mixed"`, ""},
			{`MOVE NEXT IN "Mixed"`, "MOVE 0"},
		} {
			got := ""
			if strings.HasPrefix(step.q, "MOVE") {
				got = execTag(t, c, step.q)
			} else {
				got = firstAnswer(t, c, step.q)
			}
			if got != step.want {
				t.Errorf("%v: %s: %q, want %q", mode, step.q, got, step.want)
			}
		}
		for _, e := range []struct{ q, code string }{
			{`DECLARE "Mixed" CURSOR FOR SELECT 1`, "42P03"},
			{"FETCH 1 FROM mixed", "34000"},
			{`FETCH PRIOR FROM "Mixed"`, "55000"},
			{"CLOSE nosuch", "34000"},
			{"DECLARE s SCROLL CURSOR FOR SELECT 1", "0A000"},
			{"DECLARE w CURSOR FOR INSERT INTO t SELECT * FROM t", "42601"},
		} {
			execTag(t, c, "ROLLBACK")
			execTag(t, c, "BEGIN")
			execTag(t, c, `DECLARE "Mixed" CURSOR FOR SELECT id FROM t`)
			if _, err := c.Exec(ctx, e.q); sqlstate(err) != e.code {
				t.Errorf("%v: %s: %v, want %s", mode, e.q, err, e.code)
			}
			// The failed block ignores what follows until it ends.
			if _, err := c.Exec(ctx, `FETCH 1 FROM "Mixed"`); sqlstate(err) != "25P02" {
				t.Errorf("%v: FETCH in a failed block: %v", mode, err)
			}
		}
		execTag(t, c, "ROLLBACK")
		if _, err := c.Exec(ctx, `FETCH 1 FROM "Mixed"`); sqlstate(err) != "34000" {
			t.Errorf("%v: a cursor after ROLLBACK: %v", mode, err)
		}
		// WITH HOLD outlives its transaction's COMMIT, and may be declared
		// outside one; CLOSE ALL ends every cursor.
		execTag(t, c, "BEGIN")
		execTag(t, c, "DECLARE h CURSOR WITH HOLD FOR SELECT id FROM t WHERE id >= 290 ORDER BY id")
		execTag(t, c, "DECLARE n CURSOR FOR SELECT 1")
		execTag(t, c, "COMMIT")
		if got := firstAnswer(t, c, "FETCH 2 FROM h"); got != "290\n291" {
			t.Errorf("%v: WITH HOLD after COMMIT: %q", mode, got)
		}
		if _, err := c.Exec(ctx, "FETCH n"); sqlstate(err) != "34000" {
			t.Errorf("%v: a cursor without HOLD after COMMIT: %v", mode, err)
		}
		execTag(t, c, "DECLARE h2 CURSOR WITH HOLD FOR SELECT 2")
		if tag := execTag(t, c, "CLOSE ALL"); tag != "CLOSE CURSOR ALL" {
			t.Errorf("CLOSE ALL's tag %q", tag)
		}
		for _, name := range []string{"h", "h2"} {
			if _, err := c.Exec(ctx, "FETCH "+name); sqlstate(err) != "34000" {
				t.Errorf("%v: %s after CLOSE ALL: %v", mode, name, err)
			}
		}
		// ROLLBACK ends a WITH HOLD cursor declared in its transaction.
		execTag(t, c, "BEGIN")
		execTag(t, c, "DECLARE r CURSOR WITH HOLD FOR SELECT 1")
		execTag(t, c, "ROLLBACK")
		if _, err := c.Exec(ctx, "FETCH r"); sqlstate(err) != "34000" {
			t.Errorf("%v: WITH HOLD after its ROLLBACK: %v", mode, err)
		}
	}
}

// A cursor reads the snapshot its transaction reads, whatever is
// committed after BEGIN.
func TestCursorReadsTheBlockSnapshot(t *testing.T) {
	f := newFixture(t, newConfig())
	a := f.connect(t, pgx.QueryExecModeCacheStatement)
	b := f.connect(t, pgx.QueryExecModeSimpleProtocol)
	execTag(t, b, "CREATE TABLE grow (id BIGINT)")
	execTag(t, b, "INSERT INTO grow VALUES (1)")
	execTag(t, a, "BEGIN")
	execTag(t, b, "INSERT INTO grow VALUES (2), (3)")
	execTag(t, a, "DECLARE c CURSOR FOR SELECT count(*) FROM grow")
	if got := firstAnswer(t, a, "FETCH ALL FROM c"); got != "1" {
		t.Errorf("the cursor saw %s rows, its block's snapshot 1", got)
	}
	execTag(t, a, "COMMIT")
	if got := firstAnswer(t, a, "SELECT count(*) FROM grow"); got != "3" {
		t.Errorf("after the block: %s", got)
	}
}

// A BINARY cursor's rows come in binary through the simple protocol; a
// Bind's formats choose through the extended one.
func TestBinaryCursor(t *testing.T) {
	f := newFixture(t, newConfig())
	ctx, c := f.pgconn(t)
	res, err := c.Exec(ctx, "BEGIN; DECLARE b BINARY CURSOR FOR SELECT 7::INTEGER AS v; FETCH 1 FROM b; COMMIT").ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	fetch := res[2]
	if fetch.CommandTag.String() != "FETCH 1" || len(fetch.Rows) != 1 || fetch.FieldDescriptions[0].Format != 1 || string(fetch.Rows[0][0]) != "\x00\x00\x00\x07" {
		t.Errorf("binary FETCH: %s %+v %q", fetch.CommandTag, fetch.FieldDescriptions, fetch.Rows)
	}
	// In one Query message, several statements make an implicit block,
	// which DECLARE accepts and whose end closes the cursor.
	res, err = c.Exec(ctx, "DECLARE i CURSOR FOR SELECT 1 AS one UNION ALL SELECT 2; FETCH ALL FROM i").ReadAll()
	if err != nil || len(res) != 2 || len(res[1].Rows) != 2 {
		t.Fatalf("implicit block: %v %v", res, err)
	}
	if _, err := c.Exec(ctx, "FETCH i").ReadAll(); sqlstate(err) != "34000" {
		t.Errorf("the implicit block's cursor after it: %v", err)
	}
	rr := c.ExecParams(ctx, "BEGIN", nil, nil, nil, nil).Read()
	if rr.Err != nil {
		t.Fatal(rr.Err)
	}
	c.Exec(ctx, "DECLARE b BINARY CURSOR FOR SELECT 7::INTEGER AS v").ReadAll()
	rr = c.ExecParams(ctx, "FETCH 1 FROM b", nil, nil, nil, []int16{0}).Read()
	if rr.Err != nil || string(rr.Rows[0][0]) != "7" {
		t.Errorf("text through Bind: %q %v", rr.Rows, rr.Err)
	}
	c.Exec(ctx, "ROLLBACK").ReadAll()
}

// A cursor over an answer far larger than the session's buffers, fetched
// in small batches: the server's live heap stays bounded by a batch, not
// the answer. (DuckDB's own memory, outside Go's heap, is not measured
// here; see the bench.)
func TestCursorMemoryBounded(t *testing.T) {
	ctx, c := bigAnswers(t)
	if _, err := c.Exec(ctx, "BEGIN; DECLARE big CURSOR FOR "+bigAnswer).ReadAll(); err != nil {
		t.Fatal(err)
	}
	base := liveHeap()
	var peak uint64
	total, bytes := 0, 0
	for batch := 0; ; batch++ {
		rr := c.ExecParams(ctx, "FETCH 1000 FROM big", nil, nil, nil, nil).Read()
		if rr.Err != nil {
			t.Fatal(rr.Err)
		}
		for _, r := range rr.Rows {
			bytes += len(r[0]) + len(r[1])
		}
		total += len(rr.Rows)
		if len(rr.Rows) == 0 {
			break
		}
		if batch%50 == 0 {
			peak = max(peak, liveHeap())
		}
	}
	if total != 1_000_000 {
		t.Fatalf("fetched %d rows", total)
	}
	if grew := int64(peak) - int64(base); grew > 64<<20 {
		t.Errorf("the live heap grew by %d MiB while %d MiB were fetched", grew>>20, bytes>>20)
	}
	t.Logf("fetched %d MiB; live heap %d MiB before, at most %d MiB during", bytes>>20, base>>20, peak>>20)
}

// SQL's PREPARE, EXECUTE and DEALLOCATE through pgx, in both protocols,
// with arguments written in and bound as pgx's parameters.
func TestPrepareExecute(t *testing.T) {
	f := newFixture(t, newConfig())
	ctx := context.Background()
	for i, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement, pgx.QueryExecModeExec} {
		c := f.connect(t, mode)
		if tag := execTag(t, c, "PREPARE byid (bigint) AS SELECT name, amount::VARCHAR FROM t WHERE id = $1"); tag != "PREPARE" {
			t.Errorf("PREPARE's tag %q", tag)
		}
		execTag(t, c, "PREPARE byname AS SELECT id FROM t WHERE name = $1 OR name = $2 ORDER BY id")
		execTag(t, c, "prepare Range(int, int) as select count(*) from t where id between $1 and $2")
		for _, q := range []struct {
			sql  string
			args []any
			want string
		}{
			{"EXECUTE byid(43)", nil, "n43|53.75"},
			{"EXECUTE byid($1)", []any{int64(44)}, "n44|55.00"},
			{"EXECUTE byid (NULL)", nil, ""},
			{"EXECUTE byname('n7', 'n9')", nil, "7\n9"},
			{"EXECUTE byname($1, 'it''s')", []any{"n8"}, "8"},
			{"EXECUTE range(10, 19)", nil, "10"},
			{"EXECUTE RANGE(10 + 5, (SELECT 19))", nil, "5"},
		} {
			if got := firstAnswer(t, c, q.sql, q.args...); got != q.want {
				t.Errorf("%v: %s: %q, want %q", mode, q.sql, got, q.want)
			}
		}
		rows, err := c.Query(ctx, "EXECUTE byid(1)")
		if err != nil {
			t.Fatal(err)
		}
		rows.Close()
		if rows.CommandTag().String() != "SELECT 1" {
			t.Errorf("EXECUTE's tag %q", rows.CommandTag())
		}
		// A prepared write, as a writer.
		tbl := fmt.Sprintf("pw%d", i)
		execTag(t, c, "CREATE TABLE "+tbl+" (id BIGINT, note VARCHAR)")
		execTag(t, c, "PREPARE ins AS INSERT INTO "+tbl+" VALUES ($1, $2)")
		if tag := execTag(t, c, "EXECUTE ins(1, 'one')"); tag != "INSERT 0 1" {
			t.Errorf("EXECUTE of an INSERT: %q", tag)
		}
		if got := firstAnswer(t, c, "SELECT id, note FROM "+tbl); got != "1|one" {
			t.Errorf("the prepared INSERT wrote %q", got)
		}
		for _, e := range []struct{ q, code string }{
			{"EXECUTE nosuch", "26000"},
			{"EXECUTE byid", "42601"},
			{"EXECUTE byid(1, 2)", "42601"},
			{"EXECUTE byid('x')", "22P02"},
			{"PREPARE byid AS SELECT 1", "42P05"},
			{"PREPARE bad (nosuchtype) AS SELECT $1", "42704"},
			{"PREPARE bad AS BEGIN", "42601"},
			{"DEALLOCATE nosuch", "26000"},
		} {
			if _, err := c.Exec(ctx, e.q); sqlstate(err) != e.code {
				t.Errorf("%v: %s: %v, want %s", mode, e.q, err, e.code)
			}
		}
		if tag := execTag(t, c, "DEALLOCATE byid"); tag != "DEALLOCATE" {
			t.Errorf("DEALLOCATE's tag %q", tag)
		}
		if _, err := c.Exec(ctx, "EXECUTE byid(1)"); sqlstate(err) != "26000" {
			t.Errorf("%v: EXECUTE after DEALLOCATE: %v", mode, err)
		}
		if tag := execTag(t, c, "DEALLOCATE PREPARE ALL"); tag != "DEALLOCATE ALL" {
			t.Errorf("DEALLOCATE ALL's tag %q", tag)
		}
		if _, err := c.Exec(ctx, "EXECUTE byname('a', 'b')"); sqlstate(err) != "26000" {
			t.Errorf("%v: EXECUTE after DEALLOCATE ALL: %v", mode, err)
		}
	}
}

// psql, the reference client: DECLARE and FETCH in a transaction, and
// FETCH_COUNT, with which psql itself reads a query through a cursor.
func TestPsqlCursors(t *testing.T) {
	psql := psqlPath(t)
	f := newFixture(t, newConfig())
	run := func(args ...string) (string, error) {
		cmd := exec.Command(psql, append([]string{"-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", f.pgURL("me", "", "disable")}, args...)...)
		cmd.Env = append(cmd.Environ(), "PGCONNECT_TIMEOUT=10")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("-c", "BEGIN", "-c", "DECLARE c CURSOR FOR SELECT id FROM t ORDER BY id", "-c", "FETCH 2 FROM c", "-c", "MOVE 3 FROM c", "-c", "FETCH 2 FROM c", "-c", "COMMIT")
	if err != nil || out != "BEGIN\nDECLARE CURSOR\n0\n1\nMOVE 3\n5\n6\nCOMMIT\n" {
		t.Errorf("DECLARE/FETCH: %q %v", out, err)
	}
	out, err = run("-v", "FETCH_COUNT=7", "-c", "SELECT id FROM t WHERE id < 20 ORDER BY id")
	if err != nil || strings.Count(out, "\n") != 20 || !strings.HasPrefix(out, "0\n1\n") || !strings.HasSuffix(out, "19\n") {
		t.Errorf("FETCH_COUNT: %q %v", out, err)
	}
	out, err = run("-c", "PREPARE q (int) AS SELECT name FROM t WHERE id = $1", "-c", "EXECUTE q(5)", "-c", "DEALLOCATE q")
	if err != nil || out != "PREPARE\nn5\nDEALLOCATE\n" {
		t.Errorf("PREPARE/EXECUTE: %q %v", out, err)
	}
}

// The protocol's Parse of a name taken fails with 42P05 and leaves the
// statement there as it was, as PostgreSQL does; the unnamed statement is
// replaced by each Parse.
func TestParseOfATakenName(t *testing.T) {
	f := newFixture(t, newConfig())
	ctx := context.Background()
	c := f.connect(t, pgx.QueryExecModeExec).PgConn()
	if _, err := c.Prepare(ctx, "s1", "SELECT id FROM t WHERE id = 7", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Prepare(ctx, "s1", "SELECT id FROM t WHERE id = 8", nil); sqlstate(err) != "42P05" {
		t.Errorf("a second Parse of s1: %v, want 42P05", err)
	}
	res := c.ExecPrepared(ctx, "s1", nil, nil, nil).Read()
	if res.Err != nil || len(res.Rows) != 1 || string(res.Rows[0][0]) != "7" {
		t.Errorf("s1 after the refused Parse: %v %q", res.Err, res.Rows)
	}
	for _, q := range []string{"SELECT 1", "SELECT 2"} {
		if _, err := c.Prepare(ctx, "", q, nil); err != nil {
			t.Errorf("unnamed Parse of %s: %v", q, err)
		}
	}
	if res := c.ExecPrepared(ctx, "", nil, nil, nil).Read(); res.Err != nil || string(res.Rows[0][0]) != "2" {
		t.Errorf("the unnamed statement: %v %q", res.Err, res.Rows)
	}
}

// A session holds at most Config.MaxCursors answers open: cursors in a
// block and WITH HOLD, and portals an Execute with a row limit left
// suspended. One more fails with 54000 naming the limit; closing one
// makes room; queries that run to their end are not held back; other
// sessions are not affected.
func TestCursorLimit(t *testing.T) {
	cfg := newConfig()
	cfg.MaxCursors = 3
	f := newFixture(t, cfg)
	ctx := context.Background()
	c := f.connect(t, pgx.QueryExecModeSimpleProtocol)
	over := func(what string, err error) {
		t.Helper()
		if sqlstate(err) != "54000" || !strings.Contains(err.Error(), "--max-cursors 3") {
			t.Fatalf("%s past the limit: %v", what, err)
		}
	}
	execTag(t, c, "BEGIN")
	for i := range 3 {
		execTag(t, c, fmt.Sprintf("DECLARE c%d CURSOR FOR SELECT id FROM t", i))
	}
	_, err := c.Exec(ctx, "DECLARE c3 CURSOR FOR SELECT id FROM t")
	over("DECLARE in a block", err)
	execTag(t, c, "ROLLBACK")
	for i := range 3 {
		execTag(t, c, fmt.Sprintf("DECLARE h%d CURSOR WITH HOLD FOR SELECT id FROM t ORDER BY id", i))
	}
	_, err = c.Exec(ctx, "DECLARE h3 CURSOR WITH HOLD FOR SELECT id FROM t ORDER BY id")
	over("DECLARE WITH HOLD", err)
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeExec, pgx.QueryExecModeCacheStatement} {
		var n int64
		if err := c.QueryRow(ctx, "SELECT count(*) FROM t", mode).Scan(&n); err != nil || n == 0 {
			t.Fatalf("%v: a query at the limit: %d %v", mode, n, err)
		}
	}
	execTag(t, c, "CLOSE h0")
	execTag(t, c, "DECLARE h3 CURSOR WITH HOLD FOR SELECT id FROM t ORDER BY id")
	var first int64
	if err := c.QueryRow(ctx, "FETCH 1 FROM h3").Scan(&first); err != nil {
		t.Fatalf("FETCH from the cursor declared after a CLOSE: %v", err)
	}
	other := f.connect(t, pgx.QueryExecModeSimpleProtocol)
	execTag(t, other, "BEGIN")
	for i := range 3 {
		execTag(t, other, fmt.Sprintf("DECLARE c%d CURSOR FOR SELECT id FROM t", i))
	}
	execTag(t, other, "ROLLBACK")

	// Named portals, each left suspended after one row, in one pipeline.
	p := f.connect(t, pgx.QueryExecModeSimpleProtocol).PgConn()
	fe := p.Frontend()
	fe.Send(&pgproto3.Parse{Name: "s", Query: "SELECT id FROM t"})
	for k := range 4 {
		name := fmt.Sprintf("p%d", k)
		fe.Send(&pgproto3.Bind{DestinationPortal: name, PreparedStatement: "s"})
		fe.Send(&pgproto3.Execute{Portal: name, MaxRows: 1})
	}
	fe.Send(&pgproto3.Sync{})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	suspended, code, msg := 0, "", ""
	for {
		m, err := fe.Receive()
		if err != nil {
			t.Fatal(err)
		}
		switch m := m.(type) {
		case *pgproto3.PortalSuspended:
			suspended++
		case *pgproto3.ErrorResponse:
			code, msg = m.Code, m.Message
		}
		if _, ok := m.(*pgproto3.ReadyForQuery); ok {
			break
		}
	}
	if suspended != 3 || code != "54000" || !strings.Contains(msg, "--max-cursors 3") {
		t.Fatalf("four portals left suspended: %d suspended, then %s %q", suspended, code, msg)
	}
}
