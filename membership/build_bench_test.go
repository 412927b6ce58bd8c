package membership

import (
	"math/rand/v2"
	"testing"

	"github.com/FastFilter/xorfilter"
)

// BenchmarkBuild: one file column's filter of 2,000 distinct values (the
// events table's user_id per file), whole and by step.
func BenchmarkBuild(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	in := make([]uint64, 2000)
	for i := range in {
		in[i] = r.Uint64()
	}
	b.Run("build", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := Build(in); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sort", func(b *testing.B) {
		w := new(workspace)
		for b.Loop() {
			w.sort(in)
		}
	})
	b.Run("fuse", func(b *testing.B) {
		var fb xorfilter.BinaryFuseBuilder
		keys := radixSort(in)
		for b.Loop() {
			if _, err := xorfilter.BuildBinaryFuse[uint16](&fb, keys); err != nil {
				b.Fatal(err)
			}
		}
	})
}
