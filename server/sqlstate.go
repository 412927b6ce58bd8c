package server

import (
	"context"
	"errors"
	"strings"

	"github.com/rocklake/rocklake"
)

// toPGError gives an error its SQLSTATE: rocklake's own errors by their
// sentinels, DuckDB's by the class its message starts with (DuckDB has no
// codes of its own), anything else XX000.
func toPGError(err error) *pgError {
	var pe *pgError
	if errors.As(err, &pe) {
		return pe
	}
	msg := err.Error()
	code := "XX000"
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		code, msg = "57014", "canceling statement due to user request"
	case errors.Is(err, rocklake.ErrNotAQuery):
		code = "25006" // read_only_sql_transaction: what PostgreSQL says to a write on a read-only server
	case errors.Is(err, rocklake.ErrNoSuchTable):
		code = "42P01"
	case errors.Is(err, rocklake.ErrNoSuchColumn):
		code = "42703"
	case errors.Is(err, rocklake.ErrNoSuchSnapshot):
		code = "22023"
	case errors.Is(err, rocklake.ErrDataFileChanged):
		code = "58030"
	case errors.Is(err, rocklake.ErrOutsideReadDirs):
		code = "42501"
	case errors.Is(err, rocklake.ErrCorrupt):
		code = "XX001"
	default:
		for _, c := range duckClasses {
			if strings.Contains(msg, c.prefix) {
				code = c.code
				if c.prefix == "Catalog Error" && !strings.Contains(msg, "Table with name") {
					code = "42883" // a function or type
				}
				break
			}
		}
	}
	return &pgError{code: code, msg: msg}
}

var duckClasses = []struct{ prefix, code string }{
	{"Parser Error", "42601"},
	{"syntax error at or near", "42601"},
	{"Syntax Error", "42601"},
	{"Binder Error", "42703"},
	{"Catalog Error", "42P01"},
	{"Permission Error", "42501"},
	{"Conversion Error", "22018"},
	{"Out of Range Error", "22003"},
	{"Invalid Input Error", "22023"},
	{"Out of Memory Error", "53200"},
	{"INTERRUPT Error", "57014"},
	{"Interrupted", "57014"},
	{"Not implemented Error", "0A000"},
	{"Invalid type Error", "42804"},
}
