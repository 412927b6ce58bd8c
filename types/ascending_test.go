package types_test

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/types"
	"github.com/rocklake/rocklake/types/typestest"
)

func TestAscendingTables(t *testing.T) {
	for typeText, values := range typestest.Ascending {
		c, ok := types.CodecFor(types.MustParseType(typeText))
		if !ok {
			t.Fatalf("%s: no codec", typeText)
		}
		if !c.Ordered() {
			t.Fatalf("%s: codec not ordered", typeText)
		}
		var prev []byte
		var prevV types.Value
		for i, text := range values {
			wantEqual := strings.HasPrefix(text, "=")
			text = strings.TrimPrefix(text, "=")
			v, exact, err := c.ParseRounded(text, types.Cast)
			// Float text is the shortest that reads back to the value, not
			// its exact binary value: exactness is not expected there.
			isFloat := c.Type().Kind == types.KindFloat || c.Type().Kind == types.KindDouble
			if err != nil || (!exact && !isFloat) {
				t.Fatalf("%s: parse %q: exact=%v err=%v", typeText, text, exact, err)
			}
			enc, err := c.Encode(v)
			if err != nil {
				t.Fatalf("%s: encode %q: %v", typeText, text, err)
			}
			if w := c.Width(); w != 0 && len(enc) != w {
				t.Errorf("%s: %q encodes to %d bytes, want %d", typeText, text, len(enc), w)
			}
			if i > 0 {
				got := bytes.Compare(prev, enc)
				want := -1
				if wantEqual {
					want = 0
				}
				if got != want {
					t.Errorf("%s: %q vs %q: bytes.Compare = %d, want %d", typeText, values[i-1], text, got, want)
				}
				if c.Compare(prev, enc) != got {
					t.Errorf("%s: Compare disagrees with bytes.Compare", typeText)
				}
				if cv, err := c.CompareValues(prevV, v); err != nil || cv != got {
					t.Errorf("%s: CompareValues = %d, %v; want %d", typeText, cv, err, got)
				}
			}
			dec, err := c.Decode(enc)
			if err != nil {
				t.Fatalf("%s: decode %q: %v", typeText, text, err)
			}
			if !dec.Same(v) {
				t.Errorf("%s: decode(encode(%q)) = %#v, want %#v", typeText, text, dec, v)
			}
			formatted := c.Format(v)
			back, exact, err := c.ParseRounded(formatted, types.Cast)
			if err != nil || (!exact && !isFloat) || !back.Same(v) {
				t.Errorf("%s: parse(format(%q)) via %q = %#v exact=%v err=%v", typeText, text, formatted, back, exact, err)
			}
			if math.Signbit(v.F) && v.F == 0 && math.Signbit(dec.F) {
				t.Errorf("%s: -0.0 must decode as +0.0", typeText)
			}
			prev, prevV = enc, v
		}
	}
}
