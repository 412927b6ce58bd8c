package server

import (
	"context"
	"errors"
	"io/fs"
	"strings"

	"github.com/rocklake/rocklake"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/internal/writesql"
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
	var qe *engine.QueryError
	if errors.As(err, &qe) {
		// The client quotes the line at the position itself (psql's
		// LINE 1: ...): the message is DuckDB's without rocklake's quote.
		msg = strings.Replace(msg, qe.Error(), qe.Message, 1)
	}
	code := "XX000"
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		code, msg = "57014", "canceling statement due to user request"
	case errors.Is(err, rocklake.ErrNotAQuery):
		code = "25006" // read_only_sql_transaction: what PostgreSQL says to a write on a read-only server
	case errors.Is(err, rocklake.ErrNoSuchTable):
		code = "42P01"
	case errors.Is(err, rocklake.ErrDuplicate):
		code = "42P07" // duplicate_table: CREATE TABLE of a name taken
	case errors.Is(err, writesql.ErrUnsupported):
		code = "0A000" // feature_not_supported
	case errors.Is(err, rocklake.ErrConflict):
		code, msg = "40001", msg+" (another commit changed the table meanwhile; run the statement again)"
	case errors.Is(err, rocklake.ErrReadOnly):
		code = "25006"
	case errors.Is(err, rocklake.ErrBusy):
		code = "53300" // too_many_connections: open write blocks hold the catalog's
	case errors.Is(err, fs.ErrNotExist):
		code = "58P01" // undefined_file: COPY's file
	case errors.Is(err, rocklake.ErrNoSuchColumn):
		code = "42703"
	case errors.Is(err, rocklake.ErrRowMatchedTwice):
		code = "21000" // cardinality_violation, as PostgreSQL's MERGE says
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
				switch {
				case c.prefix == "Catalog Error" && !strings.Contains(msg, "Table with name"):
					code = "42883" // a function or type
				case c.prefix == "Binder Error" && strings.Contains(msg, "No function matches"):
					code = "42883" // undefined_function: no function of these argument types
				case c.prefix == "Binder Error" && strings.Contains(msg, "Could not choose a best candidate function"):
					code = "42725" // ambiguous_function
				case c.prefix == "Binder Error" && strings.Contains(msg, "values were supplied"):
					code = "42601" // PostgreSQL's "INSERT has more expressions than target columns"
				case c.prefix == "Conversion Error" && strings.Contains(msg, "out of range"):
					code = "22003" // numeric_value_out_of_range
				case c.prefix == "Constraint Error" && strings.Contains(msg, "NOT NULL"):
					code = "23502" // not_null_violation
				case c.prefix == "Invalid Input Error" && (strings.Contains(msg, "CSV Error") || strings.Contains(msg, "Error when sniffing file")):
					code = "22P04" // bad_copy_file_format
				}
				break
			}
		}
	}
	return &pgError{code: code, msg: msg, query: qe}
}

var duckClasses = []struct{ prefix, code string }{
	{"Parser Error", "42601"},
	{"syntax error at or near", "42601"},
	{"syntax error at end", "42601"},
	{"Syntax Error", "42601"},
	{"Binder Error", "42703"},
	{"Catalog Error", "42P01"},
	{"Permission Error", "42501"},
	// invalid_text_representation: what PostgreSQL says of 'x'::int.
	{"Conversion Error", "22P02"},
	{"Constraint Error", "23000"},
	{"Out of Range Error", "22003"},
	{"Invalid Input Error", "22023"},
	{"Out of Memory Error", "53200"},
	{"INTERRUPT Error", "57014"},
	{"Interrupted", "57014"},
	{"Not implemented Error", "0A000"},
	{"Invalid type Error", "42804"},
}
