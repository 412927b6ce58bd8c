package server

import (
	"encoding/binary"
	"math"

	"github.com/rocklake/rocklake/types"
)

// Binary values from their text, without pgx. A streamed answer (binary
// COPY, a binary cursor) arrives as DuckDB's text of each value, which
// pgx's codecs read into a Go value and write again: most of such a
// COPY's time, and an allocation or more per value. appendBinary reads
// the texts DuckDB writes for the common types straight into
// PostgreSQL's binary form; anything else it declines (ok false), and the
// value takes pgx's path, so that a text it is unsure of is never
// guessed. TestBinaryFromTextIsPgx holds it to pgx's answer over
// generated texts.

// appendBinary appends the binary form of a value of type oid, given its
// PostgreSQL text, preceded by its length as a COPY row or a DataRow
// holds it; ok false (dst unchanged) when it does not read the text.
func appendBinary(dst []byte, oid uint32, s string) ([]byte, bool) {
	switch oid {
	case oidText, oidVarchar, oidJSON:
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(s)))
		return append(dst, s...), true
	case oidBool:
		switch s {
		case "t":
			return append(dst, 0, 0, 0, 1, 1), true
		case "f":
			return append(dst, 0, 0, 0, 1, 0), true
		}
	case oidInt2, oidInt4, oidInt8:
		n, ok := parseInt(s)
		if !ok {
			return dst, false
		}
		switch oid {
		case oidInt2:
			if n < math.MinInt16 || n > math.MaxInt16 {
				return dst, false
			}
			return binary.BigEndian.AppendUint16(append(dst, 0, 0, 0, 2), uint16(n)), true
		case oidInt4:
			if n < math.MinInt32 || n > math.MaxInt32 {
				return dst, false
			}
			return binary.BigEndian.AppendUint32(append(dst, 0, 0, 0, 4), uint32(n)), true
		}
		return binary.BigEndian.AppendUint64(append(dst, 0, 0, 0, 8), uint64(n)), true
	case oidDate:
		if len(s) != 10 {
			return dst, false
		}
		days, ok := parseDate(s)
		if !ok {
			return dst, false
		}
		return binary.BigEndian.AppendUint32(append(dst, 0, 0, 0, 4), uint32(int32(days))), true
	case oidTimestamp, oidTimestamptz:
		if oid == oidTimestamptz {
			if len(s) < 3 || s[len(s)-3:] != "+00" {
				return dst, false
			}
			s = s[:len(s)-3]
		}
		if len(s) < 19 || s[10] != ' ' {
			return dst, false
		}
		days, ok := parseDate(s[:10])
		if !ok {
			return dst, false
		}
		us, ok := parseClock(s[11:])
		if !ok {
			return dst, false
		}
		return binary.BigEndian.AppendUint64(append(dst, 0, 0, 0, 8), uint64(days*86_400_000_000+us)), true
	case oidTime:
		us, ok := parseClock(s)
		if !ok {
			return dst, false
		}
		return binary.BigEndian.AppendUint64(append(dst, 0, 0, 0, 8), uint64(us)), true
	case oidUUID:
		if len(s) != 36 {
			return dst, false
		}
		start := len(dst)
		dst = append(dst, 0, 0, 0, 16)
		for i := 0; i < 36; {
			if i == 8 || i == 13 || i == 18 || i == 23 {
				if s[i] != '-' {
					return dst[:start], false
				}
				i++
				continue
			}
			hi, ok1 := unhex(s[i])
			lo, ok2 := unhex(s[i+1])
			if !ok1 || !ok2 {
				return dst[:start], false
			}
			dst = append(dst, hi<<4|lo)
			i += 2
		}
		return dst, true
	case oidNumeric:
		return appendNumeric(dst, s)
	}
	return dst, false
}

// parseInt reads an optionally signed run of decimal digits that fits an
// int64.
func parseInt(s string) (int64, bool) {
	neg := false
	if len(s) > 0 && (s[0] == '-' || s[0] == '+') {
		neg, s = s[0] == '-', s[1:]
	}
	if len(s) > 19 { // 19 digits fit a uint64
		return 0, false
	}
	u, ok := digits(s)
	if !ok {
		return 0, false
	}
	if neg {
		if u > 1<<63 {
			return 0, false
		}
		return -int64(u), true
	}
	if u > math.MaxInt64 {
		return 0, false
	}
	return int64(u), true
}

// pgEpochDays is 2000-01-01, PostgreSQL's epoch, in days from 1970-01-01.
const pgEpochDays = 10957

// parseDate reads YYYY-MM-DD (years 1 to 9999, a real day) as days from
// 2000-01-01, PostgreSQL's epoch.
func parseDate(s string) (int64, bool) {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return 0, false
	}
	y, ok1 := digits(s[0:4])
	m, ok2 := digits(s[5:7])
	d, ok3 := digits(s[8:10])
	if !ok1 || !ok2 || !ok3 || y < 1 || m < 1 || m > 12 || d < 1 || d > uint64(types.DaysInMonth(int64(y), int(m))) {
		return 0, false
	}
	return types.DaysFromCivil(int64(y), int(m), int(d)) - pgEpochDays, true
}

// parseClock reads HH:MM:SS with up to six fraction digits as
// microseconds (24:00:00 included, as PostgreSQL's time has it).
func parseClock(s string) (int64, bool) {
	if len(s) < 8 || s[2] != ':' || s[5] != ':' {
		return 0, false
	}
	h, ok1 := digits(s[0:2])
	m, ok2 := digits(s[3:5])
	sec, ok3 := digits(s[6:8])
	if !ok1 || !ok2 || !ok3 || h > 24 || m > 59 || sec > 59 || h == 24 && (m > 0 || sec > 0 || len(s) > 8) {
		return 0, false
	}
	var frac uint64
	if len(s) > 8 {
		f := s[9:]
		if s[8] != '.' || len(f) == 0 || len(f) > 6 {
			return 0, false
		}
		v, ok := digits(f)
		if !ok {
			return 0, false
		}
		for i := len(f); i < 6; i++ {
			v *= 10
		}
		frac = v
	}
	return int64((h*3600+m*60+sec)*1_000_000 + frac), true
}

// digits reads a run of decimal digits; its value wraps past 19 digits,
// which callers that use it bound.
func digits(s string) (uint64, bool) {
	var v uint64
	for i := 0; i < len(s); i++ {
		c := s[i] - '0'
		if c > 9 {
			return 0, false
		}
		v = v*10 + uint64(c)
	}
	return v, len(s) > 0
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// appendNumeric writes a decimal's text ([-]digits[.digits]) as
// PostgreSQL's numeric_send does: base-10000 digits without leading or
// trailing zero groups, the weight of the first, the sign, and the
// display scale (the fraction digits written).
func appendNumeric(dst []byte, s string) ([]byte, bool) {
	neg := false
	if len(s) > 0 && s[0] == '-' {
		neg, s = true, s[1:]
	}
	intPart, frac := s, ""
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			intPart, frac = s[:i], s[i+1:]
			break
		}
	}
	if len(intPart) == 0 || len(intPart)+len(frac) > 1000 || (len(frac) == 0 && len(s) > len(intPart)) {
		return dst, false
	}
	if _, ok := digits(intPart); !ok {
		return dst, false
	}
	if len(frac) > 0 {
		if _, ok := digits(frac); !ok {
			return dst, false
		}
	}
	// Groups of four digits aligned on the decimal point: the integer
	// part padded on the left, the fraction on the right.
	lead := (4 - len(intPart)%4) % 4
	nInt := (lead + len(intPart)) / 4
	nFrac := (len(frac) + 3) / 4
	var groups [260]int16
	g := groups[:0]
	at := func(i int) byte { // digit i of the padded integer and fraction
		switch {
		case i < lead:
			return '0'
		case i < lead+len(intPart):
			return intPart[i-lead]
		case i-lead-len(intPart) < len(frac):
			return frac[i-lead-len(intPart)]
		}
		return '0'
	}
	for k := 0; k < nInt+nFrac; k++ {
		var v int16
		for j := 0; j < 4; j++ {
			v = v*10 + int16(at(k*4+j)-'0')
		}
		g = append(g, v)
	}
	weight := nInt - 1
	for len(g) > 0 && g[0] == 0 {
		g = g[1:]
		weight--
	}
	for len(g) > 0 && g[len(g)-1] == 0 {
		g = g[:len(g)-1]
	}
	sign := uint16(0)
	if len(g) == 0 {
		weight = 0
	} else if neg {
		sign = 0x4000
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(8+2*len(g)))
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(g)))
	dst = binary.BigEndian.AppendUint16(dst, uint16(int16(weight)))
	dst = binary.BigEndian.AppendUint16(dst, sign)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(frac)))
	for _, v := range g {
		dst = binary.BigEndian.AppendUint16(dst, uint16(v))
	}
	return dst, true
}
