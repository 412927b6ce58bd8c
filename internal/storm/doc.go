// Package storm is the many-process commit storm: writer and reader
// processes that share one catalog in PostgreSQL, the logs they keep, and
// the check of the catalog against those logs afterwards. Tests run it at
// a few seconds; a bench program runs it for longer and prints its Report.
//
// # Processes
//
// Every worker is an OS process of its own, so that nothing (a cache, a
// mutex, a connection pool) is shared between them except the database.
// The program that starts a storm starts itself again as each worker: a
// TestMain or main calls MaybeWorker first, which, when the environment
// names a worker, runs it and exits. Start hands each worker its part
// (role, id, table, deadline) in that environment variable.
//
// # Writers
//
// A writer loops until its deadline: Begin, AddFiles of Config.Files files
// whose paths name the writer and the commit's sequence number (and whose
// statistics are derived from those numbers, so anyone can recompute
// them), a short random pause to let others commit in between, Commit.
// Writers of one table conflict (catalog.ErrConflict: refused, nothing
// written, the writer begins again with a new sequence number); a writer
// with a table of its own must never conflict, however many fence retries
// its commits need.
//
// # Logs
//
// Each worker appends JSON lines to its own log and fsyncs every line, so
// that the log of a SIGKILLed worker is whole up to its last line. A
// writer logs a commit as pending before Commit and its outcome after:
// acknowledged (with the snapshot id), refused (conflict), failed (an
// error that says nothing was written) or unknown (an error wrapping
// kv.ErrUnknownOutcome). A pending commit without an outcome is one the
// writer died in: unknown too. Readers log what they checked and every
// inconsistency they saw.
//
// # Readers
//
// A reader loops opening the newest snapshot and random older ones, and
// checks each: every commit's files all visible or none, each file's
// record and statistics as its path says, the plan cache (FileSet,
// ColumnBounds) equal to the rows, the table stats equal to the fold of
// the visible files, the head never going back, and Snapshots dense.
//
// # Check
//
// Check reads the logs and the catalog: every acknowledged commit present
// exactly once, in the snapshot it was acknowledged with; refused and
// failed commits absent; unknown ones all or nothing; no file that no
// writer logged; snapshot ids dense; each snapshot of the storm accounted
// for; and no violation in any reader's log.
package storm
