package kv

import (
	"bytes"
	"errors"
	"fmt"
	"sync"

	"github.com/google/btree"
)

// An overlay is a store made of two layers:
//
//	reads ──► local layer (B-tree in memory: values and tombstones)
//	             │ key absent here
//	             ▼
//	          base (a Snapshot of another store, never written)
//
// Its batches commit into the local layer only, conditions checked against
// both layers; nothing ever reaches the base's store. A transaction of
// writes uses one to commit its statements speculatively, so that its own
// reads see them, and then commits their net effect to the real store (or
// drops the overlay). Iterators merge the layers, the local one winning
// on equal keys and its tombstones hiding the base's keys.

// ovItem is a key of the local layer: a value, or a tombstone (del).
type ovItem memOp

func ovLess(a, b ovItem) bool { return bytes.Compare(a.k, b.k) < 0 }

type overlay struct {
	mu     sync.RWMutex
	base   Snapshot
	local  *btree.BTreeG[ovItem]
	closed bool
}

// NewOverlay returns a store whose reads see base with the store's own
// writes over it; its writes stay in memory. Closing it closes base.
func NewOverlay(base Snapshot) Store {
	return &overlay{base: base, local: btree.NewG(16, ovLess)}
}

// view is a point-in-time copy of the local layer (a clone costs nothing
// until the next write), with the base it lies over.
func (o *overlay) view() (*ovView, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return nil, errClosed
	}
	return &ovView{o: o, local: o.local.Clone()}, nil
}

func (o *overlay) Get(key []byte) ([]byte, error) {
	o.mu.RLock()
	defer o.mu.RUnlock()
	if o.closed {
		return nil, errClosed
	}
	return ovGet(o.local, o.base, key)
}

func ovGet(local *btree.BTreeG[ovItem], base Reader, key []byte) ([]byte, error) {
	if it, ok := local.Get(ovItem{k: key}); ok {
		if it.del {
			return nil, ErrNotFound
		}
		return bytes.Clone(it.v), nil
	}
	return base.Get(key)
}

func (o *overlay) NewIter(lower, upper []byte) (Iterator, error) {
	v, err := o.view()
	if err != nil {
		return nil, err
	}
	return v.NewIter(lower, upper)
}

// GetMany answers the keys the local layer holds itself and asks the base
// for the rest in one call when it can (a networked store).
func (o *overlay) GetMany(keys [][]byte) ([][]byte, error) {
	v, err := o.view()
	if err != nil {
		return nil, err
	}
	return v.GetMany(keys)
}

func (o *overlay) NewSnapshot() (Snapshot, error) { return o.view() }

func (o *overlay) NewBatch() Batch { return &ovBatch{o: o} }

func (o *overlay) Close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return nil
	}
	o.closed = true
	return o.base.Close()
}

// ovView is a snapshot of an overlay: its local layer as of the view's
// making, over the overlay's base (which the view does not own).
type ovView struct {
	o     *overlay
	local *btree.BTreeG[ovItem]
}

// live fails once the overlay, and with it the base, is closed.
func (v *ovView) live() error {
	v.o.mu.RLock()
	defer v.o.mu.RUnlock()
	if v.o.closed {
		return errClosed
	}
	return nil
}

func (v *ovView) Get(key []byte) ([]byte, error) {
	if err := v.live(); err != nil {
		return nil, err
	}
	return ovGet(v.local, v.o.base, key)
}

func (v *ovView) GetMany(keys [][]byte) ([][]byte, error) {
	if err := v.live(); err != nil {
		return nil, err
	}
	out := make([][]byte, len(keys))
	var rest [][]byte
	var at []int
	for i, k := range keys {
		if it, ok := v.local.Get(ovItem{k: k}); ok {
			if !it.del {
				out[i] = bytes.Clone(it.v)
			}
			continue
		}
		rest, at = append(rest, k), append(at, i)
	}
	if len(rest) == 0 {
		return out, nil
	}
	if mg, ok := v.o.base.(MultiGetter); ok {
		got, err := mg.GetMany(rest)
		if err != nil {
			return nil, err
		}
		for j, i := range at {
			out[i] = got[j]
		}
		return out, nil
	}
	for j, i := range at {
		val, err := v.o.base.Get(rest[j])
		switch {
		case errors.Is(err, ErrNotFound):
		case err != nil:
			return nil, err
		default:
			out[i] = val
		}
	}
	return out, nil
}

func (v *ovView) NewIter(lower, upper []byte) (Iterator, error) {
	if err := v.live(); err != nil {
		return nil, err
	}
	base, err := v.o.base.NewIter(lower, upper)
	if err != nil {
		return nil, err
	}
	it := &ovIter{base: base}
	visit := func(i ovItem) bool {
		if upper != nil && bytes.Compare(i.k, upper) >= 0 {
			return false
		}
		it.loc = append(it.loc, i)
		return true
	}
	if lower == nil {
		v.local.Ascend(visit)
	} else {
		v.local.AscendGreaterOrEqual(ovItem{k: lower}, visit)
	}
	return it, nil
}

func (v *ovView) Close() error { return nil }

// ovIter merges the base's iterator with the local layer's items in the
// iterator's bounds (taken when it was made: a point-in-time view, as the
// base's is). Moving in one direction, both sources sit at or past the
// current key in that direction; a change of direction seeks them again
// around the current key (a base seek may be a round trip, so it happens
// only then).
type ovIter struct {
	base   Iterator
	bok    bool // base is on a key
	loc    []ovItem
	li     int // local position; -1 and len(loc) are off the ends
	fwd    bool
	cur    int // 0: none, 1: base, 2: local
	closed bool
}

const (
	ovNone = iota
	ovBase
	ovLocal
)

func (it *ovIter) localOK() bool { return it.li >= 0 && it.li < len(it.loc) }

// firstAtOrAfter is the local index of the first item ≥ key.
func (it *ovIter) firstAtOrAfter(key []byte) int {
	lo, hi := 0, len(it.loc)
	for lo < hi {
		mid := (lo + hi) / 2
		if bytes.Compare(it.loc[mid].k, key) < 0 {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

func (it *ovIter) settle() bool {
	for {
		lok := it.localOK()
		if !it.bok && !lok {
			it.cur = ovNone
			return false
		}
		c := 0
		switch {
		case !lok:
			c = 1 // the base only
		case !it.bok:
			c = -1 // the local layer only
		default:
			c = bytes.Compare(it.loc[it.li].k, it.base.Key())
			if !it.fwd {
				c = -c
			}
		}
		if c > 0 {
			it.cur = ovBase
			return true
		}
		if c == 0 {
			// The local item hides the base's key: step the base past it.
			if it.fwd {
				it.bok = it.base.Next()
			} else {
				it.bok = it.base.Prev()
			}
		}
		if it.loc[it.li].del {
			it.step()
			continue
		}
		it.cur = ovLocal
		return true
	}
}

// step moves the local position one item in the iterator's direction.
func (it *ovIter) step() {
	if it.fwd {
		it.li++
	} else {
		it.li--
	}
}

func (it *ovIter) First() bool {
	if it.closed {
		return false
	}
	it.fwd, it.li = true, 0
	it.bok = it.base.First()
	return it.settle()
}

func (it *ovIter) Last() bool {
	if it.closed {
		return false
	}
	it.fwd, it.li = false, len(it.loc)-1
	it.bok = it.base.Last()
	return it.settle()
}

func (it *ovIter) SeekGE(key []byte) bool {
	if it.closed {
		return false
	}
	it.fwd, it.li = true, it.firstAtOrAfter(key)
	it.bok = it.base.SeekGE(key)
	return it.settle()
}

func (it *ovIter) Next() bool {
	if !it.Valid() {
		return false
	}
	if !it.fwd {
		// Both sources go to the first key past the current one.
		k := bytes.Clone(it.Key())
		it.fwd = true
		it.bok = it.base.SeekGE(k)
		if it.bok && bytes.Equal(it.base.Key(), k) {
			it.bok = it.base.Next()
		}
		it.li = it.firstAtOrAfter(k)
		if it.li < len(it.loc) && bytes.Equal(it.loc[it.li].k, k) {
			it.li++
		}
		return it.settle()
	}
	if it.cur == ovBase {
		it.bok = it.base.Next()
	} else {
		it.li++
	}
	return it.settle()
}

func (it *ovIter) Prev() bool {
	if !it.Valid() {
		return false
	}
	if it.fwd {
		// Both sources go to the last key before the current one.
		k := bytes.Clone(it.Key())
		it.fwd = false
		if it.bok = it.base.SeekGE(k); it.bok {
			it.bok = it.base.Prev()
		} else if it.base.Error() == nil {
			it.bok = it.base.Last()
		}
		it.li = it.firstAtOrAfter(k) - 1
		return it.settle()
	}
	if it.cur == ovBase {
		it.bok = it.base.Prev()
	} else {
		it.li--
	}
	return it.settle()
}

func (it *ovIter) Valid() bool { return !it.closed && it.cur != ovNone }

func (it *ovIter) Key() []byte {
	if it.cur == ovLocal {
		return it.loc[it.li].k
	}
	return it.base.Key()
}

func (it *ovIter) Value() []byte {
	if it.cur == ovLocal {
		return it.loc[it.li].v
	}
	return it.base.Value()
}

func (it *ovIter) Error() error { return it.base.Error() }

func (it *ovIter) Close() error {
	if it.closed {
		return nil
	}
	it.closed, it.cur = true, ovNone
	return it.base.Close()
}

type ovBatch struct {
	opBatch
	o *overlay
}

func (b *ovBatch) Commit() error {
	if b.closed {
		return errors.New("kv: commit of a closed batch")
	}
	b.closed = true
	o := b.o
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return errClosed
	}
	for _, e := range b.expect {
		v, err := ovGet(o.local, o.base, e.k)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		if e.del != errors.Is(err, ErrNotFound) || (!e.del && !bytes.Equal(v, e.v)) {
			return fmt.Errorf("%w (key %x)", ErrConditionFailed, e.k)
		}
	}
	for _, op := range b.ops {
		o.local.ReplaceOrInsert(ovItem(op))
	}
	return nil
}
