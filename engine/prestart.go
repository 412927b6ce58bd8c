package engine

import (
	"database/sql"
	"sync"
)

// started is the database Prestart began opening, taken by the first
// engine made without a sandbox.
var started struct {
	once  sync.Once
	mu    sync.Mutex
	ready chan struct{} // closed once db, parse and err are set
	db    *sql.DB
	parse *sql.Stmt
	err   error
}

// Prestart begins opening, on another goroutine, the in-memory DuckDB
// database the next New (or NewWithOptions without a Sandbox) would open,
// so that DuckDB's start (some 6 to 10 ms of one core) runs while the
// process does other work: parsing its command line and opening the
// catalog. A command-line process that is about to run SQL calls it
// first thing; the next engine waits for that database instead of opening
// its own, and reports its error, if any. Calling it again does nothing.
// A database never taken is left open until the process exits.
func Prestart() {
	started.once.Do(func() {
		started.ready = make(chan struct{})
		go func() {
			defer close(started.ready)
			started.db, started.parse, started.err = openEngineDB(nil)
		}()
	})
}

// takeStarted returns the database Prestart opened, once: ok is false when
// Prestart was not called or another engine took it.
func takeStarted() (db *sql.DB, parse *sql.Stmt, ok bool, err error) {
	started.mu.Lock()
	defer started.mu.Unlock()
	if started.ready == nil {
		return nil, nil, false, nil
	}
	<-started.ready
	db, parse, err = started.db, started.parse, started.err
	if db == nil && err == nil {
		return nil, nil, false, nil // taken
	}
	started.db, started.parse, started.err = nil, nil, nil
	return db, parse, true, err
}
