package ingest

import (
	"fmt"
	"net/url"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

// hiveDefault is the directory value Hive, Spark and DuckDB write for a
// NULL partition value.
const hiveDefault = "__HIVE_DEFAULT_PARTITION__"

// hiveValue is one key=value directory of a file's path, its value
// URL-decoded as DuckDB decodes it; an unknown value is NULL.
type hiveValue struct {
	key   string
	raw   string // as the directory spells it
	value stats.Maybe[string]
}

// hivePath reads the key=value directories of a file's path, outermost
// first, as DuckDB's hive_partitioning reads them: every directory (not the
// file name) holding '=' with a non-empty key before it; the value
// URL-decoded; __HIVE_DEFAULT_PARTITION__ and NULL (any case) as the
// directory spells them (not decoded: %4EULL is the string NULL) are NULL,
// while an empty value is the empty string. A key given twice, a value
// that does not URL-decode, or a raw '=', '?' or '\' in a value is an
// error: DuckDB's reading of it is not one rocklake can promise to repeat.
func hivePath(p string) ([]hiveValue, error) {
	dir := path.Dir(strings.TrimPrefix(p, "s3://"))
	var out []hiveValue
	for _, seg := range strings.Split(dir, "/") {
		k, v, ok := strings.Cut(seg, "=")
		if !ok || k == "" {
			continue
		}
		for _, o := range out {
			if types.SameIdent(o.key, k) {
				return nil, fmt.Errorf("the path names partition key %q twice (%q and %q)", k, o.key+"="+o.raw, seg)
			}
		}
		if strings.ContainsAny(seg, "?\\") || strings.Contains(v, "=") {
			// DuckDB 1.5.6 takes a raw '\' for a separator and reads no
			// partition from a segment with a raw '?' or a second '=':
			// rocklake would register a value DuckDB does not read there.
			return nil, fmt.Errorf("partition directory %q: a raw '=', '?' or '\\' is not read as part of the value by DuckDB's hive_partitioning; spell it escaped (%%3D, %%3F, %%5C), as Hive and Spark write it", seg)
		}
		hv := hiveValue{key: k, raw: v}
		dec, err := url.PathUnescape(v)
		if err != nil {
			return nil, fmt.Errorf("partition directory %q: the value does not URL-decode: %v", seg, err)
		}
		if v != hiveDefault && !strings.EqualFold(v, "NULL") {
			hv.value = stats.Known(dec)
		}
		out = append(out, hv)
	}
	return out, nil
}

// hiveKeys is the keys of a file's partition directories, in path order.
func hiveKeys(vs []hiveValue) []string {
	keys := make([]string, len(vs))
	for i, v := range vs {
		keys[i] = v.key
	}
	return keys
}

var (
	canonicalDate      = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}$`)
	canonicalTimestamp = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?$`)
	// dateLike are values DuckDB's DATE or TIMESTAMP cast may accept in
	// forms other than the canonical ones above (2024-1-2, offsets, ISO
	// 'T', 'epoch', 'infinity'). No spelling of a date holds '%', and DuckDB
	// types the text before decoding it: 2024-01-02%2010%3A00%3A00 is text.
	dateLike = regexp.MustCompile(`(?i)^(-?[0-9]+-[0-9]+-[0-9]+[^%]*|-?infinity|epoch)$`)
	// plainInteger is what DuckDB types BIGINT without doubt: a leading
	// zero makes DuckDB keep the text (007, 00), a minus sign does not.
	plainInteger = regexp.MustCompile(`^(0|[1-9][0-9]*|-[0-9]+)$`)
	// intLike are other spellings DuckDB types BIGINT (0x10, 0b1, " 5").
	// Those it keeps as text are not here: 007, +5, 1_000, and numbers out
	// of BIGINT's range.
	intLike = regexp.MustCompile(`^(\s*-?0[xXbB][0-9a-fA-F]+\s*|\s+-?[0-9]+\s*|\s*-?[0-9]+\s+)$`)
)

// hiveType is the type DuckDB 1.5's hive_partitioning gives a key whose
// non-NULL values, as the directories spell them (DuckDB types the text
// before URL-decoding it: a%20b and 2024-01-02%2010:00:00 are VARCHAR), are
// vals (checked against DuckDB in the engine's tests): BIGINT when every
// value is a decimal integer without a leading zero (0, -7, -007; not 007,
// +5 or 1_000), DATE or TIMESTAMP when every value is one in its canonical
// spelling, else VARCHAR. DuckDB also reads integers in other spellings
// (0x10, 0b1, padded with spaces) and dates and timestamps in others
// (2024-1-2, an ISO 'T', an offset); rather than guess its reading of
// those, such a set is refused.
func hiveType(key string, vals []string) (string, error) {
	if len(vals) == 0 {
		return "VARCHAR", nil
	}
	all := func(ok func(string) bool) bool {
		return !slices.ContainsFunc(vals, func(v string) bool { return !ok(v) })
	}
	isInt := func(v string) bool {
		_, err := strconv.ParseInt(v, 10, 64)
		return err == nil && plainInteger.MatchString(v)
	}
	switch {
	case all(isInt):
		return "BIGINT", nil
	case all(func(v string) bool { return isInt(v) || intLike.MatchString(v) }):
		return "", fmt.Errorf("partition key %q: values such as %q may read in DuckDB as integers in a spelling rocklake does not follow; write them as plain decimal integers", key, vals[slices.IndexFunc(vals, func(v string) bool { return !isInt(v) })])
	}
	switch {
	case all(func(v string) bool { return canonicalDate.MatchString(v) && parses("DATE", v) }):
		return "DATE", nil
	case all(func(v string) bool { return canonicalTimestamp.MatchString(v) && parses("TIMESTAMP", v) }):
		return "TIMESTAMP", nil
	case all(dateLike.MatchString):
		return "", fmt.Errorf("partition key %q: values such as %q may read in DuckDB as dates or timestamps in a spelling rocklake does not follow; write them as YYYY-MM-DD or YYYY-MM-DD HH:MM:SS", key, vals[0])
	}
	return "VARCHAR", nil
}

func parses(typ, v string) bool {
	c, ok := types.CodecFor(types.MustParseType(typ))
	if !ok {
		return false
	}
	_, err := c.Parse(v)
	return err == nil
}

// hiveLayout says whether files are laid out in partition directories:
// every file's path has the same keys, at least one. It returns the keys.
func hiveLayout(infos []*fileInfo) ([]string, bool) {
	if len(infos) == 0 || len(infos[0].hive) == 0 {
		return nil, false
	}
	keys := hiveKeys(infos[0].hive)
	for _, fi := range infos[1:] {
		other := hiveKeys(fi.hive)
		if !slices.EqualFunc(keys, other, types.SameIdent) {
			return nil, false
		}
	}
	return keys, true
}

// hiveDefs are the partition columns a table created from infos gets: one
// per key of the first file's path, sorted by name as DuckDB orders them
// after the files' own columns, typed from every file's values. Every file
// must have the same keys.
func hiveDefs(infos []*fileInfo) ([]catalog.ColumnDef, error) {
	first := infos[0]
	for _, fi := range infos {
		if fi.hiveErr != nil {
			return nil, &FileError{Path: fi.path, Err: fmt.Errorf("%w: %v", ErrSchemaMismatch, fi.hiveErr)}
		}
	}
	if len(first.hive) == 0 {
		return nil, &FileError{Path: first.path, Err: fmt.Errorf("%w: the path has no key=value directory to read partition values from", ErrSchemaMismatch)}
	}
	keys := hiveKeys(first.hive)
	vals := map[string][]string{}
	for _, fi := range infos {
		if !slices.EqualFunc(keys, hiveKeys(fi.hive), types.SameIdent) {
			return nil, &FileError{Path: fi.path, Err: fmt.Errorf("%w: its partition directories are %s, where %s's are %s",
				ErrSchemaMismatch, describeKeys(hiveKeys(fi.hive)), first.path, describeKeys(keys))}
		}
		for _, hv := range fi.hive {
			if hv.value.Known {
				vals[types.FoldIdent(hv.key)] = append(vals[types.FoldIdent(hv.key)], hv.raw)
			}
		}
	}
	sorted := slices.Clone(keys)
	sort.Strings(sorted)
	var defs []catalog.ColumnDef
	for _, k := range sorted {
		typ, err := hiveType(k, vals[types.FoldIdent(k)])
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrSchemaMismatch, err)
		}
		defs = append(defs, catalog.ColumnDef{Name: k, Type: typ, Partition: catalog.PartitionHive})
	}
	return defs, nil
}

func describeKeys(keys []string) string {
	if len(keys) == 0 {
		return "none"
	}
	return strings.Join(keys, "=…/") + "=…"
}

// partitionColumn is a partition column's value in one file, with its
// statistics: min = max = the value, exact, or every row NULL; per row
// group alike.
func (fi *fileInfo) partitionColumn(col catalog.Column) (catalog.FileColumn, catalog.NewPartitionValue, error) {
	pv := catalog.NewPartitionValue{Column: col.Name}
	var hv *hiveValue
	for i := range fi.hive {
		if types.SameIdent(fi.hive[i].key, col.Name) {
			hv = &fi.hive[i]
		}
	}
	if hv == nil {
		return catalog.FileColumn{}, pv, fmt.Errorf("%w: the path has no %s=… directory for partition column %q", ErrSchemaMismatch, col.Name, col.Name)
	}
	var enc []byte
	if hv.value.Known {
		codec, ok := types.CodecFor(col.Type)
		if !ok {
			return catalog.FileColumn{}, pv, fmt.Errorf("%w: partition column %q: type %s has no text form", ErrSchemaMismatch, col.Name, types.DisplayName(col.Type))
		}
		v, err := codec.Parse(hv.value.V)
		if err != nil {
			return catalog.FileColumn{}, pv, fmt.Errorf("%w: partition directory %s=%s: %q does not read as %s, the table's type for %q",
				ErrSchemaMismatch, hv.key, hv.raw, hv.value.V, types.DisplayName(col.Type), col.Name)
		}
		if types.NegativeZero(col.Type, hv.value.V) {
			return catalog.FileColumn{}, pv, fmt.Errorf("%w: partition directory %s=%s: %q is %s", ErrSchemaMismatch, hv.key, hv.raw, hv.value.V, catalog.NegativeZeroPartition)
		}
		if enc, err = codec.Encode(v); err != nil {
			return catalog.FileColumn{}, pv, fmt.Errorf("%w: partition column %q: %v", ErrSchemaMismatch, col.Name, err)
		}
		pv.Value = stats.Known(codec.Format(v))
	}
	unit := func(rows int64) stats.Column {
		st := stats.Column{RowCount: rows}
		if hv.value.Known {
			st.NullCount, st.ValueCount = stats.Known[int64](0), stats.Known(rows)
			st.ContainsNull = stats.Known(false)
			if rows > 0 {
				st.Min, st.Max = stats.Known(enc), stats.Known(enc)
				st.MinIsExact, st.MaxIsExact = true, true
			}
		} else {
			st.NullCount, st.ValueCount = stats.Known(rows), stats.Known[int64](0)
			st.ContainsNull = stats.Known(rows > 0)
		}
		if col.Type.Kind == types.KindFloat || col.Type.Kind == types.KindDouble {
			st.ContainsNaN = stats.Known(false)
		}
		return st
	}
	fc := catalog.FileColumn{Path: col.Path, Stats: unit(fi.meta.Rows)}
	var first int64
	for i, g := range fi.meta.RowGroups {
		fc.RowGroups = append(fc.RowGroups, catalog.RowGroupStats{Index: int32(i), FirstRow: first, Stats: unit(g.Rows)})
		first += g.Rows
	}
	return fc, pv, nil
}

// HiveDirs are the key=value directories of a file's path as it spells
// them, outermost first (hivePath): a rewrite writes the file's rows again
// under the same spelling, which the table's types read back as the same
// values.
func HiveDirs(p string) ([]string, error) {
	vs, err := hivePath(p)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.key + "=" + v.raw
	}
	return out, nil
}
