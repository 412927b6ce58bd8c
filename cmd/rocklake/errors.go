package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"strings"
	"syscall"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/interop/ducklake"
	"github.com/rocklake/rocklake/kv"
	"github.com/rocklake/rocklake/kv/pgkv"
	"github.com/rocklake/rocklake/maintain"
	"github.com/rocklake/rocklake/pqmeta"
)

// Error codes of --format json, one per kind of failure a script may act
// on differently. They are part of the output contract: a code is never
// renamed, only added.
const (
	codeUsage       = "usage"        // the command line is wrong (exit 2)
	codeCheckFailed = "check_failed" // verify found problems (exit 3)
	codeInterrupted = "interrupted"  // SIGINT or SIGTERM (exit 130)
	codeNotFound    = "not_found"    // no such table, column, snapshot, file or catalog
	codeExists      = "exists"       // the catalog, table or file is there already
	codeConflict    = "conflict"     // another writer committed first; retrying may succeed
	codeLocked      = "locked"       // another process holds the catalog
	codeInvalid     = "invalid"      // input the command refuses: a file that does not fit, a bad column list
	codeDataChanged = "data_changed" // a registered data file is missing or was replaced
	codeCorrupt     = "corrupt"      // the catalog's store is damaged
	codeUnavailable = "unavailable"  // the catalog's database does not answer
	codeIO          = "io"           // reading or writing a file failed (a full disk included)
	codeQuery       = "query"        // DuckDB refused or failed the SQL
	codeError       = "error"        // anything else
)

// errorCode names err's kind for --format json. The first match wins, so
// the specific kinds come before the ones they may wrap (a missing data
// file is data_changed, not io).
func errorCode(err error) string {
	var ue usageError
	var vf errVerifyFailed
	var nf errNotErased
	var de *duckdb.Error
	var pe *fs.PathError
	var ne *net.OpError // not net.Error: *fs.PathError has its methods too
	is := func(targets ...error) bool {
		for _, t := range targets {
			if errors.Is(err, t) {
				return true
			}
		}
		return false
	}
	switch {
	case errors.As(err, &ue):
		return codeUsage
	case errors.As(err, &vf), errors.As(err, &nf):
		return codeCheckFailed
	case is(errInterrupted, context.Canceled):
		return codeInterrupted
	case is(engine.ErrDataFileChanged):
		return codeDataChanged
	case is(catalog.ErrConflict, kv.ErrConditionFailed):
		return codeConflict
	case is(catalog.ErrLocked, kv.ErrLocked):
		return codeLocked
	case is(catalog.ErrCorrupt, kv.ErrCorrupt, catalog.ErrLostSnapshot, catalog.ErrPartialCopy):
		return codeCorrupt
	case is(kv.ErrUnavailable, kv.ErrUnknownOutcome, syscall.ECONNREFUSED) || errors.As(err, &ne):
		return codeUnavailable
	case is(catalog.ErrNoSuchTable, catalog.ErrNoSuchSnapshot, catalog.ErrNoSuchColumn, catalog.ErrNoSuchFile,
		catalog.ErrNotCatalog, pgkv.ErrNoStore):
		return codeNotFound
	case is(catalog.ErrExists, catalog.ErrDuplicate, ducklake.ErrExists):
		return codeExists
	case is(catalog.ErrInvalid, catalog.ErrOutsideRoot, catalog.ErrRetentionTooShort, ingest.ErrSchemaMismatch,
		pqmeta.ErrNotParquet, pqmeta.ErrTruncated, pqmeta.ErrCorruptFooter, pqmeta.ErrNotRegular,
		maintain.ErrNothingToOptimize, maintain.ErrRewriteMismatch, pgkv.ErrForeign, engine.ErrNotAQuery,
		ducklake.ErrNotDuckLake, ducklake.ErrVersion, ducklake.ErrUnsupported):
		return codeInvalid
	case errors.As(err, &de):
		return codeQuery
	case is(fs.ErrNotExist):
		return codeNotFound
	case is(kv.ErrNoSpace, kv.ErrReadOnly, syscall.ENOSPC, syscall.EIO, fs.ErrPermission) || errors.As(err, &pe):
		return codeIO
	}
	return codeError
}

// errorJSON is what --format json prints on stderr when a command fails.
type errorJSON struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// reportError prints a failed command's error on w: one "rocklake: ..."
// line (more only when the message lists several files), or in JSON mode
// one JSON object. Any catalog location among args has its password
// masked, wherever a message repeats it.
func reportError(w io.Writer, err error, jsonMode bool, args []string) {
	var fe forwardedExit
	if errors.As(err, &fe) { // the server's report is printed already
		return
	}
	msg := redactArgs(err.Error(), args)
	if !jsonMode {
		var vf errVerifyFailed
		if errors.As(err, &vf) { // verify printed its own report
			return
		}
		fmt.Fprintln(w, "rocklake:", msg)
		return
	}
	var out errorJSON
	out.Error.Code, out.Error.Message = errorCode(err), msg
	b, _ := marshalJSON(out, "", "") // one line: a script reads stderr line by line
	fmt.Fprintf(w, "%s\n", b)
}

// redactArgs masks the password of every PostgreSQL location among args
// where msg repeats it (a driver's message may quote the location it was
// given).
func redactArgs(msg string, args []string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--catalog="); ok {
			a = v
		}
		if pgkv.IsLocation(a) {
			if r := pgkv.Redact(a); r != a {
				msg = strings.ReplaceAll(msg, a, r)
			}
		}
	}
	return msg
}

// jsonRequested reports whether the command line asked for --format json:
// the flag's parsed value, or, when cobra stopped before parsing it (an
// unknown flag earlier on the line), the last --format the line gives.
func jsonRequested(parsed string, args []string) bool {
	if parsed == formatJSON {
		return true
	}
	last := ""
	for i, a := range args {
		if a == "--" {
			break
		}
		if v, ok := strings.CutPrefix(a, "--format="); ok {
			last = v
		} else if a == "--format" && i+1 < len(args) {
			last = args[i+1]
		}
	}
	return last == formatJSON
}

// noText wraps a sentinel error so that errors.Is finds it (and --format
// json gives its code) without adding its text to a message that already
// says it.
type noText struct{ err error }

func (e noText) Error() string { return "" }
func (e noText) Unwrap() error { return e.err }
