package engine

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/duckdb/duckdb-go/v2/mapping"

	"github.com/rocklake/rocklake/internal/pathgate"
)

// opened counts the databases Open made: tests check with it that commands
// running no SQL never pay for DuckDB's start.
var opened atomic.Int64

// Opened is how many DuckDB databases this process has opened.
func Opened() int64 { return opened.Load() }

// Open opens a DuckDB database at path ("" for in-memory). Each pooled
// connection gets the session settings rocklake relies on.
func Open(path string) (*sql.DB, error) {
	return openDB(path, nil)
}

// Sandbox locks a DuckDB down for SQL that comes from clients rocklake
// does not trust (a server's): DuckDB may read files only under Dirs, may
// not write files elsewhere, install or load extensions from disk, or read
// secrets, and no statement may change a setting afterwards. rocklake
// itself still refuses every statement that is not a query (ErrNotAQuery),
// which is what keeps COPY ... TO and ATTACH out of Dirs too: DuckDB's
// lockdown allows both inside them.
type Sandbox struct {
	// Dirs are the directories whose files queries may read: the data
	// files' and the object cache's. Only files under them may be
	// registered through a Lake opened with the sandbox (ReadDirs).
	Dirs []string
	// TempDir is where DuckDB spills what does not fit in memory; it is
	// added to the readable directories. Empty: no spilling.
	TempDir string
	// MemoryLimit is DuckDB's memory_limit ("4GB"); empty keeps DuckDB's
	// default (80% of the machine's memory).
	MemoryLimit string
}

// DefaultMemoryLimit is the memory_limit DuckDB takes when none is set
// (80% of the memory the machine, or its cgroup, allows), as DuckDB
// writes it ("18.8 GiB"): a server dividing its memory between DuckDB
// and its own buffers needs the whole before it opens its database.
func DefaultMemoryLimit() (string, error) {
	db, err := Open("")
	if err != nil {
		return "", err
	}
	defer db.Close()
	var s string
	if err := db.QueryRow("SELECT current_setting('memory_limit')").Scan(&s); err != nil {
		return "", fmt.Errorf("DuckDB's memory limit: %w", err)
	}
	return s, nil
}

// ReadDirs are the directories files may be registered from: Dirs, each
// also as resolved (the gate ingest checks resolved paths against).
func (s *Sandbox) ReadDirs() []string {
	if s == nil {
		return nil
	}
	return pathgate.New(s.Dirs).Dirs()
}

// statements are the settings that lock a database down, in order:
// allowed_directories and temp_directory must be set while external
// access is still on, and lock_configuration last.
func (s *Sandbox) statements() []string {
	var dirs []string
	// Each directory as written and as resolved (pathgate): DuckDB
	// compares prefixes without following links, and rocklake registers
	// files by their resolved paths.
	for _, d := range pathgate.New(append(slices.Clone(s.Dirs), s.TempDir)).Dirs() {
		// DuckDB matches allowed directories as path prefixes: without the
		// trailing separator /data would allow /data2.
		dirs = append(dirs, sqlString(strings.TrimSuffix(d, string(filepath.Separator))+string(filepath.Separator)))
	}
	out := []string{"SET GLOBAL TimeZone = 'UTC'"}
	if s.TempDir != "" {
		out = append(out, "SET temp_directory = "+sqlString(s.TempDir))
	} else {
		out = append(out, "SET temp_directory = ''")
	}
	if s.MemoryLimit != "" {
		out = append(out, "SET memory_limit = "+sqlString(s.MemoryLimit))
	}
	out = append(out,
		"SET allowed_directories = ["+strings.Join(dirs, ", ")+"]",
		// A server's answers come and go with its clients: without the
		// allocator's background threads DuckDB keeps what it freed (1.5 GB
		// after 64 clients left, bench/nonreading), with them it gives it back.
		"SET allocator_background_threads = true",
		"SET autoinstall_known_extensions = false",
		"SET autoload_known_extensions = false",
		"SET enable_external_access = false",
		"SET lock_configuration = true")
	return out
}

func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// disabledOptimizers are the DuckDB optimizers no database runs, each
// for a wrong answer it gives with the linked DuckDB (1.5.6):
//
//   - statistics_propagation answers an ungrouped min or max over one
//     Parquet file from the file's statistics (a plan of COLUMN_DATA_SCAN).
//     Read with can_have_nan, as every view reads files, a FLOAT or
//     DOUBLE column's statistics there are [min, NaN], so `SELECT max(f)`
//     over a one-file table answered NaN for a file without any NaN, also
//     under a WHERE its row groups satisfy whole. Over two files or more
//     DuckDB reads the rows and answers right. Without it, DuckDB still
//     pushes filters into the Parquet scan and skips row groups there.
var disabledOptimizers = []string{"statistics_propagation"}

// noFileCache turns DuckDB's cache of file bytes off: it holds a local
// file's blocks across queries and takes them as still good while the
// file's modification time is unchanged, so a file rewritten in place of
// the same size with its time set back (touch -r), then registered again
// (rocklake refresh --stats), was read as its old bytes under its new
// footer: a Snappy error, or old rows under new statistics. rocklake reads
// only local files (objects through local copies), which the operating
// system caches.
const noFileCache = "SET GLOBAL enable_external_file_cache = false"

// openDB opens a database whose first connection runs the global settings
// (of the whole database: the optimizers it runs without, disabled and
// disabledOptimizers, and noFileCache) before any other use; with a sandbox those end in
// lock_configuration, after which no connection may SET anything, so the
// time zone is set globally instead of per connection.
func openDB(path string, sb *Sandbox, disabled ...string) (*sql.DB, error) {
	opened.Add(1)
	stmts := []string{"SET GLOBAL disabled_optimizers = " + sqlString(strings.Join(append(slices.Clone(disabledOptimizers), disabled...), ",")), noFileCache}
	if sb != nil {
		stmts = append(stmts, sb.statements()...)
	}
	var once sync.Once
	var onceErr error
	conn, err := duckdb.NewConnector(path, func(ex driver.ExecerContext) error {
		once.Do(func() {
			for _, q := range stmts {
				if _, err := ex.ExecContext(context.Background(), q, nil); err != nil {
					onceErr = fmt.Errorf("setting up duckdb (%s): %w", q, err)
					return
				}
			}
		})
		if onceErr != nil {
			return onceErr
		}
		if sb != nil {
			return nil
		}
		_, err := ex.ExecContext(context.Background(), "SET TimeZone = 'UTC'", nil)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("open duckdb %q: %w", path, err)
	}
	db := sql.OpenDB(conn)
	// The settings are run now, so that a database that cannot be locked
	// down fails here and not at a client's first query.
	if err := db.Ping(); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// DuckDBVersion returns the version of the linked DuckDB library (what
// SELECT version() answers). It asks the library, not a database: opening
// one costs a process more than the rest of its start-up together.
func DuckDBVersion() string { return mapping.LibraryVersion() }
