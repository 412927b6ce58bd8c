package membership

import (
	"math/rand/v2"
	"testing"
)

// A slab never rules out a file's value; its false-positive rate is
// measured and bounded; the stored groups decode to the signatures; a probe
// of the stored groups answers what each file's signature answers.
func TestSlabNoFalseNegativesAndMeasuredFPR(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, tc := range []struct{ files, distinct int }{{1, 1}, {1, 2000}, {3, 10}, {8, 2000}, {64, 700}, {513, 40}, {MaxSlabFiles, 2000}} {
		blocks := SignatureBlocks(tc.distinct)
		sets := make([][]uint64, tc.files)
		sigs := make([][]uint64, tc.files)
		in := map[uint64]bool{}
		for i := range sigs {
			for range tc.distinct {
				h := r.Uint64()
				sets[i] = append(sets[i], h)
				in[h] = true
			}
			sigs[i] = BuildSignature(sets[i], blocks)
		}
		groups, err := EncodeGroups(sigs)
		if err != nil {
			t.Fatal(err)
		}
		if len(groups) != Groups(tc.files, blocks) {
			t.Fatalf("%+v: %d groups, want %d", tc, len(groups), Groups(tc.files, blocks))
		}
		for _, g := range groups {
			if len(g) > 2*groupBytes && GroupBlocks(tc.files, blocks) > 1 {
				t.Fatalf("%+v: a group of %d bytes", tc, len(g))
			}
		}
		back, err := DecodeGroups(tc.files, blocks, groups)
		if err != nil {
			t.Fatal(err)
		}
		for i := range sigs {
			for b := range sigs[i] {
				if back[i][b] != sigs[i][b] {
					t.Fatalf("%+v: file %d block %d decodes as %x, was %x", tc, i, b, back[i][b], sigs[i][b])
				}
			}
		}
		probe := func(h uint64, i int) bool {
			p := ProbeSlab(h, tc.files, blocks)
			g := groups[p.Group]
			if !p.Valid(g) {
				t.Fatalf("%+v: group %d of %d bytes too short for its probe", tc, p.Group, len(g))
			}
			got := p.MayContain(g, i)
			if got != SignatureMayContain(sigs[i], h) {
				t.Fatalf("%+v: the slab and file %d's signature disagree on %x", tc, i, h)
			}
			return got
		}
		for i, set := range sets {
			for _, h := range set {
				if !probe(h, i) {
					t.Fatalf("%+v: file %d holds %x but the slab rules it out", tc, i, h)
				}
			}
		}
		var probes, fp int
		for range 20_000 {
			h := r.Uint64()
			if in[h] {
				continue
			}
			i := r.IntN(tc.files)
			probes++
			if probe(h, i) {
				fp++
			}
		}
		rate := float64(fp) / float64(probes)
		bits := float64(64*blocks) / float64(tc.distinct)
		t.Logf("%d files × %d values: %d blocks (%.1f bits/value), %d groups of %d bytes, false positives %.4f%%",
			tc.files, tc.distinct, blocks, bits, len(groups), len(groups[0]), 100*rate)
		// 16 to 32 bits per value with 6 bits set in one word: at most
		// about 0.4%; fewer values than a block holds do better still.
		if tc.distinct >= 10 && rate > 0.008 {
			t.Fatalf("%+v: false-positive rate %.4f", tc, rate)
		}
	}
}

func TestDecodeGroupsRefusesDamage(t *testing.T) {
	sigs := [][]uint64{BuildSignature([]uint64{1, 2, 3}, 4), BuildSignature([]uint64{4}, 4)}
	groups, err := EncodeGroups(sigs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeGroups(2, 4, [][]byte{groups[0][:len(groups[0])-1]}); err == nil {
		t.Fatal("a short group decoded")
	}
	if _, err := DecodeGroups(2, 3, groups); err == nil {
		t.Fatal("3 blocks decoded")
	}
	if _, err := DecodeGroups(3, 4, groups); err == nil {
		t.Fatal("the wrong file count decoded")
	}
	for n, ok := range map[int]bool{0: false, 1: true, 3: false, 4: true, 6: false} {
		if err := CheckSignature(make([]uint64, n)); (err == nil) != ok {
			t.Errorf("a signature of %d blocks: %v", n, err)
		}
	}
	if _, err := EncodeGroups([][]uint64{make([]uint64, 4), make([]uint64, 8)}); err == nil {
		t.Fatal("signatures of two lengths in one slab")
	}
}
