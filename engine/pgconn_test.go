package engine

import (
	"context"
	"database/sql/driver"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/internal/pgtest"
	"github.com/rocklake/rocklake/kv/pgkv"
)

// gateUDF is a scalar function that waits until its gate opens: a query
// calling it stays in DuckDB for as long as the test wants.
type gateUDF struct {
	entered *atomic.Int64 // calls waiting
	gate    chan struct{}
}

func (g gateUDF) Config() duckdb.ScalarFuncConfig {
	i64, _ := duckdb.NewTypeInfo(duckdb.TYPE_BIGINT)
	return duckdb.ScalarFuncConfig{InputTypeInfos: []duckdb.TypeInfo{i64}, ResultTypeInfo: i64, Volatile: true}
}

func (g gateUDF) Executor() duckdb.ScalarFuncExecutor {
	return duckdb.ScalarFuncExecutor{RowExecutor: func(values []driver.Value) (any, error) {
		g.entered.Add(1)
		<-g.gate
		return values[0], nil
	}}
}

// While DuckDB runs a query, the query holds no connection of a catalog
// in PostgreSQL: with a pool of six connections, six queries kept running
// in DuckDB (a function that waits) leave the catalog free for a reader
// and a commit. Before, each query's snapshot held a connection until the
// query ended, and the next caller waited out the pool's timeout.
func TestQueriesHoldNoCatalogConnectionWhileDuckDBRuns(t *testing.T) {
	url := pgtest.URL(t)
	dir := t.TempDir()
	db, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	p := filepath.Join(dir, "a.parquet")
	if _, err := db.Exec(fmt.Sprintf("COPY (SELECT range AS x FROM range(100)) TO '%s' (FORMAT parquet)", p)); err != nil {
		t.Fatal(err)
	}
	c, err := catalog.Create(url, catalog.Options{Postgres: pgkv.Options{MaxConns: 6, Timeout: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := ingest.Add(c, "t", []string{p}, ingest.Options{Create: true}); err != nil {
		t.Fatal(err)
	}
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	g := gateUDF{entered: &atomic.Int64{}, gate: make(chan struct{})}
	ctx := context.Background()
	if err := e.RegisterScalarUDF(ctx, "wait_for_gate", g); err != nil {
		t.Fatal(err)
	}
	const running = 6
	errs := make(chan error, running)
	for range running {
		go func() {
			_, err := e.Query(ctx, "SELECT sum(wait_for_gate(x)) FROM t WHERE x >= 0", QueryOptions{Snapshot: catalog.Latest})
			errs <- err
		}()
	}
	for deadline := time.Now().Add(time.Minute); g.entered.Load() < running; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			close(g.gate)
			t.Fatalf("%d of %d queries reached DuckDB's function", g.entered.Load(), running)
		}
	}
	r, err := c.Read(catalog.Latest)
	if err != nil {
		close(g.gate)
		t.Fatalf("a catalog read while queries run in DuckDB: %v", err)
	}
	if _, err := r.Tables(); err != nil {
		close(g.gate)
		t.Fatalf("a catalog read while queries run in DuckDB: %v", err)
	}
	r.Close()
	tx, err := c.Begin()
	if err == nil {
		tx.CreateTable("u", []catalog.ColumnDef{{Name: "y", Type: "bigint"}})
		_, err = tx.Commit()
	}
	close(g.gate)
	if err != nil {
		t.Fatalf("a commit while queries run in DuckDB: %v", err)
	}
	for range running {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
