package server

import (
	"bytes"
	"fmt"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// genText draws the PostgreSQL text of a value of type oid: mostly as
// DuckDB writes it in a streamed answer, sometimes near a limit or
// malformed, where appendBinary must decline or agree with pgx.
func genText(rng *rand.Rand, oid uint32) string {
	if rng.IntN(20) == 0 {
		bad := []string{"", "-", "+", ".", "1.", ".5", "1e5", " 1", "1 ", "0x10", "NaN", "infinity", "-infinity",
			"2024-02-30", "2023-02-29", "2024-13-01", "0000-01-01", "24:00:00.000001", "23:60:00", "2024-01-01T00:00:00",
			"2024-01-01 00:00:00+05:30", "2024-01-01 00:00:00.1234567", "0044-03-15 BC", "10000-01-01",
			"t", "f", "true", "false", "1", "0", "00000000-0000-0000-0000-00000000000g", "-0", "-0.000", "007",
			"9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
			"32767", "32768", "-32768", "-32769", "2147483647", "2147483648", "-2147483648", "-2147483649"}
		return bad[rng.IntN(len(bad))]
	}
	switch oid {
	case oidBool:
		return []string{"t", "f"}[rng.IntN(2)]
	case oidInt2, oidInt4, oidInt8:
		bits := map[uint32]int{oidInt2: 16, oidInt4: 32, oidInt8: 64}[oid]
		n := rng.Int64() >> (64 - bits + rng.IntN(bits))
		return fmt.Sprint(n)
	case oidDate, oidTimestamp, oidTimestamptz:
		// Years 1 to 9999, more of them near 1970 and 2000.
		lo, hi := time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro(), time.Date(9999, 12, 31, 23, 59, 59, 999999, time.UTC).UnixMicro()
		us := lo + rng.Int64N(hi-lo)
		if rng.IntN(2) == 0 {
			us = rng.Int64N(2e15) - 1e15
		}
		tm := time.UnixMicro(us).UTC()
		if oid == oidDate {
			return tm.Format("2006-01-02")
		}
		s := tm.Format("2006-01-02 15:04:05")
		if frac := us % 1e6; frac != 0 && rng.IntN(4) > 0 {
			s += strings.TrimRight(fmt.Sprintf(".%06d", (frac+1e6)%1e6), "0")
		}
		if oid == oidTimestamptz {
			s += "+00"
		}
		return s
	case oidTime:
		us := rng.Int64N(86_400_000_001)
		tm := time.UnixMicro(us).UTC()
		s := tm.Format("15:04:05")
		if us == 86_400_000_000 {
			s = "24:00:00"
		}
		if f := us % 1e6; f != 0 {
			s += strings.TrimRight(fmt.Sprintf(".%06d", f), "0")
		}
		return s
	case oidUUID:
		var b [16]byte
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		s := fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
		if rng.IntN(4) == 0 {
			s = strings.ToUpper(s)
		}
		return s
	case oidNumeric:
		// DECIMAL(p,s) as DuckDB writes it (every fraction digit), and the
		// 128-bit integers.
		scale := rng.IntN(12)
		n := 1 + rng.IntN(38)
		var b strings.Builder
		if rng.IntN(3) == 0 {
			b.WriteByte('-')
		}
		ip := max(1, n-scale)
		for i := 0; i < ip; i++ {
			d := rng.IntN(10)
			if rng.IntN(3) == 0 {
				d = 0
			}
			if i == 0 && ip > 1 && d == 0 {
				d = 1 + rng.IntN(9)
			}
			b.WriteByte(byte('0' + d))
		}
		if scale > 0 {
			b.WriteByte('.')
			for i := 0; i < scale; i++ {
				d := rng.IntN(10)
				if rng.IntN(2) == 0 {
					d = 0
				}
				b.WriteByte(byte('0' + d))
			}
		}
		return b.String()
	}
	var b strings.Builder
	for i := rng.IntN(12); i > 0; i-- {
		b.WriteRune(rune(32 + rng.IntN(200)))
	}
	return b.String()
}

// TestBinaryFromTextIsPgx: over generated texts of every type appendBinary
// reads, what it writes is what pgx's codecs write from the same text
// (numerics: the same value and scale, in PostgreSQL's own canonical
// form), and what it declines pgx may refuse; it never accepts a text
// pgx refuses.
func TestBinaryFromTextIsPgx(t *testing.T) {
	m := pgtype.NewMap()
	rng := rand.New(rand.NewPCG(38, 1))
	oids := []uint32{oidBool, oidInt2, oidInt4, oidInt8, oidDate, oidTimestamp, oidTimestamptz, oidTime, oidUUID, oidNumeric, oidText, oidJSON}
	declined := map[uint32]int{}
	for _, oid := range oids {
		for i := 0; i < 20000; i++ {
			s := genText(rng, oid)
			c := column{oid: oid, format: 1}
			fast, ok := appendBinary([]byte{0xAB}, oid, s)
			if !ok {
				declined[oid]++
				if !bytes.Equal(fast, []byte{0xAB}) {
					t.Fatalf("oid %d %q: declined, but wrote %x", oid, s, fast)
				}
				continue
			}
			if fast[0] != 0xAB {
				t.Fatalf("oid %d %q: overwrote what was before", oid, s)
			}
			fast = fast[1:]
			want, err := encodeTextPgx(m, c, s)
			if oid == oidText || oid == oidJSON {
				want, err = []byte(s), nil
			}
			if err != nil {
				t.Fatalf("oid %d %q: read as %x, which pgx refuses: %v", oid, s, fast, err)
			}
			n := int(uint32(fast[0])<<24 | uint32(fast[1])<<16 | uint32(fast[2])<<8 | uint32(fast[3]))
			got := fast[4:]
			if n != len(got) {
				t.Fatalf("oid %d %q: length %d before %d bytes", oid, s, n, len(got))
			}
			if oid == oidNumeric {
				checkNumeric(t, m, s, got, want)
				continue
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("oid %d %q: %x, pgx writes %x", oid, s, got, want)
			}
		}
	}
	for _, oid := range oids {
		// What DuckDB writes is read, not left to pgx: at most the
		// malformed twentieth and the texts near limits are declined.
		if declined[oid] > 20000/10 {
			t.Errorf("oid %d: %d of 20000 texts declined", oid, declined[oid])
		}
	}
	t.Logf("declined (left to pgx): %v", declined)
}

// checkNumeric compares a numeric's binary form with pgx's: the same
// value read back, and the text PostgreSQL's numeric_out makes of it
// (numericText) is the text it was made from: value and display scale.
// It is the form numeric_send writes: no leading or trailing zero
// base-10000 digit, and zero as no digits at weight 0 (where pgx writes
// others).
func checkNumeric(t *testing.T, m *pgtype.Map, s string, got, want []byte) {
	t.Helper()
	var a, b pgtype.Numeric
	if err := m.Scan(oidNumeric, pgtype.BinaryFormatCode, got, &a); err != nil {
		t.Fatalf("numeric %q: %x does not read back: %v", s, got, err)
	}
	if err := m.Scan(oidNumeric, pgtype.BinaryFormatCode, want, &b); err != nil {
		t.Fatal(err)
	}
	rat := func(n pgtype.Numeric) *big.Rat {
		r := new(big.Rat).SetInt(n.Int)
		p := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(max(n.Exp, -n.Exp))), nil))
		if n.Exp >= 0 {
			return r.Mul(r, p)
		}
		return r.Quo(r, p)
	}
	if rat(a).Cmp(rat(b)) != 0 {
		t.Fatalf("numeric %q: %x reads back as %v, pgx's %x as %v", s, got, rat(a), want, rat(b))
	}
	if txt := numericText(got); txt != normalizeNeg(s) {
		t.Fatalf("numeric %q: %x is %q", s, got, txt)
	}
	nd := int(got[0])<<8 | int(got[1])
	if nd == 0 && (got[2] != 0 || got[3] != 0 || got[4] != 0 || got[5] != 0) {
		t.Fatalf("numeric %q: zero as %x", s, got)
	}
	if nd > 0 {
		first := int(got[8])<<8 | int(got[9])
		last := int(got[8+2*(nd-1)])<<8 | int(got[9+2*(nd-1)])
		if first == 0 || last == 0 {
			t.Fatalf("numeric %q: %x has a leading or trailing zero digit", s, got)
		}
	}
}

// numericText is a numeric's binary form as numeric_out writes it: the
// integer digits (0 when none), then dscale fraction digits.
func numericText(b []byte) string {
	u16 := func(i int) int { return int(b[i])<<8 | int(b[i+1]) }
	nd, weight, sign, dscale := u16(0), int(int16(u16(2))), u16(4), u16(6)
	digit := func(w int) int { // the base-10000 digit of weight w
		i := weight - w
		if i < 0 || i >= nd {
			return 0
		}
		return u16(8 + 2*i)
	}
	var sb strings.Builder
	if sign == 0x4000 {
		sb.WriteByte('-')
	}
	if weight < 0 {
		sb.WriteByte('0')
	}
	for w := weight; w >= 0; w-- {
		if w == weight {
			fmt.Fprintf(&sb, "%d", digit(w))
		} else {
			fmt.Fprintf(&sb, "%04d", digit(w))
		}
	}
	if dscale > 0 {
		var f strings.Builder
		for w := -1; f.Len() < dscale; w-- {
			fmt.Fprintf(&f, "%04d", digit(w))
		}
		sb.WriteByte('.')
		sb.WriteString(f.String()[:dscale])
	}
	return sb.String()
}

// normalizeNeg is a numeric text as PostgreSQL writes its value back:
// leading zeros of the integer part go, and negative zero loses its sign.
func normalizeNeg(s string) string {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for len(s) > 1 && s[0] == '0' && s[1] != '.' {
		s = s[1:]
	}
	if neg && strings.Trim(s, "0.") != "" {
		return "-" + s
	}
	return s
}
