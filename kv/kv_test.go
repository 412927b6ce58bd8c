package kv_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/rocklake/rocklake/kv"
	"github.com/rocklake/rocklake/kv/kvtest"
)

func TestPebbleConformance(t *testing.T) {
	dirs := map[kv.Store]string{}
	open := func(t *testing.T, dir string, create bool) kv.Store {
		s, err := kv.OpenPebble(dir, kv.PebbleOptions{Create: create})
		if err != nil {
			t.Fatal(err)
		}
		dirs[s] = dir
		t.Cleanup(func() { s.Close() })
		return s
	}
	kvtest.Run(t, kvtest.Backend{
		Open: func(t *testing.T) kv.Store { return open(t, t.TempDir(), true) },
		Reopen: func(t *testing.T, s kv.Store) kv.Store {
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			return open(t, dirs[s], false)
		},
	})
}

func TestMemoryConformance(t *testing.T) {
	kvtest.Run(t, kvtest.Backend{Open: func(t *testing.T) kv.Store { return kv.NewMemory() }})
}

func TestPebbleMissingDirectory(t *testing.T) {
	_, err := kv.OpenPebble(t.TempDir()+"/none", kv.PebbleOptions{})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("want fs.ErrNotExist, got %v", err)
	}
}

func TestPebbleLockedTwice(t *testing.T) {
	dir := t.TempDir()
	s, err := kv.OpenPebble(dir, kv.PebbleOptions{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := kv.OpenPebble(dir, kv.PebbleOptions{}); !errors.Is(err, kv.ErrLocked) {
		t.Fatalf("second open: want ErrLocked, got %v", err)
	}
}

// TestLargeCommitLeavesNoLog commits one batch larger than Pebble's
// memtable, as an add of many files does, and closes the store: no
// write-ahead log of that size is left in its directory (Pebble would keep
// it to recycle, until the next open for writing).
func TestLargeCommitLeavesNoLog(t *testing.T) {
	dir := t.TempDir()
	s, err := kv.OpenPebble(dir, kv.PebbleOptions{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	b := s.NewBatch()
	val := make([]byte, 1<<10)
	for i := 0; i < 40<<10; i++ { // 40 MiB
		if err := b.Set([]byte(fmt.Sprintf("k%08d", i)), val); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	b.Close()
	// Writes after it, as the next commits: the large log is obsolete
	// once its rows are in tables.
	for i := 0; i < 3; i++ {
		b := s.NewBatch()
		if err := b.Set([]byte(fmt.Sprintf("after%d", i)), val); err != nil {
			t.Fatal(err)
		}
		if err := b.Commit(); err != nil {
			t.Fatal(err)
		}
		b.Close()
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var logs, tables int64
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		switch filepath.Ext(e.Name()) {
		case ".log":
			logs += info.Size()
		case ".sst":
			tables += info.Size()
		}
	}
	if tables == 0 || logs > 1<<20 {
		t.Fatalf("after a 40 MiB commit: %d bytes of logs beside %d of tables", logs, tables)
	}
}

// Values written in place land whole beside ordinary sets and deletes,
// in the batch's order (a later write of a key wins), and a batch whose
// condition fails writes none of them.
func TestPebbleSetInPlace(t *testing.T) {
	s, err := kv.OpenPebble(t.TempDir(), kv.PebbleOptions{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	write := func(b kv.Batch, k string, n int, fill byte) {
		v, done := b.(kv.InPlaceSetter).SetInPlace([]byte(k), n)
		if len(v) != n {
			t.Fatalf("%s: %d bytes to fill, want %d", k, len(v), n)
		}
		for i := range v {
			v[i] = fill + byte(i)
		}
		if err := done(); err != nil {
			t.Fatal(err)
		}
	}
	want := func(k string, n int, fill byte) []byte {
		v := make([]byte, n)
		for i := range v {
			v[i] = fill + byte(i)
		}
		return v
	}
	b := s.NewBatch()
	write(b, "a", 3<<20, 1)
	b.Set([]byte("b"), []byte("plain"))
	write(b, "c", 0, 0)
	write(b, "b", 10, 7)
	b.Delete([]byte("d"))
	write(b, "d", 5, 9)
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		k    string
		want []byte
	}{{"a", want("a", 3<<20, 1)}, {"b", want("b", 10, 7)}, {"c", []byte{}}, {"d", want("d", 5, 9)}} {
		got, err := s.Get([]byte(c.k))
		if err != nil || !bytes.Equal(got, c.want) {
			t.Errorf("%s: %d bytes, %v; want %d", c.k, len(got), err, len(c.want))
		}
	}
	b = s.NewBatch()
	b.Expect([]byte("b"), []byte("not this"))
	write(b, "e", 100, 3)
	if err := b.Commit(); !errors.Is(err, kv.ErrConditionFailed) {
		t.Fatalf("a batch whose condition fails: %v", err)
	}
	if _, err := s.Get([]byte("e")); !errors.Is(err, kv.ErrNotFound) {
		t.Errorf("a failed batch wrote in place: %v", err)
	}
}

// A batch refuses, with ErrBatchTooLarge, each write that would take it
// past its limit (Pebble itself panics at 4 GB), whichever kind of write it
// is; the writes it took before stand, and nothing reaches the store
// unless it commits.
func TestPebbleBatchLimit(t *testing.T) {
	defer kv.SetPebbleBatchLimit(64 << 10)()
	s, err := kv.OpenPebble(t.TempDir(), kv.PebbleOptions{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	value := bytes.Repeat([]byte("v"), 1000)
	for _, kind := range []string{"set", "in place", "delete"} {
		b := s.NewBatch()
		took := 0
		var err error
		for i := 0; err == nil; i++ {
			k := fmt.Appendf(nil, "%s-%05d", kind, i)
			switch kind {
			case "set":
				err = b.Set(k, value)
			case "in place":
				v, done := b.(kv.InPlaceSetter).SetInPlace(k, len(value))
				v = append(v[:0], value...)
				err = done()
			case "delete":
				err = b.Delete(append(k, value[:200]...))
			}
			if err == nil {
				took++
			}
			if i > 100_000 {
				t.Fatalf("%s: no refusal after %d writes", kind, i)
			}
		}
		if !errors.Is(err, kv.ErrBatchTooLarge) || took < 30 || b.Len() != took {
			t.Fatalf("%s: refused after %d writes (batch holds %d) with %v", kind, took, b.Len(), err)
		}
		if _, gerr := s.Get(fmt.Appendf(nil, "%s-%05d", kind, 0)); !errors.Is(gerr, kv.ErrNotFound) {
			t.Fatalf("%s: a refused batch reached the store: %v", kind, gerr)
		}
		b.Close()
	}
}
