package kv_test

import (
	"errors"
	"io/fs"
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
