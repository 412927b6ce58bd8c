package server_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/rocklake/rocklake"
	"github.com/rocklake/rocklake/internal/pgtest"
)

// Queries over the served table: each answer read with the simple
// protocol (text), the extended protocol with pgx's binary formats, and
// the extended protocol with a described statement must be equal, and
// equal to the in-process answer where PostgreSQL's text is DuckDB's.
var servedQueries = []string{
	"SELECT id, name, amount, ts, uid, day, pair FROM t WHERE id BETWEEN 95 AND 105 ORDER BY id",
	"SELECT count(*) FROM t",
	"SELECT count(*), min(ts), max(amount) FROM t WHERE id >= 250",
	"SELECT name FROM t WHERE name = 'n42'",
	"SELECT id, score, even, raw, big, span FROM t WHERE id IN (0, 1, 50, 299) ORDER BY id",
	"SELECT sum(amount), avg(id) FROM t WHERE ts < TIMESTAMPTZ '2024-01-01 01:00:00+00'",
	"SELECT id FROM t WHERE amount IS NULL ORDER BY id LIMIT 5",
	"WITH x AS (SELECT id FROM t WHERE id < 10) SELECT count(*) FROM x",
	"SELECT id FROM t WHERE id > 1000",
}

func TestQueriesOverPostgresProtocol(t *testing.T) {
	f := newFixture(t, newConfig())
	ctx := context.Background()
	modes := map[string]pgx.QueryExecMode{
		"simple": pgx.QueryExecModeSimpleProtocol, "cache": pgx.QueryExecModeCacheStatement,
		"describe": pgx.QueryExecModeDescribeExec, "exec": pgx.QueryExecModeExec,
	}
	conns := map[string]*pgx.Conn{}
	for name, m := range modes {
		conns[name] = f.connect(t, m)
	}
	for _, q := range servedQueries {
		var want [][]any
		for _, name := range []string{"simple", "cache", "describe", "exec"} {
			rows, err := conns[name].Query(ctx, q)
			if err != nil {
				t.Fatalf("%s (%s): %v", q, name, err)
			}
			got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([]any, error) { return r.Values() })
			if err != nil {
				t.Fatalf("%s (%s): %v", q, name, err)
			}
			if want == nil {
				want = got
				continue
			}
			if !reflect.DeepEqual(norm(got), norm(want)) {
				t.Errorf("%s: %s protocol gave\n%v\nthe simple protocol\n%v", q, name, got, want)
			}
		}
		// Against the engine in-process, column by column as text.
		res, err := f.lake.Query(ctx, q, rocklake.QueryOptions{})
		if err != nil {
			t.Fatal(err)
		}
		raw := conns["simple"].PgConn().Exec(ctx, q)
		results, err := raw.ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		pgRows := results[0].Rows
		if len(pgRows) != len(res.Rows) {
			t.Fatalf("%s: %d rows over the PostgreSQL protocol, %d in process", q, len(pgRows), len(res.Rows))
		}
		for i, row := range res.Rows {
			for j, v := range row {
				got := pgRows[i][j]
				switch {
				case v == nil && got != nil, v != nil && got == nil:
					t.Errorf("%s row %d col %d: NULL mismatch", q, i, j)
				case v != nil && sameText(results[0].FieldDescriptions[j].DataTypeOID) && string(got) != *v:
					t.Errorf("%s row %d col %d: %q over PostgreSQL, %q in process", q, i, j, got, *v)
				}
			}
		}
	}
}

// sameText: types whose PostgreSQL text is DuckDB's.
func sameText(oid uint32) bool {
	switch oid {
	case 16, 17, 700, 701, 1186: // bool, bytea, float4/8, interval
		return false
	}
	return true
}

// norm makes NaN comparable.
func norm(rows [][]any) string { return fmt.Sprint(rows) }

// Typed values arrive as the Go types a PostgreSQL driver gives for the
// PostgreSQL types, in binary and in text.
func TestTypedValues(t *testing.T) {
	f := newFixture(t, newConfig())
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		c := f.connect(t, mode)
		var (
			id    int64
			ts    time.Time
			name  string
			amt   float64
			score float64
			raw   []byte
			even  bool
			day   time.Time
			uid   [16]byte
		)
		err := c.QueryRow(context.Background(), "SELECT id, ts, name, amount::DOUBLE, score, raw, even, day, uid FROM t WHERE id = $1", 101).
			Scan(&id, &ts, &name, &amt, &score, &raw, &even, &day, &uid)
		if err != nil {
			t.Fatalf("mode %v: %v", mode, err)
		}
		wantTS := time.Date(2024, 1, 1, 1, 41, 0, 0, time.UTC)
		if id != 101 || !ts.Equal(wantTS) || name != "n101" || amt != 126.25 || score != 25.25 || string(raw) != "b101" || even ||
			!day.Equal(time.Date(2024, 4, 11, 0, 0, 0, 0, time.UTC)) || uid[15] != 0x01 || uid[14] != 0x01 {
			t.Errorf("mode %v: got %v %v %q %v %v %q %v %v %x", mode, id, ts, name, amt, score, raw, even, day, uid)
		}
	}
}

// Parameters of every common type are put in as literals the planner can
// prune with; text in them stays text.
func TestParameters(t *testing.T) {
	f := newFixture(t, newConfig())
	c := f.connect(t, pgx.QueryExecModeCacheStatement)
	ctx := context.Background()
	var n int64
	if err := c.QueryRow(ctx, "SELECT count(*) FROM t WHERE id >= $1 AND name <> $2", 250, "n260").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 49 {
		t.Errorf("count = %d, want 49", n)
	}
	if err := c.QueryRow(ctx, "SELECT count(*) FROM t WHERE ts < $1", time.Date(2024, 1, 1, 0, 10, 0, 0, time.UTC)).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 10 {
		t.Errorf("count before 00:10 = %d, want 10", n)
	}
	// A quote and a comment in a parameter are data, not SQL.
	for _, s := range []string{"x' OR '1'='1", "n1'; --", `$1`, "n2"} {
		if err := c.QueryRow(ctx, "SELECT count(*) FROM t WHERE name = $1", s).Scan(&n); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		want := int64(0)
		if s == "n2" {
			want = 1
		}
		if n != want {
			t.Errorf("name = %q: %d rows, want %d", s, n, want)
		}
	}
	// $1 inside a string is not a parameter.
	var s string
	if err := c.QueryRow(ctx, "SELECT '$1' || $1::VARCHAR", "x").Scan(&s); err != nil {
		t.Fatal(err)
	}
	if s != "$1x" {
		t.Errorf("got %q, want $1x", s)
	}
	// Pruning happened: the plan of the last query kept one file of three.
	res, err := f.lake.Query(ctx, "SELECT count(*) FROM t WHERE id >= 250 AND name <> 'n260'", rocklake.QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if k := res.Tables[0].Plan.Files.Kept; k != 1 {
		t.Errorf("the literal the parameter became kept %d files, want 1", k)
	}
}

// The extended protocol at the message level (what JDBC-style drivers
// do): a prepared statement with an untyped parameter, and errors with
// their SQLSTATEs that leave the connection usable.
func TestExtendedProtocol(t *testing.T) {
	f := newFixture(t, newConfig())
	ctx, c := f.pgconn(t)
	sd, err := c.Prepare(ctx, "s1", "SELECT id, name FROM t WHERE id < $1 ORDER BY id", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(sd.ParamOIDs) != 1 || len(sd.Fields) != 2 || string(sd.Fields[0].Name) != "id" || sd.Fields[0].DataTypeOID != 20 {
		t.Fatalf("statement description %+v", sd)
	}
	rr := c.ExecPrepared(ctx, "s1", [][]byte{[]byte("7")}, nil, nil).Read()
	if rr.Err != nil {
		t.Fatal(rr.Err)
	}
	if len(rr.Rows) != 7 || string(rr.Rows[6][1]) != "n6" || rr.CommandTag.String() != "SELECT 7" {
		t.Errorf("rows %q, tag %s", rr.Rows, rr.CommandTag)
	}
	// Errors carry SQLSTATEs and leave the connection usable.
	_, err = c.Exec(ctx, "SELECT nosuch FROM t").ReadAll()
	if code := sqlstate(err); code != "42703" {
		t.Errorf("unknown column: %v (SQLSTATE %s), want 42703", err, code)
	}
	_, err = c.Exec(ctx, "SELECT * FROM nosuch").ReadAll()
	if code := sqlstate(err); code != "42P01" {
		t.Errorf("unknown table: %v (SQLSTATE %s), want 42P01", err, code)
	}
	_, err = c.Exec(ctx, "SELECT chr(id) FROM t").ReadAll() // chr takes an INTEGER, id is BIGINT
	if code := sqlstate(err); code != "42883" {
		t.Errorf("no function of these argument types: %v (SQLSTATE %s), want 42883", err, code)
	}
	_, err = c.Exec(ctx, "SELEC 1").ReadAll()
	if code := sqlstate(err); code != "42601" {
		t.Errorf("syntax error: %v (SQLSTATE %s), want 42601", err, code)
	}
	rr = c.ExecParams(ctx, "SELECT count(*) FROM t", nil, nil, nil, nil).Read()
	if rr.Err != nil || string(rr.Rows[0][0]) != "300" {
		t.Errorf("after errors: %v %q", rr.Err, rr.Rows)
	}
}

// pgconn is a low-level connection, closed when the test ends.
func (f *fixture) pgconn(t *testing.T) (context.Context, *pgconn.PgConn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	c, err := pgconn.Connect(ctx, f.pgURL("jdbc", "", "disable"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return ctx, c
}

func sqlstate(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// psql, the reference client: queries, \dt, SHOW and DESCRIBE, errors
// with their SQLSTATE, the snapshot setting and a transaction block.
func TestPsql(t *testing.T) {
	psql := psqlPath(t)
	f := newFixture(t, newConfig())
	run := func(args ...string) (string, error) {
		cmd := exec.Command(psql, append([]string{"-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-v", "VERBOSITY=verbose", f.pgURL("me", "", "disable")}, args...)...)
		cmd.Env = append(cmd.Environ(), "PGCONNECT_TIMEOUT=10")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("-c", "SELECT count(*), min(id), max(name) FROM t WHERE id >= 200")
	if err != nil || strings.TrimSpace(out) != "100|200|n299" {
		t.Errorf("query: %q %v", out, err)
	}
	out, err = run("-c", `\dt`)
	if err != nil || !strings.Contains(out, "main|t|table|rocklake") {
		t.Errorf(`\dt: %q %v`, out, err)
	}
	out, err = run("-c", "SHOW TABLES", "-c", "DESCRIBE t")
	if err != nil || !strings.Contains(out, "t\n") || !strings.Contains(out, "amount|DECIMAL(10,2)") {
		t.Errorf("SHOW/DESCRIBE: %q %v", out, err)
	}
	out, err = run("-c", "SELECT * FROM nosuch")
	if err == nil || !strings.Contains(out, "42P01") {
		t.Errorf("error: %q %v", out, err)
	}
	out, err = run("-c", "MERGE INTO t USING t AS s ON t.id = s.id WHEN MATCHED THEN ERROR")
	if err == nil || !strings.Contains(out, "0A000") {
		t.Errorf("a statement rocklake does not run: %q %v", out, err)
	}
	// Snapshot 1 made the table (the add): the setting reads it; snapshot
	// 0 has no table t.
	out, err = run("-c", "SET rocklake.snapshot = 0", "-c", "SELECT count(*) FROM t")
	if err == nil || !strings.Contains(out, "42P01") {
		t.Errorf("at snapshot 0: %q %v", out, err)
	}
	out, err = run("-c", "SET rocklake.snapshot = 99")
	if err == nil || !strings.Contains(out, "22023") {
		t.Errorf("a snapshot that does not exist: %q %v", out, err)
	}
	out, err = run("-c", "BEGIN", "-c", "SHOW rocklake.snapshot", "-c", "SELECT count(*) FROM t", "-c", "COMMIT", "-c", "SHOW rocklake.snapshot")
	if err != nil || strings.Fields(out)[1] != "1" || !strings.Contains(out, "300") || !strings.HasSuffix(strings.TrimSpace(out), "latest") {
		t.Errorf("transaction block: %q %v", out, err)
	}
}

// A CancelRequest (pgx sends one when the context ends) stops a running
// query with 57014; so does the statement timeout. The connection's
// server side is not left running the query.
func TestCancelAndTimeout(t *testing.T) {
	cfg := newConfig()
	f := newFixture(t, cfg)
	c := f.connect(t, pgx.QueryExecModeSimpleProtocol)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	long := "SELECT count(*) FROM range(10000000000) a, t WHERE a.range % 7 = t.id"
	start := time.Now()
	_, err := c.Exec(ctx, long)
	if err == nil {
		t.Fatal("a query over 3e12 rows finished")
	}
	if code := sqlstate(err); code != "57014" && !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("cancelled query: %v", err)
	}
	if d := time.Since(start); d > 60*time.Second {
		t.Errorf("the cancel took %v", d)
	}

	cfg.StatementTimeout = 200 * time.Millisecond
	f2 := newFixture(t, cfg)
	c2 := f2.connect(t, pgx.QueryExecModeSimpleProtocol)
	_, err = c2.Exec(context.Background(), long)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "57014" || !strings.Contains(pe.Message, "statement timeout") {
		t.Errorf("statement timeout: %v", err)
	}
	var n int
	if err := c2.QueryRow(context.Background(), "SELECT count(*) FROM t").Scan(&n); err != nil || n != 300 {
		t.Errorf("after the timeout: %d %v", n, err)
	}
}

// Limits: rows and bytes per answer, connections.
func TestLimits(t *testing.T) {
	cfg := newConfig()
	cfg.MaxResultRows = 50
	cfg.MaxConns = 2
	f := newFixture(t, cfg)
	c := f.connect(t, pgx.QueryExecModeSimpleProtocol)
	_, err := c.Exec(context.Background(), "SELECT * FROM t")
	if code := sqlstate(err); code != "54000" {
		t.Errorf("an answer over the row limit: %v", err)
	}
	c.Exec(context.Background(), "SELECT 1")
	_ = f.connect(t, pgx.QueryExecModeSimpleProtocol)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = pgx.Connect(ctx, f.pgURL("third", "", "disable"))
	if code := sqlstate(err); code != "53300" {
		t.Errorf("a third connection over a limit of 2: %v", err)
	}
}

// SIGTERM's path: Shutdown lets a running query finish, then refuses new
// connections.
func TestShutdownLetsQueriesFinish(t *testing.T) {
	f := newFixture(t, newConfig())
	c := f.connect(t, pgx.QueryExecModeSimpleProtocol)
	errc := make(chan error, 1)
	var n int64
	go func() {
		errc <- c.QueryRow(context.Background(), "SELECT count(*) FROM range(300000000) a WHERE a.range % 3 = 0").Scan(&n)
	}()
	time.Sleep(200 * time.Millisecond)
	if err := f.srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil || n != 100000000 {
		t.Errorf("the running query: %d, %v", n, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := pgx.Connect(ctx, f.pgURL("late", "", "disable")); err == nil {
		t.Error("a connection after the shutdown was accepted")
	}
}

// The messages a JDBC driver sends with a fetch size, written out: Parse
// with an untyped parameter, Bind, Describe the portal, then Execute three
// rows at a time (PortalSuspended after each batch) until CommandComplete.
func TestPortalFetchSize(t *testing.T) {
	f := newFixture(t, newConfig())
	_, c := f.pgconn(t)
	fe := c.Frontend()
	fe.Send(&pgproto3.Parse{Query: "SELECT id, name FROM t WHERE id < $1 ORDER BY id", ParameterOIDs: []uint32{0}})
	fe.Send(&pgproto3.Bind{Parameters: [][]byte{[]byte("8")}})
	fe.Send(&pgproto3.Describe{ObjectType: 'P'})
	fe.Send(&pgproto3.Execute{MaxRows: 3})
	fe.Send(&pgproto3.Flush{})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	var ids []string
	var got []string
	executes := 1
	for {
		msg, err := fe.Receive()
		if err != nil {
			t.Fatal(err)
		}
		switch m := msg.(type) {
		case *pgproto3.ParseComplete, *pgproto3.BindComplete:
			got = append(got, fmt.Sprintf("%T", m))
		case *pgproto3.RowDescription:
			got = append(got, fmt.Sprintf("RowDescription(%d)", len(m.Fields)))
		case *pgproto3.DataRow:
			ids = append(ids, string(m.Values[0]))
		case *pgproto3.PortalSuspended:
			got = append(got, "suspended")
		case *pgproto3.CommandComplete:
			got = append(got, string(m.CommandTag))
		case *pgproto3.ErrorResponse:
			t.Fatalf("error: %s %s", m.Code, m.Message)
		case *pgproto3.ReadyForQuery:
			if strings.HasPrefix(got[len(got)-1], "SELECT") {
				want := "*pgproto3.ParseComplete *pgproto3.BindComplete RowDescription(2) suspended suspended SELECT 8"
				if strings.Join(got, " ") != want || strings.Join(ids, ",") != "0,1,2,3,4,5,6,7" {
					t.Errorf("got %v and ids %v", got, ids)
				}
				return
			}
			t.Fatalf("ready before the portal's rows were all fetched: %v", got)
		}
		if len(got) > 0 && got[len(got)-1] == "suspended" && executes < 3 {
			executes++
			fe.Send(&pgproto3.Execute{MaxRows: 3})
			if executes == 3 {
				fe.Send(&pgproto3.Sync{})
			} else {
				fe.Send(&pgproto3.Flush{})
			}
			fe.Flush()
		}
	}
}

// Garbage, a startup cut short and a client that vanishes mid-query end
// their own connections only: other clients go on.
func TestBadClientsDoNotStopTheServer(t *testing.T) {
	f := newFixture(t, newConfig())
	addr := f.srv.PGAddr().String()
	for _, payload := range [][]byte{
		[]byte("GET / HTTP/1.1\r\n\r\n"),
		{0, 0, 0, 8, 4, 210, 22, 47},                // an SSLRequest, then silence
		{0, 0, 0, 3},                                // a length shorter than its header
		{0xff, 0xff, 0xff, 0xff, 0, 3, 0, 0},        // a length beyond any limit
		append([]byte{0, 0, 0, 9, 0, 3, 0, 0}, 'u'), // a startup message cut short
	} {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		c.Write(payload)
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		io.Copy(io.Discard, c)
		c.Close()
	}
	// A client that starts a long query and goes away without a word (as
	// a killed process does: pgx would send a CancelRequest first).
	raw, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	fe := pgproto3.NewFrontend(raw, raw)
	fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: map[string]string{"user": "gone"}})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	for {
		msg, err := fe.Receive()
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := msg.(*pgproto3.ReadyForQuery); ok {
			break
		}
	}
	fe.Send(&pgproto3.Query{String: "SELECT count(*) FROM range(300000000000) a WHERE a.range % 7 = 1"})
	fe.Flush()
	time.Sleep(200 * time.Millisecond)
	raw.Close()
	// Its query (minutes of work) is cancelled, not left running.
	for deadline := time.Now().Add(30 * time.Second); ; {
		_, metrics := httpCall(t, f, "GET", "/metrics", "")
		if strings.Contains(string(metrics), `rocklake_query_errors_total{sqlstate="57014"} 1`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the query of a client that went away was not cancelled")
		}
		time.Sleep(50 * time.Millisecond)
	}
	other := f.connect(t, pgx.QueryExecModeSimpleProtocol)
	var n int
	if err := other.QueryRow(context.Background(), "SELECT count(*) FROM t").Scan(&n); err != nil || n != 300 {
		t.Errorf("another client after the bad ones: %d %v", n, err)
	}
}

// A catalog in PostgreSQL serves the same: answers over the protocol
// equal to the in-process ones, and a file added through the HTTP API is
// read by the next query.
func TestServeCatalogInPostgres(t *testing.T) {
	loc := pgtest.URL(t)
	f := newFixtureAt(t, newConfig(), loc)
	ctx := context.Background()
	c := f.connect(t, pgx.QueryExecModeCacheStatement)
	// current_database() is the catalog's database, without credentials.
	if u, err := url.Parse(loc); err == nil {
		var db string
		if err := c.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil || db != strings.Trim(u.Path, "/") {
			t.Errorf("current_database() = %q %v, want the catalog's database %q", db, err, strings.Trim(u.Path, "/"))
		}
	}
	for _, q := range servedQueries {
		res, err := f.lake.Query(ctx, q, rocklake.QueryOptions{})
		if err != nil {
			t.Fatal(err)
		}
		results, err := c.PgConn().Exec(ctx, q).ReadAll()
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if len(results[0].Rows) != len(res.Rows) {
			t.Errorf("%s: %d rows over the protocol, %d in process", q, len(results[0].Rows), len(res.Rows))
		}
	}
	extra := filepath.Join(f.data, "extra.parquet")
	writeFile(t, openDuck(t), extra, 300, 350)
	if status, body := httpCall(t, f, "POST", "/v1/tables/t/files", `{"paths": ["`+extra+`"]}`); status != 200 {
		t.Fatalf("add: %d %s", status, body)
	}
	var n int
	if err := c.QueryRow(ctx, "SELECT count(*) FROM t WHERE id >= $1", 0).Scan(&n); err != nil || n != 350 {
		t.Errorf("after the add: %d %v", n, err)
	}
}
