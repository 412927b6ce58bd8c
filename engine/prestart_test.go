package engine

import (
	"context"
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
