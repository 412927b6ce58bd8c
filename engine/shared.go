package engine

import (
	"context"
	"database/sql"
	"fmt"
	"sync"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/prune"
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

// Target names the catalog table reference a statement changes (DELETE,
// UPDATE, run by package maintain): the one whose name starts at byte At
// of the query's text. QueryTarget plans and prunes it as any reference,
// but makes no view of it: the query text names Name (a temporary table
// the caller fills from the kept files) in its place, aliased as the
// reference was, so that the statement's conditions read the caller's
// rows and every other table its views.
type Target struct {
	At   int
	Name string
}

// TargetFunc runs a statement over a planned query (QueryTarget): views
// and query as IntoFunc's, and kept, the target's files pruning kept (in
// the plan's order, whole: their row ranges are not applied).
type TargetFunc func(ctx context.Context, conn *sql.Conn, views, query string, kept []prune.KeptFile) error

type targetSpec struct {
	Target
	run   TargetFunc
	plan  *prune.Plan
	table catalog.Table
}

// QueryTarget is QueryInto for a statement that changes the rows of one
// table: the reference target names is pruned by the query's conditions
// on it and handed to run as its kept files, which run reads itself. The
// caller checks that the kept files are still the files registered
// (CheckFile), as it reads them.
func (e *Engine) QueryTarget(ctx context.Context, query string, target Target, opts QueryOptions, run TargetFunc) (*Result, error) {
	opts.target = &targetSpec{Target: target, run: run}
	opts.NoMetadataAnswers, opts.Explain, opts.noSplit = true, false, true
	res, _, err := e.queryOnce(ctx, query, opts, nil)
	return res, virtualColumnHint(err)
}
