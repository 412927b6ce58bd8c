package types

import (
	"fmt"
	"github.com/rocklake/rocklake/internal/sqllex"
	"strings"
)

// DuckDBName spells a type as DuckDB's parser takes it (in a CAST or a
// column definition): BIGINT for int64, DECIMAL(p,s), VARCHAR[],
// STRUCT("a" INTEGER), ENUM('x', 'y'). It is "" for a type DuckDB has no
// spelling for here (Unknown, or a nested type holding one).
func DuckDBName(t Type) string {
	switch t.Kind {
	case KindUnknown:
		return ""
	case KindBoolean:
		return "BOOLEAN"
	case KindTinyInt:
		return "TINYINT"
	case KindSmallInt:
		return "SMALLINT"
	case KindInteger:
		return "INTEGER"
	case KindBigInt:
		return "BIGINT"
	case KindHugeInt:
		return "HUGEINT"
	case KindUTinyInt:
		return "UTINYINT"
	case KindUSmallInt:
		return "USMALLINT"
	case KindUInteger:
		return "UINTEGER"
	case KindUBigInt:
		return "UBIGINT"
	case KindUHugeInt:
		return "UHUGEINT"
	case KindFloat:
		return "FLOAT"
	case KindDouble:
		return "DOUBLE"
	case KindDecimal:
		return fmt.Sprintf("DECIMAL(%d,%d)", t.Precision, t.Scale)
	case KindList:
		if t.Elem == nil {
			return ""
		}
		if e := DuckDBName(*t.Elem); e != "" {
			return e + "[]"
		}
		return ""
	case KindArray:
		if t.Elem == nil {
			return ""
		}
		if e := DuckDBName(*t.Elem); e != "" {
			return fmt.Sprintf("%s[%d]", e, t.Size)
		}
		return ""
	case KindStruct:
		if t.Fields == nil {
			return ""
		}
		var fs []string
		for _, f := range t.Fields {
			ft := DuckDBName(f.Type)
			if ft == "" {
				return ""
			}
			fs = append(fs, sqllex.QuoteName(f.Name)+" "+ft)
		}
		return "STRUCT(" + strings.Join(fs, ", ") + ")"
	case KindMap:
		if t.Key == nil {
			return ""
		}
		k, v := DuckDBName(*t.Key), DuckDBName(*t.Value)
		if k == "" || v == "" {
			return ""
		}
		return "MAP(" + k + ", " + v + ")"
	case KindEnum:
		if t.Labels == nil {
			return ""
		}
		// The labels keep their case: only the keyword is upper-cased.
		return "ENUM" + strings.TrimPrefix(t.String(), "enum")
	}
	return strings.ToUpper(t.String())
}
