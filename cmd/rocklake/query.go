package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake"
	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/internal/sqllex"
	"github.com/rocklake/rocklake/maintain"
)

func newQueryCmd(g *globals) *cobra.Command {
	var snapshot int64
	var explain, noPrune bool
	var null, command, file string
	cmd := &cobra.Command{
		Use:   "query ['SQL' | -c SQL | -f FILE | -]",
		Short: "Run a DuckDB SELECT over catalog tables, reading only the files that may match; or a write (INSERT, CREATE TABLE [AS], COPY FROM, DELETE, UPDATE, MERGE)",
		Long: `query runs any DuckDB SELECT that names catalog tables. DuckDB's parser finds
every reference to a table and each SELECT's WHERE clause; the conjuncts that
name only one reference's columns prune that reference's files, where removing
rows that fail them cannot change the answer: a table alone, either side of an
inner join, the preserved side of an outer join. The NULL-supplying side of an
outer join, ASOF and POSITIONAL joins and sampled tables are read whole
(--explain says which and why). DuckDB then runs the query as written, each
reference reading its own kept files. A file that changed or disappeared since
it was registered fails the query, naming it.

The SQL comes as the argument, -c SQL, -f FILE, or - (standard input), as
psql and duckdb take it; with none of them on a terminal, query opens a
prompt (statements over lines, ended by ;, history, \? for its commands). A script of several statements (separated by ;)
runs them in order, printing each one's rows (a blank line between them in
the text formats; one JSON document each with --format json); the first
statement that fails stops the script, its error naming its number and line.

Rows print as DuckDB produces them. --format text (or table, the default) is
an aligned table whose column widths fit the first 1,000 rows; csv and tsv
have a header line; jsonl is one JSON object per row; json is one document:
"columns" (name and DuckDB type), "tables" (how each reference was pruned),
"rows" (objects), "row_count", "seconds" and "phases". JSON values are typed:
numbers where a double holds them exactly (integers within ±2^53, decimals of
at most 15 significant digits, finite floats), else strings of DuckDB's text
(larger BIGINT, HUGEINT and DECIMAL values, NaN and infinities); lists,
structs and maps as JSON; NULL as null. A row object repeats no key: a
repeated column name gets _1, _2, ... appended.

Writes run here too: INSERT INTO t [BY NAME] [(cols)] SELECT ... | VALUES ...,
CREATE TABLE t (col type [NOT NULL], ...), CREATE TABLE t AS SELECT ..., and
COPY t FROM 'path' (FORMAT csv | parquet | json, ...). DuckDB runs each over the
table's columns; the rows are written as new Parquet files in the table's sort
order and layout, checked and registered in one snapshot per statement.
DELETE, UPDATE and MERGE INTO (DuckDB's grammar) rewrite each file holding a
matched row without it, also in one snapshot; the files the condition prunes
are not read. See docs/sql.md for what differs from DuckDB. A write prints a summary line on stderr (one
JSON object on stdout with --format json or jsonl); --snapshot is what its
query reads, the rows always go to the latest state of the table.`,
		Example: `  rocklake query "SELECT kind, count(*) FROM events WHERE ts >= '2024-01-01' GROUP BY kind"
  rocklake query "SELECT count(*) FROM events" --snapshot 3 --format json
  rocklake query -c "SELECT * FROM events" --format csv > events.csv
  rocklake query -f report.sql --format jsonl
  echo "SELECT count(*) FROM events" | rocklake query -
  rocklake query "INSERT INTO events SELECT * FROM events WHERE kind = 'click'"
  rocklake query "CREATE TABLE kinds AS SELECT kind, count(*) AS n FROM events GROUP BY kind"
  rocklake query "DELETE FROM events WHERE user_id = 3"`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			qs := querySettings{snapshot: snapshot, explain: explain, noPrune: noPrune}
			if cmd.Flags().Changed("null") {
				qs.null = &null
			}
			if len(args) == 0 && !cmd.Flags().Changed("command") && !cmd.Flags().Changed("file") {
				if in, ok := terminalInput(cmd.InOrStdin()); ok {
					return runPrompt(cmd, g, in, qs)
				}
			}
			script, name, err := queryScript(cmd, args, command, file)
			if err != nil {
				return err
			}
			stmts := sqllex.Split(script)
			if len(stmts) == 0 {
				return usagef("%s holds no SQL statement", name)
			}
			return runStatements(cmd, g, g.format, stmts, name, script, qs)
		},
	}
	cmd.Flags().StringVarP(&command, "command", "c", "", "the SQL to run (instead of the argument)")
	cmd.Flags().StringVarP(&file, "file", "f", "", "read the SQL from this file (- for standard input)")
	addSnapshotFlag(cmd, &snapshot)
	cmd.Flags().BoolVar(&explain, "explain", false, "print, per table, the files and row groups kept, then DuckDB's plan")
	cmd.Flags().BoolVar(&noPrune, "no-prune", false, "read every file (to compare with)")
	cmd.Flags().StringVar(&null, "null", "", "how csv, tsv and the table show NULL (default: empty in csv and tsv, NULL in the table)")
	return markRunsSQL(cmd)
}

// querySettings are query's flags that shape how statements run.
type querySettings struct {
	snapshot         int64 // -1: the latest
	explain, noPrune bool
	null             *string // how the text formats show NULL (nil: their default)
}

// runStatements runs a script's statements in order, each as query runs
// one, printing rows in format; the engine is opened once, for writing
// when a statement writes.
func runStatements(cmd *cobra.Command, g *globals, format string, stmts []sqllex.Statement, name, script string, qs querySettings) error {
	access := reading
	for _, st := range stmts {
		if maintain.IsWrite(st.Text) {
			access = writing
		}
	}
	e, done, err := openEngine(g, access, func(c *catalog.Catalog) { engine.Warm(c, script, qs.snapshot) })
	if err != nil {
		return err
	}
	defer done()
	opts := engine.QueryOptions{Snapshot: qs.snapshot, Explain: qs.explain, NoPruning: qs.noPrune}
	for i, st := range stmts {
		if i > 0 && (format == formatText || format == formatTable || format == formatAligned) {
			fmt.Fprintln(cmd.OutOrStdout())
		}
		run := runQuery
		if maintain.IsWrite(st.Text) {
			run = func(cmd *cobra.Command, e *engine.Engine, format, sql string, opts engine.QueryOptions, _ *string) error {
				return runWrite(cmd, g, e, format, sql, opts)
			}
		}
		if err := run(cmd, e, format, st.Text, opts, qs.null); err != nil {
			if len(stmts) > 1 {
				return fmt.Errorf("%s, statement %d of %d (line %d): %w", name, i+1, len(stmts), st.Line, err)
			}
			return err
		}
	}
	return nil
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
		if format != formatText && format != formatTable && format != formatAligned {
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
	if format != formatText && format != formatTable && format != formatAligned {
		return nil
	}
	src := "DuckDB"
	switch {
	case res.Metadata:
		src = "catalog statistics (no file opened)"
	case res.StatsRows > 0:
		src = fmt.Sprintf("DuckDB and catalog statistics (the part of %s from statistics, not read)", plural(res.StatsRows, "row", "rows"))
	}
	var phases []string
	for _, p := range res.Phases {
		ph := fmt.Sprintf("%s %.2f ms", p.Name, float64(p.Time.Microseconds())/1000)
		if p.Detail != "" {
			ph += " (" + p.Detail + ")"
		}
		phases = append(phases, ph)
	}
	if o := res.Objects; o.Objects > 0 || o.Requests > 0 {
		inPart := ""
		if o.InPart > 0 {
			inPart = fmt.Sprintf(", %d read in part (kept pages only)", o.InPart)
		}
		phases = append(phases, fmt.Sprintf("object storage: %s read, %d from the cache, %d fetched%s, %s, %s",
			plural(o.Objects, "object", "objects"), o.Hits, o.Fetched, inPart, plural(o.Requests, "request", "requests"), plural(o.Bytes, "byte", "bytes")))
	}
	_, err = fmt.Fprintf(cmd.ErrOrStderr(), "(%s in %.3fs, answered by %s; %s)\n", plural(rows.Count(), "row", "rows"), res.Elapsed.Seconds(), src, strings.Join(phases, ", "))
	return err
}

// runWrite runs one write statement (INSERT, CREATE TABLE [AS], COPY ...
// FROM). Its summary goes to stderr in the text formats, so that stdout
// holds only the rows of the script's queries; json and jsonl print it
// as one object.
func runWrite(cmd *cobra.Command, g *globals, e *engine.Engine, format, sql string, opts engine.QueryOptions) error {
	start := time.Now()
	var res *maintain.WriteResult
	var err error
	if g.served != nil {
		// In a server: COPY reads only what its engine may read.
		res, err = g.served.Exec(cmd.Context(), sql, rocklake.ExecOptions{Snapshot: snapshotRef(opts.Snapshot)})
	} else {
		res, err = maintain.Write(cmd.Context(), e, sql, maintain.WriteOptions{Query: engine.QueryOptions{Snapshot: opts.Snapshot}})
	}
	if err != nil {
		return err
	}
	secs := time.Since(start).Seconds()
	var snap any
	if res.Snapshot.ID > 0 {
		snap = res.Snapshot.ID
	}
	if format == formatJSON || format == formatJSONL {
		out := map[string]any{"statement": res.Statement, "table": res.Table, "rows": res.Rows,
			"file_count": res.Files, "snapshot_id": snap, "seconds": secs}
		if res.Statement == "DELETE" || res.Statement == "UPDATE" || res.Statement == "MERGE" {
			out["files_removed"] = res.FilesRemoved
			out["delete_files"] = res.DeleteFiles
		}
		b, err := marshalJSON(out, "", "")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s\n", b)
		return err
	}
	what := fmt.Sprintf("%s %s: %s", res.Statement, res.Table, plural(res.Rows, "row", "rows"))
	switch {
	case res.Snapshot.ID == 0 && res.Statement == "CREATE TABLE" || res.Snapshot.ID == 0 && res.Statement == "CREATE TABLE AS":
		what = fmt.Sprintf("%s %s: the table exists already; nothing done", res.Statement, res.Table)
	case res.Snapshot.ID == 0:
		what += ", nothing committed"
	case res.Statement == "CREATE TABLE":
		what = fmt.Sprintf("CREATE TABLE %s: snapshot %d", res.Table, res.Snapshot.ID)
	case (res.Statement == "DELETE" || res.Statement == "UPDATE" || res.Statement == "MERGE") && res.DeleteFiles > 0:
		what += fmt.Sprintf(" %sd; %s written, %s added, snapshot %d", strings.ToLower(res.Statement),
			plural(res.DeleteFiles, "delete file", "delete files"), plural(res.Files, "file", "files"), res.Snapshot.ID)
	case res.Statement == "DELETE" || res.Statement == "UPDATE" || res.Statement == "MERGE":
		what += fmt.Sprintf(" %sd; %s rewritten into %s, snapshot %d", strings.ToLower(res.Statement),
			plural(res.FilesRemoved, "file", "files"), plural(res.Files, "file", "files"), res.Snapshot.ID)
	default:
		what += fmt.Sprintf(" in %s, snapshot %d", plural(res.Files, "file", "files"), res.Snapshot.ID)
	}
	_, err = fmt.Fprintf(cmd.ErrOrStderr(), "(%s; %.3fs)\n", what, secs)
	return err
}

// snapshotRef is --snapshot as the library takes it (negative: latest).
func snapshotRef(id int64) rocklake.SnapshotRef {
	if id < 0 {
		return rocklake.SnapshotRef{}
	}
	return rocklake.AtSnapshot(id)
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
		printReads(w, tp.Reads)
	}
	fmt.Fprintln(w, res.Explain)
}

// printReads prints how the kept files were read: a count per way, and a
// line for each of the first files read in part.
func printReads(w io.Writer, reads []engine.FileRead) {
	if len(reads) == 0 {
		return
	}
	n := map[string]int{}
	for _, rd := range reads {
		n[rd.How]++
	}
	fmt.Fprintf(w, "  read: %d whole, %d by pages (arrow-go), %d by row ranges (DuckDB)\n", n[engine.ReadWhole], n[engine.ReadPages], n[engine.ReadRowRanges])
	shown := 0
	for _, rd := range reads {
		if rd.How == engine.ReadWhole {
			continue
		}
		if shown == 10 {
			fmt.Fprintf(w, "  …\n")
			break
		}
		shown++
		handed := ""
		if rd.How == engine.ReadPages {
			handed = fmt.Sprintf(" (%d handed to DuckDB)", rd.Handed)
		}
		fmt.Fprintf(w, "  %s: %s, %d of %d rows%s, %d ranges in %d row groups, %d of %d bytes; %s\n",
			rd.Path, rd.How, rd.Rows, rd.FileRows, handed, rd.Ranges, rd.RowGroups, rd.Bytes, rd.FileBytes, rd.Why)
	}
}

// queryScript is the SQL query runs, from exactly one of the argument, -c,
// -f FILE and - (standard input), and a name for it in messages.
func queryScript(cmd *cobra.Command, args []string, command, file string) (script, name string, err error) {
	var given []string
	if len(args) == 1 {
		given = append(given, "an argument")
	}
	if cmd.Flags().Changed("command") {
		given = append(given, "-c")
	}
	if cmd.Flags().Changed("file") {
		given = append(given, "-f")
	}
	switch {
	case len(given) == 0:
		return "", "", usagef("query needs SQL: an argument, -c SQL, -f FILE or - (standard input) (see `rocklake query --help`)")
	case len(given) > 1:
		return "", "", usagef("query takes the SQL once, not from %s", strings.Join(given, " and "))
	}
	read := func(path string) (string, string, error) {
		if path == "-" {
			b, err := io.ReadAll(cmd.InOrStdin())
			if err != nil {
				return "", "", fmt.Errorf("reading standard input: %w", err)
			}
			return string(b), "standard input", nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return "", "", err
		}
		return string(b), path, nil
	}
	switch {
	case cmd.Flags().Changed("file"):
		return read(file)
	case cmd.Flags().Changed("command"):
		return command, "the -c SQL", nil
	case args[0] == "-":
		return read("-")
	}
	return args[0], "the SQL", nil
}
