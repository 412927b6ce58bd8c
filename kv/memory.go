package kv

import (
	"bytes"
	"errors"
	"fmt"
	"sync"

	"github.com/google/btree"
)

func memLess(a, b KV) bool { return bytes.Compare(a.Key, b.Key) < 0 }

// memStore keeps keys in a copy-on-write B-tree: a snapshot is a clone,
// which costs nothing until the next write. It is for tests and tools, not
// for data that must survive the process.
type memStore struct {
	mu     sync.RWMutex
	tree   *btree.BTreeG[KV]
	closed bool
}

// NewMemory returns an empty in-memory store.
func NewMemory() Store {
	return &memStore{tree: btree.NewG(16, memLess)}
}

var errClosed = errors.New("kv: store is closed")

func (m *memStore) view() (*btree.BTreeG[KV], error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, errClosed
	}
	return m.tree.Clone(), nil
}

func (m *memStore) Get(key []byte) ([]byte, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, errClosed
	}
	return memGet(m.tree, key)
}

func memGet(t *btree.BTreeG[KV], key []byte) ([]byte, error) {
	it, ok := t.Get(KV{Key: key})
	if !ok {
		return nil, ErrNotFound
	}
	return append([]byte{}, it.Value...), nil
}

func (m *memStore) NewIter(lower, upper []byte) (Iterator, error) {
	t, err := m.view()
	if err != nil {
		return nil, err
	}
	return newMemIter(t, lower, upper), nil
}

func (m *memStore) NewSnapshot() (Snapshot, error) {
	t, err := m.view()
	if err != nil {
		return nil, err
	}
	return &memSnapshot{t: t}, nil
}

func (m *memStore) NewBatch() Batch { return &memBatch{m: m} }

func (m *memStore) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	return nil
}

type memSnapshot struct{ t *btree.BTreeG[KV] }

func (s *memSnapshot) Get(key []byte) ([]byte, error) { return memGet(s.t, key) }
func (s *memSnapshot) NewIter(lower, upper []byte) (Iterator, error) {
	return newMemIter(s.t, lower, upper), nil
}
func (s *memSnapshot) Close() error { return nil }

// newMemIter materialises its range when created, which gives it a
// point-in-time view; fine for the sizes tests use.
func newMemIter(t *btree.BTreeG[KV], lower, upper []byte) *SliceIter {
	var items []KV
	visit := func(i KV) bool {
		if upper != nil && bytes.Compare(i.Key, upper) >= 0 {
			return false
		}
		items = append(items, i)
		return true
	}
	if lower == nil {
		t.Ascend(visit)
	} else {
		t.AscendGreaterOrEqual(KV{Key: lower}, visit)
	}
	return NewSliceIter(items)
}

type memOp struct {
	k, v []byte
	del  bool
	end  []byte // a range delete of [k, end) (memory batches only)
}

// opBatch collects a batch's writes and conditions in memory, for the
// stores that apply them themselves (memory, overlay).
type opBatch struct {
	ops    []memOp
	expect []memOp // del: the key must be absent
	closed bool
}

func (b *opBatch) Set(key, value []byte) error {
	if b.closed {
		return errors.New("kv: write to a closed batch")
	}
	b.ops = append(b.ops, memOp{k: append([]byte{}, key...), v: append([]byte{}, value...)})
	return nil
}

func (b *opBatch) Delete(key []byte) error {
	if b.closed {
		return errors.New("kv: write to a closed batch")
	}
	b.ops = append(b.ops, memOp{k: append([]byte{}, key...), del: true})
	return nil
}

func (b *opBatch) Expect(key, value []byte) error {
	if b.closed {
		return errors.New("kv: condition on a closed batch")
	}
	b.expect = append(b.expect, memOp{k: append([]byte{}, key...), v: append([]byte{}, value...), del: value == nil})
	return nil
}

func (b *opBatch) Len() int { return len(b.ops) }

func (b *opBatch) Close() error {
	b.closed = true
	return nil
}

type memBatch struct {
	opBatch
	m *memStore
}

// DeleteRange is kv.RangeDeleter.
func (b *memBatch) DeleteRange(start, end []byte) error {
	if b.closed {
		return errors.New("kv: write to a closed batch")
	}
	if end == nil || bytes.Compare(start, end) >= 0 {
		return fmt.Errorf("kv: range delete of [%x, %x): the end must be above the start", start, end)
	}
	b.ops = append(b.ops, memOp{k: bytes.Clone(start), end: bytes.Clone(end), del: true})
	return nil
}

func (b *memBatch) Commit() error {
	if b.closed {
		return errors.New("kv: commit of a closed batch")
	}
	b.closed = true
	b.m.mu.Lock()
	defer b.m.mu.Unlock()
	if b.m.closed {
		return errClosed
	}
	for _, e := range b.expect {
		v, err := memGet(b.m.tree, e.k)
		if e.del != errors.Is(err, ErrNotFound) || (!e.del && !bytes.Equal(v, e.v)) {
			return fmt.Errorf("%w (key %x)", ErrConditionFailed, e.k)
		}
	}
	for _, op := range b.ops {
		if op.end != nil {
			var gone []KV
			b.m.tree.AscendRange(KV{Key: op.k}, KV{Key: op.end}, func(it KV) bool {
				gone = append(gone, it)
				return true
			})
			for _, it := range gone {
				b.m.tree.Delete(it)
			}
			continue
		}
		if op.del {
			b.m.tree.Delete(KV{Key: op.k})
		} else {
			b.m.tree.ReplaceOrInsert(KV{Key: op.k, Value: op.v})
		}
	}
	return nil
}
