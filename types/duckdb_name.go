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
		return "ENUM" + strings.TrimPrefix(t.DuckLakeName(), "enum")
	}
	return strings.ToUpper(t.DuckLakeName())
}

// DisplayName is how a type is shown to a user (CLI text and JSON, the
// HTTP API, the server, errors): DuckDB's name as DuckDB's own DESCRIBE
// and typeof() print it (BIGINT, DECIMAL(18,3), TIMESTAMP WITH TIME ZONE,
// VARCHAR[]), so the types a user reads are the ones they write in SQL.
// String stays the DuckLake spelling the catalog stores and DuckLake
// interchange needs (int64, timestamptz). A type DuckDB has no spelling
// for here (a nested column whose fields are columns of their own, or
// Unknown) shows its kind upper-cased (STRUCT, LIST, MAP, UNKNOWN).
func DisplayName(t Type) string {
	switch t.Kind {
	case KindTimestampTZ:
		return "TIMESTAMP WITH TIME ZONE"
	case KindTimeTZ:
		return "TIME WITH TIME ZONE"
	case KindList, KindArray:
		if t.Elem != nil && DuckDBName(t) != "" {
			if t.Kind == KindArray {
				return fmt.Sprintf("%s[%d]", DisplayName(*t.Elem), t.Size)
			}
			return DisplayName(*t.Elem) + "[]"
		}
	case KindStruct:
		if t.Fields != nil && DuckDBName(t) != "" {
			fs := make([]string, len(t.Fields))
			for i, f := range t.Fields {
				fs[i] = displayField(f.Name) + " " + DisplayName(f.Type)
			}
			return "STRUCT(" + strings.Join(fs, ", ") + ")"
		}
	case KindMap:
		if t.Key != nil && t.Value != nil && DuckDBName(t) != "" {
			return "MAP(" + DisplayName(*t.Key) + ", " + DisplayName(*t.Value) + ")"
		}
	}
	if n := DuckDBName(t); n != "" {
		return n
	}
	return strings.ToUpper(t.DuckLakeName())
}

// displayField quotes a struct field's name where DuckDB's typeof() does:
// unless it is lower-case letters, digits and underscores (a reserved word
// so spelled shows unquoted here, quoted by DuckDB).
func displayField(name string) string {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c == '_' || i > 0 && c >= '0' && c <= '9') {
			return sqllex.QuoteName(name)
		}
	}
	if name == "" {
		return sqllex.QuoteName(name)
	}
	return name
}

// kindName is a kind as errors name it: DuckDB's name of its type.
func kindName(k Kind) string { return DisplayName(Type{Kind: k}) }

// Unprefixed is a codec's error without the type name it begins with, for
// a message that has named the type already.
func Unprefixed(err error, t Type) string {
	return strings.TrimPrefix(err.Error(), t.String()+": ")
}
