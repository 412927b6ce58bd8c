package catalog

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Frame-of-reference arrays give back every value, at every width,
// extremes included, and refuse damage.
func TestFrameOfReference(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	cases := [][]int64{
		{}, {7}, {3, 3, 3}, {100, 101, 102, 355}, {0, 65535}, {-5, 70000}, {1, 1 << 33},
		{math.MinInt64, math.MaxInt64}, {math.MaxInt64, math.MaxInt64 - 1},
	}
	for range 200 {
		n := r.IntN(50)
		vs := make([]int64, n)
		shift := r.IntN(64)
		for i := range vs {
			vs[i] = int64(r.Uint64() >> shift)
			if r.IntN(2) == 0 {
				vs[i] = -vs[i]
			}
		}
		cases = append(cases, vs)
	}
	widths := map[int]bool{}
	for _, vs := range cases {
		b := appendFOR(nil, vs)
		v, err := viewFOR(b, len(vs))
		if err != nil {
			t.Fatalf("%v: %v", vs, err)
		}
		widths[v.w] = true
		for i, x := range vs {
			if got := v.at(i); got != x {
				t.Fatalf("%v: value %d reads %d", vs, i, got)
			}
		}
		if _, err := viewFOR(b, len(vs)+1); err == nil && v.w > 0 {
			t.Fatalf("%v: read as %d values", vs, len(vs)+1)
		}
		if _, err := viewFOR(b[:len(b)-1], len(vs)); err == nil {
			t.Fatalf("%v: a cut array read", vs)
		}
	}
	for _, w := range []int{0, 1, 2, 4, 8} {
		if !widths[w] {
			t.Errorf("no case of width %d", w)
		}
	}
	if _, err := viewFOR(append([]byte{3}, make([]byte, 8)...), 0); err == nil {
		t.Error("width 3 read")
	}
}
