package pqmeta

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/types"
)

// writeInts writes a one-column BIGINT file of n rows.
func writeInts(t *testing.T, p, col string, n int) string {
	t.Helper()
	vals := make([]*types.Value, n)
	for i := range vals {
		v := types.IntValue(int64(i))
		vals[i] = &v
	}
	if err := pqwrite.Write(p, []pqwrite.Column{{Name: col, Type: types.MustParseType("int64"), Values: vals}}, pqwrite.Options{}); err != nil {
		t.Fatal(err)
	}
	return p
}

// A named pipe that takes a listed file's place before its footer is read
// is opened without blocking and refused.
func TestOpenRegularDoesNotBlock(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "pipe.parquet")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := readFooter(fifo, FileIdentity{})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrNotRegular) {
			t.Fatalf("reading a footer from a named pipe: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("reading a footer from a named pipe blocked")
	}
	go func() {
		_, err := OpenIndex(fifo)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), fifo) || !strings.Contains(err.Error(), "named pipe") {
			t.Fatalf("opening the index of a named pipe: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("opening the index of a named pipe blocked")
	}
	f := writeInts(t, filepath.Join(dir, "f.parquet"), "x", 3)
	st, _ := os.Stat(f)
	id := IdentityOf(st)
	id.Inode++
	if _, err := readFooter(f, id); err == nil || !strings.Contains(err.Error(), "replaced") {
		t.Fatalf("a file that is not the one listed: %v", err)
	}
}
