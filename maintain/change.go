package maintain

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
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
// table (targetTable), every row numbered (ridCol, its file's id in the
// high half) and marked with its file (fileCol); DuckDB evaluates the
// condition, and an UPDATE's expressions, over it. (A DELETE or UPDATE that
// writes delete files reads its few files through a view of that name
// instead: it reads the target once, and the view reads only the columns
// and row groups the condition needs.) The rows matched are the change.
// Under merge-on-read each file holding one of them gets a delete file of
// their positions (deletefile.go). Else each file holding
// one of them is rewritten (rewrite.go) into a successor of its own, so
// that no new file spans more than the file it replaces did: its other
// rows, in the table's sort key order and cut by its layout, written,
// checked against the rows read and registered in the snapshot that
// retires the files they replace (new rows, an UPDATE's or a MERGE's, go
// to new files of their own, as an INSERT's); a file whose every row is deleted is
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
	kindCol     = "__rocklake_kind"   // a MERGE's row: 'm' matched, 'n' a source row unmatched, 's' a target row unmatched
	actionCol   = "__rocklake_action" // the MERGE clause that applies (1-based), 0 for none
	groupCol    = "__rocklake_g"      // the file a rewritten row came from: files are rewritten one for one
)

// ErrRowMatchedTwice is an UPDATE whose FROM list matches a row of its
// table more than once: DuckDB would apply one of the new values, in no
// defined order.
var ErrRowMatchedTwice = errors.New("a row to update matched more than once")

// updateCol is the name of an UPDATE's i-th new value in changeHits.
func updateCol(i int) string { return fmt.Sprintf("__rocklake_u%d", i) }

// mergeCol is the name, in changeHits, of MERGE clause i's j-th value: the
// new value of column j (UPDATE SET) or its j-th VALUES expression.
func mergeCol(i, j int) string { return fmt.Sprintf("__rocklake_m%d_%d", i, j) }

// setExprs are the new values of every top-level column under an UPDATE
// SET's assignments: the expression assigned, or the column as it is
// (qualified by q).
func setExprs(st *tableState, q, verb string, sets []writesql.Assignment) ([]string, error) {
	top := catalog.TopLevel(st.cols)
	out := make([]string, len(top))
	for i, c := range top {
		out[i] = q + "." + sqllex.QuoteName(c.Name)
	}
	for _, a := range sets {
		i := slices.IndexFunc(top, func(c catalog.Column) bool { return types.SameIdent(c.Name, a.Column) })
		if i < 0 {
			return nil, fmt.Errorf("%s: table %q has no column %q: %w", verb, st.t.Name, a.Column, catalog.ErrNoSuchColumn)
		}
		out[i] = "(" + a.Expr + "\n)"
	}
	return out, nil
}

// defaultSQL is a column's default as SQL, NULL without one.
func defaultSQL(c catalog.Column) string {
	if !c.Default.Known {
		return "NULL"
	}
	return "CAST('" + strings.ReplaceAll(c.Default.V, "'", "''") + "' AS " + types.DuckDBName(c.Type) + ")"
}

// matchedOnce fails with ErrRowMatchedTwice when a target row appears
// twice among changeHits' rows (those where says): its new value would
// not be defined.
func matchedOnce(ctx context.Context, conn *sql.Conn, where, verb, table, what string) error {
	var n, distinct int64
	if err := conn.QueryRowContext(ctx, "SELECT count(*), count(DISTINCT "+ridCol+") FROM temp."+changeHits+where).Scan(&n, &distinct); err != nil {
		return err
	}
	if n != distinct {
		return fmt.Errorf("%s: %w: %d rows of table %q match more than one row %s, so what becomes of them is not defined; make the condition match each row at most once", verb, ErrRowMatchedTwice, n-distinct, table, what)
	}
	return nil
}

// mergeQuery is the query that finds a MERGE's rows, one UNION ALL of up
// to three parts with the same columns (kindCol, ridCol, actionCol, then
// each clause's values, mergeCol):
//
//	m  SELECT ... FROM target, source WHERE on         every matched pair
//	n  SELECT ... FROM source WHERE NOT EXISTS (...)   source rows no target row matches
//	s  SELECT ... FROM target WHERE NOT EXISTS (...)   target rows no source row matches
//
// The target's reference in m is the one pruned (by on): a target row in
// a pruned file cannot match, so n reads the kept rows (targetTable) as
// the whole target; s needs every row (the caller turns pruning off).
// actionCol is the first clause of the row's kind whose condition holds,
// in DuckDB's order (an unconditional clause is the last resort).
func mergeQuery(stmt *writesql.Statement, st *tableState) (string, int, error) {
	top := catalog.TopLevel(st.cols)
	q := sqllex.QuoteName(stmt.Qualifier())
	kept := "temp." + targetTable + " AS " + q
	on := "(" + stmt.Where + "\n)"
	var values []int // per clause: how many value columns it has
	exprs := make([][]string, len(stmt.When))
	for i, c := range stmt.When {
		switch c.Action {
		case writesql.MergeUpdate:
			xs, err := setExprs(st, q, "MERGE", c.Sets)
			if err != nil {
				return "", 0, err
			}
			exprs[i] = xs
		case writesql.MergeInsert:
			for _, name := range c.Columns {
				if !slices.ContainsFunc(top, func(col catalog.Column) bool { return types.SameIdent(col.Name, name) }) {
					return "", 0, fmt.Errorf("MERGE: table %q has no column %q: %w", st.t.Name, name, catalog.ErrNoSuchColumn)
				}
			}
			for _, v := range c.Values {
				exprs[i] = append(exprs[i], "("+v+"\n)")
			}
		}
		values = append(values, len(exprs[i]))
	}
	part := func(kind string, matched, bySource bool, rid, from string) string {
		// DuckDB's order: the clauses with a condition as written, then
		// the one without (at most one of each kind), whatever its place.
		cases, last := []string{}, ""
		for i, c := range stmt.When {
			if c.Matched == matched && c.BySource == bySource {
				if c.Cond == "" {
					last = fmt.Sprintf(" ELSE %d", i+1)
					continue
				}
				cases = append(cases, fmt.Sprintf("WHEN (%s\n) THEN %d", c.Cond, i+1))
			}
		}
		action := strings.TrimPrefix(last, " ELSE ")
		switch {
		case len(cases) > 0 && last == "":
			action = "CASE " + strings.Join(cases, " ") + " ELSE 0 END"
		case len(cases) > 0:
			action = "CASE " + strings.Join(cases, " ") + last + " END"
		case last == "":
			action = "0"
		}
		list := []string{"'" + kind + "' AS " + kindCol, rid + " AS " + ridCol, action + " AS " + actionCol}
		for i, c := range stmt.When {
			for j := range values[i] {
				x := "NULL"
				if c.Matched == matched && c.BySource == bySource {
					x = exprs[i][j]
				}
				list = append(list, x+" AS "+mergeCol(i, j))
			}
		}
		return "SELECT " + strings.Join(list, ", ") + " FROM " + from
	}
	target := sqllex.QuoteName(stmt.Table)
	if stmt.Alias != "" {
		target += " AS " + q
	}
	head := part("m", true, false, q+"."+ridCol, "")
	at := len(head)
	query := head + target + ", " + stmt.From + "\n WHERE " + on
	if slices.ContainsFunc(stmt.When, func(c writesql.MergeClause) bool { return !c.Matched && !c.BySource }) {
		query += "\nUNION ALL " + part("n", false, false, "NULL::BIGINT", stmt.From+"\n WHERE NOT EXISTS (SELECT 1 FROM "+kept+" WHERE "+on+")")
	}
	if slices.ContainsFunc(stmt.When, func(c writesql.MergeClause) bool { return c.BySource }) {
		query += "\nUNION ALL " + part("s", false, true, q+"."+ridCol, kept+" WHERE NOT EXISTS (SELECT 1 FROM "+stmt.From+"\n WHERE "+on+")")
	}
	return query, at, nil
}

func change(ctx context.Context, e *engine.Engine, stmt *writesql.Statement, o WriteOptions, stage *Staged) (*WriteResult, error) {
	verb := stmt.Kind.Verb()
	cat := e.Catalog()
	st, err := openTableLazy(cat, catalog.Latest, stmt.Table)
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
	var query string
	var at int
	opts := o.Query
	switch stmt.Kind {
	case writesql.Merge:
		if query, at, err = mergeQuery(stmt, st); err != nil {
			return nil, err
		}
		if slices.ContainsFunc(stmt.When, func(c writesql.MergeClause) bool { return c.BySource }) {
			// Every target row no source row matches may change: none is
			// pruned.
			opts.NoPruning = true
		}
	default:
		q := sqllex.QuoteName(stmt.Qualifier())
		list := q + "." + ridCol + " AS " + ridCol
		if stmt.Kind == writesql.Update {
			xs, err := setExprs(st, q, "UPDATE", stmt.Sets)
			if err != nil {
				return nil, err
			}
			for i, x := range xs {
				list += ", " + x + " AS " + updateCol(i)
			}
		}
		query, at = stmt.Rows(list)
	}
	res := &WriteResult{Statement: verb, Table: st.t.Name}
	opts.Snapshot = st.r.Snapshot().ID
	run := func(ctx context.Context, conn *sql.Conn, views, query string, kept []prune.KeptFile) error {
		return runChange(ctx, e, conn, st, stmt, views, query, kept, res, stage)
	}
	qr, err := e.QueryTarget(ctx, query, engine.Target{At: at, Name: "temp." + targetTable}, opts, run)
	res.Query = qr
	if err != nil {
		if qe := (*engine.QueryError)(nil); errors.As(err, &qe) {
			qe.Within(stmt.Text(), -1) // the query is rocklake's, around the user's parts
		}
		return nil, err
	}
	mergeAfter(ctx, e, res, stage, o)
	return res, nil
}

// runChange finds the change's rows and writes its files; with stage set
// (a transaction's statement) it copies on write whatever the table's
// delete mode, and leaves the commit to the transaction.
func runChange(ctx context.Context, e *engine.Engine, conn *sql.Conn, st *tableState, stmt *writesql.Statement, views, query string, kept []prune.KeptFile, res *WriteResult, stage *Staged) error {
	cleanup := context.WithoutCancel(ctx)
	// A view and a table do not drop with each other's statement: one
	// statement each, so that one failing leaves the others run.
	defer func() {
		for _, q := range []string{"DROP VIEW IF EXISTS temp." + targetTable, "DROP TABLE IF EXISTS temp." + targetTable,
			"DROP TABLE IF EXISTS temp." + changeHits, "DROP TABLE IF EXISTS temp." + writeTable} {
			conn.ExecContext(cleanup, q)
		}
	}()
	cat := e.Catalog()
	if catalog.IsObject(cat.DataRoot()) || cat.RewriteRoot() == "" || stage != nil || st.t.WriteOptions.CopyOnWrite {
		// Where the change's files go depends on the table's other files
		// (objectPlace, writePlace); a rewrite reads them too.
		if err := st.loadFiles(); err != nil {
			return err
		}
	}
	keptIDs := make([]int64, len(kept))
	for i, k := range kept {
		keptIDs[i] = k.FileID
	}
	files, err := st.filesByID(keptIDs)
	if err != nil {
		return fmt.Errorf("%s: a kept file: %w", res.Statement, err)
	}
	// Where positions are recorded, the change reads the target once, and
	// a few files, a view reads only the columns and row groups the
	// condition needs: a DELETE of one id among millions of rows reads
	// one column of the files that may hold it.
	byPosition := mergeOnRead(e, st) && stage == nil
	view := byPosition && stmt.Kind != writesql.Merge && positioned(st) && len(files) <= viewFiles
	release, err := fillTarget(ctx, e, conn, st, files, view)
	defer release()
	if err != nil {
		return err
	}
	top := catalog.TopLevel(st.cols)
	verb := res.Statement
	// removed selects the rids of the target rows the change takes out;
	// its new rows (UPDATE's, MERGE's) go to writeTable.
	removed := "SELECT " + ridCol + " FROM temp." + changeHits
	writes := stmt.Kind != writesql.Delete
	if writes {
		ddl, err := tempTableSQL(st.cols)
		if err != nil {
			return err
		}
		if _, err := conn.ExecContext(ctx, ddl); err != nil {
			return fmt.Errorf("%s: the table's columns: %w", verb, err)
		}
	}
	// insert adds the new rows sel gives to writeTable: the INSERT casts
	// each value to its column's type and checks NOT NULL, as DuckDB's
	// UPDATE and MERGE do.
	insert := func(cols, sel string) (int64, error) {
		r, err := conn.ExecContext(ctx, "INSERT INTO temp."+writeTable+cols+" "+sel)
		if err != nil {
			return 0, changeError(err, st.t.Name, top)
		}
		return r.RowsAffected()
	}
	var n int64
	switch stmt.Kind {
	case writesql.Delete:
		if _, err := conn.ExecContext(ctx, views+"CREATE OR REPLACE TEMP TABLE "+changeHits+" AS SELECT DISTINCT "+ridCol+" FROM (\n"+query+"\n)"); err != nil {
			return changeError(err, st.t.Name, top)
		}
		if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM temp."+changeHits).Scan(&n); err != nil {
			return err
		}
	case writesql.Update:
		if _, err := conn.ExecContext(ctx, views+"CREATE OR REPLACE TEMP TABLE "+changeHits+" AS "+query+"\n"); err != nil {
			return changeError(err, st.t.Name, top)
		}
		if err := matchedOnce(ctx, conn, "", verb, st.t.Name, "of the FROM list"); err != nil {
			return err
		}
		vals := make([]string, len(top))
		for i := range top {
			vals[i] = updateCol(i)
		}
		if n, err = insert("", "SELECT "+strings.Join(vals, ", ")+" FROM temp."+changeHits); err != nil {
			return err
		}
	case writesql.Merge:
		if _, err := conn.ExecContext(ctx, views+"CREATE OR REPLACE TEMP TABLE "+changeHits+" AS "+query+"\n"); err != nil {
			return changeError(err, st.t.Name, top)
		}
		var gone []string // the clauses that take a row out
		for i, c := range stmt.When {
			if c.Action == writesql.MergeUpdate || c.Action == writesql.MergeDelete {
				gone = append(gone, fmt.Sprint(i+1))
			}
		}
		removed = "SELECT " + ridCol + " FROM temp." + changeHits + " WHERE " + kindCol + " <> 'n' AND " + actionCol + " IN (" + strings.Join(append(gone, "-1"), ", ") + ")"
		if err := matchedOnce(ctx, conn, " WHERE "+kindCol+" = 'm' AND "+actionCol+" IN ("+strings.Join(append(gone, "-1"), ", ")+")", verb, st.t.Name, "of the source"); err != nil {
			return err
		}
		if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM ("+removed+")").Scan(&n); err != nil {
			return err
		}
		for i, c := range stmt.When {
			from := fmt.Sprintf(" FROM temp.%s WHERE %s = %d", changeHits, actionCol, i+1)
			var k int64
			var err error
			switch c.Action {
			case writesql.MergeUpdate:
				vals := make([]string, len(top))
				for j := range top {
					vals[j] = mergeCol(i, j)
				}
				k, err = insert("", "SELECT "+strings.Join(vals, ", ")+from)
			case writesql.MergeInsert:
				cols := ""
				var vals []string
				switch {
				case c.DefaultValues:
					for _, col := range top {
						vals = append(vals, defaultSQL(col))
					}
				default:
					if c.Columns != nil {
						var names []string
						for _, name := range c.Columns {
							names = append(names, sqllex.QuoteName(name))
						}
						cols = " (" + strings.Join(names, ", ") + ")"
					}
					for j := range c.Values {
						vals = append(vals, mergeCol(i, j))
					}
				}
				k, err = insert(cols, "SELECT "+strings.Join(vals, ", ")+from)
			}
			if err != nil {
				return err
			}
			if c.Action == writesql.MergeInsert {
				n += k
			}
		}
	}
	res.Rows = n
	if n == 0 {
		return nil
	}
	hit := removed
	// A rid's high half is its file's id (fillTarget).
	rows, err := conn.QueryContext(ctx, "SELECT DISTINCT "+ridCol+" >> 32 FROM ("+hit+") ORDER BY 1")
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
	if byPosition {
		return deleteByPosition(ctx, e, conn, st, affected, hit, names, writes, res)
	}
	if err := st.loadFiles(); err != nil {
		return err
	}
	// Each touched file's other rows become a file (or files) of their
	// own, with no more than its range; new rows (UPDATE's, MERGE's) go
	// to files of their own too, as an INSERT's would.
	src := fmt.Sprintf("SELECT %s, %s AS %s FROM temp.%s WHERE %s IN (%s) AND %s NOT IN (%s)",
		strings.Join(names, ", "), fileCol, groupCol, targetTable, fileCol, strings.Join(append(ids, "-1"), ", "), ridCol, hit)
	if writes {
		src += " UNION ALL SELECT *, -1 FROM temp." + writeTable
	}
	sp := rewriteSpec{conn: conn, what: strings.ToLower(verb), src: slotsOf(st.cols, src), group: groupCol, stage: stage,
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

// posCol is the column of a file's read that gives each row's position in
// the file (engine.ReadFileRowsSQL).
const posCol = "__rocklake_pos"

// positioned says whether a change reads each row's position in its file
// (read_parquet's file_row_number), what a delete file records: not in a
// table with a column of that name, which the reading would shadow.
func positioned(st *tableState) bool {
	return !slices.ContainsFunc(catalog.TopLevel(st.cols), func(c catalog.Column) bool { return types.SameIdent(c.Name, "file_row_number") })
}

// mergeOnRead says whether a change takes rows out by delete files: the
// table does not ask for copy-on-write (catalog.WriteOptions.DeletesByFile)
// and there is a place to put them: the catalog's rewrite root, or, for a
// table of objects or a catalog whose data root is a bucket prefix, object
// storage; else the change copies on write.
func mergeOnRead(e *engine.Engine, st *tableState) bool {
	if !st.t.WriteOptions.DeletesByFile() || !positioned(st) {
		return false
	}
	return e.Catalog().RewriteRoot() != "" || objectPlace(e, st, nil) != ""
}

// objectPlace is the object a change's delete files are put beside
// (catalog.ObjectRewritePrefix; under the catalog's data root when that is
// a bucket prefix): the first of affected that is an object, else the first
// of the table's files, else the data root; "" when the delete files are
// local: none of affected is an object, the data root is a directory, and
// the catalog has a rewrite root.
func objectPlace(e *engine.Engine, st *tableState, affected []catalog.DataFile) string {
	isObj := func(f catalog.DataFile) bool { return catalog.IsObject(f.Location(st.t)) }
	if i := slices.IndexFunc(affected, isObj); i >= 0 {
		return affected[i].Location(st.t)
	}
	root := e.Catalog().DataRoot()
	if !catalog.IsObject(root) && e.Catalog().RewriteRoot() != "" {
		return ""
	}
	if i := slices.IndexFunc(st.files, isObj); i >= 0 {
		return st.files[i].Location(st.t)
	}
	if catalog.IsObject(root) {
		return root
	}
	return ""
}

// deleteByPosition commits a change under merge-on-read: for each file
// it takes rows out of (affected; hit selects their rids), a delete file
// of their positions and those the file's current delete file holds, and
// the change's new rows (UPDATE's, MERGE's, in writeTable when writes) in
// new files, all in one snapshot.
func deleteByPosition(ctx context.Context, e *engine.Engine, conn *sql.Conn, st *tableState, affected []catalog.DataFile,
	hit string, names []string, writes bool, res *WriteResult) error {
	cat := e.Catalog()
	committed := false
	var dir string
	var lease *catalog.Lease
	var out *objectOutput
	if place := objectPlace(e, st, affected); place != "" {
		// Written to a staging directory, checked there, then uploaded
		// under a prefix of their own (removed unless committed).
		var err error
		if out, err = newObjectOutput(ctx, e, st, place, "delete", ""); err != nil {
			return fmt.Errorf("%s: the delete files' prefix: %w", res.Statement, err)
		}
		dir, lease = out.staging, out.lease
		defer func() {
			out.committed = committed
			out.close()
		}()
	} else {
		root := cat.RewriteRoot()
		dir = catalog.DefaultRewriteDir(root, st.t.ID, st.r.Snapshot().ID, "delete")
		var err error
		lease, err = catalog.MakeRewriteDir(dir, root)
		// Changes from other processes that read the same snapshot pick the
		// same next name: the one that loses takes the one after.
		for n := 0; errors.Is(err, fs.ErrExist) && n < 100; n++ {
			dir = catalog.DefaultRewriteDir(root, st.t.ID, st.r.Snapshot().ID, "delete")
			lease, err = catalog.MakeRewriteDir(dir, root)
		}
		if err != nil {
			return fmt.Errorf("%s: the delete files' directory: %w", res.Statement, err)
		}
		defer func() {
			// The lease first: once the directory is gone its name is free
			// for another write's.
			lease.Release()
			if !committed {
				os.RemoveAll(dir)
			}
		}()
	}
	dels, err := st.r.DeleteFiles(st.t.ID)
	if err != nil {
		return err
	}
	// The current delete files the new ones take in, where DuckDB reads them.
	readable, release, err := e.LocalDeleteFiles(ctx, st.t, dels, catalog.FileIDs(affected))
	if err != nil {
		return fmt.Errorf("%s: %w", res.Statement, err)
	}
	defer release()
	nds, err := writeDeleteFiles(ctx, conn, st, res.Statement, hit, dir, affected, dels, readable)
	if err != nil {
		return err
	}
	if out != nil {
		staged := make([]string, len(nds))
		for i, nd := range nds {
			staged[i] = nd.Path
		}
		if err := out.upload(ctx, staged); err != nil {
			return fmt.Errorf("%s: the delete files: %w; nothing committed, the objects uploaded deleted", res.Statement, err)
		}
		for i := range nds {
			obj := out.put[nds[i].Path]
			nds[i].Path, nds[i].FileSizeBytes, nds[i].ETag, nds[i].ModifiedUnixNanos = obj.Location, obj.Size, obj.ETag, 0
		}
	}
	var added int64
	if writes {
		if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM temp."+writeTable).Scan(&added); err != nil {
			return err
		}
	}
	if added > 0 {
		if err := st.loadFiles(); err != nil {
			return err
		}
		src := fmt.Sprintf("SELECT %s, -1 AS %s FROM temp.%s", strings.Join(names, ", "), groupCol, writeTable)
		sp := rewriteSpec{conn: conn, what: strings.ToLower(res.Statement), src: slotsOf(st.cols, src), group: groupCol,
			sizing: writeSizing(st.t.WriteOptions), place: writePlace(cat, st), bytesPerRow: liveBytesPerRow(st), deletes: nds, leases: []*catalog.Lease{lease}}
		if sp.order, sp.curve, err = writeOrder(st); err != nil {
			return err
		}
		out, err := rewrite(ctx, e, st, nil, sp)
		if mayHaveLanded(err) {
			// It landed or may have, and then its snapshot applies the
			// delete files: they stay (cleanup --orphans removes them if
			// it did not), as the new rows' files do.
			committed = true
		}
		if err != nil {
			return changeRaced(cat, st, err)
		}
		committed = true
		res.Files, res.DeleteFiles, res.Snapshot = out.FilesAfter, len(nds), out.Snapshot
		return nil
	}
	for attempt := 0; ; attempt++ {
		tx, err := cat.Begin()
		if err != nil {
			return err
		}
		tx.SetDeletes(st.t.Name, nds...)
		tx.Hold(lease)
		snap, err := tx.Commit()
		if errors.Is(err, catalog.ErrConflict) && attempt < 3 {
			continue // another writer changed the table: checked again on the new state
		}
		if mayHaveLanded(err) {
			// It may have landed: the delete files stay (cleanup --orphans
			// removes them if it did not).
			committed = true
		}
		if err != nil {
			return changeRaced(cat, st, err)
		}
		committed = true
		res.DeleteFiles, res.Snapshot = len(nds), snap
		return nil
	}
}

// fillTarget reads the target's kept files into targetTable: the table's
// top-level columns as queries read them, each row's file id and a number
// unique among the rows. The files are checked to be those registered;
// release unpins the local copies of objects.
func fillTarget(ctx context.Context, e *engine.Engine, conn *sql.Conn, st *tableState, files []catalog.DataFile, view bool) (release func(), err error) {
	pos := positioned(st)
	var unpin []func()
	release = func() {
		for _, u := range unpin {
			u()
		}
	}
	dels, err := st.r.DeleteFiles(st.t.ID)
	if err != nil {
		return release, err
	}
	dels, rel, err := e.LocalDeleteFiles(ctx, st.t, dels, catalog.FileIDs(files))
	if err != nil {
		return release, err
	}
	unpin = append(unpin, rel)
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
		if pos {
			return e.ReadFileRowsSQL(st.r, st.t, st.cols, f, path, posCol, dels)
		}
		return e.ReadTableFilesWithSQL(st.r, st.t, st.cols, []catalog.DataFile{f}, []string{path}, dels)
	}
	// An empty table of the right columns first; then the files, a few
	// dozen per statement, each row numbered after the file's id by its
	// position in the file, what a delete file records (rid = id << 32 +
	// position: unique while a file holds fewer than 2^32 rows, which
	// CheckFile's registered count says); by its place in the read where
	// positions cannot be read (positioned).
	cols, number := "src.*", "row_number() OVER ()"
	if pos {
		cols, number = "src.* EXCLUDE ("+posCol+")", "src."+posCol
	}
	var shape string
	if len(files) > 0 {
		if shape, err = read(files[0]); err != nil {
			return release, err
		}
	} else {
		shape, cols = e.ReadFilesSQL(st.t, st.cols, nil), "src.*"
	}
	if view && len(files) > 0 {
		parts := make([]string, len(files))
		for i, f := range files {
			if parts[i], err = targetPart(f, i, shape, cols, number, read); err != nil {
				return release, err
			}
		}
		if _, err := conn.ExecContext(ctx, "CREATE OR REPLACE TEMP VIEW "+targetTable+" AS "+strings.Join(parts, " UNION ALL ")); err != nil {
			return release, fmt.Errorf("reading the files of table %q: %w", st.t.Name, err)
		}
		return release, nil
	}
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("CREATE OR REPLACE TEMP TABLE %s AS SELECT %s, 0::BIGINT AS %s, 0::BIGINT AS %s FROM (%s) AS src LIMIT 0",
		targetTable, cols, fileCol, ridCol, shape)); err != nil {
		return release, fmt.Errorf("reading table %q: %w", st.t.Name, err)
	}
	const batch = 32
	for i := 0; i < len(files); i += batch {
		var parts []string
		for j, f := range files[i:min(i+batch, len(files))] {
			part, err := targetPart(f, i+j, shape, cols, number, read)
			if err != nil {
				return release, err
			}
			parts = append(parts, part)
		}
		if _, err := conn.ExecContext(ctx, "INSERT INTO temp."+targetTable+" "+strings.Join(parts, " UNION ALL ")); err != nil {
			return release, fmt.Errorf("reading the files of table %q: %w", st.t.Name, err)
		}
	}
	return release, nil
}

// viewFiles is the most files a change reads through a view rather than
// a table (fillTarget): a view of more is slow for DuckDB to bind, and
// the reading outweighs the copy.
const viewFiles = 64

// maxChangeFileID bounds the file ids a change reads: rid = id << 32 +
// position is a BIGINT.
const maxChangeFileID = 1 << 31

// targetPart is the read of the target's i-th file, each row numbered
// (fillTarget); shape is the first file's read, already made.
func targetPart(f catalog.DataFile, i int, shape, cols, number string, read func(catalog.DataFile) (string, error)) (string, error) {
	if f.RecordCount >= 1<<32 {
		return "", fmt.Errorf("file %s holds %d rows, more than a change numbers", f.Path, f.RecordCount)
	}
	// id << 32 must stay a positive BIGINT: a larger id would wrap and
	// number this file's rows as another file's, and a change would take
	// rows out of the wrong file.
	if f.ID < 0 || f.ID >= maxChangeFileID {
		return "", fmt.Errorf("file %s has id %d, beyond the ids a change numbers rows by (below %d)", f.Path, f.ID, int64(maxChangeFileID))
	}
	sel := shape
	if i > 0 {
		var err error
		if sel, err = read(f); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("SELECT %s, %d AS %s, %d + %s AS %s FROM (%s) AS src", cols, f.ID, fileCol, f.ID<<32, number, ridCol, sel), nil
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
	msg = engine.StripLineQuote(msg) // quotes the statement rocklake made, not the user's
	for _, c := range []string{fileCol, ridCol} {
		msg = strings.ReplaceAll(msg, `, "`+c+`"`, "")
		msg = strings.ReplaceAll(msg, `"`+c+`", `, "")
	}
	for i := len(top) - 1; i >= 0; i-- { // u12 before u1
		msg = strings.ReplaceAll(msg, "source column "+updateCol(i), "the value for column "+sqllex.QuoteName(top[i].Name))
		msg = strings.ReplaceAll(msg, updateCol(i), sqllex.QuoteName(top[i].Name))
	}
	msg = mergeValue.ReplaceAllString(msg, "a value of the MERGE")
	msg = strings.ReplaceAll(msg, targetTable, table)
	msg = strings.ReplaceAll(msg, writeTable, table)
	return errors.New(msg)
}

var mergeValue = regexp.MustCompile(`(source column )?__rocklake_m\d+_\d+`)

// changeRaced says why a change's commit failed when another writer
// retired a file it rewrote (a change or an optimize of the same rows),
// or dropped or altered its table: nothing was committed and the
// statement may be run again.
func changeRaced(cat *catalog.Catalog, st *tableState, err error) error {
	if mayHaveLanded(err) {
		return err
	}
	if rerr := raced(cat, st.t, st.cols, err); rerr != err {
		return rerr
	}
	if errors.Is(err, catalog.ErrNoSuchFile) || errors.Is(err, catalog.ErrConflict) {
		return fmt.Errorf("%w: another writer changed or rewrote a file this statement changes; nothing was committed, run the statement again (%v)", ErrWriteRaced, err)
	}
	return err
}
