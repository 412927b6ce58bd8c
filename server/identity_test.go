package server_test

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

func connectAs(t *testing.T, f *fixture, user string, mode pgx.QueryExecMode) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(f.pgURL(user, "", "disable"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.DefaultQueryExecMode = mode
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// PostgreSQL's identity functions answer as PostgreSQL's do, with the
// session's values, inside any query and under both protocols.
func TestIdentityFunctions(t *testing.T) {
	f := newFixture(t, newConfig())
	ctx := context.Background()
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeExec, pgx.QueryExecModeCacheDescribe} {
		alice := connectAs(t, f, "alice", mode)
		bob := connectAs(t, f, "bob", mode)
		for _, c := range []struct {
			conn *pgx.Conn
			user string
		}{{alice, "alice"}, {bob, "bob"}} {
			rows, err := c.conn.Query(ctx, "SELECT version(), current_database(), current_user, session_user, user, current_role, current_schema(), pg_backend_pid(), 1 AS one FROM t LIMIT 1")
			if err != nil {
				t.Fatalf("%v: %v", mode, err)
			}
			var names []string
			for _, fd := range rows.FieldDescriptions() {
				names = append(names, fd.Name)
			}
			var version, db, cu, su, u, cr, schema string
			var pid uint32
			var one int
			if !rows.Next() {
				t.Fatalf("%v: no row: %v", mode, rows.Err())
			}
			if err := rows.Scan(&version, &db, &cu, &su, &u, &cr, &schema, &pid, &one); err != nil {
				t.Fatalf("%v: %v", mode, err)
			}
			rows.Close()
			if want := "version current_database current_user session_user user current_role current_schema pg_backend_pid one"; strings.Join(names, " ") != want {
				t.Errorf("%v: columns %q, want %q", mode, names, want)
			}
			if !strings.HasPrefix(version, "PostgreSQL 15.0 (rocklake ") || !strings.Contains(version, "DuckDB v") {
				t.Errorf("%v: version() = %q", mode, version)
			}
			if db != "lake" {
				t.Errorf("%v: current_database() = %q, want lake (the catalog directory's name)", mode, db)
			}
			if cu != c.user || su != c.user || u != c.user || cr != c.user {
				t.Errorf("%v: %s's session says current_user %q, session_user %q, user %q, current_role %q", mode, c.user, cu, su, u, cr)
			}
			if schema != "main" {
				t.Errorf("%v: current_schema() = %q", mode, schema)
			}
			if want := c.conn.PgConn().PID(); pid != want {
				t.Errorf("%v: pg_backend_pid() = %d, BackendKeyData said %d", mode, pid, want)
			}
		}
		// Every row of a long answer, read after the engine call returned,
		// has the session's user.
		rows, err := bob.Query(ctx, "SELECT current_user AS u, i FROM range(300000) r(i)")
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for rows.Next() {
			var u string
			var i int64
			if err := rows.Scan(&u, &i); err != nil {
				t.Fatal(err)
			}
			if u != "bob" {
				t.Fatalf("%v: row %d says current_user %q", mode, i, u)
			}
			n++
		}
		if rows.Close(); rows.Err() != nil || n != 300000 {
			t.Fatalf("%v: %d rows, %v", mode, n, rows.Err())
		}
		// current_setting and SHOW agree, and with what the server
		// announced at startup.
		var sv, svn, sp, spShow, svnShow string
		if err := alice.QueryRow(ctx, "SELECT current_setting('server_version'), current_setting('server_version_num'), current_setting('search_path')").Scan(&sv, &svn, &sp); err != nil {
			t.Fatalf("%v: %v", mode, err)
		}
		if err := alice.QueryRow(ctx, "SHOW search_path").Scan(&spShow); err != nil {
			t.Fatal(err)
		}
		if err := alice.QueryRow(ctx, "SHOW server_version_num").Scan(&svnShow); err != nil {
			t.Fatal(err)
		}
		if ps := alice.PgConn().ParameterStatus("server_version"); sv != ps || svn != "150000" || svnShow != svn || sp != "main" || spShow != sp {
			t.Errorf("%v: server_version %q (announced %q), server_version_num %q/%q, search_path %q/%q", mode, sv, ps, svn, svnShow, sp, spShow)
		}
		var pe *pgconn.PgError
		if _, err := alice.Exec(ctx, "SELECT current_setting('memory_limit')"); !errors.As(err, &pe) || pe.Code != "42704" {
			t.Errorf("%v: current_setting of a DuckDB setting: %v, want 42704", mode, err)
		}
	}
}

// pg_cancel_backend cancels a query of the caller's user, refuses
// another user's session with 42501 and answers false for no session;
// pg_terminate_backend ends a session of the caller's user.
func TestSignalBackend(t *testing.T) {
	f := newFixture(t, newConfig())
	ctx := context.Background()
	busy := connectAs(t, f, "alice", pgx.QueryExecModeExec)
	ocfg, err := pgx.ParseConfig(f.pgURL("alice", "", "disable"))
	if err != nil {
		t.Fatal(err)
	}
	var notices []string
	ocfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { notices = append(notices, n.Severity+": "+n.Message) }
	other, err := pgx.ConnectConfig(ctx, ocfg)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	bob := connectAs(t, f, "bob", pgx.QueryExecModeExec)
	pid := busy.PgConn().PID()

	var pe *pgconn.PgError
	if _, err := bob.Exec(ctx, "SELECT pg_cancel_backend($1)", int32(pid)); !errors.As(err, &pe) || pe.Code != "42501" {
		t.Errorf("bob cancelling alice's session: %v, want 42501", err)
	}
	if _, err := bob.Exec(ctx, "SELECT pg_terminate_backend($1)", int32(pid)); !errors.As(err, &pe) || pe.Code != "42501" {
		t.Errorf("bob terminating alice's session: %v, want 42501", err)
	}
	var ok bool
	if err := other.QueryRow(ctx, "SELECT pg_cancel_backend(999999)").Scan(&ok); err != nil || ok {
		t.Errorf("cancelling no session: %v %v, want false", ok, err)
	}
	if len(notices) != 1 || notices[0] != "WARNING: PID 999999 is not a rocklake backend process" {
		t.Errorf("cancelling no session: notices %q", notices)
	}

	done := make(chan error, 1)
	go func() {
		_, err := busy.Exec(ctx, "SELECT count(*) FROM range(100000000000) a(i) WHERE i % 7 = 3")
		done <- err
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		time.Sleep(200 * time.Millisecond)
		if err := other.QueryRow(ctx, "SELECT pg_cancel_backend("+itoa(int(pid))+")").Scan(&ok); err != nil || !ok {
			t.Fatalf("cancelling alice's own query: %v %v", ok, err)
		}
		select {
		case err := <-done:
			if !errors.As(err, &pe) || pe.Code != "57014" {
				t.Fatalf("the cancelled query: %v, want 57014", err)
			}
		default:
			if time.Now().After(deadline) {
				t.Fatal("the query was not cancelled")
			}
			continue
		}
		break
	}
	// The cancelled session goes on; then it is terminated.
	var n int
	if err := busy.QueryRow(ctx, "SELECT 1").Scan(&n); err != nil {
		t.Fatalf("after its query was cancelled: %v", err)
	}
	if err := other.QueryRow(ctx, "SELECT pg_terminate_backend("+itoa(int(pid))+")").Scan(&ok); err != nil || !ok {
		t.Fatalf("terminating alice's session: %v %v", ok, err)
	}
	if err := busy.QueryRow(ctx, "SELECT 1").Scan(&n); err == nil {
		t.Error("a terminated session still answers")
	}
	if err := bob.QueryRow(ctx, "SELECT 1").Scan(&n); err != nil {
		t.Errorf("bob's session after alice's was terminated: %v", err)
	}
}

// psql, as a user sees it.
func TestIdentityPsql(t *testing.T) {
	psql := psqlPath(t)
	f := newFixture(t, newConfig())
	out, err := exec.Command(psql, "-X", "-c", "SELECT version()", "-c", "SELECT current_user, current_database()", f.pgURL("carol", "", "disable")).CombinedOutput()
	if err != nil {
		t.Fatalf("psql: %v\n%s", err, out)
	}
	s := string(out)
	if lines := strings.Split(s, "\n"); strings.TrimSpace(lines[0]) != "version" || !strings.HasPrefix(strings.TrimSpace(lines[2]), "PostgreSQL 15.0 (rocklake ") {
		t.Errorf("psql SELECT version():\n%s", s)
	}
	if !strings.Contains(s, "carol") || !strings.Contains(s, "| lake") {
		t.Errorf("psql SELECT current_user, current_database():\n%s", s)
	}
}

// The settings drivers send at connect are accepted, kept per session and
// shown back; DuckDB's settings stay out of reach.
func TestConnectSettings(t *testing.T) {
	f := newFixture(t, newConfig())
	ctx := context.Background()
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeExec} {
		cfg, err := pgx.ParseConfig(f.pgURL("dora", "", "disable"))
		if err != nil {
			t.Fatal(err)
		}
		cfg.DefaultQueryExecMode = mode
		cfg.RuntimeParams["DateStyle"] = "ISO"
		cfg.RuntimeParams["application_name"] = "at-start"
		c, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		other := connectAs(t, f, "dora", mode)
		show := func(c *pgx.Conn, name string) (string, string) {
			t.Helper()
			var v, cs string
			if err := c.QueryRow(ctx, "SHOW "+name).Scan(&v); err != nil {
				t.Fatalf("%v SHOW %s: %v", mode, name, err)
			}
			if err := c.QueryRow(ctx, "SELECT current_setting('"+name+"')").Scan(&cs); err != nil {
				t.Fatalf("%v current_setting(%s): %v", mode, name, err)
			}
			return v, cs
		}
		if v, _ := show(c, "application_name"); v != "at-start" {
			t.Errorf("%v: application_name from the startup message: %q", mode, v)
		}
		for _, q := range []string{
			"SET extra_float_digits = 3", "SET application_name = 'x'", "SET DateStyle = ISO", "SET client_encoding TO 'UTF8'",
			"SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL SERIALIZABLE, READ WRITE",
		} {
			if _, err := c.Exec(ctx, q); err != nil {
				t.Errorf("%v %s: %v", mode, q, err)
			}
		}
		for name, want := range map[string]string{
			"extra_float_digits": "3", "application_name": "x", "datestyle": "ISO, MDY", "client_encoding": "UTF8",
			"transaction_isolation": "serializable", "default_transaction_isolation": "serializable",
			"default_transaction_read_only": "off", "standard_conforming_strings": "on", "integer_datetimes": "on",
		} {
			if v, cs := show(c, name); v != want || cs != want {
				t.Errorf("%v: SHOW %s = %q, current_setting %q, want %q", mode, name, v, cs, want)
			}
		}
		if v := c.PgConn().ParameterStatus("application_name"); v != "x" {
			t.Errorf("%v: application_name reported as %q after SET", mode, v)
		}
		if v, _ := show(other, "application_name"); v != "" {
			t.Errorf("%v: another session's application_name is %q", mode, v)
		}
		if v, _ := show(other, "transaction_isolation"); v != "read committed" {
			t.Errorf("%v: another session's transaction_isolation is %q", mode, v)
		}
		for q, code := range map[string]string{
			"SET DateStyle = German": "22023", "SET client_encoding = 'LATIN1'": "22023", "SET extra_float_digits = 9": "22023",
			"SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL SOMETIMES": "22023",
			"SET memory_limit = '1GB'": "42704", "SET lock_configuration = false": "42704", "SET GLOBAL threads = 1": "42601",
		} {
			var pe *pgconn.PgError
			if _, err := c.Exec(ctx, q); !errors.As(err, &pe) || pe.Code != code {
				t.Errorf("%v %s: %v, want %s", mode, q, err, code)
			}
		}
	}
}
