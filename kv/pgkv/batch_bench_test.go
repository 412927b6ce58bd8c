package pgkv

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"testing"

	"github.com/rocklake/rocklake/internal/pgtest"
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

// BenchmarkRangeDelete deletes 500,000 keys (30-byte keys, 100-byte
// values: a dropped table's rows) as one range delete, against the same
// keys deleted one by one in one batch: the expiry of a dropped table
// takes the first way.
func BenchmarkRangeDelete(b *testing.B) {
	const n = 500_000
	s, err := Init(context.Background(), pgtest.URL(b), Options{RetryFor: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	val := make([]byte, 100)
	key := func(i int) []byte { return fmt.Appendf(nil, "\x05table0007/col%03d/%012d", i%10, i) }
	fill := func() {
		bt := s.NewBatch()
		for i := range n {
			_ = bt.Set(key(i), val)
		}
		if err := bt.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	for _, ranged := range []bool{true, false} {
		b.Run(fmt.Sprint("range=", ranged), func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				fill()
				b.StartTimer()
				bt := s.NewBatch()
				if ranged {
					_ = bt.(*batch).DeleteRange([]byte("\x05"), []byte("\x06"))
				} else {
					for i := range n {
						_ = bt.Delete(key(i))
					}
				}
				if err := bt.Commit(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkBatchOrder orders an expiry-shaped batch of a million writes
// for its commit (no server involved): deletes of 30-byte keys made table
// by table and column by column, so that the log is in no key order.
func BenchmarkBatchOrder(b *testing.B) {
	const n = 1_000_000
	bt := &batch{}
	key := make([]byte, 0, 40)
	for i := range n {
		key = fmt.Appendf(key[:0], "\x05stats/table7/col%03d/%012d", i%10, i/10)
		if err := bt.Delete(key); err != nil {
			b.Fatal(err)
		}
	}
	ops := bt.ops
	for b.Loop() {
		bt.ops = slices.Clone(ops)
		bt.order()
	}
}
