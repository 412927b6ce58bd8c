// Package engine runs SQL on embedded DuckDB (duckdb-go, cgo). It is the
// only package besides the CLI that links DuckDB: the catalog, ingest and
// pruning packages stay pure Go so that they build and test fast and embed
// anywhere.
//
// Every connection is set up alike (see Open): the session time zone is UTC,
// so TIMESTAMPTZ and TIMETZ values print with offset +00, which is the text
// form the catalog stores.
//
// # A query
//
//	parse    DuckDB's json_serialize_sql gives the parse tree (cached per
//	         query text): catalog tables and each SELECT's WHERE conjuncts
//	plan     conjuncts naming one table's columns are printed back by DuckDB
//	         (json_deserialize_sql, one call, cached per conjunct), bound
//	         (package expr) and pruned (package prune)
//	metadata count/min/max answered from statistics when they prove it
//	bind     more than 64 kept files go to DuckDB as a VARCHAR[] variable
//	execute  one round trip: CREATE TEMP VIEW <table> AS SELECT <casts> FROM
//	         read_parquet(<kept files>) for each table, then the query as
//	         written; the views are dropped after the caller has the rows
//
// read_parquet matches columns by name (union_by_name) only when some kept
// file's columns differ from the table's: it costs DuckDB a second read of
// every footer. Result.Phases times each step.
package engine
