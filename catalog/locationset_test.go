package catalog

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// A locationSet answers as a map of the same locations does, asked
// between adds as well as after them.
func TestLocationSetIsASet(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	s := newLocationSet()
	want := map[string]bool{}
	for range 20000 {
		loc := fmt.Sprintf("/data/t/part-%d.parquet", rng.IntN(5000))
		if rng.IntN(3) == 0 {
			s.add(loc)
			want[loc] = true
			continue
		}
		if got := s.has(loc); got != want[loc] {
			t.Fatalf("has(%q) = %v after %d adds, want %v", loc, got, len(want), want[loc])
		}
	}
	if len(want) < 1000 {
		t.Fatalf("only %d locations added", len(want))
	}
}
