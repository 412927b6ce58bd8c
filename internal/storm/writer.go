package storm

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/kv"
)

// errorPause is how long a worker waits after a failed call before the
// next, so that a server that is down is asked a few times a second
// rather than thousands.
const errorPause = 50 * time.Millisecond

// open opens the catalog, trying again while the database cannot be
// reached and the deadline has not passed.
func open(s spec, lg *logFile) (*catalog.Catalog, *countingStore, error) {
	for {
		c, cs, err := openCatalog(s.Catalog, s.Postgres)
		if err == nil {
			return c, cs, nil
		}
		if err := lg.put(entry{Ev: evOpenError, Err: err.Error(), Unavailable: errors.Is(err, kv.ErrUnavailable)}); err != nil {
			return nil, nil, err
		}
		if time.Now().UnixNano() > s.Deadline {
			return nil, nil, fmt.Errorf("open the catalog: %w", err)
		}
		time.Sleep(errorPause)
	}
}

func runWriter(s spec) error {
	lg, err := createLog(s.Log)
	if err != nil {
		return err
	}
	defer lg.close()
	if err := lg.put(entry{Ev: evStart, Table: s.Table, Files: s.Files, Pid: os.Getpid()}); err != nil {
		return err
	}
	c, cs, err := open(s, lg)
	if err != nil {
		_ = lg.put(entry{Ev: evFatal, Err: err.Error()})
		return err
	}
	defer c.Close()
	for {
		err := ensureTables(c, s.Table)
		if err == nil {
			break
		}
		if time.Now().UnixNano() > s.Deadline {
			_ = lg.put(entry{Ev: evFatal, Err: err.Error()})
			return err
		}
		time.Sleep(errorPause)
	}
	r := rand.New(rand.NewPCG(s.Seed, uint64(s.ID)))
	var seq int64
	// A writer that reaches this point only after the deadline (started
	// late on a loaded machine) still makes one commit: the check holds
	// every writer to having one come back.
	for first := true; first || time.Now().UnixNano() < s.Deadline; first = false {
		t0 := time.Now()
		tx, err := c.Begin()
		if err != nil {
			if err := lg.put(entry{Ev: evBeginErr, Ns: int64(time.Since(t0)), Err: err.Error(), Unavailable: errors.Is(err, kv.ErrUnavailable)}); err != nil {
				return err
			}
			time.Sleep(errorPause)
			continue
		}
		// Every attempt is a new commit with paths of its own, so that
		// a refused or unknown one never shares a path with one that
		// landed.
		seq++
		files := make([]catalog.NewFile, s.Files)
		for j := range files {
			files[j] = newFile(s.ID, seq, j)
		}
		tx.AddFiles(s.Table, files...)
		if s.MaxPause > 0 {
			time.Sleep(time.Duration(r.Int64N(int64(s.MaxPause))))
		}
		if err := lg.put(entry{Ev: evPending, Seq: seq, Base: tx.Base()}); err != nil {
			return err
		}
		retries, unknown := cs.conditionFailed.Load(), cs.unknown.Load()
		t0 = time.Now()
		snap, err := tx.Commit()
		e := entry{Seq: seq, Ns: int64(time.Since(t0)),
			Retries: int(cs.conditionFailed.Load() - retries), StoreUnknown: int(cs.unknown.Load() - unknown)}
		switch {
		case err == nil:
			e.Ev, e.Snap = evAck, snap.ID
		case errors.Is(err, kv.ErrUnknownOutcome):
			// First: an unknown outcome may also match ErrConflict.
			e.Ev, e.Err, e.Unavailable = evUnknown, err.Error(), errors.Is(err, kv.ErrUnavailable)
		case errors.Is(err, catalog.ErrConflict):
			e.Ev, e.Err = evRefused, err.Error()
		default:
			e.Ev, e.Err, e.Unavailable = evFailed, err.Error(), errors.Is(err, kv.ErrUnavailable)
		}
		if err := lg.put(e); err != nil {
			return err
		}
		if e.Ev == evFailed || e.Ev == evUnknown {
			time.Sleep(errorPause)
		}
	}
	return lg.put(entry{Ev: evStop})
}
