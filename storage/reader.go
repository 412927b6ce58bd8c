package storage

import (
	"context"
	"fmt"
	"io"
)

// FooterPrefetch is how much of an object's end the first request reads:
// enough for the footer of nearly every Parquet file, so that reading a
// footer costs one request, and a second only when the footer is larger.
const FooterPrefetch = 64 << 10

// RangeReader reads one object as an io.ReaderAt: the bytes of its tail
// are read once up front, every other read is a ranged request. It is
// what package pqmeta reads a remote footer through.
type RangeReader struct {
	ctx     context.Context
	store   Store
	obj     Object
	tail    []byte
	tailOff int64
	pos     int64 // for Seek, which readers of whole files (arrow-go) use to learn the size
}

// NewRangeReader reads the last tail bytes of obj (all of it when
// smaller) in one request.
func NewRangeReader(ctx context.Context, store Store, obj Object, tail int64) (*RangeReader, error) {
	n := min(tail, obj.Size)
	buf, err := store.ReadRange(ctx, obj, obj.Size-n, n)
	if err != nil {
		return nil, err
	}
	return &RangeReader{ctx: ctx, store: store, obj: obj, tail: buf, tailOff: obj.Size - n}, nil
}

// Size is the object's size.
func (r *RangeReader) Size() int64 { return r.obj.Size }

// Holds reports whether [off, off+n) is read already: reading it costs no
// request.
func (r *RangeReader) Holds(off, n int64) bool {
	return off >= r.tailOff && off+n <= r.obj.Size
}

func (r *RangeReader) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("%s: negative offset %d", r.obj.Location, off)
	}
	if off >= r.obj.Size {
		return 0, io.EOF
	}
	n := min(int64(len(p)), r.obj.Size-off)
	if r.Holds(off, n) {
		copy(p, r.tail[off-r.tailOff:off-r.tailOff+n])
	} else {
		buf, err := r.store.ReadRange(r.ctx, r.obj, off, n)
		if err != nil {
			return 0, err
		}
		copy(p, buf)
	}
	if n < int64(len(p)) {
		return int(n), io.EOF
	}
	return int(n), nil
}

// Seek sets the offset Seek reports; reads are all ReadAt.
func (r *RangeReader) Seek(offset int64, whence int) (int64, error) {
	pos, err := seek(r.obj, r.pos, offset, whence)
	if err == nil {
		r.pos = pos
	}
	return pos, err
}

// seek is the offset an io.Seeker over obj, at pos, moves to.
func seek(obj Object, pos, offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += pos
	case io.SeekEnd:
		offset += obj.Size
	default:
		return 0, fmt.Errorf("%s: seek whence %d", obj.Location, whence)
	}
	if offset < 0 {
		return 0, fmt.Errorf("%s: seek to %d", obj.Location, offset)
	}
	return offset, nil
}
