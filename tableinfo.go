package rocklake

import (
	"context"

	"github.com/rocklake/rocklake/catalog"
)

// TableList is the tables at one snapshot with their sizes: what
// `rocklake table list --format json` prints and GET /v1/tables answers.
type TableList struct {
	Snapshot int64          `json:"snapshot_id"`
	Tables   []TableSummary `json:"tables"`
}

// TableSummary is one table of a TableList.
type TableSummary struct {
	Table string `json:"table"`
	// Name is Table, under the key version 1 of the JSON output first
	// gave it.
	//
	// Deprecated: use Table; the key "name" goes with version 2.
	Name        string `json:"name"`
	ColumnCount int    `json:"column_count"`
	FileCount   int64  `json:"file_count"`
	Rows        int64  `json:"rows"`
	Bytes       int64  `json:"bytes"`
}

// TableDescription is a table's definition at one snapshot as users read
// it: what `rocklake table describe --format json` prints and GET
// /v1/tables/{t} answers.
type TableDescription struct {
	Table    string              `json:"table"`
	UUID     string              `json:"uuid"`
	Snapshot int64               `json:"snapshot_id"`
	Columns  []ColumnDescription `json:"columns"`
	// PartitionedBy is the declared layout, each field as `set
	// partitioned by` takes it (day(ts), bucket(16, id)).
	PartitionedBy []string `json:"partitioned_by,omitempty"`
	// SortedBy is the declared sort key.
	SortedBy *SortKeyDescription `json:"sorted_by,omitempty"`
	// WriteOptions are the options set (an absent key is the default):
	// target_file_rows, target_file_bytes, sorted, delete_mode.
	WriteOptions map[string]any `json:"write_options,omitempty"`
}

// SortKeyDescription is a declared sort key: its columns, and the curve
// that interleaves them (zorder, hilbert), if any.
type SortKeyDescription struct {
	Columns []string `json:"columns"`
	Curve   string   `json:"curve,omitempty"`
}

// ColumnDescription is one column of a TableDescription, nested fields
// under their parents.
type ColumnDescription struct {
	ColumnID int64 `json:"column_id"`
	// ID is ColumnID, under the key version 1 of the JSON output first
	// gave it.
	//
	// Deprecated: use ColumnID; the key "id" goes with version 2.
	ID       int64  `json:"id"`
	Name     string `json:"name"`
	Type     Type   `json:"type"` // in JSON by DuckDB's name (types.DisplayName)
	Nullable bool   `json:"nullable"`
	// Partition is where a partition column's values come from ("hive":
	// each file's key=value directory); empty for other columns.
	Partition string `json:"partition,omitempty"`
	// Default is what files registered before the column was added hold
	// for it (nil: NULL).
	Default *string `json:"default,omitempty"`
	// Filters describes the column's membership filters in the snapshot's
	// files, when it has any.
	Filters  *FilterSummary      `json:"membership_filters,omitempty"`
	Children []ColumnDescription `json:"children,omitempty"`
}

// FilterSummary is how many files hold a membership filter of a column,
// and their bytes.
type FilterSummary struct {
	FileCount int   `json:"file_count"`
	Bytes     int64 `json:"bytes"`
}

// TableList lists the tables at a snapshot with their sizes.
func (l *Lake) TableList(ctx context.Context, o ReadOptions) (*TableList, error) {
	r, err := l.read(ctx, o.Snapshot)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return ReadTableList(ctx, r)
}

// Description describes a table at a snapshot as users read it (see
// Describe for the catalog's own columns).
func (l *Lake) Description(ctx context.Context, table string, o ReadOptions) (*TableDescription, error) {
	r, _, err := l.readTable(ctx, table, o)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return ReadDescription(ctx, r, table)
}

// ReadTableList is TableList from a catalog reader (the CLI's).
func ReadTableList(ctx context.Context, r *catalog.Reader) (*TableList, error) {
	tables, err := r.Tables()
	if err != nil {
		return nil, err
	}
	out := &TableList{Snapshot: r.Snapshot().ID, Tables: []TableSummary{}}
	for _, t := range tables {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		cols, err := r.Columns(t.ID)
		if err != nil {
			return nil, err
		}
		ts, err := r.TableStats(t.ID)
		if err != nil {
			return nil, err
		}
		out.Tables = append(out.Tables, TableSummary{Table: t.Name, Name: t.Name, ColumnCount: len(catalog.TopLevel(cols)),
			FileCount: ts.FileCount, Rows: ts.RecordCount, Bytes: ts.FileSizeBytes})
	}
	return out, nil
}

// ReadDescription is Description from a catalog reader (the CLI's).
func ReadDescription(ctx context.Context, r *catalog.Reader, table string) (*TableDescription, error) {
	t, err := r.Table(table)
	if err != nil {
		return nil, err
	}
	cols, err := r.Columns(t.ID)
	if err != nil {
		return nil, err
	}
	out := &TableDescription{Table: t.Name, UUID: t.UUID, Snapshot: r.Snapshot().ID, Columns: columnTree(cols)}
	for i := range out.Columns {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		fl, err := r.Filters(t.ID, out.Columns[i].ColumnID)
		if err != nil {
			return nil, err
		}
		if fl != nil {
			out.Columns[i].Filters = &FilterSummary{FileCount: fl.Count(), Bytes: fl.Bytes()}
		}
	}
	for _, f := range t.PartitionedBy {
		for _, c := range cols {
			if c.ID == f.ColumnID {
				out.PartitionedBy = append(out.PartitionedBy, catalog.FieldText(f, c.Name))
			}
		}
	}
	if k := t.SortedBy; k != nil {
		out.SortedBy = &SortKeyDescription{Columns: catalog.SortKeyNames(k, cols), Curve: k.Curve}
	}
	o := t.WriteOptions
	opts := map[string]any{}
	if o.TargetFileRows > 0 {
		opts["target_file_rows"] = o.TargetFileRows
	}
	if o.TargetFileBytes > 0 {
		opts["target_file_bytes"] = o.TargetFileBytes
	}
	if o.Unsorted {
		opts["sorted"] = false
	}
	if o.MergeOnRead {
		opts["delete_mode"] = catalog.MergeOnRead
	}
	if len(opts) > 0 {
		out.WriteOptions = opts
	}
	return out, nil
}

// columnTree nests child columns under their parents.
func columnTree(cols []catalog.Column) []ColumnDescription {
	kids := map[int64][]catalog.Column{}
	for _, c := range cols {
		if c.Parent.Known {
			kids[c.Parent.V] = append(kids[c.Parent.V], c)
		}
	}
	var build func(c catalog.Column) ColumnDescription
	build = func(c catalog.Column) ColumnDescription {
		cd := ColumnDescription{ColumnID: c.ID, ID: c.ID, Name: c.Name, Type: c.Type, Nullable: c.Nullable, Partition: c.Partition}
		if c.Default.Known {
			d := c.Default.V
			cd.Default = &d
		}
		for _, k := range kids[c.ID] {
			cd.Children = append(cd.Children, build(k))
		}
		return cd
	}
	out := []ColumnDescription{}
	for _, c := range catalog.TopLevel(cols) {
		out = append(out, build(c))
	}
	return out
}
