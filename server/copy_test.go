package server_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgtype"
)

// staged lists what COPY FROM STDIN left in the server's temporary
// directory.
func (f *fixture) staged(t *testing.T) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(f.cfg.Sandbox.TempDir, "rocklake-copy-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// noStaged waits for the staged files to go (a session that lost its
// client cleans up as its COPY ends).
func (f *fixture) noStaged(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(f.staged(t)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("staged COPY data left behind: %v", f.staged(t))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

const copyTable = "CREATE TABLE w (id BIGINT NOT NULL, name VARCHAR, v DOUBLE, raw BLOB)"

// COPY FROM STDIN in text and CSV formats, the data cut into CopyData
// messages of a byte or a few, then read back: escapes, tabs and newlines
// inside values, NULLs and empty strings, bytea.
func TestCopyFromStdin(t *testing.T) {
	f := newFixture(t, newConfig())
	ctx := context.Background()
	c := f.connect(t, pgx.QueryExecModeSimpleProtocol)
	if _, err := c.Exec(ctx, copyTable); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		q, data, tag string
		oneByte      bool
	}{
		{"COPY w FROM STDIN", "1\ttab\\there\t1.5\t\\\\x6869\n2\tnew\\nline\\\\back\t\\N\t\\N\n3\t\t-0\t\\N\n", "COPY 3", true},
		{"COPY w (id, name) FROM STDIN (DELIMITER '|', NULL 'NULL')", "4|NULL\n5|\\101\\x42\n", "COPY 2", false},
		{"COPY w FROM STDIN (FORMAT csv, HEADER)", "id,name,v,raw\n6,\"comma, quote \"\" and\nnewline\",2.5,\\x00ff\n7,,,\n8,\"\",NaN,\n", "COPY 3", true},
		{"COPY w (name, id) FROM STDIN WITH CSV DELIMITER ';' QUOTE '''' FORCE NOT NULL name", "'it''s';9\n;10\n", "COPY 2", false},
		{"COPY w FROM STDIN", "", "COPY 0", false},
	} {
		var src io.Reader = strings.NewReader(tc.data)
		if tc.oneByte {
			src = iotest.OneByteReader(src)
		}
		tag, err := c.PgConn().CopyFrom(ctx, src, tc.q)
		if err != nil || tag.String() != tc.tag {
			t.Fatalf("%s: %q %v, want %s", tc.q, tag, err, tc.tag)
		}
	}
	got := firstAnswer(t, c, "SELECT id, coalesce(name, 'NULL'), coalesce(v::VARCHAR, 'NULL'), coalesce(hex(raw), 'NULL') FROM w ORDER BY id")
	want := strings.Join([]string{
		"1|tab\there|1.5|6869",
		"2|new\nline\\back|NULL|NULL",
		"3||-0.0|NULL",
		"4|NULL|NULL|NULL",
		"5|AB|NULL|NULL",
		"6|comma, quote \" and\nnewline|2.5|00FF",
		"7|NULL|NULL|NULL",
		"8||nan|NULL",
		"9|it's|NULL|NULL",
		"10||NULL|NULL",
	}, "\n")
	if got != want {
		t.Errorf("rows:\n%s\nwant\n%s", got, want)
	}
	// A row longer than DuckDB's default line limit (2 MB).
	big := strings.Repeat("x", 3<<20)
	if _, err := c.PgConn().CopyFrom(ctx, strings.NewReader("11\t"+big+"\t\\N\t\\N\n"), "COPY w FROM STDIN"); err != nil {
		t.Fatalf("a 3 MiB value: %v", err)
	}
	if got := firstAnswer(t, c, "SELECT length(name) FROM w WHERE id = 11"); got != itoa(len(big)) {
		t.Errorf("the 3 MiB value came back %s long", got)
	}
	f.noStaged(t)
}

// pgx's CopyFrom sends PostgreSQL's binary format, each value in the
// binary form of the type the server describes its column as.
func TestCopyFromBinary(t *testing.T) {
	f := newFixture(t, newConfig())
	ctx := context.Background()
	c := f.connect(t, pgx.QueryExecModeCacheStatement)
	if _, err := c.Exec(ctx, "CREATE TABLE ty (i2 SMALLINT, i4 INTEGER, i8 BIGINT NOT NULL, f4 REAL, f8 DOUBLE, b BOOLEAN, d DATE, ts TIMESTAMP, tz TIMESTAMPTZ, n DECIMAL(10,2), u UUID, bl BLOB, iv INTERVAL, s VARCHAR, j JSON, l BIGINT[])"); err != nil {
		t.Fatal(err)
	}
	cols := []string{"i2", "i4", "i8", "f4", "f8", "b", "d", "ts", "tz", "n", "u", "bl", "iv", "s", "j", "l"}
	var num pgtype.Numeric
	num.Scan("-12.34")
	rows := [][]any{
		{int16(-2), int32(2), int64(1), float32(1.5), -2.5, true, time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC),
			time.Date(2024, 1, 2, 3, 4, 5, 6000, time.UTC), time.Date(2024, 1, 2, 3, 4, 5, 0, time.FixedZone("+01", 3600)), num,
			[16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, []byte{0, 1, '\\', '"', ',', '\n', 255}, 36*time.Hour + 90*time.Minute,
			"tab\tquote\" comma, newline\n", map[string]any{"k": []any{1, "x"}}, "[1, 2]"},
		{nil, nil, int64(2), nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil},
	}
	for i := 3; i <= 2000; i++ {
		rows = append(rows, []any{nil, int32(i), int64(i), nil, float64(i) / 4, i%2 == 0, nil, nil, nil, nil, nil, nil, nil, "r" + itoa(i), nil, nil})
	}
	n, err := c.CopyFrom(ctx, pgx.Identifier{"ty"}, cols, pgx.CopyFromRows(rows))
	if err != nil || n != int64(len(rows)) {
		t.Fatalf("CopyFrom: %d %v", n, err)
	}
	got := firstAnswer(t, c, "SELECT i2, i4, f4, f8, b, d::VARCHAR, ts::VARCHAR, tz::VARCHAR, n::VARCHAR, u::VARCHAR, hex(bl), iv::VARCHAR, s, j::VARCHAR, l::VARCHAR FROM ty WHERE i8 = 1")
	want := "-2|2|1.5|-2.5|true|2024-01-02|2024-01-02 03:04:05.000006|2024-01-02 02:04:05+00|-12.34|01020304-0506-0708-090a-0b0c0d0e0f10|00015C222C0AFF|37:30:00|tab\tquote\" comma, newline\n|{\"k\":[1,\"x\"]}|[1, 2]"
	if got != want {
		t.Errorf("typed row:\n got %s\nwant %s", got, want)
	}
	if got := firstAnswer(t, c, "SELECT count(*), count(i2), sum(i8)::BIGINT, sum(f8), count(*) FILTER (b) FROM ty"); got != "2000|1|2001000|500246.75|1000" {
		t.Errorf("all rows: %s", got)
	}
	// NOT NULL holds for binary rows too; nothing of the COPY is kept.
	before := f.latest(t)
	_, err = c.CopyFrom(ctx, pgx.Identifier{"ty"}, []string{"i4", "i8"}, pgx.CopyFromRows([][]any{{int32(1), int64(5)}, {int32(2), nil}}))
	if sqlstate(err) != "23502" {
		t.Errorf("a NULL for a NOT NULL column: %v", err)
	}
	if f.latest(t) != before {
		t.Error("the failed COPY committed")
	}
	f.noStaged(t)
}

// What a client sends wrong: the error names the line (DuckDB's errors
// too, as the line of the client's data), commits nothing and leaves no
// staged file; the connection goes on.
func TestCopyBadInput(t *testing.T) {
	f := newFixture(t, newConfig())
	ctx := context.Background()
	c := f.connect(t, pgx.QueryExecModeSimpleProtocol)
	if _, err := c.Exec(ctx, copyTable); err != nil {
		t.Fatal(err)
	}
	before := f.latest(t)
	for _, tc := range []struct{ q, data, code, says string }{
		{"COPY w FROM STDIN CSV", "1,a,1,\n2,\"b,2,\n3,c,3,\n", "22P04", "COPY w, line 2: unterminated CSV quoted field"},
		{"COPY w FROM STDIN CSV HEADER", "id,name,v,raw\n1,\"two\nlines\",1,\nthree,c,3,\n", "22P02", `COPY w, line 4: Error when converting column "id". Could not convert string "three"`},
		{"COPY w FROM STDIN", "1\ta\t1\t\\N\n2\tb\tnot a number\t\\N\n", "22P02", `COPY w, line 2: Error when converting column "v"`},
		{"COPY w FROM STDIN", "1\ta\t1\n", "22P04", `COPY w, line 1: missing data for column "raw"`},
		{"COPY w FROM STDIN", "1\ta\t1\t\\N\textra\n", "22P04", "COPY w, line 1: extra data after last expected column"},
		{"COPY w FROM STDIN", "\\N\ta\t1\t\\N\n", "23502", "NOT NULL constraint failed: w.id"},
		{"COPY w FROM STDIN", "1\t\\xff\t1\t\\N\n", "22021", "invalid byte sequence"},
		{"COPY w FROM STDIN", "1\ta\t1\t\\\\xnothex\n", "22P02", "hexadecimal"},
		{"COPY w FROM STDIN (FORMAT binary)", "not the binary signature", "22P04", "signature"},
	} {
		_, err := c.PgConn().CopyFrom(ctx, strings.NewReader(tc.data), tc.q)
		if code := sqlstate(err); code != tc.code || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s over %q: %v (SQLSTATE %s), want %s saying %q", tc.q, tc.data, err, code, tc.code, tc.says)
		}
		if err != nil && (strings.Contains(err.Error(), "rocklake-copy-") || strings.Contains(err.Error(), "AUTO_DETECT")) {
			t.Errorf("the error speaks of the staged file: %v", err)
		}
		f.noStaged(t)
	}
	// The client gives up: CopyFail.
	_, err := c.PgConn().CopyFrom(ctx, iotest.ErrReader(errors.New("the source broke")), "COPY w FROM STDIN")
	if sqlstate(err) != "57014" || !strings.Contains(err.Error(), "the source broke") {
		t.Errorf("CopyFail: %v", err)
	}
	if f.latest(t) != before {
		t.Error("a failed COPY committed")
	}
	if got := firstAnswer(t, c, "SELECT count(*) FROM w"); got != "0" {
		t.Errorf("after the failed COPYs: %s rows", got)
	}
	f.noStaged(t)
}

// A client may send a COPY only so much: past the limit it gets 54000
// and its data is gone; its connection goes on.
func TestCopyLimit(t *testing.T) {
	cfg := newConfig()
	cfg.MaxCopyBytes = 10_000
	f := newFixture(t, cfg)
	ctx := context.Background()
	c := f.connect(t, pgx.QueryExecModeSimpleProtocol)
	if _, err := c.Exec(ctx, copyTable); err != nil {
		t.Fatal(err)
	}
	before := f.latest(t)
	line := "1\tabcdefghijklmnopqrstuvwxyz\t1\t\\N\n"
	data := strings.Repeat(line, 5000)
	_, err := c.PgConn().CopyFrom(ctx, strings.NewReader(data), "COPY w FROM STDIN")
	if sqlstate(err) != "54000" || !strings.Contains(err.Error(), "limit of 10000 bytes") {
		t.Errorf("over the limit: %v", err)
	}
	f.noStaged(t)
	if f.latest(t) != before {
		t.Error("the COPY over the limit committed")
	}
	if tag, err := c.PgConn().CopyFrom(ctx, strings.NewReader(strings.Repeat(line, 250)), "COPY w FROM STDIN"); err != nil || tag.String() != "COPY 250" {
		t.Errorf("under the limit: %q %v", tag, err)
	}
	if got := firstAnswer(t, c, "SELECT count(*) > 0 FROM w"); got != "true" {
		t.Errorf("after: %s", got)
	}
}

// A client that goes away in the middle of its COPY leaves nothing: no
// snapshot, no staged file. One that stalls is ended by the statement
// timeout. The server goes on serving.
func TestCopyClientGoesAway(t *testing.T) {
	cfg := newConfig()
	cfg.StatementTimeout = 2 * time.Second
	f := newFixture(t, cfg)
	ctx := context.Background()
	c := f.connect(t, pgx.QueryExecModeSimpleProtocol)
	if _, err := c.Exec(ctx, copyTable); err != nil {
		t.Fatal(err)
	}
	before := f.latest(t)
	start := func() (net.Conn, *pgproto3.Frontend) {
		conn, fe := rawLogin(t, f, "raw", 0)
		fe.Send(&pgproto3.Query{String: "COPY w FROM STDIN"})
		if err := fe.Flush(); err != nil {
			t.Fatal(err)
		}
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		msg, err := fe.Receive()
		if _, ok := msg.(*pgproto3.CopyInResponse); !ok || err != nil {
			t.Fatalf("want CopyInResponse, got %T %v", msg, err)
		}
		fe.Send(&pgproto3.CopyData{Data: []byte("1\tpart\t1\t\\N\n2\tof a ro")})
		if err := fe.Flush(); err != nil {
			t.Fatal(err)
		}
		return conn, fe
	}
	conn, _ := start()
	deadline := time.Now().Add(10 * time.Second)
	for len(f.staged(t)) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond) // the data is being staged
	}
	conn.Close()
	f.noStaged(t)

	// Stalled: the statement timeout ends the COPY with 57014.
	conn, fe := start()
	conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	var got *pgproto3.ErrorResponse
	for got == nil {
		msg, err := fe.Receive()
		if err != nil {
			t.Fatalf("waiting for the timeout: %v", err)
		}
		got, _ = msg.(*pgproto3.ErrorResponse)
	}
	if got.Code != "57014" {
		t.Errorf("stalled COPY: %s %s", got.Code, got.Message)
	}
	// What it still sends of the COPY is dropped; the session serves on.
	fe.Send(&pgproto3.CopyData{Data: []byte("w\t1\t\\N\n")})
	fe.Send(&pgproto3.CopyDone{})
	fe.Send(&pgproto3.Query{String: "SELECT 42"})
	fe.Flush()
	var sawRow bool
	for {
		msg, err := fe.Receive()
		if err != nil {
			t.Fatalf("after the timeout: %v", err)
		}
		if e, ok := msg.(*pgproto3.ErrorResponse); ok {
			t.Fatalf("after the timeout: %s %s", e.Code, e.Message)
		}
		if d, ok := msg.(*pgproto3.DataRow); ok && string(d.Values[0]) == "42" {
			sawRow = true
		}
		if _, ok := msg.(*pgproto3.CommandComplete); ok && sawRow {
			break
		}
	}
	f.noStaged(t)
	if f.latest(t) != before {
		t.Error("a COPY whose client went away committed")
	}
	if got := firstAnswer(t, c, "SELECT count(*) FROM w"); got != "0" {
		t.Errorf("rows: %s", got)
	}
}

// COPY FROM STDIN through the extended protocol: Describe says NoData,
// Execute starts the copy, the Sync after CopyDone ends it.
func TestCopyExtendedProtocol(t *testing.T) {
	f := newFixture(t, newConfig())
	c := f.connect(t, pgx.QueryExecModeSimpleProtocol)
	if _, err := c.Exec(context.Background(), copyTable); err != nil {
		t.Fatal(err)
	}
	conn, fe := rawLogin(t, f, "raw", 0)
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	fe.Send(&pgproto3.Parse{Query: "COPY w (id, name) FROM STDIN (FORMAT csv)"})
	fe.Send(&pgproto3.Bind{})
	fe.Send(&pgproto3.Describe{ObjectType: 'P'})
	fe.Send(&pgproto3.Execute{})
	fe.Send(&pgproto3.Flush{})
	fe.Flush()
	var types []string
	for {
		msg, err := fe.Receive()
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, strings.TrimPrefix(fmt.Sprintf("%T", msg), "*pgproto3."))
		if _, ok := msg.(*pgproto3.CopyInResponse); ok {
			break
		}
		if e, ok := msg.(*pgproto3.ErrorResponse); ok {
			t.Fatalf("%s %s", e.Code, e.Message)
		}
	}
	if strings.Join(types, " ") != "ParseComplete BindComplete NoData CopyInResponse" {
		t.Errorf("messages: %v", types)
	}
	fe.Send(&pgproto3.CopyData{Data: []byte("1,one\n2,two\n")})
	fe.Send(&pgproto3.CopyDone{})
	fe.Send(&pgproto3.Sync{})
	fe.Flush()
	var tag string
	for {
		msg, err := fe.Receive()
		if err != nil {
			t.Fatal(err)
		}
		if cc, ok := msg.(*pgproto3.CommandComplete); ok {
			tag = string(cc.CommandTag)
		}
		if e, ok := msg.(*pgproto3.ErrorResponse); ok {
			t.Fatalf("%s %s", e.Code, e.Message)
		}
		if _, ok := msg.(*pgproto3.ReadyForQuery); ok {
			break
		}
	}
	if tag != "COPY 2" {
		t.Errorf("tag %q", tag)
	}
	if got := firstAnswer(t, c, "SELECT string_agg(name, ',' ORDER BY id) FROM w"); got != "one,two" {
		t.Errorf("rows: %s", got)
	}
}

// psql, the reference client: INSERT, \copy from a client-side file in
// CSV and text, COPY FROM STDIN with the data piped in.
func TestPsqlWrites(t *testing.T) {
	psql := psqlPath(t)
	f := newFixture(t, newConfig())
	run := func(stdin string, args ...string) (string, error) {
		cmd := exec.Command(psql, append([]string{"-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", f.pgURL("me", "", "disable")}, args...)...)
		cmd.Env = append(cmd.Environ(), "PGCONNECT_TIMEOUT=10")
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("", "-c", "CREATE TABLE p (id BIGINT, name VARCHAR, note VARCHAR)", "-c", "INSERT INTO p VALUES (1, 'one', NULL), (2, 'two', 'x')")
	if err != nil || out != "CREATE TABLE\nINSERT 0 2\n" {
		t.Fatalf("INSERT: %q %v", out, err)
	}
	// The client's files, outside anything the server may read.
	dir := t.TempDir()
	csv := filepath.Join(dir, "in.csv")
	os.WriteFile(csv, []byte("id,name,note\n3,\"three, with a comma\",\n4,four,\"multi\nline\"\n"), 0o644)
	text := filepath.Join(dir, "in.txt")
	os.WriteFile(text, []byte("5\tfive\t\\N\n6\tsix\\ttab\tback\\\\slash\n"), 0o644)
	out, err = run("", "-c", `\copy p FROM '`+csv+`' CSV HEADER`, "-c", `\copy p FROM `+text, "-c", `\copy p (id, name) FROM '`+csv+`' WITH (FORMAT csv, HEADER true) `)
	if err == nil || !strings.Contains(out, "COPY 2\nCOPY 2\n") || !strings.Contains(out, "extra data after last expected column") {
		t.Errorf(`\copy: %q %v`, out, err)
	}
	out, err = run("COPY p FROM STDIN;\n7\tseven\t\\N\n8\teight\tlast\n\\.\nSELECT count(*) FROM p;\n")
	if err != nil || out != "COPY 2\n8\n" {
		t.Errorf("COPY FROM STDIN piped: %q %v", out, err)
	}
	out, err = run("", "-c", "SELECT id || ':' || name || ':' || coalesce(note, '-') FROM p ORDER BY id")
	want := "1:one:-\n2:two:x\n3:three, with a comma:-\n4:four:multi\nline\n5:five:-\n6:six\ttab:back\\slash\n7:seven:-\n8:eight:last\n"
	if err != nil || out != want {
		t.Errorf("rows:\n%s\nwant\n%s(%v)", out, want, err)
	}
	f.noStaged(t)
}
