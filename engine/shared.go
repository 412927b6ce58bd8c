package engine

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
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
	if err := e.onceOnConn(ctx, name, func(conn *sql.Conn) error { return duckdb.RegisterScalarUDF(conn, name, fn) }); err != nil {
		return fmt.Errorf("registering %s: %w", name, err)
	}
	return nil
}

// onceOnConn runs do once per key for the engine's life, on a connection
// of its own; every later call returns the first one's error. The
// database's catalog is shared: what do defines is there for every
// connection.
func (e *Engine) onceOnConn(ctx context.Context, key string, do func(*sql.Conn) error) error {
	v, _ := e.udfs.LoadOrStore(key, &udfOnce{})
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
		u.err = do(conn)
	})
	return u.err
}

// RegisterClientFunction registers fn as RegisterScalarUDF does and lets
// a sandboxed engine's clients call it by name: the census refuses names
// it lacks or refuses, and a function registered for clients is one its
// registrant vouches for (package server's session functions, which read
// the calling session from the query's context). A function of a name
// and signature DuckDB has replaces DuckDB's, for every connection.
func (e *Engine) RegisterClientFunction(ctx context.Context, name string, fn duckdb.ScalarFunc) error {
	if err := e.RegisterScalarUDF(ctx, name, fn); err != nil {
		return err
	}
	e.clientFuncs.Store(strings.ToLower(name), true)
	return nil
}

// DefineClientMacro defines a scalar macro name(params) AS body in the
// database's main schema, once per name, and lets clients call it. DuckDB
// looks a function up in main before its built-in ones, so a macro of a
// built-in's name replaces it for every connection: DuckDB's current_user
// is a macro, which a scalar function cannot replace. The body is the
// caller's SQL, bound when a query calls the macro, not checked against
// the census: it may call functions clients may not.
func (e *Engine) DefineClientMacro(ctx context.Context, name, params, body string) error {
	err := e.onceOnConn(ctx, "macro "+name, func(conn *sql.Conn) error {
		_, err := conn.ExecContext(context.WithoutCancel(ctx), fmt.Sprintf("CREATE OR REPLACE MACRO main.%s(%s) AS %s", name, params, body))
		return err
	})
	if err != nil {
		return fmt.Errorf("defining %s: %w", name, err)
	}
	e.clientFuncs.Store(strings.ToLower(name), true)
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
