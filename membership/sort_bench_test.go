package membership

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// BenchmarkSortKeys: radixSort against slices.Sort of a million hashes,
// one file column's worth.
func BenchmarkSortKeys(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	in := make([]uint64, 1_000_000)
	for i := range in {
		in[i] = r.Uint64()
	}
	b.Run("radix", func(b *testing.B) {
		for b.Loop() {
			radixSort(in)
		}
	})
	b.Run("slices", func(b *testing.B) {
		for b.Loop() {
			a := slices.Clone(in)
			slices.Sort(a)
		}
	})
}
