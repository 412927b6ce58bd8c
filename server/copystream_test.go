package server_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/rocklake/rocklake/server"
)

// streamTables makes the tables the stream is checked over: st, of
// every type DuckDB's COPY writes, in 400 generated rows with NULLs and
// the values that need escaping, and edges, of instants over the whole
// range DuckDB holds; the names are st's columns other than id.
func streamTables(t *testing.T, c *pgx.Conn) []string {
	t.Helper()
	ctx := context.Background()
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
	// Instants over the whole range DuckDB holds, at the edges of the
	// years 1 to 9999 (where the stream spells a TIMESTAMPTZ without ICU)
	// and past them, at every precision.
	if _, err := c.Exec(ctx, `CREATE TABLE edges AS
		SELECT i AS id, TIMESTAMPTZ '0001-01-01 00:00:00+00' + to_microseconds(CAST(hash(i) % 315537897600000000 AS BIGINT) // p * p) AS tz,
			CAST(TIMESTAMPTZ '0001-01-01 00:00:00+00' + to_microseconds(CAST(hash(i) % 315537897600000000 AS BIGINT) // p * p) AS TIMESTAMP) AS ts
		FROM (SELECT i, [1, 1000, 1000000, 60000000][1 + i % 4] AS p FROM range(3000) r(i))
		UNION ALL SELECT 3000 + i, tz, NULL FROM (VALUES (0, 'infinity'::TIMESTAMPTZ), (1, '-infinity'::TIMESTAMPTZ), (2, TIMESTAMPTZ '0001-01-01 00:00:00+00'),
			(3, TIMESTAMPTZ '0001-01-01 00:00:00+00' - INTERVAL 1 MICROSECOND), (4, TIMESTAMPTZ '9999-12-31 23:59:59.999999+00'),
			(5, TIMESTAMPTZ '9999-12-31 23:59:59.999999+00' + INTERVAL 1 MICROSECOND), (6, TIMESTAMPTZ '0001-01-01 00:00:00+00' - INTERVAL 800 YEAR),
			(7, TIMESTAMPTZ '9999-12-31 00:00:00+00' + INTERVAL 9000 YEAR), (8, NULL)) v(i, tz)`); err != nil {
		t.Fatal(err)
	}
	return names
}

// DuckDB's own COPY (copystream.go) writes what the row path writes,
// byte for byte and in the same order, with the same tag: over a
// generated table of every type it takes (NULLs, and values that need
// escaping, quoting, or collide with the NULL string), in the text and
// CSV formats under every option that changes a byte, and for the
// types it leaves to the row path, which must still answer.
func TestCopyStreamMatchesRowPath(t *testing.T) {
	f := newFixture(t, newConfig())
	c := f.connect(t, pgx.QueryExecModeSimpleProtocol)
	names := streamTables(t, c)
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
		"COPY (SELECT * FROM edges ORDER BY id) TO STDOUT",
		"COPY (SELECT * FROM edges ORDER BY id) TO STDOUT (FORMAT csv, FORCE_QUOTE *)",
		"COPY (SELECT * FROM edges ORDER BY id) TO STDOUT (FORMAT binary)",
		"COPY (SELECT * FROM st ORDER BY id) TO STDOUT (FORMAT binary)",
		"COPY (SELECT s, bl, j FROM st WHERE id % 4 = 1 ORDER BY id) TO STDOUT WITH BINARY",
		"COPY (SELECT * FROM st WHERE id < 0) TO STDOUT (FORMAT binary)",
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

// DuckDB's COPY reaches the client as the row path's does, one CopyData
// message per row, whatever the rows' sizes against the pipe's buffer
// (256 KB) and the session's share of the buffers (a small one here,
// where runs of rows are cut by what is queued and a row larger than the
// share goes alone), and in CSV whatever newlines and quotes its quoted
// values hold: the messages are the row path's, in order, the tags agree,
// and the server's row limit counts rows (a limit of exactly the rows
// passes).
func TestCopyStreamFraming(t *testing.T) {
	// Values with newlines, quotes and backslashes, in a few lengths.
	nasty := `CASE WHEN i % 5 = 0 THEN repeat('a' || chr(10) || '"b''', CAST(i % 17 AS INTEGER)) WHEN i % 5 = 1 THEN 'x' || chr(10) || chr(10) || '\' || chr(13) WHEN i % 5 = 2 THEN '"' ELSE 'plain' END`
	for _, tc := range []struct {
		name     string
		buffered int64 // the server's MaxBufferedBytes; 0 keeps the default
		q        string
		rows     int64
	}{
		{"small share", 512 << 10, "SELECT i, repeat(chr(CAST(97 + i % 26 AS INTEGER)), CASE WHEN i % 97 = 0 THEN 20000 + i WHEN i % 13 = 0 THEN 3000 + i ELSE i % 300 END) AS s FROM range(6000) r(i) ORDER BY i", 6000},
		{"lines past the pipe's buffer", 0, "SELECT i, repeat(chr(CAST(97 + i % 26 AS INTEGER)), CASE WHEN i % 7 = 0 THEN 300000 + 1000 * i WHEN i % 5 = 0 THEN 100000 ELSE i END) AS s FROM range(60) r(i) ORDER BY i", 60},
		{"empty lines", 512 << 10, "SELECT '' AS s FROM range(70000)", 70000},
		{"newlines in values, small share", 512 << 10, "SELECT i, " + nasty + " AS s, CASE WHEN i % 211 = 0 THEN repeat('line' || chr(10), 5000) END AS big FROM range(5000) r(i) ORDER BY i", 5000},
		{"newlines in values past the pipe's buffer", 0, "SELECT i, CASE WHEN i % 3 = 0 THEN repeat('q\"' || chr(10), 120000 + i) ELSE " + nasty + " END AS s FROM range(40) r(i) ORDER BY i", 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := newConfig()
			cfg.MaxConns = 4
			cfg.MaxResultRows = tc.rows
			if tc.buffered > 0 {
				cfg.MaxBufferedBytes = tc.buffered
			}
			f := newFixture(t, cfg)
			for _, format := range []string{"", " (FORMAT csv)", ` (FORMAT csv, QUOTE '''', ESCAPE '\')`, " (FORMAT csv, FORCE_QUOTE *)"} {
				q := "COPY (" + tc.q + ") TO STDOUT" + format
				was := server.SetStreamCopies(false)
				want, wantTag := copyMessages(t, f, q)
				server.SetStreamCopies(was)
				streamed := server.StreamedCopies()
				msgs, tag := copyMessages(t, f, q)
				if server.StreamedCopies() == streamed {
					t.Fatalf("%s did not take DuckDB's COPY", q)
				}
				if tag != wantTag {
					t.Errorf("%s: tag %q, the row path's %q", q, tag, wantTag)
				}
				if len(msgs) != len(want) {
					t.Errorf("%s: %d messages, the row path's %d", q, len(msgs), len(want))
				}
				for i := range min(len(msgs), len(want)) {
					if msgs[i] != want[i] {
						t.Fatalf("%s: message %d is %d bytes %q, the row path's %d bytes %q", q, i, len(msgs[i]), clip(msgs[i], 0), len(want[i]), clip(want[i], 0))
					}
				}
			}
		})
	}
}

// copyMessages runs a COPY TO STDOUT over the raw protocol and gives its
// CopyData messages one by one, and its tag.
func copyMessages(t *testing.T, f *fixture, q string) ([]string, string) {
	t.Helper()
	conn, fe := rawLogin(t, f, "framing", 0)
	defer conn.Close()
	fe.Send(&pgproto3.Query{String: q})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(time.Minute))
	var msgs []string
	tag := ""
	for {
		msg, err := fe.Receive()
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		switch m := msg.(type) {
		case *pgproto3.CopyData:
			msgs = append(msgs, string(m.Data))
		case *pgproto3.CommandComplete:
			tag = string(m.CommandTag)
		case *pgproto3.ErrorResponse:
			t.Fatalf("%s: %s %s", q, m.Code, m.Message)
		case *pgproto3.ReadyForQuery:
			return msgs, tag
		}
	}
}

// A COPY whose query orders its rows sends them in that order, however
// many files and threads DuckDB reads them with; one whose query does
// not (DuckDB's COPY then writes as its threads finish, holding nothing
// back) sends the same rows as the row path, in some order.
func TestCopyStreamOrder(t *testing.T) {
	f := newFixture(t, newConfig())
	ctx := context.Background()
	c := f.connect(t, pgx.QueryExecModeSimpleProtocol)
	if _, err := c.Exec(ctx, "CREATE TABLE big AS SELECT i AS k, hash(i) % 1000 AS g, 'v' || i AS s FROM range(150000) r(i)"); err != nil {
		t.Fatal(err)
	}
	for n := 1; n < 4; n++ {
		if _, err := c.Exec(ctx, fmt.Sprintf("INSERT INTO big SELECT i AS k, hash(i) %% 1000 AS g, 'v' || i AS s FROM range(%d, %d) r(i)", n*150000, (n+1)*150000)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		q       string
		ordered bool
	}{
		{"SELECT * FROM big ORDER BY k DESC", true},
		{"SELECT g, k FROM big WHERE k % 3 = 0 ORDER BY g, k", true},
		{"SELECT * FROM (SELECT * FROM big ORDER BY k DESC) LIMIT 200000", true},
		{"SELECT * FROM big", false},
		{"SELECT g, count(*) FROM big GROUP BY g", false},
		{"SELECT k, s FROM big WHERE s <> 'order' AND g < 500", false},
	} {
		for _, format := range []string{"", " (FORMAT csv)"} {
			q := "COPY (" + tc.q + ") TO STDOUT" + format
			was := server.SetStreamCopies(false)
			want, wantTag, err := copyOut(t, c.PgConn(), q)
			server.SetStreamCopies(was)
			if err != nil {
				t.Fatalf("%s, the row path: %v", q, err)
			}
			streamed := server.StreamedCopies()
			got, tag, err := copyOut(t, c.PgConn(), q)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			if server.StreamedCopies() == streamed {
				t.Fatalf("%s did not take DuckDB's COPY", q)
			}
			if tag != wantTag {
				t.Errorf("%s: tag %q, the row path's %q", q, tag, wantTag)
			}
			if !tc.ordered {
				got, want = sortedLines(got), sortedLines(want)
			}
			if got != want {
				i := firstDiff(got, want)
				t.Errorf("%s: %d bytes, the row path's %d; first difference at %d: %q vs %q", q, len(got), len(want), i, clip(got, i), clip(want, i))
			}
		}
	}
}

func sortedLines(s string) string {
	l := strings.SplitAfter(s, "\n")
	slices.Sort(l)
	return strings.Join(l, "")
}

// A cursor whose query DuckDB's COPY streams (copystream.go) hands over
// what the row path's cursor does, byte for byte: over the tables of
// every type it takes, fetched in batches of changing sizes with MOVEs
// between them, in the text format, DECLARE BINARY, binary results
// asked for by the extended protocol, and WITH HOLD past COMMIT.
func TestCursorStreamMatchesRowPath(t *testing.T) {
	f := newFixture(t, newConfig())
	ctx := context.Background()
	streamTables(t, f.connect(t, pgx.QueryExecModeSimpleProtocol))
	pc := f.connect(t, pgx.QueryExecModeSimpleProtocol).PgConn()
	type mode struct {
		name, declare string
		binary, hold  bool
	}
	modes := []mode{
		{"text", "DECLARE c CURSOR FOR ", false, false},
		{"declare binary", "DECLARE c BINARY CURSOR FOR ", false, false},
		{"binary results", "DECLARE c CURSOR FOR ", true, false},
		{"with hold", "DECLARE c CURSOR WITH HOLD FOR ", false, true},
	}
	queries := []string{
		"SELECT * FROM st ORDER BY id",
		"SELECT id, s, j, bl FROM st WHERE id % 5 <> 2 ORDER BY id DESC",
		"SELECT * FROM edges ORDER BY id",
		"SELECT * FROM st WHERE id < 0 ORDER BY id",
	}
	run := func(m mode, q string) []string {
		var out []string
		exec := func(sql string) {
			var res []*pgconn.Result
			var err error
			if m.binary && strings.HasPrefix(sql, "FETCH") {
				r := pc.ExecParams(ctx, sql, nil, nil, nil, []int16{1}).Read()
				res, err = []*pgconn.Result{r}, r.Err
			} else {
				res, err = pc.Exec(ctx, sql).ReadAll()
			}
			if err != nil {
				t.Fatalf("%s, %s: %s: %v", m.name, q, sql, err)
			}
			for _, r := range res {
				out = append(out, sql+" -> "+r.CommandTag.String())
				for _, row := range r.Rows {
					var b strings.Builder
					for _, v := range row {
						if v == nil {
							b.WriteString("NULL|")
						} else {
							fmt.Fprintf(&b, "%x|", v)
						}
					}
					out = append(out, b.String())
				}
			}
		}
		exec("BEGIN")
		exec(m.declare + q)
		if m.hold {
			exec("COMMIT")
		}
		for i, n := 0, 1; i < 40; i++ {
			before := len(out)
			exec(fmt.Sprintf("FETCH %d FROM c", n))
			if i%4 == 3 {
				exec("MOVE 3 FROM c")
			}
			if len(out) == before+1 && i > 2 {
				break // no rows came
			}
			n = n*3 + 1
		}
		exec("CLOSE c")
		if !m.hold {
			exec("COMMIT")
		}
		return out
	}
	streamed := server.StreamedCursors()
	want := 0
	for _, m := range modes {
		for _, q := range queries {
			was := server.SetStreamCopies(false)
			rowPath := run(m, q)
			server.SetStreamCopies(was)
			got := run(m, q)
			want++
			if !slices.Equal(got, rowPath) {
				for i := range min(len(got), len(rowPath)) {
					if got[i] != rowPath[i] {
						t.Errorf("%s, %s: line %d of %d\n got %s\nwant %s", m.name, q, i, len(rowPath), clip(got[i], 0), clip(rowPath[i], 0))
						break
					}
				}
				if len(got) != len(rowPath) {
					t.Errorf("%s, %s: %d lines, the row path %d", m.name, q, len(got), len(rowPath))
				}
			}
		}
	}
	if n := server.StreamedCursors() - streamed; n != int64(want) {
		t.Errorf("%d of %d cursors took DuckDB's COPY", n, want)
	}
}

// A streamed cursor ends as the row path's does and leaves no pipe
// behind: a row that fails late fails the FETCH that reaches it (22P02),
// the server's row limit fails FETCH ALL (54000), and CLOSE, ROLLBACK,
// COMMIT (of a cursor without HOLD) and a client that goes away with a
// cursor open each stop DuckDB's COPY midway.
func TestCursorStreamEnds(t *testing.T) {
	cfg := newConfig()
	cfg.MaxResultRows = 50_000
	f := newFixture(t, cfg)
	ctx := context.Background()
	leftovers := func() []string {
		m, _ := filepath.Glob(filepath.Join(f.dir, "tmp", "copy-*"))
		return m
	}
	c := f.connect(t, pgx.QueryExecModeSimpleProtocol)
	exec := func(q string) error {
		_, err := c.PgConn().Exec(ctx, q).ReadAll()
		return err
	}
	streamed := server.StreamedCursors()
	must := func(q string) {
		t.Helper()
		if err := exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	must("BEGIN")
	must("DECLARE late CURSOR FOR SELECT ('' || CASE WHEN i < 30000 THEN '1' ELSE 'x' END)::INT AS v FROM range(40000) r(i)")
	must("FETCH 1000 FROM late")
	if err := exec("FETCH ALL FROM late"); sqlstate(err) != "22P02" {
		t.Errorf("a late row that does not cast: %v, want 22P02", err)
	}
	must("ROLLBACK")
	must("BEGIN")
	must("DECLARE many CURSOR FOR SELECT i, 'row ' || i AS s FROM range(200000) r(i)")
	if err := exec("FETCH ALL FROM many"); sqlstate(err) != "54000" {
		t.Errorf("past the row limit: %v, want 54000", err)
	}
	must("ROLLBACK")
	for _, end := range []string{"CLOSE c", "ROLLBACK", "COMMIT"} {
		must("BEGIN")
		must("DECLARE c CURSOR FOR SELECT i, repeat('x', 300) AS s FROM range(3000000) r(i)")
		must("FETCH 10 FROM c")
		must(end)
		if end == "CLOSE c" {
			must("COMMIT")
		}
	}
	must("DECLARE kept CURSOR WITH HOLD FOR SELECT i, repeat('x', 300) AS s FROM range(3000000) r(i)")
	must("FETCH 10 FROM kept")
	if got := firstAnswer(t, c, "SELECT count(*) FROM t"); got != "300" {
		t.Errorf("beside the open cursor: %s", got)
	}
	c.Close(ctx) // the client goes, the cursor open
	if n := server.StreamedCursors() - streamed; n != 6 {
		t.Errorf("%d cursors took DuckDB's COPY, want 6", n)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(leftovers()) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if l := leftovers(); len(l) > 0 {
		t.Errorf("pipes left behind: %v", l)
	}
}
