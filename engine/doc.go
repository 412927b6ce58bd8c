// Package engine runs SQL queries over catalog tables on embedded DuckDB
// (duckdb-go, cgo), reading only the files pruning keeps. It owns the
// DuckDB connection setup and how a table's files are read; rewriting and
// checking those files is package maintain's, which runs on an engine's
// DuckDB (shared.go) and which engine never imports. The catalog,
// ingest and pruning packages stay pure Go so that they build and test
// fast and embed anywhere.
//
//	duckdb.go      Open: every connection set up alike
//	query.go       Query, QueryInto, and what they answer (Result)
//	pipeline.go    a query's stages (below), one queryRun method each
//	refs.go        the catalog tables a parse tree names, and their conjuncts
//	duckast/       DuckDB's parse tree (JSON) read into typed nodes, and a
//	               WHERE conjunct into the planner's expression
//	metadata.go    count/min/max answered from statistics
//	split.go       count/min/max answered in part from statistics, the
//	               rest by DuckDB over the ranges not proven
//	prestart.go    Prestart: DuckDB's start begun before an engine is made
//	warm.go        Warm: the catalog reads a plan will make, made ahead
//	filegroups.go  files whose columns differ from their table's
//	partial.go     reading a kept file in part: the cost rule, row ranges
//	partial_pages.go  the page path: arrow-go decodes the kept pages into
//	               a temporary table (DuckDB's Appender)
//	partial_rowfilter.go  the page path's row filter: the planner's
//	               evaluator over each decoded row
//	paths.go       paths DuckDB would glob, made plain
//	identity.go    a registered file is still the file registered, or the
//	               query fails naming it (ErrDataFileChanged)
//	shared.go      the catalog, DuckDB and file reading, for package maintain
//
// Every connection is set up alike (see Open): the session time zone is UTC,
// so TIMESTAMPTZ and TIMETZ values print with offset +00, which is the text
// form the catalog stores.
//
// # A query
//
// Each step below is a method of queryRun (pipeline.go) of the same name
// (split is planSplit), run in this order by runQuery.
//
//	parse    DuckDB's json_serialize_sql gives the parse tree (cached per
//	         query text): every reference to a catalog table, and for each
//	         the WHERE conjuncts that may skip its files (refs.go says
//	         which: inner joins and preserved sides of outer joins only)
//	plan     conjuncts naming one reference's columns are read from the
//	         parse tree into the planner's expression (duckast), bound
//	         once to the table's columns (package expr) and pruned
//	         (prune.PlanBound), per reference; no SQL text in between.
//	         Files kept whole by their statistics are counted, not listed
//	         (prune.Options.DeferWhole): a metadata answer needs no path,
//	         and listing 10,000 files was most of a cold full count
//	metadata count/min/max answered from statistics when they prove it;
//	         DuckDB still binds the query over empty views, for its errors
//	         and its column names
//	split    else, when the plan proves some rows match, the same query
//	         takes their part from statistics and its view reads only
//	         the rest (split.go); added to DuckDB's answer after execute
//	list     every plan DuckDB will read lists its deferred files
//	         (prune.Plan.Resolve); a split plan's are counted instead
//	fetch    kept objects the page path reads are read by ranges
//	         (partial_objects.go); the other kept objects (s3:// files)
//	         are put in the local object cache
//	         (storage.Cache; one HEAD for a hit, one GET for a miss, both
//	         pinned to the registered ETag) and the views read the local
//	         copies (objects.go); skipped objects are never touched
//	check    every kept local file is stat-ed: a size, modification time,
//	         status change time (ctime), device or inode other than
//	         registration recorded fails the query naming the file and
//	         `rocklake refresh` (identity.go); the partial path compares
//	         the footer it reads with the recorded fingerprint too
//	bind     each view's SQL: whole files, row ranges or loaded pages
//	         (partial.go); files of mixed types move the query to the
//	         database without Top-N; delete files, and lists of more than
//	         64 kept files, go to DuckDB as variables
//	execute  one round trip: CREATE TEMP VIEW __rocklake_vN AS SELECT
//	         <casts> FROM read_parquet(<kept files>) per distinct set of
//	         kept files, then the query with each reference's name replaced
//	         by its view (aliased to the name it had); a table the walker
//	         cannot follow (query_table('t'), a PIVOT statement) is a view
//	         of every file under its own name. The views are dropped after
//	         the caller has the rows.
//
// A kept file is read whole, or only in part (partial.go), where the plan
// kept row ranges (prune.KeptFile.Ranges: the row groups kept and, from
// the page index of row groups of 65,536 rows or more, the pages), checked
// against the file's footer. The cost rule picks, per file: the page path
// when at most an eighth of the rows (and 262,144) are kept and every
// column is flat and of a type it hands over (integers, floats, BOOLEAN,
// VARCHAR, DATE, TIMESTAMP[TZ] in ms or µs): arrow-go seeks each range's
// first page through the offset index, decodes only the pages up to the
// range's end — the predicate's columns first; rows the planner's
// evaluator proves cannot match (each row a unit with exact bounds) are
// dropped, and the other columns decoded only around the rows left — and
// appends the rows to a temporary table the view reads;
// else read_parquet's file_row_number filtered to the ranges, when DuckDB
// reading each row group touched up to its last kept row costs at most a
// quarter of the file's bytes; else the whole file. A sandboxed engine
// never takes the page path: DuckDB reads every file there, under its
// allowed_directories. Result.Tables[i].Reads says which and why, and the
// bind phase's Detail counts them.
//
// A partition column is not read from the files: each run of kept files
// with the same partition values is one read_parquet selecting the values
// as constants of the columns' types (filegroups.go).
//
// read_parquet matches columns by name (union_by_name) only when some kept
// file's columns differ from the table's: it costs DuckDB a second read of
// every footer. read_parquet globs every path it is given, so a path with ?, *
// or [ reaches DuckDB as a plain-named link to the file (paths.go).
// Result.Phases times each step.
package engine
