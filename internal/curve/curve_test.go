package curve

import (
	"fmt"
	"testing"
)

// walk visits every point of a k-dimensional grid of side 2^bits.
func walk(k, bits int, fn func(x []uint32)) {
	x := make([]uint32, k)
	side := uint32(1) << uint(bits)
	for {
		fn(x)
		i := 0
		for ; i < k; i++ {
			x[i]++
			if x[i] < side {
				break
			}
			x[i] = 0
		}
		if i == k {
			return
		}
	}
}

// Both curves are bijections from the grid onto [0, 2^(k·bits)); the
// Hilbert curve moves to a neighbouring cell (one coordinate ±1) at every
// step, which is what makes it a Hilbert curve and not another ordering.
func TestCurvesAreBijectionsAndHilbertIsContinuous(t *testing.T) {
	for _, c := range []struct{ k, bits int }{{1, 5}, {2, 1}, {2, 4}, {2, 6}, {3, 3}, {4, 2}, {5, 2}} {
		for _, kind := range []Kind{ZOrder, Hilbert} {
			t.Run(fmt.Sprintf("%s/k=%d/bits=%d", kind, c.k, c.bits), func(t *testing.T) {
				n := 1 << uint(c.k*c.bits)
				at := make([][]uint32, n)
				walk(c.k, c.bits, func(x []uint32) {
					before := fmt.Sprint(x)
					h := kind.Index(x, c.bits)
					if fmt.Sprint(x) != before {
						t.Fatalf("Index modified its input %s -> %v", before, x)
					}
					if h >= uint64(n) {
						t.Fatalf("%v -> %d, outside [0, %d)", x, h, n)
					}
					if at[h] != nil {
						t.Fatalf("%v and %v both map to %d", at[h], x, h)
					}
					at[h] = append([]uint32(nil), x...)
				})
				if kind != Hilbert {
					return
				}
				for h := 1; h < n; h++ {
					d := 0
					for i := range c.k {
						diff := int(at[h][i]) - int(at[h-1][i])
						d += max(diff, -diff)
					}
					if d != 1 {
						t.Fatalf("steps %d -> %d jump from %v to %v", h-1, h, at[h-1], at[h])
					}
				}
				if first := at[0]; fmt.Sprint(first) != fmt.Sprint(make([]uint32, c.k)) {
					t.Errorf("the curve starts at %v, not the origin", first)
				}
			})
		}
	}
}

func TestZOrderInterleavesFirstColumnFirst(t *testing.T) {
	for _, c := range []struct {
		x    []uint32
		bits int
		want uint64
	}{
		{[]uint32{1, 0}, 1, 0b10},
		{[]uint32{0, 1}, 1, 0b01},
		{[]uint32{0b10, 0b01}, 2, 0b1001},
		{[]uint32{0b11, 0b00, 0b01}, 2, 0b100101},
	} {
		if got := ZOrder.Index(c.x, c.bits); got != c.want {
			t.Errorf("zorder%v = %b, want %b", c.x, got, c.want)
		}
	}
}

func TestBitsFitAPosition(t *testing.T) {
	for k := 1; k <= MaxDims; k++ {
		if b := Bits(k); b < 8 || b*k > 64 {
			t.Errorf("Bits(%d) = %d", k, b)
		}
	}
	// The widest position must not overflow.
	x := make([]uint32, MaxDims)
	for i := range x {
		x[i] = 1<<uint(Bits(MaxDims)) - 1
	}
	if h := Hilbert.Index(x, Bits(MaxDims)); h == 0 {
		t.Error("all-ones corner maps to 0")
	}
	if _, err := Parse("peano"); err == nil {
		t.Error("Parse accepted an unknown curve")
	}
}

func BenchmarkIndex(b *testing.B) {
	for _, kind := range []Kind{ZOrder, Hilbert} {
		b.Run(string(kind), func(b *testing.B) {
			b.ReportAllocs()
			x := []uint32{12345, 67890}
			var sink uint64
			for i := 0; b.Loop(); i++ {
				x[0] = uint32(i) & 0xfffff
				sink += kind.Index(x, 20)
			}
			_ = sink
		})
	}
}
