package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/ingest"
)

func newTableAlterCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "alter TABLE add|rename|drop|alter column ... | set partitioned by|sorted by|option ...",
		Short: "Add, rename, drop or widen a column, or declare a layout, sort key or write option (one snapshot; files are not rewritten)",
		Long: `alter changes a table's columns or properties from the next snapshot on, in one snapshot:

  add column NAME TYPE [DEFAULT v]   files registered before read it as v (NULL without DEFAULT);
                                     those added with --ignore-extra-columns that hold NAME
                                     read their own values (TYPE must be theirs or widen it)
  rename column A to B               files registered before still hold it as A and read as B
  drop column C                      gone from the next snapshot; earlier snapshots still read it
  alter column C type T              a widening DuckDB reads exactly: TINYINT → SMALLINT →
                                     INTEGER → BIGINT → HUGEINT (unsigned alike), FLOAT →
                                     DOUBLE, DECIMAL to no fewer integer and fraction digits
  set partitioned by F, ...          the layout optimize and compact write: each file holds one
                                     value of every field F: col, year(col), month(col),
                                     day(col), hour(col), bucket(N, col) (quote them for the shell)
  reset partitioning                 no layout
  set sorted by COL, ...             the order rows are written in, then cut into files: columns
                                     in order (ascending, NULLs last), or zorder(COL, ...) /
                                     hilbert(COL, ...), a curve through 2 to 8 columns;
                                     optimize without --sort-by uses it
  reset sorted by                    no sort key
  set option NAME = VALUE            a write option (reset option NAME: back to the default):
    target_file_rows = N             rows per written file (unset: optimize writes 1000000)
    target_file_size = 128MB         bytes per written file, with a unit as --target-file-size
                                     takes it; wins over target_file_rows
    sorted = false                   SQL writes keep rows in the order they come (faster writes,
                                     files that prune less); optimize sorts all the same
  optimize takes its file size from the options when given no --rows-per-file or
  --target-file-size. SQL writes (INSERT, CREATE TABLE AS, COPY), still to come, are to lay
  out their files by the sort key and options.

Files are never rewritten: each keeps the columns it was registered with, and queries read
it through the table's column mapping; its statistics stay exact (an added column's are its
default's). Queries and plans with --snapshot read each snapshot's columns as they were.
Refused, leaving the catalog as it was: a name the table has, narrowing or any other type
change, dropping the only column, a Hive partition column or a column the layout or sort
key names, changing a Hive partition column's type, a transform the column's type does not
take, a sort key column that is nested, a Hive partition column or of a type without an
order (struct, list, map, interval, variant), an unknown option or a value it does not take.
Setting a layout, sort key or option to what it is already makes no snapshot and says so.
Flags go before TABLE (a default such as -5 is not a flag).`,
		Example: `  rocklake table alter events add column country VARCHAR DEFAULT "'unknown'"
  rocklake table alter events rename column value to amount
  rocklake table alter events alter column user_id type HUGEINT
  rocklake table alter events drop column kind
  rocklake table alter events set partitioned by 'day(ts)', 'bucket(16, user_id)'
  rocklake table alter events set sorted by 'zorder(user_id, ts)'
  rocklake table alter events set option target_file_size = 128MB`,
		Args: cobra.MinimumNArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := catalog.ParseAlteration(args[1:])
			if err != nil {
				return err
			}
			c, closeCatalog, err := openCatalog(g, writing)
			if err != nil {
				return err
			}
			defer closeCatalog()
			// Files added with --ignore-extra-columns that hold an added
			// column read their own values: their footers give its type
			// and statistics.
			if a, err = ingest.MapIn(cmd.Context(), c, args[0], a, nil); err != nil {
				return err
			}
			tx, err := c.Begin()
			if err != nil {
				return err
			}
			tx.AlterTable(args[0], a)
			snap, err := tx.Commit()
			if errors.Is(err, catalog.ErrUnchanged) {
				// Asking for what is so already succeeds: a script that
				// declares a table's properties may run again.
				if g.format == formatJSON {
					return writeJSON(cmd.OutOrStdout(), map[string]any{"table": args[0], "alteration": a.String(), "snapshot_id": snap.ID, "unchanged": true})
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "%v (no snapshot made; the newest is %d)\n", err, snap.ID)
				return err
			}
			if err != nil {
				return err
			}
			if g.format == formatJSON {
				return writeJSON(cmd.OutOrStdout(), map[string]any{"table": args[0], "alteration": a.String(), "snapshot_id": snap.ID})
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "altered table %s at snapshot %d: %s (earlier snapshots read the table as it was)\n", args[0], snap.ID, a)
			return err
		},
	}
	cmd.Flags().SetInterspersed(false)
	return cmd
}
