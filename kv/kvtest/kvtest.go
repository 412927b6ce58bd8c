// Package kvtest is the conformance suite every kv.Store backend must pass.
package kvtest

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/rocklake/rocklake/kv"
)

// Backend opens stores for the suite. Reopen, when set, closes a store and
// opens the same data again, to check durability.
type Backend struct {
	Open   func(t *testing.T) kv.Store
	Reopen func(t *testing.T, s kv.Store) kv.Store
}

// Run runs the suite.
func Run(t *testing.T, b Backend) {
	tests := []struct {
		name string
		fn   func(t *testing.T, b Backend)
	}{
		{"GetMissing", testGetMissing},
		{"SetGetDelete", testSetGetDelete},
		{"EmptyValueIsNotMissing", testEmptyValue},
		{"BatchIsAtomic", testBatchAtomic},
		{"BatchLastWriteWins", testBatchLastWriteWins},
		{"RandomBatches", testRandomBatches},
		{"LargeRangeDelete", testLargeRangeDelete},
		{"ClosedBatch", testClosedBatch},
		{"UnsignedOrder", testUnsignedOrder},
		{"Bounds", testBounds},
		{"ReverseAndSeek", testReverseAndSeek},
		{"SnapshotIsolation", testSnapshotIsolation},
		{"IteratorPointInTime", testIteratorPointInTime},
		{"CallerOwnsBuffers", testBuffers},
		{"ConcurrentBatches", testConcurrentBatches},
		{"Conditions", testConditions},
		{"CompareAndSwapRace", testCompareAndSwapRace},
		{"LargeBatch", testLargeBatch},
		{"LongScans", testLongScans},
		{"WriteLock", testWriteLock},
		{"GetMany", testGetMany},
		{"Durability", testDurability},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, b) })
	}
}

func set(t *testing.T, s kv.Store, kvs ...string) {
	t.Helper()
	bt := s.NewBatch()
	for i := 0; i+1 < len(kvs); i += 2 {
		if err := bt.Set([]byte(kvs[i]), []byte(kvs[i+1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := bt.Commit(); err != nil {
		t.Fatal(err)
	}
}

func mustGet(t *testing.T, r kv.Reader, key string) string {
	t.Helper()
	v, err := r.Get([]byte(key))
	if err != nil {
		t.Fatalf("get %q: %v", key, err)
	}
	return string(v)
}

func keys(t *testing.T, r kv.Reader, lower, upper []byte) []string {
	t.Helper()
	it, err := r.NewIter(lower, upper)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var out []string
	for ok := it.First(); ok; ok = it.Next() {
		out = append(out, string(it.Key()))
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
	return out
}

func eq(t *testing.T, got, want []string) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func testGetMissing(t *testing.T, b Backend) {
	s := b.Open(t)
	if _, err := s.Get([]byte("nope")); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("want ErrNotFound, got %v", err)
	}
}

func testSetGetDelete(t *testing.T, b Backend) {
	s := b.Open(t)
	set(t, s, "a", "1", "b", "2")
	if mustGet(t, s, "a") != "1" || mustGet(t, s, "b") != "2" {
		t.Fatal("values not read back")
	}
	set(t, s, "a", "3")
	if mustGet(t, s, "a") != "3" {
		t.Fatal("overwrite not read back")
	}
	bt := s.NewBatch()
	_ = bt.Delete([]byte("a"))
	if err := bt.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get([]byte("a")); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("deleted key: want ErrNotFound, got %v", err)
	}
	eq(t, keys(t, s, nil, nil), []string{"b"})
}

func testEmptyValue(t *testing.T, b Backend) {
	s := b.Open(t)
	set(t, s, "k", "")
	v, err := s.Get([]byte("k"))
	if err != nil || len(v) != 0 {
		t.Fatalf("empty value: got %q, %v", v, err)
	}
}

func testBatchAtomic(t *testing.T, b Backend) {
	s := b.Open(t)
	bt := s.NewBatch()
	for i := range 100 {
		_ = bt.Set(fmt.Appendf(nil, "k%03d", i), []byte("v"))
	}
	if bt.Len() != 100 {
		t.Fatalf("Len = %d", bt.Len())
	}
	if got := keys(t, s, nil, nil); len(got) != 0 {
		t.Fatalf("uncommitted writes visible: %d keys", len(got))
	}
	if err := bt.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := keys(t, s, nil, nil); len(got) != 100 {
		t.Fatalf("after commit: %d keys, want 100", len(got))
	}
	// A discarded batch leaves nothing behind.
	bt = s.NewBatch()
	_ = bt.Set([]byte("zz"), []byte("v"))
	_ = bt.Close()
	if _, err := s.Get([]byte("zz")); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("closed batch leaked a write: %v", err)
	}
}

func testBatchLastWriteWins(t *testing.T, b Backend) {
	s := b.Open(t)
	bt := s.NewBatch()
	_ = bt.Set([]byte("k"), []byte("1"))
	_ = bt.Delete([]byte("k"))
	_ = bt.Set([]byte("k"), []byte("2"))
	_ = bt.Set([]byte("j"), []byte("1"))
	_ = bt.Delete([]byte("j"))
	if err := bt.Commit(); err != nil {
		t.Fatal(err)
	}
	if mustGet(t, s, "k") != "2" {
		t.Fatal("last write in a batch must win")
	}
	if _, err := s.Get([]byte("j")); !errors.Is(err, kv.ErrNotFound) {
		t.Fatal("a delete after a set in one batch must win")
	}
}

// testRandomBatches commits random batches over a small key space (the
// empty key and empty values included, keys written many times in one
// batch, values past a megabyte now and then, callers reusing their
// buffers, range deletes among the writes where the backend's batches
// have them) and compares the store with a map after each.
func testRandomBatches(t *testing.T, b Backend) {
	s := b.Open(t)
	rng := rand.New(rand.NewPCG(36, 41))
	model := map[string]string{}
	big := bytes.Repeat([]byte("0123456789abcdef"), 80_000)
	buf := make([]byte, 0, 64)
	for round := range 12 {
		bt := s.NewBatch()
		rd, _ := bt.(kv.RangeDeleter)
		want := maps.Clone(model)
		for range rng.IntN(3000) {
			buf = fmt.Appendf(buf[:0], "%s", []string{"", "\x00", "k", "k\x00", "\xff"}[rng.IntN(5)])
			buf = fmt.Appendf(buf, "%d", rng.IntN(400))
			if rng.IntN(40) == 0 {
				buf = buf[:rng.IntN(2)] // "" and one-byte keys too
			}
			k := string(buf)
			switch r := rng.IntN(10); {
			case r == 9 && rd != nil && rng.IntN(8) == 0:
				// A range from this key to another: writes before it in
				// the batch are undone, writes after it stand.
				end := fmt.Sprintf("%s%d", []string{"", "\x00", "k", "k\x00", "\xff"}[rng.IntN(5)], rng.IntN(400))
				if k >= end {
					continue
				}
				if err := rd.DeleteRange(buf, []byte(end)); err != nil {
					t.Fatal(err)
				}
				for mk := range want {
					if mk >= k && mk < end {
						delete(want, mk)
					}
				}
			case r < 3:
				if err := bt.Delete(buf); err != nil {
					t.Fatal(err)
				}
				delete(want, k)
			default:
				var v []byte
				switch {
				case r == 3:
					v = []byte{}
				case r == 4 && rng.IntN(50) == 0:
					v = big[:len(big)-rng.IntN(100)]
				default:
					v = fmt.Appendf(nil, "v%d.%d", round, rng.IntN(1000))
				}
				if err := bt.Set(buf, v); err != nil {
					t.Fatal(err)
				}
				want[k] = string(v)
				clear(v) // the batch copied it
			}
			clear(buf)
		}
		if err := bt.Commit(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		model = want
		got := map[string]string{}
		it, err := s.NewIter(nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		for ok := it.First(); ok; ok = it.Next() {
			got[string(it.Key())] = string(it.Value())
		}
		if err := it.Error(); err != nil {
			t.Fatal(err)
		}
		_ = it.Close()
		if len(got) != len(model) {
			t.Fatalf("round %d: %d keys, want %d", round, len(got), len(model))
		}
		for k, v := range model {
			if g, ok := got[k]; !ok || g != v {
				t.Fatalf("round %d: key %q holds %d bytes (present %v), want %d", round, k, len(g), ok, len(v))
			}
		}
	}
}

// testLargeRangeDelete deletes a range of more keys than a networked
// backend deletes in one statement, beside keys just outside it, and
// rejects an empty or inverted range.
func testLargeRangeDelete(t *testing.T, b Backend) {
	s := b.Open(t)
	if _, ok := s.NewBatch().(kv.RangeDeleter); !ok {
		t.Skip("the backend's batches have no DeleteRange")
	}
	const n = 120_000
	bt := s.NewBatch()
	for i := range n {
		_ = bt.Set(fmt.Appendf(nil, "r/%06d", i), []byte("v"))
	}
	_ = bt.Set([]byte("r"), []byte("before"))
	_ = bt.Set([]byte("r0"), []byte("after"))
	if err := bt.Commit(); err != nil {
		t.Fatal(err)
	}
	bt = s.NewBatch()
	rd := bt.(kv.RangeDeleter)
	for _, r := range [][2]string{{"r/1", "r/1"}, {"r/2", "r/1"}} {
		if err := rd.DeleteRange([]byte(r[0]), []byte(r[1])); err == nil {
			t.Errorf("a range delete of [%q, %q) was taken", r[0], r[1])
		}
	}
	_ = bt.Set([]byte("r/000007"), []byte("undone"))
	if err := rd.DeleteRange([]byte("r/"), []byte("r0")); err != nil {
		t.Fatal(err)
	}
	_ = bt.Set([]byte("r/000009"), []byte("stands"))
	if err := bt.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := keys(t, s, []byte("r"), []byte("r1")); len(got) != 3 || got[0] != "r" || got[1] != "r/000009" || got[2] != "r0" {
		t.Fatalf("%d keys left of the range and its neighbours (%q ...), want r, r/000009, r0", len(got), got[:min(len(got), 4)])
	}
	if mustGet(t, s, "r/000009") != "stands" {
		t.Fatal("a write after a range delete must stand")
	}
}

func testClosedBatch(t *testing.T, b Backend) {
	s := b.Open(t)
	bt := s.NewBatch()
	_ = bt.Set([]byte("k"), []byte("1"))
	if err := bt.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := bt.Commit(); err == nil {
		t.Fatal("a second commit of one batch must fail")
	}
	if err := bt.Close(); err != nil {
		t.Fatalf("Close after Commit: %v", err)
	}
}

func testUnsignedOrder(t *testing.T, b Backend) {
	s := b.Open(t)
	set(t, s, "\xff", "", "\x80", "", "\x7f", "", "\x00", "", "", "", "\x00\x00", "", "a", "")
	eq(t, keys(t, s, nil, nil), []string{"", "\x00", "\x00\x00", "a", "\x7f", "\x80", "\xff"})
}

func testBounds(t *testing.T, b Backend) {
	s := b.Open(t)
	set(t, s, "a", "", "b", "", "ba", "", "bb", "", "c", "")
	eq(t, keys(t, s, []byte("b"), []byte("c")), []string{"b", "ba", "bb"})
	eq(t, keys(t, s, []byte("b"), kv.PrefixEnd([]byte("b"))), []string{"b", "ba", "bb"})
	eq(t, keys(t, s, []byte("ba"), []byte("bb")), []string{"ba"})
	eq(t, keys(t, s, nil, []byte("b")), []string{"a"})
	eq(t, keys(t, s, []byte("bz"), nil), []string{"c"})
	eq(t, keys(t, s, []byte("x"), []byte("y")), nil)
	// An upper bound at or below the lower one is an empty range, and the
	// store goes on.
	eq(t, keys(t, s, []byte("c"), []byte("a")), nil)
	eq(t, keys(t, s, []byte("b"), []byte("b")), nil)
	if it, err := s.NewIter([]byte("c"), []byte("a")); err != nil {
		t.Fatal(err)
	} else {
		if it.SeekGE([]byte("b")) || it.Last() {
			t.Fatal("an inverted range holds a key")
		}
		it.Close()
	}
	eq(t, keys(t, s, []byte("b"), []byte("c")), []string{"b", "ba", "bb"})
	if kv.PrefixEnd([]byte{0xff, 0xff}) != nil || !bytes.Equal(kv.PrefixEnd([]byte{1, 0xff}), []byte{2}) {
		t.Fatal("PrefixEnd")
	}
}

func testReverseAndSeek(t *testing.T, b Backend) {
	s := b.Open(t)
	set(t, s, "a", "1", "b", "2", "c", "3", "d", "4")
	it, err := s.NewIter([]byte("b"), []byte("d"))
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var back []string
	for ok := it.Last(); ok; ok = it.Prev() {
		back = append(back, string(it.Key())+"="+string(it.Value()))
	}
	eq(t, back, []string{"c=3", "b=2"})
	if !it.SeekGE([]byte("bb")) || string(it.Key()) != "c" {
		t.Fatal("SeekGE(bb) must land on c")
	}
	if it.SeekGE([]byte("d")) {
		t.Fatal("SeekGE past the upper bound must be invalid")
	}
	if !it.SeekGE([]byte("a")) || string(it.Key()) != "b" {
		t.Fatal("SeekGE below the lower bound must land on the lower bound")
	}
}

func testSnapshotIsolation(t *testing.T, b Backend) {
	s := b.Open(t)
	set(t, s, "a", "1", "b", "1")
	snap, err := s.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	set(t, s, "a", "2", "c", "2")
	bt := s.NewBatch()
	_ = bt.Delete([]byte("b"))
	_ = bt.Commit()
	if mustGet(t, snap, "a") != "1" || mustGet(t, snap, "b") != "1" {
		t.Fatal("snapshot saw a later write")
	}
	if _, err := snap.Get([]byte("c")); !errors.Is(err, kv.ErrNotFound) {
		t.Fatal("snapshot saw a later insert")
	}
	eq(t, keys(t, snap, nil, nil), []string{"a", "b"})
	eq(t, keys(t, s, nil, nil), []string{"a", "c"})
}

func testIteratorPointInTime(t *testing.T, b Backend) {
	s := b.Open(t)
	set(t, s, "a", "1", "c", "1")
	it, err := s.NewIter(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	set(t, s, "b", "1")
	var got []string
	for ok := it.First(); ok; ok = it.Next() {
		got = append(got, string(it.Key()))
	}
	eq(t, got, []string{"a", "c"})
}

func testBuffers(t *testing.T, b Backend) {
	s := b.Open(t)
	k, v := []byte("key"), []byte("value")
	bt := s.NewBatch()
	_ = bt.Set(k, v)
	k[0], v[0] = 'X', 'X' // the batch must have copied them
	if err := bt.Commit(); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Get([]byte("key"))
	if string(got) != "value" {
		t.Fatalf("store kept the caller's buffer: %q", got)
	}
	got[0] = 'Y'
	if mustGet(t, s, "key") != "value" {
		t.Fatal("Get must return a copy")
	}
}

func testConcurrentBatches(t *testing.T, b Backend) {
	s := b.Open(t)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				bt := s.NewBatch()
				_ = bt.Set(fmt.Appendf(nil, "w%d-%03d-a", w, i), []byte("x"))
				_ = bt.Set(fmt.Appendf(nil, "w%d-%03d-b", w, i), []byte("x"))
				if err := bt.Commit(); err != nil {
					t.Error(err)
					return
				}
				// Readers see both keys of a batch or neither.
				snap, _ := s.NewSnapshot()
				_, errA := snap.Get(fmt.Appendf(nil, "w%d-%03d-a", w, i))
				_, errB := snap.Get(fmt.Appendf(nil, "w%d-%03d-b", w, i))
				snap.Close()
				if errA != nil || errB != nil {
					t.Errorf("committed batch not fully visible: %v %v", errA, errB)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := len(keys(t, s, nil, nil)); n != 400 {
		t.Fatalf("%d keys after concurrent batches, want 400", n)
	}
}

func testDurability(t *testing.T, b Backend) {
	if b.Reopen == nil {
		t.Skip("backend is not persistent")
	}
	s := b.Open(t)
	set(t, s, "a", "1", "b", "2")
	bt := s.NewBatch()
	_ = bt.Delete([]byte("a"))
	_ = bt.Commit()
	s = b.Reopen(t, s)
	eq(t, keys(t, s, nil, nil), []string{"b"})
	if mustGet(t, s, "b") != "2" {
		t.Fatal("value lost across reopen")
	}
}

func testConditions(t *testing.T, b Backend) {
	s := b.Open(t)
	set(t, s, "k", "1", "e", "")
	commit := func(expect map[string]*string) error {
		bt := s.NewBatch()
		for k, v := range expect {
			var want []byte
			if v != nil {
				want = []byte(*v)
			}
			if err := bt.Expect([]byte(k), want); err != nil {
				t.Fatal(err)
			}
		}
		_ = bt.Set([]byte("w"), []byte("written"))
		_ = bt.Delete([]byte("d"))
		return bt.Commit()
	}
	str := func(s string) *string { return &s }
	for _, tc := range []struct {
		name   string
		expect map[string]*string
		ok     bool
	}{
		{"value matches", map[string]*string{"k": str("1")}, true},
		{"absent key absent", map[string]*string{"missing": nil}, true},
		{"empty value is present", map[string]*string{"e": str("")}, true},
		{"value differs", map[string]*string{"k": str("2")}, false},
		{"present but expected absent", map[string]*string{"k": nil}, false},
		{"empty value is not absent", map[string]*string{"e": nil}, false},
		{"absent but expected a value", map[string]*string{"missing": str("")}, false},
		{"one of two fails", map[string]*string{"k": str("1"), "missing": str("x")}, false},
	} {
		bt := s.NewBatch()
		_ = bt.Delete([]byte("w"))
		_ = bt.Set([]byte("d"), []byte("to delete"))
		if err := bt.Commit(); err != nil {
			t.Fatal(err)
		}
		err := commit(tc.expect)
		_, getErr := s.Get([]byte("w"))
		// A condition guards a batch's deletes as it does its sets.
		_, delErr := s.Get([]byte("d"))
		switch {
		case err != nil && delErr != nil:
			t.Errorf("%s: Commit = %v, yet the batch's delete was applied", tc.name, err)
		case err == nil && delErr == nil:
			t.Errorf("%s: the batch committed without its delete", tc.name)
		}
		switch {
		case tc.ok && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.ok && getErr != nil:
			t.Errorf("%s: write missing after a successful commit: %v", tc.name, getErr)
		case !tc.ok && !errors.Is(err, kv.ErrConditionFailed):
			t.Errorf("%s: Commit = %v, want ErrConditionFailed", tc.name, err)
		case !tc.ok && !errors.Is(getErr, kv.ErrNotFound):
			t.Errorf("%s: a failed condition let the write through", tc.name)
		}
	}
}

// testCompareAndSwapRace increments one counter from many goroutines, each
// read-decide-write guarded by Expect: no increment may be lost or doubled.
func testCompareAndSwapRace(t *testing.T, b Backend) {
	s := b.Open(t)
	const workers, each = 6, 15
	var wg sync.WaitGroup
	var mu sync.Mutex
	acked := 0
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done := 0; done < each; {
				old, err := s.Get([]byte("n"))
				if err != nil && !errors.Is(err, kv.ErrNotFound) {
					t.Error(err)
					return
				}
				n := 0
				if old != nil {
					fmt.Sscan(string(old), &n)
				}
				bt := s.NewBatch()
				_ = bt.Expect([]byte("n"), old)
				_ = bt.Set([]byte("n"), fmt.Appendf(nil, "%d", n+1))
				_ = bt.Set(fmt.Appendf(nil, "log/%06d", n+1), []byte("x"))
				err = bt.Commit()
				if errors.Is(err, kv.ErrConditionFailed) {
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				done++
				mu.Lock()
				acked++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if got := mustGet(t, s, "n"); got != fmt.Sprint(acked) || acked != workers*each {
		t.Fatalf("counter %s after %d acknowledged increments, want %d", got, acked, workers*each)
	}
	if n := len(keys(t, s, []byte("log/"), []byte("log0"))); n != acked {
		t.Fatalf("%d log entries, want %d", n, acked)
	}
}

// testLargeBatch commits more and bigger writes than any one message or
// statement of a networked backend would carry.
func testLargeBatch(t *testing.T, b Backend) {
	s := b.Open(t)
	const n = 30000
	val := bytes.Repeat([]byte("v"), 700)
	bt := s.NewBatch()
	for i := range n {
		_ = bt.Set(fmt.Appendf(nil, "big/%06d", i), val)
	}
	_ = bt.Set([]byte("big/000007"), []byte("last"))
	_ = bt.Delete([]byte("big/000008"))
	if err := bt.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := keys(t, s, []byte("big/"), []byte("big0")); len(got) != n-1 {
		t.Fatalf("%d keys, want %d", len(got), n-1)
	}
	if mustGet(t, s, "big/000007") != "last" {
		t.Fatal("last write in a large batch must win")
	}
	bt = s.NewBatch()
	for i := range n {
		_ = bt.Delete(fmt.Appendf(nil, "big/%06d", i))
	}
	if err := bt.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := keys(t, s, []byte("big/"), []byte("big0")); len(got) != 0 {
		t.Fatalf("%d keys left after deleting all", len(got))
	}
}

// testLongScans walks a range longer than any backend's page of rows, in
// both directions, turning around and seeking on the way.
func testLongScans(t *testing.T, b Backend) {
	s := b.Open(t)
	const n = 5000
	bt := s.NewBatch()
	for i := range n {
		_ = bt.Set(fmt.Appendf(nil, "s%05d", i), fmt.Appendf(nil, "%d", i))
	}
	_ = bt.Set([]byte("r"), nil)
	_ = bt.Set([]byte("t"), nil)
	if err := bt.Commit(); err != nil {
		t.Fatal(err)
	}
	snap, err := s.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	it, err := snap.NewIter([]byte("s"), []byte("t"))
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	at := func(ok bool, i int, what string) {
		t.Helper()
		want := fmt.Sprintf("s%05d", i)
		if i < 0 || i >= n {
			if ok || it.Valid() {
				t.Fatalf("%s: at %q, want exhausted", what, it.Key())
			}
			return
		}
		if !ok || !it.Valid() || string(it.Key()) != want || string(it.Value()) != fmt.Sprint(i) {
			t.Fatalf("%s: valid=%v key=%q, want %q", what, ok, it.Key(), want)
		}
	}
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		at(true, i, "forward")
		i++
	}
	if i != n {
		t.Fatalf("forward scan saw %d keys, want %d", i, n)
	}
	i = n - 1
	for ok := it.Last(); ok; ok = it.Prev() {
		at(true, i, "backward")
		i--
	}
	if i != -1 {
		t.Fatalf("backward scan stopped at %d", i)
	}
	// Turn around in the middle of pages, many times.
	at(it.SeekGE([]byte("s02500")), 2500, "seek")
	pos := 2500
	for step := range 3000 {
		if (step/7)%2 == 0 {
			pos++
			at(it.Next(), pos, "next")
		} else {
			pos--
			at(it.Prev(), pos, "prev")
		}
	}
	// Two iterators of one snapshot walked in step, with reads of the
	// same snapshot between their rows (a networked store shares one
	// connection among them, and may be reading a page ahead), one closed
	// half way.
	other, err := snap.NewIter([]byte("s"), []byte("t"))
	if err != nil {
		t.Fatal(err)
	}
	back, err := snap.NewIter([]byte("s"), []byte("t"))
	if err != nil {
		t.Fatal(err)
	}
	j := n - 1
	okA, okB := other.First(), back.Last()
	for i := 0; okA; i++ {
		if string(other.Key()) != fmt.Sprintf("s%05d", i) {
			t.Fatalf("interleaved forward: at %q, want s%05d", other.Key(), i)
		}
		if okB {
			if string(back.Key()) != fmt.Sprintf("s%05d", j) {
				t.Fatalf("interleaved backward: at %q, want s%05d", back.Key(), j)
			}
			j--
			okB = back.Prev()
			if i == n/2 {
				if err := back.Close(); err != nil {
					t.Fatal(err)
				}
				okB = false
			}
		}
		if i%97 == 0 {
			k := fmt.Sprintf("s%05d", (i*31)%n)
			if v, err := snap.Get([]byte(k)); err != nil || string(v) != fmt.Sprint((i*31)%n) {
				t.Fatalf("get %s between rows: %q, %v", k, v, err)
			}
		}
		okA = other.Next()
	}
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	at(it.SeekGE([]byte("s04999x")), n, "seek past the end")
	at(it.Last(), n-1, "last")
	at(it.Next(), n, "next past the end")
	at(it.SeekGE([]byte("a")), 0, "seek below the range")
	at(it.Prev(), -1, "prev before the start")
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
}

// testWriteLock: while one writer holds the lock, other batches wait; the
// holder's own batches go through.
func testWriteLock(t *testing.T, b Backend) {
	s := b.Open(t)
	l, ok := s.(kv.WriteLocker)
	if !ok {
		t.Skip("the backend is owned by one process and needs no write lock")
	}
	newBatch, release, err := l.LockWrites()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		bt := s.NewBatch()
		_ = bt.Set([]byte("other"), []byte("1"))
		done <- bt.Commit()
	}()
	own := newBatch()
	_ = own.Set([]byte("own"), []byte("1"))
	if err := own.Commit(); err != nil {
		t.Fatalf("the lock holder's batch: %v", err)
	}
	select {
	case err := <-done:
		t.Fatalf("a batch committed while another writer held the lock (err %v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	if _, err := s.Get([]byte("other")); !errors.Is(err, kv.ErrNotFound) {
		t.Fatal("a held-off batch is visible")
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the held-off batch after release: %v", err)
	}
	mustGet(t, s, "other")
	mustGet(t, s, "own")
}

func testGetMany(t *testing.T, b Backend) {
	s := b.Open(t)
	set(t, s, "a", "1", "e", "", "c", "3")
	snap, err := s.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	mg, ok := snap.(kv.MultiGetter)
	if !ok {
		t.Skip("the backend's snapshots read one key at a time")
	}
	set(t, s, "a", "changed")
	got, err := mg.GetMany([][]byte{[]byte("c"), []byte("missing"), []byte("e"), []byte("a"), []byte("c")})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"3", "<nil>", "", "1", "3"}
	for i, v := range got {
		g := string(v)
		if v == nil {
			g = "<nil>"
		}
		if g != want[i] {
			t.Errorf("GetMany[%d] = %q, want %q (missing keys nil, empty values empty, as of the snapshot)", i, g, want[i])
		}
	}
}
