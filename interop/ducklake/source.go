package ducklake

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	_ "modernc.org/sqlite"             // database/sql driver "sqlite", pure Go

	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/kv/pgkv"
)

// ErrNotDuckLake reports a source that holds no DuckLake catalog.
var ErrNotDuckLake = errors.New("not a DuckLake catalog")

// ErrVersion reports a DuckLake catalog of a version this package does not
// read.
var ErrVersion = errors.New("unsupported DuckLake version")

// ErrUnsupported reports DuckLake content rocklake cannot hold (row
// deletes, column changes, other schemas, encrypted files).
var ErrUnsupported = errors.New("cannot be imported")

// source is an open DuckLake metadata database.
type source struct {
	db *sql.DB
	// tx, once begun, is the one transaction every later read goes
	// through: the catalog as of one moment, though others keep writing.
	tx   *sql.Tx
	kind string // "duckdb", "sqlite" or "postgres"
	loc  string
	dir  string // the directory of a file source: relative data paths start there
}

// openSource opens a DuckLake catalog's metadata: a DuckDB database file
// (the extension's default store) or a SQLite one, read-only, or a
// PostgreSQL database (postgres:// URL or libpq keyword=value form; the
// catalog's tables are those in the connection's search_path).
func openSource(loc string) (*source, error) {
	if pgkv.IsLocation(loc) {
		db, err := sql.Open("pgx", loc)
		if err != nil {
			return nil, fmt.Errorf("DuckLake catalog %s: %w", pgkv.Redact(loc), err)
		}
		if err := db.PingContext(context.Background()); err != nil {
			db.Close()
			return nil, fmt.Errorf("DuckLake catalog %s: %w", pgkv.Redact(loc), err)
		}
		return &source{db: db, kind: "postgres", loc: pgkv.Redact(loc)}, nil
	}
	st, err := os.Stat(loc)
	if err != nil {
		return nil, fmt.Errorf("DuckLake catalog %s: %w", loc, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("DuckLake catalog %s: %w: not a regular file", loc, ErrNotDuckLake)
	}
	head := make([]byte, 16)
	f, err := os.Open(loc)
	if err != nil {
		return nil, err
	}
	_, err = io.ReadFull(f, head)
	f.Close()
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, fmt.Errorf("DuckLake catalog %s: %w", loc, err)
	}
	abs, err := filepath.Abs(loc)
	if err != nil {
		return nil, err
	}
	switch {
	case bytes.Equal(head[8:12], []byte("DUCK")):
		// DuckDB's file header: a checksum, then the magic bytes.
		db, err := engine.Open(abs + "?access_mode=read_only")
		if err != nil {
			return nil, err
		}
		return &source{db: db, kind: "duckdb", loc: loc, dir: filepath.Dir(abs)}, nil
	case bytes.HasPrefix(head, []byte("SQLite format 3\x00")):
		db, err := sql.Open("sqlite", "file:"+abs+"?mode=ro")
		if err != nil {
			return nil, err
		}
		return &source{db: db, kind: "sqlite", loc: loc, dir: filepath.Dir(abs)}, nil
	}
	return nil, fmt.Errorf("DuckLake catalog %s: %w: neither a DuckDB nor a SQLite database file", loc, ErrNotDuckLake)
}

func (s *source) Close() error {
	if s.tx != nil {
		s.tx.Rollback()
	}
	return s.db.Close()
}

// begin starts the transaction later reads share. PostgreSQL gives it a
// snapshot with REPEATABLE READ; SQLite holds one from a transaction's
// first read; a DuckDB file opened read-only has no other writer.
func (s *source) begin(ctx context.Context) error {
	var opts *sql.TxOptions
	if s.kind == "postgres" {
		opts = &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}
	}
	tx, err := s.db.BeginTx(ctx, opts)
	if err != nil {
		return fmt.Errorf("DuckLake catalog %s: %w", s.loc, err)
	}
	s.tx = tx
	return nil
}

func (s *source) queryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if s.tx != nil {
		return s.tx.QueryContext(ctx, q, args...)
	}
	return s.db.QueryContext(ctx, q, args...)
}

// tableNames lists the source's tables whose names start with prefix.
func (s *source) tableNames(ctx context.Context, prefix string) ([]string, error) {
	var q string
	switch s.kind {
	case "sqlite":
		q = `SELECT name FROM sqlite_master WHERE type = 'table' AND substr(name, 1, length(?1)) = ?1 ORDER BY name`
	case "postgres":
		q = `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND left(table_name, length($1)) = $1 ORDER BY table_name`
	default:
		q = `SELECT table_name FROM information_schema.tables WHERE starts_with(table_name, ?) ORDER BY table_name`
	}
	rows, err := s.queryContext(ctx, q, prefix)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// query runs q and calls fn with each row's scanner.
func (s *source) query(ctx context.Context, q string, fn func(scan func(...any) error) error) error {
	rows, err := s.queryContext(ctx, q)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows.Scan); err != nil {
			return err
		}
	}
	return rows.Err()
}

// quoteIdent quotes a table name for the source's SQL.
func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
