package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/rocklake/rocklake"
	"github.com/rocklake/rocklake/server"
)

// latest is the lake's newest snapshot id.
func (f *fixture) latest(t *testing.T) int64 {
	t.Helper()
	snaps, err := f.lake.Snapshots(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return snaps[len(snaps)-1].ID
}

// answer is a query's rows as text, one row a line, values joined by |.
func firstAnswer(t *testing.T, c *pgx.Conn, q string, args ...any) string {
	t.Helper()
	rows, err := c.Query(context.Background(), q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		var parts []string
		for _, v := range vals {
			if v == nil {
				parts = append(parts, "NULL")
			} else {
				parts = append(parts, fmt.Sprint(v))
			}
		}
		lines = append(lines, strings.Join(parts, "|"))
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return strings.Join(lines, "\n")
}

// Writes over both protocols, with PostgreSQL's command tags, each seen
// by the next query; the extended protocol with parameters typed from the
// table's columns; Describe of a write runs nothing.
func TestWritesOverPostgresProtocol(t *testing.T) {
	f := newFixture(t, newConfig())
	ctx := context.Background()
	simple := f.connect(t, pgx.QueryExecModeSimpleProtocol)
	ext := f.connect(t, pgx.QueryExecModeCacheStatement)
	exec := func(c *pgx.Conn, want, q string, args ...any) {
		t.Helper()
		tag, err := c.Exec(ctx, q, args...)
		if err != nil || tag.String() != want {
			t.Fatalf("%s: %q %v, want %q", q, tag, err, want)
		}
	}
	exec(simple, "CREATE TABLE", "CREATE TABLE w (id BIGINT NOT NULL, name VARCHAR, v DOUBLE, day DATE)")
	exec(simple, "INSERT 0 2", "INSERT INTO w VALUES (1, 'a', 1.5, DATE '2024-01-01'), (2, NULL, NULL, NULL)")
	if got := firstAnswer(t, simple, "SELECT count(*), count(name) FROM w"); got != "2|1" {
		t.Errorf("after the insert: %s", got)
	}
	// pgx sends an int only for a parameter typed as an integer: the
	// VALUES' columns type them.
	exec(ext, "INSERT 0 1", "INSERT INTO w VALUES ($1, $2, $3, $4)", int64(3), "c", 2.25, time.Date(2024, 2, 1, 0, 0, 0, 0, time.UTC))
	exec(ext, "INSERT 0 2", `INSERT INTO w (name, "id") VALUES ($1, $2), ($3, $4)`, "d", 4, "e'; DROP TABLE w; --", 5)
	exec(ext, "INSERT 0 1", "INSERT INTO w SELECT $1::BIGINT + 100, $2, NULL, NULL", 1, "from a query")
	if got := firstAnswer(t, ext, "SELECT id, name, v, day FROM w WHERE id >= $1 ORDER BY id", 3); got != "3|c|2.25|2024-02-01 00:00:00 +0000 UTC\n4|d|NULL|NULL\n5|e'; DROP TABLE w; --|NULL|NULL\n101|from a query|NULL|NULL" {
		t.Errorf("after the extended inserts:\n%s", got)
	}
	exec(ext, "SELECT 3", "CREATE TABLE w2 AS SELECT id, name FROM w WHERE id BETWEEN $1 AND $2", 2, 4)
	if got := firstAnswer(t, simple, "SELECT string_agg(id::VARCHAR, ',' ORDER BY id) FROM w2"); got != "2,3,4" {
		t.Errorf("w2: %s", got)
	}
	csv := filepath.Join(f.data, "more.csv")
	os.WriteFile(csv, []byte("id,name,v,day\n10,x,0.5,2024-03-01\n11,,,\n"), 0o644)
	exec(simple, "COPY 2", "COPY w FROM '"+csv+"' (FORMAT csv, HEADER)")
	if got := firstAnswer(t, simple, "SELECT count(*) FROM w WHERE id BETWEEN 10 AND 11"); got != "2" {
		t.Errorf("after the COPY: %s", got)
	}
	exec(simple, "INSERT 0 0", "INSERT INTO w SELECT * FROM w WHERE id < 0")

	// IF NOT EXISTS of a table that exists: a notice, no snapshot.
	before := f.latest(t)
	var notices []string
	cfg, _ := pgx.ParseConfig(f.pgURL("tester", "", "disable"))
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { notices = append(notices, n.Code+" "+n.Message) }
	nc, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close(ctx)
	exec(nc, "CREATE TABLE", "CREATE TABLE IF NOT EXISTS w (x INT)")
	exec(nc, "CREATE TABLE AS", "CREATE TABLE IF NOT EXISTS w AS SELECT 1 AS x")
	if len(notices) != 2 || !strings.HasPrefix(notices[0], "42P07 ") {
		t.Errorf("notices: %q", notices)
	}
	if f.latest(t) != before {
		t.Error("IF NOT EXISTS of an existing table made a snapshot")
	}

	// Describe of a prepared write: no rows, parameter types from the
	// table, nothing run (pgconn's ExecParams describes the portal before
	// it executes it: the row goes in once).
	pc := ext.PgConn()
	sd, err := pc.Prepare(ctx, "ins", "INSERT INTO w (id, name) VALUES ($1, $2)", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(sd.Fields) != 0 || len(sd.ParamOIDs) != 2 || sd.ParamOIDs[0] != 20 || sd.ParamOIDs[1] != 25 {
		t.Errorf("described: fields %v, parameters %v", sd.Fields, sd.ParamOIDs)
	}
	if f.latest(t) != before {
		t.Error("describing a write wrote")
	}
	rr := pc.ExecParams(ctx, "INSERT INTO w (id, name) VALUES ($1, $2)", [][]byte{[]byte("200"), []byte("described")}, []uint32{20, 25}, nil, nil).Read()
	if rr.Err != nil || rr.CommandTag.String() != "INSERT 0 1" {
		t.Fatalf("ExecParams: %v %q", rr.Err, rr.CommandTag)
	}
	if got := firstAnswer(t, simple, "SELECT count(*) FROM w WHERE id = 200"); got != "1" {
		t.Errorf("the described insert went in %s times", got)
	}
	if got := firstAnswer(t, simple, "SELECT count(*) FROM t"); got != "300" {
		t.Errorf("t: %s", got)
	}
}

// Each failed write says why with PostgreSQL's SQLSTATE, commits
// nothing, and leaves the connection usable.
func TestWriteErrors(t *testing.T) {
	f := newFixture(t, newConfig())
	ctx := context.Background()
	c := f.connect(t, pgx.QueryExecModeSimpleProtocol)
	for _, q := range []string{
		"CREATE TABLE w (id BIGINT NOT NULL, name VARCHAR, small SMALLINT)",
		"INSERT INTO w VALUES (1, 'a', 1)",
	} {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	before := f.latest(t)
	outside := filepath.Join(f.dir, "outside.csv")
	os.WriteFile(outside, []byte("id\n1\n"), 0o644)
	badCSV := filepath.Join(f.data, "bad.csv")
	os.WriteFile(badCSV, []byte("id,name,small\n2,b,2\n3,\"c,3\n"), 0o644)
	badValue := filepath.Join(f.data, "badvalue.csv")
	os.WriteFile(badValue, []byte("id,name,small\n2,b,2\nthree,c,3\n"), 0o644)
	for _, tc := range []struct{ q, code, says string }{
		{"CREATE TABLE w (x INT)", "42P07", `"w"`},
		{"CREATE TABLE t AS SELECT 1 AS x", "42P07", `"t"`},
		{"INSERT INTO nosuch VALUES (1)", "42P01", "nosuch"},
		{"COPY nosuch FROM STDIN", "42P01", "nosuch"},
		{"INSERT INTO w (name) VALUES ('no id')", "23502", "w.id"},
		{"INSERT INTO w VALUES ('one', 'a', 1)", "22P02", "one"},
		{"INSERT INTO w VALUES (1, 'a', 99999999999)", "22003", "out of range"},
		{"INSERT INTO w VALUES (", "42601", "syntax error"},
		{"INSERT INTO w VALUES (1, 'a', 1) RETURNING id", "0A000", "RETURNING"},
		{"INSERT OR REPLACE INTO w VALUES (1, 'a', 1)", "0A000", "OR REPLACE"},
		{"CREATE TEMP TABLE x (a INT)", "0A000", "TEMP"},
		{"UPDATE w SET id = NULL", "23502", "w.id"},
		{"UPDATE w SET small = 'abc' WHERE id = 1", "22P02", "abc"},
		{"UPDATE w SET small = 99999999999", "22003", "out of range"},
		{"UPDATE w SET name = nope", "42703", "nope"},
		{"DELETE FROM w WHERE nope = 1", "42703", "nope"},
		{"DELETE FROM nosuch", "42P01", "nosuch"},
		{"UPDATE nosuch SET a = 1", "42P01", "nosuch"},
		{"DELETE FROM w WHERE", "42601", "syntax error"},
		{"DELETE FROM w RETURNING id", "0A000", "RETURNING"},
		{"UPDATE w SET name = 'b' RETURNING id", "0A000", "RETURNING"},
		{"UPDATE w SET (id, name) = (2, 'b')", "0A000", "("},
		{"MERGE INTO w USING w AS s ON w.id = s.id WHEN MATCHED THEN UPDATE SET *", "0A000", "MERGE"},
		{"MERGE INTO w USING w AS s ON w.id = s.id WHEN MATCHED THEN UPDATE SET nope = 1", "42703", "nope"},
		{"INSERT INTO w (nope) VALUES (1)", "42703", "nope"},
		{"COPY w FROM '" + outside + "'", "42501", "outside"},
		{"COPY w FROM '" + filepath.Join(f.data, "missing.csv") + "'", "58P01", "missing.csv"},
		{"COPY w FROM '" + badCSV + "' (FORMAT csv, HEADER, DELIMITER ',', QUOTE '\"', AUTO_DETECT false)", "22P04", "Line: 3"},
		{"COPY w FROM '" + badCSV + "' (FORMAT csv, HEADER, QUOTE '\"')", "22P04", "sniffing"},
		{"COPY w FROM '" + badValue + "' (FORMAT csv, HEADER)", "22P02", "Line: 3"},
		{"COPY w FROM STDIN (FORMAT xml)", "22023", "xml"},
		{"COPY w FROM STDIN (BOGUS 1)", "42601", "bogus"},
		{"COPY w FROM STDIN (FORMAT csv, FORMAT text)", "42601", "redundant"},
		{"COPY w FROM STDIN (DELIMITER ',,')", "0A000", "one-byte"},
		{"COPY w FROM STDIN (QUOTE '''')", "0A000", "CSV mode"},
		{"COPY w FROM STDIN (FORMAT binary, HEADER)", "0A000", "BINARY"},
		{"COPY w FROM STDIN (FORMAT csv, FORCE_NOT_NULL (nope))", "42P10", "nope"},
		{"COPY w FROM STDIN WHERE id > 1", "0A000", "WHERE"},
		{"COPY w (id, id) FROM STDIN", "42701", "id"},
		{"COPY w (nope) FROM STDIN", "42703", "nope"},
	} {
		_, err := c.Exec(ctx, tc.q)
		if code := sqlstate(err); code != tc.code || !strings.Contains(err.Error(), tc.says) || strings.Contains(err.Error(), "__rocklake") {
			t.Errorf("%s: %v (SQLSTATE %s), want %s saying %q", tc.q, err, code, tc.code, tc.says)
		}
	}
	// Errors maintain/change.go makes itself, with their sentinels.
	for _, tc := range []struct{ q, code, says string }{
		{"UPDATE w SET nope = 1", "42703", `"nope"`},
		{"UPDATE w SET name = v.x FROM (VALUES (1, 'p'), (1, 'q')) v(i, x) WHERE w.id = v.i", "21000", "more than one row"},
	} {
		_, err := c.Exec(ctx, tc.q)
		if code := sqlstate(err); code != tc.code || !strings.Contains(err.Error(), tc.says) || strings.Contains(err.Error(), "__rocklake") {
			t.Errorf("%s: %v (SQLSTATE %s), want %s saying %q", tc.q, err, code, tc.code, tc.says)
		}
	}
	if f.latest(t) != before {
		t.Error("a failed write made a snapshot")
	}
	if got := firstAnswer(t, c, "SELECT count(*) FROM w"); got != "1" {
		t.Errorf("after the failures: %s rows", got)
	}
}

// Inside BEGIN ... COMMIT the block's writes are one snapshot at COMMIT,
// none at ROLLBACK, none when a statement failed the block or the client
// went away; CREATE TABLE is refused inside one; outside one each write
// commits on its own.
func TestWriteInTransactionBlock(t *testing.T) {
	f := newFixture(t, newConfig())
	ctx := context.Background()
	c := f.connect(t, pgx.QueryExecModeSimpleProtocol)
	if _, err := c.Exec(ctx, "CREATE TABLE w (id BIGINT NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	before := f.latest(t)
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"INSERT INTO w VALUES (1)", "INSERT INTO w SELECT * FROM range(10, 13)"} {
		if _, err := tx.Exec(ctx, q); err != nil {
			t.Fatalf("%s in a block: %v", q, err)
		}
	}
	other := f.connect(t, pgx.QueryExecModeSimpleProtocol)
	if got := firstAnswer(t, other, "SELECT count(*) FROM w"); got != "0" {
		t.Errorf("another session sees %s rows of an open block", got)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := f.latest(t); got != before+1 {
		t.Errorf("a block of two writes made %d snapshots", got-before)
	}
	if got := firstAnswer(t, other, "SELECT count(*) || '/' || sum(id) FROM w"); got != "4/34" {
		t.Errorf("after COMMIT: %s", got)
	}
	before = f.latest(t)

	// ROLLBACK, a failed statement, CREATE TABLE in a block: nothing.
	tx, _ = c.Begin(ctx)
	if _, err := tx.Exec(ctx, "INSERT INTO w VALUES (5)"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	tx, _ = c.Begin(ctx)
	if _, err := tx.Exec(ctx, "INSERT INTO w VALUES (6)"); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO w VALUES (NULL)"); sqlstate(err) != "23502" {
		t.Errorf("a NOT NULL violation in a block: %v", err)
	}
	if err := tx.Commit(ctx); err == nil || !strings.Contains(err.Error(), "rollback") {
		t.Errorf("COMMIT of the failed block: %v", err)
	}
	tx, _ = c.Begin(ctx)
	if _, err := tx.Exec(ctx, "CREATE TABLE x (a INTEGER)"); sqlstate(err) != "0A000" {
		t.Errorf("CREATE TABLE in a block: %v", err)
	}
	tx.Rollback(ctx)
	gone := f.connect(t, pgx.QueryExecModeSimpleProtocol)
	if _, err := gone.Exec(ctx, "BEGIN; INSERT INTO w VALUES (7)"); err != nil {
		t.Fatal(err)
	}
	gone.Close(ctx)
	if f.latest(t) != before {
		t.Error("a rolled back, failed or abandoned block committed")
	}
	psql := exec.Command(psqlPath(t), "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", f.pgURL("me", "", "disable"))
	psql.Stdin = strings.NewReader("BEGIN;\nCOPY w FROM STDIN;\n100\n101\n\\.\nINSERT INTO w VALUES (102);\nCOMMIT;\n")
	if out, err := psql.CombinedOutput(); err != nil {
		t.Fatalf("COPY and INSERT in a block through psql: %q %v", out, err)
	}
	if got := f.latest(t); got != before+1 {
		t.Errorf("psql's block made %d snapshots", got-before)
	}
	if got := firstAnswer(t, other, "SELECT count(*) FROM w WHERE id >= 100"); got != "3" {
		t.Errorf("psql's block: %s rows", got)
	}
	before = f.latest(t)
	for range 2 {
		if _, err := c.Exec(ctx, "INSERT INTO w VALUES (1); INSERT INTO w VALUES (2)"); err != nil {
			t.Fatal(err)
		}
	}
	// Four snapshots, and one more when the small files the writes made
	// filled a tier and were merged.
	if got := f.latest(t); got != before+4 && got != before+5 {
		t.Errorf("four writes outside a block made %d snapshots", got-before)
	}
	if got := firstAnswer(t, other, "SELECT count(*) FROM w WHERE id IN (1, 2)"); got != "5" {
		t.Errorf("after four writes: %s rows of 1 and 2", got)
	}
}

// A reader may not write (42501, before any data is asked for) and its
// session says it is read-only; a writer's says it is not, until it sets
// itself read-only.
func TestWriteRoles(t *testing.T) {
	path, readerToken, writerToken := authFile(t)
	auth, err := server.LoadAuth(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := newConfig()
	cfg.Auth = auth
	f := newFixture(t, cfg)
	ctx := context.Background()
	reader, err := pgx.Connect(ctx, f.pgURL("alice", alicePassword, "disable"))
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close(ctx)
	writer, err := pgx.Connect(ctx, f.pgURL("bob", bobPassword, "disable"))
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close(ctx)
	show := func(c *pgx.Conn, name string) string {
		var v string
		if err := c.QueryRow(ctx, "SHOW "+name).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, name := range []string{"transaction_read_only", "default_transaction_read_only"} {
		if v := show(reader, name); v != "on" {
			t.Errorf("reader: %s = %s", name, v)
		}
		if v := show(writer, name); v != "off" {
			t.Errorf("writer: %s = %s", name, v)
		}
	}
	if _, err := reader.Exec(ctx, "SET default_transaction_read_only = off"); sqlstate(err) != "25006" {
		t.Errorf("a reader turning read-only off: %v", err)
	}
	before := f.latest(t)
	for _, q := range []string{"INSERT INTO t (id) VALUES (1)", "CREATE TABLE r AS SELECT 1 AS x", "COPY t FROM STDIN"} {
		_, err := reader.Exec(ctx, q)
		if sqlstate(err) != "42501" || !strings.Contains(err.Error(), `"alice" is a reader`) {
			t.Errorf("reader: %s: %v", q, err)
		}
	}
	if _, err := reader.PgConn().CopyFrom(ctx, strings.NewReader("1\n"), "COPY t (id) FROM STDIN"); sqlstate(err) != "42501" {
		t.Errorf("reader's CopyFrom: %v", err)
	}
	for _, q := range []string{"UPDATE t SET id = 1", "DELETE FROM t WHERE id = 1", "DELETE FROM nosuch"} {
		_, err := reader.Exec(ctx, q)
		if sqlstate(err) != "42501" || !strings.Contains(err.Error(), `"alice" is a reader`) || !strings.Contains(err.Error(), strings.Fields(q)[0]) {
			t.Errorf("reader: %s: %v", q, err)
		}
	}
	if _, err := reader.Exec(ctx, "DELETE FROM t WHERE id = $1", 1); sqlstate(err) != "42501" {
		t.Errorf("reader: DELETE with a parameter: %v", err)
	}
	if f.latest(t) != before {
		t.Fatal("a reader wrote")
	}
	if _, err := writer.Exec(ctx, "INSERT INTO t (id, name) VALUES (1000, 'bob')"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := reader.QueryRow(ctx, "SELECT count(*) FROM t WHERE name = 'bob'").Scan(&n); err != nil || n != 1 {
		t.Errorf("the reader sees the writer's row: %d %v", n, err)
	}
	if _, err := writer.Exec(ctx, "SET default_transaction_read_only = on"); err != nil {
		t.Fatal(err)
	}
	if v := show(writer, "transaction_read_only"); v != "on" {
		t.Errorf("after SET default_transaction_read_only = on: transaction_read_only = %s", v)
	}
	for _, q := range []string{"INSERT INTO t (id) VALUES (1001)", "DELETE FROM t WHERE id = 1", "UPDATE t SET name = 'ro'"} {
		if _, err := writer.Exec(ctx, q); sqlstate(err) != "25006" {
			t.Errorf("%s in a read-only session: %v", q, err)
		}
	}
	if _, err := writer.Exec(ctx, "RESET default_transaction_read_only"); err != nil {
		t.Fatal(err)
	}
	if _, err := writer.Exec(ctx, "INSERT INTO t (id) VALUES (1001)"); err != nil {
		t.Errorf("after RESET: %v", err)
	}

	// HTTP: the writer's token runs a write, the reader's is refused.
	call := func(token, body string) (int, map[string]any) {
		req, _ := http.NewRequest("POST", "http://"+f.srv.HTTPAddr().String()+"/v1/sql", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	before = f.latest(t)
	for _, body := range []string{`{"sql": "INSERT INTO t (id) VALUES (2000)"}`, `{"sql": "DELETE FROM t WHERE id = 1"}`, `{"sql": "UPDATE t SET name = 'r'"}`} {
		if status, out := call(readerToken, body); status != 403 {
			t.Errorf("reader token: %s: %d %v", body, status, out)
		}
	}
	if f.latest(t) != before {
		t.Fatal("the reader's token wrote")
	}
	status, out := call(writerToken, `{"sql": "INSERT INTO t (id, name) VALUES (2000, 'http'), (2001, 'http')"}`)
	if status != 200 || out["statement"] != "INSERT" || out["table"] != "t" || out["rows"] != 2.0 || out["file_count"] != 1.0 || out["snapshot_id"] != float64(before+1) {
		t.Errorf("writer token: %d %v", status, out)
	}
	if err := reader.QueryRow(ctx, "SELECT count(*) FROM t WHERE name = 'http'").Scan(&n); err != nil || n != 2 {
		t.Errorf("after the HTTP insert: %d %v", n, err)
	}
}

// POST /v1/sql runs one write and nothing else: a query is sent to the
// PostgreSQL protocol, COPY FROM STDIN too; errors say their SQLSTATE.
func TestHTTPSQL(t *testing.T) {
	f := newFixture(t, newConfig())
	post := func(body string) (int, map[string]any) {
		t.Helper()
		status, b := httpCall(t, f, "POST", "/v1/sql", body)
		var out map[string]any
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("%s: %s", body, b)
		}
		return status, out
	}
	message := func(out map[string]any) string {
		e, _ := out["error"].(map[string]any)
		m, _ := e["message"].(string)
		return m
	}
	status, out := post(`{"sql": "CREATE TABLE h (id BIGINT NOT NULL, s VARCHAR)"}`)
	if status != 200 || out["statement"] != "CREATE TABLE" || out["rows"] != 0.0 || out["snapshot_id"] == nil {
		t.Errorf("create: %d %v", status, out)
	}
	status, out = post(`{"sql": "INSERT INTO h SELECT i, 'v' || i FROM range(5) r(i)"}`)
	if status != 200 || out["rows"] != 5.0 || out["file_count"] != 1.0 {
		t.Errorf("insert: %d %v", status, out)
	}
	status, out = post(`{"sql": "CREATE TABLE h2 AS SELECT * FROM h WHERE id > 2"}`)
	if status != 200 || out["statement"] != "CREATE TABLE AS" || out["rows"] != 2.0 {
		t.Errorf("ctas: %d %v", status, out)
	}
	csv := filepath.Join(f.data, "h.csv")
	os.WriteFile(csv, []byte("id,s\n10,ten\n"), 0o644)
	status, out = post(`{"sql": "COPY h FROM '` + csv + `' (FORMAT csv, HEADER)"}`)
	if status != 200 || out["statement"] != "COPY" || out["rows"] != 1.0 {
		t.Errorf("copy: %d %v", status, out)
	}
	status, out = post(`{"sql": "INSERT INTO h SELECT * FROM h WHERE id < 0"}`)
	if status != 200 || out["rows"] != 0.0 || out["snapshot_id"] != nil {
		t.Errorf("an insert of no rows: %d %v", status, out)
	}
	c := f.connect(t, pgx.QueryExecModeSimpleProtocol)
	if got := firstAnswer(t, c, "SELECT count(*), max(s) FROM h"); got != "6|v4" {
		t.Errorf("h: %s", got)
	}
	before := f.latest(t)
	for _, tc := range []struct {
		body   string
		status int
		says   string
	}{
		{`{"sql": "SELECT count(*) FROM h"}`, 400, "queries go through the PostgreSQL protocol"},
		{`{"sql": "INSERT INTO h VALUES (1, 'a'); INSERT INTO h VALUES (2, 'b')"}`, 400, "one write per request"},
		{`{"sql": ""}`, 400, "one write statement"},
		{`{"sql": "COPY h FROM STDIN"}`, 400, "PostgreSQL protocol"},
		{`{"sql": "INSERT INTO h (s) VALUES ('x')"}`, 400, "23502"},
		{`{"sql": "INSERT INTO h VALUES ('x', 'y')"}`, 400, "22P02"},
		{`{"sql": "INSERT INTO nosuch VALUES (1)"}`, 404, "nosuch"},
		{`{"sql": "CREATE TABLE h (x INT)"}`, 409, "already exists"},
		{`{"sql": "COPY h FROM '/etc/passwd'"}`, 400, "outside"},
		{`{"query": "INSERT INTO h VALUES (1, 'a')"}`, 400, "unknown field"},
	} {
		status, out := post(tc.body)
		if status != tc.status || !strings.Contains(message(out), tc.says) {
			t.Errorf("%s: %d %v, want %d saying %q", tc.body, status, out, tc.status, tc.says)
		}
	}
	if f.latest(t) != before {
		t.Error("a refused request wrote")
	}
}

// DELETE and UPDATE over both protocols, parameters in the extended one,
// with PostgreSQL's command tags; Describe of a change runs nothing;
// inside BEGIN ... COMMIT both are refused (0A000) and the block rolls
// back; psql prints their tags; POST /v1/sql says what a change did.
func TestChangesOverPostgresProtocol(t *testing.T) {
	f := newFixture(t, newConfig())
	ctx := context.Background()
	simple := f.connect(t, pgx.QueryExecModeSimpleProtocol)
	ext := f.connect(t, pgx.QueryExecModeCacheStatement)
	run := func(c *pgx.Conn, want string, rows int64, q string, args ...any) {
		t.Helper()
		tag, err := c.Exec(ctx, q, args...)
		if err != nil || tag.String() != want || tag.RowsAffected() != rows {
			t.Fatalf("%s: %q (%d rows) %v, want %q", q, tag, tag.RowsAffected(), err, want)
		}
	}
	run(simple, "CREATE TABLE", 0, "CREATE TABLE w (id BIGINT NOT NULL, name VARCHAR, v DOUBLE, day DATE)")
	cow, err := rocklake.ParseAlteration(strings.Fields("set option delete_mode = copy-on-write"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.lake.AlterTable(context.Background(), "w", cow); err != nil {
		t.Fatal(err) // the tags and answers below count files rewritten
	}
	run(simple, "INSERT 0 20", 20, "INSERT INTO w SELECT i, 'n' || i, i / 2, DATE '2024-01-01' + i::INTEGER FROM range(20) r(i)")
	before := f.latest(t)

	run(simple, "DELETE 3", 3, "DELETE FROM w WHERE id < 3")
	run(simple, "UPDATE 2", 2, "UPDATE w SET name = upper(name), v = v * 10 WHERE id IN (3, 4)")
	run(simple, "DELETE 0", 0, "DELETE FROM w WHERE id > 1000")
	run(ext, "DELETE 2", 2, "DELETE FROM w WHERE id BETWEEN $1 AND $2", 5, 6)
	run(ext, "UPDATE 1", 1, "UPDATE w SET name = $1, v = $2 WHERE id = $3", "e'; DROP TABLE w; --", 2.25, 7)
	run(ext, "UPDATE 2", 2, "UPDATE w AS x SET day = $1 WHERE x.id >= $2 AND x.name LIKE $3", time.Date(2030, 1, 2, 0, 0, 0, 0, time.UTC), 18, "n%")
	run(ext, "UPDATE 0", 0, "UPDATE w SET name = $1 WHERE name = $2", "x", "nobody")
	run(ext, "DELETE 1", 1, "DELETE FROM w USING (SELECT $1::BIGINT AS k) AS d WHERE w.id = d.k", 8)
	if got := f.latest(t); got != before+6 {
		t.Errorf("six changes of rows and two of none made %d snapshots", got-before)
	}
	if got := firstAnswer(t, simple, "SELECT count(*), string_agg(id || ':' || name || ':' || v, ',' ORDER BY id) FILTER (WHERE id <= 7) FROM w"); got != "14|3:N3:15.0,4:N4:20.0,7:e'; DROP TABLE w; --:2.25" {
		t.Errorf("after the changes: %s", got)
	}
	if got := firstAnswer(t, ext, "SELECT string_agg(id::VARCHAR, ',' ORDER BY id) FROM w WHERE day = $1", time.Date(2030, 1, 2, 0, 0, 0, 0, time.UTC)); got != "18,19" {
		t.Errorf("the UPDATE of day: %s", got)
	}
	// MERGE, an upsert with parameters: one row updated, one inserted.
	run(ext, "MERGE 2", 2, "MERGE INTO w USING (SELECT $1::BIGINT AS id, $2::VARCHAR AS name UNION ALL SELECT $3::BIGINT, $4::VARCHAR) AS s ON w.id = s.id WHEN MATCHED THEN UPDATE SET name = s.name WHEN NOT MATCHED THEN INSERT (id, name) VALUES (s.id, s.name)",
		9, "nine", 100, "hundred")
	if got := firstAnswer(t, simple, "SELECT string_agg(id || ':' || name, ',' ORDER BY id) FROM w WHERE id IN (9, 100)"); got != "9:nine,100:hundred" {
		t.Errorf("after the MERGE: %s", got)
	}
	run(simple, "DELETE 1", 1, "DELETE FROM w WHERE id = 100")

	// Describe of a prepared change: no rows, nothing run.
	mid := f.latest(t)
	pc := ext.PgConn()
	sd, err := pc.Prepare(ctx, "del", "DELETE FROM w WHERE id = $1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(sd.Fields) != 0 || len(sd.ParamOIDs) != 1 || sd.ParamOIDs[0] != 20 {
		t.Errorf("described: fields %v, parameters %v", sd.Fields, sd.ParamOIDs)
	}
	if f.latest(t) != mid {
		t.Error("describing a DELETE wrote")
	}
	rr := pc.ExecPrepared(ctx, "del", [][]byte{[]byte("9")}, nil, nil).Read()
	if rr.Err != nil || rr.CommandTag.String() != "DELETE 1" {
		t.Fatalf("ExecPrepared: %v %q", rr.Err, rr.CommandTag)
	}
	if f.latest(t) != mid+1 {
		t.Errorf("the prepared DELETE made %d snapshots", f.latest(t)-mid)
	}

	// Inside a block that wrote the table: the change reads the row the
	// block wrote (its tag counts it); rolled back, nothing of it is
	// committed and the connection goes on.
	before = f.latest(t)
	for _, c := range []*pgx.Conn{simple, ext} {
		for _, q := range []string{"DELETE FROM w WHERE id = 100", "UPDATE w SET name = 'in block' WHERE id = 100"} {
			tx, err := c.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(ctx, "INSERT INTO w VALUES (100, 'staged', NULL, NULL)"); err != nil {
				t.Fatal(err)
			}
			tag, err := tx.Exec(ctx, q)
			if err != nil || tag.RowsAffected() != 1 {
				t.Errorf("%s in a block: %v, %v", q, tag, err)
			}
			if err := tx.Rollback(ctx); err != nil {
				t.Errorf("ROLLBACK after %s: %v", q, err)
			}
		}
	}
	if f.latest(t) != before {
		t.Error("a rolled back block committed")
	}
	if got := firstAnswer(t, ext, "SELECT count(*), count(*) FILTER (WHERE id = 100) FROM w"); got != "13|0" {
		t.Errorf("after the rolled back blocks: %s", got)
	}

	// psql prints the tags.
	psql := exec.Command(psqlPath(t), "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", f.pgURL("me", "", "disable"),
		"-c", "DELETE FROM w WHERE id >= 18", "-c", "UPDATE w SET v = 0 WHERE id = 10", "-c", "DELETE FROM w WHERE id = 18")
	out, err := psql.CombinedOutput()
	if err != nil || string(out) != "DELETE 2\nUPDATE 1\nDELETE 0\n" {
		t.Errorf("psql: %q %v", out, err)
	}
	// A change in a block: applied at COMMIT, not at ROLLBACK.
	for _, end := range []string{"ROLLBACK", "COMMIT"} {
		psql = exec.Command(psqlPath(t), "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", f.pgURL("me", "", "disable"),
			"-c", "BEGIN", "-c", "UPDATE w SET v = 5 WHERE id = 10", "-c", end)
		if out, err := psql.CombinedOutput(); err != nil || string(out) != "BEGIN\nUPDATE 1\n"+end+"\n" {
			t.Errorf("psql, a change in a block ended by %s: %q %v", end, out, err)
		}
		want := "0"
		if end == "COMMIT" {
			want = "5"
		}
		if got := firstAnswer(t, ext, "SELECT v::INTEGER FROM w WHERE id = 10"); got != want {
			t.Errorf("after a block of changes ended by %s: %s", end, got)
		}
	}

	// HTTP.
	post := func(body string) (int, map[string]any) {
		t.Helper()
		status, b := httpCall(t, f, "POST", "/v1/sql", body)
		var out map[string]any
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("%s: %s", body, b)
		}
		return status, out
	}
	before = f.latest(t)
	status, ans := post(`{"sql": "DELETE FROM w WHERE id IN (10, 11)"}`)
	// Each file the rows were in is rewritten into a successor of its own
	// (none when nothing is left of it): how many depends on the layout.
	removed, _ := ans["files_removed"].(float64)
	if status != 200 || ans["statement"] != "DELETE" || ans["table"] != "w" || ans["rows"] != 2.0 || removed < 1 || ans["file_count"].(float64) > removed || ans["snapshot_id"] != float64(before+1) {
		t.Errorf("DELETE: %d %v", status, ans)
	}
	status, ans = post(`{"sql": "UPDATE w SET name = 'http' WHERE id = 12"}`)
	if status != 200 || ans["statement"] != "UPDATE" || ans["rows"] != 1.0 || ans["files_removed"] != 1.0 || ans["snapshot_id"] != float64(before+2) {
		t.Errorf("UPDATE: %d %v", status, ans)
	}
	status, ans = post(`{"sql": "DELETE FROM w WHERE id < 0"}`)
	if status != 200 || ans["statement"] != "DELETE" || ans["rows"] != 0.0 || ans["snapshot_id"] != nil {
		t.Errorf("a DELETE of no rows: %d %v", status, ans)
	}
	for _, tc := range []struct {
		body string
		says string
	}{
		{`{"sql": "UPDATE w SET id = NULL"}`, "23502"},
		{`{"sql": "UPDATE w SET v = 'abc'"}`, "22P02"},
		{`{"sql": "DELETE FROM w RETURNING id"}`, "0A000"},
	} {
		status, ans := post(tc.body)
		e, _ := ans["error"].(map[string]any)
		msg, _ := e["message"].(string)
		if status != 400 || !strings.Contains(msg, tc.says) || strings.Contains(msg, "__rocklake") {
			t.Errorf("%s: %d %v, want 400 saying %s", tc.body, status, ans, tc.says)
		}
	}
	if f.latest(t) != before+2 {
		t.Error("a failed change over HTTP made a snapshot")
	}
	if got := firstAnswer(t, simple, "SELECT count(*), string_agg(name, ',' ORDER BY id) FROM w"); got != "9|N3,N4,e'; DROP TABLE w; --,http,n13,n14,n15,n16,n17" {
		t.Errorf("at the end: %s", got)
	}
}

// Inside a block that wrote to a table, every way of reading that table
// reads the block's writes, as PostgreSQL's would: a query, a join, a
// CTE, query_table, INSERT ... SELECT from it, a DELETE and an UPDATE of
// rows it wrote, COPY out, a cursor, a prepared statement. Rolled back,
// the block leaves nothing; the table read AT a snapshot is that
// snapshot's.
func TestBlockReadsItsWrites(t *testing.T) {
	f := newFixture(t, newConfig())
	ctx := context.Background()
	c := f.connect(t, pgx.QueryExecModeSimpleProtocol)
	for _, q := range []string{"CREATE TABLE w (id BIGINT)", "CREATE TABLE o (id BIGINT)", "INSERT INTO w VALUES (1)", "INSERT INTO o VALUES (1), (2)"} {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	base := f.latest(t)
	answer := func(tx pgx.Tx, q string) (string, error) {
		var s string
		err := tx.QueryRow(ctx, q).Scan(&s)
		return s, err
	}
	then := func(stmt, q string) func(tx pgx.Tx) (string, error) {
		return func(tx pgx.Tx) (string, error) {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return "", err
			}
			return answer(tx, q)
		}
	}
	copyLines := func(q string) func(tx pgx.Tx) (string, error) {
		return func(tx pgx.Tx) (string, error) {
			var buf strings.Builder
			_, err := tx.Conn().PgConn().CopyTo(ctx, &buf, q)
			return strings.TrimSpace(buf.String()), err
		}
	}
	reads := []struct {
		name string
		read func(tx pgx.Tx) (string, error)
		want string
	}{
		{"count", func(tx pgx.Tx) (string, error) { return answer(tx, "SELECT count(*)::VARCHAR FROM w") }, "2"},
		{"join", func(tx pgx.Tx) (string, error) {
			return answer(tx, "SELECT count(*)::VARCHAR FROM o JOIN W USING (id)")
		}, "2"},
		{"cte", func(tx pgx.Tx) (string, error) {
			return answer(tx, "WITH x AS (SELECT * FROM \"w\") SELECT string_agg(id::VARCHAR, ',' ORDER BY id) FROM x")
		}, "1,2"},
		{"query_table", func(tx pgx.Tx) (string, error) { return answer(tx, "SELECT sum(id)::VARCHAR FROM query_table('w')") }, "3"},
		{"subquery", func(tx pgx.Tx) (string, error) {
			return answer(tx, "SELECT count(*)::VARCHAR FROM o WHERE id IN (SELECT id FROM w)")
		}, "2"},
		{"insert select", then("INSERT INTO w SELECT id + 10 FROM w", "SELECT string_agg(id::VARCHAR, ',' ORDER BY id) FROM w"), "1,2,11,12"},
		{"insert elsewhere", then("INSERT INTO o SELECT * FROM w", "SELECT string_agg(id::VARCHAR, ',' ORDER BY id) FROM o"), "1,1,2,2"},
		{"delete", then("DELETE FROM w WHERE id = 2", "SELECT string_agg(id::VARCHAR, ',' ORDER BY id) FROM w"), "1"},
		{"update", then("UPDATE w SET id = id * 5", "SELECT string_agg(id::VARCHAR, ',' ORDER BY id) FROM w"), "5,10"},
		{"copy query", copyLines("COPY (SELECT * FROM w ORDER BY id) TO STDOUT"), "1\n2"},
		{"copy table", copyLines("COPY w TO STDOUT (FORMAT csv)"), "1\n2"},
		{"cursor", then("DECLARE cur CURSOR FOR SELECT id FROM w ORDER BY id DESC", "FETCH 1 FROM cur"), "2"},
		{"prepared", func(tx pgx.Tx) (string, error) {
			var n int64
			err := tx.QueryRow(ctx, "SELECT count(*) FROM w WHERE id > $1", pgx.QueryExecModeExec, 0).Scan(&n)
			return fmt.Sprint(n), err
		}, "2"},
		{"travel", func(tx pgx.Tx) (string, error) {
			return answer(tx, fmt.Sprintf("SELECT count(*)::VARCHAR FROM w AT (VERSION => %d)", base))
		}, "1"},
	}
	for _, r := range reads {
		tx, err := c.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO w VALUES (2)"); err != nil {
			t.Fatal(err)
		}
		got, err := r.read(tx)
		if r.name == "copy table" {
			// A table's COPY promises no order (DuckDB's COPY writes rows
			// as its threads finish).
			lines := strings.Split(got, "\n")
			slices.Sort(lines)
			got = strings.Join(lines, "\n")
		}
		if err != nil || strings.ReplaceAll(got, "\n", ",") != strings.ReplaceAll(r.want, "\n", ",") {
			t.Errorf("%s in a block that wrote w: %q, %v; want %q", r.name, got, err, r.want)
		}
		tx.Rollback(ctx)
	}
	if got := f.latest(t); got != base {
		t.Fatalf("the rolled back blocks made %d snapshots", got-base)
	}
	if got := firstAnswer(t, c, "SELECT string_agg(id::VARCHAR, ',' ORDER BY id) FROM w"); got != "1" {
		t.Fatalf("after the rolled back blocks: %s", got)
	}
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"INSERT INTO w VALUES (2)", "SELECT count(*) FROM o", "INSERT INTO w VALUES (3)", "INSERT INTO w SELECT id + 100 FROM o",
		"DELETE FROM w WHERE id = 3", "UPDATE w SET id = id + 1000 WHERE id > 100"} {
		if _, err := tx.Exec(ctx, q); err != nil {
			t.Fatalf("%s, in a block that wrote w: %v", q, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := firstAnswer(t, c, "SELECT string_agg(id::VARCHAR, ',' ORDER BY id) FROM w"); got != "1,2,1101,1102" {
		t.Errorf("after the block: %s", got)
	}
	if got := f.latest(t); got != base+1 {
		t.Errorf("the block made %d snapshots", got-base)
	}
}

// The change feed in SQL through the server's locked-down DuckDB, in the
// simple and the extended protocol: table_changes passes the function
// census (DuckDB has no such function; the engine replaces the call) and
// reads the files the snapshots added and retired, as Lake.Changes does.
func TestChangeFeedOverPostgres(t *testing.T) {
	f := newFixture(t, newConfig())
	ctx := context.Background()
	c := f.connect(t, pgx.QueryExecModeSimpleProtocol)
	for _, q := range []string{"CREATE TABLE w (id BIGINT)", "INSERT INTO w SELECT * FROM range(6)", "DELETE FROM w WHERE id % 3 = 0", "UPDATE w SET id = -id WHERE id = 4"} {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	last := f.latest(t)
	want, err := f.lake.Changes(ctx, "w", 0, rocklake.SnapshotRef{})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, row := range want.Rows {
		lines = append(lines, strings.Join([]string{*row[0], *row[1], *row[2]}, "|"))
	}
	slices.Sort(lines)
	q := fmt.Sprintf("SELECT snapshot_id, change_type, id FROM table_changes('w', 1, %d) ORDER BY ALL", last)
	for _, conn := range []*pgx.Conn{c, f.connect(t, pgx.QueryExecModeExec)} {
		if got := firstAnswer(t, conn, q); got != strings.Join(lines, "\n") {
			t.Errorf("table_changes over the server:\n%s\nwant\n%s", got, strings.Join(lines, "\n"))
		}
	}
	if _, err := c.Exec(ctx, "SELECT * FROM table_changes('w', 1, 1000)"); sqlstate(err) == "" || !strings.Contains(err.Error(), "after snapshot") {
		t.Errorf("an end past the latest snapshot: %v", err)
	}
}
