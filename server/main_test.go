package server_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rocklake/rocklake"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/internal/pgtest"
	"github.com/rocklake/rocklake/server"
	"github.com/rocklake/rocklake/storage"
)

// fixture is a lake of one table, "t", of three files (ids 0-99, 100-199,
// 200-299) written by DuckDB, served on loopback ports the system chose.
type fixture struct {
	dir, data string
	lake      *rocklake.Lake
	srv       *server.Server
	cfg       server.Config
	done      chan error
}

// tColumns are t's columns, made by DuckDB with NULLs, NaN and values
// that print differently in PostgreSQL.
const tColumns = `i AS id,
	TIMESTAMPTZ '2024-01-01 00:00:00+00' + to_minutes(i) AS ts,
	'n' || i AS name,
	CASE WHEN i % 7 = 0 THEN NULL ELSE (i * 1.25)::DECIMAL(10,2) END AS amount,
	CASE WHEN i % 50 = 0 THEN 'nan'::DOUBLE ELSE i / 4 END AS score,
	('00000000-0000-0000-0000-' || lpad(i::VARCHAR, 12, '0'))::UUID AS uid,
	encode('b' || i) AS raw,
	[i, i + 1] AS pair,
	i % 2 = 0 AS even,
	DATE '2024-01-01' + i::INTEGER AS day,
	i::HUGEINT * 1000000000000000000 AS big,
	to_months(i % 14) AS span`

func writeFile(t *testing.T, db *sql.DB, path string, from, to int) {
	t.Helper()
	q := "COPY (SELECT " + tColumns + " FROM range(" + itoa(from) + ", " + itoa(to) + ") r(i)) TO '" + path + "' (FORMAT parquet)"
	if _, err := db.Exec(q); err != nil {
		t.Fatalf("writing %s: %v", path, err)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func newFixture(t *testing.T, cfg server.Config) *fixture {
	t.Helper()
	return newFixtureAt(t, cfg, "")
}

// newFixtureAt makes the fixture's catalog at loc (a PostgreSQL URL), or
// in a directory of its own when loc is empty.
func newFixtureAt(t *testing.T, cfg server.Config, loc string) *fixture {
	t.Helper()
	f := &fixture{dir: t.TempDir()}
	f.data = filepath.Join(f.dir, "data")
	if err := os.MkdirAll(f.data, 0o755); err != nil {
		t.Fatal(err)
	}
	db, err := engine.Open("")
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for i := 0; i < 3; i++ {
		p := filepath.Join(f.data, "part"+itoa(i)+".parquet")
		writeFile(t, db, p, i*100, (i+1)*100)
		paths = append(paths, p)
	}
	db.Close()
	ctx := context.Background()
	if loc == "" {
		loc = filepath.Join(f.dir, "lake")
	}
	lake, err := rocklake.Create(ctx, loc, rocklake.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lake.Add(ctx, "t", paths, rocklake.AddOptions{Create: true}); err != nil {
		t.Fatal(err)
	}
	// Writes go under the catalog's rewrite root, which the sandboxed
	// DuckDB must reach (as `rocklake serve` gives it).
	dirs := []string{f.data}
	if root := lake.Catalog().RewriteRoot(); root != "" {
		dirs = append(dirs, root)
	}
	// And the object cache, where changes of objects read them.
	if c, err := storage.CacheFromEnv(); err == nil {
		dirs = append(dirs, c.Dir)
	}
	lake.Close()
	tmp := filepath.Join(f.dir, "tmp")
	os.MkdirAll(tmp, 0o755)
	cfg.Sandbox = &rocklake.Sandbox{Dirs: dirs, TempDir: tmp}
	if f.lake, err = rocklake.Open(ctx, loc, rocklake.OpenOptions{Sandbox: cfg.Sandbox}); err != nil {
		t.Fatal(err)
	}
	if cfg.PGListen == "" {
		cfg.PGListen = "127.0.0.1:0"
	}
	if cfg.HTTPListen == "" {
		cfg.HTTPListen = "127.0.0.1:0"
	}
	f.cfg = cfg
	if f.srv, err = server.New(f.lake, cfg); err != nil {
		f.lake.Close()
		t.Fatal(err)
	}
	f.done = make(chan error, 1)
	go func() { f.done <- f.srv.Serve() }()
	t.Cleanup(func() {
		f.srv.Shutdown(context.Background())
		if err := <-f.done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		f.lake.Close()
	})
	return f
}

// pgURL is a connection URL for user (password may be empty).
func (f *fixture) pgURL(user, password, sslmode string) string {
	u := url.URL{Scheme: "postgres", Host: f.srv.PGAddr().String(), Path: "/rocklake"}
	if password != "" {
		u.User = url.UserPassword(user, password)
	} else {
		u.User = url.User(user)
	}
	q := url.Values{"sslmode": {sslmode}, "connect_timeout": {"10"}}
	u.RawQuery = q.Encode()
	return u.String()
}

func (f *fixture) connect(t *testing.T, mode pgx.QueryExecMode) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(f.pgURL("tester", "", "disable"))
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

func psqlPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("psql")
	if err != nil {
		if os.Getenv("ROCKLAKE_REQUIRE_POSTGRES") != "" {
			t.Fatal("psql is not installed (Debian: postgresql-client)")
		}
		t.Skip("psql is not installed (Debian: postgresql-client)")
	}
	return p
}

func newConfig() server.Config { return server.Config{} }

// TestMain stops the PostgreSQL server the catalog-in-PostgreSQL test
// starts.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func openDuck(t *testing.T) *sql.DB {
	t.Helper()
	db, err := engine.Open("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func jsonMarshal(v any) ([]byte, error) { return json.MarshalIndent(v, "", "  ") }
