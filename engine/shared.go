package engine

import (
	"context"
	"fmt"
	"sync"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/rocklake/rocklake/catalog"
)

// An engine's DuckDB shared with packages that run SQL of their own on it
// (package maintain): they read a table's files exactly as queries read
// them, so that what they write and check is what queries see.

// Catalog is the catalog the engine reads.
func (e *Engine) Catalog() *catalog.Catalog { return e.cat }

// StagingDir is where package maintain stages files DuckDB must read
// back: the sandbox's temporary directory, which a sandboxed DuckDB may
// read, or "" (the system's) for an engine without one.
func (e *Engine) StagingDir() string {
	if e.sandbox != nil {
		return e.sandbox.TempDir
	}
	return ""
}

// DuckPath is a path DuckDB opens as exactly the file at path, whatever
// glob characters its name holds. It stays valid while the engine is open.
func (e *Engine) DuckPath(path string) string { return duckPath(path) }

// ReadFilesSQL is a SELECT of table t's top-level columns, cast to its
// types, over files, matching their columns by name: the table as queries
// read it. It stays valid while the engine is open.
func (e *Engine) ReadFilesSQL(t catalog.Table, cols []catalog.Column, files []string) string {
	return viewSQL(t, cols, files, "", true, nil)
}

type udfOnce struct {
	once sync.Once
	err  error
}

// RegisterScalarUDF registers a scalar function in the engine's DuckDB
// once per name: the function lives in the database's shared catalog, and
// registering it concurrently from two connections fails.
func (e *Engine) RegisterScalarUDF(ctx context.Context, name string, fn duckdb.ScalarFunc) error {
	v, _ := e.udfs.LoadOrStore(name, &udfOnce{})
	u := v.(*udfOnce)
	u.once.Do(func() {
		// Not cancelled with ctx: a failure here is kept for the engine's
		// life.
		conn, err := e.db.Conn(context.WithoutCancel(ctx))
		if err != nil {
			u.err = err
			return
		}
		defer conn.Close()
		u.err = duckdb.RegisterScalarUDF(conn, name, fn)
	})
	if u.err != nil {
		return fmt.Errorf("registering %s: %w", name, u.err)
	}
	return nil
}
