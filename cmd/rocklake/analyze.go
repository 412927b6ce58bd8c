package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake/internal/plot"
	"github.com/rocklake/rocklake/maintain"
)

func newAnalyzeCmd(g *globals) *cobra.Command {
	var snapshot int64
	var column, plot string
	cmd := &cobra.Command{
		Use:   "analyze TABLE --column C",
		Short: "Measure how well a column's statistics separate a table's files and row groups",
		Long: `analyze reports, for files and for row groups, the average and maximum overlap
depth of the units' [min, max] ranges on a column (1 is perfect clustering) and
the average fraction of units a point query and a 1% range query would read.
--plot writes an SVG with one bar per file, to choose a sort key by eye.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if column == "" {
				return usagef("--column is required")
			}
			r, done, err := openReader(g, snapshot)
			if err != nil {
				return err
			}
			defer done()
			cl, err := maintain.Analyze(r, args[0], column)
			if err != nil {
				return err
			}
			if plot != "" {
				f, err := os.Create(plot)
				if err != nil {
					return err
				}
				if err := plotFiles(f, cl); err != nil {
					f.Close()
					return err
				}
				if err := f.Close(); err != nil {
					return err
				}
			}
			if g.format == formatJSON {
				return writeJSON(cmd.OutOrStdout(), map[string]any{
					"table": cl.Table, "column": cl.Column, "type": cl.Type, "snapshot_id": cl.Snapshot,
					"files": cl.Files, "row_groups": cl.RowGroups,
				})
			}
			w := newTable(cmd.OutOrStdout())
			fmt.Fprintf(w, "table %s column %s (%s) at snapshot %d\n", cl.Table, cl.Column, cl.Type, cl.Snapshot)
			fmt.Fprintln(w, "LEVEL\tUNITS\tNO BOUNDS\tAVG DEPTH\tMAX DEPTH\tPOINT QUERY READS\t1% RANGE READS")
			for _, l := range []struct {
				name string
				c    maintain.LevelClustering
			}{{"files", cl.Files}, {"row groups", cl.RowGroups}} {
				fmt.Fprintf(w, "%s\t%d\t%d\t%.2f\t%d\t%.1f%%\t%.1f%%\n", l.name, l.c.Units, l.c.Unbounded, l.c.AvgDepth, l.c.MaxDepth,
					100*l.c.PointRead, 100*l.c.RangeRead)
			}
			if plot != "" {
				fmt.Fprintf(w, "plot written to %s\n", plot)
			}
			return w.Flush()
		},
	}
	addSnapshotFlag(cmd, &snapshot)
	cmd.Flags().StringVar(&column, "column", "", "the column to analyze")
	cmd.Flags().StringVar(&plot, "plot", "", "write an SVG of each file's [min, max] to this file")
	return cmd
}

// plotFiles draws each file's [min, max] on the column as a bar, one row
// per file in catalog order.
func plotFiles(w io.Writer, cl *maintain.Clustering) error {
	pos, numeric := cl.Positions()
	axis := "value"
	if !numeric {
		axis = "rank of bound"
	}
	bars := make([]plot.Bar, len(cl.FileRanges))
	for i, r := range cl.FileRanges {
		bars[i] = plot.Bar{Label: r.Label, Known: r.Known}
		if r.Known {
			bars[i].Lo, bars[i].Hi = pos(r.Min), pos(r.Max)
			bars[i].LoText, bars[i].HiText = cl.Text(r.Min), cl.Text(r.Max)
		}
	}
	title := fmt.Sprintf("%s.%s (%s): %d files, avg overlap depth %.2f, max %d; point query reads %.1f%%, 1%% range %.1f%% of files",
		cl.Table, cl.Column, cl.Type, len(cl.FileRanges), cl.Files.AvgDepth, cl.Files.MaxDepth, 100*cl.Files.PointRead, 100*cl.Files.RangeRead)
	return plot.Ranges(w, title, axis, bars)
}
