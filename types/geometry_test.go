package types

import (
	"encoding/binary"
	"math"
	"testing"
)

func wkbPoint(be bool, code uint32, coords ...float64) []byte {
	b := []byte{1}
	var order binary.AppendByteOrder = binary.LittleEndian
	if be {
		b[0], order = 0, binary.BigEndian
	}
	b = order.AppendUint32(b, code)
	for _, c := range coords {
		b = order.AppendUint64(b, math.Float64bits(c))
	}
	return b
}

func TestWKBExtent(t *testing.T) {
	line := binary.LittleEndian.AppendUint32([]byte{1}, 2)
	line = binary.LittleEndian.AppendUint32(line, 2)
	for _, c := range []float64{1, 5, -3, 2} {
		line = binary.LittleEndian.AppendUint64(line, math.Float64bits(c))
	}
	coll := binary.LittleEndian.AppendUint32([]byte{1}, 7)
	coll = binary.LittleEndian.AppendUint32(coll, 3)
	coll = append(append(append(coll, wkbPoint(true, 1, math.NaN(), math.NaN())...), wkbPoint(false, 1001, 10, 20, 30)...), line...)
	cases := []struct {
		name string
		wkb  []byte
		want string // "" when unknown, "[]" when empty
	}{
		{"point", wkbPoint(false, 1, 1, 2), `{"bbox":[1,2,1,2]}`},
		{"big-endian point", wkbPoint(true, 1, 1, 2), `{"bbox":[1,2,1,2]}`},
		{"empty point", wkbPoint(false, 1, math.NaN(), math.NaN()), `{"bbox":[]}`},
		{"NaN coordinate", wkbPoint(false, 1, 1, math.NaN()), ""},
		{"infinite coordinate", wkbPoint(false, 1, math.Inf(1), 0), ""},
		{"point ZM", wkbPoint(false, 3001, 1, 2, 3, 4), `{"bbox":[1,2,1,2]}`},
		{"EWKB point Z with SRID", append(wkbPoint(false, 0xA0000001)[:5], append(binary.LittleEndian.AppendUint32(nil, 4326), wkbPoint(false, 0, 7, 8, 9)[5:]...)...), `{"bbox":[7,8,7,8]}`},
		{"line", line, `{"bbox":[-3,2,1,5]}`},
		{"collection", coll, `{"bbox":[-3,2,10,20]}`},
	}
	for _, c := range cases {
		e, ok, err := WKBExtent(c.wkb)
		got := ""
		if ok {
			got = ExtentStats(e)
		}
		if err != nil || got != c.want {
			t.Errorf("%s: got %s %v, want %s", c.name, got, err, c.want)
		}
		if ok {
			back, ok := ParseExtentStats(got)
			if !ok || back != e {
				t.Errorf("%s: %s reads back as %+v %v", c.name, got, back, ok)
			}
		}
	}
	for _, bad := range [][]byte{nil, {1}, {2, 1, 0, 0, 0}, wkbPoint(false, 1, 1), append(wkbPoint(false, 1, 1, 2), 0), wkbPoint(false, 99, 1, 2),
		binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32([]byte{1}, 2), 1<<30)} {
		if _, _, err := WKBExtent(bad); err == nil {
			t.Errorf("%x: read as WKB", bad)
		}
	}
	for _, s := range []string{"", `{"bbox":null}`, `{"bbox":[1,2,3]}`, `{"bbox":[3,0,1,0]}`, `{"x":1}`, `{"bbox":[1,2`} {
		if _, ok := ParseExtentStats(s); ok {
			t.Errorf("%q read as an extent", s)
		}
	}
}

func TestWKTExtent(t *testing.T) {
	cases := map[string]string{
		"POINT(1 2)":                         `{"bbox":[1,2,1,2]}`,
		"point z (1 2 3)":                    `{"bbox":[1,2,1,2]}`,
		"LINESTRING(0 0, -5 1e2)":            `{"bbox":[-5,0,0,100]}`,
		"POLYGON((0 0, 0 3, 3 3, 3 0, 0 0))": `{"bbox":[0,0,3,3]}`,
		"MULTIPOINT((1 2), (3 4))":           `{"bbox":[1,2,3,4]}`,
		"GEOMETRYCOLLECTION(POINT EMPTY, LINESTRING(1 1, 2 2))": `{"bbox":[1,1,2,2]}`,
		"POINT EMPTY":              `{"bbox":[]}`,
		"GEOMETRYCOLLECTION EMPTY": `{"bbox":[]}`,
		"POINT(1 NaN)":             "",
		"SRID=4326;POINT(1 2)":     "",
		"POINT(1)":                 "",
		"POINT(1 2":                "",
		"CIRCLE(1 2)":              "",
		"1 2":                      "",
	}
	for in, want := range cases {
		e, ok := WKTExtent(in)
		got := ""
		if ok {
			got = ExtentStats(e)
		}
		if got != want {
			t.Errorf("%s: got %s, want %s", in, got, want)
		}
	}
}
