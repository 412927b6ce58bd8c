package types

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// DuckDB's infinite dates and timestamps sit at the ends of the physical
// range.
const (
	dateInfinity         = math.MaxInt32
	dateNegInfinity      = -math.MaxInt32
	timestampInfinity    = math.MaxInt64
	timestampNegInfinity = -math.MaxInt64

	microsPerDay = 86_400_000_000
	nanosPerDay  = 86_400_000_000_000
	// maxTZOffset is DuckDB's largest UTC offset, 15:59:59, in seconds.
	maxTZOffset = 16*3600 - 1
)

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// civilFromDays converts days since 1970-01-01 to a proleptic Gregorian
// date with astronomical year numbering (year 0 is 1 BC).
func civilFromDays(z int64) (y int64, m, d int) {
	z += 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = int(doy - (153*mp+2)/5 + 1)
	if mp < 10 {
		m = int(mp + 3)
	} else {
		m = int(mp - 9)
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}

func daysFromCivil(y int64, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := floorDiv(y, 400)
	yoe := y - era*400
	mp := int64((m + 9) % 12)
	doy := (153*mp+2)/5 + int64(d) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// DaysFromCivil is the proleptic Gregorian day number of y-m-d, counted
// from 1970-01-01 (year 0 is 1 BC).
func DaysFromCivil(y int64, m, d int) int64 { return daysFromCivil(y, m, d) }

// DaysInMonth is the number of days of month m of year y.
func DaysInMonth(y int64, m int) int { return daysInMonth(y, m) }

func daysInMonth(y int64, m int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// formatDate writes DuckDB's form: at least four year digits, and years
// before 1 AD as "(BC)" with the year counted from 1 BC.
func formatDate(days int64) (s string, bc bool) {
	y, m, d := civilFromDays(days)
	if y <= 0 {
		return fmt.Sprintf("%04d-%02d-%02d", 1-y, m, d), true
	}
	return fmt.Sprintf("%04d-%02d-%02d", y, m, d), false
}

// textScanner walks a date/time text.
type textScanner struct {
	s string
	i int
}

func (sc *textScanner) eof() bool { return sc.i >= len(sc.s) }

func (sc *textScanner) peek() byte {
	if sc.eof() {
		return 0
	}
	return sc.s[sc.i]
}

// digits reads a run of at least min and at most max digits.
func (sc *textScanner) digits(min, max int) (string, bool) {
	start := sc.i
	for !sc.eof() && sc.i-start < max && sc.s[sc.i] >= '0' && sc.s[sc.i] <= '9' {
		sc.i++
	}
	if sc.i-start < min {
		return "", false
	}
	return sc.s[start:sc.i], true
}

func (sc *textScanner) skipSpaces() {
	for !sc.eof() && sc.s[sc.i] == ' ' {
		sc.i++
	}
}

func (sc *textScanner) consume(c byte) bool {
	if sc.peek() == c {
		sc.i++
		return true
	}
	return false
}

// consumeBC reads an optional " (BC)" / " BC" era marker.
func (sc *textScanner) consumeBC() bool {
	save := sc.i
	sc.skipSpaces()
	rest := strings.ToUpper(sc.s[sc.i:])
	// Only "(BC)": DuckDB reads a bare "BC" as something else.
	if strings.HasPrefix(rest, "(BC)") {
		sc.i += len("(BC)")
		return true
	}
	sc.i = save
	return false
}

// scanDate reads [-]Y+-M-D and returns the astronomical year, month, day.
func (sc *textScanner) scanDate() (y int64, m, d int, err error) {
	neg := sc.consume('-')
	ys, ok := sc.digits(1, 12)
	if !ok || !sc.consume('-') {
		return 0, 0, 0, fmt.Errorf("expected YYYY-MM-DD")
	}
	ms, ok1 := sc.digits(1, 2)
	if !ok1 || !sc.consume('-') {
		return 0, 0, 0, fmt.Errorf("expected YYYY-MM-DD")
	}
	ds, ok2 := sc.digits(1, 2)
	if !ok2 {
		return 0, 0, 0, fmt.Errorf("expected YYYY-MM-DD")
	}
	y, _ = strconv.ParseInt(ys, 10, 64)
	if neg {
		y = -y
	}
	m, _ = strconv.Atoi(ms)
	d, _ = strconv.Atoi(ds)
	return y, m, d, nil
}

// resolveDate applies an era marker and checks the day exists: leap years
// are those of the astronomical year, so a BC year is converted first.
func resolveDate(y int64, m, d int, bc bool) (int64, error) {
	if bc {
		if y <= 0 {
			return 0, fmt.Errorf("a BC year must be positive")
		}
		y = 1 - y
	}
	if m < 1 || m > 12 || d < 1 || d > daysInMonth(y, m) {
		return 0, fmt.Errorf("no such day in the calendar")
	}
	return y, nil
}

// clock is a parsed time of day: whole seconds and the fraction digits as
// written (any length).
type clock struct {
	secs int64
	frac string
}

// scanClock reads H[H]:MM[:SS[.f*]]; hour 24 is allowed only as 24:00:00.
func (sc *textScanner) scanClock() (clock, error) {
	hs, ok := sc.digits(1, 2)
	if !ok || !sc.consume(':') {
		return clock{}, fmt.Errorf("expected HH:MM:SS")
	}
	mins, ok := sc.digits(2, 2)
	if !ok {
		return clock{}, fmt.Errorf("expected HH:MM:SS")
	}
	var ss, frac string
	if sc.consume(':') {
		if ss, ok = sc.digits(2, 2); !ok {
			return clock{}, fmt.Errorf("expected HH:MM:SS")
		}
		if sc.consume('.') {
			frac, _ = sc.digits(0, 1<<20)
		}
	}
	h, _ := strconv.Atoi(hs)
	mi, _ := strconv.Atoi(mins)
	s := 0
	if ss != "" {
		s, _ = strconv.Atoi(ss)
	}
	if mi > 59 || s > 59 || h > 24 || (h == 24 && (mi != 0 || s != 0 || strings.Trim(frac, "0") != "")) {
		return clock{}, fmt.Errorf("hours, minutes or seconds out of range")
	}
	return clock{secs: int64(h*3600 + mi*60 + s), frac: frac}, nil
}

// scanOffset reads Z, UTC, or ±HH[[:]MM[[:]SS]] and returns seconds east of
// UTC; ok is false when no offset is written.
func (sc *textScanner) scanOffset() (secs int32, ok bool, err error) {
	save := sc.i
	sc.skipSpaces()
	switch {
	case sc.consume('Z') || sc.consume('z'):
		return 0, true, nil
	case strings.HasPrefix(strings.ToUpper(sc.s[sc.i:]), "UTC"):
		sc.i += 3
		return 0, true, nil
	}
	c := sc.peek()
	if c != '+' && c != '-' {
		sc.i = save
		return 0, false, nil
	}
	sc.i++
	hs, okh := sc.digits(1, 2)
	if !okh {
		return 0, false, fmt.Errorf("bad UTC offset")
	}
	h, _ := strconv.Atoi(hs)
	var mi, s int
	sc.consume(':')
	if ms, okm := sc.digits(2, 2); okm {
		mi, _ = strconv.Atoi(ms)
		sc.consume(':')
		if ss, oks := sc.digits(2, 2); oks {
			s, _ = strconv.Atoi(ss)
		}
	}
	total := h*3600 + mi*60 + s
	if mi > 59 || s > 59 || total > maxTZOffset {
		return 0, false, fmt.Errorf("UTC offset out of range")
	}
	if c == '-' {
		total = -total
	}
	return int32(total), true, nil
}

// fracUnits rounds a fraction of a second, written as digits, to units of
// 10^-digits seconds (digits = 0, 3, 6 or 9); it may return 10^digits when
// rounding carries into the next second.
func fracUnits(frac string, digits int, r Rounding) (units int64, exact bool) {
	head := frac
	if len(head) > digits {
		head = frac[:digits]
	}
	head += strings.Repeat("0", digits-len(head))
	if head != "" {
		units, _ = strconv.ParseInt(head, 10, 64)
	}
	if len(frac) <= digits {
		return units, true
	}
	rest := frac[digits:]
	if strings.Trim(rest, "0") == "" {
		return units, true
	}
	// Values here are non-negative offsets within a second, so Floor
	// truncates and Ceil rounds up. nearestCast is Cast's rounding for the
	// kinds DuckDB rounds (TIMESTAMP_S, TIMESTAMP_MS); for the others Cast
	// truncates, as DuckDB does.
	switch r {
	case Ceil:
		units++
	case nearestCast:
		if rest[0] >= '5' {
			units++
		}
	}
	return units, false
}

// nearestCast is an internal rounding: to nearest, half up.
const nearestCast Rounding = 255

// unitsPerSecond of each timestamp kind, and the fraction digits it keeps.
func timestampUnit(k Kind) (perSec int64, digits int) {
	switch k {
	case KindTimestampS:
		return 1, 0
	case KindTimestampMS:
		return 1_000, 3
	case KindTimestampNS:
		return 1_000_000_000, 9
	}
	return 1_000_000, 6
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

func formatClock(secs int64, frac int64, digits int) string {
	h, m, s := secs/3600, secs/60%60, secs%60
	out := fmt.Sprintf("%02d:%02d:%02d", h, m, s)
	if frac != 0 {
		f := fmt.Sprintf("%0*d", digits, frac)
		out += "." + strings.TrimRight(f, "0")
	}
	return out
}

func formatOffset(off int32) string {
	sign := byte('+')
	if off < 0 {
		sign = '-'
		off = -off
	}
	s := fmt.Sprintf("%c%02d", sign, off/3600)
	if off%3600 != 0 {
		s += fmt.Sprintf(":%02d", off/60%60)
		if off%60 != 0 {
			s += fmt.Sprintf(":%02d", off%60)
		}
	}
	return s
}

// parseTimestampText reads a timestamp in the unit of kind k, returning its
// count of units since the epoch (UTC for TIMESTAMPTZ).
func parseTimestampText(s string, k Kind, r Rounding) (int64, bool, error) {
	t := strings.TrimSpace(s)
	switch strings.ToLower(t) {
	case "infinity", "+infinity":
		return timestampInfinity, true, nil
	case "-infinity":
		return timestampNegInfinity, true, nil
	}
	sc := &textScanner{s: t}
	y, m, d, err := sc.scanDate()
	if err != nil {
		return 0, false, fmt.Errorf("%q: %v", s, err)
	}
	bc := sc.consumeBC()
	var c clock
	if sc.peek() == 'T' || sc.peek() == 't' || sc.peek() == ' ' {
		save := sc.i
		sc.i++
		sc.skipSpaces()
		if sc.peek() >= '0' && sc.peek() <= '9' {
			if c, err = sc.scanClock(); err != nil {
				return 0, false, fmt.Errorf("%q: %v", s, err)
			}
		} else {
			sc.i = save
		}
	}
	off, hasOff, err := sc.scanOffset()
	if err != nil {
		return 0, false, fmt.Errorf("%q: %v", s, err)
	}
	if !bc {
		bc = sc.consumeBC()
	}
	if y, err = resolveDate(y, m, d, bc); err != nil {
		return 0, false, fmt.Errorf("%q: %v", s, err)
	}
	sc.skipSpaces()
	if !sc.eof() {
		return 0, false, fmt.Errorf("%q: unexpected %q", s, sc.s[sc.i:])
	}
	if k == KindTimestampTZ {
		if !hasOff {
			return 0, false, fmt.Errorf("%q: %w", s, ErrNoOffset)
		}
	} else if k != KindTimestampNS {
		// DuckDB drops an offset written on a plain TIMESTAMP, _S or _MS
		// (it applies one written on a TIMESTAMP_NS).
		off = 0
	}
	perSec, digits := timestampUnit(k)
	if r == Cast && (k == KindTimestampS || k == KindTimestampMS) {
		// DuckDB reads the text as microseconds (truncating), then rounds
		// the count since the epoch half away from zero to the unit.
		us, usExact, err := parseTimestampText(s, KindTimestamp, Cast)
		switch {
		case errors.Is(err, ErrOutOfRange):
			// Beyond what DuckDB's microseconds hold: read in the
			// type's own unit, rounding to nearest.
			r = nearestCast
			goto own
		case err != nil || us == timestampInfinity || us == timestampNegInfinity:
			return us, usExact, err
		}
		f := 1_000_000 / perSec
		q, rem := us/f, us%f
		if 2*abs64(rem) >= f {
			if us < 0 {
				q--
			} else {
				q++
			}
		}
		return q, usExact && rem == 0, nil
	}
own:
	fu, exact := fracUnits(c.frac, digits, r)
	secs := new(big.Int).SetInt64(daysFromCivil(y, m, d))
	secs.Mul(secs, big.NewInt(86400))
	secs.Add(secs, big.NewInt(c.secs-int64(off)))
	z := secs.Mul(secs, big.NewInt(perSec))
	z.Add(z, big.NewInt(fu))
	if !z.IsInt64() || z.Int64() >= timestampInfinity || z.Int64() <= timestampNegInfinity {
		return 0, false, fmt.Errorf("%s: %q: %w", kindName(k), s, ErrOutOfRange)
	}
	return z.Int64(), exact, nil
}

func formatTimestamp(v int64, k Kind) string {
	switch v {
	case timestampInfinity:
		return "infinity"
	case timestampNegInfinity:
		return "-infinity"
	}
	perSec, digits := timestampUnit(k)
	perDay := perSec * 86400
	days := floorDiv(v, perDay)
	rem := v - days*perDay
	date, bc := formatDate(days)
	if bc {
		date += " (BC)"
	}
	out := date + " " + formatClock(rem/perSec, rem%perSec, digits)
	if k == KindTimestampTZ {
		out += "+00"
	}
	return out
}

func parseDateText(s string) (int64, error) {
	t := strings.TrimSpace(s)
	switch strings.ToLower(t) {
	case "infinity", "+infinity":
		return dateInfinity, nil
	case "-infinity":
		return dateNegInfinity, nil
	}
	sc := &textScanner{s: t}
	y, m, d, err := sc.scanDate()
	if err != nil {
		return 0, fmt.Errorf("DATE: %q: %v", s, err)
	}
	if y, err = resolveDate(y, m, d, sc.consumeBC()); err != nil {
		return 0, fmt.Errorf("DATE: %q: %v", s, err)
	}
	sc.skipSpaces()
	if !sc.eof() {
		return 0, fmt.Errorf("DATE: %q: unexpected %q", s, sc.s[sc.i:])
	}
	days := daysFromCivil(y, m, d)
	if days >= dateInfinity || days <= dateNegInfinity {
		return 0, fmt.Errorf("DATE: %q: %w", s, ErrOutOfRange)
	}
	return days, nil
}

func formatDateValue(days int64) string {
	switch days {
	case dateInfinity:
		return "infinity"
	case dateNegInfinity:
		return "-infinity"
	}
	s, bc := formatDate(days)
	if bc {
		s += " (BC)"
	}
	return s
}

// parseTimeText reads a time of day in microseconds and, when present, a UTC
// offset.
func parseTimeText(s string, r Rounding) (micros int64, off int32, hasOff, exact bool, err error) {
	return parseClockText(s, r, 6)
}

// parseClockText reads a time of day in units of 10^-digits seconds.
func parseClockText(s string, r Rounding, digits int) (units int64, off int32, hasOff, exact bool, err error) {
	sc := &textScanner{s: strings.TrimSpace(s)}
	c, err := sc.scanClock()
	if err != nil {
		return 0, 0, false, false, fmt.Errorf("%q: %v", s, err)
	}
	off, hasOff, err = sc.scanOffset()
	if err != nil {
		return 0, 0, false, false, fmt.Errorf("%q: %v", s, err)
	}
	sc.skipSpaces()
	if !sc.eof() {
		return 0, 0, false, false, fmt.Errorf("%q: unexpected %q", s, sc.s[sc.i:])
	}
	perSec := int64(1)
	for range digits {
		perSec *= 10
	}
	fu, exact := fracUnits(c.frac, digits, r)
	units = c.secs*perSec + fu
	if units > 86_400*perSec {
		return 0, 0, false, false, fmt.Errorf("%q: %w", s, ErrOutOfRange)
	}
	return units, off, hasOff, exact, nil
}
