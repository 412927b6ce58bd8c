package maintain

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
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
func ChangesSQL(ctx context.Context, e *engine.Engine, table string, from, to int64) (query string, release func(), err error) {
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
			} else if err := engine.CheckFile(t, f); err != nil {
				return "", err
			}
			paths[i] = p
		}
		return e.ReadTableFilesWithSQL(r, t, cols, files, paths, deletesAt(asOf))
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
