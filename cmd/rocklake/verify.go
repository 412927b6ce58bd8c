package main

import (
	"fmt"
	"github.com/rocklake/rocklake/maintain"

	"github.com/spf13/cobra"
)

// errVerifyFailed makes the exit code non-zero after the report is printed.
type errVerifyFailed struct{ n int }

func (e errVerifyFailed) Error() string { return "verify found " + plural(e.n, "problem", "problems") }

func newVerifyCmd(g *globals) *cobra.Command {
	var snapshot int64
	var deep bool
	cmd := &cobra.Command{
		Use:   "verify TABLE",
		Short: "Check a table's files against the catalog (--deep: every stored bound against the data)",
		Long: `verify checks that each of the table's files exists with its registered size
(a missing, resized or replaced file is reported), and that what plans read
(the file and stats blocks, the table's statistics) agrees with the catalog's
rows of those files (a problem there starts with "catalog:"). With --deep it
also reads
every column of every row group through DuckDB and reports each stored bound
that excludes a value present in the data, each wrong NULL count, each
contains_nan=false over a NaN and each membership filter that rules out a value
its file holds: the command to run after an incident. The exit status is 3
when anything is wrong (1 when the check itself failed, 2 for a usage error).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, done, err := openEngine(g, reading)
			if err != nil {
				return err
			}
			defer done()
			if snapshot < 0 {
				snapshot = -1
			}
			rep, err := maintain.Verify(cmd.Context(), e, args[0], snapshot, deep)
			if err != nil {
				return err
			}
			if g.format == formatJSON {
				if err := writeJSON(cmd.OutOrStdout(), rep); err != nil {
					return err
				}
			} else {
				out := cmd.OutOrStdout()
				for _, p := range rep.Problems {
					fmt.Fprintf(out, "PROBLEM %s (file %d): %s\n", p.Path, p.FileID, p.What)
				}
				fmt.Fprintf(out, "table %s at snapshot %d: %s checked", rep.Table, rep.Snapshot, plural(rep.Files, "file", "files"))
				if deep {
					fmt.Fprintf(out, ", %s checked against the data", plural(rep.Units, "(unit, column) stat", "(unit, column) stats"))
				}
				fmt.Fprintf(out, ", %s\n", plural(len(rep.Problems), "problem", "problems"))
			}
			if len(rep.Problems) > 0 {
				cmd.SilenceErrors = true
				return errVerifyFailed{len(rep.Problems)}
			}
			return nil
		},
	}
	addSnapshotFlag(cmd, &snapshot)
	cmd.Flags().BoolVar(&deep, "deep", false, "recompute statistics from the data and compare")
	return cmd
}
