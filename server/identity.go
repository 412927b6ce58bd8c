package server

import (
	"context"
	"database/sql/driver"
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
)

// The session's identity as PostgreSQL's functions give it: version(),
// current_database(), current_user (session_user, user, current_role),
// current_setting(name), pg_backend_pid(), pg_cancel_backend(pid) and
// pg_terminate_backend(pid), anywhere in a query.
//
// They are DuckDB scalar functions registered once in the lake's engine
// (replacing DuckDB's of the same name and signature; DuckDB's
// current_user and current_setting are replaced by macros in main
// calling rocklake_session_user() and rocklake_setting(name)), and each reads the calling session from the
// query's context, which duckdb-go hands a function run by that query.
// The engine's connections are pooled and shared by every session, so
// the session cannot be a property of a connection (SET VARIABLE on it
// would need setting and resetting around each query, and getvariable is
// refused to clients for that reason); nor is it written into the query's
// text, which would need the parse tree rewritten. A query run without a
// session (the HTTP API) gets DuckDB-neutral answers: NULL for the user
// and the pid.

// serverVersion is the PostgreSQL version the server speaks as: announced
// as server_version at startup and shown by SHOW and current_setting.
const (
	serverVersion    = "15.0"
	serverVersionNum = "150000"
)

type sessionKey struct{}

func sessionOf(ctx context.Context) *pgSession {
	ss, _ := ctx.Value(sessionKey{}).(*pgSession)
	return ss
}

// versionString is version()'s answer: drivers parse the leading
// "PostgreSQL X.Y".
func versionString(rocklakeVersion string) string {
	if rocklakeVersion == "" {
		rocklakeVersion = "dev"
	}
	arch := map[string]string{"amd64": "x86_64", "arm64": "aarch64", "386": "i686"}[runtime.GOARCH]
	if arch == "" {
		arch = runtime.GOARCH
	}
	osName := map[string]string{"linux": "pc-linux-gnu", "darwin": "apple-darwin", "windows": "pc-windows"}[runtime.GOOS]
	if osName == "" {
		osName = runtime.GOOS
	}
	return fmt.Sprintf("PostgreSQL %s (rocklake %s, DuckDB %s) on %s-%s, 64-bit", serverVersion, rocklakeVersion, engine.DuckDBVersion(), arch, osName)
}

// catalogName is current_database(): the catalog directory's base name,
// or the database a PostgreSQL catalog is kept in (its URL's path or
// dbname), else "rocklake".
func catalogName(c *catalog.Catalog) string {
	if d := c.Dir(); d != "" {
		if b := filepath.Base(filepath.Clean(d)); b != "." && b != string(filepath.Separator) {
			return b
		}
	}
	loc := c.Location()
	if u, err := url.Parse(loc); err == nil && u.Scheme != "" {
		if db := u.Query().Get("dbname"); db != "" {
			return db
		}
		if db := strings.Trim(u.Path, "/"); db != "" {
			return db
		}
	}
	for _, f := range strings.Fields(loc) {
		if v, ok := strings.CutPrefix(f, "dbname="); ok && v != "" {
			return strings.Trim(v, "'")
		}
	}
	return "rocklake"
}

var (
	typeVarchar = sync.OnceValue(func() duckdb.TypeInfo { t, _ := duckdb.NewTypeInfo(duckdb.TYPE_VARCHAR); return t })
	typeInteger = sync.OnceValue(func() duckdb.TypeInfo { t, _ := duckdb.NewTypeInfo(duckdb.TYPE_INTEGER); return t })
	typeBoolean = sync.OnceValue(func() duckdb.TypeInfo { t, _ := duckdb.NewTypeInfo(duckdb.TYPE_BOOLEAN); return t })
)

// sessionFunc is a scalar function of the calling session.
type sessionFunc struct {
	in  []duckdb.TypeInfo
	out duckdb.TypeInfo
	fn  func(ss *pgSession, args []driver.Value) (any, error)
}

func (f *sessionFunc) Config() duckdb.ScalarFuncConfig {
	return duckdb.ScalarFuncConfig{InputTypeInfos: f.in, ResultTypeInfo: f.out, Volatile: true}
}

func (f *sessionFunc) Executor() duckdb.ScalarFuncExecutor {
	return duckdb.ScalarFuncExecutor{RowContextExecutor: func(ctx context.Context, args []driver.Value) (any, error) {
		return f.fn(sessionOf(ctx), args)
	}}
}

// functionRegistrar is where session functions go: the lake's engine
// (once per engine; every server on it registers the same ones), or the
// system catalogs' database (connRegistrar).
type functionRegistrar interface {
	RegisterScalarUDF(ctx context.Context, name string, fn duckdb.ScalarFunc) error
	RegisterClientFunction(ctx context.Context, name string, fn duckdb.ScalarFunc) error
	DefineClientMacro(ctx context.Context, name, params, body string) error
}

// registerSessionFunctions puts the session functions in e.
func (s *Server) registerSessionFunctions(ctx context.Context, e functionRegistrar) error {
	version := versionString(s.cfg.Version)
	dbName := catalogName(s.lake.Catalog())
	user := func(ss *pgSession, _ []driver.Value) (any, error) {
		if ss == nil {
			return nil, nil
		}
		return ss.user, nil
	}
	setting := func(ss *pgSession, args []driver.Value) (any, error) {
		name, _ := args[0].(string)
		if ss == nil {
			return nil, fmt.Errorf("unrecognized configuration parameter %q", name)
		}
		// The session's goroutine waits for the query meanwhile: its
		// settings do not change under this read.
		v, err := ss.show(strings.ToLower(name))
		if err != nil {
			return nil, ss.fnError(err)
		}
		return v, nil
	}
	signal := func(terminate bool) func(*pgSession, []driver.Value) (any, error) {
		return func(ss *pgSession, args []driver.Value) (any, error) {
			if ss == nil {
				return false, nil
			}
			pid, _ := args[0].(int32)
			return ss.s.signalBackend(ss, pid, terminate)
		}
	}
	funcs := []struct {
		name string
		f    *sessionFunc
	}{
		{"version", &sessionFunc{out: typeVarchar(), fn: func(ss *pgSession, _ []driver.Value) (any, error) {
			if ss != nil {
				return versionString(ss.s.cfg.Version), nil
			}
			return version, nil
		}}},
		{"current_database", &sessionFunc{out: typeVarchar(), fn: func(ss *pgSession, _ []driver.Value) (any, error) {
			if ss != nil {
				return ss.s.dbName, nil
			}
			return dbName, nil
		}}},
		{"pg_backend_pid", &sessionFunc{out: typeInteger(), fn: func(ss *pgSession, _ []driver.Value) (any, error) {
			if ss == nil {
				return nil, nil
			}
			return int32(ss.pid), nil
		}}},
		{"pg_cancel_backend", &sessionFunc{in: []duckdb.TypeInfo{typeInteger()}, out: typeBoolean(), fn: signal(false)}},
		{"pg_terminate_backend", &sessionFunc{in: []duckdb.TypeInfo{typeInteger()}, out: typeBoolean(), fn: signal(true)}},
	}
	for _, f := range funcs {
		if err := e.RegisterClientFunction(ctx, f.name, f.f); err != nil {
			return err
		}
	}
	// Called only by the macros below, not by clients by these names:
	// DuckDB's current_user is a macro, and its current_setting returns
	// ANY, which a function of ours would sit beside, not replace.
	if err := e.RegisterScalarUDF(ctx, "rocklake_session_user", &sessionFunc{out: typeVarchar(), fn: user}); err != nil {
		return err
	}
	if err := e.RegisterScalarUDF(ctx, "rocklake_setting", &sessionFunc{in: []duckdb.TypeInfo{typeVarchar()}, out: typeVarchar(), fn: setting}); err != nil {
		return err
	}
	for _, m := range []string{"current_user", "session_user", "current_role"} {
		if err := e.DefineClientMacro(ctx, m, "", "rocklake_session_user()"); err != nil {
			return err
		}
	}
	if err := e.DefineClientMacro(ctx, "current_setting", "name", "rocklake_setting(name)"); err != nil {
		return err
	}
	return nil
}

// fnError keeps the error a session function gives for the statement's
// answer: DuckDB passes on only its text, in a message of its own.
func (ss *pgSession) fnError(err error) error {
	pe := toPGError(err)
	ss.mu.Lock()
	if ss.fnErr == nil {
		ss.fnErr = pe
	}
	ss.mu.Unlock()
	return pe
}

// notice queues a notice a session function gives, sent once the
// statement's engine call returns.
func (ss *pgSession) notice(severity, code, msg string) {
	ss.mu.Lock()
	ss.notices = append(ss.notices, &pgproto3.NoticeResponse{Severity: severity, SeverityUnlocalized: severity, Code: code, Message: msg})
	ss.mu.Unlock()
}

// afterEngine sends the notices the statement's session functions gave
// and puts the error one of them gave in place of DuckDB's text of it.
func (ss *pgSession) afterEngine(err error) error {
	ss.mu.Lock()
	notices, fe := ss.notices, ss.fnErr
	ss.notices, ss.fnErr = nil, nil
	ss.mu.Unlock()
	for _, n := range notices {
		ss.be.Send(n)
	}
	if err != nil && fe != nil {
		return fe
	}
	return err
}

// signalBackend is pg_cancel_backend and pg_terminate_backend: a session
// may signal its user's sessions (its own included). rocklake's roles
// (reader, writer) have no admin among them, so no session may signal
// another user's; PostgreSQL refuses that with 42501 too.
func (s *Server) signalBackend(caller *pgSession, pid int32, terminate bool) (any, error) {
	s.mu.Lock()
	target := s.sessions[uint32(pid)]
	s.mu.Unlock()
	if target == nil || pid <= 0 {
		caller.notice("WARNING", "00000", fmt.Sprintf("PID %d is not a rocklake backend process", pid))
		return false, nil
	}
	if target.user != caller.user {
		what := "cancel query"
		if terminate {
			what = "terminate process"
		}
		return nil, caller.fnError(&pgError{code: "42501", msg: "permission denied to " + what,
			hint: fmt.Sprintf("a session may signal only the sessions of its own user (%q); rocklake has no role that may signal others'", caller.user)})
	}
	if terminate {
		target.terminate()
	} else {
		target.cancelQuery()
		s.m.cancels.Inc()
	}
	return true, nil
}

// cancelQuery cancels the query the session runs, if any (CancelRequest,
// pg_cancel_backend), and hurries its writes (see cancelGrace).
func (ss *pgSession) cancelQuery() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.running != nil {
		ss.running()
	}
	// The query's context does not reach a write blocked on a client that
	// does not read.
	if ss.busy {
		ss.w.cancel()
	}
}

// terminate ends the session (pg_terminate_backend): its query is
// cancelled and its connection closed.
func (ss *pgSession) terminate() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.closing = true
	if ss.running != nil {
		ss.running()
	}
	ss.conn.Close()
}

// identityColumn matches DuckDB's name for an unaliased call of a
// function PostgreSQL names by the function alone ("version"() → version).
var identityColumn = regexp.MustCompile(`^"?(version|current_database|current_schema|current_setting|pg_backend_pid|pg_cancel_backend|pg_terminate_backend)"?\(.*\)$`)

// pgColumnName is the name PostgreSQL gives an answer column DuckDB named.
func pgColumnName(name string) string {
	if m := identityColumn.FindStringSubmatch(name); m != nil {
		return m[1]
	}
	return name
}
