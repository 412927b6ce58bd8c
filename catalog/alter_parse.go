package catalog

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rocklake/rocklake/internal/sqllex"
	"github.com/rocklake/rocklake/stats"
)

// ParseAlteration reads an alteration as `table alter` takes it, one word
// per argument (a type may span words, `decimal(10, 2)`):
//
//	add [column] NAME TYPE [DEFAULT value]
//	rename [column] NAME to NEW_NAME
//	drop [column] NAME
//	alter [column] NAME [set data] type TYPE
//	set partitioned by FIELD, ...   (col, year(col), month(col), day(col), hour(col), bucket(N, col))
//	reset partitioning              (or reset partitioned by)
//	set sorted by COL, ...          (or zorder(COL, ...), hilbert(COL, ...))
//	reset sorted by                 (or reset sorting)
//	set option NAME = VALUE         (target_file_rows = N, target_file_size = 128MB, sorted = true|false)
//	reset option NAME
//
// Keywords are case-insensitive. A default is SQL text: a quoted string
// ('it”s'), a number, true / false, or NULL (the same as none).
func ParseAlteration(words []string) (Alteration, error) {
	usage := fmt.Errorf("%w alteration %q: want `add column NAME TYPE [DEFAULT v]`, `rename column A to B`, `drop column C`, `alter column C type T`, `set partitioned by year(ts), bucket(16, id), …`, `reset partitioning`, `set sorted by a, b` (or zorder(a, b), hilbert(a, b)), `reset sorted by`, `set option NAME = VALUE` or `reset option NAME`", ErrInvalid, strings.Join(words, " "))
	is := func(i int, kw string) bool { return i < len(words) && strings.EqualFold(words[i], kw) }
	if len(words) == 0 {
		return Alteration{}, usage
	}
	i := 1
	if is(i, "column") {
		i++
	}
	rest := words[min(i, len(words)):]
	switch strings.ToLower(words[0]) {
	case "reset":
		switch {
		case len(words) == 2 && is(1, "partitioning"), len(words) == 3 && is(1, "partitioned") && is(2, "by"):
			return Alteration{Kind: SetPartitioning}, nil
		case len(words) == 2 && is(1, "sorting"), len(words) == 3 && is(1, "sorted") && is(2, "by"):
			return Alteration{Kind: SetSorting}, nil
		case len(words) == 3 && is(1, "option"):
			if err := applyOption(&WriteOptions{}, words[2], "", true); err != nil {
				return Alteration{}, err
			}
			return Alteration{Kind: ResetOption, Option: strings.ToLower(words[2])}, nil
		}
		return Alteration{}, usage
	case "set":
		switch {
		case len(words) >= 4 && is(1, "partitioned") && is(2, "by"):
			fields := splitTopLevel(strings.Join(words[3:], " "))
			for _, f := range fields {
				if f == "" {
					return Alteration{}, usage
				}
			}
			return Alteration{Kind: SetPartitioning, Partitioning: fields}, nil
		case len(words) >= 4 && is(1, "sorted") && is(2, "by"):
			cols, kind, err := ParseSortKey(strings.Join(words[3:], " "))
			if err != nil {
				return Alteration{}, err
			}
			return Alteration{Kind: SetSorting, Sorting: cols, Curve: kind}, nil
		case len(words) >= 3 && is(1, "option"):
			// NAME = VALUE, in one word or several; the = may be left out.
			text := strings.TrimSpace(strings.Join(words[2:], " "))
			name, value, found := strings.Cut(text, "=")
			if !found {
				name, value, _ = strings.Cut(text, " ")
			}
			name, value = strings.TrimSpace(name), strings.TrimSpace(value)
			if name == "" || value == "" {
				return Alteration{}, fmt.Errorf("%w alteration %q: want `set option NAME = VALUE` (%s = N, %s = 128MB, %s = true|false, %s = %s|%s)", ErrInvalid, strings.Join(words, " "), OptionTargetFileRows, OptionTargetFileSize, OptionSorted, OptionDeleteMode, CopyOnWrite, MergeOnRead)
			}
			if err := applyOption(&WriteOptions{}, name, value, false); err != nil {
				return Alteration{}, err
			}
			return Alteration{Kind: SetOption, Option: strings.ToLower(name), Value: value}, nil
		}
		return Alteration{}, usage
	case "add":
		if len(rest) < 2 {
			return Alteration{}, usage
		}
		a := Alteration{Kind: AddColumn, Column: rest[0]}
		var typ []string
		j := 1
		for ; j < len(rest) && !strings.EqualFold(rest[j], "default"); j++ {
			typ = append(typ, rest[j])
		}
		a.Type = strings.Join(typ, " ")
		if a.Type == "" {
			return Alteration{}, usage
		}
		if j < len(rest) {
			v := strings.TrimSpace(strings.Join(rest[j+1:], " "))
			switch {
			case v == "":
				return Alteration{}, fmt.Errorf("%w alteration: DEFAULT without a value", ErrInvalid)
			case strings.EqualFold(v, "null"):
			case len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'':
				a.Default = stats.Known(strings.ReplaceAll(v[1:len(v)-1], "''", "'"))
			default:
				a.Default = stats.Known(v)
			}
		}
		return a, nil
	case "rename":
		if len(rest) != 3 || !strings.EqualFold(rest[1], "to") {
			return Alteration{}, usage
		}
		return Alteration{Kind: RenameColumn, Column: rest[0], NewName: rest[2]}, nil
	case "drop":
		if len(rest) != 1 {
			return Alteration{}, usage
		}
		return Alteration{Kind: DropColumn, Column: rest[0]}, nil
	case "alter":
		if len(rest) < 3 {
			return Alteration{}, usage
		}
		j := 1
		if strings.EqualFold(rest[j], "set") && j+1 < len(rest) && strings.EqualFold(rest[j+1], "data") {
			j += 2
		}
		if j >= len(rest) || !strings.EqualFold(rest[j], "type") || j+1 >= len(rest) {
			return Alteration{}, usage
		}
		return Alteration{Kind: SetColumnType, Column: rest[0], Type: strings.Join(rest[j+1:], " ")}, nil
	}
	return Alteration{}, usage
}

// ParsePartitionField reads one field of a declared layout: `col`
// (identity), `identity(col)`, `year(col)`, `month(col)`, `day(col)`,
// `hour(col)` or `bucket(N, col)`. The transform comes back as stored:
// identity, year, month, day, hour or bucket(N).
func ParsePartitionField(spec string) (column, transform string, err error) {
	s := strings.TrimSpace(spec)
	want := func() error {
		return fmt.Errorf("%w partition field %q: want col, year(col), month(col), day(col), hour(col), identity(col) or bucket(N, col) (a column named in double quotes where it needs them)", ErrInvalid, spec)
	}
	if s == "" {
		return "", "", fmt.Errorf("%w partition field: empty", ErrInvalid)
	}
	if s[0] == '"' {
		// A quoted name alone: identity, whatever characters it holds.
		if name, ok := columnArg(s); ok {
			return name, "identity", nil
		}
		return "", "", want()
	}
	open := strings.IndexByte(s, '(')
	if open < 0 {
		return s, "identity", nil
	}
	if !strings.HasSuffix(s, ")") {
		return "", "", want()
	}
	fn := strings.ToLower(strings.TrimSpace(s[:open]))
	inner := s[open+1 : len(s)-1]
	switch fn {
	case "identity", "year", "month", "day", "hour":
		name, ok := columnArg(inner)
		if !ok {
			return "", "", fmt.Errorf("%w partition field %q: %s takes one column", ErrInvalid, spec, fn)
		}
		return name, fn, nil
	case "bucket":
		count, col, found := strings.Cut(inner, ",")
		name, ok := columnArg(col)
		if !found || !ok {
			return "", "", fmt.Errorf("%w partition field %q: bucket takes a count and a column, bucket(16, id)", ErrInvalid, spec)
		}
		n, err := strconv.Atoi(strings.TrimSpace(count))
		if err != nil || n < 1 || n > 1<<16 {
			return "", "", fmt.Errorf("%w partition field %q: the bucket count must be an integer from 1 to 65536", ErrInvalid, spec)
		}
		return name, fmt.Sprintf("bucket(%d)", n), nil
	}
	return "", "", fmt.Errorf("%w partition field %q: unknown transform %q (identity, year, month, day, hour, bucket)", ErrInvalid, spec, fn)
}

// columnArg reads a transform's column: a name as written, or in double
// quotes (a doubled quote inside standing for one), as DuckDB reads it.
func columnArg(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", false
	}
	if s[0] != '"' {
		return s, !strings.ContainsAny(s, ",()\"")
	}
	name, end, ok := sqllex.Quoted(s, 0)
	return name, ok && end == len(s) && name != ""
}

// FieldText spells a layout field as ParsePartitionField reads it, for
// column name.
func FieldText(f PartitionField, name string) string {
	return fieldText(f, fieldName(name))
}

// fieldName is a column's name as a layout field spells it: bare when it
// is a plain identifier, else in double quotes.
func fieldName(name string) string {
	for i := 0; i < len(name); i++ {
		if c := name[i]; !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9') {
			return sqllex.QuoteName(name)
		}
	}
	if name == "" {
		return sqllex.QuoteName(name)
	}
	return name
}

// fieldText is FieldText with the column already spelled.
func fieldText(f PartitionField, name string) string {
	switch {
	case f.Transform == "identity":
		return name
	case strings.HasPrefix(f.Transform, "bucket(") && strings.HasSuffix(f.Transform, ")"):
		return strings.TrimSuffix(f.Transform, ")") + ", " + name + ")"
	}
	return f.Transform + "(" + name + ")"
}
