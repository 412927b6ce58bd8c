package catalog

import (
	"encoding/binary"
	"fmt"
	"math/bits"

	"github.com/rocklake/rocklake/catalog/catalogpb"
	"github.com/rocklake/rocklake/stats"
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
	mo, xo                                       []int // bound offsets, n+1 each
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
	v.mo, v.xo = make([]int, v.n+1), make([]int, v.n+1)
	for j := range v.n {
		ml, xl := v.minLens.at(j), v.maxLens.at(j)
		if ml < 0 || xl < 0 || ml > 1<<20 || xl > 1<<20 {
			return nil, fmt.Errorf("%w: a stats block bound of %d or %d bytes", ErrCorrupt, ml, xl)
		}
		v.mo[j+1], v.xo[j+1] = v.mo[j]+int(ml), v.xo[j]+int(xl)
	}
	if v.mo[v.n] != len(p.Mins) || v.xo[v.n] != len(p.Maxs) {
		return nil, fmt.Errorf("%w: stats block bounds of %d and %d bytes, lengths say %d and %d", ErrCorrupt, len(p.Mins), len(p.Maxs), v.mo[v.n], v.xo[v.n])
	}
	return v, nil
}

func (v *statsView) flag(j int) uint16 { return uint16(v.flags.at(j)) }
func (v *statsView) min(j int) []byte  { return v.p.Mins[v.mo[j]:v.mo[j+1]:v.mo[j+1]] }
func (v *statsView) max(j int) []byte  { return v.p.Maxs[v.xo[j]:v.xo[j+1]:v.xo[j+1]] }

// keep is the block of files keep (indexes) only.
func (v *statsView) keep(keep []int) *statsBlock {
	b := &statsBlock{}
	for _, j := range keep {
		b.flags, b.nulls, b.values, b.rows = append(b.flags, v.flags.at(j)), append(b.nulls, v.nulls.at(j)), append(b.values, v.values.at(j)), append(b.rows, v.rows.at(j))
		b.minLens, b.maxLens = append(b.minLens, v.minLens.at(j)), append(b.maxLens, v.maxLens.at(j))
		b.mins, b.maxs = append(b.mins, v.min(j)...), append(b.maxs, v.max(j)...)
	}
	return b
}
