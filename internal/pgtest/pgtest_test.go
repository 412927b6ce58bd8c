package pgtest_test

import (
	"context"
	"errors"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/rocklake/rocklake/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func connect(t *testing.T, u string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func dbName(t *testing.T, u string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return p.Path[1:]
}

func TestURLAcceptsConnectionAndQuery(t *testing.T) {
	u := pgtest.URL(t)
	conn := connect(t, u)
	var db string
	var sum int
	if err := conn.QueryRow(context.Background(), "SELECT current_database(), 1 + 1").Scan(&db, &sum); err != nil {
		t.Fatal(err)
	}
	if db != dbName(t, u) || sum != 2 {
		t.Fatalf("got database %q and 1 + 1 = %d; want %q and 2", db, sum, dbName(t, u))
	}
}

func TestNewDatabaseGivesDistinctEmptyDatabases(t *testing.T) {
	c := pgtest.Shared(t)
	a, b := c.NewDatabase(t), c.NewDatabase(t)
	if dbName(t, a) == dbName(t, b) {
		t.Fatalf("both databases are named %s", dbName(t, a))
	}
	ctx := context.Background()
	ca, cb := connect(t, a), connect(t, b)
	tables := func(conn *pgx.Conn) int {
		t.Helper()
		var n int
		err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema')").Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n, m := tables(ca), tables(cb); n != 0 || m != 0 {
		t.Fatalf("new databases hold %d and %d tables", n, m)
	}
	if _, err := ca.Exec(ctx, "CREATE TABLE only_in_a (x int)"); err != nil {
		t.Fatal(err)
	}
	if n, m := tables(ca), tables(cb); n != 1 || m != 0 {
		t.Fatalf("after a table in the first: %d and %d tables, want 1 and 0", n, m)
	}
}

func TestDatabaseDroppedAtCleanup(t *testing.T) {
	var name string
	t.Run("inner", func(t *testing.T) {
		name = dbName(t, pgtest.URL(t))
	})
	conn := connect(t, pgtest.Shared(t).AdminURL())
	var n int
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("database %s is still there after its test's cleanup", name)
	}
}

func TestCommittedDataSurvivesImmediateStop(t *testing.T) {
	start := time.Now()
	c := pgtest.Start(t)
	t.Logf("cold start of a private cluster (initdb, postgres, ready): %v", time.Since(start))
	port := c.Port()
	u := c.NewDatabase(t)
	ctx := context.Background()

	conn := connect(t, u)
	if _, err := conn.Exec(ctx, "CREATE TABLE kept (id int PRIMARY KEY, v text)"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "INSERT INTO kept SELECT i, 'row ' || i FROM generate_series(1, 1000) i"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)

	start = time.Now()
	c.Stop(t, "immediate")
	t.Logf("immediate stop: %v", time.Since(start))
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if down, err := pgx.Connect(cctx, u); err == nil {
		down.Close(ctx)
		t.Fatal("the server accepts connections after Stop")
	}

	start = time.Now()
	c.Restart(t)
	t.Logf("restart with recovery: %v", time.Since(start))
	if c.Port() != port {
		t.Fatalf("port %d after restart, %d before", c.Port(), port)
	}
	var n int
	var last string
	if err := connect(t, u).QueryRow(ctx, "SELECT count(*), max(v) FILTER (WHERE id = 1000) FROM kept").Scan(&n, &last); err != nil {
		t.Fatal(err)
	}
	if n != 1000 || last != "row 1000" {
		t.Fatalf("after crash and restart: %d rows, row 1000 = %q; want 1000 and \"row 1000\"", n, last)
	}

	// A fast stop and restart keep it too.
	c.Stop(t, "fast")
	c.Restart(t)
	if err := connect(t, u).QueryRow(ctx, "SELECT count(*) FROM kept").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1000 {
		t.Fatalf("after fast stop and restart: %d rows, want 1000", n)
	}
}

func TestWrongPasswordRefused(t *testing.T) {
	u, err := url.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(u.User.Username(), "not-the-password")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, u.String())
	if err == nil {
		conn.Close(ctx)
		t.Fatal("a wrong password was accepted")
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "28P01" {
		t.Fatalf("wrong password: %v; want SQLSTATE 28P01 (invalid_password)", err)
	}
}

func TestLaunchForPrograms(t *testing.T) {
	c, err := pgtest.Launch()
	if err != nil {
		// Start skips without the binaries, unless they are required.
		if os.Getenv("ROCKLAKE_REQUIRE_POSTGRES") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	closed := false
	defer func() {
		if !closed {
			c.Close()
		}
	}()
	u, err := c.CreateDatabase("bench")
	if err != nil {
		t.Fatal(err)
	}
	if dbName(t, u) != "bench" {
		t.Fatalf("URL %s names database %q, want bench", u, dbName(t, u))
	}
	conn := connect(t, u)
	var one int
	if err := conn.QueryRow(context.Background(), "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("SELECT 1: %d, %v", one, err)
	}
	conn.Close(context.Background())
	if _, err := c.CreateDatabase("bench"); err == nil {
		t.Fatal("a second database named bench was created")
	}
	closed = true
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if down, err := pgx.Connect(ctx, u); err == nil {
		down.Close(ctx)
		t.Fatal("the server accepts connections after Close")
	}
}
