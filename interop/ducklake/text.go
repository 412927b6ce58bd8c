package ducklake

import (
	"encoding/hex"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/rocklake/rocklake/types"
)

// noMinMax reports the types DuckLake 1.0 keeps no min/max for (the
// specification's "Type Encoding for Statistics"): their bounds stay
// behind on export.
func noMinMax(t types.Type) bool {
	switch t.Kind {
	case types.KindHugeInt, types.KindUHugeInt, types.KindTimeTZ, types.KindInterval:
		return true
	}
	return t.Kind.IsNested()
}

// formatBound writes a stored bound in DuckLake's text form (upper: a
// maximum). It is the types package's text (DuckDB's CAST to VARCHAR)
// except where the specification says otherwise: booleans are 0 or 1 and
// blobs hex.
func formatBound(t types.Type, b []byte, upper bool) (string, bool) {
	if noMinMax(t) {
		return "", false
	}
	c, ok := types.CodecFor(t)
	if !ok || !c.Ordered() {
		return "", false
	}
	v, err := c.Decode(b)
	if err != nil {
		return "", false
	}
	switch t.Kind {
	case types.KindBoolean:
		if v.Bool() {
			return "1", true
		}
		return "0", true
	case types.KindBlob:
		return strings.ToUpper(hex.EncodeToString(v.B)), true
	case types.KindVarchar, types.KindJSON:
		if s := string(v.B); !utf8.ValidString(s) {
			// A writer truncated the bound inside a character. The catalog
			// holds text: a valid prefix still bounds from below, but
			// nothing shorter bounds from above, so a maximum stays behind.
			if upper {
				return "", false
			}
			for !utf8.ValidString(s) {
				s = s[:len(s)-1]
			}
			return s, true
		}
	}
	return c.Format(v), true
}

// parseBound reads a DuckLake text bound into the stored form, rounding
// outward (r is Floor for a minimum, Ceil for a maximum). exact is false
// when the text did not name a value of the type exactly.
func parseBound(t types.Type, s string, r types.Rounding) (b []byte, exact bool, err error) {
	c, ok := types.CodecFor(t)
	if !ok || !c.Ordered() || noMinMax(t) {
		return nil, false, fmt.Errorf("type %s has no min/max statistics", t)
	}
	if t.Kind == types.KindBlob {
		// The specification's blob text is hex; anything else is read as
		// DuckDB's blob text (\xHH escapes).
		if raw, err := hex.DecodeString(s); err == nil && len(s)%2 == 0 {
			b, err := c.Encode(types.BytesValue(raw))
			return b, true, err
		}
	}
	v, exact, err := c.ParseRounded(s, r)
	if err != nil {
		return nil, false, err
	}
	b, err = c.Encode(v)
	return b, exact, err
}
