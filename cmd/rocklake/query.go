package main

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"rocklake/engine"
)

func newQueryCmd(g *globals) *cobra.Command {
	var snapshot int64
	var explain, noPrune bool
	var null string
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
Rows print as DuckDB produces them. --format text (or table, the default) is
an aligned table whose column widths fit the first 1,000 rows; csv and tsv
have a header line; jsonl is one JSON object per row; json is one document:
"columns" (name and DuckDB type), "tables" (how each reference was pruned),
"rows" (objects), "row_count", "seconds" and "phases". JSON values are typed:
numbers where a double holds them exactly (integers within ±2^53, decimals of
at most 15 significant digits, finite floats), else strings of DuckDB's text
(larger BIGINT, HUGEINT and DECIMAL values, NaN and infinities); lists,
structs and maps as JSON; NULL as null. A row object repeats no key: a
repeated column name gets _1, _2, ... appended.`,
		Example: `  rocklake query "SELECT kind, count(*) FROM events WHERE ts >= '2024-01-01' GROUP BY kind"
  rocklake query "SELECT count(*) FROM events" --snapshot 3 --format json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, done, err := openEngine(g, reading)
			if err != nil {
				return err
			}
			defer done()
			var nullText *string
			if cmd.Flags().Changed("null") {
				nullText = &null
			}
			opts := engine.QueryOptions{Snapshot: snapshot, Explain: explain, NoPruning: noPrune}
			return runQuery(cmd, e, g.format, args[0], opts, nullText)
		},
	}
	addSnapshotFlag(cmd, &snapshot)
	cmd.Flags().BoolVar(&explain, "explain", false, "print, per table, the files and row groups kept, then DuckDB's plan")
	cmd.Flags().BoolVar(&noPrune, "no-prune", false, "read every file (to compare with)")
	cmd.Flags().StringVar(&null, "null", "", "how csv, tsv and the table show NULL (default: empty in csv and tsv, NULL in the table)")
	return cmd
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// runQuery runs one query and prints its rows in format as DuckDB
// produces them. The summary line (text formats) and, for csv, tsv and
// jsonl, --explain's report go to stderr, so stdout holds only rows.
func runQuery(cmd *cobra.Command, e *engine.Engine, format, sql string, opts engine.QueryOptions, null *string) error {
	jsonOut := format == formatJSON || format == formatJSONL
	rows, err := e.QueryRows(cmd.Context(), sql, opts, engine.RowsOptions{NestedJSON: jsonOut})
	if err != nil {
		return err
	}
	defer rows.Close()
	res := rows.Result()
	w := bufio.NewWriterSize(cmd.OutOrStdout(), 64<<10)
	defer w.Flush()
	if opts.Explain && format != formatJSON {
		var ew io.Writer = w
		if format != formatText && format != formatTable {
			ew = cmd.ErrOrStderr()
		}
		printExplain(ew, res)
	}
	p := newRowPrinter(format, w, null)
	if err := p.begin(rows.Columns(), res); err != nil {
		return err
	}
	for rows.Next() {
		if err := p.row(rows.Values()); err != nil {
			return err
		}
		// The first row shows at once; later ones as the buffer fills.
		if rows.Count() == 1 {
			if err := w.Flush(); err != nil {
				return err
			}
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if err := rows.Close(); err != nil {
		return err
	}
	if err := p.end(res, rows.Count()); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if format != formatText && format != formatTable {
		return nil
	}
	src := "DuckDB"
	if res.Metadata {
		src = "catalog statistics (no file opened)"
	}
	var phases []string
	for _, p := range res.Phases {
		phases = append(phases, fmt.Sprintf("%s %.2f ms", p.Name, float64(p.Time.Microseconds())/1000))
	}
	_, err = fmt.Fprintf(cmd.ErrOrStderr(), "(%s in %.3fs, answered by %s; %s)\n", plural(rows.Count(), "row", "rows"), res.Elapsed.Seconds(), src, strings.Join(phases, ", "))
	return err
}

// printExplain prints, per table reference, the files and row groups kept
// and what pruned them, then DuckDB's plan.
func printExplain(w io.Writer, res *engine.Result) {
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
		fmt.Fprintf(w, "table %s: files %d of %d, row groups %d of %d, bytes %d of %d; pruned by: %s\n",
			name, p.Files.Kept, p.Files.Total, p.RowGroups.Kept, p.RowGroups.Total, p.Bytes.Kept, p.Bytes.Total, by)
	}
	fmt.Fprintln(w, res.Explain)
}

// plural is "1 row", "2 rows".
func plural[N ~int | ~int64](n N, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
