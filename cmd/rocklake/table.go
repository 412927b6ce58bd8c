package main

import (
	"fmt"
	"strings"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake"
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
			out, err := rocklake.ReadTableList(cmd.Context(), r)
			if err != nil {
				return err
			}
			if g.format == formatJSON {
				return writeJSON(cmd.OutOrStdout(), out)
			}
			w := newTable(cmd.OutOrStdout())
			fmt.Fprintln(w, "TABLE\tCOLUMNS\tFILES\tROWS\tBYTES")
			for _, t := range out.Tables {
				fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%d\n", t.Table, t.ColumnCount, t.FileCount, t.Rows, t.Bytes)
			}
			return w.Flush()
		},
	}
	addSnapshotFlag(cmd, &snapshot)
	return cmd
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
			d, err := rocklake.ReadDescription(cmd.Context(), r, args[0])
			if err != nil {
				return err
			}
			if g.format == formatJSON {
				return writeJSON(cmd.OutOrStdout(), d)
			}
			t, err := r.Table(args[0])
			if err != nil {
				return err
			}
			cols, err := r.Columns(t.ID)
			if err != nil {
				return err
			}
			w := newTable(cmd.OutOrStdout())
			fmt.Fprintf(w, "table %s (uuid %s) at snapshot %d\n", t.Name, t.UUID, r.Snapshot().ID)
			if len(d.PartitionedBy) > 0 {
				fmt.Fprintf(w, "partitioned by %s (the files optimize and compact write)\n", strings.Join(d.PartitionedBy, ", "))
			}
			if t.SortedBy != nil {
				fmt.Fprintf(w, "sorted by %s (the row order optimize writes without --sort-by)\n", catalog.SortKeyText(t.SortedBy, cols))
			}
			if set := t.WriteOptions.Settings(); len(set) > 0 {
				fmt.Fprintf(w, "options %s\n", strings.Join(set, ", "))
			}
			fmt.Fprintln(w, "ID\tCOLUMN\tTYPE\tNULLABLE\tMEMBERSHIP FILTERS")
			var walk func([]rocklake.ColumnDescription, int)
			walk = func(cs []rocklake.ColumnDescription, depth int) {
				for _, ci := range cs {
					filters := "-"
					if f := ci.Filters; f != nil {
						filters = fmt.Sprintf("%s, %s", plural(f.FileCount, "file", "files"), humanize.IBytes(uint64(f.Bytes)))
					}
					typ := typeText(types.DisplayName(ci.Type), ci.Partition)
					if ci.Default != nil {
						typ += " default '" + strings.ReplaceAll(*ci.Default, "'", "''") + "'"
					}
					fmt.Fprintf(w, "%d\t%s%s\t%s\t%v\t%s\n", ci.ColumnID, strings.Repeat("  ", depth), ci.Name, typ, ci.Nullable, filters)
					walk(ci.Children, depth+1)
				}
			}
			walk(d.Columns, 0)
			return w.Flush()
		},
	}
	addSnapshotFlag(cmd, &snapshot)
	return cmd
}

// typeText is a column's type as the text outputs show it, with where a
// partition column's values come from.
func typeText(typ, partition string) string {
	if partition == "" {
		return typ
	}
	return typ + " (partition: " + partition + ")"
}
