package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake"
	"github.com/rocklake/rocklake/types"
)

func newStatsCmd(g *globals) *cobra.Command {
	var snapshot int64
	var column string
	cmd := &cobra.Command{
		Use:   "stats TABLE",
		Short: "Show a table's statistics (with --column, that column in every file)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, done, err := openReader(g, snapshot)
			if err != nil {
				return err
			}
			defer done()
			out, err := rocklake.ReadStats(cmd.Context(), r, args[0], column)
			if err != nil {
				return err
			}
			if g.format == formatJSON {
				return writeJSON(cmd.OutOrStdout(), out)
			}
			return printStats(cmd, out)
		},
	}
	addSnapshotFlag(cmd, &snapshot)
	cmd.Flags().StringVar(&column, "column", "", "show only this column, and its stats in every file")
	return cmd
}

func printStats(cmd *cobra.Command, out *rocklake.TableStats) error {
	w := newTable(cmd.OutOrStdout())
	fmt.Fprintf(w, "table %s at snapshot %d: %d files, %d rows, %d bytes\n",
		out.Table, out.Snapshot, out.Files, out.Rows, out.Bytes)
	fmt.Fprintln(w, "COLUMN\tTYPE\tMIN\tMAX\tEXACT\tNULLS\tNAN")
	for _, c := range out.Columns {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Column, typeText(types.DisplayName(c.Type), c.Partition), show(c.Min), show(c.Max),
			exactness(c.MinIsExact, c.MaxIsExact), show(c.ContainsNull), show(c.ContainsNaN))
		for _, v := range c.Variants {
			fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t\t%d\t\n", v.Path, types.DisplayName(v.ShreddedType), show(v.Min), show(v.Max), v.NullCount)
		}
		if c.Extent != nil {
			fmt.Fprintf(w, "  extent\t%s\t\t\t\t\t\n", extentText(c.Extent))
		}
	}
	if len(out.FileStats) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "FILE\tPATH\tMIN\tMAX\tEXACT\tNULLS\tVALUES\tNAN\tROW GROUPS")
		for _, f := range out.FileStats {
			fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\n", f.FileID, f.Path, show(f.Min), show(f.Max),
				exactness(f.MinIsExact, f.MaxIsExact), show(f.NullCount), show(f.ValueCount), show(f.ContainsNaN), f.RowGroupCount)
		}
	}
	return w.Flush()
}

func exactness(minExact, maxExact bool) string {
	s := func(b bool) string {
		if b {
			return "y"
		}
		return "n"
	}
	return s(minExact) + "/" + s(maxExact)
}

// extentOf reads a GEOMETRY extent from extra_stats: [xmin, ymin, xmax,
// ymax], [] when no value is a non-empty geometry, nil when unknown.
func extentText(b []float64) string {
	if len(b) != 4 {
		return "none (NULL or empty only)"
	}
	return fmt.Sprintf("x %g..%g, y %g..%g", b[0], b[2], b[1], b[3])
}
