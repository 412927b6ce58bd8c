package types

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
)

// dateCodec: days since 1970-01-01 as 4 biased bytes (DuckDB's date_t is an
// int32; ±infinity are its ends).
func dateCodec() *Codec {
	return &Codec{
		typ: Simple(KindDate), width: 4, ordered: true,
		enc: func(dst []byte, v Value) ([]byte, error) {
			d := v.Int64()
			if !v.I.IsInt64() || d > dateInfinity || d < dateNegInfinity {
				return dst, fmt.Errorf("DATE: day %s: %w", v.I, ErrOutOfRange)
			}
			return appendBiased(dst, d, 4), nil
		},
		dec: func(b []byte) (Value, error) {
			d := readBiased(b)
			if d < dateNegInfinity {
				return Value{}, fmt.Errorf("DATE: day %d: %w", d, ErrOutOfRange)
			}
			return IntValue(d), nil
		},
		format: func(v Value) string { return formatDateValue(v.Int64()) },
		parse: func(s string, _ Rounding) (Value, bool, error) {
			d, err := parseDateText(s)
			return IntValue(d), err == nil, err
		},
	}
}

// timeCodec: microseconds since midnight as 8 biased bytes; 24:00:00 is a
// valid DuckDB time.
func timeCodec() *Codec {
	return &Codec{
		typ: Simple(KindTime), width: 8, ordered: true,
		enc: func(dst []byte, v Value) ([]byte, error) {
			m := v.Int64()
			if !v.I.IsInt64() || m < 0 || m > microsPerDay {
				return dst, fmt.Errorf("TIME: %s µs: %w", v.I, ErrOutOfRange)
			}
			return appendBiased(dst, m, 8), nil
		},
		dec: func(b []byte) (Value, error) {
			m := readBiased(b)
			if m < 0 || m > microsPerDay {
				return Value{}, fmt.Errorf("TIME: %d µs: %w", m, ErrOutOfRange)
			}
			return IntValue(m), nil
		},
		format: func(v Value) string {
			m := v.Int64()
			return formatClock(m/1_000_000, m%1_000_000, 6)
		},
		parse: func(s string, r Rounding) (Value, bool, error) {
			m, _, _, exact, err := parseTimeText(s, r)
			if err != nil {
				return Value{}, false, fmt.Errorf("TIME: %w", err)
			}
			return IntValue(m), exact, nil
		},
	}
}

// timeNSCodec: DuckDB's TIME_NS, nanoseconds since midnight as 8 biased
// bytes; 24:00:00 is valid, as for TIME.
func timeNSCodec() *Codec {
	return &Codec{
		typ: Simple(KindTimeNS), width: 8, ordered: true,
		enc: func(dst []byte, v Value) ([]byte, error) {
			n := v.Int64()
			if !v.I.IsInt64() || n < 0 || n > nanosPerDay {
				return dst, fmt.Errorf("TIME_NS: %s ns: %w", v.I, ErrOutOfRange)
			}
			return appendBiased(dst, n, 8), nil
		},
		dec: func(b []byte) (Value, error) {
			n := readBiased(b)
			if n < 0 || n > nanosPerDay {
				return Value{}, fmt.Errorf("TIME_NS: %d ns: %w", n, ErrOutOfRange)
			}
			return IntValue(n), nil
		},
		format: func(v Value) string {
			n := v.Int64()
			return formatClock(n/1_000_000_000, n%1_000_000_000, 9)
		},
		parse: func(s string, r Rounding) (Value, bool, error) {
			n, _, _, exact, err := parseClockText(s, r, 9)
			if err != nil {
				return Value{}, false, fmt.Errorf("TIME_NS: %w", err)
			}
			return IntValue(n), exact, nil
		},
	}
}

// timeTZCodec orders as DuckDB does: by the UTC instant (local time minus
// offset), then by offset descending (12:00+05 < 08:00+01 < 07:00+00, all
// the same instant). 8 biased bytes of UTC micros, then 4 bytes of
// maxTZOffset - offset.
func timeTZCodec() *Codec {
	return &Codec{
		typ: Simple(KindTimeTZ), width: 12, ordered: true,
		enc: func(dst []byte, v Value) ([]byte, error) {
			m := v.Int64()
			if !v.I.IsInt64() || m < 0 || m > microsPerDay {
				return dst, fmt.Errorf("TIME WITH TIME ZONE: %s µs: %w", v.I, ErrOutOfRange)
			}
			if v.Offset > maxTZOffset || v.Offset < -maxTZOffset {
				return dst, fmt.Errorf("TIME WITH TIME ZONE: offset %d s: %w", v.Offset, ErrOutOfRange)
			}
			dst = appendBiased(dst, m-int64(v.Offset)*1_000_000, 8)
			return binary.BigEndian.AppendUint32(dst, uint32(maxTZOffset-v.Offset)), nil
		},
		dec: func(b []byte) (Value, error) {
			off := maxTZOffset - int64(binary.BigEndian.Uint32(b[8:]))
			if off > maxTZOffset || off < -maxTZOffset {
				return Value{}, fmt.Errorf("TIME WITH TIME ZONE: offset %d s: %w", off, ErrOutOfRange)
			}
			m := readBiased(b[:8]) + off*1_000_000
			if m < 0 || m > microsPerDay {
				return Value{}, fmt.Errorf("TIME WITH TIME ZONE: %d µs: %w", m, ErrOutOfRange)
			}
			return TimeTZValue(m, int32(off)), nil
		},
		format: func(v Value) string {
			m := v.Int64()
			return formatClock(m/1_000_000, m%1_000_000, 6) + formatOffset(v.Offset)
		},
		parse: func(s string, r Rounding) (Value, bool, error) {
			m, off, hasOff, exact, err := parseTimeText(s, r)
			if err != nil {
				return Value{}, false, fmt.Errorf("TIME WITH TIME ZONE: %w", err)
			}
			if !hasOff {
				return Value{}, false, fmt.Errorf("TIME WITH TIME ZONE: %q: %w", s, ErrNoOffset)
			}
			return TimeTZValue(m, off), exact, nil
		},
	}
}

// timestampCodec: a signed count of the type's own unit since the Unix epoch
// (UTC for TIMESTAMPTZ) as 8 biased bytes. Units are never mixed: a
// TIMESTAMP_MS bound is milliseconds.
func timestampCodec(k Kind) *Codec {
	return &Codec{
		typ: Simple(k), width: 8, ordered: true,
		enc: func(dst []byte, v Value) ([]byte, error) {
			if !v.I.IsInt64() || v.Int64() == math.MinInt64 {
				return dst, fmt.Errorf("%s: %s: %w", kindName(k), v.I, ErrOutOfRange)
			}
			return appendBiased(dst, v.Int64(), 8), nil
		},
		dec: func(b []byte) (Value, error) {
			x := readBiased(b)
			if x == math.MinInt64 {
				return Value{}, fmt.Errorf("%s: %w", kindName(k), ErrOutOfRange)
			}
			return IntValue(x), nil
		},
		format: func(v Value) string { return formatTimestamp(v.Int64(), k) },
		parse: func(s string, r Rounding) (Value, bool, error) {
			x, exact, err := parseTimestampText(s, k, r)
			if err != nil {
				return Value{}, false, fmt.Errorf("%s: %w", kindName(k), err)
			}
			return IntValue(x), exact, nil
		},
	}
}

// intervalCodec encodes months, days and micros (biased) so a value can be
// stored, but it is not ordered and never prunes.
func intervalCodec() *Codec {
	return &Codec{
		typ: Simple(KindInterval), width: 16, ordered: false,
		enc: func(dst []byte, v Value) ([]byte, error) {
			dst = appendBiased(dst, int64(v.Interval.Months), 4)
			dst = appendBiased(dst, int64(v.Interval.Days), 4)
			return appendBiased(dst, v.Interval.Micros, 8), nil
		},
		dec: func(b []byte) (Value, error) {
			return IntervalValue(Interval{
				Months: int32(readBiased(b[:4])),
				Days:   int32(readBiased(b[4:8])),
				Micros: readBiased(b[8:]),
			}), nil
		},
		format: func(v Value) string { return formatInterval(v.Interval) },
		parse: func(s string, _ Rounding) (Value, bool, error) {
			iv, err := parseInterval(s)
			if err != nil {
				return Value{}, false, fmt.Errorf("INTERVAL: %w", err)
			}
			return IntervalValue(iv), true, nil
		},
	}
}

func plural(n int64, unit string) string {
	if n == 1 || n == -1 {
		return fmt.Sprintf("%d %s", n, unit)
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

// formatInterval writes DuckDB's form: "1 year 2 months 3 days 04:05:06.789",
// "-1 day", "00:00:00" for zero.
func formatInterval(iv Interval) string {
	var parts []string
	if y := int64(iv.Months / 12); y != 0 {
		parts = append(parts, plural(y, "year"))
	}
	if m := int64(iv.Months % 12); m != 0 {
		parts = append(parts, plural(m, "month"))
	}
	if iv.Days != 0 {
		parts = append(parts, plural(int64(iv.Days), "day"))
	}
	if iv.Micros != 0 || len(parts) == 0 {
		u := iv.Micros
		sign := ""
		if u < 0 {
			sign = "-"
			if u == math.MinInt64 {
				// |MinInt64| does not fit; print via uint64.
				mu := uint64(1) << 63
				secs := mu / 1_000_000
				parts = append(parts, fmt.Sprintf("-%02d:%02d:%02d.%06d", secs/3600, secs/60%60, secs%60, mu%1_000_000))
				return strings.Join(parts, " ")
			}
			u = -u
		}
		parts = append(parts, sign+formatClock(u/1_000_000, u%1_000_000, 6))
	}
	return strings.Join(parts, " ")
}

var intervalUnits = map[string]struct {
	months, days, micros int64
}{
	"year": {months: 12}, "years": {months: 12}, "y": {months: 12}, "yr": {months: 12}, "yrs": {months: 12},
	"month": {months: 1}, "months": {months: 1}, "mon": {months: 1}, "mons": {months: 1},
	"week": {days: 7}, "weeks": {days: 7}, "w": {days: 7},
	"day": {days: 1}, "days": {days: 1}, "d": {days: 1},
	"hour": {micros: 3_600_000_000}, "hours": {micros: 3_600_000_000}, "h": {micros: 3_600_000_000},
	"minute": {micros: 60_000_000}, "minutes": {micros: 60_000_000}, "min": {micros: 60_000_000},
	"mins": {micros: 60_000_000}, "m": {micros: 60_000_000},
	"second": {micros: 1_000_000}, "seconds": {micros: 1_000_000}, "sec": {micros: 1_000_000},
	"secs": {micros: 1_000_000}, "s": {micros: 1_000_000},
	"millisecond": {micros: 1_000}, "milliseconds": {micros: 1_000}, "ms": {micros: 1_000},
	"microsecond": {micros: 1}, "microseconds": {micros: 1}, "us": {micros: 1},
}

// parseInterval reads DuckDB's interval text: "<n> <unit>" terms and an
// optional [-]H:MM:SS[.f] clock, in any order.
func parseInterval(s string) (Interval, error) {
	fields := strings.Fields(strings.TrimSpace(s))
	if len(fields) == 0 {
		return Interval{}, fmt.Errorf("empty interval")
	}
	var months, days, micros int64
	add := func(dst *int64, n int64) error {
		sum := *dst + n
		if (n > 0 && sum < *dst) || (n < 0 && sum > *dst) {
			return fmt.Errorf("%q: %w", s, ErrOutOfRange)
		}
		*dst = sum
		return nil
	}
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if strings.Contains(f, ":") {
			neg := strings.HasPrefix(f, "-")
			body := strings.TrimLeft(f, "+-")
			parts := strings.SplitN(body, ":", 3)
			if len(parts) < 2 {
				return Interval{}, fmt.Errorf("%q: bad clock %q", s, f)
			}
			h, err1 := strconv.ParseInt(parts[0], 10, 64)
			mi, err2 := strconv.ParseInt(parts[1], 10, 64)
			var sec, frac int64
			var err3 error
			if len(parts) == 3 {
				whole, fr, _ := strings.Cut(parts[2], ".")
				sec, err3 = strconv.ParseInt(whole, 10, 64)
				if fr != "" {
					for _, c := range fr {
						if !unicode.IsDigit(c) {
							return Interval{}, fmt.Errorf("%q: bad clock %q", s, f)
						}
					}
					frac, _ = fracUnits(fr, 6, Cast)
				}
			}
			if err1 != nil || err2 != nil || err3 != nil || h < 0 || mi > 59 || sec > 59 {
				return Interval{}, fmt.Errorf("%q: bad clock %q", s, f)
			}
			const maxHours = (math.MaxInt64 - 3_599_999_999) / 3_600_000_000
			if h > maxHours {
				return Interval{}, fmt.Errorf("%q: %w", s, ErrOutOfRange)
			}
			u := h*3_600_000_000 + mi*60_000_000 + sec*1_000_000 + frac
			if neg {
				u = -u
			}
			if err := add(&micros, u); err != nil {
				return Interval{}, err
			}
			continue
		}
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil || i+1 >= len(fields) {
			return Interval{}, fmt.Errorf("%q: expected <number> <unit>", s)
		}
		i++
		u, ok := intervalUnits[strings.ToLower(fields[i])]
		if !ok {
			return Interval{}, fmt.Errorf("%q: unknown unit %q", s, fields[i])
		}
		for _, t := range []struct {
			dst *int64
			per int64
		}{{&months, u.months}, {&days, u.days}, {&micros, u.micros}} {
			if t.per == 0 {
				continue
			}
			if n > math.MaxInt64/t.per || n < math.MinInt64/t.per {
				return Interval{}, fmt.Errorf("%q: %w", s, ErrOutOfRange)
			}
			if err := add(t.dst, n*t.per); err != nil {
				return Interval{}, err
			}
		}
	}
	if months > math.MaxInt32 || months < math.MinInt32 || days > math.MaxInt32 || days < math.MinInt32 {
		return Interval{}, fmt.Errorf("%q: %w", s, ErrOutOfRange)
	}
	return Interval{Months: int32(months), Days: int32(days), Micros: micros}, nil
}
