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
	"github.com/jackc/pgx/v5/pgproto3"

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
// message per line, whatever the lines' sizes against the pipe's buffer
// (256 KB) and the session's share of the buffers (a small one here,
// where runs of lines are cut by what is queued and a line larger than
// the share goes alone): the messages are the row path's lines, in
// order, each whole, and the tags agree.
func TestCopyStreamFraming(t *testing.T) {
	for _, tc := range []struct {
		name     string
		buffered int64 // the server's MaxBufferedBytes; 0 keeps the default
		q        string
	}{
		{"small share", 512 << 10, "SELECT i, repeat(chr(CAST(97 + i % 26 AS INTEGER)), CASE WHEN i % 97 = 0 THEN 20000 + i WHEN i % 13 = 0 THEN 3000 + i ELSE i % 300 END) AS s FROM range(6000) r(i) ORDER BY i"},
		{"lines past the pipe's buffer", 0, "SELECT i, repeat(chr(CAST(97 + i % 26 AS INTEGER)), CASE WHEN i % 7 = 0 THEN 300000 + 1000 * i WHEN i % 5 = 0 THEN 100000 ELSE i END) AS s FROM range(60) r(i) ORDER BY i"},
		{"empty lines", 512 << 10, "SELECT '' AS s FROM range(70000)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := newConfig()
			cfg.MaxConns = 4
			if tc.buffered > 0 {
				cfg.MaxBufferedBytes = tc.buffered
			}
			f := newFixture(t, cfg)
			_, pc := f.pgconn(t)
			for _, format := range []string{"", " (FORMAT csv)"} {
				q := "COPY (" + tc.q + ") TO STDOUT" + format
				was := server.SetStreamCopies(false)
				want, wantTag, err := copyOut(t, pc, q)
				server.SetStreamCopies(was)
				if err != nil {
					t.Fatalf("%s, the row path: %v", q, err)
				}
				streamed := server.StreamedCopies()
				msgs, tag := copyMessages(t, f, q)
				if server.StreamedCopies() == streamed {
					t.Fatalf("%s did not take DuckDB's COPY", q)
				}
				if tag != wantTag {
					t.Errorf("%s: tag %q, the row path's %q", q, tag, wantTag)
				}
				lines := strings.SplitAfter(want, "\n")
				lines = lines[:len(lines)-1] // after the last newline
				if len(msgs) != len(lines) {
					t.Errorf("%s: %d messages for %d lines", q, len(msgs), len(lines))
				}
				for i := range min(len(msgs), len(lines)) {
					if msgs[i] != lines[i] {
						t.Fatalf("%s: message %d is %d bytes %q, the row path's line %d bytes %q", q, i, len(msgs[i]), clip(msgs[i], 0), len(lines[i]), clip(lines[i], 0))
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
