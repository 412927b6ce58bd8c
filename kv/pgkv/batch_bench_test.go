package pgkv

import (
	"fmt"
	"runtime"
	"testing"
)

// BenchmarkBatchDeletes collects an expiry-shaped batch (a million
// deletes of 30-byte keys, no server involved) and reports the heap it
// holds per write: the batch is held whole until its commit.
func BenchmarkBatchDeletes(b *testing.B) {
	const n = 1_000_000
	var held uint64
	for range b.N {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		bt := &batch{}
		key := make([]byte, 0, 30)
		for i := range n {
			key = fmt.Appendf(key[:0], "\x05stats/table7/col%03d/%012d", i%10, i)
			if err := bt.Delete(key); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		held = after.HeapAlloc - before.HeapAlloc
		runtime.KeepAlive(bt)
	}
	b.ReportMetric(float64(held)/n, "heap-B/write")
}
