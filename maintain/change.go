package maintain

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/internal/sqllex"
	"github.com/rocklake/rocklake/internal/writesql"
	"github.com/rocklake/rocklake/prune"
	"github.com/rocklake/rocklake/types"
)

// Row changes: DELETE and UPDATE, copy-on-write.
//
// A change is planned as a query (engine.QueryTarget): the statement
// becomes `SELECT ... FROM target [, USING/FROM list] WHERE condition`,
// whose target reference is pruned by the condition as any query's is
// (statistics, bloom and membership filters), and whose other tables read
// through their views. The target's kept files are read into a temporary
// table (targetTable), every row numbered (ridCol) and marked with its
// file (fileCol); DuckDB evaluates the condition, and an UPDATE's
// expressions, over it. The rows matched are the change. Each file holding
// one of them is rewritten (rewrite.go): its other rows, and an UPDATE's
// new rows, are laid out by the table's sort key and layout, written,
// checked against the rows read and registered in the snapshot that
// retires the files they replace; a file whose every row is deleted is
// retired with no successor. Files the condition does not match keep
// their bytes and their statistics. The new files' statistics come from
// their footers, exact as any written file's.
//
// Two changes to the same file conflict: the second's commit finds its
// file retired and fails with ErrWriteRaced (40001), as a change racing
// an optimize of its files does; changes to different files of one table,
// and appends, commute (the commit is rebuilt on the newer state). Rows
// appended after the snapshot a change read are not changed by it.

const (
	targetTable = "__rocklake_target"
	changeHits  = "__rocklake_hits"
	fileCol     = "__rocklake_file"
	ridCol      = "__rocklake_rid"
)

// ErrRowMatchedTwice is an UPDATE whose FROM list matches a row of its
// table more than once: DuckDB would apply one of the new values, in no
// defined order.
var ErrRowMatchedTwice = errors.New("a row to update matched more than once")

// updateCol is the name of an UPDATE's i-th new value in changeHits.
func updateCol(i int) string { return fmt.Sprintf("__rocklake_u%d", i) }

func change(ctx context.Context, e *engine.Engine, stmt *writesql.Statement, o WriteOptions, stage *Staged) (*WriteResult, error) {
	verb := stmt.Kind.Verb()
	if stage != nil {
		return nil, fmt.Errorf("%s inside a transaction: %w yet: run it on its own (one statement is one snapshot)", verb, writesql.ErrUnsupported)
	}
	cat := e.Catalog()
	st, err := openTable(cat, catalog.Latest, stmt.Table)
	if err != nil {
		return nil, err
	}
	defer st.r.Close()
	top := catalog.TopLevel(st.cols)
	for _, c := range top {
		if strings.HasPrefix(strings.ToLower(c.Name), "__rocklake") {
			return nil, fmt.Errorf("%s: table %q has a column named %q: names starting __rocklake are rocklake's own inside a change", verb, st.t.Name, c.Name)
		}
	}
	sets := map[int]string{}
	for _, a := range stmt.Sets {
		i := slices.IndexFunc(top, func(c catalog.Column) bool { return types.SameIdent(c.Name, a.Column) })
		if i < 0 {
			return nil, fmt.Errorf("UPDATE: table %q has no column %q: %w", st.t.Name, a.Column, catalog.ErrNoSuchColumn)
		}
		if top[i].Partition != "" {
			return nil, fmt.Errorf("UPDATE: column %q of table %q is a Hive partition column, whose values its files' directories hold: it cannot be set", top[i].Name, st.t.Name)
		}
		sets[i] = a.Expr
	}
	q := sqllex.QuoteName(stmt.Qualifier())
	list := q + "." + ridCol + " AS " + ridCol
	if stmt.Kind == writesql.Update {
		for i, c := range top {
			x, ok := sets[i]
			if !ok {
				x = q + "." + sqllex.QuoteName(c.Name)
			} else {
				x = "(" + x + "\n)"
			}
			list += ", " + x + " AS " + updateCol(i)
		}
	}
	query, at := stmt.Rows(list)
	res := &WriteResult{Statement: verb, Table: st.t.Name}
	opts := o.Query
	opts.Snapshot = st.r.Snapshot().ID
	run := func(ctx context.Context, conn *sql.Conn, views, query string, kept []prune.KeptFile) error {
		return runChange(ctx, e, conn, st, stmt, views, query, kept, res)
	}
	qr, err := e.QueryTarget(ctx, query, engine.Target{At: at, Name: "temp." + targetTable}, opts, run)
	res.Query = qr
	if err != nil {
		return nil, err
	}
	mergeAfter(ctx, e, res, nil, o)
	return res, nil
}

func runChange(ctx context.Context, e *engine.Engine, conn *sql.Conn, st *tableState, stmt *writesql.Statement, views, query string, kept []prune.KeptFile, res *WriteResult) error {
	cleanup := context.WithoutCancel(ctx)
	defer conn.ExecContext(cleanup, "DROP TABLE IF EXISTS temp."+targetTable+"; DROP TABLE IF EXISTS temp."+changeHits+"; DROP TABLE IF EXISTS temp."+writeTable)
	byID := map[int64]catalog.DataFile{}
	for _, f := range st.files {
		byID[f.ID] = f
	}
	files := make([]catalog.DataFile, 0, len(kept))
	for _, k := range kept {
		f, ok := byID[k.FileID]
		if !ok {
			return fmt.Errorf("%s: kept file %s is not a live file of table %q at snapshot %d", res.Statement, k.Path, st.t.Name, st.r.Snapshot().ID)
		}
		files = append(files, f)
	}
	release, err := fillTarget(ctx, e, conn, st, files)
	defer release()
	if err != nil {
		return err
	}
	top := catalog.TopLevel(st.cols)
	verb := res.Statement
	switch stmt.Kind {
	case writesql.Delete:
		if _, err := conn.ExecContext(ctx, views+"CREATE OR REPLACE TEMP TABLE "+changeHits+" AS SELECT DISTINCT "+ridCol+" FROM (\n"+query+"\n)"); err != nil {
			return changeError(err, st.t.Name, top)
		}
	case writesql.Update:
		ddl, err := tempTableSQL(st.cols)
		if err != nil {
			return err
		}
		if _, err := conn.ExecContext(ctx, ddl); err != nil {
			return fmt.Errorf("UPDATE: the table's columns: %w", err)
		}
		if _, err := conn.ExecContext(ctx, views+"CREATE OR REPLACE TEMP TABLE "+changeHits+" AS "+query+"\n"); err != nil {
			return changeError(err, st.t.Name, top)
		}
		var n, distinct int64
		if err := conn.QueryRowContext(ctx, "SELECT count(*), count(DISTINCT "+ridCol+") FROM temp."+changeHits).Scan(&n, &distinct); err != nil {
			return err
		}
		if n != distinct {
			return fmt.Errorf("UPDATE: %w: %d rows of table %q match more than one row of the FROM list, so their new values are not defined; make the condition match each row at most once", ErrRowMatchedTwice, n-distinct, st.t.Name)
		}
		vals := make([]string, len(top))
		for i := range top {
			vals[i] = updateCol(i)
		}
		// The INSERT casts each new value to its column's type and checks
		// NOT NULL, as DuckDB's UPDATE does.
		if _, err := conn.ExecContext(ctx, "INSERT INTO temp."+writeTable+" SELECT "+strings.Join(vals, ", ")+" FROM temp."+changeHits); err != nil {
			return changeError(err, st.t.Name, top)
		}
	}
	var n int64
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM temp."+changeHits).Scan(&n); err != nil {
		return err
	}
	res.Rows = n
	if n == 0 {
		return nil
	}
	hit := "SELECT " + ridCol + " FROM temp." + changeHits
	rows, err := conn.QueryContext(ctx, "SELECT DISTINCT "+fileCol+" FROM temp."+targetTable+" WHERE "+ridCol+" IN ("+hit+") ORDER BY 1")
	if err != nil {
		return err
	}
	touched := map[int64]bool{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		touched[id] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	var affected []catalog.DataFile
	var ids []string
	for _, f := range files {
		if touched[f.ID] {
			affected = append(affected, f)
			ids = append(ids, fmt.Sprint(f.ID))
		}
	}
	names := make([]string, len(top))
	for i, c := range top {
		names[i] = sqllex.QuoteName(c.Name)
	}
	src := fmt.Sprintf("SELECT %s FROM temp.%s WHERE %s IN (%s) AND %s NOT IN (%s)",
		strings.Join(names, ", "), targetTable, fileCol, strings.Join(ids, ", "), ridCol, hit)
	if stmt.Kind == writesql.Update {
		src += " UNION ALL SELECT * FROM temp." + writeTable
	}
	sp := rewriteSpec{conn: conn, what: strings.ToLower(verb), src: slotsOf(st.cols, src),
		sizing: writeSizing(st.t.WriteOptions), place: writePlace(e.Catalog(), st), bytesPerRow: liveBytesPerRow(st)}
	if sp.order, sp.curve, err = writeOrder(st); err != nil {
		return err
	}
	out, err := rewrite(ctx, e, st, affected, sp)
	if err != nil {
		return changeRaced(e.Catalog(), st, err)
	}
	res.Files, res.FilesRemoved, res.Snapshot = out.FilesAfter, len(affected), out.Snapshot
	return nil
}

// fillTarget reads the target's kept files into targetTable: the table's
// top-level columns as queries read them, each row's file id and a number
// unique among the rows. The files are checked to be those registered;
// release unpins the local copies of objects.
func fillTarget(ctx context.Context, e *engine.Engine, conn *sql.Conn, st *tableState, files []catalog.DataFile) (release func(), err error) {
	var unpin []func()
	release = func() {
		for _, u := range unpin {
			u()
		}
	}
	read := func(f catalog.DataFile) (string, error) {
		path := f.Location(st.t)
		if catalog.IsObject(path) {
			local, rel, err := e.ObjectCopy(ctx, path, f.FileSizeBytes, f.ETag)
			if err != nil {
				return "", fmt.Errorf("reading %s: %w", path, err)
			}
			unpin = append(unpin, rel)
			path = local
		} else if err := engine.CheckFile(st.t, f); err != nil {
			return "", err
		}
		return e.ReadTableFilesSQL(st.r, st.t, st.cols, []catalog.DataFile{f}, []string{path})
	}
	// An empty table of the right columns first: the files then go in one
	// at a time, numbered after the rows before them.
	var shape string
	if len(files) > 0 {
		if shape, err = read(files[0]); err != nil {
			return release, err
		}
	} else {
		shape = e.ReadFilesSQL(st.t, st.cols, nil)
	}
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("CREATE OR REPLACE TEMP TABLE %s AS SELECT src.*, 0::BIGINT AS %s, 0::BIGINT AS %s FROM (%s) AS src LIMIT 0",
		targetTable, fileCol, ridCol, shape)); err != nil {
		return release, fmt.Errorf("reading table %q: %w", st.t.Name, err)
	}
	var base int64
	for i, f := range files {
		sel := shape
		if i > 0 {
			if sel, err = read(f); err != nil {
				return release, err
			}
		}
		r, err := conn.ExecContext(ctx, fmt.Sprintf("INSERT INTO temp.%s SELECT src.*, %d, %d + row_number() OVER () FROM (%s) AS src",
			targetTable, f.ID, base, sel))
		if err != nil {
			return release, fmt.Errorf("reading %s: %w", f.Location(st.t), err)
		}
		n, err := r.RowsAffected()
		if err != nil {
			return release, err
		}
		base += n
	}
	return release, nil
}

// changeError is a DuckDB error of a change's statement in the user's
// terms: the temporary tables it ran over named by the table, an UPDATE's
// values by their columns, and rocklake's own columns left out of
// DuckDB's suggestions.
func changeError(err error, table string, top []catalog.Column) error {
	msg := err.Error()
	if !strings.Contains(msg, "__rocklake_") {
		return err
	}
	if i := strings.Index(msg, "\n\nLINE "); i >= 0 {
		msg = msg[:i] // quotes the query rocklake made, not the user's
	}
	for _, c := range []string{fileCol, ridCol} {
		msg = strings.ReplaceAll(msg, `, "`+c+`"`, "")
		msg = strings.ReplaceAll(msg, `"`+c+`", `, "")
	}
	for i := len(top) - 1; i >= 0; i-- { // u12 before u1
		msg = strings.ReplaceAll(msg, "source column "+updateCol(i), "the value for column "+sqllex.QuoteName(top[i].Name))
		msg = strings.ReplaceAll(msg, updateCol(i), sqllex.QuoteName(top[i].Name))
	}
	msg = strings.ReplaceAll(msg, targetTable, table)
	msg = strings.ReplaceAll(msg, writeTable, table)
	return errors.New(msg)
}

// changeRaced says why a change's commit failed when another writer
// retired a file it rewrote (a change or an optimize of the same rows),
// or dropped or altered its table: nothing was committed and the
// statement may be run again.
func changeRaced(cat *catalog.Catalog, st *tableState, err error) error {
	if rerr := raced(cat, st.t, st.cols, err); rerr != err {
		return rerr
	}
	if errors.Is(err, catalog.ErrNoSuchFile) || errors.Is(err, catalog.ErrConflict) {
		return fmt.Errorf("%w: another writer changed or rewrote a file this statement changes; nothing was committed, run the statement again (%v)", ErrWriteRaced, err)
	}
	return err
}
