package catalog

import (
	"encoding/binary"
	"fmt"
	"math/bits"

	"github.com/rocklake/rocklake/catalog/catalogpb"
	"github.com/rocklake/rocklake/stats"
	"google.golang.org/protobuf/encoding/protowire"
)

// The arrays of file and stats blocks (blocks.go) are frame-of-reference
// integers: the smallest value as the base, each value's difference from
// it in the fewest of 0, 1, 2, 4 or 8 bytes that hold the largest:
//
//	width (1 byte) | base (8 bytes, little-endian) | n × width bytes, little-endian
//
// A block's files were registered together, so their ids are consecutive
// (2 bytes each), their row counts and bound lengths are often all equal
// (0 bytes), and null counts are mostly 0. Reading one is a load and an
// add per value; the store's block compression has little left to do.

var le = binary.LittleEndian

// appendFOR appends vals in the frame-of-reference form.
func appendFOR(dst []byte, vals []int64) []byte {
	if len(vals) == 0 {
		return append(dst, 0, 0, 0, 0, 0, 0, 0, 0, 0)
	}
	lo, hi := vals[0], vals[0]
	for _, v := range vals {
		lo, hi = min(lo, v), max(hi, v)
	}
	span := uint64(hi - lo)
	w := 0
	switch n := bits.Len64(span); {
	case n == 0:
	case n <= 8:
		w = 1
	case n <= 16:
		w = 2
	case n <= 32:
		w = 4
	default:
		w = 8
	}
	dst = append(dst, byte(w))
	dst = le.AppendUint64(dst, uint64(lo))
	for _, v := range vals {
		d := uint64(v - lo)
		switch w {
		case 1:
			dst = append(dst, byte(d))
		case 2:
			dst = le.AppendUint16(dst, uint16(d))
		case 4:
			dst = le.AppendUint32(dst, uint32(d))
		case 8:
			dst = le.AppendUint64(dst, d)
		}
	}
	return dst
}

// forView reads a frame-of-reference array in place.
type forView struct {
	base int64
	w    int
	data []byte
}

// viewFOR checks b as an array of n values.
func viewFOR(b []byte, n int) (forView, error) {
	if len(b) < 9 {
		return forView{}, fmt.Errorf("%w: an array of %d bytes", ErrCorrupt, len(b))
	}
	v := forView{w: int(b[0]), base: int64(le.Uint64(b[1:])), data: b[9:]}
	switch v.w {
	case 0, 1, 2, 4, 8:
	default:
		return forView{}, fmt.Errorf("%w: an array of width %d", ErrCorrupt, v.w)
	}
	if len(v.data) != n*v.w {
		return forView{}, fmt.Errorf("%w: an array of %d values of %d bytes in %d bytes", ErrCorrupt, n, v.w, len(v.data))
	}
	return v, nil
}

func (v forView) at(i int) int64 {
	switch v.w {
	case 0:
		return v.base
	case 1:
		return v.base + int64(v.data[i])
	case 2:
		return v.base + int64(le.Uint16(v.data[2*i:]))
	case 4:
		return v.base + int64(le.Uint32(v.data[4*i:]))
	}
	return v.base + int64(le.Uint64(v.data[8*i:]))
}

// appendTo appends the n values to dst, one width switch for all of them.
func (v forView) appendTo(dst []int64, n int) []int64 {
	switch v.w {
	case 0:
		for range n {
			dst = append(dst, v.base)
		}
	case 1:
		for _, d := range v.data[:n] {
			dst = append(dst, v.base+int64(d))
		}
	case 2:
		for j := range n {
			dst = append(dst, v.base+int64(le.Uint16(v.data[2*j:])))
		}
	case 4:
		for j := range n {
			dst = append(dst, v.base+int64(le.Uint32(v.data[4*j:])))
		}
	default:
		for j := range n {
			dst = append(dst, v.base+int64(le.Uint64(v.data[8*j:])))
		}
	}
	return dst
}

// fileBlock is a FileBlock's arrays.
type fileBlock struct {
	begin                 int64
	ids, rows, rgs, sizes []int64
}

func (b *fileBlock) encode() *catalogpb.FileBlock {
	return &catalogpb.FileBlock{BeginSnapshot: b.begin, Count: int32(len(b.ids)), Ids: appendFOR(nil, b.ids),
		RecordCounts: appendFOR(nil, b.rows), RowGroupCounts: appendFOR(nil, b.rgs), Sizes: appendFOR(nil, b.sizes)}
}

// fileBlockView reads a stored FileBlock in place.
type fileBlockView struct {
	n                     int
	ids, rows, rgs, sizes forView
}

func viewFileBlock(p *catalogpb.FileBlock) (fileBlockView, error) {
	v := fileBlockView{n: int(p.Count)}
	if v.n <= 0 || v.n > blockFiles {
		return v, fmt.Errorf("%w: a file block of %d files", ErrCorrupt, v.n)
	}
	var err error
	for _, a := range []struct {
		dst *forView
		b   []byte
	}{{&v.ids, p.Ids}, {&v.rows, p.RecordCounts}, {&v.rgs, p.RowGroupCounts}, {&v.sizes, p.Sizes}} {
		if *a.dst, err = viewFOR(a.b, v.n); err != nil {
			return v, err
		}
	}
	return v, nil
}

// statsBlock is a StatsBlock's arrays, built file by file.
type statsBlock struct {
	flags, nulls, values, rows, minLens, maxLens []int64
	mins, maxs                                   []byte
}

func (b *statsBlock) len() int { return len(b.flags) }

// add appends a file's stats (nil: none).
func (b *statsBlock) add(st *stats.Column) {
	if st == nil {
		b.flags, b.nulls, b.values, b.rows = append(b.flags, 0), append(b.nulls, 0), append(b.values, 0), append(b.rows, 0)
		b.minLens, b.maxLens = append(b.minLens, 0), append(b.maxLens, 0)
		return
	}
	b.flags = append(b.flags, int64(statsFlags(st)))
	b.nulls, b.values, b.rows = append(b.nulls, st.NullCount.V), append(b.values, st.ValueCount.V), append(b.rows, st.RowCount)
	var ml, xl int
	if st.Min.Known {
		b.mins, ml = append(b.mins, st.Min.V...), len(st.Min.V)
	}
	if st.Max.Known {
		b.maxs, xl = append(b.maxs, st.Max.V...), len(st.Max.V)
	}
	b.minLens, b.maxLens = append(b.minLens, int64(ml)), append(b.maxLens, int64(xl))
}

func (b *statsBlock) encode() *catalogpb.StatsBlock {
	return &catalogpb.StatsBlock{Count: int32(len(b.flags)), Flags: appendFOR(nil, b.flags), NullCounts: appendFOR(nil, b.nulls),
		ValueCounts: appendFOR(nil, b.values), RowCounts: appendFOR(nil, b.rows), MinLengths: appendFOR(nil, b.minLens),
		Mins: b.mins, MaxLengths: appendFOR(nil, b.maxLens), Maxs: b.maxs}
}

// statsView reads a stored StatsBlock in place.
type statsView struct {
	p                                            *catalogpb.StatsBlock
	n                                            int
	flags, nulls, values, rows, minLens, maxLens forView
	mins, maxs                                   boundArray
}

// viewBounds reads a block's concatenated bounds in place: fixed-width
// when every length is the same (a fixed-width type with every bound
// known, the common block), else through offsets built once.
func viewBounds(data []byte, lens forView, n int) (boundArray, error) {
	v := boundArray{data: data}
	if lens.w == 0 {
		if lens.base < 0 || lens.base > 1<<20 || int(lens.base)*n != len(data) {
			return v, fmt.Errorf("%w: stats block bounds of %d bytes, lengths say %d × %d", ErrCorrupt, len(data), n, lens.base)
		}
		v.w = int(lens.base)
		return v, nil
	}
	v.off = make([]uint64, n+1)
	for j := range n {
		l := lens.at(j)
		if l < 0 || l > 1<<20 {
			return v, fmt.Errorf("%w: a stats block bound of %d bytes", ErrCorrupt, l)
		}
		v.off[j+1] = v.off[j] + uint64(l)
	}
	if v.off[n] != uint64(len(data)) {
		return v, fmt.Errorf("%w: stats block bounds of %d bytes, lengths say %d", ErrCorrupt, len(data), v.off[n])
	}
	return v, nil
}

func viewStats(p *catalogpb.StatsBlock) (*statsView, error) {
	v := &statsView{p: p, n: int(p.Count)}
	if v.n <= 0 || v.n > blockFiles {
		return nil, fmt.Errorf("%w: a stats block of %d files", ErrCorrupt, v.n)
	}
	var err error
	for _, a := range []struct {
		dst *forView
		b   []byte
	}{{&v.flags, p.Flags}, {&v.nulls, p.NullCounts}, {&v.values, p.ValueCounts}, {&v.rows, p.RowCounts}, {&v.minLens, p.MinLengths}, {&v.maxLens, p.MaxLengths}} {
		if *a.dst, err = viewFOR(a.b, v.n); err != nil {
			return nil, err
		}
	}
	if v.mins, err = viewBounds(p.Mins, v.minLens, v.n); err != nil {
		return nil, err
	}
	if v.maxs, err = viewBounds(p.Maxs, v.maxLens, v.n); err != nil {
		return nil, err
	}
	return v, nil
}

func (v *statsView) flag(j int) uint16 { return uint16(v.flags.at(j)) }
func (v *statsView) min(j int) []byte  { return v.mins.at(j) }
func (v *statsView) max(j int) []byte  { return v.maxs.at(j) }

// decodeStatsBlockInPlace is decodeValue for a StatsBlock whose byte
// fields alias value instead of being copied (protobuf's Unmarshal always
// copies): a cold plan reads every block of a column once and keeps only
// what it packs into its own arrays, so the copies, a block's whole size,
// would all be garbage. Valid only as long as value is. Field handling is
// protobuf's: unknown fields and fields of an unexpected wire type are
// passed over, the last of a repeated field wins.
func decodeStatsBlockInPlace(value []byte, p *catalogpb.StatsBlock) error {
	b, err := envelopeBody(value)
	if err != nil {
		return err
	}
	p.Reset()
	byField := [...]*[]byte{2: &p.Flags, 3: &p.NullCounts, 4: &p.ValueCounts, 5: &p.RowCounts,
		6: &p.MinLengths, 7: &p.Mins, 8: &p.MaxLengths, 9: &p.Maxs}
	wireErr := func(n int) error { return fmt.Errorf("%w: %v", ErrCorrupt, protowire.ParseError(n)) }
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return wireErr(n)
		}
		if !num.IsValid() {
			return fmt.Errorf("%w: field number %d", ErrCorrupt, num)
		}
		b = b[n:]
		var dst *[]byte
		if int(num) < len(byField) {
			dst = byField[num]
		}
		switch {
		case num == 1 && typ == protowire.VarintType:
			x, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return wireErr(n)
			}
			p.Count, b = int32(x), b[n:]
		case dst != nil && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return wireErr(n)
			}
			*dst, b = v, b[n:]
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return wireErr(n)
			}
			b = b[n:]
		}
	}
	return nil
}

// keep is the block of files keep (indexes) only.
func (v *statsView) keep(keep []int) *statsBlock {
	// Sized once: expiry rewrites every block a removal touched, and
	// growing each array by appends was most of that.
	n := len(keep)
	var ml, xl int
	for _, j := range keep {
		ml, xl = ml+len(v.min(j)), xl+len(v.max(j))
	}
	b := &statsBlock{flags: make([]int64, 0, n), nulls: make([]int64, 0, n), values: make([]int64, 0, n), rows: make([]int64, 0, n),
		minLens: make([]int64, 0, n), maxLens: make([]int64, 0, n), mins: make([]byte, 0, ml), maxs: make([]byte, 0, xl)}
	for _, j := range keep {
		b.flags, b.nulls, b.values, b.rows = append(b.flags, v.flags.at(j)), append(b.nulls, v.nulls.at(j)), append(b.values, v.values.at(j)), append(b.rows, v.rows.at(j))
		b.minLens, b.maxLens = append(b.minLens, v.minLens.at(j)), append(b.maxLens, v.maxLens.at(j))
		b.mins, b.maxs = append(b.mins, v.min(j)...), append(b.maxs, v.max(j)...)
	}
	return b
}
