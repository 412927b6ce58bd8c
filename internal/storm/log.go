package storm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// Events of the logs.
const (
	evStart     = "start"     // a worker began: Table, Files, Pid
	evOpenError = "open"      // the catalog could not be opened (yet)
	evBeginErr  = "begin"     // Begin failed: no commit was attempted
	evPending   = "pending"   // Commit of Seq is about to be called
	evAck       = "ack"       // Commit acknowledged Seq as snapshot Snap
	evRefused   = "refused"   // Commit refused Seq with ErrConflict
	evFailed    = "failed"    // Commit failed, saying nothing was written
	evUnknown   = "unknown"   // Commit failed, outcome unknown
	evReads     = "reads"     // a reader's running count of checked snapshots
	evReadErr   = "readerr"   // a read failed (the store, not the data)
	evViolation = "violation" // a reader saw an inconsistency
	evStop      = "stop"      // the worker reached its deadline
	evFatal     = "fatal"     // the worker gives up
)

// entry is one line of a worker's log.
type entry struct {
	T     int64  `json:"t"` // unix nanoseconds
	Ev    string `json:"ev"`
	Table string `json:"table,omitempty"`
	Files int    `json:"files,omitempty"`
	Pid   int    `json:"pid,omitempty"`
	Seq   int64  `json:"seq,omitempty"`
	Base  int64  `json:"base,omitempty"`
	Snap  int64  `json:"snap,omitempty"`
	// Ns is how long the call took (Commit, Begin).
	Ns int64 `json:"ns,omitempty"`
	// Retries counts conditional writes the fence refused during one
	// Commit; StoreUnknown the attempts whose outcome the store could
	// not report (the catalog then looks for its commit token).
	Retries      int `json:"retries,omitempty"`
	StoreUnknown int `json:"store_unknown,omitempty"`
	// Unavailable says the error wraps kv.ErrUnavailable.
	Unavailable bool   `json:"unavailable,omitempty"`
	Err         string `json:"err,omitempty"`
	Reads       int64  `json:"reads,omitempty"`
}

// logFile appends entries, one fsynced line each: a worker killed at any
// moment leaves every line before the one it was writing intact.
type logFile struct {
	f   *os.File
	buf bytes.Buffer
}

func createLog(path string) (*logFile, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &logFile{f: f}, nil
}

func (l *logFile) put(e entry) error {
	if e.T == 0 {
		e.T = time.Now().UnixNano()
	}
	l.buf.Reset()
	if err := json.NewEncoder(&l.buf).Encode(e); err != nil {
		return err
	}
	if _, err := l.f.Write(l.buf.Bytes()); err != nil {
		return err
	}
	return l.f.Sync()
}

func (l *logFile) close() error { return l.f.Close() }

// readLog reads a log's entries. Only a last line without its newline
// may be cut short (the worker died writing it) and is then dropped; every
// whole line must parse.
func readLog(path string) ([]entry, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if i := bytes.LastIndexByte(raw, '\n'); i+1 < len(raw) {
		raw = raw[:i+1]
	}
	var out []entry
	for n, line := range bytes.Split(bytes.TrimSuffix(raw, []byte("\n")), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var e entry
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("%s line %d: %v", path, n+1, err)
		}
		out = append(out, e)
	}
	return out, nil
}
