package results

import (
	"strconv"
	"strings"
)

// SameAnswer compares printed answers (rows separated by ';', fields by
// '|') whose decimals may print with a different number of digits, as
// they do through a view's casts: fields equal as text or as numbers.
func SameAnswer(a, b string) bool {
	if a == b {
		return true
	}
	if strings.Count(a, ";") != strings.Count(b, ";") {
		return false
	}
	split := func(s string) []string {
		return strings.FieldsFunc(s, func(r rune) bool { return r == '|' || r == ';' })
	}
	as, bs := split(a), split(b)
	if len(as) != len(bs) {
		return false
	}
	for i := range as {
		x, e1 := strconv.ParseFloat(as[i], 64)
		y, e2 := strconv.ParseFloat(bs[i], 64)
		if as[i] != bs[i] && (e1 != nil || e2 != nil || x != y) {
			return false
		}
	}
	return true
}
