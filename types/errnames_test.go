package types_test

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"testing"

	"github.com/rocklake/rocklake/types"
	"github.com/rocklake/rocklake/types/typestest"
)

// TestErrorsNameTypesAsDuckDB: a type printed by %s or %v, and every error
// a codec gives (text that does not read, bytes of the wrong width or out
// of range, values out of range), names the type as DuckDB does, never in
// DuckLake's spelling (int64, timestamptz, float64), for every type the
// samples cover and inputs of each kind of failure.
func TestErrorsNameTypesAsDuckDB(t *testing.T) {
	var names []string
	for name := range typestest.Ascending {
		names = append(names, name)
	}
	sort.Strings(names)
	bad := []string{"", "not a value", "'", "1e999", "-1e999", "99999999999999999999999999999999999999999",
		"-99999999999999999999999999999999999999999", "2024-13-45", "25:61:61", "1.5.5", "NaN", "inf",
		"294247-01-10 04:00:54.775808", "-290308-12-21 19:59:05.224193 BC", "5877642-06-25 (BC)"}
	values := []types.Value{types.IntValue(math.MaxInt64), types.IntValue(math.MinInt64), types.IntValue(-1),
		types.FloatValue(math.NaN()), types.FloatValue(math.Inf(1))}
	checked := 0
	for _, name := range names {
		ty, err := types.ParseType(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		display, lake := types.DisplayName(ty), ty.DuckLakeName()
		for _, s := range []string{fmt.Sprint(ty), fmt.Sprintf("%s", ty), fmt.Sprintf("%v", []types.Type{ty})} {
			if !regexp.MustCompile(`(^|[^A-Za-z0-9_])` + regexp.QuoteMeta(display) + `($|[^A-Za-z0-9_])`).MatchString(s) {
				t.Errorf("%s prints as %q, want DuckDB's %q", name, s, display)
			}
		}
		if lake == display {
			continue
		}
		lakeWord := regexp.MustCompile(`(^|[^A-Za-z0-9_])` + regexp.QuoteMeta(lake) + `($|[^A-Za-z0-9_(\[])`)
		codec, ok := types.CodecFor(ty)
		if !ok {
			continue
		}
		var errs []error
		for _, s := range bad {
			_, err := codec.Parse(s)
			errs = append(errs, err)
		}
		for _, b := range [][]byte{nil, {1}, make([]byte, 3), make([]byte, 100)} {
			_, err := codec.Decode(b)
			errs = append(errs, err)
		}
		if w := codec.Width(); w > 0 {
			_, err := codec.Decode(make([]byte, w)) // all zero bytes: below the range of a biased encoding
			errs = append(errs, err)
		}
		for _, v := range values {
			_, err := codec.Encode(v)
			errs = append(errs, err)
		}
		for _, err := range errs {
			if err == nil {
				continue
			}
			checked++
			if lakeWord.MatchString(err.Error()) {
				t.Errorf("%s: error %q spells the type as DuckLake does (%s), not as DuckDB does (%s)", name, err, lake, display)
			}
		}
	}
	if checked < 100 {
		t.Fatalf("only %d errors checked: the inputs no longer fail", checked)
	}
	t.Logf("%d errors over %d types checked", checked, len(names))
}
