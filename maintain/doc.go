// Package maintain keeps a catalog's tables in shape: it rewrites a
// table's files so that their statistics prune (Optimize: a sort, or a
// Z-order or Hilbert curve through several columns), merges small files
// into larger ones (MergeSmallFiles, the rocklake compact command), checks
// files and their stored statistics against the data (Verify), takes back
// files found changed on disk (Refresh), and
// measures how well a column's bounds separate files and row groups
// (Analyze), to choose a sort key.
//
//	optimize.go  Optimize, and the curve function it registers in DuckDB
//	merge.go     MergeSmallFiles
//	rewrite.go   the rewrite both share: read, order, write, check,
//	             commit (rewriteRun, one method each)
//	rewritecheck.go  check: the rows written against the rows read
//	arrowwriter.go   write: rows out of DuckDB into files with arrow-go
//	rewritestream.go a write streamed from one sorted COPY
//	partitions.go    a table's partitions kept apart: declared layouts
//	             and Hive key=value directories
//	objects.go   where a rewrite of objects stages, uploads and, failing,
//	             deletes its output
//	verify.go    Verify
//	refresh.go   Refresh: files found changed on disk taken back (their
//	             identity recorded again), registered again or removed
//	analyze.go   Analyze (statistics alone, no DuckDB)
//
// Rewrites and checks run on an engine's DuckDB and read files through
// it, exactly as queries read them: what a rewrite checks before its
// commit is what queries will see. engine knows nothing of this package.
//
// A rewrite reads the files into a temporary table in the order they are
// written (rowid order), writes new files in one pass (arrow-go, with a
// page index and bloom filters, or DuckDB's COPY for types arrow-go is not
// given), compares the rows read with the files written bit for bit, and
// swaps the new files in for the old ones in one snapshot. Rows leave
// DuckDB for arrow-go through an uncompressed Parquet file DuckDB writes
// beside the new files and arrow-go reads back as columns (as text, parsed
// back, for the types whose Parquet form would not read back exact); a
// write into a table without partitions skips the temporary table and cuts
// its files from one sorted COPY of its source (rewritestream.go). Nothing is committed when they differ, when ctx is
// cancelled first, or when another writer retired one of the old files;
// the new files are then removed. The old files stay on disk for time
// travel until expire and cleanup. A local file that is no longer the one
// registered (engine.CheckFile) is not read: its rows would enter the
// table as if they were those registered.
//
// A table's partitions stay apart: rows are laid out by the table's Hive
// partition columns, then by its declared layout (Table.PartitionedBy), and
// files are cut wherever either changes. A file of a Hive-partitioned
// table is written without its partition columns, under the key=value
// directories of an old file of its partition (hiveLayout), from which
// registration reads its values back.
//
// A table whose files are objects (s3://) is rewritten the same way from
// local copies of its objects (the engine's object cache); the new files
// are written to a local staging directory, checked there, uploaded under
// <data root or the objects' prefix>/_rocklake/table-<id>/<what>-<snapshot>/
// (multipart from 16 MiB) and only then registered. A rewrite that commits
// nothing deletes what it uploaded.
package maintain
