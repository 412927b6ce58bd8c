package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine/duckast"
	"github.com/rocklake/rocklake/internal/sqllex"
	"github.com/rocklake/rocklake/types"
)

// The change feed: the rows a table gained and lost between two
// snapshots, as DuckLake's ducklake_table_changes gives them, answered
// from the files each snapshot in between added and retired, never from
// whole tables. A snapshot's changes are the rows of the files it added
// that the files it retired did not hold (inserts) and the reverse
// (deletes), as multisets (EXCEPT ALL): an INSERT or add gives inserts,
// an rm deletes, a DELETE, UPDATE or MERGE, which rewrote files, the
// rows it took out and put in, and an optimize or compact, which moved
// rows without changing them, nothing. Copy-on-write keeps no row
// identity, so an UPDATE shows as a delete of the old row and an insert of
// the new one (DuckLake's update_preimage / update_postimage are not told
// apart), and a row changed to a value equal to its old one (0.0 to -0.0)
// is no change.
//
//	snapshot_id  change_type  <the table's columns at the later snapshot>
//
// Files are read through the table's columns at the later snapshot, as
// queries read them (a column added since reads its default).
//
// Under merge-on-read a snapshot may also change a file's delete file
// (catalog.DeleteFile) and leave the file in place: the file then counts
// as retired with its deletes before the snapshot and added with those
// after, so that EXCEPT ALL leaves exactly the rows at the positions the
// snapshot deleted. Every file is read with the deletes of the snapshot
// it is read as of.

// ErrChangesExpired says a change feed reaches back before snapshots
// expire has forgotten: their files, and so their changes, are gone.
var ErrChangesExpired = errors.New("the snapshots are expired")

// ChangesSQL is the query whose rows are table's changes after snapshot
// from up to snapshot to (catalog.Latest for the newest), ordered by
// snapshot, deletes first; release unpins the local copies of objects it
// reads, after the query has run. It reads local files where they are:
// run it on the engine that made it, before release.
func (e *Engine) ChangesSQL(ctx context.Context, table string, from, to int64) (query string, release func(), err error) {
	release = func() {}
	cat := e.Catalog()
	r, err := cat.Read(to)
	if err != nil {
		return "", release, err
	}
	defer r.Close()
	to = r.Snapshot().ID
	if from < 0 || from > to {
		return "", release, fmt.Errorf("changes of %s: --from %d must be a snapshot at or before %d", table, from, to)
	}
	t, err := r.Table(table)
	if err != nil {
		return "", release, err
	}
	cols, err := r.Columns(t.ID)
	if err != nil {
		return "", release, err
	}
	snaps, err := cat.Snapshots()
	if err != nil {
		return "", release, err
	}
	kept := map[int64]bool{}
	for _, s := range snaps {
		kept[s.ID] = true
	}
	for s := from + 1; s <= to; s++ {
		if !kept[s] {
			return "", release, fmt.Errorf("changes of %s from snapshot %d: %w (snapshot %d is gone, and with it what it changed)", table, from, ErrChangesExpired, s)
		}
	}
	ever, err := r.FilesEver(t.ID)
	if err != nil {
		return "", release, err
	}
	versions, err := r.DeleteFileVersions(t.ID)
	if err != nil {
		return "", release, err
	}
	// deletesAt is the delete files snapshot s applies.
	deletesAt := func(s int64) map[int64]catalog.DeleteFile {
		out := map[int64]catalog.DeleteFile{}
		for _, d := range versions {
			if d.VisibleAt(s) {
				out[d.DataFileID] = d
			}
		}
		return out
	}
	byID := map[int64]catalog.DataFile{}
	added, retired := map[int64][]catalog.DataFile{}, map[int64][]catalog.DataFile{}
	for _, f := range ever {
		byID[f.ID] = f
		if f.Begin > from && f.Begin <= to {
			added[f.Begin] = append(added[f.Begin], f)
		}
		if f.End.Known && f.End.V > from && f.End.V <= to {
			retired[f.End.V] = append(retired[f.End.V], f)
		}
	}
	for _, d := range versions {
		// A delete file begun in the range on a file that stays.
		f, ok := byID[d.DataFileID]
		if !ok || d.Begin <= from || d.Begin > to || f.Begin == d.Begin || (f.End.Known && f.End.V == d.Begin) {
			continue
		}
		added[d.Begin] = append(added[d.Begin], f)
		retired[d.Begin] = append(retired[d.Begin], f)
	}
	var unpin []func()
	release = func() {
		for _, u := range unpin {
			u()
		}
	}
	read := func(files []catalog.DataFile, asOf int64) (string, error) {
		if len(files) == 0 {
			return e.ReadFilesSQL(t, cols, nil), nil
		}
		paths := make([]string, len(files))
		for i, f := range files {
			p := f.Location(t)
			if catalog.IsObject(p) {
				local, rel, err := e.ObjectCopy(ctx, p, f.FileSizeBytes, f.ETag)
				if err != nil {
					return "", fmt.Errorf("reading %s: %w", p, err)
				}
				unpin = append(unpin, rel)
				p = local
			} else if err := CheckFile(t, f); err != nil {
				return "", err
			}
			paths[i] = p
		}
		dels, rel, err := e.LocalDeleteFiles(ctx, t, deletesAt(asOf), catalog.FileIDs(files))
		if err != nil {
			return "", err
		}
		unpin = append(unpin, rel)
		return e.ReadTableFilesWithSQL(r, t, cols, files, paths, dels)
	}
	var ids []int64
	for s := range added {
		ids = append(ids, s)
	}
	for s := range retired {
		if _, ok := added[s]; !ok {
			ids = append(ids, s)
		}
	}
	slices.Sort(ids)
	var parts []string
	for _, s := range ids {
		a, err := read(added[s], s)
		if err != nil {
			release()
			return "", func() {}, err
		}
		d, err := read(retired[s], s-1)
		if err != nil {
			release()
			return "", func() {}, err
		}
		parts = append(parts,
			fmt.Sprintf("SELECT %d::BIGINT AS snapshot_id, 'delete' AS change_type, * FROM (SELECT * FROM (%s) EXCEPT ALL SELECT * FROM (%s))", s, d, a),
			fmt.Sprintf("SELECT %d::BIGINT AS snapshot_id, 'insert' AS change_type, * FROM (SELECT * FROM (%s) EXCEPT ALL SELECT * FROM (%s))", s, a, d))
	}
	if len(parts) == 0 {
		parts = append(parts, fmt.Sprintf("SELECT NULL::BIGINT AS snapshot_id, NULL::VARCHAR AS change_type, * FROM (%s)", e.ReadFilesSQL(t, cols, nil)))
	}
	// Each part is its snapshot's, in order: deletes before inserts.
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteString("\nUNION ALL ")
		}
		fmt.Fprintf(&b, "SELECT %d AS __rocklake_part, * FROM (%s)", i, p)
	}
	return "SELECT * EXCLUDE (__rocklake_part) FROM (" + b.String() + ") ORDER BY __rocklake_part", release, nil
}

// The change feed in SQL: table_changes('t', start, end) in a FROM
// clause, as DuckLake's, is the changes the snapshots start to end (both
// included) made to table t, given as snapshot ids or as timestamps (the
// snapshots made at or after start, and at or before end); without end,
// up to the snapshot the query reads. Its columns are ChangesSQL's. The
// call is replaced in the query's text by ChangesSQL's query before
// DuckDB binds anything, so it is no function DuckDB knows.
const feedFunction = "table_changes"

// isFeedCall says whether a table function call is the change feed's.
func isFeedCall(tr *duckast.TableRef) bool {
	if !strings.EqualFold(tr.FunctionName, feedFunction) {
		return false
	}
	f, _ := tr.Node["function"].(map[string]any)
	schema, _ := f["schema"].(string)
	cat, _ := f["catalog"].(string)
	return cat == "" && (schema == "" || strings.EqualFold(schema, "main"))
}

// planFeeds puts, in place of each table_changes(...) call, the query of
// its changes (as a subquery named as the call would be).
func (q *queryRun) planFeeds(edits *[]textEdit) error {
	for _, tr := range q.scan.feeds {
		table, from, to, err := q.feedBounds(tr)
		if err != nil {
			return fmt.Errorf("%s(...): %w", feedFunction, err)
		}
		text, release, err := q.e.ChangesSQL(q.ctx, table, from, to)
		if err != nil {
			return err
		}
		q.unpins = append(q.unpins, release)
		end, ok := callSpan(q.query, tr.At)
		if !ok {
			return fmt.Errorf("%s(...): the call could not be read in the query's text", feedFunction)
		}
		text = "(" + text + ")"
		if tr.Alias == "" {
			text += " AS " + feedFunction
		}
		*edits = append(*edits, textEdit{tr.At, end, text})
		// Its rows are read from files, never answered from statistics.
		q.opts.NoMetadataAnswers, q.opts.noSplit = true, true
	}
	return nil
}

// feedBounds reads a table_changes call's arguments: the table, and the
// snapshots after from up to to whose changes it asks for.
func (q *queryRun) feedBounds(tr *duckast.TableRef) (table string, from, to int64, err error) {
	args := duckast.ExprOf(tr.Node["function"]).Children
	if len(args) < 2 || len(args) > 3 {
		return "", 0, 0, errors.New("takes a table name, a start and an optional end: table_changes('t', 3, 5), or timestamps for the bounds")
	}
	name, ok := travelConstant(args[0])
	if !ok || args[0].Class != "CONSTANT" {
		return "", 0, 0, errors.New("the table is a constant string: table_changes('t', ...)")
	}
	head := q.r.Snapshot().ID
	if base, ok := q.e.cat.Speculation(); ok && base < head {
		// A transaction's own snapshots are not the catalog's.
		head = base
	}
	snaps, err := q.e.cat.Snapshots()
	if err != nil {
		return "", 0, 0, err
	}
	// bound is an argument as a snapshot: an id, or for a timestamp the
	// last snapshot made before it (a start: strictly before) or at it.
	bound := func(x *duckast.Expr, start bool) (int64, error) {
		lit, ok := travelConstant(x)
		if !ok {
			return 0, errors.New("the bounds are constants: snapshot ids, or timestamps")
		}
		if id, err := strconv.ParseInt(lit, 10, 64); err == nil && (x.Class == "CONSTANT" && x.Value != nil && isNumber(x.Value.Raw)) {
			if start {
				return max(id-1, 0), nil
			}
			return id, nil
		}
		codec, _ := types.CodecFor(types.MustParseType("timestamptz"))
		v, err := codec.ParseInUTC(lit)
		if err != nil {
			return 0, fmt.Errorf("%q is neither a snapshot id nor a timestamp", lit)
		}
		at := time.UnixMicro(v.Int64())
		id := int64(-1)
		for _, s := range snaps {
			if s.ID <= head && (s.Time.Before(at) || !start && s.Time.Equal(at)) {
				id = s.ID
			}
		}
		if id < 0 {
			// Every snapshot is later: from the first one on, or none.
			if !start {
				return -1, nil
			}
			id = 0
			if len(snaps) > 0 {
				id = max(snaps[0].ID-1, 0)
			}
		}
		return id, nil
	}
	if from, err = bound(args[1], true); err != nil {
		return "", 0, 0, err
	}
	to = head
	if len(args) == 3 {
		if to, err = bound(args[2], false); err != nil {
			return "", 0, 0, err
		}
	}
	if to > head {
		return "", 0, 0, fmt.Errorf("%w: snapshot %d is after snapshot %d, which the query reads", catalog.ErrNoSuchSnapshot, to, head)
	}
	if to < from {
		to = from // an empty range: no changes
	}
	return name, from, to, nil
}

// isNumber says whether a constant's JSON value is a number (a snapshot
// id) rather than a string.
func isNumber(raw any) bool {
	switch raw.(type) {
	case string, nil, bool:
		return false
	}
	return true
}

// callSpan is where the call starting at at ends in the query: after the
// parenthesis that closes its argument list.
func callSpan(query string, at int) (end int, ok bool) {
	masked := sqllex.Mask(query)
	open := strings.IndexByte(masked[min(at, len(masked)):], '(')
	if at < 0 || at >= len(masked) || open < 0 || !strings.Contains(strings.ToLower(query[at:at+open]), feedFunction) {
		return 0, false
	}
	depth := 0
	for i := at + open; i < len(masked); i++ {
		switch masked[i] {
		case '(':
			depth++
		case ')':
			if depth--; depth == 0 {
				return i + 1, true
			}
		}
	}
	return 0, false
}
