package storm

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// Spreads splits writers by table kind and names exactly the writers
// under a third of their group's lower median, over random groups.
func TestSpreadsNameTheStarvedWriters(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 41))
	for range 500 {
		r := Report{ByWriter: map[int]*WriterCounts{}}
		for id := range 1 + rng.IntN(12) {
			table := SoloTable(id)
			if rng.IntN(2) == 0 {
				table = SharedTable
			}
			r.ByWriter[id] = &WriterCounts{Table: table, Acknowledged: rng.IntN(60)}
		}
		shared, solo := r.Spreads()
		for _, g := range []struct {
			s      Spread
			shared bool
		}{{shared, true}, {solo, false}} {
			var counts []int
			var ids []int
			for id, w := range r.ByWriter {
				if (w.Table == SharedTable) == g.shared {
					counts, ids = append(counts, w.Acknowledged), append(ids, id)
				}
			}
			if g.s.Writers != len(counts) {
				t.Fatalf("%d writers in the group, spread says %d", len(counts), g.s.Writers)
			}
			if len(counts) == 0 {
				continue
			}
			// The lower median: at least half the counts are ≤ it and more
			// than half are ≥ it.
			le, ge := 0, 0
			for _, c := range counts {
				if c <= g.s.Median {
					le++
				}
				if c >= g.s.Median {
					ge++
				}
			}
			if !slices.Contains(counts, g.s.Median) || 2*le < len(counts) || 2*ge <= len(counts)-1 {
				t.Fatalf("counts %v: median %d is not the lower median", counts, g.s.Median)
			}
			if g.s.Min != slices.Min(counts) || g.s.Max != slices.Max(counts) {
				t.Fatalf("counts %v: min %d max %d", counts, g.s.Min, g.s.Max)
			}
			var starved []int
			for i, c := range counts {
				if 3*c < g.s.Median {
					starved = append(starved, ids[i])
				}
			}
			slices.Sort(starved)
			if !slices.Equal(starved, g.s.Starved) {
				t.Fatalf("counts %v (ids %v): starved %v, want %v", counts, ids, g.s.Starved, starved)
			}
		}
	}
	// One writer at 3 against a median of 10 is starved; at 4 it is not.
	r := Report{ByWriter: map[int]*WriterCounts{
		0: {Table: SoloTable(0), Acknowledged: 10}, 1: {Table: SoloTable(1), Acknowledged: 3},
		2: {Table: SoloTable(2), Acknowledged: 11}, 3: {Table: SoloTable(3), Acknowledged: 10},
	}}
	if _, solo := r.Spreads(); !slices.Equal(solo.Starved, []int{1}) || solo.Median != 10 {
		t.Fatalf("spread %+v, want writer 1 starved against a median of 10", solo)
	}
	r.ByWriter[1].Acknowledged = 4
	if _, solo := r.Spreads(); len(solo.Starved) != 0 {
		t.Fatalf("spread %+v, want none starved", solo)
	}
}
