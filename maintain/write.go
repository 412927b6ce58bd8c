package maintain

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/internal/curve"
	"github.com/rocklake/rocklake/internal/pathgate"
	"github.com/rocklake/rocklake/internal/sqllex"
	"github.com/rocklake/rocklake/internal/writesql"
	"github.com/rocklake/rocklake/kv"
	"github.com/rocklake/rocklake/types"
)

// Writes in SQL: INSERT, CREATE TABLE [AS] and COPY ... FROM (and DELETE
// and UPDATE: change.go).
//
// DuckDB runs the statement itself, over a temporary table made with the
// target's columns (their types, NOT NULL, and their defaults), the
// statement's text kept but for the target's name: column lists, BY
// NAME, VALUES, DEFAULT VALUES, casts, constraint errors and COPY's
// options are DuckDB's. An INSERT's or a CREATE TABLE AS's query is
// planned as any query is (engine.QueryInto): its tables are pruned and
// their kept files checked. The rows then take the rewrite's road
// (rewrite.go): laid out by the table's declared layout, cut into files,
// written with page indexes and bloom filters, compared with the rows
// read, and registered through ingest (statistics from the footers,
// membership filters) as rocklake's own files, in one snapshot.

// writeTable is the temporary table a write's rows go to first.
const writeTable = "__rocklake_write"

// ErrNotWrite is returned by Write for a statement that is not one of the
// writes it runs.
var ErrNotWrite = writesql.ErrNotWrite

// IsWrite reports whether a statement is one Write runs (INSERT, CREATE
// TABLE, COPY ... FROM, DELETE, UPDATE), well formed or not: the caller sends it to Write
// rather than to a query.
func IsWrite(text string) bool { return writesql.Is(text) }

// WriteOptions steer a write.
type WriteOptions struct {
	// Query tunes how an INSERT's or CREATE TABLE AS's query is planned;
	// its Snapshot is the snapshot the query reads (the rows are added to
	// the latest).
	Query engine.QueryOptions
	// ReadDirs, when set, are the only directories COPY ... FROM may read
	// (a server's sandbox), checked after links are followed.
	ReadDirs []string
	// Stdin is a local file holding COPY ... FROM STDIN's data, which the
	// caller received; read whatever the gate says.
	Stdin string
	// NoMerge leaves the table's small written files as they are after
	// the write (see mergeWrites).
	NoMerge bool
}

// WriteResult says what a write did.
type WriteResult struct {
	Statement string `json:"statement"` // INSERT, CREATE TABLE AS, CREATE TABLE, COPY
	Table     string `json:"table"`
	// Rows counts the rows written; for DELETE and UPDATE, the rows
	// deleted or updated.
	Rows  int64 `json:"rows"`
	Files int   `json:"files"`
	// FilesRemoved counts the files a DELETE or UPDATE retired (their
	// remaining rows rewritten into Files new ones).
	FilesRemoved int `json:"files_removed,omitempty"`
	// DeleteFiles counts the delete files a change wrote under
	// merge-on-read (catalog.DeleteFile), one per file it took rows out
	// of, which stays in place.
	DeleteFiles int `json:"delete_files,omitempty"`
	// Snapshot is the snapshot the write made; zero when it made none (no
	// rows, or CREATE TABLE IF NOT EXISTS of a table that exists).
	Snapshot catalog.Snapshot `json:"snapshot"`
	// Query is how the statement's query was planned; nil without one.
	Query *engine.Result `json:"-"`
	// Merged is how many small written files were merged after the write,
	// in a snapshot of their own; MergeError says why a merge failed (the
	// write stands).
	Merged     int    `json:"merged_files,omitempty"`
	MergeError string `json:"merge_error,omitempty"`
}

// Write runs one write statement and commits its rows in one snapshot.
// Nothing is committed, and no file is left, when it fails.
func Write(ctx context.Context, e *engine.Engine, text string, o WriteOptions) (*WriteResult, error) {
	return write(ctx, e, text, o, nil)
}

func write(ctx context.Context, e *engine.Engine, text string, o WriteOptions, stage *Staged) (*WriteResult, error) {
	stmt, err := writesql.Parse(text)
	if err != nil {
		return nil, err
	}
	if stmt.Kind == writesql.Delete || stmt.Kind == writesql.Update || stmt.Kind == writesql.Merge {
		return change(ctx, e, stmt, o, stage)
	}
	if stage != nil && (stmt.Kind == writesql.CreateTable || stmt.Kind == writesql.CreateAs) {
		return nil, fmt.Errorf("%s inside a transaction: %w: create the table on its own, then write to it in the transaction", stmt.Kind.Verb(), writesql.ErrUnsupported)
	}
	res := &WriteResult{Statement: stmt.Kind.Verb(), Table: stmt.Table}
	cat := e.Catalog()
	if stmt.Kind == writesql.CreateTable || stmt.Kind == writesql.CreateAs {
		exists, err := tableExists(cat, stmt.Table)
		if err != nil {
			return nil, err
		}
		if exists {
			if stmt.IfNotExists {
				return res, nil
			}
			return nil, fmt.Errorf("table %q: %w", stmt.Table, catalog.ErrDuplicate)
		}
	}
	if stmt.Kind == writesql.CreateTable {
		defs, err := createColumns(stmt.Columns)
		if err != nil {
			return nil, err
		}
		tx, err := cat.Begin()
		if err != nil {
			return nil, err
		}
		tx.CreateTable(stmt.Table, defs)
		if res.Snapshot, err = tx.Commit(); err != nil {
			return nil, err
		}
		return res, nil
	}

	var st *tableState
	if stmt.Kind != writesql.CreateAs {
		if st, err = openTable(cat, catalog.Latest, stmt.Table); err != nil {
			return nil, err
		}
		defer st.r.Close()
	}
	run := func(ctx context.Context, conn *sql.Conn, views, query string) error {
		defer conn.ExecContext(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS temp."+writeTable)
		sp := rewriteSpec{conn: conn, what: strings.ToLower(strings.Fields(stmt.Kind.Verb())[0]), stage: stage}
		var stmtSQL string
		switch stmt.Kind {
		case writesql.CreateAs:
			stmtSQL = views + "CREATE OR REPLACE TEMP TABLE " + writeTable + " AS " + query + "\n"
		case writesql.Insert, writesql.Copy:
			ddl, err := tempTableSQL(st.cols)
			if err != nil {
				return err
			}
			if _, err := conn.ExecContext(ctx, ddl); err != nil {
				return fmt.Errorf("%s: the table's columns: %w", res.Statement, err)
			}
			path := ""
			if stmt.Kind == writesql.Copy {
				if path, err = copySource(stmt, o); err != nil {
					return err
				}
			}
			stmtSQL = views + stmt.Over("temp."+writeTable, query, path)
		}
		if _, err := conn.ExecContext(ctx, stmtSQL); err != nil {
			return changeError(err, stmt.Table, nil) // DuckDB named the temporary table; its LINE quote is rocklake's statement
		}
		if stmt.Kind == writesql.CreateAs {
			defs, err := resultColumns(ctx, conn)
			if err != nil {
				return err
			}
			cols, err := catalog.PlanColumns(defs)
			if err != nil {
				return err
			}
			r, err := cat.Read(catalog.Latest)
			if err != nil {
				return err
			}
			defer r.Close()
			st = &tableState{r: r, t: catalog.Table{Name: stmt.Table}, cols: cols}
			sp.create = defs
		}
		sp.src = slotsOf(st.cols, "SELECT * FROM temp."+writeTable)
		sp.sizing = writeSizing(st.t.WriteOptions)
		if sp.order, sp.curve, err = writeOrder(st); err != nil {
			return err
		}
		sp.place, sp.bytesPerRow = writePlace(cat, st), liveBytesPerRow(st)
		out, err := rewrite(ctx, e, st, nil, sp)
		if err != nil {
			if sp.create == nil {
				return raced(cat, st.t, st.cols, err)
			}
			return err
		}
		res.Rows, res.Files, res.Snapshot = out.Rows, out.FilesAfter, out.Snapshot
		if out.Rows == 0 && sp.create == nil {
			res.Snapshot = catalog.Snapshot{}
		}
		return nil
	}
	if stmt.Query == "" {
		conn, err := e.DB().Conn(ctx)
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		if err := run(ctx, conn, "", ""); err != nil {
			return nil, err
		}
		conn.Close()
		mergeAfter(ctx, e, res, stage, o)
		return res, nil
	}
	q, err := e.QueryInto(ctx, stmt.Query, o.Query, run)
	res.Query = q
	if err != nil {
		if qe := (*engine.QueryError)(nil); errors.As(err, &qe) {
			qe.Within(stmt.Text(), stmt.QueryAt())
		}
		return nil, err
	}
	mergeAfter(ctx, e, res, stage, o)
	return res, nil
}

// mergeAfter merges small written files after a committed write (see
// mergeWrites); a merge that fails leaves the write as committed and says
// why in the result. A write that added no data file (a DELETE that wrote
// delete files) left nothing new to merge.
func mergeAfter(ctx context.Context, e *engine.Engine, res *WriteResult, stage *Staged, o WriteOptions) {
	if stage != nil || o.NoMerge || res.Snapshot.ID == 0 || res.Rows == 0 || res.Files == 0 || res.Statement == "CREATE TABLE AS" {
		return
	}
	n, err := mergeWrites(ctx, e, res.Table)
	res.Merged = n
	if err != nil {
		res.MergeError = err.Error()
	}
}

// writeOrder is the order a write lays its rows out in: the table's
// declared sort key (by its slots), unless its options turn sorting off.
func writeOrder(st *tableState) ([]string, curve.Kind, error) {
	k := st.t.SortedBy
	if k == nil || st.t.WriteOptions.Unsorted {
		return nil, "", nil
	}
	top := catalog.TopLevel(st.cols)
	var order []string
	for _, id := range k.Columns {
		i := slices.IndexFunc(top, func(c catalog.Column) bool { return c.ID == id })
		if i < 0 {
			return nil, "", fmt.Errorf("table %q: its sort key names column %d, which it lacks", st.t.Name, id)
		}
		order = append(order, slot(i))
	}
	return order, curve.Kind(k.Curve), nil
}

func tableExists(cat *catalog.Catalog, name string) (bool, error) {
	r, err := cat.Read(catalog.Latest)
	if err != nil {
		return false, err
	}
	defer r.Close()
	_, err = r.Table(name)
	if errors.Is(err, catalog.ErrNoSuchTable) {
		return false, nil
	}
	return err == nil, err
}

// tempTableSQL makes the temporary table a write's rows go to: the
// table's top-level columns, their types, NOT NULL, and their defaults.
func tempTableSQL(cols []catalog.Column) (string, error) {
	var defs []string
	for _, c := range catalog.TopLevel(cols) {
		dt := types.DuckDBName(c.Type)
		if dt == "" {
			return "", fmt.Errorf("column %q has a type (%s) DuckDB cannot hold", c.Name, c.Type)
		}
		d := sqllex.QuoteName(c.Name) + " " + dt
		if !c.Nullable {
			d += " NOT NULL"
		}
		if c.Default.Known {
			d += " DEFAULT " + defaultSQL(c)
		}
		defs = append(defs, d)
	}
	return "CREATE OR REPLACE TEMP TABLE " + writeTable + " (" + strings.Join(defs, ", ") + ")", nil
}

// resultColumns are a CREATE TABLE AS's columns: the query's, in DuckDB's
// types.
func resultColumns(ctx context.Context, conn *sql.Conn) ([]catalog.ColumnDef, error) {
	rows, err := conn.QueryContext(ctx, "SELECT column_name, column_type FROM (DESCRIBE temp."+writeTable+")")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var defs []catalog.ColumnDef
	for rows.Next() {
		var d catalog.ColumnDef
		if err := rows.Scan(&d.Name, &d.Type); err != nil {
			return nil, err
		}
		if _, err := types.ParseType(d.Type); err != nil {
			return nil, fmt.Errorf("CREATE TABLE AS: column %q is a %s, which a rocklake table cannot hold (cast it in the query): %w", d.Name, d.Type, err)
		}
		defs = append(defs, d)
	}
	return defs, rows.Err()
}

// copySource is the file COPY ... FROM reads: STDIN's staged data, or the
// path named, which a gated write must find under a readable directory
// once its links are followed (DuckDB compares prefixes only).
func copySource(stmt *writesql.Statement, o WriteOptions) (string, error) {
	if stmt.Stdin {
		if o.Stdin == "" {
			return "", fmt.Errorf("COPY %s FROM STDIN: no data was given (COPY FROM STDIN reads a PostgreSQL client's data; give a path here)", stmt.Table)
		}
		return o.Stdin, nil
	}
	g := pathgate.New(o.ReadDirs)
	if g.Open() {
		return stmt.Path, nil
	}
	if strings.ContainsAny(stmt.Path, "*?[") {
		return "", fmt.Errorf("COPY %s FROM %q: this server reads one named file per COPY, not a pattern", stmt.Table, stmt.Path)
	}
	abs, err := filepath.Abs(stmt.Path)
	if err != nil {
		return "", err
	}
	resolved, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("COPY %s FROM %q: %w", stmt.Table, stmt.Path, err)
	}
	if err := g.CheckNamed(stmt.Path, resolved); err != nil {
		return "", fmt.Errorf("COPY %s FROM: %w", stmt.Table, err)
	}
	if fi, err := os.Stat(resolved); err != nil {
		return "", err
	} else if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("COPY %s FROM %q: not a regular file", stmt.Table, stmt.Path)
	}
	return resolved, nil
}

// writePlace is where a write's files go when the catalog has no rewrite
// root of its own: beside the table's live files (their object prefix,
// for objects), or under the catalog's object data root.
func writePlace(cat *catalog.Catalog, st *tableState) string {
	for _, f := range st.files {
		return f.Location(st.t)
	}
	if root := cat.DataRoot(); catalog.IsObject(root) {
		return strings.TrimSuffix(root, "/") + "/"
	}
	return ""
}

// liveBytesPerRow guesses the size of a write's rows from the table's
// live files, before any new file is measured.
func liveBytesPerRow(st *tableState) float64 {
	var b, n int64
	for _, f := range st.files {
		b, n = b+f.FileSizeBytes, n+f.RecordCount
	}
	if n == 0 {
		return 64
	}
	return float64(b) / float64(n)
}

// createColumns reads CREATE TABLE's column list: the catalog's column
// syntax (name type, ...), each column optionally NOT NULL or NULL.
func createColumns(list string) ([]catalog.ColumnDef, error) {
	var parts []string
	var notNull []bool
	masked := sqllex.Mask(list)
	depth, from := 0, 0
	cut := func(to int) error {
		part, m := list[from:to], strings.TrimRight(masked[from:to], " \t\r\n")
		part = part[:len(m)]
		up := strings.ToUpper(m)
		nn := false
		switch {
		case strings.HasSuffix(up, " NOT NULL"):
			part, nn = part[:len(part)-len(" NOT NULL")], true
		case strings.HasSuffix(up, " NULL"):
			part = part[:len(part)-len(" NULL")]
		}
		for _, w := range []string{"PRIMARY", "UNIQUE", "CHECK", "DEFAULT", "REFERENCES", "COLLATE", "GENERATED", "CONSTRAINT"} {
			if f := strings.Fields(strings.ToUpper(sqllex.Mask(part))); len(f) > 0 && (f[0] == w || strings.Contains(" "+strings.Join(f[1:], " ")+" ", " "+w+" ")) {
				return fmt.Errorf("CREATE TABLE: %s in %q: %w (a column is a name, a type and optionally NOT NULL)", w, strings.TrimSpace(list[from:to]), writesql.ErrUnsupported)
			}
		}
		parts, notNull = append(parts, part), append(notNull, nn)
		from = to + 1
		return nil
	}
	for i := 0; i < len(masked); i++ {
		switch masked[i] {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				if err := cut(i); err != nil {
					return nil, err
				}
			}
		}
	}
	if err := cut(len(list)); err != nil {
		return nil, err
	}
	defs, err := catalog.ParseColumnDefs(strings.Join(parts, ","))
	if err != nil {
		return nil, err
	}
	if len(defs) != len(parts) {
		return nil, fmt.Errorf("CREATE TABLE: %d columns read from %d definitions", len(defs), len(parts))
	}
	for i := range defs {
		defs[i].NotNull = notNull[i]
	}
	return defs, nil
}

// Small writes. A stream of small INSERTs would leave a file per insert
// for ever; instead, after each committed write the table's small files
// that writes made (rocklake's own) are merged in tiers, as a
// log-structured merge does: files of up to 8^k rows are tier k, and once
// a tier holds mergeFanout files they become one file of the tier above.
// A row is rewritten about log8(n) times over n single-row inserts, and a
// table holds at most mergeFanout-1 small files per tier. Files of one
// declared-layout value and one Hive partition merge only with each other,
// so that a merge never spreads over more files than it read. The merge is a snapshot of its
// own, after the write's.
const mergeFanout = 8

// smallFileRows: files with fewer rows take part in the tiers.
func smallFileRows(o catalog.WriteOptions) int64 {
	if o.TargetFileRows > 0 {
		return max(o.TargetFileRows/mergeFanout, 1)
	}
	return 1_000_000 / mergeFanout
}

func tierOf(rows int64) int {
	k := 0
	for n := int64(mergeFanout); rows >= n; n *= mergeFanout {
		k++
	}
	return k
}

// mergeWrites merges a full tier of the table's small written files, if
// one is full; it reports how many files it merged.
func mergeWrites(ctx context.Context, e *engine.Engine, table string) (int, error) {
	st, err := openTable(e.Catalog(), catalog.Latest, table)
	if err != nil {
		return 0, err
	}
	defer st.r.Close()
	small := smallFileRows(st.t.WriteOptions)
	groups := map[string][][]catalog.DataFile{} // by layout values, then tier
	for _, f := range st.files {
		if f.Owner != catalog.OwnerRocklake || f.RecordCount >= small {
			continue
		}
		key := fmt.Sprint(f.LayoutValues, f.PartitionValues)
		k := tierOf(f.RecordCount)
		for len(groups[key]) <= k {
			groups[key] = append(groups[key], nil)
		}
		groups[key][k] = append(groups[key][k], f)
	}
	for _, tiers := range groups {
		for k, files := range tiers {
			if len(files) < mergeFanout {
				continue
			}
			// The tier's files and every smaller one of the group: the
			// merged file starts the tier above.
			var in []catalog.DataFile
			for _, lower := range tiers[:k+1] {
				in = append(in, lower...)
			}
			order, cv, err := writeOrder(st)
			if err != nil {
				return 0, err
			}
			if _, err := rewrite(ctx, e, st, in, rewriteSpec{order: order, curve: cv, sizing: writeSizing(st.t.WriteOptions), what: "compact"}); err != nil {
				return 0, err
			}
			return len(in), nil
		}
	}
	return 0, nil
}

// writeSizing is how large a table's writes cut their files.
func writeSizing(o catalog.WriteOptions) sizing {
	return sizing{rows: o.TargetFileRows, bytes: o.TargetFileBytes}
}

// ErrWriteRaced reports a write whose table was dropped or altered while
// it ran: nothing was committed, and the statement may be run again.
var ErrWriteRaced = fmt.Errorf("%w: the table changed while the write ran", catalog.ErrConflict)

// raced says why a write's commit failed when its table is no longer the
// table it wrote for (dropped, made again, or its columns changed): a
// retry will write for the table as it is now. Any other failure is
// returned as it was.
func raced(cat *catalog.Catalog, t catalog.Table, cols []catalog.Column, err error) error {
	if mayHaveLanded(err) {
		return err // never "nothing was committed" of a commit that may have landed
	}
	r, rerr := cat.Read(catalog.Latest)
	if rerr != nil {
		return err
	}
	defer r.Close()
	now, terr := r.Table(t.Name)
	how := ""
	switch {
	case errors.Is(terr, catalog.ErrNoSuchTable) || terr == nil && now.ID != t.ID:
		how = "dropped"
	case terr != nil:
		return err
	default:
		nc, cerr := r.Columns(t.ID)
		if cerr != nil {
			return err
		}
		if !sameColumns(nc, cols) {
			how = "altered"
		}
	}
	if how == "" {
		return err
	}
	return fmt.Errorf("%w: table %q was %s while the write ran; nothing was committed, run the statement again (%v)", ErrWriteRaced, t.Name, how, err)
}

// errLanded marks an error a write returns after its commit landed: its
// snapshot reads what the write wrote, which must stay.
var errLanded = errors.New("the snapshot was made")

// mayHaveLanded says whether err comes after a commit that landed or may
// have (kv.ErrUnknownOutcome): the caller keeps every file the commit
// names, and does not say that nothing was committed.
func mayHaveLanded(err error) bool {
	return errors.Is(err, kv.ErrUnknownOutcome) || errors.Is(err, errLanded)
}

func sameColumns(a, b []catalog.Column) bool {
	return slices.EqualFunc(a, b, func(x, y catalog.Column) bool {
		return x.ID == y.ID && x.Name == y.Name && x.Type.DuckLakeName() == y.Type.DuckLakeName() && x.Nullable == y.Nullable
	})
}
