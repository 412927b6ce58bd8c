package kv_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/rocklake/rocklake/kv"
	"github.com/rocklake/rocklake/kv/kvtest"
)

// overlayOver makes an overlay over a snapshot of a memory store that
// holds keys, each hidden again by a tombstone in the overlay: the overlay
// starts empty, as the suite wants, with tombstones and base keys around
// every key the suite writes.
func overlayOver(t *testing.T, keys []string) kv.Store {
	base := kv.NewMemory()
	t.Cleanup(func() { base.Close() })
	b := base.NewBatch()
	for _, k := range keys {
		_ = b.Set([]byte(k), []byte("base "+k))
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	snap, err := base.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	o := kv.NewOverlay(snap)
	t.Cleanup(func() { o.Close() })
	b = o.NewBatch()
	for _, k := range keys {
		_ = b.Delete([]byte(k))
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	// A write to the base's store after the snapshot is not the overlay's.
	b = base.NewBatch()
	_ = b.Set([]byte("a"), []byte("late"))
	_ = b.Set([]byte("zz-late"), []byte("late"))
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	return o
}

func TestOverlayConformance(t *testing.T) {
	t.Run("EmptyBase", func(t *testing.T) {
		kvtest.Run(t, kvtest.Backend{Open: func(t *testing.T) kv.Store { return overlayOver(t, nil) }})
	})
	t.Run("HiddenBase", func(t *testing.T) {
		var keys []string
		for _, k := range []string{"", "a", "aa", "b", "ba", "bb", "c", "k", "s", "s00010", "s04999", "t", "x", "zz", "big/000007"} {
			keys = append(keys, k, k+"\x00", k+"\xff")
		}
		kvtest.Run(t, kvtest.Backend{Open: func(t *testing.T) kv.Store { return overlayOver(t, keys) }})
	})
}

// TestOverlayMatchesOneStore is a differential check: random batches go
// to a store (over a base of random keys) and to an overlay of a snapshot
// of the base, and every read of the overlay must equal the store's:
// gets, multi-gets and random walks of iterators (seeks, both directions,
// turning around) over random bounds.
func TestOverlayMatchesOneStore(t *testing.T) {
	for seed := range uint64(40) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { overlayDifferential(t, seed) })
	}
}

func overlayDifferential(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	key := func() []byte { return fmt.Appendf(nil, "%02d", rng.IntN(60)) }
	model, base := kv.NewMemory(), kv.NewMemory()
	if seed%2 == 1 {
		// Half the runs lie over Pebble, whose iterators differ from the
		// memory store's at their ends.
		var err error
		if base, err = kv.OpenPebble(t.TempDir(), kv.PebbleOptions{Create: true}); err != nil {
			t.Fatal(err)
		}
	}
	defer model.Close()
	defer base.Close()
	write := func(s kv.Store, ops [][2][]byte) {
		b := s.NewBatch()
		for _, op := range ops {
			if op[1] == nil {
				_ = b.Delete(op[0])
			} else {
				_ = b.Set(op[0], op[1])
			}
		}
		if err := b.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	var seedOps [][2][]byte
	for range rng.IntN(50) {
		seedOps = append(seedOps, [2][]byte{key(), fmt.Appendf(nil, "b%d", rng.IntN(1000))})
	}
	write(model, seedOps)
	write(base, seedOps)
	baseModel := kv.NewMemory()
	defer baseModel.Close()
	write(baseModel, seedOps)
	snap, err := base.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	o := kv.NewOverlay(snap)
	defer o.Close()
	late := [][2][]byte{{key(), []byte("after the snapshot")}}
	write(base, late)
	write(baseModel, late)

	for round := range 30 {
		var ops [][2][]byte
		for range rng.IntN(8) {
			if rng.IntN(3) == 0 {
				ops = append(ops, [2][]byte{key(), nil})
			} else {
				ops = append(ops, [2][]byte{key(), fmt.Appendf(nil, "o%d", rng.IntN(1000))})
			}
		}
		write(model, ops)
		write(o, ops)
		for range 5 {
			k := key()
			want, werr := model.Get(k)
			got, gerr := o.Get(k)
			if !bytes.Equal(want, got) || errors.Is(werr, kv.ErrNotFound) != errors.Is(gerr, kv.ErrNotFound) {
				t.Fatalf("round %d: Get(%s) = %q, %v; want %q, %v", round, k, got, gerr, want, werr)
			}
		}
		keys := [][]byte{key(), key(), key()}
		many, err := o.(kv.MultiGetter).GetMany(keys)
		if err != nil {
			t.Fatal(err)
		}
		for i, k := range keys {
			want, _ := model.Get(k)
			if !bytes.Equal(many[i], want) || (many[i] == nil) != (want == nil) {
				t.Fatalf("round %d: GetMany %s = %q, want %q", round, k, many[i], want)
			}
		}
		var lower, upper []byte
		if rng.IntN(2) == 0 {
			lower = key()
		}
		if rng.IntN(2) == 0 {
			upper = key()
		}
		a, err := model.NewIter(lower, upper)
		if err != nil {
			t.Fatal(err)
		}
		b, err := o.NewIter(lower, upper)
		if err != nil {
			t.Fatal(err)
		}
		for step := range 40 {
			var wa, wb bool
			var what string
			switch m := rng.IntN(6); {
			case m == 0:
				what, wa, wb = "First", a.First(), b.First()
			case m == 1:
				what, wa, wb = "Last", a.Last(), b.Last()
			case m == 2:
				k := key()
				what, wa, wb = "SeekGE "+string(k), a.SeekGE(k), b.SeekGE(k)
			case m == 3:
				what, wa, wb = "Prev", a.Prev(), b.Prev()
			default:
				what, wa, wb = "Next", a.Next(), b.Next()
			}
			if wa != wb || a.Valid() != b.Valid() {
				t.Fatalf("round %d step %d [%q, %q) %s: overlay %v, store %v", round, step, lower, upper, what, wb, wa)
			}
			if wa && (!bytes.Equal(a.Key(), b.Key()) || !bytes.Equal(a.Value(), b.Value())) {
				t.Fatalf("round %d step %d [%q, %q) %s: overlay at %q=%q, store at %q=%q", round, step, lower, upper, what, b.Key(), b.Value(), a.Key(), a.Value())
			}
		}
		a.Close()
		b.Close()
	}
	// The base's store never saw the overlay's writes.
	if got, want := kvtest.Digest(t, base), kvtest.Digest(t, baseModel); got != want {
		t.Fatalf("the base's store changed: digest %s, want %s", got, want)
	}
}
