// Package engine runs SQL on embedded DuckDB (duckdb-go, cgo). It is the
// only package besides the CLI that links DuckDB: the catalog, ingest and
// pruning packages stay pure Go so that they build and test fast and embed
// anywhere.
//
// Every connection is set up alike (see Open): the session time zone is UTC,
// so TIMESTAMPTZ and TIMETZ values print with offset +00, which is the text
// form the catalog stores.
package engine
