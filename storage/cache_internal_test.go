package storage

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// Where extended attributes do not work, a checksum is a file beside its
// entry: written with it, checked, and removed once it is old and its
// entry gone (not with the entry: it may be another process's, written
// for the same entry fetched again).
func TestCacheChecksumFiles(t *testing.T) {
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "a.parquet")
	data := make([]byte, 100_000)
	for i := range data {
		data[i] = byte(i * 13)
	}
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	obj, err := Local{}.Stat(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	c := &Cache{Dir: t.TempDir(), Budget: 1, noAttrs: true}
	get := func() bool {
		t.Helper()
		p, fetched, release, err := c.Get(ctx, Local{}, obj)
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		if b, _ := os.ReadFile(p); string(b) != string(data) {
			t.Fatal("other bytes")
		}
		return fetched
	}
	get()
	entry, sum := c.Entry(obj), c.Entry(obj)+sumSuffix
	if _, ok := sumAttrOf(entry); ok {
		t.Fatal("the checksum is an attribute")
	}
	if _, err := os.Stat(sum); err != nil {
		t.Fatalf("no checksum file: %v", err)
	}
	f, err := os.OpenFile(entry, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte{0xff, 0xfe}, 5000)
	f.Close()
	if !get() {
		t.Error("a damaged copy was served")
	}
	if get() {
		t.Error("the repaired copy was fetched again")
	}

	exists := func(p string) bool { _, err := os.Stat(p); return !errors.Is(err, os.ErrNotExist) }
	old := time.Now().Add(-2 * EvictGrace)
	os.Chtimes(sum, old, old)
	c.Trim(nil) // used just now: kept over the budget, and so is its checksum
	if !exists(entry) || !exists(sum) {
		t.Fatalf("a recent entry: entry %v, checksum %v", exists(entry), exists(sum))
	}
	os.Chtimes(entry, old, old)
	c.Trim(nil)
	if exists(entry) || exists(sum) {
		t.Errorf("after eviction: entry %v, checksum %v; want both gone", exists(entry), exists(sum))
	}
	// A checksum without its entry, written just now, stays.
	if err := c.writeSum(entry, 42); err != nil {
		t.Fatal(err)
	}
	c.Trim(nil)
	if !exists(sum) {
		t.Error("a new checksum was removed")
	}
}

// On Linux the checksum is an extended attribute of the entry, and no
// file of its own.
func TestCacheChecksumAttribute(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("attributes are used on Linux only")
	}
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "a.parquet")
	if err := os.WriteFile(src, []byte("some bytes of an object"), 0o644); err != nil {
		t.Fatal(err)
	}
	obj, err := Local{}.Stat(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	c := &Cache{Dir: t.TempDir()}
	_, _, release, err := c.Get(ctx, Local{}, obj)
	if err != nil {
		t.Fatal(err)
	}
	release()
	sum, ok := sumAttrOf(c.Entry(obj))
	if !ok {
		t.Skip("the file system of the test's temporary directory keeps no extended attributes")
	}
	if sum != checksum([]byte("some bytes of an object")) {
		t.Errorf("attribute %08x, want the bytes' CRC-32C", sum)
	}
	if _, err := os.Stat(c.Entry(obj) + sumSuffix); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a checksum file beside the attribute: %v", err)
	}
}
