package storage_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/rocklake/rocklake/storage"
)

// BenchmarkCacheGet reads one 256 KiB object through the cache, from a
// local file (no server: what is left is the cache's own work), with the
// checksum and without: cold (the entry removed before each read, so it
// is copied in again) and warm (a hit). Cold without the check copies
// file to file in the kernel (copy_file_range), which hashing the bytes
// on the way forgoes; an object's bytes come through user space from the
// network anyway, so bench/cachecheck is the cold figure that counts.
//
//	go test ./storage -run '^$' -bench CacheGet -count 5
func BenchmarkCacheGet(b *testing.B) {
	ctx := context.Background()
	src := filepath.Join(b.TempDir(), "a.parquet")
	if err := os.WriteFile(src, payload(256<<10, 1), 0o644); err != nil {
		b.Fatal(err)
	}
	obj, err := storage.Local{}.Stat(ctx, src)
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range []struct {
		name string
		off  bool
	}{{"check", false}, {"nocheck", true}} {
		for _, temp := range []string{"cold", "warm"} {
			b.Run(temp+"/"+mode.name, func(b *testing.B) {
				c := &storage.Cache{Dir: b.TempDir(), NoChecksum: mode.off}
				b.SetBytes(obj.Size)
				for b.Loop() {
					if temp == "cold" {
						os.Remove(c.Entry(obj))
					}
					_, _, release, err := c.Get(ctx, storage.Local{}, obj)
					if err != nil {
						b.Fatal(err)
					}
					release()
				}
			})
		}
	}
}
