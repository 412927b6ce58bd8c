package kv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/cockroachdb/pebble/v2"
)

// PebbleOptions configure OpenPebble. The zero value opens an existing
// store read-write.
type PebbleOptions struct {
	// Create makes the directory and a new store when none exists.
	Create bool
}

type pebbleStore struct {
	db     *pebble.DB
	dir    string
	closed atomic.Bool
}

// OpenPebble opens the Pebble store in dir. It fails with ErrLocked when
// another process holds it, and with fs.ErrNotExist when dir holds no store
// and opts.Create is false.
func OpenPebble(dir string, opts PebbleOptions) (Store, error) {
	if !opts.Create {
		// Pebble would create the directory before failing; look first, so
		// that a mistyped path is left as it was.
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("%s: no such directory: %w", dir, fs.ErrNotExist)
		}
		// Pebble takes its LOCK file before it finds there is no store; a
		// directory without a manifest is left untouched instead.
		if m, _ := filepath.Glob(filepath.Join(dir, "MANIFEST-*")); len(m) == 0 {
			return nil, fmt.Errorf("%s: no key-value store here: %w", dir, fs.ErrNotExist)
		}
	}
	db, err := pebble.Open(dir, &pebble.Options{
		ErrorIfNotExists: !opts.Create,
		Logger:           quietLogger{},
	})
	if err != nil {
		if isLockError(err) {
			return nil, fmt.Errorf("%s: %w", dir, ErrLocked)
		}
		if errors.Is(err, pebble.ErrDBDoesNotExist) {
			return nil, fmt.Errorf("%s: no key-value store here: %w", dir, fs.ErrNotExist)
		}
		return nil, fmt.Errorf("open pebble store %s: %w", dir, err)
	}
	return &pebbleStore{db: db, dir: dir}, nil
}

// isLockError recognises Pebble's failure to take the directory's LOCK
// file, which flock reports as EAGAIN (or, within one process, as a lock
// already held).
func isLockError(err error) bool {
	return errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EWOULDBLOCK) ||
		strings.Contains(err.Error(), "lock held by current process")
}

// quietLogger drops Pebble's informational messages (a CLI prints its own)
// and keeps errors.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any) {}
func (quietLogger) Errorf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "pebble: "+format+"\n", args...)
}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf("pebble: "+format, args...))
}

func (s *pebbleStore) Get(key []byte) ([]byte, error) { return pebbleGet(s.db.Get, key) }

func pebbleGet(get func([]byte) ([]byte, io.Closer, error), key []byte) ([]byte, error) {
	v, closer, err := get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	out := append([]byte{}, v...)
	return out, closer.Close()
}

func (s *pebbleStore) NewIter(lower, upper []byte) (Iterator, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, err
	}
	return pebbleIter{it}, nil
}

func (s *pebbleStore) NewSnapshot() (Snapshot, error) { return pebbleSnapshot{s.db.NewSnapshot()}, nil }

func (s *pebbleStore) NewBatch() Batch { return &pebbleBatch{b: s.db.NewBatch()} }

// Close is idempotent: Pebble itself panics on a second close.
func (s *pebbleStore) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	return s.db.Close()
}

// Compact compacts [lower, upper) and flushes the memtable first, so that a
// size measured afterwards is of compacted tables only.
func (s *pebbleStore) Compact(lower, upper []byte) error {
	if err := s.db.Flush(); err != nil {
		return err
	}
	if upper == nil {
		upper = []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	}
	if lower == nil {
		lower = []byte{}
	}
	return s.db.Compact(context.Background(), lower, upper, true)
}

// DiskSize sums the sizes of the store's files.
func (s *pebbleStore) DiskSize() (int64, error) {
	var total int64
	err := filepath.WalkDir(s.dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		total += info.Size()
		return nil
	})
	return total, err
}

// RangeDiskSize estimates the bytes of sstables that hold [lower, upper).
func (s *pebbleStore) RangeDiskSize(lower, upper []byte) (int64, error) {
	n, err := s.db.EstimateDiskUsage(lower, upper)
	return int64(n), err
}

type pebbleSnapshot struct{ s *pebble.Snapshot }

func (p pebbleSnapshot) Get(key []byte) ([]byte, error) {
	return pebbleGet(p.s.Get, key)
}

func (p pebbleSnapshot) NewIter(lower, upper []byte) (Iterator, error) {
	it, err := p.s.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, err
	}
	return pebbleIter{it}, nil
}

func (p pebbleSnapshot) Close() error { return p.s.Close() }

type pebbleIter struct{ it *pebble.Iterator }

func (p pebbleIter) First() bool            { return p.it.First() }
func (p pebbleIter) Last() bool             { return p.it.Last() }
func (p pebbleIter) Next() bool             { return p.it.Next() }
func (p pebbleIter) Prev() bool             { return p.it.Prev() }
func (p pebbleIter) SeekGE(key []byte) bool { return p.it.SeekGE(key) }
func (p pebbleIter) Valid() bool            { return p.it.Valid() }
func (p pebbleIter) Key() []byte            { return p.it.Key() }
func (p pebbleIter) Value() []byte          { return p.it.Value() }
func (p pebbleIter) Error() error           { return p.it.Error() }
func (p pebbleIter) Close() error           { return p.it.Close() }

type pebbleBatch struct {
	b      *pebble.Batch
	closed bool
}

func (p *pebbleBatch) Set(key, value []byte) error { return p.b.Set(key, value, nil) }
func (p *pebbleBatch) Delete(key []byte) error     { return p.b.Delete(key, nil) }
func (p *pebbleBatch) Len() int                    { return int(p.b.Count()) }

// Commit writes the batch with fsync: a catalog commit must survive a crash
// once it has been acknowledged.
func (p *pebbleBatch) Commit() error {
	if p.closed {
		return errors.New("kv: commit of a closed batch")
	}
	err := p.b.Commit(pebble.Sync)
	p.closed = true
	_ = p.b.Close()
	return err
}

func (p *pebbleBatch) Close() error {
	if p.closed {
		return nil
	}
	p.closed = true
	return p.b.Close()
}
