package main

import (
	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
)

func newChangesCmd(g *globals) *cobra.Command {
	var from, to int64
	var null string
	cmd := &cobra.Command{
		Use:   "changes TABLE --from N [--to M]",
		Short: "The rows a table gained and lost after snapshot N, up to M: snapshot_id, change_type, columns",
		Long: `changes prints the rows TABLE gained ('insert') and lost ('delete') in each
snapshot after --from up to --to (default: the latest), as DuckLake's
ducklake_table_changes does: snapshot_id, change_type, then the table's columns
at --to. It reads only the files those snapshots added and retired: a snapshot's
inserts are the rows of the files it added that the files it retired did not
hold, its deletes the reverse (as multisets), so an INSERT or add shows inserts,
a DELETE deletes, an UPDATE or MERGE the old rows as deletes and the new ones as
inserts, and an optimize or compact nothing. Snapshots expire has forgotten
have no changes left: a --from before them is refused.`,
		Example: `  rocklake changes events --from 1
  rocklake changes events --from 1 --to 2 --format csv`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("from") {
				return usagef("changes: --from N is required (the snapshot after which changes are listed)")
			}
			if to < 0 {
				to = catalog.Latest
			}
			e, done, err := openEngine(g, reading)
			if err != nil {
				return err
			}
			defer done()
			q, release, err := e.ChangesSQL(cmd.Context(), args[0], from, to)
			if err != nil {
				return err
			}
			defer release()
			var nullText *string
			if cmd.Flags().Changed("null") {
				nullText = &null
			}
			return runQuery(cmd, e, g.format, q, engine.QueryOptions{Snapshot: catalog.Latest}, nullText)
		},
	}
	cmd.Flags().Int64Var(&from, "from", 0, "list the changes of the snapshots after this one")
	cmd.Flags().Int64Var(&to, "to", -1, "up to this snapshot (default: the latest)")
	cmd.Flags().StringVar(&null, "null", "", "how csv, tsv and the table show NULL")
	return cmd
}
