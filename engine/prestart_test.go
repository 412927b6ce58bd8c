package engine

import (
	"context"
	"os"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/kv/kvtest"
)

// The database Prestart opens is the next engine's, and only its: the
// engine after it opens one of its own, and both answer queries.
func TestPrestartedDatabaseIsTakenOnce(t *testing.T) {
	c, err := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	before := Opened()
	Prestart()
	Prestart() // a second call starts nothing more
	<-started.ready
	if n := Opened() - before; n != 1 {
		t.Fatalf("Prestart opened %d databases, want 1", n)
	}
	first, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if n := Opened() - before; n != 1 {
		t.Fatalf("the engine after Prestart opened its own database (%d opened)", n)
	}
	second, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if n := Opened() - before; n != 2 {
		t.Fatalf("the second engine opened %d databases, want 1 of its own", n-1)
	}
	for i, e := range []*Engine{first, second} {
		res, err := e.Query(context.Background(), "SELECT 40 + 2", QueryOptions{Snapshot: -1})
		if err != nil {
			t.Fatal(err)
		}
		if got := *res.Rows[0][0]; got != "42" {
			t.Fatalf("engine %d answered %s", i, got)
		}
	}
	// Taken once, it is never handed out again.
	Prestart()
	if db, _, ok, _ := takeStarted(); ok || db != nil {
		t.Fatal("a taken database was handed out again")
	}
}

// CloseAtExit leaves an engine without temporary files open for the exit
// to end, and closes one whose DuckDB spilled, which removes the files.
func TestCloseAtExitRemovesSpilledFiles(t *testing.T) {
	c, err := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	quiet, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := quiet.CloseAtExit(); err != nil {
		t.Fatal(err)
	}
	if err := quiet.db.Ping(); err != nil {
		t.Fatalf("an engine without temporary files was closed: %v", err)
	}
	quiet.parse.Close()
	quiet.db.Close()

	spilled, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	ctx := context.Background()
	conn, err := spilled.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"SET GLOBAL temp_directory = '" + tmp + "'", "SET GLOBAL memory_limit = '64MB'", "SET GLOBAL threads = 1",
		"CREATE TEMP TABLE big AS SELECT i, repeat('x', 100) || i AS s FROM range(3000000) r(i)"} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var n int
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM duckdb_temporary_files()").Scan(&n); err != nil || n == 0 {
		t.Fatalf("the test's table did not spill: %d temporary files (%v)", n, err)
	}
	conn.Close()
	if err := spilled.CloseAtExit(); err != nil {
		t.Fatal(err)
	}
	if err := spilled.db.Ping(); err == nil {
		t.Fatal("an engine holding temporary files was left open")
	}
	entries, _ := os.ReadDir(tmp)
	if len(entries) != 0 {
		t.Fatalf("temporary files left after CloseAtExit: %d", len(entries))
	}
}
