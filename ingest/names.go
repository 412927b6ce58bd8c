package ingest

import (
	"fmt"
	"strings"

	"github.com/rocklake/rocklake/types"
)

// Column names are matched as DuckDB matches identifiers
// (types.FoldIdent, types.SameIdent): ASCII letters without regard to case,
// every other character exactly. DuckDB reads a
// file column `ÜNÏ` as another column than `Ünï` (union_by_name keeps both,
// and `SELECT "Ünï"` does not bind `ÜNÏ`), so Unicode case folding
// (strings.EqualFold, strings.ToLower) would register statistics for a
// column DuckDB then reads as NULL.

// foldPath is a nested column path as a map key, each name folded.
func foldPath(path []string) string {
	parts := make([]string, len(path))
	for i, p := range path {
		parts[i] = types.FoldIdent(p)
	}
	return strings.Join(parts, "\x00")
}

// caseOnlyMismatch reports whether a and b differ only in the case of
// letters outside ASCII: the same name to Unicode, two names to DuckDB.
func caseOnlyMismatch(a, b string) bool {
	return !types.SameIdent(a, b) && strings.EqualFold(a, b)
}

// creatable refuses a file whose columns DuckDB reads as two but a table
// cannot hold as two: the catalog refuses column names that differ only in
// case, Unicode's included, while DuckDB tells `Ü` from `ü`.
func (fi *fileInfo) creatable() error {
	seen := map[string]string{}
	for _, c := range fi.meta.Columns {
		k := strings.ToLower(c.Name)
		if other, ok := seen[k]; ok && caseOnlyMismatch(other, c.Name) {
			return fmt.Errorf("%w: the file has columns %q and %q, whose names differ only in the case of non-ASCII letters: DuckDB reads them as two columns, a table cannot have both", ErrSchemaMismatch, other, c.Name)
		}
		seen[k] = c.Name
	}
	return nil
}
