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
	// Len is the number of writes collected.
	Len() int
	Commit() error
	// Close discards an uncommitted batch; it is safe after Commit.
	Close() error
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
