package rocklake

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/internal/sqllex"
	"github.com/rocklake/rocklake/maintain"
)

// WriteResult says what a write statement did: the statement, its table,
// the rows and files it added and the snapshot it made. An alias of
// maintain.WriteResult.
type WriteResult = maintain.WriteResult

// ExecOptions tune Exec.
type ExecOptions struct {
	// Snapshot is the snapshot an INSERT's or CREATE TABLE AS's query
	// reads; the zero value is the latest. The rows are always added to
	// the table as it is at the latest snapshot.
	Snapshot SnapshotRef
	// Stdin is a local file holding the data of COPY ... FROM STDIN (a
	// PostgreSQL client's, which the server stages).
	Stdin string
}

// IsWrite reports whether a statement is a write Exec runs: INSERT,
// CREATE TABLE [AS], COPY ... FROM, DELETE or UPDATE (and MERGE, which
// Exec refuses).
func IsWrite(sql string) bool { return maintain.IsWrite(sql) }

// Exec runs one write statement in SQL and commits it as one snapshot:
//
//	INSERT INTO t [BY NAME] [(cols)] SELECT ... | VALUES ... | DEFAULT VALUES
//	CREATE TABLE [IF NOT EXISTS] t AS SELECT ...
//	CREATE TABLE [IF NOT EXISTS] t (col type [NOT NULL], ...)
//	COPY t [(cols)] FROM 'path' [(FORMAT csv | parquet | json, ...)]
//
// DuckDB runs the statement over the table's columns (its casts, its
// constraint errors, its COPY options), the query planned and pruned as
// Query's are; the rows are written as new Parquet files laid out by the
// table's declared layout, with page indexes and bloom filters, checked
// against the rows, and registered with their statistics as rocklake's
// own files. Nothing is committed, and no file is left, when it fails.
// A lake with readable directories (a server's sandbox) reads COPY's file
// only from them.
func (l *Lake) Exec(ctx context.Context, sql string, o ExecOptions) (*WriteResult, error) {
	if err := l.writable("write"); err != nil {
		return nil, err
	}
	id, err := o.Snapshot.catalogID()
	if err != nil {
		return nil, err
	}
	return maintain.Write(ctx, l.eng, sql, maintain.WriteOptions{Query: engine.QueryOptions{Snapshot: id}, ReadDirs: l.readDirs, Stdin: o.Stdin})
}

// Insert appends the rows of an Arrow record stream to a table in one
// snapshot, as INSERT INTO table BY NAME does: columns match by name, a
// column the stream lacks gets NULL (or the column's default), a value
// is cast to its column's type (a value that does not fit fails the
// insert), and the rows are written as every write's are. Nothing is
// committed when it fails. The stream is read to its end first, into a
// Parquet file staged in the system's temporary directory (the sandbox's
// TempDir for a sandboxed lake).
func (l *Lake) Insert(ctx context.Context, table string, rows array.RecordReader) (*WriteResult, error) {
	if err := l.writable("insert into " + table); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(l.stageDir, "rocklake-insert-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	p := filepath.Join(dir, "rows.parquet")
	if err := stageRecords(p, rows); err != nil {
		return nil, fmt.Errorf("insert into %s: reading the rows: %w", table, err)
	}
	q := fmt.Sprintf("INSERT INTO %s BY NAME SELECT * FROM read_parquet('%s')", sqllex.QuoteName(table), strings.ReplaceAll(p, "'", "''"))
	return maintain.Write(ctx, l.eng, q, maintain.WriteOptions{Query: engine.QueryOptions{Snapshot: catalog.Latest}})
}

// stageRecords writes a record stream to a Parquet file, its Arrow schema
// kept so that DuckDB reads back the types given.
func stageRecords(path string, rows array.RecordReader) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w, err := pqarrow.NewFileWriter(rows.Schema(), f, parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy)),
		pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		f.Close()
		return err
	}
	for rows.Next() {
		if err := w.WriteBuffered(rows.RecordBatch()); err != nil {
			w.Close()
			return err
		}
	}
	if err := rows.Err(); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// WriteTxn is a transaction of writes: its statements write and check
// their files at once and register them all in one snapshot at Commit,
// or none (Rollback removes them). Readers never see a part of it. Its
// statements, and queries run In it (QueryOptions.In), read its own
// writes: from its first statement on, they read the catalog's latest
// snapshot as of that statement with the transaction's writes over it
// (maintain.Txn). A WriteTxn is for one goroutine at a time. It holds a
// lease on its files' directories (catalog.Lease), however long it stays
// open, so that cleanup --orphans leaves them alone: end every WriteTxn
// with Commit or Rollback, or its files stay until the process exits.
type WriteTxn struct {
	l  *Lake
	tx *maintain.Txn
}

// BeginWrite starts a transaction of writes.
func (l *Lake) BeginWrite() *WriteTxn { return &WriteTxn{l: l, tx: maintain.NewTxn(l.eng)} }

// Exec runs an INSERT, COPY, DELETE, UPDATE or MERGE statement in the
// transaction: its files are written, checked and held until Commit (a
// change copies on write here, whatever the table's delete mode). Its
// query reads the transaction's writes; an o.Snapshot other than the zero
// value reads that committed snapshot instead. CREATE TABLE is refused
// inside a transaction.
func (w *WriteTxn) Exec(ctx context.Context, sql string, o ExecOptions) (*WriteResult, error) {
	if err := w.l.writable("write"); err != nil {
		return nil, err
	}
	id, err := o.Snapshot.catalogID()
	if err != nil {
		return nil, err
	}
	return w.tx.Exec(ctx, sql, maintain.WriteOptions{Query: engine.QueryOptions{Snapshot: id},
		ReadDirs: w.l.readDirs, Stdin: o.Stdin})
}

// Commit registers the transaction's net effect in one snapshot. A
// transaction that wrote no row makes none (the zero Snapshot). A failed
// commit removes the files: nothing of the transaction stays.
func (w *WriteTxn) Commit(ctx context.Context) (Snapshot, error) {
	return w.tx.Commit(ctx)
}

// Rollback ends the transaction and removes the files its statements
// wrote; after Commit it does nothing.
func (w *WriteTxn) Rollback() { w.tx.Rollback() }

// engine is the engine a query In w runs on: one reading w's writes once
// it has written, else the lake's.
func (w *WriteTxn) engine(l *Lake) *engine.Engine {
	if w == nil {
		return l.eng
	}
	return w.tx.Engine()
}
