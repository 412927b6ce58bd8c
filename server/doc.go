// Package server serves a Lake (package rocklake) to clients: PostgreSQL
// drivers and tools over PostgreSQL's wire protocol, programs over an HTTP
// API, and Iceberg engines over Iceberg's REST catalog on the same HTTP
// listener. Both listeners are on loopback unless configured otherwise.
//
//	server.go       Config, Server: listeners, shutdown, limits
//	auth.go         users, roles and bearer tokens
//	budget.go       the bytes all sessions may hold for their clients
//	metrics.go      Prometheus series
//
// The PostgreSQL protocol (pgproto3 frames the messages):
//
//	pgstart.go      accept, TLS, startup, SCRAM authentication, cancel
//	pgconn.go       the connection under the protocol: whole messages
//	                only, a watch for gone clients while a statement
//	                runs, writes with deadlines
//	pgwire.go       a session: the simple and extended query protocols,
//	                portals, rows out
//	statements.go   one statement's run and answer: what the session
//	                answers itself, and what it hands to the Lake
//	params.go       parameter types inferred where PostgreSQL would
//	types.go        DuckDB's types as PostgreSQL's OIDs and text
//	errpos.go       an error's position in the client's text
//	sqlstate.go     errors as SQLSTATEs
//	identity.go     version(), current_user, pg_cancel_backend, ...
//	syscat.go       pg_catalog and information_schema from the catalog
//	syscat_sql.go   PostgreSQL's SQL over them, for DuckDB to run
//	prepare.go      SQL PREPARE, EXECUTE, DEALLOCATE
//	cursor.go       DECLARE, FETCH, MOVE, CLOSE
//	write.go        INSERT, CREATE TABLE [AS], COPY ... FROM, DELETE,
//	                UPDATE, and writes in transaction blocks
//	copy.go         COPY ... FROM STDIN: the copy-in sub-protocol,
//	                staged as one CSV file for DuckDB to read
//	copy_parse.go   the COPY statement and its options
//	copy_decode.go  text, CSV and binary rows, cut anywhere by CopyData
//	copyout.go      COPY ... TO STDOUT
//	copystream.go   COPY ... TO STDOUT streamed row by row
//
// HTTP:
//
//	http.go         the JSON API (/v1/...), same vocabulary as the CLI
//	iceberg.go      the Iceberg REST catalog, with scan planning
package server
