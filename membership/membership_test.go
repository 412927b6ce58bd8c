package membership

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/FastFilter/xorfilter"
)

func enc(x uint64) []byte { return binary.BigEndian.AppendUint64(nil, x) }

// No false negatives, ever; false positives near 2^-16, measured.
func TestNoFalseNegativesAndMeasuredFPR(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var probes, fp int
	var bytes, values int
	for _, n := range []int{1, 2, 3, 10, 100, 2000, 50_000} {
		in := map[uint64]bool{}
		var hs []uint64
		for len(in) < n {
			x := r.Uint64()
			in[x] = true
			hs = append(hs, Hash(enc(x)), Hash(enc(x))) // duplicates are fine
		}
		b, distinct, err := Build(hs)
		if err != nil || distinct != n {
			t.Fatalf("n=%d: %d distinct, %v", n, distinct, err)
		}
		f, err := Decode(b)
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		for x := range in {
			if !f.MayContain(enc(x)) {
				t.Fatalf("n=%d: %d is in the set but the filter says no", n, x)
			}
		}
		for range 200_000 {
			x := r.Uint64()
			if in[x] {
				continue
			}
			probes++
			if f.MayContain(enc(x)) {
				fp++
			}
		}
		if n >= 100 {
			bytes, values = bytes+len(b), values+n
		}
	}
	rate := float64(fp) / float64(probes)
	t.Logf("false positives %d of %d probes (%.5f%%); %.2f bytes per value (sets of ≥ 100)", fp, probes, 100*rate, float64(bytes)/float64(values))
	if rate > 1e-3 {
		t.Errorf("false-positive rate %.5f, want about 2^-16", rate)
	}
}

func TestDecodeRejectsDamage(t *testing.T) {
	b, _, err := Build([]uint64{1, 2, 3, 4, 5})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Build(nil); err != ErrEmpty {
		t.Errorf("empty build: %v", err)
	}
	bad := [][]byte{nil, b[:19], b[:len(b)-2], append(append([]byte{}, b...), 0, 0)}
	for _, field := range []int{8, 12, 16} { // segment length, count, n
		c := append([]byte{}, b...)
		binary.LittleEndian.PutUint32(c[field:], binary.LittleEndian.Uint32(c[field:])+1)
		bad = append(bad, c)
	}
	for i, c := range bad {
		if _, err := Decode(c); err == nil {
			t.Errorf("damaged filter %d decoded", i)
		}
		if err := Check(c); err == nil {
			t.Errorf("damaged filter %d passed the check", i)
		}
	}
	if err := Check(b); err != nil {
		t.Errorf("a built filter fails the check: %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	b, _, _ := Build([]uint64{1, 2, 3})
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		flt, err := Decode(data)
		if cerr := Check(data); (cerr == nil) != (err == nil) {
			t.Fatalf("Check says %v, Decode %v", cerr, err)
		}
		if err != nil {
			return
		}
		for i := range uint64(64) {
			flt.MayContain(enc(i)) // must not panic
		}
	})
}

// radixSort, bucketSortInto and the workspace's choice between them sort
// as slices.Sort does, for inputs of every size around their cut-overs,
// with duplicates, with bytes all keys share, and leaves its
// input as it was.
func TestRadixSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	// One workspace and one counts array for every size, as a
	// registration's worker reuses them: a sort must not see the last
	// one's state.
	w := new(workspace)
	var counts []int
	gens := map[string]func() uint64{
		"uniform":    r.Uint64,
		"few":        func() uint64 { return uint64(r.IntN(5)) << 40 },
		"low bytes":  func() uint64 { return uint64(r.IntN(1 << 16)) },
		"high bytes": func() uint64 { return uint64(r.IntN(1<<16)) << 48 },
		"edges":      func() uint64 { return []uint64{0, 1, 1<<63 - 1, 1 << 63, ^uint64(0)}[r.IntN(5)] },
	}
	for name, gen := range gens {
		for _, n := range []int{0, 1, 2, 63, 64, 65, 255, 256, 257, 1000, 2000, maxBucketKeys, maxBucketKeys + 1, 100_000} {
			in := make([]uint64, n)
			for i := range in {
				in[i] = gen()
			}
			orig := slices.Clone(in)
			want := slices.Clone(in)
			slices.Sort(want)
			if got := radixSort(in); !slices.Equal(got, want) {
				t.Fatalf("%s, %d keys: not sorted as slices.Sort sorts", name, n)
			}
			if n <= maxBucketKeys {
				if got := bucketSortInto(in, make([]uint64, n), &counts); !slices.Equal(got, want) {
					t.Fatalf("%s, %d keys: the bucket sort does not sort as slices.Sort sorts", name, n)
				}
			}
			if got := w.sort(in); !slices.Equal(got, want) {
				t.Fatalf("%s, %d keys: the workspace's sort does not sort as slices.Sort sorts", name, n)
			}
			if !slices.Equal(in, orig) {
				t.Fatalf("%s, %d keys: the input changed", name, n)
			}
		}
	}
}

// Build in pooled workspaces writes the very bytes a build in fresh memory
// writes (xorfilter.NewBinaryFuse over the sorted distinct keys), whatever
// sizes came before it in the same workspace: filters stored before the
// pool must still be probed as they were built, and a builder that kept a
// previous build's state would change them. Builds run from several
// goroutines, as registration's workers do.
func TestPooledBuildIsFreshBuild(t *testing.T) {
	fresh := func(hs []uint64) []byte {
		keys := slices.Compact(slices.Sorted(slices.Values(hs)))
		f, err := xorfilter.NewBinaryFuse[uint16](keys)
		if err != nil {
			t.Fatal(err)
		}
		out := binary.LittleEndian.AppendUint64(nil, f.Seed)
		out = binary.LittleEndian.AppendUint32(out, f.SegmentLength)
		out = binary.LittleEndian.AppendUint32(out, f.SegmentCount)
		out = binary.LittleEndian.AppendUint32(out, uint32(len(f.Fingerprints)))
		for _, fp := range f.Fingerprints {
			out = binary.LittleEndian.AppendUint16(out, fp)
		}
		return out
	}
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 9))
			for range 150 {
				n := 1 + r.IntN(3000)
				if r.IntN(20) == 0 {
					n = 1 + r.IntN(200_000)
				}
				hs := make([]uint64, n)
				for i := range hs {
					hs[i] = Hash(enc(uint64(r.IntN(2 * n)))) // duplicates too
				}
				got, distinct, err := Build(slices.Clone(hs))
				want := fresh(hs)
				if err != nil || !bytes.Equal(got, want) || distinct != len(slices.Compact(slices.Sorted(slices.Values(hs)))) {
					errs <- fmt.Sprintf("%d keys: pooled build differs from a fresh one (%v)", n, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}
