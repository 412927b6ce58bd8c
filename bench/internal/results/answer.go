package results

import (
	"database/sql"
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

// Answer prints rows as the benches compare them: every value in DuckDB's
// text form (NULL as nothing), each field ending in '|', each row in ';'.
func Answer(rows [][]*string) string {
	var b strings.Builder
	for _, row := range rows {
		for _, v := range row {
			if v != nil {
				b.WriteString(*v)
			}
			b.WriteByte('|')
		}
		b.WriteByte(';')
	}
	return b.String()
}

// DuckDBAnswer runs q on a DuckDB handle and prints its rows as Answer
// does. DuckDB casts every value to text, not Go: a DECIMAL prints with
// its scale, as rocklake returns it.
func DuckDBAnswer(db *sql.DB, q string) (string, error) {
	r, err := db.Query("SELECT COLUMNS(*)::VARCHAR FROM (" + q + ")")
	if err != nil {
		return "", err
	}
	defer r.Close()
	cols, err := r.Columns()
	if err != nil {
		return "", err
	}
	var rows [][]*string
	for r.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := r.Scan(ptrs...); err != nil {
			return "", err
		}
		row := make([]*string, len(cols))
		for i, v := range vals {
			if v.Valid {
				row[i] = &v.String
			}
		}
		rows = append(rows, row)
	}
	return Answer(rows), r.Err()
}
