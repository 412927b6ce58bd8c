package membership

import (
	"encoding/binary"
	"fmt"
)

// Signatures and slabs: the catalog-wide index over per-file membership.
//
// A per-file filter answers "is v in this file?" for one file; asking it of
// N files reads N filters (kilobytes each). A signature is a second,
// smaller summary of the same values, laid out so that many files can be
// asked at once from a few stored bytes each: a blocked Bloom filter of
// 64-bit blocks. A value's hash picks one block and SigK bits inside it, so
// the value is possibly present iff those bits are all set in that one
// word. A file of n distinct values gets SignatureBlocks(n) blocks, a power
// of two giving 16 to 32 bits per value: a false-positive rate of about
// 0.04% to 0.4% (measured in the tests).
//
// A slab is the signatures of up to MaxSlabFiles files with the same number
// of blocks, transposed block-major, so that the block a value picks holds
// every file's word side by side; the slab is stored in groups of
// consecutive blocks:
//
//	group g  =  block g·G … block g·G+G-1, each = S words (one per file, in
//	            the slab's file order), u64 little-endian: G·S·8 bytes
//
// with G = GroupBlocks(S), chosen so that a group is about 4 KiB (a whole
// small slab is one group; a full slab's group is one block). A probe of a
// slab reads exactly one group: 8 bytes per file at most, instead of the
// file's whole filter.

// SigKind names the signature format in the catalog.
const SigKind = "blocked_bloom64/xxh64/k6"

const (
	// SigK is the number of bits a value sets in its block.
	SigK = 6
	// sigBitsPerValue is the least number of bits per distinct value.
	sigBitsPerValue = 16
	// maxSigBlocks bounds a signature: the block index comes from the
	// hash's top 28 bits.
	maxSigBlocks = 1 << 28
	// MaxSlabFiles is the most files one slab holds.
	MaxSlabFiles = 1024
	// groupBytes is the size a slab group aims at.
	groupBytes = 4096
)

// SignatureBlocks is the number of 64-bit blocks of a signature over
// distinct values.
func SignatureBlocks(distinct int) int {
	need := (distinct*sigBitsPerValue + 63) / 64
	if need > maxSigBlocks {
		need = maxSigBlocks
	}
	n := 1
	for n < need {
		n <<= 1
	}
	return n
}

// sigPos is a hash's block (of blocks, a power of two) and the bits it sets
// there: the block from the top 28 bits, SigK bit positions from the low 36.
func sigPos(h uint64, blocks int) (int, uint64) {
	var mask uint64
	for i := range SigK {
		mask |= 1 << ((h >> (6 * i)) & 63)
	}
	return int((h >> 36) & uint64(blocks-1)), mask
}

// BuildSignature makes a signature of the given number of blocks (from
// SignatureBlocks) over value hashes.
func BuildSignature(hashes []uint64, blocks int) []uint64 {
	sig := make([]uint64, blocks)
	for _, h := range hashes {
		b, m := sigPos(h, blocks)
		sig[b] |= m
	}
	return sig
}

// validBlocks says whether a signature of n blocks can be stored and
// probed: a power of two no larger than the hash's block bits reach.
func validBlocks(n int) bool { return n > 0 && n&(n-1) == 0 && n <= maxSigBlocks }

// CheckSignature refuses a signature that is not of a valid length.
func CheckSignature(sig []uint64) error {
	if !validBlocks(len(sig)) {
		return fmt.Errorf("membership: a signature of %d blocks (want a power of two up to %d)", len(sig), maxSigBlocks)
	}
	return nil
}

// SignatureMayContain is false only when the signature rules the value's
// hash out.
func SignatureMayContain(sig []uint64, h uint64) bool {
	b, m := sigPos(h, len(sig))
	return sig[b]&m == m
}

// GroupBlocks is the number of blocks in each stored group of a slab of
// files files.
func GroupBlocks(files, blocks int) int {
	g := groupBytes / (8 * max(files, 1))
	if g < 1 {
		g = 1
	}
	return min(g, blocks)
}

// Groups is the number of groups of a slab of files files whose signatures
// have blocks blocks.
func Groups(files, blocks int) int {
	g := GroupBlocks(files, blocks)
	return (blocks + g - 1) / g
}

// EncodeGroups transposes signatures of one length (a slab's files, in
// order) into its stored groups.
func EncodeGroups(sigs [][]uint64) ([][]byte, error) {
	if len(sigs) == 0 {
		return nil, fmt.Errorf("membership: a slab of no files")
	}
	blocks := len(sigs[0])
	if !validBlocks(blocks) {
		return nil, fmt.Errorf("membership: a signature of %d blocks (want a power of two)", blocks)
	}
	for _, s := range sigs {
		if len(s) != blocks {
			return nil, fmt.Errorf("membership: signatures of %d and %d blocks in one slab", blocks, len(s))
		}
	}
	s, g := len(sigs), GroupBlocks(len(sigs), blocks)
	out := make([][]byte, 0, Groups(s, blocks))
	for first := 0; first < blocks; first += g {
		last := min(first+g, blocks)
		b := make([]byte, 0, (last-first)*s*8)
		for blk := first; blk < last; blk++ {
			for _, sig := range sigs {
				b = binary.LittleEndian.AppendUint64(b, sig[blk])
			}
		}
		out = append(out, b)
	}
	return out, nil
}

// DecodeGroups is EncodeGroups reversed: the files' signatures.
func DecodeGroups(files, blocks int, groups [][]byte) ([][]uint64, error) {
	if files <= 0 || !validBlocks(blocks) {
		return nil, fmt.Errorf("membership: a slab of %d files and %d blocks", files, blocks)
	}
	if len(groups) != Groups(files, blocks) {
		return nil, fmt.Errorf("membership: %d groups, want %d", len(groups), Groups(files, blocks))
	}
	sigs := make([][]uint64, files)
	for i := range sigs {
		sigs[i] = make([]uint64, blocks)
	}
	g := GroupBlocks(files, blocks)
	for gi, b := range groups {
		first := gi * g
		n := min(g, blocks-first)
		if len(b) != n*files*8 {
			return nil, fmt.Errorf("membership: group %d holds %d bytes, want %d", gi, len(b), n*files*8)
		}
		for k := range n {
			for i := range files {
				sigs[i][first+k] = binary.LittleEndian.Uint64(b[(k*files+i)*8:])
			}
		}
	}
	return sigs, nil
}

// SlabProbe is where a value's hash lands in a slab: which stored group to
// read, and how to read it.
type SlabProbe struct {
	Group int
	off   int // byte offset of the block within the group
	mask  uint64
	files int
}

// ProbeSlab locates a hash in a slab of files files with blocks blocks.
func ProbeSlab(h uint64, files, blocks int) SlabProbe {
	b, m := sigPos(h, blocks)
	g := GroupBlocks(files, blocks)
	return SlabProbe{Group: b / g, off: (b % g) * files * 8, mask: m, files: files}
}

// MayContain says, for the slab's file i, whether the value may be there,
// given the probe's group as stored; false also when the group is too
// short (a damaged group must make its caller fall back, so Valid says).
func (p SlabProbe) MayContain(group []byte, i int) bool {
	o := p.off + 8*i
	return binary.LittleEndian.Uint64(group[o:o+8])&p.mask == p.mask
}

// Valid says whether the group read for the probe is long enough for it.
func (p SlabProbe) Valid(group []byte) bool { return len(group) >= p.off+8*p.files }
