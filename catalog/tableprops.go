package catalog

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/dustin/go-humanize"

	"github.com/rocklake/rocklake/internal/curve"
	"github.com/rocklake/rocklake/internal/sqllex"
	"github.com/rocklake/rocklake/types"
)

// Table properties: the sort key (SetSorting) and the write options
// (SetOption, ResetOption). Like the declared layout they are fields of the
// table's row, so each change ends the row and begins another at its
// snapshot, and time travel reads the properties a snapshot had. None of
// them touches a file: they say how files written from then on are laid
// out.

// The options `set option` takes.
const (
	// OptionTargetFileRows cuts written files at N rows
	// (WriteOptions.TargetFileRows).
	OptionTargetFileRows = "target_file_rows"
	// OptionTargetFileSize cuts written files at about a size in bytes,
	// given with a unit as the CLI's size flags take it (128MB, 64MiB)
	// (WriteOptions.TargetFileBytes).
	OptionTargetFileSize = "target_file_size"
	// OptionSorted, false, makes writes skip sorting
	// (WriteOptions.Unsorted).
	OptionSorted = "sorted"
	// OptionDeleteMode is how DELETE, UPDATE and MERGE take rows out:
	// merge-on-read (the default, as DuckLake: delete files of their
	// positions) or copy-on-write (the files that held them are
	// rewritten; WriteOptions.CopyOnWrite).
	OptionDeleteMode = "delete_mode"
)

// The values of OptionDeleteMode.
const (
	CopyOnWrite = "copy-on-write"
	MergeOnRead = "merge-on-read"
)

// maxTargetFileBytes bounds target_file_size where the CLI's
// --target-file-size does: beyond it a size is a typo.
const maxTargetFileBytes = 1 << 50

// ParseSortKey reads a sort key as `set sorted by` takes it: columns in
// order, `a, b`, or a curve through them, `zorder(a, b)` or
// `hilbert(a, b, c)`. A column with characters beyond letters, digits and
// _ is named in double quotes. Rows sort ascending, NULLs last, as
// optimize sorts them.
func ParseSortKey(text string) (columns []string, curveName string, err error) {
	s := strings.TrimSpace(text)
	want := func() error {
		return fmt.Errorf("%w sort key %q: want columns in order, a, b, or a curve through them, zorder(a, b) or hilbert(a, b) (a column named in double quotes where it needs them)", ErrInvalid, text)
	}
	if s == "" {
		return nil, "", fmt.Errorf("%w sort key: no columns", ErrInvalid)
	}
	// A word then a parenthesis is a curve; a parenthesis after a comma
	// or inside quotes is not.
	if open := strings.IndexByte(s, '('); open >= 0 && !strings.ContainsAny(s[:open], `,"`) {
		if !strings.HasSuffix(s, ")") {
			return nil, "", want()
		}
		k, perr := curve.Parse(strings.ToLower(strings.TrimSpace(s[:open])))
		if perr != nil {
			return nil, "", fmt.Errorf("%w sort key %q: %v", ErrInvalid, text, perr)
		}
		curveName, s = string(k), s[open+1:len(s)-1]
	}
	for _, part := range splitTopLevel(s) {
		name, ok := columnArg(part)
		// A bare name with a space in it is a direction or a missing
		// comma (a DESC, a b), which a sort key does not take.
		if !ok || part[0] != '"' && strings.ContainsAny(part, " \t") {
			return nil, "", want()
		}
		columns = append(columns, name)
	}
	return columns, curveName, nil
}

// splitTopLevel splits s at commas outside parentheses and double-quoted
// names, each piece trimmed.
func splitTopLevel(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			_, end, _ := sqllex.Quoted(s, i)
			i = end - 1
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	return append(out, strings.TrimSpace(s[start:]))
}

// SortKeyText spells a sort key as ParseSortKey reads it, with the names
// cols (a snapshot's columns) give its columns; a column not among them is
// named by its id ("#7"). "" for none.
func SortKeyText(k *SortKey, cols []Column) string {
	if k == nil {
		return ""
	}
	names := SortKeyNames(k, cols)
	for i, n := range names {
		if !strings.HasPrefix(n, "#") {
			names[i] = fieldName(n)
		}
	}
	list := strings.Join(names, ", ")
	if k.Curve != "" {
		return k.Curve + "(" + list + ")"
	}
	return list
}

// SortKeyNames are the names of a sort key's columns among cols, in key
// order; a column not among them is named by its id ("#7").
func SortKeyNames(k *SortKey, cols []Column) []string {
	if k == nil {
		return nil
	}
	out := make([]string, len(k.Columns))
	for i, id := range k.Columns {
		out[i] = fmt.Sprintf("#%d", id)
		for _, c := range TopLevel(cols) {
			if c.ID == id {
				out[i] = c.Name
				break
			}
		}
	}
	return out
}

// Settings are the options set on a table, as `set option` takes them,
// in a fixed order; none when every option is at its default.
func (o WriteOptions) Settings() []string {
	var out []string
	if o.TargetFileRows > 0 {
		out = append(out, fmt.Sprintf("%s = %d", OptionTargetFileRows, o.TargetFileRows))
	}
	if o.TargetFileBytes > 0 {
		out = append(out, fmt.Sprintf("%s = %s", OptionTargetFileSize, SizeText(o.TargetFileBytes)))
	}
	if o.Unsorted {
		out = append(out, OptionSorted+" = false")
	}
	switch {
	case o.CopyOnWrite:
		out = append(out, OptionDeleteMode+" = "+CopyOnWrite)
	case o.MergeOnRead:
		out = append(out, OptionDeleteMode+" = "+MergeOnRead)
	}
	return out
}

// SizeText spells a byte count in the largest unit that holds it exactly
// (128MB, 64MiB, 1000B), which the size parser reads back as the same
// count.
func SizeText(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"TiB", 1 << 40}, {"TB", 1e12}, {"GiB", 1 << 30}, {"GB", 1e9}, {"MiB", 1 << 20}, {"MB", 1e6}, {"KiB", 1 << 10}, {"kB", 1e3}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d%s", n/u.size, u.name)
		}
	}
	return fmt.Sprintf("%dB", n)
}

// ParseSize reads a size in bytes as the CLI's size flags take it: a
// number with a unit, 128MB, 64MiB, 1.5GB (a plain number is bytes).
func ParseSize(text string) (int64, error) {
	n, err := humanize.ParseBytes(strings.TrimSpace(text))
	if err != nil || n == 0 || n > maxTargetFileBytes {
		return 0, fmt.Errorf("%w size %q: want a size such as 128MB or 64MiB, from 1 byte to 1PiB", ErrInvalid, text)
	}
	return int64(n), nil
}

// applyOption sets one option of o from its text (reset: back to the
// default); it says what is wrong with the name or value.
func applyOption(o *WriteOptions, name, value string, reset bool) error {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case OptionTargetFileRows:
		if reset {
			o.TargetFileRows = 0
			return nil
		}
		n, err := strconv.ParseInt(strings.ReplaceAll(strings.TrimSpace(value), "_", ""), 10, 64)
		if err != nil || n < 1 {
			return fmt.Errorf("%w option %s = %q: want a number of rows, 1 or more", ErrInvalid, OptionTargetFileRows, value)
		}
		o.TargetFileRows = n
	case OptionTargetFileSize:
		if reset {
			o.TargetFileBytes = 0
			return nil
		}
		n, err := ParseSize(value)
		if err != nil {
			return fmt.Errorf("%w option %s = %q: want a size such as 128MB or 64MiB, from 1 byte to 1PiB", ErrInvalid, OptionTargetFileSize, value)
		}
		o.TargetFileBytes = n
	case OptionSorted:
		if reset {
			o.Unsorted = false
			return nil
		}
		switch strings.ToLower(strings.TrimSpace(value)) {
		case "true":
			o.Unsorted = false
		case "false":
			o.Unsorted = true
		default:
			return fmt.Errorf("%w option %s = %q: want true or false", ErrInvalid, OptionSorted, value)
		}
	case OptionDeleteMode:
		switch v := strings.ToLower(strings.Trim(strings.TrimSpace(value), "'")); {
		case reset:
			o.MergeOnRead, o.CopyOnWrite = false, false
		case v == CopyOnWrite:
			o.MergeOnRead, o.CopyOnWrite = false, true
		case v == MergeOnRead:
			o.MergeOnRead, o.CopyOnWrite = true, false
		default:
			return fmt.Errorf("%w option %s = %q: want %s or %s", ErrInvalid, OptionDeleteMode, value, CopyOnWrite, MergeOnRead)
		}
	default:
		return fmt.Errorf("%w option %q: unknown (options: %s, %s, %s, %s)", ErrInvalid, name, OptionTargetFileRows, OptionTargetFileSize, OptionSorted, OptionDeleteMode)
	}
	return nil
}

// sortable says why column c cannot be in a sort key ("" when it can):
// a key orders rows by values whose order the statistics share, so that
// the files it lays out prune.
func sortable(c Column) string {
	if c.Partition != "" {
		return "a Hive partition column's values are its files' directories, the same for every row of a file"
	}
	codec, ok := types.CodecFor(c.Type)
	if !ok || !codec.Ordered() {
		return fmt.Sprintf("a %s column has no order files can be pruned by", c.Type)
	}
	return ""
}

// sortKey resolves a SetSorting's columns against the table's top-level
// columns; nil for none (reset).
func (w *commitWriter) sortKey(ts *tableState, find func(string) (Column, error), a Alteration) (*SortKey, error) {
	if len(a.Sorting) == 0 {
		if a.Curve != "" {
			return nil, fmt.Errorf("%w table %q: a %s curve needs columns", ErrInvalid, ts.t.Name, a.Curve)
		}
		return nil, nil
	}
	k := &SortKey{}
	if a.Curve != "" {
		kind, err := curve.Parse(strings.ToLower(a.Curve))
		if err != nil {
			return nil, fmt.Errorf("%w table %q: %v", ErrInvalid, ts.t.Name, err)
		}
		switch n := len(a.Sorting); {
		case n < 2:
			return nil, fmt.Errorf("%w table %q: a %s curve runs through two or more columns (for one, set sorted by %s)", ErrInvalid, ts.t.Name, kind, a.Sorting[0])
		case n > curve.MaxDims:
			return nil, fmt.Errorf("%w table %q: a %s curve runs through at most %d columns, got %d", ErrInvalid, ts.t.Name, kind, curve.MaxDims, n)
		}
		k.Curve = string(kind)
	}
	for _, name := range a.Sorting {
		c, err := find(name)
		if err != nil {
			if nested, ok := ts.byPath[pathKey(strings.Split(name, "."))]; ok && nested.Parent.Known {
				return nil, fmt.Errorf("%w table %q: %q is a nested field: a sort key takes top-level columns", ErrInvalid, ts.t.Name, name)
			}
			return nil, err
		}
		if why := sortable(c); why != "" {
			return nil, fmt.Errorf("%w table %q: column %q cannot be in a sort key: %s", ErrInvalid, ts.t.Name, c.Name, why)
		}
		if slices.Contains(k.Columns, c.ID) {
			return nil, fmt.Errorf("%w table %q: column %q is given twice in the sort key", ErrInvalid, ts.t.Name, c.Name)
		}
		k.Columns = append(k.Columns, c.ID)
	}
	return k, nil
}

// alterProperties applies an alteration of the table's properties
// (layout, sort key, options); one that leaves them as they are is
// ErrUnchanged, so that it makes no snapshot.
func (w *commitWriter) alterProperties(ts *tableState, find func(string) (Column, error), a Alteration) error {
	switch a.Kind {
	case SetPartitioning:
		var fields []PartitionField
		for _, spec := range a.Partitioning {
			name, transform, err := ParsePartitionField(spec)
			if err != nil {
				return fmt.Errorf("table %q: %w", ts.t.Name, err)
			}
			c, err := find(name)
			if err != nil {
				return err
			}
			if why := transformFits(transform, c); why != "" {
				return fmt.Errorf("%w table %q: %s(%s): %s", ErrInvalid, ts.t.Name, transform, c.Name, why)
			}
			f := PartitionField{ColumnID: c.ID, Transform: transform}
			if slices.Contains(fields, f) {
				return fmt.Errorf("%w table %q: %s is given twice", ErrInvalid, ts.t.Name, spec)
			}
			fields = append(fields, f)
		}
		if slices.Equal(fields, ts.t.PartitionedBy) {
			if len(fields) == 0 {
				return fmt.Errorf("table %q %w: it has no layout", ts.t.Name, ErrUnchanged)
			}
			return fmt.Errorf("table %q %w: it is partitioned by %s already", ts.t.Name, ErrUnchanged, strings.Join(a.Partitioning, ", "))
		}
		w.setProperties(ts, func(t *Table) { t.PartitionedBy = fields })
	case SetSorting:
		k, err := w.sortKey(ts, find, a)
		if err != nil {
			return err
		}
		if k.Equal(ts.t.SortedBy) {
			if k == nil {
				return fmt.Errorf("table %q %w: it has no sort key", ts.t.Name, ErrUnchanged)
			}
			return fmt.Errorf("table %q %w: it is sorted by %s already", ts.t.Name, ErrUnchanged, SortKeyText(k, ts.cols))
		}
		w.setProperties(ts, func(t *Table) { t.SortedBy = k })
	case SetOption, ResetOption:
		o := ts.t.WriteOptions
		if err := applyOption(&o, a.Option, a.Value, a.Kind == ResetOption); err != nil {
			return fmt.Errorf("table %q: %w", ts.t.Name, err)
		}
		if o == ts.t.WriteOptions {
			if a.Kind == ResetOption {
				return fmt.Errorf("table %q %w: option %s is at its default already", ts.t.Name, ErrUnchanged, strings.ToLower(a.Option))
			}
			return fmt.Errorf("table %q %w: option %s is %s already", ts.t.Name, ErrUnchanged, strings.ToLower(a.Option), strings.TrimSpace(a.Value))
		}
		w.setProperties(ts, func(t *Table) { t.WriteOptions = o })
	default:
		return fmt.Errorf("%w alteration of table %q: unknown kind %d", ErrInvalid, ts.t.Name, a.Kind)
	}
	return nil
}

// followColumn keeps the layout and sort key right under a drop or a
// widening of a column: both name columns by id, so a dropped one cannot
// stay in them (the alteration is refused, naming what holds it) and a
// widened one's new id takes its place.
func (w *commitWriter) followColumn(ts *tableState, a Alteration, old Column, widened *Column) error {
	for i, f := range ts.t.PartitionedBy {
		switch {
		case a.Kind == DropColumn && f.ColumnID == old.ID:
			return fmt.Errorf("%w table %q: column %q is in the table's partitioning (%s): set the partitioning without it first", ErrInvalid, ts.t.Name, old.Name, old.Name)
		case widened != nil && f.ColumnID == old.ID:
			fields := slices.Clone(ts.t.PartitionedBy)
			fields[i].ColumnID = widened.ID
			w.setProperties(ts, func(t *Table) { t.PartitionedBy = fields })
		}
	}
	if k := ts.t.SortedBy; k != nil {
		for i, id := range k.Columns {
			if id != old.ID {
				continue
			}
			key := SortKeyText(k, ts.cols)
			if a.Kind == DropColumn {
				return fmt.Errorf("%w table %q: column %q is in the table's sort key (sorted by %s): set the sort key without it, or reset sorted by, first", ErrInvalid, ts.t.Name, old.Name, key)
			}
			if widened == nil {
				continue
			}
			if why := sortable(*widened); why != "" {
				return fmt.Errorf("%w table %q: column %q is in the table's sort key (sorted by %s) and would lose its order as %s: %s", ErrInvalid, ts.t.Name, old.Name, key, widened.Type, why)
			}
			nk := &SortKey{Columns: slices.Clone(k.Columns), Curve: k.Curve}
			nk.Columns[i] = widened.ID
			w.setProperties(ts, func(t *Table) { t.SortedBy = nk })
		}
	}
	return nil
}

// setProperties begins a new row of the table with change applied: the
// row it ends keeps what earlier snapshots read. A second change in the
// same snapshot rewrites the row this one began.
func (w *commitWriter) setProperties(ts *tableState, change func(*Table)) {
	s := w.next.ID
	if ts.t.Begin != s {
		w.put(key(tagTable, ts.t.ID, ts.t.Begin), tableToPB(ts.t, &s))
	}
	ts.t.Begin = s
	change(&ts.t)
	w.put(key(tagTable, ts.t.ID, s), tableToPB(ts.t, nil))
}

// transformFits says why a transform cannot apply to a column ("" when
// it can).
func transformFits(transform string, c Column) string {
	k := c.Type.Kind
	timestamp := k == types.KindTimestamp || k == types.KindTimestampS || k == types.KindTimestampMS || k == types.KindTimestampNS || k == types.KindTimestampTZ
	switch {
	case c.Partition != "":
		return "a Hive partition column is laid out by its files' directories already"
	case k == types.KindStruct || k == types.KindList || k == types.KindArray || k == types.KindMap || k == types.KindVariant || k == types.KindGeometry || k == types.KindUnknown:
		return fmt.Sprintf("a %s column cannot partition files", c.Type)
	case (transform == "year" || transform == "month" || transform == "day") && !timestamp && k != types.KindDate:
		return fmt.Sprintf("%s applies to dates and timestamps, not %s", transform, c.Type)
	case transform == "hour" && !timestamp:
		return fmt.Sprintf("hour applies to timestamps, not %s", c.Type)
	}
	return ""
}
