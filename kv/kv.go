// Package kv is the small ordered key-value interface the catalog is built
// on: point gets, ordered range iteration with bounds, atomic durable write
// batches, consistent read snapshots.
//
// Pebble (an LSM tree) is the embedded default (OpenPebble); an in-memory
// store (NewMemory) serves tests. Every backend must pass the conformance
// suite in kv/kvtest. Extras a backend may offer are separate interfaces
// found by type assertion (Compacter, Sizer), as database/sql does.
//
// Keys order by unsigned bytes. Lower bounds are inclusive, upper bounds
// exclusive; a nil bound is open.
package kv

import "errors"

var (
	// ErrNotFound is returned by Get for a missing key.
	ErrNotFound = errors.New("kv: key not found")
	// ErrLocked is returned when another process holds the store.
	ErrLocked = errors.New("kv: store is in use by another process")
	// ErrConditionFailed is returned by Commit when a condition set with
	// Expect did not hold; nothing was written.
	ErrConditionFailed = errors.New("kv: a condition of the batch no longer holds")
	// ErrUnknownOutcome is returned by Commit when the store stopped
	// answering after the batch was handed to it: it may or may not have
	// been applied. A caller that must know looks for what it wrote.
	// ErrUnavailable wraps failures to reach a networked store (a lost
	// connection, a server shutting down): trying again later may work.
	ErrUnavailable    = errors.New("kv: the store is unavailable")
	ErrUnknownOutcome = errors.New("kv: the store stopped answering during the commit; it may or may not have been applied")
)

// Reader reads keys. Values returned by Get belong to the caller.
type Reader interface {
	Get(key []byte) ([]byte, error)
	// NewIter returns an unpositioned iterator over [lower, upper).
	NewIter(lower, upper []byte) (Iterator, error)
}

// Iterator walks keys in order. Key and Value are valid until the next
// move; copy them to keep them. An iterator sees the data as of its
// creation.
type Iterator interface {
	First() bool
	Last() bool
	Next() bool
	Prev() bool
	// SeekGE moves to the first key ≥ key within the bounds.
	SeekGE(key []byte) bool
	Valid() bool
	Key() []byte
	Value() []byte
	Error() error
	Close() error
}

// Snapshot is a consistent read-only view; it must be closed.
type Snapshot interface {
	Reader
	Close() error
}

// Batch collects writes that Commit applies atomically and durably: after
// Commit returns nil, a crash loses none of them, and no reader ever sees
// some of them without the others.
type Batch interface {
	Set(key, value []byte) error
	Delete(key []byte) error
	// Expect makes Commit conditional: it applies the batch only if key
	// holds value at that moment (a nil value: the key is absent), checked
	// atomically with the writes, and otherwise writes nothing and fails
	// with ErrConditionFailed. Writers that read, decide and write (the
	// catalog's commits) stay correct this way when other writers, in
	// this process or in others sharing the store, commit in between.
	Expect(key, value []byte) error
	// Len is the number of writes collected.
	Len() int
	Commit() error
	// Close discards an uncommitted batch; it is safe after Commit.
	Close() error
}

// Reserver is implemented by batches that can make room for a known
// amount of writes up front. Pebble's batch otherwise doubles its buffer
// as it grows, copying everything written so far each time: a commit of
// ten thousand files' statistics and filters spent half its time there.
// Reserve is a hint, ignored once the batch holds writes.
type Reserver interface {
	Reserve(bytes int)
}

// RangeDeleter is implemented by batches that delete every key in
// [start, end) as one write, at its place in the batch: writes made
// before it to keys in the range are undone, writes after it stand. end
// must be above start. The expiry of a dropped table deletes each of its
// key ranges so; a delete per key held every key of the table in the
// batch at once (hundreds of millions at ten million files).
type RangeDeleter interface {
	DeleteRange(start, end []byte) error
}

// InPlaceSetter is implemented by batches that let a value be written
// into the batch's own memory: SetInPlace adds a write of key with an
// n-byte value and returns those n bytes, which the caller fills before
// calling done and before any other call on the batch. A large value
// (a commit's filters) is then written once, not built and copied: on a
// machine where fresh memory is slow to fault in, each copy of a
// hundred-megabyte commit costs a third of a second. A write the batch
// cannot take returns fewer than n bytes (none) and a done that says why:
// fill the value by appending to value[:0], and check done's error.
type InPlaceSetter interface {
	SetInPlace(key []byte, n int) (value []byte, done func() error)
}

// Store is an ordered key-value store, safe for concurrent use.
type Store interface {
	Reader
	NewSnapshot() (Snapshot, error)
	NewBatch() Batch
	Close() error
}

// Compacter is implemented by stores that can compact a key range, so that
// measured sizes reflect live data.
type Compacter interface {
	Compact(lower, upper []byte) error
}

// WriteLocker is implemented by stores that many processes share.
// LockWrites holds off every batch commit in every process, except those
// of batches made by the returned newBatch, until release is called or
// the process holding the lock dies. It is for the few writers that act
// outside the store between reading and writing (deleting files), where a
// failed condition would come too late. A store that one process owns
// does not need it: there, the catalog's own mutex is enough.
type WriteLocker interface {
	LockWrites() (newBatch func() Batch, release func() error, err error)
}

// SnapshotLimiter is implemented by stores whose open snapshots hold a
// scarce resource (a networked store's pooled connections): SnapshotLimit
// is how many long-lived snapshots (a transaction's, held from its first
// write to its end) may be open at once and still leave the rest of the
// process room to read and write.
type SnapshotLimiter interface {
	SnapshotLimit() int
}

// MultiGetter is implemented by readers that fetch many keys in one round
// trip (a networked store). GetMany returns each key's value, nil for a
// missing key (a present empty value is a non-nil empty slice).
type MultiGetter interface {
	GetMany(keys [][]byte) ([][]byte, error)
}

// Sizer is implemented by stores that can report their size on disk, in
// all and for a key range.
type Sizer interface {
	DiskSize() (int64, error)
	RangeDiskSize(lower, upper []byte) (int64, error)
}

// PrefixEnd returns the smallest key greater than every key with prefix p,
// or nil (no upper bound) when p is all 0xff.
func PrefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}
