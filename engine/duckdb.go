package engine

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"sync/atomic"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/duckdb/duckdb-go/v2/mapping"
)

// opened counts the databases Open made: tests check with it that commands
// running no SQL never pay for DuckDB's start.
var opened atomic.Int64

// Opened is how many DuckDB databases this process has opened.
func Opened() int64 { return opened.Load() }

// Open opens a DuckDB database at path ("" for in-memory). Each pooled
// connection gets the session settings rocklake relies on.
func Open(path string) (*sql.DB, error) {
	opened.Add(1)
	conn, err := duckdb.NewConnector(path, func(ex driver.ExecerContext) error {
		_, err := ex.ExecContext(context.Background(), "SET TimeZone = 'UTC'", nil)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("open duckdb %q: %w", path, err)
	}
	return sql.OpenDB(conn), nil
}

// DuckDBVersion returns the version of the linked DuckDB library (what
// SELECT version() answers). It asks the library, not a database: opening
// one costs a process more than the rest of its start-up together.
func DuckDBVersion() string { return mapping.LibraryVersion() }
