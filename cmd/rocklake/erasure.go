package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake/maintain"
)

// errNotErased makes the exit code 3 after the report is printed.
type errNotErased struct{ n int }

func (e errNotErased) Error() string {
	return "rows matching the predicate are still stored in " + plural(e.n, "file", "files")
}

func newErasureCmd(g *globals) *cobra.Command {
	var where string
	cmd := &cobra.Command{
		Use:   "erasure TABLE --where CONDITION",
		Short: "Check that no stored file of a table still holds rows matching a condition",
		Long: `erasure reads every file that may still store the table's rows — its live
files, files retired by a DELETE, UPDATE or optimize that kept snapshots still
read, files expire scheduled for cleanup, files the user registered in place,
and files under rocklake's own write directories that no snapshot names — and
counts in each the rows CONDITION (SQL over the table's columns) matches, as
DuckDB decodes the file, whatever its compression. It prints each file that
still holds such rows, why, and what to run:

  live     the table holds them now: DELETE FROM TABLE WHERE CONDITION
  retired  snapshots that retention keeps read the file: rocklake expire
  expired  scheduled for deletion: rocklake cleanup (after its grace period)
  user     a file registered in place: rocklake never deletes it; delete it
  orphan   written by rocklake, named by no snapshot: rocklake cleanup --orphans

The exit status is 0 when no file holds a matching row, 3 when some do (or
could not be checked), 1 when the check itself failed. Object prefixes are not
listed for objects the catalog no longer names. The procedure:

  rocklake query "DELETE FROM events WHERE user_id = 42"
  rocklake expire --older-than 0s --allow-short-retention
  rocklake cleanup --grace 0s
  rocklake erasure events --where 'user_id = 42'`,
		Example: `  rocklake erasure events --where 'user_id = 42'
  rocklake erasure events --where "kind = 'spam'" --format json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if where == "" {
				return usagef("erasure: --where CONDITION is required (the condition the erased rows matched)")
			}
			e, done, err := openEngine(g, reading)
			if err != nil {
				return err
			}
			defer done()
			rep, err := maintain.CheckErased(cmd.Context(), e, args[0], where)
			if err != nil {
				return err
			}
			if g.format == formatJSON {
				if err := writeJSON(cmd.OutOrStdout(), rep); err != nil {
					return err
				}
			} else {
				out := cmd.OutOrStdout()
				for _, h := range rep.Holders {
					rows := plural(int(h.Rows), "matching row", "matching rows")
					if h.Rows < 0 {
						rows = "not checked"
					}
					fmt.Fprintf(out, "%s %s (%s): %s\n", h.State, h.Path, rows, h.Why)
				}
				for _, u := range rep.Unlisted {
					fmt.Fprintf(out, "note: %s\n", u)
				}
				verdict := "no stored file holds a matching row"
				if !rep.Erased {
					verdict = plural(len(rep.Holders), "file still holds", "files still hold") + " matching rows or could not be checked"
				}
				fmt.Fprintf(out, "table %s at snapshot %d: %s checked, %s\n", rep.Table, rep.Snapshot, plural(rep.Checked, "file", "files"), verdict)
			}
			if !rep.Erased {
				cmd.SilenceErrors = true
				return errNotErased{len(rep.Holders)}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&where, "where", "", "the condition the erased rows match (SQL over the table's columns)")
	return cmd
}
