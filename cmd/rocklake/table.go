package main

import (
	"fmt"
	"strings"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/types"
)

func newTableCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "table",
		Short: "Create, list, describe, alter, rename and drop tables",
	}
	cmd.AddCommand(newTableCreateCmd(g), newTableListCmd(g), newTableDescribeCmd(g), newTableAlterCmd(g), newTableRenameCmd(g), newTableDropCmd(g))
	return cmd
}

func newTableCreateCmd(g *globals) *cobra.Command {
	var partitionBy []string
	cmd := &cobra.Command{
		Use:   "create NAME 'col TYPE, ...'",
		Short: "Create a table from a column list",
		Long: `create makes an empty table with the columns given.

--partition-by names columns whose values come from each file's Hive-style
key=value directories rather than from the file (region=eu/day=2024-01-02/),
in the types declared here, as DuckDB reads them with hive_types; add then
reads every file's values from its path and refuses a file without them.`,
		Example: `  rocklake table create events 'ts TIMESTAMPTZ, user_id BIGINT, kind VARCHAR, value DOUBLE'
  rocklake table create t 'id INT, tags STRUCT(a INT, b VARCHAR[]), price DECIMAL(10,2)'
  rocklake table create sales 'amount BIGINT, region VARCHAR, day DATE' --partition-by region,day`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			defs, err := catalog.ParseColumnDefs(args[1])
			if err != nil {
				return err
			}
			if err := catalog.PartitionBy(defs, partitionBy); err != nil {
				return err
			}
			// A type name rocklake does not know is kept as Unknown when it
			// comes from a file or a DuckLake catalog; typed by a user, it
			// is a mistake.
			for _, d := range defs {
				ty, err := types.ParseType(d.Type)
				if err != nil {
					return fmt.Errorf("column %s: %w", d.Name, err)
				}
				if name, unknown := ty.FirstUnknown(); unknown {
					return fmt.Errorf("column %s: unknown type %q; known types: %s (with parameters: decimal(p,s), T[], T[n], struct(...), map(K, V), enum(...))",
						d.Name, name, strings.Join(types.TypeNames(), ", "))
				}
			}
			snap, err := commitOne(g, func(tx *catalog.Txn) { tx.CreateTable(args[0], defs) })
			if err != nil {
				return err
			}
			if g.format == formatJSON {
				return writeJSON(cmd.OutOrStdout(), map[string]any{"table": args[0], "column_count": len(defs), "snapshot_id": snap.ID})
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "created table %s (%s) at snapshot %d\n", args[0], plural(len(defs), "column", "columns"), snap.ID)
			return err
		},
	}
	cmd.Flags().StringSliceVar(&partitionBy, "partition-by", nil, "columns whose values come from the files' key=value directories (comma-separated)")
	return cmd
}

func newTableDropCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "drop NAME",
		Short: "Drop a table (time travel still reads it at older snapshots)",
		Long: `drop removes a table from the next snapshot on. Older snapshots still hold it, so
queries and plans with --snapshot before the drop read it as it was. Its files stay on
disk until expire forgets every snapshot that holds them and cleanup deletes the ones
rocklake wrote itself (files registered in place belong to the user and are never
deleted).`,
		Example: `  rocklake table drop events`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			snap, err := commitOne(g, func(tx *catalog.Txn) { tx.DropTable(args[0]) })
			if err != nil {
				return err
			}
			if g.format == formatJSON {
				return writeJSON(cmd.OutOrStdout(), map[string]any{"table": args[0], "dropped": true, "snapshot_id": snap.ID})
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "dropped table %s at snapshot %d (earlier snapshots still read it)\n", args[0], snap.ID)
			return err
		},
	}
}

func newTableRenameCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "rename NAME NEW_NAME",
		Short: "Rename a table (time travel still finds it under the old name)",
		Long: `rename gives a table a new name from the next snapshot on. Its files, statistics
and membership filters stay as they are; queries with --snapshot before the rename
still name it by the old name.`,
		Example: `  rocklake table rename events events_v1`,
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			snap, err := commitOne(g, func(tx *catalog.Txn) { tx.RenameTable(args[0], args[1]) })
			if err != nil {
				return err
			}
			if g.format == formatJSON {
				return writeJSON(cmd.OutOrStdout(), map[string]any{"table": args[1], "renamed_from": args[0], "snapshot_id": snap.ID})
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "renamed table %s to %s at snapshot %d (earlier snapshots still name it %s)\n", args[0], args[1], snap.ID, args[0])
			return err
		},
	}
}

type tableSummary struct {
	Name          string `json:"name"`
	Columns       int    `json:"column_count"`
	Files         int64  `json:"file_count"`
	Records       int64  `json:"rows"`
	FileSizeBytes int64  `json:"bytes"`
}

func newTableListCmd(g *globals) *cobra.Command {
	var snapshot int64
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the tables",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, done, err := openReader(g, snapshot)
			if err != nil {
				return err
			}
			defer done()
			tables, err := r.Tables()
			if err != nil {
				return err
			}
			out := []tableSummary{}
			for _, t := range tables {
				cols, err := r.Columns(t.ID)
				if err != nil {
					return err
				}
				ts, err := r.TableStats(t.ID)
				if err != nil {
					return err
				}
				out = append(out, tableSummary{Name: t.Name, Columns: len(catalog.TopLevel(cols)), Files: ts.FileCount,
					Records: ts.RecordCount, FileSizeBytes: ts.FileSizeBytes})
			}
			if g.format == formatJSON {
				return writeJSON(cmd.OutOrStdout(), map[string]any{"snapshot_id": r.Snapshot().ID, "tables": out})
			}
			w := newTable(cmd.OutOrStdout())
			fmt.Fprintln(w, "TABLE\tCOLUMNS\tFILES\tROWS\tBYTES")
			for _, t := range out {
				fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%d\n", t.Name, t.Columns, t.Files, t.Records, t.FileSizeBytes)
			}
			return w.Flush()
		},
	}
	addSnapshotFlag(cmd, &snapshot)
	return cmd
}

type columnInfo struct {
	ID       int64  `json:"id"`
	Name     string `json:"name"`
	Type     string `json:"type"`
	Nullable bool   `json:"nullable"`
	// Partition is where a partition column's values come from ("hive":
	// each file's key=value directory); absent for other columns.
	Partition string `json:"partition,omitempty"`
	// Default is what files registered before the column was added hold
	// for it (absent: NULL).
	Default *string `json:"default,omitempty"`
	// Filters describes the column's membership filters in the snapshot's
	// files, when it has any.
	Filters  *filterInfo  `json:"membership_filters,omitempty"`
	Children []columnInfo `json:"children,omitempty"`
}

type filterInfo struct {
	Files int   `json:"file_count"`
	Bytes int64 `json:"bytes"`
}

func newTableDescribeCmd(g *globals) *cobra.Command {
	var snapshot int64
	cmd := &cobra.Command{
		Use:   "describe NAME",
		Short: "Show a table's columns, nested fields included",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, done, err := openReader(g, snapshot)
			if err != nil {
				return err
			}
			defer done()
			t, err := r.Table(args[0])
			if err != nil {
				return err
			}
			cols, err := r.Columns(t.ID)
			if err != nil {
				return err
			}
			tree := columnTree(cols)
			for i := range tree {
				fl, err := r.Filters(t.ID, tree[i].ID)
				if err != nil {
					return err
				}
				if fl != nil {
					tree[i].Filters = &filterInfo{Files: fl.Count(), Bytes: fl.Bytes()}
				}
			}
			var layout []string
			for _, f := range t.PartitionedBy {
				for _, c := range cols {
					if c.ID == f.ColumnID {
						layout = append(layout, catalog.FieldText(f, c.Name))
					}
				}
			}
			if g.format == formatJSON {
				out := map[string]any{"table": t.Name, "uuid": t.UUID, "snapshot_id": r.Snapshot().ID, "columns": tree}
				if len(layout) > 0 {
					out["partitioned_by"] = layout
				}
				if k := t.SortedBy; k != nil {
					key := map[string]any{"columns": catalog.SortKeyNames(k, cols)}
					if k.Curve != "" {
						key["curve"] = k.Curve
					}
					out["sorted_by"] = key
				}
				if o := writeOptionsJSON(t.WriteOptions); len(o) > 0 {
					out["write_options"] = o
				}
				return writeJSON(cmd.OutOrStdout(), out)
			}
			w := newTable(cmd.OutOrStdout())
			fmt.Fprintf(w, "table %s (uuid %s) at snapshot %d\n", t.Name, t.UUID, r.Snapshot().ID)
			if len(layout) > 0 {
				fmt.Fprintf(w, "partitioned by %s (the files optimize and compact write)\n", strings.Join(layout, ", "))
			}
			if t.SortedBy != nil {
				fmt.Fprintf(w, "sorted by %s (the row order optimize writes without --sort-by)\n", catalog.SortKeyText(t.SortedBy, cols))
			}
			if set := t.WriteOptions.Settings(); len(set) > 0 {
				fmt.Fprintf(w, "options %s\n", strings.Join(set, ", "))
			}
			fmt.Fprintln(w, "ID\tCOLUMN\tTYPE\tNULLABLE\tMEMBERSHIP FILTERS")
			var walk func([]columnInfo, int)
			walk = func(cs []columnInfo, depth int) {
				for _, ci := range cs {
					filters := "-"
					if f := ci.Filters; f != nil {
						filters = fmt.Sprintf("%s, %s", plural(f.Files, "file", "files"), humanize.IBytes(uint64(f.Bytes)))
					}
					typ := typeText(ci.Type, ci.Partition)
					if ci.Default != nil {
						typ += " default '" + strings.ReplaceAll(*ci.Default, "'", "''") + "'"
					}
					fmt.Fprintf(w, "%d\t%s%s\t%s\t%v\t%s\n", ci.ID, strings.Repeat("  ", depth), ci.Name, typ, ci.Nullable, filters)
					walk(ci.Children, depth+1)
				}
			}
			walk(tree, 0)
			return w.Flush()
		},
	}
	addSnapshotFlag(cmd, &snapshot)
	return cmd
}

// writeOptionsJSON is a table's write options as describe --format json
// shows them: only those set, so that an absent key is the default.
func writeOptionsJSON(o catalog.WriteOptions) map[string]any {
	out := map[string]any{}
	if o.TargetFileRows > 0 {
		out["target_file_rows"] = o.TargetFileRows
	}
	if o.TargetFileBytes > 0 {
		out["target_file_bytes"] = o.TargetFileBytes
	}
	if o.Unsorted {
		out["sorted"] = false
	}
	if o.MergeOnRead {
		out["delete_mode"] = catalog.MergeOnRead
	}
	return out
}

// columnTree nests child columns under their parents.
func columnTree(cols []catalog.Column) []columnInfo {
	kids := map[int64][]catalog.Column{}
	for _, c := range cols {
		if c.Parent.Known {
			kids[c.Parent.V] = append(kids[c.Parent.V], c)
		}
	}
	var build func(c catalog.Column) columnInfo
	build = func(c catalog.Column) columnInfo {
		ci := columnInfo{ID: c.ID, Name: c.Name, Type: types.DisplayName(c.Type), Nullable: c.Nullable, Partition: c.Partition}
		if c.Default.Known {
			d := c.Default.V
			ci.Default = &d
		}
		for _, k := range kids[c.ID] {
			ci.Children = append(ci.Children, build(k))
		}
		return ci
	}
	var out []columnInfo
	for _, c := range catalog.TopLevel(cols) {
		out = append(out, build(c))
	}
	return out
}

// typeText is a column's type as the text outputs show it, with where a
// partition column's values come from.
func typeText(typ, partition string) string {
	if partition == "" {
		return typ
	}
	return typ + " (partition: " + partition + ")"
}
