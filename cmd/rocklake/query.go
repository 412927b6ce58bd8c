package main

import (
	"encoding/csv"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"rocklake/engine"
)

func newQueryCmd(g *globals) *cobra.Command {
	var snapshot int64
	var explain, noPrune bool
	cmd := &cobra.Command{
		Use:   "query 'SQL'",
		Short: "Run a DuckDB SELECT over catalog tables, reading only the files that may match",
		Long: `query runs any DuckDB SELECT that names catalog tables. DuckDB's parser finds
every reference to a table and each SELECT's WHERE clause; the conjuncts that
name only one reference's columns prune that reference's files, where removing
rows that fail them cannot change the answer: a table alone, either side of an
inner join, the preserved side of an outer join. The NULL-supplying side of an
outer join, ASOF and POSITIONAL joins and sampled tables are read whole
(--explain says which and why). DuckDB then runs the query as written, each
reference reading its own kept files. A file that changed or disappeared since
it was registered fails the query, naming it.
--format is table (default), csv or json.`,
		Example: `  rocklake query "SELECT kind, count(*) FROM events WHERE ts >= '2024-01-01' GROUP BY kind"
  rocklake query "SELECT count(*) FROM events" --snapshot 3 --format json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, done, err := openEngine(g, reading)
			if err != nil {
				return err
			}
			defer done()
			res, err := e.Query(cmd.Context(), args[0], engine.QueryOptions{Snapshot: snapshot, Explain: explain, NoPruning: noPrune})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if explain {
				for _, tp := range res.Tables {
					p := tp.Plan
					name := tp.Table
					if tp.Alias != "" {
						name += " AS " + tp.Alias
					}
					by := orDash(strings.Join(tp.Predicates, " | "))
					if tp.ReadWhole != "" {
						by = "nothing: " + tp.ReadWhole
					}
					fmt.Fprintf(out, "table %s: files %d of %d, row groups %d of %d, bytes %d of %d; pruned by: %s\n",
						name, p.Files.Kept, p.Files.Total, p.RowGroups.Kept, p.RowGroups.Total, p.Bytes.Kept, p.Bytes.Total, by)
				}
				fmt.Fprintln(out, res.Explain)
			}
			switch g.format {
			case formatJSON:
				return writeJSON(out, res)
			case "csv":
				w := csv.NewWriter(out)
				_ = w.Write(res.Columns)
				for _, row := range res.Rows {
					rec := make([]string, len(row))
					for i, v := range row {
						if v != nil {
							rec[i] = *v
						}
					}
					_ = w.Write(rec)
				}
				w.Flush()
				return w.Error()
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, strings.Join(res.Columns, "\t"))
			for _, row := range res.Rows {
				cells := make([]string, len(row))
				for i, v := range row {
					cells[i] = "NULL"
					if v != nil {
						cells[i] = *v
					}
				}
				fmt.Fprintln(tw, strings.Join(cells, "\t"))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			src := "DuckDB"
			if res.Metadata {
				src = "catalog statistics (no file opened)"
			}
			var phases []string
			for _, p := range res.Phases {
				phases = append(phases, fmt.Sprintf("%s %.2f ms", p.Name, float64(p.Time.Microseconds())/1000))
			}
			_, err = fmt.Fprintf(cmd.ErrOrStderr(), "(%d rows in %.3fs, answered by %s; %s)\n", len(res.Rows), res.Elapsed.Seconds(), src, strings.Join(phases, ", "))
			return err
		},
	}
	addSnapshotFlag(cmd, &snapshot)
	cmd.Flags().BoolVar(&explain, "explain", false, "print, per table, the files and row groups kept, then DuckDB's plan")
	cmd.Flags().BoolVar(&noPrune, "no-prune", false, "read every file (to compare with)")
	return cmd
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
