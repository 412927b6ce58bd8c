// Package rocklake embeds a rocklake catalog in a Go program: open or
// create a catalog, create tables, register Parquet files, plan which files
// a predicate needs, run DuckDB queries over only those files, and read the
// catalog's tables, statistics, files and snapshots.
//
// This package holds what a caller needs: the options structs, the result
// types (most are aliases of types in the packages below, named in each
// declaration) and the sentinel errors, so that a program can use
// errors.Is(err, rocklake.ErrNoSuchTable) without importing those packages.
//
// The pieces it joins live in their own packages, usable alone: catalog
// (the DuckLake model on Pebble or PostgreSQL), ingest (footer statistics), expr and
// prune (predicates and skipping), engine (queries on DuckDB), maintain
// (rewrites and checks of a table's files). This package, engine and
// maintain link DuckDB through cgo; the others are pure Go.
//
// Every method that reads or writes the catalog or data files takes a
// context.Context. Where the package underneath has no cancellation of its
// own (catalog reads and commits, planning, expiry, cleanup), the context
// is checked before the work starts and between its steps; a step once
// started runs to its end. Each method's documentation says which.
package rocklake

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/internal/pathgate"
	"github.com/rocklake/rocklake/kv"
	"github.com/rocklake/rocklake/kv/pgkv"
	"github.com/rocklake/rocklake/maintain"
	"github.com/rocklake/rocklake/prune"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

// Lake is an open catalog with a query engine. It is safe for concurrent
// use.
type Lake struct {
	cat      *catalog.Catalog
	eng      *engine.Engine
	readOnly bool
	readDirs []string // the sandbox's, as written and resolved; nil: any file
	stageDir string   // where Insert stages rows: a directory the engine may read ("" the system's)
}

// OpenOptions configure Open and Create. The zero value opens read-write
// with the default cache.
type OpenOptions struct {
	// ReadOnly opens the catalog for reading only: every method that would
	// commit fails with ErrReadOnly, and a directory catalog is opened
	// without writing anything to its directory. Create refuses it.
	ReadOnly bool
	// CacheBytes bounds the memory of decoded file lists and column
	// statistics kept for planning; 0 means the default
	// (catalog.DefaultCacheBytes), a negative value disables the cache.
	CacheBytes int64
	// DataRoot, for Create only, confines the catalog's data files to one
	// directory tree: Add refuses a path outside it (after resolving
	// symbolic links and ".."). The root is stored in the catalog and Open
	// reads it back, so Open refuses the field rather than ignore it.
	DataRoot string
	// Postgres tunes the connection pool of a catalog in PostgreSQL
	// (ignored for a directory).
	Postgres PostgresOptions
	// Sandbox, when set, locks the engine's DuckDB down for SQL from
	// clients that are not trusted: files only under its directories, no
	// extensions, no settings changed (see engine.Sandbox).
	Sandbox *Sandbox
}

// Sandbox says which directories a locked-down DuckDB may read. An alias
// of engine.Sandbox.
type Sandbox = engine.Sandbox

// PostgresOptions tune a catalog in PostgreSQL: pool size, retry window,
// statement timeout, idle timeout. An alias of pgkv.Options.
type PostgresOptions = pgkv.Options

func (o OpenOptions) catalogOptions() catalog.Options {
	return catalog.Options{
		DataRoot:   o.DataRoot,
		CacheBytes: o.CacheBytes,
		Pebble:     kv.PebbleOptions{ReadOnly: o.ReadOnly},
		Postgres:   o.Postgres,
	}
}

// Create makes a new catalog at loc: a directory (created if missing,
// otherwise empty), or a PostgreSQL database named by a postgres:// URL or
// libpq's keyword=value form, where the catalog lives in the schema the
// URL's search_path names first (public by default), which must hold
// nothing else. PostgreSQL's PG* environment variables and ~/.pgpass fill
// in what the location leaves out. Errors never show the password.
//
// ctx is checked before the catalog is made; making it is not
// interrupted.
func Create(ctx context.Context, loc string, o OpenOptions) (*Lake, error) {
	if o.ReadOnly {
		return nil, fmt.Errorf("create %s: OpenOptions.ReadOnly is set, but Create must write the new catalog", loc)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c, err := catalog.Create(loc, o.catalogOptions())
	if err != nil {
		return nil, err
	}
	return wrap(c, o)
}

// Open opens the catalog at loc, a directory or a PostgreSQL location as
// for Create.
//
// ctx is checked before the catalog is opened; opening it is not
// interrupted (a PostgreSQL connection waits at most
// PostgresOptions.Timeout).
func Open(ctx context.Context, loc string, o OpenOptions) (*Lake, error) {
	if o.DataRoot != "" {
		return nil, fmt.Errorf("open %s: OpenOptions.DataRoot is for Create; Open reads the data root stored in the catalog", loc)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c, err := catalog.Open(loc, o.catalogOptions())
	if err != nil {
		return nil, err
	}
	return wrap(c, o)
}

func wrap(c *catalog.Catalog, o OpenOptions) (*Lake, error) {
	e, err := engine.NewWithOptions(c, engine.Options{Sandbox: o.Sandbox})
	if err != nil {
		c.Close()
		return nil, err
	}
	l := &Lake{cat: c, eng: e, readOnly: o.ReadOnly, readDirs: o.Sandbox.ReadDirs()}
	if o.Sandbox != nil {
		l.stageDir = o.Sandbox.TempDir
	}
	return l, nil
}

// ReadDirs are the only directories a lake opened with a Sandbox registers
// local files from (each as written and with its links resolved); nil when
// any file may be registered. Add checks every file after resolving its
// links, so that no file the sandboxed engine cannot read is committed.
func (l *Lake) ReadDirs() []string { return l.readDirs }

// Close closes the engine and the catalog.
func (l *Lake) Close() error {
	err := l.eng.Close()
	if cerr := l.cat.Close(); err == nil {
		err = cerr
	}
	return err
}

// Catalog is the underlying catalog, for what this package does not wrap.
// Writes through it bypass OpenOptions.ReadOnly's check (a directory
// catalog opened read-only still refuses them).
func (l *Lake) Catalog() *catalog.Catalog { return l.cat }

// Engine is the lake's query engine, for what this package does not wrap
// (a server running the CLI's commands on its open lake).
func (l *Lake) Engine() *engine.Engine { return l.eng }

// DataRoot is the directory the catalog's data files must lie under, ""
// for none.
func (l *Lake) DataRoot() string { return l.cat.DataRoot() }

// writable refuses a write on a Lake opened read-only, before any work:
// a PostgreSQL store has no read-only mode of its own to refuse it later.
func (l *Lake) writable(what string) error {
	if l.readOnly {
		return fmt.Errorf("%s: %w (the lake was opened with OpenOptions.ReadOnly)", what, ErrReadOnly)
	}
	return nil
}

// CreateTable creates a table from a column list such as
// "id BIGINT, name VARCHAR" and returns the snapshot that made it.
//
// An alteration that changes nothing (a property set to the value it has)
// makes no snapshot: the latest is returned, with no error.
//
// ctx is checked before the commit; the commit is not interrupted.
//
// partitionBy, when given, names columns whose values come from each
// file's Hive-style key=value directories instead of the files (as
// `table create --partition-by` does).
func (l *Lake) CreateTable(ctx context.Context, name, columns string, partitionBy ...string) (Snapshot, error) {
	if err := l.writable("create table " + name); err != nil {
		return Snapshot{}, err
	}
	defs, err := catalog.ParseColumnDefs(columns)
	if err != nil {
		return Snapshot{}, err
	}
	if len(partitionBy) > 0 {
		if err := catalog.PartitionBy(defs, partitionBy); err != nil {
			return Snapshot{}, err
		}
	}
	if err := ctx.Err(); err != nil {
		return Snapshot{}, err
	}
	tx, err := l.cat.Begin()
	if err != nil {
		return Snapshot{}, err
	}
	tx.CreateTable(name, defs)
	return tx.Commit()
}

// Alteration is one change to a table's columns: add, rename, drop, or
// widen one (see catalog.Alteration and ParseAlteration).
type Alteration = catalog.Alteration

// The kinds of Alteration.
const (
	AddColumn     = catalog.AddColumn
	RenameColumn  = catalog.RenameColumn
	DropColumn    = catalog.DropColumn
	SetColumnType = catalog.SetColumnType
	// SetPartitioning, SetSorting, SetOption and ResetOption change the
	// table's declared layout, sort key and write options, which writes
	// (Exec), optimize and compact follow.
	SetPartitioning = catalog.SetPartitioning
	SetSorting      = catalog.SetSorting
	SetOption       = catalog.SetOption
	ResetOption     = catalog.ResetOption
)

// ParseAlteration reads an alteration as `rocklake table alter` takes it,
// one word per element: `add column NAME TYPE [DEFAULT v]`, `rename column
// A to B`, `drop column C`, `alter column C type T`, `set partitioned by
// ...`, `set sorted by a, b | zorder(a, b) | hilbert(a, b)`, `reset sorted
// by`, `set option target_file_rows = N | target_file_size = 128MB |
// sorted = false`, `reset option NAME`.
func ParseAlteration(words []string) (Alteration, error) { return catalog.ParseAlteration(words) }

// AlterTable changes a table's columns in one snapshot, returned. Files are
// not rewritten: each keeps its columns as it was registered with them,
// and queries read it through the table's column mapping (a renamed column
// from its old name, an added one as its default, a widened one cast). An
// added column that files registered with IgnoreExtraColumns hold is read
// from them (their footers are read here, for its type and statistics),
// and refused, naming a file, when its type is not the file's or a
// widening of it. A
// type change must be a widening DuckDB reads exactly (INTEGER → BIGINT,
// FLOAT → DOUBLE, DECIMAL to more digits); anything else, and a refused
// change of any kind, is an error that leaves the catalog as it was.
//
// ctx is checked before the commit; the commit is not interrupted.
func (l *Lake) AlterTable(ctx context.Context, table string, a Alteration) (Snapshot, error) {
	if err := l.writable("alter table " + table); err != nil {
		return Snapshot{}, err
	}
	if err := ctx.Err(); err != nil {
		return Snapshot{}, err
	}
	// An added column that files registered without it hold
	// (AddOptions.IgnoreExtraColumns) reads their own values: their
	// footers give the column's type and statistics.
	a, err := ingest.MapIn(ctx, l.cat, table, a, nil)
	if err != nil {
		return Snapshot{}, err
	}
	if err := ctx.Err(); err != nil {
		return Snapshot{}, err
	}
	tx, err := l.cat.Begin()
	if err != nil {
		return Snapshot{}, err
	}
	tx.AlterTable(table, a)
	snap, err := tx.Commit()
	if errors.Is(err, catalog.ErrUnchanged) {
		return snap, nil
	}
	return snap, err
}

// AddOptions tune Add. The zero value registers into an existing table,
// the caller keeping ownership of the files.
type AddOptions struct {
	// Create makes a missing table from the first file's schema.
	Create bool
	// FilterColumns names top-level columns to build membership filters
	// for (= and IN on them then skip files by value).
	FilterColumns []string
	// NoAutoFilters stops a table Create makes from choosing filter
	// columns by itself.
	NoAutoFilters bool
	// Workers read footers in parallel; 0 means 2 × GOMAXPROCS.
	Workers int
	// Progress, when set, is called after each footer is read, from the
	// reading goroutines (calls may be concurrent).
	Progress func(done, total int)
	// SkipExisting leaves out the files the table has registered (same
	// resolved path, or same device and inode) instead of refusing the
	// whole add: the way to register what is new in a growing directory.
	SkipExisting bool
	// TakeOwnership hands the files to rocklake: once no kept snapshot
	// reads them, Cleanup deletes them from disk. Without it Cleanup only
	// forgets them.
	TakeOwnership bool
	// IgnoreExtraColumns registers files that hold columns the table lacks,
	// without those columns, recording their names with each file; without
	// it such a file is refused.
	IgnoreExtraColumns bool
	// Hive makes a table Create makes read partition values from the files'
	// key=value directories, a column per key (Create finds that layout by
	// itself when every file has the same keys). See ingest.Options.Hive.
	Hive bool
}

// AddResult summarises an Add: the snapshot made (the zero Snapshot when
// SkipExisting left every file out), files, rows and bytes registered. An
// alias of ingest.Result.
type AddResult = ingest.Result

// Add registers Parquet files (files, directories, globs) in one snapshot:
// all of them, or, when any cannot be read or does not fit the table,
// none.
//
// ctx stops the footer reads (none starts once it is done) and is checked
// again before the commit: a cancel before the commit registers nothing;
// one during the commit does not stop it.
func (l *Lake) Add(ctx context.Context, table string, paths []string, o AddOptions) (AddResult, error) {
	if err := l.writable("add to " + table); err != nil {
		return AddResult{}, err
	}
	iopts := ingest.Options{
		Create: o.Create, Workers: o.Workers, Progress: o.Progress,
		FilterColumns: o.FilterColumns, NoAutoFilters: o.NoAutoFilters, SkipExisting: o.SkipExisting,
		IgnoreExtraColumns: o.IgnoreExtraColumns, Hive: o.Hive, ReadDirs: l.ReadDirs(),
	}
	if o.TakeOwnership {
		iopts.Owner = catalog.OwnerTaken
	}
	return ingest.AddContext(ctx, l.cat, table, paths, iopts)
}

// SnapshotRef names the snapshot a read sees. Its zero value is the latest
// snapshot (as of the call); AtSnapshot names an earlier one. It exists
// because snapshot 0 is a real snapshot (the empty catalog Create makes),
// so a plain int64 field's zero value could not mean "latest".
type SnapshotRef struct {
	id  int64
	set bool
}

// LatestSnapshot is the zero SnapshotRef, spelled out.
var LatestSnapshot = SnapshotRef{}

// AtSnapshot names snapshot id (time travel). A negative id is refused
// with ErrNoSuchSnapshot when used.
func AtSnapshot(id int64) SnapshotRef { return SnapshotRef{id: id, set: true} }

// ID is the snapshot named, and false for the latest.
func (s SnapshotRef) ID() (int64, bool) { return s.id, s.set }

// String is "latest" or "snapshot N".
func (s SnapshotRef) String() string {
	if !s.set {
		return "latest"
	}
	return fmt.Sprintf("snapshot %d", s.id)
}

// catalogID is the id the catalog and engine packages take, where
// catalog.Latest (-1) means the latest.
func (s SnapshotRef) catalogID() (int64, error) {
	if !s.set {
		return catalog.Latest, nil
	}
	if s.id < 0 {
		return 0, fmt.Errorf("%w %d: snapshot ids are 0 or more (the zero SnapshotRef reads the latest)", ErrNoSuchSnapshot, s.id)
	}
	return s.id, nil
}

// read opens a catalog reader at s once ctx allows.
func (l *Lake) read(ctx context.Context, s SnapshotRef) (*catalog.Reader, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	id, err := s.catalogID()
	if err != nil {
		return nil, err
	}
	return l.cat.Read(id)
}

// PlanOptions tune Plan. The zero value plans at the latest snapshot down
// to row groups.
type PlanOptions struct {
	// Snapshot is the snapshot planned against; the zero value is the
	// latest.
	Snapshot SnapshotRef
	// Pages also reads the page index of the row groups kept and keeps
	// only the row ranges whose pages may match.
	Pages bool
}

// Plan is which files, row groups and pages of a table a predicate needs,
// and why. An alias of prune.Plan.
type Plan = prune.Plan

// Plan reports which files and row groups of a table a predicate (a WHERE
// clause in DuckDB syntax) needs.
//
// ctx is checked before planning starts; planning is not interrupted
// (package prune takes no context).
func (l *Lake) Plan(ctx context.Context, table, predicate string, o PlanOptions) (*Plan, error) {
	r, err := l.read(ctx, o.Snapshot)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return prune.PlanTable(r, table, predicate, prune.Options{Pages: o.Pages})
}

// QueryOptions tune Query and QueryRows. The zero value queries the latest
// snapshot.
type QueryOptions struct {
	// Snapshot is the snapshot the query reads; the zero value is the
	// latest.
	Snapshot SnapshotRef
	// In is the transaction of writes the query runs in, if any: with the
	// zero Snapshot it reads the transaction's own writes over the
	// snapshot its first statement read (WriteTxn). A Snapshot given reads
	// that committed snapshot, outside the transaction.
	In *WriteTxn
}

// ErrUncommittedRead was returned for a read, inside a transaction of
// writes, of a table the transaction had written.
//
// Deprecated: a transaction's statements and queries now read its own
// writes; nothing returns it.
var ErrUncommittedRead = errors.New("a read of rows not yet committed")

// engineOptions are o for the engine, and the engine the query runs on.
func (l *Lake) engineOptions(o QueryOptions) (*engine.Engine, engine.QueryOptions, error) {
	// engine.QueryOptions{}.Snapshot is 0, snapshot 0, not the latest:
	// the id is always set here from the SnapshotRef.
	id, err := o.Snapshot.catalogID()
	e := l.eng
	if id == catalog.Latest {
		e = o.In.engine(l)
	}
	return e, engine.QueryOptions{Snapshot: id}, err
}

// Result is a query's answer held in memory (DuckDB's text of each value,
// nil for NULL) with how each table was pruned. An alias of engine.Result.
type Result = engine.Result

// Rows is a query's answer handed over row by row, typed (see
// engine.Rows for the Go type of each DuckDB type). An alias of
// engine.Rows.
type Rows = engine.Rows

// ResultColumn is one column of a query's answer: its name and DuckDB
// type. An alias of engine.Column.
type ResultColumn = engine.Column

// Query runs a DuckDB SELECT over catalog tables and returns the whole
// answer as text. ctx cancels the query while DuckDB runs it.
func (l *Lake) Query(ctx context.Context, sql string, o QueryOptions) (*Result, error) {
	if IsWrite(sql) {
		return nil, errWriteInQuery
	}
	e, eo, err := l.engineOptions(o)
	if err != nil {
		return nil, err
	}
	return e.Query(ctx, sql, eo)
}

// ErrTxnDone is returned by a WriteTxn used after Commit or Rollback.
var ErrTxnDone = maintain.ErrTxnDone

// QueryRows runs a query as Query does and hands its rows over as DuckDB
// produces them, typed (nil for NULL), instead of building every value as
// text first. Close the rows when done: they hold a DuckDB connection.
// ctx cancels the query while rows are read.
func (l *Lake) QueryRows(ctx context.Context, sql string, o QueryOptions) (*Rows, error) {
	if IsWrite(sql) {
		return nil, errWriteInQuery
	}
	e, eo, err := l.engineOptions(o)
	if err != nil {
		return nil, err
	}
	return e.QueryRows(ctx, sql, eo, engine.RowsOptions{})
}

// QueryInto plans and prunes a query as Query does and checks the files
// it keeps, then, instead of reading its rows, hands run the DuckDB
// connection, the views of the kept files and the query over them
// (engine.QueryInto), for a statement of run's own over the rows: a COPY
// of them to a file, say. The views are dropped once run returns.
func (l *Lake) QueryInto(ctx context.Context, sql string, o QueryOptions, run engine.IntoFunc) (*Result, error) {
	if IsWrite(sql) {
		return nil, errWriteInQuery
	}
	e, eo, err := l.engineOptions(o)
	if err != nil {
		return nil, err
	}
	return e.QueryInto(ctx, sql, eo, run)
}

// Changes is the change feed of a table: the rows it gained and lost in
// each snapshot after from, up to to (the zero SnapshotRef: the latest),
// with their snapshot_id and change_type ('insert' or 'delete') before the
// table's columns, read from the files those snapshots added and retired
// (see engine.Engine.ChangesSQL). The answer is held in memory. A from before
// snapshots expire forgot fails with ErrChangesExpired.
func (l *Lake) Changes(ctx context.Context, table string, from int64, to SnapshotRef) (*Result, error) {
	id, err := to.catalogID()
	if err != nil {
		return nil, err
	}
	q, release, err := l.eng.ChangesSQL(ctx, table, from, id)
	if err != nil {
		return nil, err
	}
	defer release()
	return l.eng.Query(ctx, q, engine.QueryOptions{Snapshot: catalog.Latest, NoMetadataAnswers: true})
}

var errWriteInQuery = fmt.Errorf("%w: a write statement (INSERT, CREATE TABLE, COPY ... FROM, DELETE, UPDATE, MERGE) runs with Lake.Exec", ErrNotAQuery)

// The curves OptimizeOptions.Curve takes (aliases of maintain's).
const (
	ZOrder  = maintain.ZOrder
	Hilbert = maintain.Hilbert
)

// ReadOptions choose the snapshot Tables, Describe, Stats and Files read.
// The zero value reads the latest.
type ReadOptions struct {
	// Snapshot is the snapshot read; the zero value is the latest.
	Snapshot SnapshotRef
}

// Snapshot is one committed version of the catalog: its id, time and what
// it changed. An alias of catalog.Snapshot.
type Snapshot = catalog.Snapshot

// Table is a table as a snapshot sees it: id, name, and the snapshots it
// lives between. An alias of catalog.Table.
type Table = catalog.Table

// Column is a table's column: name, type (Type), nullability; nested
// fields have a Parent and a Path from the top-level column. An alias of
// catalog.Column.
type Column = catalog.Column

// Type is a DuckDB logical type; String gives DuckLake's spelling
// (timestamptz, decimal(5,1)). An alias of types.Type.
type Type = types.Type

// Ownership says whether Cleanup may delete a file from disk. An alias of
// catalog.Ownership; its String is "user", "taken", "rocklake" or
// "unrecorded".
type Ownership = catalog.Ownership

// The ownerships a File can have (aliases of catalog's).
const (
	OwnerUnrecorded = catalog.OwnerUnrecorded
	OwnerUser       = catalog.OwnerUser
	OwnerTaken      = catalog.OwnerTaken
	OwnerRocklake   = catalog.OwnerRocklake
)

// Snapshots lists every kept snapshot, oldest first.
//
// ctx is checked before the catalog is read.
func (l *Lake) Snapshots(ctx context.Context) ([]Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return l.cat.Snapshots()
}

// Tables lists the tables at a snapshot, in catalog order.
//
// ctx is checked before the catalog is read.
func (l *Lake) Tables(ctx context.Context, o ReadOptions) ([]Table, error) {
	r, err := l.read(ctx, o.Snapshot)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.Tables()
}

// TableInfo is a table's definition at one snapshot.
type TableInfo struct {
	Table
	// Snapshot is the id of the snapshot read.
	Snapshot int64
	// Columns are the table's columns in order, each nested field after
	// its parent (catalog.TopLevel keeps the top-level ones).
	Columns []Column
}

// readTable opens a reader at o's snapshot and finds a table in it; the
// caller closes the reader.
func (l *Lake) readTable(ctx context.Context, table string, o ReadOptions) (*catalog.Reader, catalog.Table, error) {
	r, err := l.read(ctx, o.Snapshot)
	if err != nil {
		return nil, catalog.Table{}, err
	}
	t, err := r.Table(table)
	if err != nil {
		r.Close()
		return nil, catalog.Table{}, err
	}
	return r, t, nil
}

// Describe returns a table's columns and their types.
//
// ctx is checked before the catalog is read.
func (l *Lake) Describe(ctx context.Context, table string, o ReadOptions) (*TableInfo, error) {
	r, t, err := l.readTable(ctx, table, o)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	cols, err := r.Columns(t.ID)
	if err != nil {
		return nil, err
	}
	return &TableInfo{Table: t, Snapshot: r.Snapshot().ID, Columns: cols}, nil
}

// boundText decodes a stored bound into DuckLake's text form; a type
// without an order has no bounds (nil).
func boundText(c Column, b stats.Maybe[[]byte]) (*string, error) {
	if !b.Known {
		return nil, nil
	}
	codec, ok := types.CodecFor(c.Type)
	if !ok {
		return nil, nil
	}
	v, err := codec.Decode(b.V)
	if err != nil {
		return nil, fmt.Errorf("column %s: stored bound %x does not decode as %s: %w", strings.Join(c.Path, "."), b.V, types.DisplayName(c.Type), err)
	}
	s := codec.Format(v)
	return &s, nil
}

func maybePtr[T any](m stats.Maybe[T]) *T {
	if !m.Known {
		return nil
	}
	v := m.V
	return &v
}

// File is one data file of a table at a snapshot.
type File struct {
	ID int64
	// Path is where the file is (a path stored relative to the table's
	// directory is joined to it).
	Path      string
	Rows      int64
	Bytes     int64
	RowGroups int32
	// AddedAt is the id of the snapshot that registered the file.
	AddedAt int64
	Owner   Ownership
	// DeletedRows counts the rows its delete file takes out
	// (merge-on-read: Rows counts them too); DeleteFile is where that file
	// is, "" without one.
	DeletedRows int64
	DeleteFile  string
}

// Files lists a table's data files at a snapshot, by file id.
//
// ctx is checked before the catalog is read.
func (l *Lake) Files(ctx context.Context, table string, o ReadOptions) ([]File, error) {
	r, t, err := l.readTable(ctx, table, o)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	files, err := r.Files(t.ID)
	if err != nil {
		return nil, err
	}
	dels, err := r.DeleteFiles(t.ID)
	if err != nil {
		return nil, err
	}
	out := make([]File, 0, len(files))
	for _, f := range files {
		d := dels[f.ID]
		var loc string
		if d.ID != 0 {
			loc = d.Location(t)
		}
		out = append(out, File{ID: f.ID, Path: f.Location(t), Rows: f.RecordCount, Bytes: f.FileSizeBytes,
			RowGroups: f.RowGroupCount, AddedAt: f.Begin, Owner: f.Owner, DeletedRows: d.DeleteCount, DeleteFile: loc})
	}
	slices.SortFunc(out, func(a, b File) int { return cmpInt(a.ID, b.ID) })
	return out, nil
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// The errors callers test for with errors.Is; each is the same value as
// the one in the package named, so either spelling matches.
var (
	// ErrNotCatalog: the location holds no rocklake catalog (catalog).
	ErrNotCatalog = catalog.ErrNotCatalog
	// ErrExists: Create found a catalog already there (catalog).
	ErrExists = catalog.ErrExists
	// ErrLocked: another process has the directory catalog open (catalog).
	ErrLocked = catalog.ErrLocked
	// ErrReadOnly: a write on a lake opened with OpenOptions.ReadOnly
	// (kv).
	ErrReadOnly = kv.ErrReadOnly
	// ErrConflict: a concurrent commit changed what this one changes;
	// retrying on the new state may succeed (catalog).
	ErrConflict = catalog.ErrConflict
	// ErrBusy: a transaction of writes could not begin, as many being
	// open as a catalog in PostgreSQL leaves connections for (each holds
	// one from its first write to its end).
	ErrBusy = catalog.ErrBusy
	// ErrNoSuchSnapshot: the snapshot does not exist or was expired
	// (catalog).
	ErrNoSuchSnapshot = catalog.ErrNoSuchSnapshot
	// ErrNoSuchTable: no table of that name at the snapshot read
	// (catalog).
	ErrNoSuchTable = catalog.ErrNoSuchTable
	// ErrNoSuchColumn: no column of that name in the table (catalog).
	ErrNoSuchColumn = catalog.ErrNoSuchColumn
	// ErrNoSuchFile: no data file of that path or id (catalog).
	ErrNoSuchFile = catalog.ErrNoSuchFile
	// ErrDuplicate: a table name or file path that is already taken
	// (catalog).
	ErrDuplicate = catalog.ErrDuplicate
	// ErrInvalid: a malformed definition (catalog).
	ErrInvalid = catalog.ErrInvalid
	// ErrOutsideRoot: a file outside the catalog's data root (catalog).
	ErrOutsideRoot = catalog.ErrOutsideRoot
	// ErrOutsideReadDirs: a file that resolves (links followed) outside
	// the directories a sandboxed lake reads, refused by Add.
	ErrOutsideReadDirs = pathgate.ErrOutside
	// ErrLeaseLost: a write's files went to cleanup --orphans before its
	// commit (its lease expired: the writer stalled for minutes, or ran
	// on a host that looked dead); nothing was committed (catalog).
	ErrLeaseLost = catalog.ErrLeaseLost
	// ErrRetentionTooShort: an Expire cutoff under the retention floor
	// (catalog).
	ErrRetentionTooShort = catalog.ErrRetentionTooShort
	// ErrCorrupt: a catalog value that does not decode (catalog).
	ErrCorrupt = catalog.ErrCorrupt
	// ErrSchemaMismatch: a file whose columns do not fit the table
	// (ingest).
	ErrSchemaMismatch = ingest.ErrSchemaMismatch
	// ErrDataFileChanged: a registered file is missing, or is no longer
	// the file registered (its size, times, device, inode or footer
	// changed), or a refresh refused it (engine).
	ErrDataFileChanged = engine.ErrDataFileChanged
	// ErrNotAQuery: Query was given a statement that is not a query
	// (engine).
	ErrNotAQuery = engine.ErrNotAQuery
	// ErrNothingToOptimize: Optimize on a table with no files (maintain).
	ErrNothingToOptimize = maintain.ErrNothingToOptimize
	// ErrChangesExpired: a change feed from before snapshots expire forgot
	// (maintain).
	ErrChangesExpired = engine.ErrChangesExpired
	// ErrRowMatchedTwice: an UPDATE whose FROM list matches a row of its
	// table more than once, so that its new value is not defined
	// (maintain).
	ErrRowMatchedTwice = maintain.ErrRowMatchedTwice
)
