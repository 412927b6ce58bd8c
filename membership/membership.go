// Package membership builds and reads the catalog's per-file membership
// filters: compact sets of a column's distinct values in one file that
// answer "is v possibly in this file?" with no false negatives and a small,
// measured false-positive rate. Planning consults them for = and IN on
// columns whose min/max bounds cannot separate files (random ids).
//
// A filter is a binary fuse filter with 16-bit fingerprints
// (github.com/FastFilter/xorfilter): about 2.25 bytes per distinct value
// and a false-positive rate near 2^-16. Keys are the xxhash64 of a value's
// order-preserving encoding in the column's type (package types), so a
// predicate's literal, bound to the column's type, hashes exactly as the
// file's values did.
//
// Stored form, little-endian:
//
//	u64 seed | u32 segment_length | u32 segment_count | u32 n (fingerprints) | n × u16 fingerprint
//
// Decode checks that the fingerprint array is exactly as long as the
// segments require, so a damaged filter is an error, never an index
// out of range.
package membership

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"sync"

	"github.com/FastFilter/xorfilter"
	"github.com/cespare/xxhash/v2"
)

// Kind names the filter format in the catalog.
const Kind = "binary_fuse16/xxh64"

// Filter answers membership queries.
type Filter struct {
	f xorfilter.BinaryFuse[uint16]
}

// Hash is the key of a value's encoding.
func Hash(enc []byte) uint64 { return xxhash.Sum64(enc) }

// ErrEmpty reports a filter of no values (there is nothing to build).
var ErrEmpty = errors.New("membership: no values")

// Build makes the stored form of a filter over the given hashes (Hash of
// each value; duplicates are removed here) and says how many were
// distinct.
func Build(hashes []uint64) ([]byte, int, error) {
	if len(hashes) == 0 {
		return nil, 0, ErrEmpty
	}
	w := workspaces.Get().(*workspace)
	defer workspaces.Put(w)
	keys := w.sort(hashes)
	n := 0
	for i, k := range keys {
		if i == 0 || k != keys[n-1] {
			keys[n] = k
			n++
		}
	}
	f, err := xorfilter.BuildBinaryFuse[uint16](&w.fuse, keys[:n])
	if err != nil {
		return nil, 0, fmt.Errorf("membership: %w", err)
	}
	// f.Fingerprints is the workspace's: copied out here, before it goes
	// back to the pool.
	out := make([]byte, 20+2*len(f.Fingerprints))
	binary.LittleEndian.PutUint64(out, f.Seed)
	binary.LittleEndian.PutUint32(out[8:], f.SegmentLength)
	binary.LittleEndian.PutUint32(out[12:], f.SegmentCount)
	binary.LittleEndian.PutUint32(out[16:], uint32(len(f.Fingerprints)))
	fps := out[20:]
	for i, fp := range f.Fingerprints {
		binary.LittleEndian.PutUint16(fps[2*i:], fp)
	}
	return out, n, nil
}

// workspace is the memory one Build works in: the sort's two buffers and
// counts, and the fuse builder's arrays. A registration builds a filter per file, of
// a few thousand keys each, and allocating them every time cost about as
// much as the building (and the collector's work after).
type workspace struct {
	a, b   []uint64
	counts []int
	fuse   xorfilter.BinaryFuseBuilder
}

var workspaces = sync.Pool{New: func() any { return new(workspace) }}

// sort sorts keys into the workspace's buffers; the keys it returns are
// the workspace's. A file column of up to maxBucketKeys keys (most: a
// row group or a few of ids) is sorted by bucketSortInto, a larger one
// by radixSortInto.
func (w *workspace) sort(keys []uint64) []uint64 {
	if cap(w.a) < len(keys) {
		w.a, w.b = make([]uint64, len(keys)), make([]uint64, len(keys))
	}
	if len(keys) <= maxBucketKeys {
		return bucketSortInto(keys, w.b[:len(keys)], &w.counts)
	}
	return radixSortInto(append(w.a[:0], keys...), w.b[:len(keys)])
}

// maxBucketKeys bounds the keys bucketSortInto sorts: its counts grow
// with the keys (a slot per one or two), and past this the radix sort's
// fixed counts cost less than a bucket array out of cache.
const maxBucketKeys = 1 << 16

// bucketSortInto sorts keys into out (as long as keys) and returns it;
// counts is its scratch, grown as needed. Keys are hashes, their bits
// uniform: one pass moves each to a bucket by its top bits, about one key
// to a bucket, and a bucket of more is sorted in place. Two passes over
// the keys where the radix sort makes up to eight: for 2,000 keys (the
// events table's user_id per file) it took a third of the time. Keys
// that are not uniform (one value repeated) land in few buckets, which
// slices.Sort sorts in O(n log n) all the same.
func bucketSortInto(keys, out []uint64, counts *[]int) []uint64 {
	if len(keys) < 64 {
		copy(out, keys)
		slices.Sort(out)
		return out
	}
	shift := 64 - bits.Len(uint(len(keys)))
	nb := 1 << (64 - shift)
	if cap(*counts) < nb+1 {
		*counts = make([]int, nb+1)
	}
	c := (*counts)[:nb+1]
	clear(c)
	for _, k := range keys {
		c[k>>shift+1]++
	}
	for i := 1; i <= nb; i++ {
		c[i] += c[i-1]
	}
	// c[b] is where bucket b starts; placing a key moves it on, so that
	// after the pass c[b] is where bucket b+1 starts.
	for _, k := range keys {
		b := k >> shift
		out[c[b]] = k
		c[b]++
	}
	start := 0
	for b := range nb {
		end := c[b]
		if end-start > 1 {
			slices.Sort(out[start:end])
		}
		start = end
	}
	return out
}

// Check says whether b is a stored filter Decode reads, without copying
// its fingerprints out.
func Check(b []byte) error {
	_, _, _, _, err := header(b)
	return err
}

// header reads and checks a stored filter's header against its length.
func header(b []byte) (seed uint64, segLen, segCount, n uint32, err error) {
	if len(b) < 20 {
		return 0, 0, 0, 0, fmt.Errorf("membership: filter of %d bytes is too short", len(b))
	}
	seed = binary.LittleEndian.Uint64(b)
	segLen = binary.LittleEndian.Uint32(b[8:])
	segCount = binary.LittleEndian.Uint32(b[12:])
	n = binary.LittleEndian.Uint32(b[16:])
	if segLen == 0 || bits.OnesCount32(segLen) != 1 || segCount == 0 || segCount > 1<<30/segLen {
		return 0, 0, 0, 0, fmt.Errorf("membership: bad segments (%d of length %d)", segCount, segLen)
	}
	// Contains reads up to index segCount·segLen - 1 + 2·segLen.
	if uint64(n) != uint64(segCount+2)*uint64(segLen) || uint64(len(b)) != 20+2*uint64(n) {
		return 0, 0, 0, 0, fmt.Errorf("membership: %d fingerprints in %d bytes do not fit %d segments of %d", n, len(b), segCount, segLen)
	}
	return seed, segLen, segCount, n, nil
}

// Decode reads a stored filter.
func Decode(b []byte) (*Filter, error) {
	seed, segLen, segCount, n, err := header(b)
	if err != nil {
		return nil, err
	}
	fps := make([]uint16, n)
	for i := range fps {
		fps[i] = binary.LittleEndian.Uint16(b[20+2*i:])
	}
	return &Filter{f: xorfilter.BinaryFuse[uint16]{
		Seed: seed, SegmentLength: segLen, SegmentLengthMask: segLen - 1, SegmentCount: segCount,
		SegmentCountLength: segCount * segLen, Fingerprints: fps,
	}}, nil
}

// MayContain is false only when the value (its encoding) is certainly not
// in the set.
func (f *Filter) MayContain(enc []byte) bool { return f.f.Contains(Hash(enc)) }

// Bytes is the filter's size in memory.
func (f *Filter) Bytes() int { return 2*len(f.f.Fingerprints) + 32 }

// radixSort returns the keys sorted, in a new slice: least significant
// byte first, a pass per byte that is not the same in every key. Keys are
// hashes (uniform bits), a million per file column: it takes a tenth of
// the time of slices.Sort, which a large write spent seconds in.
func radixSort(keys []uint64) []uint64 {
	return radixSortInto(append([]uint64(nil), keys...), make([]uint64, len(keys)))
}

// radixSortInto sorts a, using b (as long as a) as the other buffer, and
// returns whichever of the two holds the result.
func radixSortInto(a, b []uint64) []uint64 {
	if len(a) < 256 {
		slices.Sort(a)
		return a
	}
	var counts [8][256]int
	for _, k := range a {
		for d := range 8 {
			counts[d][byte(k>>(8*d))]++
		}
	}
	for d := range 8 {
		c := &counts[d]
		if c[byte(a[0]>>(8*d))] == len(a) {
			continue // every key has this byte: the pass would move none
		}
		pos := 0
		for i, n := range c {
			c[i] = pos
			pos += n
		}
		for _, k := range a {
			x := byte(k >> (8 * d))
			b[c[x]] = k
			c[x]++
		}
		a, b = b, a
	}
	return a
}
