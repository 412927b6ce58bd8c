package server

import (
	"context"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/rocklake/rocklake"
	"github.com/rocklake/rocklake/internal/sqllex"
	"github.com/rocklake/rocklake/internal/writesql"
	"github.com/rocklake/rocklake/types"
)

// PostgreSQL infers a parameter's type from where it stands; drivers then
// encode their arguments as that type (pgx refuses to send an int as
// text). rocklake infers the same way for the common shapes — a parameter
// compared with, BETWEEN or IN-listed against a column of a catalog table,
// cast (`$1::INT`), or a LIMIT / OFFSET — and calls the rest text, as
// PostgreSQL does for `SELECT $1`. Whatever the type, the value reaches
// DuckDB as a literal (see literal), which DuckDB casts as it would any.
//
// The expressions are compiled on first use, not at package init: every
// rocklake process links this package, few infer a parameter.
var paramRegexps = sync.OnceValue(func() *paramREs {
	const (
		name   = `(?:[A-Za-z_][A-Za-z0-9_$]*\.)?([A-Za-z_][A-Za-z0-9_$]*)`
		compOp = `(?:=|<>|!=|<=|>=|<|>)`
	)
	return &paramREs{
		colOpParm: regexp.MustCompile(name + `\s*` + compOp + `\s*\$(\d+)\b`),
		parmOpCol: regexp.MustCompile(`\$(\d+)\s*` + compOp + `\s*` + name),
		between:   regexp.MustCompile(`(?i)` + name + `\s+(?:NOT\s+)?BETWEEN\s+\$(\d+)\s+AND\s+\$(\d+)\b`),
		inList:    regexp.MustCompile(`(?i)` + name + `\s+(?:NOT\s+)?IN\s*\(([^()]*)\)`),
		castParm:  regexp.MustCompile(`\$(\d+)\s*::\s*([A-Za-z_][A-Za-z0-9_]*)`),
		limitParm: regexp.MustCompile(`(?i)\b(?:LIMIT|OFFSET)\s+\$(\d+)\b`),
		paramRef:  regexp.MustCompile(`\$(\d+)\b`),

		byName:          regexp.MustCompile(`(?i)\bBY\s+NAME\b`),
		values:          regexp.MustCompile(`(?i)^\s*VALUES\b`),
		lonePlaceholder: regexp.MustCompile(`^\s*\$(\d+)\s*$`),
	}
})

type paramREs struct {
	colOpParm, parmOpCol, between, inList, castParm, limitParm, paramRef *regexp.Regexp
	byName, values, lonePlaceholder                                      *regexp.Regexp
}

// castOIDs are the cast targets a parameter's type is taken from.
var castOIDs = map[string]uint32{
	"int": oidInt4, "integer": oidInt4, "int4": oidInt4, "bigint": oidInt8, "int8": oidInt8, "long": oidInt8,
	"smallint": oidInt2, "int2": oidInt2, "double": oidFloat8, "float8": oidFloat8, "real": oidFloat4, "float4": oidFloat4,
	"float": oidFloat4, "numeric": oidNumeric, "decimal": oidNumeric, "text": oidText, "varchar": oidText, "string": oidText,
	"bool": oidBool, "boolean": oidBool, "date": oidDate, "timestamp": oidTimestamp, "timestamptz": oidTimestamptz,
	"uuid": oidUUID, "blob": oidBytea, "bytea": oidBytea, "json": oidJSON, "interval": oidInterval, "time": oidTime,
}

// inferParams fills the unknown (0) entries of oids from the statement
// and the columns of the catalog's tables (name → DuckDB type; a name
// two tables type differently is left out by the caller).
func inferParams(q string, oids []uint32, columns map[string]types.Type) {
	m := sqllex.Mask(q)
	re := paramRegexps()
	set := func(n string, oid uint32) {
		i, err := strconv.Atoi(n)
		if err != nil || i < 1 || i > len(oids) || oids[i-1] != 0 || oid == 0 {
			return
		}
		oids[i-1] = oid
	}
	col := func(c string) uint32 {
		t, ok := columns[c]
		if !ok {
			t, ok = columns[strings.ToLower(c)]
		}
		if !ok {
			return 0
		}
		return oidOf(types.DuckDBName(t))
	}
	for _, s := range re.castParm.FindAllStringSubmatch(m, -1) {
		set(s[1], castOIDs[strings.ToLower(s[2])])
	}
	for _, s := range re.colOpParm.FindAllStringSubmatch(m, -1) {
		set(s[2], col(s[1]))
	}
	for _, s := range re.parmOpCol.FindAllStringSubmatch(m, -1) {
		set(s[1], col(s[2]))
	}
	for _, s := range re.between.FindAllStringSubmatch(m, -1) {
		set(s[2], col(s[1]))
		set(s[3], col(s[1]))
	}
	for _, s := range re.inList.FindAllStringSubmatch(m, -1) {
		for _, p := range re.paramRef.FindAllStringSubmatch(s[2], -1) {
			set(p[1], col(s[1]))
		}
	}
	for _, s := range re.limitParm.FindAllStringSubmatch(m, -1) {
		set(s[1], oidInt8)
	}
	for i, o := range oids {
		if o == 0 {
			oids[i] = oidText
		}
	}
}

// inferParams fills in the parameter types the statement implies: a
// value of an INSERT's VALUES first (its column's type), then the shapes
// inferParams reads.
func (ss *pgSession) inferParams(q string, oids []uint32) {
	inferInsertParams(q, oids, func(table string) []rocklake.Column {
		info, err := ss.s.lake.Describe(context.Background(), table, rocklake.ReadOptions{})
		if err != nil {
			return nil
		}
		return info.Columns
	})
	if slices.Contains(oids, 0) {
		inferParams(q, oids, ss.columnTypes())
	}
}

// inferInsertParams types the parameters that stand alone as values of
// INSERT INTO t [(cols)] VALUES (...), ...: each takes the type of the
// column it goes to, as PostgreSQL infers it. A driver then sends its
// arguments as that type (pgx sends an int only as an integer type).
func inferInsertParams(q string, oids []uint32, columns func(table string) []rocklake.Column) {
	st, err := writesql.Parse(q)
	if err != nil || st.Kind != writesql.Insert || st.Query == "" {
		return
	}
	text := strings.TrimRight(q, "; \t\r\n")
	head := text[:len(text)-len(st.Query)]
	mhead := strings.TrimRight(sqllex.Mask(head), " \t\r\n")
	mquery := sqllex.Mask(st.Query)
	if paramRegexps().byName.MatchString(mhead) || !paramRegexps().values.MatchString(mquery) {
		return // BY NAME takes its columns from a query's names
	}
	var targets []*types.Type // nil: not a column, left to DuckDB's error
	byName, lower := map[string]types.Type{}, map[string]types.Type{}
	for _, c := range columns(st.Table) {
		if len(c.Path) == 1 {
			targets = append(targets, &c.Type)
			byName[c.Path[0]] = c.Type
			lower[strings.ToLower(c.Path[0])] = c.Type
		}
	}
	if len(targets) == 0 {
		return
	}
	if strings.HasSuffix(mhead, ")") {
		open := strings.LastIndexByte(mhead, '(')
		if open < 0 {
			return
		}
		targets = nil
		end := len(mhead) - 1
		for from := open + 1; from <= end; {
			i := strings.IndexByte(mhead[from:end], ',')
			if i < 0 {
				i = end - from
			}
			name := unquoteName(strings.TrimSpace(head[from : from+i]))
			t, ok := byName[name]
			if !ok {
				t, ok = lower[strings.ToLower(name)]
			}
			if ok {
				targets = append(targets, &t)
			} else {
				targets = append(targets, nil)
			}
			from += i + 1
		}
	}
	set := func(item string, col int) {
		m := paramRegexps().lonePlaceholder.FindStringSubmatch(item)
		if m == nil || col >= len(targets) || targets[col] == nil {
			return
		}
		n, err := strconv.Atoi(m[1])
		if err != nil || n < 1 || n > len(oids) || oids[n-1] != 0 {
			return
		}
		oids[n-1] = oidOf(types.DuckDBName(*targets[col]))
	}
	depth, col, from := 0, 0, 0
	for i := 0; i < len(mquery); i++ {
		switch mquery[i] {
		case '(':
			depth++
			if depth == 1 {
				col, from = 0, i+1
			}
		case ')':
			if depth == 1 {
				set(st.Query[from:i], col)
			}
			depth--
		case ',':
			if depth == 1 {
				set(st.Query[from:i], col)
				col, from = col+1, i+1
			}
		}
	}
}
