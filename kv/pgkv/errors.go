package pgkv

import (
	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// locError is a failure to reach or log in to a database, told in one
// line that names the database without its password. It wraps pgx's
// error, so callers still find the SQLSTATE with errors.As.
type locError struct {
	msg string
	err error
}

func (e *locError) Error() string { return e.msg }
func (e *locError) Unwrap() error { return e.err }

// connectError explains the usual ways a first connection fails, each
// with what to do about it. pgx's own text names every host it tried, on
// lines of their own; a command's error is one line, so the rest is
// flattened.
func connectError(name string, err error) error {
	var pe *pgconn.PgError
	var msg string
	switch {
	case errors.As(err, &pe) && pe.Code == "28P01":
		msg = fmt.Sprintf("%s (SQLSTATE %s); check the password given in the URL, PGPASSWORD or ~/.pgpass", pe.Message, pe.Code)
	case errors.As(err, &pe) && pe.Code == "3D000":
		msg = fmt.Sprintf("%s (SQLSTATE %s); create it first (createdb, or CREATE DATABASE)", pe.Message, pe.Code)
	case errors.As(err, &pe) && strings.HasPrefix(pe.Code, "28"):
		msg = fmt.Sprintf("the server refused the login: %s (SQLSTATE %s)", pe.Message, pe.Code)
	case errors.Is(err, syscall.ECONNREFUSED):
		msg = "the server refused the connection; is PostgreSQL running and listening at that address?"
	default:
		msg = oneLine(err.Error())
	}
	return &locError{msg: fmt.Sprintf("catalog %s: %s", name, msg), err: err}
}

// oneLine joins the lines of a message, dropping repeats (pgx tries a
// host twice when sslmode allows both, and reports both failures).
func oneLine(s string) string {
	var out []string
	seen := map[string]bool{}
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || seen[l] {
			continue
		}
		seen[l] = true
		out = append(out, l)
	}
	return strings.Join(out, " ")
}

// schemaError says what a refused CREATE SCHEMA or CREATE TABLE needs.
func schemaError(schema string, err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42501" {
		return fmt.Errorf("%w; creating the catalog needs a role that may create the schema %s in the database, or a schema it may create tables in (search_path=NAME in the URL)", err, schema)
	}
	return err
}
