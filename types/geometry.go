package types

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Box is a planar bounding box, x and y only: what DuckDB's && and
// st_intersects_extent compare (the extents of two geometries intersect
// when they overlap or touch).
type Box struct{ XMin, YMin, XMax, YMax float64 }

// Extent is what a unit's GEOMETRY values cover: a box, or nothing (every
// value NULL or empty). It is never built over a NaN or infinite
// coordinate: DuckDB's extent test over one matches unpredictably
// ('POINT(1 NaN)' && 'POINT(1 2)' is true), so such a unit has no Extent.
type Extent struct {
	Box   Box
	Empty bool // no non-empty geometry: no row's extent intersects anything
}

// Add widens e by b.
func (e Extent) Add(o Extent) Extent {
	switch {
	case o.Empty:
		return e
	case e.Empty:
		return o
	}
	return Extent{Box: Box{math.Min(e.Box.XMin, o.Box.XMin), math.Min(e.Box.YMin, o.Box.YMin),
		math.Max(e.Box.XMax, o.Box.XMax), math.Max(e.Box.YMax, o.Box.YMax)}}
}

// Disjoint reports that no point of e lies in b (borders included): no
// geometry inside e has an extent intersecting b.
func (e Extent) Disjoint(b Box) bool {
	return e.Empty || e.Box.XMax < b.XMin || e.Box.XMin > b.XMax || e.Box.YMax < b.YMin || e.Box.YMin > b.YMax
}

// extentJSON is an Extent in a statistics row's extra_stats, as GeoParquet
// writes a bbox: [xmin, ymin, xmax, ymax]; [] when Empty.
type extentJSON struct {
	BBox *[]float64 `json:"bbox"`
}

// ExtentStats is the extra_stats text of an Extent.
func ExtentStats(e Extent) string {
	b := []float64{}
	if !e.Empty {
		b = []float64{e.Box.XMin, e.Box.YMin, e.Box.XMax, e.Box.YMax}
	}
	out, _ := json.Marshal(extentJSON{BBox: &b})
	return string(out)
}

// ParseExtentStats reads an Extent from extra_stats; ok is false when the
// text holds none or a malformed one (then nothing is known).
func ParseExtentStats(s string) (Extent, bool) {
	if s == "" || !strings.Contains(s, `"bbox"`) {
		return Extent{}, false
	}
	var j extentJSON
	if err := json.Unmarshal([]byte(s), &j); err != nil || j.BBox == nil {
		return Extent{}, false
	}
	b := *j.BBox
	switch len(b) {
	case 0:
		return Extent{Empty: true}, true
	case 4:
		e := Extent{Box: Box{b[0], b[1], b[2], b[3]}}
		for _, f := range b {
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return Extent{}, false
			}
		}
		if e.Box.XMin > e.Box.XMax || e.Box.YMin > e.Box.YMax {
			return Extent{}, false
		}
		return e, true
	}
	return Extent{}, false
}

// ErrWKB reports a WKB value that cannot be read.
var ErrWKB = errors.New("malformed WKB")

// errNaN marks a geometry with a NaN or infinite coordinate.
var errNaN = errors.New("a coordinate is NaN or infinite")

// WKBExtent reads the extent of one WKB geometry (ISO WKB, and EWKB's Z, M
// and SRID flags): x and y of every vertex. An empty point is written with
// NaN coordinates and is empty, as is any geometry with no vertex; a NaN
// or infinite coordinate anywhere else gives ok=false.
func WKBExtent(b []byte) (e Extent, ok bool, err error) {
	r := wkbReader{b: b}
	e = Extent{Empty: true}
	if err := r.geometry(&e, 0); err != nil {
		if errors.Is(err, errNaN) {
			return Extent{}, false, nil
		}
		return Extent{}, false, err
	}
	if r.off != len(b) {
		return Extent{}, false, fmt.Errorf("%w: %d bytes after the geometry", ErrWKB, len(b)-r.off)
	}
	return e, true, nil
}

type wkbReader struct {
	b   []byte
	off int
	be  bool
}

func (r *wkbReader) u32() (uint32, error) {
	if r.off+4 > len(r.b) {
		return 0, fmt.Errorf("%w: ends early", ErrWKB)
	}
	v := binary.LittleEndian.Uint32(r.b[r.off:])
	if r.be {
		v = binary.BigEndian.Uint32(r.b[r.off:])
	}
	r.off += 4
	return v, nil
}

func (r *wkbReader) f64() (float64, error) {
	if r.off+8 > len(r.b) {
		return 0, fmt.Errorf("%w: ends early", ErrWKB)
	}
	v := binary.LittleEndian.Uint64(r.b[r.off:])
	if r.be {
		v = binary.BigEndian.Uint64(r.b[r.off:])
	}
	r.off += 8
	return math.Float64frombits(v), nil
}

// count reads an element count and checks that the rest of the value can
// hold that many elements of at least min bytes each.
func (r *wkbReader) count(min int) (int, error) {
	n, err := r.u32()
	if err != nil {
		return 0, err
	}
	if int64(n)*int64(min) > int64(len(r.b)-r.off) {
		return 0, fmt.Errorf("%w: %d elements do not fit", ErrWKB, n)
	}
	return int(n), nil
}

func (r *wkbReader) geometry(e *Extent, depth int) error {
	if depth > 64 {
		return fmt.Errorf("%w: nested deeper than 64", ErrWKB)
	}
	if r.off >= len(r.b) {
		return fmt.Errorf("%w: ends early", ErrWKB)
	}
	switch r.b[r.off] {
	case 0:
		r.be = true
	case 1:
		r.be = false
	default:
		return fmt.Errorf("%w: byte order %d", ErrWKB, r.b[r.off])
	}
	r.off++
	code, err := r.u32()
	if err != nil {
		return err
	}
	dims := 2
	if code&0x80000000 != 0 { // EWKB Z
		dims++
	}
	if code&0x40000000 != 0 { // EWKB M
		dims++
	}
	if code&0x20000000 != 0 { // EWKB SRID
		if _, err := r.u32(); err != nil {
			return err
		}
	}
	code &= 0x0fffffff
	switch code / 1000 {
	case 1, 2:
		dims++
	case 3:
		dims += 2
	case 0:
	default:
		return fmt.Errorf("%w: geometry type %d", ErrWKB, code)
	}
	if dims > 4 {
		return fmt.Errorf("%w: %d dimensions", ErrWKB, dims)
	}
	point := func(emptyOK bool) error {
		var x, y float64
		for d := 0; d < dims; d++ {
			f, err := r.f64()
			if err != nil {
				return err
			}
			switch d {
			case 0:
				x = f
			case 1:
				y = f
			}
		}
		if emptyOK && math.IsNaN(x) && math.IsNaN(y) {
			return nil // POINT EMPTY
		}
		if math.IsNaN(x) || math.IsNaN(y) || math.IsInf(x, 0) || math.IsInf(y, 0) {
			return errNaN
		}
		*e = e.Add(Extent{Box: Box{x, y, x, y}})
		return nil
	}
	switch code % 1000 {
	case 1:
		return point(true)
	case 2:
		n, err := r.count(8 * dims)
		if err != nil {
			return err
		}
		for range n {
			if err := point(false); err != nil {
				return err
			}
		}
	case 3:
		rings, err := r.count(4)
		if err != nil {
			return err
		}
		for range rings {
			n, err := r.count(8 * dims)
			if err != nil {
				return err
			}
			for range n {
				if err := point(false); err != nil {
					return err
				}
			}
		}
	case 4, 5, 6, 7:
		n, err := r.count(5)
		if err != nil {
			return err
		}
		for range n {
			be := r.be
			if err := r.geometry(e, depth+1); err != nil {
				return err
			}
			r.be = be
		}
	default:
		return fmt.Errorf("%w: geometry type %d", ErrWKB, code)
	}
	return nil
}

// WKTExtent reads the extent of a geometry written as WKT ('POINT (1 2)',
// 'POLYGON Z ((…))', 'MULTIPOINT ((1 2), (3 4))', '… EMPTY'): x and y of
// every coordinate tuple. ok is false for text it does not read (an SRID
// prefix, an unknown word), and for NaN or infinite coordinates.
func WKTExtent(s string) (e Extent, ok bool) {
	e = Extent{Empty: true}
	words := map[string]bool{"POINT": true, "LINESTRING": true, "POLYGON": true, "MULTIPOINT": true,
		"MULTILINESTRING": true, "MULTIPOLYGON": true, "GEOMETRYCOLLECTION": true, "EMPTY": true,
		"Z": true, "M": true, "ZM": true}
	var tuple []float64
	flush := func() bool {
		if len(tuple) == 0 {
			return true
		}
		if len(tuple) < 2 || len(tuple) > 4 {
			return false
		}
		x, y := tuple[0], tuple[1]
		tuple = tuple[:0]
		if math.IsNaN(x) || math.IsNaN(y) || math.IsInf(x, 0) || math.IsInf(y, 0) {
			return false
		}
		e = e.Add(Extent{Box: Box{x, y, x, y}})
		return true
	}
	depth, sawWord := 0, false
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '(':
			depth++
			i++
		case c == ')' || c == ',':
			if !flush() {
				return Extent{}, false
			}
			if c == ')' {
				if depth--; depth < 0 {
					return Extent{}, false
				}
			}
			i++
		case c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z':
			j := i
			for j < len(s) && (s[j] >= 'A' && s[j] <= 'Z' || s[j] >= 'a' && s[j] <= 'z') {
				j++
			}
			if !words[strings.ToUpper(s[i:j])] || len(tuple) > 0 {
				return Extent{}, false
			}
			sawWord = true
			i = j
		default:
			j := i
			for j < len(s) && strings.IndexByte("+-.0123456789eE", s[j]) >= 0 {
				j++
			}
			f, err := strconv.ParseFloat(s[i:j], 64)
			if j == i || err != nil {
				return Extent{}, false
			}
			tuple = append(tuple, f)
			i = j
		}
	}
	if depth != 0 || !sawWord || !flush() {
		return Extent{}, false
	}
	return e, true
}
