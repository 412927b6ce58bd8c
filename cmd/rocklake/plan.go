package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake/prune"
	"github.com/rocklake/rocklake/storage"
)

func newPlanCmd(g *globals) *cobra.Command {
	var snapshot int64
	var pages, noBloom bool
	var minRows int64
	cmd := &cobra.Command{
		Use:   "plan TABLE 'PREDICATE'",
		Short: "Show which files and row groups a predicate keeps, from statistics alone",
		Long: `plan binds the predicate (DuckDB WHERE-clause syntax) to the table's columns
and reports, per level, the units total, kept and all-match, the bytes, and the
kept files with their kept row groups. It reads only the catalog.`,
		Example: `  rocklake plan events "ts >= TIMESTAMPTZ '2024-01-01 00:00:00+00' AND kind = 'click'"
  rocklake plan events 'user_id IN (1, 2, 3)' --format json`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, done, err := openReader(g, snapshot)
			if err != nil {
				return err
			}
			defer done()
			objects := func() (storage.Store, error) { return storage.NewS3(cmd.Context(), storage.S3OptionsFromEnv()) }
			p, err := prune.PlanTable(r, args[0], args[1], prune.Options{Pages: pages, NoBloom: noBloom, IndexMinRows: minRows, Objects: objects})
			if err != nil {
				return err
			}
			if g.format == formatJSON {
				return writeJSON(cmd.OutOrStdout(), p)
			}
			w := newTable(cmd.OutOrStdout())
			fmt.Fprintf(w, "table %s at snapshot %d\npredicate: %s\nbound:     %s\n", p.Table, p.Snapshot, p.Predicate, p.Bound)
			for _, sf := range p.SubFields {
				fmt.Fprintf(w, "sub-field: %s.%s as %s, statistics in %d of %d files\n", sf.Column, sf.Path, sf.Type, sf.StatsFileCount, p.Files.Total)
			}
			fmt.Fprintln(w)
			fmt.Fprintln(w, "LEVEL\tTOTAL\tKEPT\tALL-MATCH")
			fmt.Fprintf(w, "files\t%d\t%d\t%d\n", p.Files.Total, p.Files.Kept, p.Files.AllMatch)
			fmt.Fprintf(w, "row groups\t%d\t%d\t%d\n", p.RowGroups.Total, p.RowGroups.Kept, p.RowGroups.AllMatch)
			if p.Pages.Evaluated {
				fmt.Fprintf(w, "pages\t%d\t%d\t\n", p.Pages.Total, p.Pages.Kept)
			}
			fmt.Fprintf(w, "bytes\t%d\t%d\t\n", p.Bytes.Total, p.Bytes.Kept)
			if err := w.Flush(); err != nil {
				return err
			}
			if p.Objects.Kept > 0 || p.Objects.Requests > 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "object storage: %d requests made to plan (page indexes, bloom filters); a query reads %d objects, %d bytes (fetched unless cached)\n",
					p.Objects.Requests, p.Objects.Kept, p.Objects.KeptBytes)
			}
			if p.Bloom.Probed > 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "bloom filters read for %d row groups, which skipped %d\n", p.Bloom.Probed, p.Bloom.Skipped)
			}
			if len(p.KeptFiles) > 0 {
				w = newTable(cmd.OutOrStdout())
				fmt.Fprintln(w, "\nKEPT FILE\tROWS\tROW GROUPS\tALL-MATCH")
				for _, f := range p.KeptFiles {
					fmt.Fprintf(w, "%s\t%d\t%v\t%v\n", f.Path, f.Rows, f.RowGroups, f.AllMatch)
					if len(f.Partition) > 0 {
						fmt.Fprintf(w, "  partition %s\t\t\t\n", partitionText(f.Partition, nil))
					}
					if len(f.Layout) > 0 {
						fmt.Fprintf(w, "  layout %s\t\t\t\n", partitionText(f.Layout, nil))
					}
					for _, rr := range f.Ranges {
						fmt.Fprintf(w, "  rows %d-%d\t%d\t[%d]\t\n", rr.First, rr.First+rr.Count-1, rr.Count, rr.RowGroup)
					}
				}
				return w.Flush()
			}
			return nil
		},
	}
	addSnapshotFlag(cmd, &snapshot)
	cmd.Flags().BoolVar(&pages, "pages", false, "also prune pages with the Parquet page index, and list the row ranges kept")
	cmd.Flags().BoolVar(&noBloom, "no-bloom", false, "do not read bloom filters")
	cmd.Flags().Int64Var(&minRows, "index-min-rows", 0, "cost rule: consult bloom filters and page indexes only for row groups of at least this many rows (default 1024; -1: always)")
	return cmd
}

// partitionText is a file's partition values as key=value pairs, in the
// order given (by default the keys' order), NULL for a NULL partition.
func partitionText(p map[string]*string, order []string) string {
	if order == nil {
		for k := range p {
			order = append(order, k)
		}
		slices.Sort(order)
	}
	parts := make([]string, len(order))
	for i, k := range order {
		v := "NULL"
		if p[k] != nil {
			v = *p[k]
		}
		parts[i] = k + "=" + v
	}
	return strings.Join(parts, ", ")
}
