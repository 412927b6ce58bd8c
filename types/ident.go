package types

// DuckDB matches identifiers (column, table and field names) ignoring the
// case of ASCII letters only: `ÜNï` binds `Ünï`, `ÜNÏ` does not. Unicode
// case folding (strings.EqualFold, strings.ToLower) would bind names
// DuckDB keeps apart, so every name rocklake matches as DuckDB would goes
// through these.

// FoldIdent is name as DuckDB compares it: ASCII upper-case letters
// lowered, every other byte kept.
func FoldIdent(name string) string {
	for i := 0; i < len(name); i++ {
		if c := name[i]; 'A' <= c && c <= 'Z' {
			b := []byte(name)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return name
}

// SameIdent reports whether DuckDB binds one name to the other.
func SameIdent(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
