// Package curve maps points of a k-dimensional grid to their position along
// a space-filling curve (Z-order or Hilbert), so that sorting rows by the
// position keeps rows close in every dimension close in the sort order, and
// each file of a sorted run covers a compact box of every dimension.
//
// Coordinates are bucket numbers of `bits` bits each (callers map column
// values to buckets by rank). The position has k·bits bits; k·bits ≤ 64.
//
// Hilbert follows J. Skilling, "Programming the Hilbert curve", AIP Conf.
// Proc. 707 (2004): the axes are transformed in place to the curve's
// "transposed" index, whose bits are then interleaved. It is written here
// because the Go libraries for it found are two-dimensional only.
package curve

import "fmt"

// Kind names a curve.
type Kind string

const (
	ZOrder  Kind = "zorder"
	Hilbert Kind = "hilbert"
)

// Parse reads a curve name.
func Parse(s string) (Kind, error) {
	switch Kind(s) {
	case ZOrder, Hilbert:
		return Kind(s), nil
	}
	return "", fmt.Errorf("unknown curve %q: want zorder or hilbert", s)
}

// MaxDims is the most dimensions a position can interleave with at least
// 8 bits each.
const MaxDims = 8

// Bits is the bucket width used for k dimensions: as many as fit in 64 bits,
// at most 20 (a million buckets per dimension is finer than any file).
func Bits(k int) int {
	if k <= 0 {
		return 0
	}
	return min(20, 64/k)
}

// Index is the position of the point x (each coordinate < 2^bits) along
// the curve. x is not modified.
func (k Kind) Index(x []uint32, bits int) uint64 {
	if k == Hilbert {
		var buf [MaxDims]uint32
		t := buf[:0]
		if len(x) > MaxDims {
			t = make([]uint32, 0, len(x))
		}
		t = append(t, x...)
		transpose(t, bits)
		return interleave(t, bits)
	}
	return interleave(x, bits)
}

// interleave takes bit b of every coordinate, most significant bit first,
// first coordinate first within a bit plane.
func interleave(x []uint32, bits int) uint64 {
	var h uint64
	for b := bits - 1; b >= 0; b-- {
		for _, v := range x {
			h = h<<1 | uint64(v>>uint(b)&1)
		}
	}
	return h
}

// transpose turns axes into the Hilbert transposed index, in place
// (Skilling's AxestoTranspose).
func transpose(x []uint32, bits int) {
	n := len(x)
	if n == 0 || bits == 0 {
		return
	}
	m := uint32(1) << uint(bits-1)
	// Inverse undo of the excess work.
	for q := m; q > 1; q >>= 1 {
		p := q - 1
		for i := range n {
			if x[i]&q != 0 {
				x[0] ^= p
			} else {
				t := (x[0] ^ x[i]) & p
				x[0] ^= t
				x[i] ^= t
			}
		}
	}
	// Gray encode.
	for i := 1; i < n; i++ {
		x[i] ^= x[i-1]
	}
	var t uint32
	for q := m; q > 1; q >>= 1 {
		if x[n-1]&q != 0 {
			t ^= q - 1
		}
	}
	for i := range n {
		x[i] ^= t
	}
}
