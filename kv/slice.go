package kv

import (
	"bytes"
	"sort"
)

// KV is one key and its value.
type KV struct{ Key, Value []byte }

// SliceIter walks a slice of pairs sorted by key, which the caller leaves
// unchanged while it is in use: the memory store's view of a range, and
// a range a commit read once and serves again.
type SliceIter struct {
	kvs    []KV
	pos    int // -1 or len(kvs): unpositioned
	closed bool
}

// NewSliceIter returns an unpositioned iterator over kvs.
func NewSliceIter(kvs []KV) *SliceIter { return &SliceIter{kvs: kvs, pos: -1} }

func (it *SliceIter) at(i int) bool {
	it.pos = i
	return it.Valid()
}

func (it *SliceIter) First() bool { return it.at(0) }
func (it *SliceIter) Last() bool  { return it.at(len(it.kvs) - 1) }

func (it *SliceIter) Next() bool {
	if !it.Valid() {
		return false
	}
	return it.at(it.pos + 1)
}

func (it *SliceIter) Prev() bool {
	if !it.Valid() {
		return false
	}
	return it.at(it.pos - 1)
}

func (it *SliceIter) SeekGE(key []byte) bool {
	return it.at(sort.Search(len(it.kvs), func(i int) bool { return bytes.Compare(it.kvs[i].Key, key) >= 0 }))
}

func (it *SliceIter) Valid() bool   { return !it.closed && it.pos >= 0 && it.pos < len(it.kvs) }
func (it *SliceIter) Key() []byte   { return it.kvs[it.pos].Key }
func (it *SliceIter) Value() []byte { return it.kvs[it.pos].Value }
func (it *SliceIter) Error() error  { return nil }

func (it *SliceIter) Close() error {
	it.closed = true
	return nil
}
