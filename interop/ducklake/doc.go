// Package ducklake moves a rocklake catalog to and from DuckLake
// specification 1.0, the format DuckDB 1.5's ducklake extension creates and
// attaches.
//
// # Export
//
// Export writes a new DuckDB database file holding DuckLake's 28 tables
// (schema.go), filled from every kept snapshot of a catalog. It writes to a
// temporary file beside the destination and renames it at the end, so a
// failure leaves nothing behind. Choices the format forces:
//
//   - the extension inserts into its tables by position, so column order
//     and types are part of the format (a test holds the specification's
//     list);
//   - value_count counts NULLs (the extension reads null_count ==
//     value_count as "only NULLs"), where rocklake counts non-NULL values;
//   - bounds are text: DuckDB's CAST(v AS VARCHAR) through package types,
//     booleans 0/1 and blobs hex as the specification says; no bounds for
//     int128, uint128, timetz and interval;
//   - files carry no Parquet field ids DuckLake could match (rocklake
//     registers files written anywhere), so every file names a map_by_name
//     column mapping of its table, whose ids come from the file id
//     sequence as the extension's do;
//   - what DuckLake cannot hold (row-group statistics, page index and bloom
//     locations, membership filters, exactness, ENUM and ARRAY tables) is
//     listed in the result, never approximated.
//
// # Import and sync
//
// Import reads a DuckLake 1.0 catalog from a DuckDB or SQLite file or a
// PostgreSQL database, in one read transaction, and replays it: the state
// at its first kept snapshot, then one rocklake commit per DuckLake
// snapshot that changed a table (creates, renames, drops, files added and
// retired), or only the newest state. Every footer is read again through
// package ingest, exactly as `add` reads it; DuckLake's statistics only
// fill what a footer lacks. Inlined rows become Parquet files of
// rocklake's own (decoded from SQLite's and PostgreSQL's encodings).
//
// Rows deleted by position (delete files, Parquet files of (file_path,
// pos) rows) are folded into the newest state by Latest: each live data
// file with a current delete file is imported as a Parquet file of
// rocklake's own, written by DuckDB beside the inlined rows' files,
// holding the data file's rows but those positions under its own column
// names and types; its row count is checked against record_count minus
// delete_count and the distinct positions, and it is registered as
// rocklake's (cleanup may delete it), with statistics from its footer. A
// history import and sync replay them instead, each as a rocklake delete
// file recorded by the commit of the snapshot that made it current
// (deletes.go). Both refuse inlined deletes and delete files in other
// formats (deletion vectors).
//
// Everything is read and checked before the first commit, so refusals
// (other versions, delete files that cannot be replayed, column changes, other
// schemas, name mappings rocklake cannot follow, merged files in a
// history, missing or changed files) leave the catalog as it was, and no
// file written for it behind.
//
// Sync keeps no state: it finds the newest DuckLake snapshot whose tables
// and live files equal the catalog's newest state, and replays the
// snapshots after it.
package ducklake
