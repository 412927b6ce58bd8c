// Package pqmeta reads a Parquet file's metadata as DuckDB reads the file:
// the read-side twin of internal/pqwrite. It reads no data pages.
//
// What it reads, footer first:
//
//	"PAR1" | column chunks | page indexes, bloom filters | footer | footer length | "PAR1"
//
//	footer ─┬─ schema ──────────▶ File.Columns, File.Leaves: DuckDB types (package
//	        │                     types), VARIANT shredding (Leaf.Variant)
//	        ├─ column_orders,
//	        │  created_by ──────▶ which statistics to trust
//	        └─ row groups ──────▶ File.RowGroups[rg].Chunks[leaf]
//	             ├─ counts, sizes ─────────▶ Chunk
//	             ├─ statistics ────────────▶ File.ChunkStats: stats.Column in a
//	             │                           table column's type
//	             └─ page index and bloom
//	                filter locations ──────▶ Chunk.ColumnIndex, OffsetIndex,
//	                                         BloomFilter (Location)
//	                                           │
//	             page index ◀──────────────────┤ FileIndex.Pages: per-page stats
//	             bloom filter ◀────────────────┘ FileIndex.BloomAbsent
//
// Read opens a file safely (regular files only, never blocking on a named
// pipe, optionally checking the device and inode it was listed with) and
// reads its footer into a File. OpenIndex opens a file for the structures
// below row-group statistics, which only a query plan needs.
//
// A File also says which file it was read from (stamp.go): its Stamp
// (size, modification and status change times, device and inode) and its
// footer's Fingerprint, what a registration records so that a reader can
// tell the file from another one at its path later. ReadAs and
// OpenIndexAs read a file only while it is the one recorded.
//
// Every translation keeps only what it can vouch for: a bound it keeps
// admits every value of its unit, rounded outward where the file's unit
// or scale is finer than the type's; what it cannot read is unknown,
// never a reason to skip. Which file types fit which table types, and
// which casts can fail on a file's values, follow DuckDB's casts (Fits,
// File.CastError).
//
// A WKB column named in a GeoParquet "geo" key (how DuckDB writes
// GEOMETRY) is GEOMETRY, as DuckDB reads it, not BLOB.
//
// Columns are named as DuckDB binds names: ASCII letters without regard
// to case, every other character exactly (types.FoldIdent).
//
// The package depends on types, stats, arrow-go and the standard library
// only; registering files in a catalog is package ingest's.
package pqmeta
