package catalog

import (
	"fmt"
	"math/big"
	"slices"
	"strings"

	"github.com/rocklake/rocklake/catalog/catalogpb"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

// Schema evolution. A table's columns change by one Alteration per
// commit; files are never rewritten, so each file keeps holding its
// columns as they were when it was registered, and readers map the
// table's columns onto it by column id (ColumnMapping):
//
//   - add column: a new id. Files registered before it do not hold it and
//     read as its default (NULL without one). The commit stores, for every
//     live file, the exact statistics of that constant, so such files
//     prune like any other (a file of the default only is all-match or
//     skip, never unknown). Files that hold a column of its name all the
//     same, left out when they were registered (DataFile.IgnoredColumns),
//     read their own values instead (Column.MappedIn, Alteration.MappedIn),
//     with the statistics of their footers, which the caller reads.
//   - rename column: the same id under a new name from this snapshot on.
//     Every file keeps its statistics; files registered before the rename
//     hold the column under the name it had when they were registered.
//   - drop column: the id's rows end; earlier snapshots still read it.
//   - type change (widening only, where DuckDB reads every old value as
//     exactly one value of the new type): a new id that replaces the old
//     one (WidenedFrom), so that statistics, which are encodings of one
//     type, never change under a snapshot that reads them. The commit
//     stores the live files' statistics converted to the new type.
//
// Every alteration recomputes the table statistics exactly and advances
// next_file_id (a drop or a type change may narrow them).

// AlterKind says what an Alteration does.
type AlterKind uint8

const (
	// AddColumn adds Column of Type, with Default.
	AddColumn AlterKind = iota + 1
	// RenameColumn renames Column to NewName.
	RenameColumn
	// DropColumn drops Column.
	DropColumn
	// SetColumnType changes Column to the wider Type.
	SetColumnType
	// SetPartitioning declares the layout optimize and compact write files
	// in: Partitioning's fields, each a column through a transform
	// ("year(ts)", "bucket(16, id)", "region"); none: no layout.
	SetPartitioning
	// SetSorting declares the sort key writes and optimize order rows by
	// before cutting them into files: Sorting's top-level columns in
	// order, or through Curve ("zorder", "hilbert"); none: no sort key.
	SetSorting
	// SetOption sets write option Option to Value (OptionTargetFileRows,
	// OptionTargetFileSize, OptionSorted, OptionDeleteMode).
	SetOption
	// ResetOption puts write option Option back to its default.
	ResetOption
)

// Alteration is one change to a table's columns or properties
// (Txn.AlterTable).
type Alteration struct {
	Kind    AlterKind
	Column  string
	NewName string
	Type    string
	// Default is, for AddColumn, the value the files registered before
	// the column hold for it, as text DuckDB casts to the type ('1.5' in
	// an INTEGER column is 2); unknown: NULL.
	Default stats.Maybe[string]
	// Partitioning is, for SetPartitioning, the layout's fields.
	Partitioning []string
	// Sorting is, for SetSorting, the sort key's columns, outermost first,
	// and Curve the curve through them ("" for a plain sort).
	Sorting []string
	Curve   string
	// Option and Value are, for SetOption, the option's name and its value
	// as text (for ResetOption, the name only).
	Option string
	Value  string
	// MappedIn is, for AddColumn, every live file that holds the column
	// though it was registered without it (add --ignore-extra-columns:
	// DataFile.IgnoredColumns) and has not had it mapped into another
	// column since (ColumnMapping.HoldersOf), as its footer gives it. Such
	// a file reads its own values, not the default, so the commit refuses
	// an AddColumn that leaves one out: the catalog cannot read footers,
	// the caller does (ingest.MapIn).
	MappedIn []MappedFile
}

// MappedFile is one file's own column for an AddColumn (Alteration.MappedIn).
type MappedFile struct {
	FileID int64
	// Name and Type are the column as the file holds it; the added type
	// must be Type or a widening of it DuckDB reads exactly (Widens).
	Name string
	Type types.Type
	// Stats and RowGroups are the file's statistics for the column from its
	// footer, in the added column's type (nil: unknown).
	Stats     *stats.Column
	RowGroups []RowGroupStats
}

// String spells the alteration as `table alter` takes it.
func (a Alteration) String() string {
	switch a.Kind {
	case AddColumn:
		s := "add column " + a.Column + " " + a.Type
		if a.Default.Known {
			s += " default '" + strings.ReplaceAll(a.Default.V, "'", "''") + "'"
		}
		return s
	case RenameColumn:
		return "rename column " + a.Column + " to " + a.NewName
	case DropColumn:
		return "drop column " + a.Column
	case SetColumnType:
		return "alter column " + a.Column + " type " + a.Type
	case SetPartitioning:
		if len(a.Partitioning) == 0 {
			return "reset partitioning"
		}
		return "set partitioned by " + strings.Join(a.Partitioning, ", ")
	case SetSorting:
		if len(a.Sorting) == 0 {
			return "reset sorted by"
		}
		names := make([]string, len(a.Sorting))
		for i, n := range a.Sorting {
			names[i] = fieldName(n)
		}
		if a.Curve != "" {
			return "set sorted by " + strings.ToLower(a.Curve) + "(" + strings.Join(names, ", ") + ")"
		}
		return "set sorted by " + strings.Join(names, ", ")
	case SetOption:
		return "set option " + strings.ToLower(a.Option) + " = " + a.Value
	case ResetOption:
		return "reset option " + strings.ToLower(a.Option)
	}
	return "unknown alteration"
}

// AlterTable changes a table's columns in this transaction's snapshot.
func (t *Txn) AlterTable(table string, a Alteration) {
	t.ops = append(t.ops, op{kind: opAlterTable, table: table, alter: a})
}

// Widens reports whether DuckDB reads every value of type from as exactly
// one value of type to (so files written with from can stay as they are),
// and if not, why.
func Widens(from, to types.Type) (bool, string) {
	signed := map[types.Kind]int{types.KindTinyInt: 1, types.KindSmallInt: 2, types.KindInteger: 3, types.KindBigInt: 4, types.KindHugeInt: 5}
	unsigned := map[types.Kind]int{types.KindUTinyInt: 1, types.KindUSmallInt: 2, types.KindUInteger: 3, types.KindUBigInt: 4, types.KindUHugeInt: 5}
	if from.DuckLakeName() == to.DuckLakeName() {
		return false, fmt.Sprintf("the column is %s already", from)
	}
	for _, rank := range []map[types.Kind]int{signed, unsigned} {
		if a, ok := rank[from.Kind]; ok {
			if b, ok := rank[to.Kind]; ok {
				if b > a {
					return true, ""
				}
				return false, fmt.Sprintf("%s is narrower than %s: values of the files registered before would not fit", to, from)
			}
		}
	}
	if from.Kind == types.KindFloat && to.Kind == types.KindDouble {
		return true, ""
	}
	if from.Kind == types.KindDouble && to.Kind == types.KindFloat {
		return false, "float is narrower than double: values of the files registered before would be rounded"
	}
	if from.Kind == types.KindDecimal && to.Kind == types.KindDecimal {
		switch {
		case to.Scale < from.Scale:
			return false, fmt.Sprintf("%s has fewer fraction digits than %s: values would be rounded", to, from)
		case int(to.Precision)-int(to.Scale) < int(from.Precision)-int(from.Scale):
			return false, fmt.Sprintf("%s has fewer integer digits than %s: values would not fit", to, from)
		}
		return true, ""
	}
	return false, fmt.Sprintf("%s to %s is not a widening that keeps every value exactly (TINYINT → SMALLINT → INTEGER → BIGINT → HUGEINT, the unsigned ones alike, FLOAT → DOUBLE, DECIMAL to more integer and fraction digits)", from, to)
}

// nextColumnID is one above every column id the table ever had: ids are
// never reused, since old snapshots and the files' mapping still name
// them.
func (w *commitWriter) nextColumnID(ts *tableState) (int64, error) {
	var top int64
	err := scanRange(w.r.kvs, key(tagColumn, ts.t.ID), func(k, _ []byte) error {
		id, err := idAt(k, 1)
		top = max(top, id)
		return err
	})
	return top + 1, err
}

func (w *commitWriter) alterTable(name string, a Alteration) error {
	ts, err := w.table(name)
	if err != nil {
		return err
	}
	if ts.created {
		return fmt.Errorf("%w: table %q is created and altered in one transaction", ErrInvalid, name)
	}
	if ts.altered || ts.inserted || ts.deleted {
		return fmt.Errorf("%w: table %q: an alteration is a snapshot of its own", ErrInvalid, name)
	}
	if err := w.seedStats(ts); err != nil {
		return err
	}
	if err := w.loadFiles(ts); err != nil {
		return err
	}
	x := &alterRun{w: w, ts: ts, a: a, s: w.next.ID, renamed: -1}
	switch a.Kind {
	case AddColumn:
		err = x.addColumn()
	case RenameColumn:
		err = x.renameColumn()
	case DropColumn:
		err = x.dropColumn()
	case SetColumnType:
		err = x.setColumnType()
	case SetPartitioning, SetSorting, SetOption, ResetOption:
		err = w.alterProperties(ts, x.find, a)
	default:
		err = fmt.Errorf("%w alteration of table %q: unknown kind %d", ErrInvalid, ts.t.Name, a.Kind)
	}
	if err != nil {
		return err
	}
	switch a.Kind {
	case DropColumn:
		if err := w.followColumn(ts, a, mustFind(x.find, a.Column), nil); err != nil {
			return err
		}
	case SetColumnType:
		if err := w.followColumn(ts, a, mustFind(x.find, a.Column), &x.newCols[0]); err != nil {
			return err
		}
	}
	ts.cols = treeOrder(x.columnsAfter())
	ts.byPath = columnPaths(ts.cols)
	ts.altered = true
	w.ddl = true
	w.changes.AlteredTables = append(w.changes.AlteredTables, ts.t.ID)
	return w.writeErr
}

// alterRun is one alteration being written: the table as the commit sees
// it, and s, the snapshot that begins the column versions it makes.
type alterRun struct {
	w       *commitWriter
	ts      *tableState
	a       Alteration
	s       int64
	newCols []Column // the column versions it begins
	renamed int64    // the column it renames, -1 for none
}

// find is the table's top-level column named n.
func (x *alterRun) find(n string) (Column, error) {
	var have []string
	for _, c := range TopLevel(x.ts.cols) {
		if types.SameIdent(c.Name, n) {
			return c, nil
		}
		have = append(have, c.Name)
	}
	return Column{}, fmt.Errorf("table %q: %w %q (columns: %s)", x.ts.t.Name, ErrNoSuchColumn, n, strings.Join(have, ", "))
}

// free says n may name a top-level column (other than except's).
func (x *alterRun) free(n string, except int64) error {
	if strings.TrimSpace(n) == "" {
		return fmt.Errorf("%w table %q: a column name cannot be empty", ErrInvalid, x.ts.t.Name)
	}
	for _, c := range TopLevel(x.ts.cols) {
		if c.ID != except && strings.EqualFold(c.Name, n) {
			return fmt.Errorf("table %q: column %q: %w", x.ts.t.Name, c.Name, ErrDuplicate)
		}
	}
	return nil
}

// addColumn adds a column (or a nested one's tree) with statistics for
// every older file: its own values where a file is mapped in, else the
// default's, per row group too.
func (x *alterRun) addColumn() error {
	w, ts, a, s := x.w, x.ts, x.a, x.s
	if err := x.free(a.Column, 0); err != nil {
		return err
	}
	built, err := buildColumns(ts.t.ID, s, ts.t.Name, []ColumnDef{{Name: a.Column, Type: a.Type}})
	if err != nil {
		return err
	}
	if name, unknown := built[0].Type.FirstUnknown(); unknown {
		return fmt.Errorf("%w table %q column %q: unknown type %q", ErrInvalid, ts.t.Name, a.Column, name)
	}
	base, err := w.nextColumnID(ts)
	if err != nil {
		return err
	}
	order := int64(0)
	for _, c := range TopLevel(ts.cols) {
		order = max(order, c.Order+1)
	}
	for i := range built {
		built[i].ID += base - 1
		if built[i].Parent.Known {
			built[i].Parent.V += base - 1
		} else {
			built[i].Order = order
		}
	}
	if a.Default.Known {
		codec, ok := types.CodecFor(built[0].Type)
		if !ok || len(built) > 1 {
			return fmt.Errorf("%w table %q column %q: a column of type %s takes no default (only types with a text form do)", ErrInvalid, ts.t.Name, a.Column, types.DisplayName(built[0].Type))
		}
		// DuckDB reads a default as a cast of its text, in the
		// session's time zone (UTC in rocklake).
		v, err := codec.ParseInUTC(a.Default.V)
		if err != nil {
			return fmt.Errorf("%w table %q column %q: default %q does not read as %s: %s", ErrInvalid, ts.t.Name, a.Column, a.Default.V, built[0].Type, types.Unprefixed(err, built[0].Type))
		}
		built[0].Default = stats.Known(codec.Format(v))
	}
	mapped, err := w.mapIn(ts, a, built)
	if err != nil {
		return err
	}
	x.newCols = built
	for _, c := range built {
		w.put(key(tagColumn, ts.t.ID, c.ID, s), columnToPB(c, nil))
	}
	// Only a scalar column gets statistics (as ingest gives only
	// leaves): a nested one stays unknown in the older files.
	if len(built) == 1 {
		if err := w.synthesize(ts, built[0], func(f DataFile) (*stats.Column, []RowGroupStats, error) {
			if mf, ok := mapped[f.ID]; ok {
				// The file's own values, as its footer bounds them.
				return mf.Stats, mf.RowGroups, nil
			}
			st, err := constantStats(built[0], f.RecordCount)
			if err != nil {
				return nil, nil, err
			}
			// Per row group too, on the file's row groups as another
			// column's rows give them: a planner that knows no row
			// group's rows can only guess where its row groups lie.
			units, err := w.rowGroupShape(ts, f)
			if err != nil {
				return nil, nil, err
			}
			for i := range units {
				rst, err := constantStats(built[0], units[i].Stats.RowCount)
				if err != nil {
					return nil, nil, err
				}
				units[i].Stats = *rst
			}
			return st, units, nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// renameColumn ends the column's version and begins one under the new
// name, same id: files keep reading it by id.
func (x *alterRun) renameColumn() error {
	w, ts, a, s := x.w, x.ts, x.a, x.s
	c, err := x.find(a.Column)
	if err != nil {
		return err
	}
	if err := x.free(a.NewName, c.ID); err != nil {
		return err
	}
	if c.Name == a.NewName {
		return fmt.Errorf("%w table %q: column %q is called so already", ErrInvalid, ts.t.Name, c.Name)
	}
	w.put(key(tagColumn, ts.t.ID, c.ID, c.Begin), columnToPB(c, &s))
	x.renamed = c.ID
	c.Name, c.Begin, c.End = a.NewName, s, stats.Maybe[int64]{}
	w.put(key(tagColumn, ts.t.ID, c.ID, s), columnToPB(c, nil))
	return nil
}

// dropColumn ends the column's versions (its subtree's too) and its
// table statistics.
func (x *alterRun) dropColumn() error {
	w, ts, a, s := x.w, x.ts, x.a, x.s
	c, err := x.find(a.Column)
	if err != nil {
		return err
	}
	if c.Partition != "" {
		return fmt.Errorf("%w table %q: column %q is a partition column: its files' directories still hold its values and later adds read them from their paths, so it stays", ErrInvalid, ts.t.Name, c.Name)
	}
	if len(TopLevel(ts.cols)) == 1 {
		return fmt.Errorf("%w table %q: column %q is its only column (drop the table instead)", ErrInvalid, ts.t.Name, c.Name)
	}
	for _, d := range subtree(ts.cols, c.ID) {
		w.put(key(tagColumn, ts.t.ID, d.ID, d.Begin), columnToPB(d, &s))
		if err := w.batch.Delete(key(tagTableColumnStats, ts.t.ID, d.ID)); err != nil {
			return err
		}
	}
	return nil
}

// setColumnType widens a column: a new id, WidenedFrom the old one, with
// every file's statistics converted to the new type.
func (x *alterRun) setColumnType() error {
	w, ts, a, s := x.w, x.ts, x.a, x.s
	c, err := x.find(a.Column)
	if err != nil {
		return err
	}
	to, err := types.ParseType(a.Type)
	if err != nil {
		return fmt.Errorf("%w table %q column %q: %v", ErrInvalid, ts.t.Name, c.Name, err)
	}
	if name, unknown := to.FirstUnknown(); unknown {
		return fmt.Errorf("%w table %q column %q: unknown type %q", ErrInvalid, ts.t.Name, c.Name, name)
	}
	if c.Partition != "" {
		return fmt.Errorf("%w table %q: column %q is a partition column: its values are the text of its files' directories, which read differently in another type", ErrInvalid, ts.t.Name, c.Name)
	}
	if ok, why := Widens(c.Type, to); !ok {
		return fmt.Errorf("%w table %q: column %q cannot change from %s to %s: %s", ErrInvalid, ts.t.Name, c.Name, c.Type, to, why)
	}
	id, err := w.nextColumnID(ts)
	if err != nil {
		return err
	}
	w.put(key(tagColumn, ts.t.ID, c.ID, c.Begin), columnToPB(c, &s))
	if err := w.batch.Delete(key(tagTableColumnStats, ts.t.ID, c.ID)); err != nil {
		return err
	}
	nc := c
	nc.ID, nc.Type, nc.Begin, nc.End, nc.WidenedFrom = id, to, s, stats.Maybe[int64]{}, stats.Known(c.ID)
	nc.MappedIn = nil // the files mapped into c: ColumnMapping.Source follows WidenedFrom to them
	if c.Default.Known {
		v, ok := convertText(c.Type, to, c.Default.V)
		if !ok {
			return fmt.Errorf("%w table %q column %q: default %q does not convert to %s", ErrInvalid, ts.t.Name, c.Name, c.Default.V, to)
		}
		nc.Default = stats.Known(v)
	}
	w.put(key(tagColumn, ts.t.ID, nc.ID, s), columnToPB(nc, nil))
	x.newCols = []Column{nc}
	old := map[int64]*stats.Column{}
	err = w.r.FileColumnStats(ts.t.ID, c.ID, func(fileID int64, st *stats.Column) error {
		cp := *st
		old[fileID] = &cp
		return nil
	})
	if err != nil {
		return err
	}
	if err := w.synthesize(ts, nc, func(f DataFile) (*stats.Column, []RowGroupStats, error) {
		st := old[f.ID]
		if st == nil {
			return nil, nil, nil
		}
		conv := convertStats(*st, c.Type, to)
		rgs, err := w.r.RowGroupStats(ts.t.ID, c.ID, f.ID)
		if err != nil {
			return nil, nil, err
		}
		for i := range rgs {
			rgs[i].Stats = convertStats(rgs[i].Stats, c.Type, to)
		}
		return &conv, rgs, nil
	}); err != nil {
		return err
	}
	return nil
}

// columnsAfter are the table's columns as of the alteration's snapshot.
func (x *alterRun) columnsAfter() []Column {
	var cols []Column
	dropped := map[int64]bool{}
	switch x.a.Kind {
	case DropColumn, SetColumnType:
		c, _ := x.find(x.a.Column)
		for _, d := range subtree(x.ts.cols, c.ID) {
			dropped[d.ID] = true
		}
	}
	for _, c := range x.ts.cols {
		if dropped[c.ID] {
			continue
		}
		if c.ID == x.renamed {
			c.Name, c.Begin = x.a.NewName, x.s
		}
		cols = append(cols, c)
	}
	return append(cols, x.newCols...)
}

// mapIn checks an AddColumn's MappedIn against the files that hold the
// column (ColumnMapping.HoldersOf) and records them on the added column
// (built[0].MappedIn); it returns them by file id. Every such file must be
// given, in a type the column's is or widens exactly: a file left out would
// read the default where it holds values, one of another type would be
// cast inexactly or fail every query that reads it.
func (w *commitWriter) mapIn(ts *tableState, a Alteration, built []Column) (map[int64]MappedFile, error) {
	m, err := w.r.readColumnMapping(ts.t.ID)
	if err != nil {
		return nil, err
	}
	live := make([]DataFile, 0, len(ts.live))
	for _, f := range ts.live {
		live = append(live, f)
	}
	slices.SortFunc(live, func(x, y DataFile) int { return int(min(max(x.ID-y.ID, -1), 1)) })
	holders := m.HoldersOf(live, a.Column)
	need := map[int64]DataFile{}
	for _, f := range holders {
		need[f.ID] = f
	}
	given := map[int64]MappedFile{}
	for _, mf := range a.MappedIn {
		f, ok := need[mf.FileID]
		if !ok {
			return nil, fmt.Errorf("%w table %q column %q: file %d is not a live file that holds the column without having it mapped in", ErrInvalid, ts.t.Name, a.Column, mf.FileID)
		}
		if _, dup := given[mf.FileID]; dup {
			return nil, fmt.Errorf("%w table %q column %q: file %s is given twice", ErrInvalid, ts.t.Name, a.Column, f.Path)
		}
		given[mf.FileID] = mf
	}
	for _, f := range holders {
		mf, ok := given[f.ID]
		if !ok {
			return nil, fmt.Errorf("%w table %q: file %s holds column %q, left out when it was registered (add --ignore-extra-columns): adding the column must read it from the file's footer (rocklake table alter and Lake.AlterTable do), not give it the default", ErrInvalid, ts.t.Name, f.Path, a.Column)
		}
		if !types.SameIdent(mf.Name, a.Column) {
			return nil, fmt.Errorf("%w table %q: file %s holds the column as %q, which is not %q", ErrInvalid, ts.t.Name, f.Path, mf.Name, a.Column)
		}
		to := built[0].Type
		if mf.Type.DuckLakeName() != to.DuckLakeName() {
			if len(built) > 1 {
				return nil, fmt.Errorf("%w table %q: cannot add column %q as %s: file %s holds it as %s (left out when it was registered), and a nested column reads a file's own values only in exactly its type; add it as %s", ErrInvalid, ts.t.Name, a.Column, types.DisplayName(to), f.Path, types.DisplayName(mf.Type), types.DisplayName(mf.Type))
			}
			if ok, why := Widens(mf.Type, to); !ok {
				return nil, fmt.Errorf("%w table %q: cannot add column %q as %s: file %s holds it as %s (left out when it was registered), and %s; add it as %s or a type that widens it", ErrInvalid, ts.t.Name, a.Column, types.DisplayName(to), f.Path, types.DisplayName(mf.Type), why, types.DisplayName(mf.Type))
			}
		}
		built[0].MappedIn = append(built[0].MappedIn, FileColumnSource{FileID: f.ID, Name: mf.Name, Type: mf.Type})
	}
	return given, nil
}

// rowGroupShape is file f's row groups (index, first row, rows) as the
// first column with row-group statistics in it records them, without
// locations; none when no column has any.
func (w *commitWriter) rowGroupShape(ts *tableState, f DataFile) ([]RowGroupStats, error) {
	for _, c := range ts.cols {
		rgs, err := w.r.RowGroupStats(ts.t.ID, c.ID, f.ID)
		if err != nil {
			return nil, err
		}
		if len(rgs) == 0 {
			continue
		}
		out := make([]RowGroupStats, len(rgs))
		for i, rg := range rgs {
			out[i] = RowGroupStats{Index: rg.Index, FirstRow: rg.FirstRow, Stats: stats.Column{RowCount: rg.Stats.RowCount}}
		}
		return out, nil
	}
	return nil, nil
}

// subtree is column id and its nested descendants.
func subtree(cols []Column, id int64) []Column {
	in := map[int64]bool{id: true}
	var out []Column
	for _, c := range cols { // parents come before their children
		if in[c.ID] || (c.Parent.Known && in[c.Parent.V]) {
			in[c.ID] = true
			out = append(out, c)
		}
	}
	return out
}

// synthesize stores statistics of column c for every live file of the
// table, as stats gives them (nil: none, which readers take as unknown):
// per-file rows, row-group rows, and the stats blocks planners read, one
// per file block, aligned with it. recompute reads them from ts.synth.
func (w *commitWriter) synthesize(ts *tableState, c Column, fn func(DataFile) (*stats.Column, []RowGroupStats, error)) error {
	got := map[int64]*stats.Column{}
	for id, f := range ts.live {
		st, rgs, err := fn(f)
		if err != nil {
			return err
		}
		if st == nil {
			continue
		}
		if err := checkStats(c, st); err != nil {
			return fmt.Errorf("file %s column %q: %w", f.Path, c.Name, err)
		}
		got[id] = st
		w.put(key(tagFileColumnStats, ts.t.ID, c.ID, id), columnStatsToPB(st))
		for _, rg := range rgs {
			if err := checkStats(c, &rg.Stats); err != nil {
				return fmt.Errorf("file %s column %q row group %d: %w", f.Path, c.Name, rg.Index, err)
			}
			w.put(rowGroupKey(ts.t.ID, c.ID, id, rg.Index), &catalogpb.RowGroupStats{
				Stats: columnStatsToPB(&rg.Stats), FirstRow: rg.FirstRow, ColumnIndex: locToPB(rg.ColumnIndex),
				OffsetIndex: locToPB(rg.OffsetIndex), BloomFilter: locToPB(rg.BloomFilter),
			})
		}
	}
	if ts.synth == nil {
		ts.synth = map[int64]map[int64]*stats.Column{}
	}
	ts.synth[c.ID] = got
	if ok, err := w.hasBlocks(ts); err != nil || !ok {
		return err
	}
	return scanRange(w.r.kvs, key(tagFileBlock, ts.t.ID), func(k, v []byte) error {
		first, err := idAt(k, 1)
		if err != nil {
			return err
		}
		fb := &catalogpb.FileBlock{}
		if err := decodeValue(v, fb); err != nil {
			return fmt.Errorf("file block %x: %w", k, err)
		}
		bv, err := viewFileBlock(fb)
		if err != nil {
			return fmt.Errorf("file block %x: %w", k, err)
		}
		sb := &statsBlock{}
		for j := range bv.n {
			sb.add(got[bv.ids.at(j)]) // nil for a file no longer live
		}
		w.putStatsBlock(ts.t.ID, c.ID, first, sb, false)
		return w.writeErr
	})
}

// constantStats are the exact statistics of rows rows all holding column
// c's default (NULL when it has none).
func constantStats(c Column, rows int64) (*stats.Column, error) {
	st := &stats.Column{RowCount: rows, NullCount: stats.Known[int64](0), ValueCount: stats.Known[int64](0), ContainsNull: stats.Known(false)}
	if rows == 0 {
		return st, nil
	}
	if !c.Default.Known {
		st.NullCount, st.ContainsNull = stats.Known(rows), stats.Known(true)
		return st, nil
	}
	codec, ok := types.CodecFor(c.Type)
	if !ok {
		return nil, fmt.Errorf("%w column %q: type %s has no text form for a default", ErrInvalid, c.Name, types.DisplayName(c.Type))
	}
	v, err := codec.Parse(c.Default.V)
	if err != nil {
		return nil, fmt.Errorf("%w column %q: default %q: %v", ErrInvalid, c.Name, c.Default.V, err)
	}
	st.ValueCount = stats.Known(rows)
	if c.Type.Kind == types.KindFloat || c.Type.Kind == types.KindDouble {
		st.ContainsNaN = stats.Known(false)
	}
	b, err := codec.Encode(v)
	if err != nil {
		// NaN has no encoding: the bounds stay unknown and the flag says
		// what every row holds.
		st.ContainsNaN = stats.Known(true)
		return st, nil
	}
	if codec.Ordered() {
		st.Min, st.Max, st.MinIsExact, st.MaxIsExact = stats.Known(b), stats.Known(b), true, true
	}
	return st, nil
}

// convertValue maps a value of type from onto type to, where Widens(from,
// to): the integer and float representations are shared, a decimal's
// unscaled value grows by the added fraction digits.
func convertValue(from, to types.Type, v types.Value) (types.Value, bool) {
	if from.Kind == types.KindDecimal && to.Kind == types.KindDecimal && to.Scale > from.Scale {
		z := v.I.Big()
		z.Mul(z, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(to.Scale-from.Scale)), nil))
		i, ok := types.Int128FromBig(z)
		if !ok {
			return v, false
		}
		v.I = i
	}
	return v, true
}

func convertText(from, to types.Type, text string) (string, bool) {
	fc, ok1 := types.CodecFor(from)
	tc, ok2 := types.CodecFor(to)
	if !ok1 || !ok2 {
		return "", false
	}
	v, err := fc.Parse(text)
	if err != nil {
		return "", false
	}
	v, ok := convertValue(from, to, v)
	if !ok {
		return "", false
	}
	return tc.Format(v), true
}

// convertStats re-encodes a unit's bounds in the wider type; a bound that
// does not convert is dropped (unknown), never kept in the old encoding.
func convertStats(st stats.Column, from, to types.Type) stats.Column {
	fc, ok1 := types.CodecFor(from)
	tc, ok2 := types.CodecFor(to)
	conv := func(b stats.Maybe[[]byte]) stats.Maybe[[]byte] {
		if !b.Known || !ok1 || !ok2 {
			return stats.Maybe[[]byte]{}
		}
		v, err := fc.Decode(b.V)
		if err != nil {
			return stats.Maybe[[]byte]{}
		}
		v, ok := convertValue(from, to, v)
		if !ok {
			return stats.Maybe[[]byte]{}
		}
		out, err := tc.Encode(v)
		if err != nil {
			return stats.Maybe[[]byte]{}
		}
		return stats.Known(out)
	}
	st.Min, st.Max = conv(st.Min), conv(st.Max)
	if !st.Min.Known {
		st.MinIsExact = false
	}
	if !st.Max.Known {
		st.MaxIsExact = false
	}
	return st
}

func mustFind(find func(string) (Column, error), name string) Column {
	c, _ := find(name)
	return c
}
