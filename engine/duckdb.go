package engine

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"

	"github.com/duckdb/duckdb-go/v2"
)

// Open opens a DuckDB database at path ("" for in-memory). Each pooled
// connection gets the session settings rocklake relies on.
func Open(path string) (*sql.DB, error) {
	conn, err := duckdb.NewConnector(path, func(ex driver.ExecerContext) error {
		_, err := ex.ExecContext(context.Background(), "SET TimeZone = 'UTC'", nil)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("open duckdb %q: %w", path, err)
	}
	return sql.OpenDB(conn), nil
}

// DuckDBVersion returns the version of the linked DuckDB library.
func DuckDBVersion() (string, error) {
	db, err := Open("")
	if err != nil {
		return "", err
	}
	defer db.Close()
	var v string
	if err := db.QueryRow("SELECT version()").Scan(&v); err != nil {
		return "", fmt.Errorf("duckdb version: %w", err)
	}
	return v, nil
}
