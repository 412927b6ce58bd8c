// Package catalog is DuckLake's metadata model on an ordered key-value
// store (package kv; Pebble on disk): snapshots, schemas, tables, columns,
// data files, and statistics per file, per row group, per VARIANT sub-field
// and per table.
//
// # Keys
//
// Every key is a one-byte tag (keys.go holds the whole table) followed by
// ids as 8-byte big-endian integers, so keys sort by id:
//
//	01                                    Meta       marks the directory as a catalog
//	02 snapshot                           Snapshot   counters + what it changed
//	03 schema  begin                      Schema
//	04 table   begin                      Table      versioned: begin/end snapshot
//	05 table   column  begin              Column
//	06 table   file                       DataFile   begin/end snapshot
//	07 table   path                       the live file at a path (duplicate check)
//	09 table   column  file               stats.Column       one per (file, column)
//	0A table   column  file  rowgroup(4)  RowGroupStats     + page index / bloom locations
//	0B table   column  file  path         VariantStats      per shredded sub-field
//	0C table                              TableStats        totals, latest state (until_changed)
//	0D table   column                     TableColumnStats  bounds, latest state
//	0E table   column  path               VariantStats      table-wide sub-fields
//	0F table   file                       FileToDelete      expired, awaiting cleanup
//	10 table   column  file               MembershipFilter  distinct values of a column in a file
//	11                                    fence      random bytes every write replaces, on condition
//	12 table   column  level  first          MembershipSlab    files of one slab of signatures
//	13 table   column  level  first  group(4) MembershipGroup  a slab's words, block-major
//	14 table   first                         FileBlock         a commit's new files, column-major
//	15 table   column  first                 StatsBlock        their stats of one column
//	16 table   end                           RemovedFiles      the files a commit removed
//	17 table                                 FileBlocks        the table's files are all in blocks
//	18 table   file                          ForgottenFile     a user's file expire forgot
//	19 table   file   begin                  DeleteFile        positions of a data file's deleted rows
//	1A table   column  first                 ColumnStats       block 15's files folded into one unit
//	1B location                              ObjectRoot        a prefix writes to objects upload under
//	1C snapshot                              Snapshot          what an unfinished expiry needs of one it expired
//
// File column stats keep DuckLake's tag 0x09, but the key is ordered
// table | column | file, not file | column: planning evaluates a predicate's
// few columns across every file of a table, so one range scan per column
// returns exactly the rows it needs, in file order, without touching the
// stats of other columns. Row-group stats follow the same order for the
// same reason.
//
// A partition column (Column.Partition, "hive") is one the files do not
// hold: each file's value is in its DataFile row (partition_values, by
// column id; DuckLake keeps them in ducklake_file_partition_value) and,
// like any column's, in its stats rows, as exact bounds (min = max) or an
// all-NULL count, so the planner needs nothing else to prune on it.
// A file a rewrite wrote under a declared layout (Table.PartitionedBy)
// also records its value of each field (layout_values: column id,
// transform, value as text), which plans and listings show; pruning
// reads the source column's statistics, which those values bound.
//
// Rows 12 and 13 are the membership index: per column, the files'
// signatures in slabs, so that a probe of `col = v` reads one group per
// slab (8 bytes per file) and then only the candidates' filters
// (membership.go draws it).
//
// Rows 14 to 17 are the same files and stats again, column-major, one
// value per commit instead of one row per file: what planning reads
// (blocks.go draws it). Row 1A summarises a stats block, so that a plan
// skips a block's files without decoding them (blocksummary.go).
//
// Row 18 outlives a data file row: the user's files stay on disk after
// expire forgets them, and add must not take their rows in twice
// (forgotten.go).
//
// Row 1C lives only while an expiry is unfinished: expiry commits in
// several batches, the expired snapshots' rows first, and keeps of those
// what forgetting their files still needs (expirewrites.go).
//
// Row 19 is merge-on-read (deletes.go): a delete of some rows of a data
// file writes a Parquet file of their positions instead of rewriting the
// data file, as DuckLake's ducklake_delete_file does. Versions of the row
// follow one another per data file (begin/end), at most one visible at a
// snapshot, holding every position deleted up to it. The data file's
// statistics stay valid bounds of its remaining rows, no longer exact.
//
// # Values
//
// Values are protobuf messages (catalogpb/catalog.proto) in an envelope of
// a version byte and the magic "RL" (envelope.go). Bounds are the
// order-preserving encodings of package types, compared as bytes.
//
// # Snapshots and visibility
//
// A commit (Txn.Commit) writes one new snapshot and every row it changes in
// one synced batch: after a crash either all of it is there or none. Rows
// carry begin/end snapshots; a row is visible at snapshot s when
// begin ≤ s < end. Retiring a file or dropping a table sets end in place;
// stats rows are immutable per file. A live file's recorded identity
// (what stat said of it, and its footer's fingerprint: what readers check
// before they read it) is replaced in place by a restamp, when the file
// was found changed on disk with its content as it was (restamp.go). A
// Reader reads one snapshot through one consistent store snapshot, so it
// never sees half a commit, and time travel is reading an older snapshot
// id.
//
// Commits are serialised in the process by a mutex, and across processes
// that share a store (PostgreSQL) by the fence: every write replaces key
// 11 on condition that it still holds what the writer read, so a commit
// built on a snapshot that is no longer the newest writes nothing and is
// built again on the newer one (fence.go). A transaction remembers the
// snapshot it began at; if another commit landed since and touched one of
// its tables (or created a name it creates), Commit fails with ErrConflict
// and writes nothing; otherwise it applies on top of the newest snapshot.
// Each snapshot row carries its commit's random token, so that a commit
// whose outcome the store could not report is found, not made twice; the
// fence values its commit expected and wrote; and the prefixes (tag and
// table id) of the keys it wrote. With those, a commit that lost the
// fence builds its next attempt from what it read wherever no commit
// since wrote, and no writer that writes no snapshot (expiry, cleanup)
// moved the fence between: on PostgreSQL a dozen round trips fewer, and
// a shorter window in which to lose again (reread.go).
//
// A commit is a Txn's operations applied by a commitWriter (txn.go: the
// retry loop, conflicts, the snapshot row) through txn_tables.go (create,
// drop, rename), txn_files.go (files added and retired), txn_stats.go
// (table stats kept up), alter.go and tableprops.go; coldefs.go reads
// column definitions and filecheck.go refuses files outside the data root,
// files already live under another path, and statistics that do not hold.
//
// # Table stats
//
// Rows 0C/0D/0E describe a table as of the last commit that changed it.
// Appending files only widens them, merged in the column type's order. A
// commit that removes files recomputes them exactly from the surviving
// files' stats, so they may narrow; it then advances next_file_id even
// when it writes no file. Every commit that changes a table's files or
// columns writes its rows, so they hold the table's stats at every
// snapshot from the one that wrote them (as_of_snapshot) until the next
// such commit: an append after commits to other tables widens them as
// they are, where it used to fold every file of the table again
// (storedAt). Reader.TableStats serves stats cached under (table,
// next_file_id, schema_version), a key no two snapshots share, so
// narrowed stats are never served for an older snapshot; for a snapshot
// before the stored rows' (time travel) it folds that snapshot's file
// stats, which is exact.
//
// # Column changes
//
// Columns change by versions of their rows (05): a rename ends the row and
// begins another with the same id; a drop ends it; an added column is a
// new id; a widening is a new id whose row names the one it replaces
// (widened_from), because stats rows are encodings of one type and older
// snapshots keep reading the old ones. Files are never rewritten: a file
// holds the columns visible at the snapshot that registered it, which
// ColumnMapping reads back from these rows (mapping.go). An alteration
// (alter.go: alterRun, a method per kind; alter_parse.go reads one from
// words) writes, in its commit, the stats rows, row-group rows and stats
// blocks of an added or widened column for every live file, so no file is
// unknown for it. A table's declared layout (partitioned_by), sort key
// (sorted_by) and write options (write_options) are versions of its table
// row (04), like a rename (tableprops.go); setting one to the value it has
// makes no snapshot (ErrUnchanged).
//
// # Expiry and cleanup
//
// ExpireSnapshots forgets every snapshot older than a cutoff (never the
// newest): it deletes their snapshot rows, and the rows of files and tables
// no kept snapshot can see (end ≤ the oldest kept snapshot) with all their
// stats, and schedules those files for deletion (0F) unless a kept row
// still names the same location. Cleanup removes scheduled files from disk.
// Both are serialised with commits; neither makes a snapshot, and every
// kept snapshot reads exactly what it read before.
package catalog
