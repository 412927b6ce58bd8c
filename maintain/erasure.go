package maintain

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/internal/sqllex"
	"github.com/rocklake/rocklake/storage"
)

// Erasure. A DELETE rewrites the files that held the rows (change.go);
// the bytes are gone once nothing stores those files any more: no kept
// snapshot reads them (expire), cleanup has deleted them, and no file
// outside the catalog holds them. CheckErased looks at every file the
// table's rows may still be stored in and reads each for the rows a
// predicate matches, so that a user can show the rows are gone, or see
// what still holds them and what to run:
//
//	live      a file of the table now: DELETE the rows
//	deleted   a live file whose delete file takes the rows out (merge-on-
//	          read), still stored in it: fold the table's deletes
//	retired   retired, read by snapshots retention keeps: expire them
//	expired   no kept snapshot reads it; cleanup deletes it after its grace
//	user      the user's file (registered in place, or forgotten by expire
//	          as the user's): rocklake never deletes it; delete it yourself
//	orphan    under a directory rocklake wrote, named by no snapshot:
//	          cleanup --orphans
//
// Each file is read by DuckDB as it is stored (read_parquet of the file,
// its own columns, the predicate over them), whatever its compression: a
// file whose columns the predicate cannot bind is reported as unchecked,
// never as erased. Directories the user registered files from are not
// walked (other files live there); the directories rocklake's writes and
// rewrites made are.

// ErasureHolder is a stored file that holds rows the predicate matches,
// or that could not be checked.
type ErasureHolder struct {
	Path   string `json:"path"`
	FileID int64  `json:"file_id,omitempty"`
	State  string `json:"state"` // live, deleted, retired, expired, user, orphan
	// Rows is how many of its rows match; -1 when it could not be read.
	Rows int64  `json:"rows"`
	Why  string `json:"why"`
}

// ErasureReport says whether any stored file of a table still holds rows
// a predicate matches.
type ErasureReport struct {
	Table     string          `json:"table"`
	Predicate string          `json:"predicate"`
	Snapshot  int64           `json:"snapshot_id"`
	Checked   int             `json:"checked_file_count"`
	Holders   []ErasureHolder `json:"holders"`
	// Erased is true when no file checked holds a matching row and every
	// file could be checked.
	Erased bool `json:"erased"`
	// Unlisted says what was not searched for files outside the catalog
	// (object prefixes are not listed).
	Unlisted []string `json:"unlisted,omitempty"`
}

// CheckErased reads every file that may store table's rows for the rows
// predicate (a SQL condition over the table's columns) matches.
func CheckErased(ctx context.Context, e *engine.Engine, table, predicate string) (*ErasureReport, error) {
	if strings.TrimSpace(predicate) == "" {
		return nil, fmt.Errorf("check erased: a predicate is needed (the condition the deleted rows matched)")
	}
	cat := e.Catalog()
	r, err := cat.Read(catalog.Latest)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	t, err := r.Table(table)
	if err != nil {
		return nil, err
	}
	rep := &ErasureReport{Table: t.Name, Predicate: predicate, Snapshot: r.Snapshot().ID, Holders: []ErasureHolder{}}
	ever, err := r.FilesEver(t.ID)
	if err != nil {
		return nil, err
	}
	dels, err := r.DeleteFiles(t.ID)
	if err != nil {
		return nil, err
	}
	dels, release, err := e.LocalDeleteFiles(ctx, t, dels, nil)
	if err != nil {
		return nil, err
	}
	defer release()
	type candidate struct {
		ErasureHolder
		f *catalog.DataFile
		// deletes is the live file's delete file (merge-on-read), as
		// DuckDB reads it; "" for none.
		deletes string
	}
	var cands []candidate
	seen := map[string]bool{}
	del := "DELETE FROM " + sqllex.QuoteName(t.Name) + " WHERE " + predicate
	for i := range ever {
		f := &ever[i]
		loc := f.Location(t)
		seen[loc] = true
		h := ErasureHolder{Path: loc, FileID: f.ID}
		switch {
		case !f.End.Known:
			h.State, h.Why = "live", "the table holds these rows now: "+del
		case !f.Owner.Deletable():
			h.State, h.Why = "user", fmt.Sprintf("retired at snapshot %d, but the user's file (registered in place): rocklake never deletes it; once no kept snapshot needs it (rocklake expire), delete it yourself", f.End.V)
		default:
			h.State, h.Why = "retired", fmt.Sprintf("retired at snapshot %d; snapshots before it are kept and read it: rocklake expire --older-than <a time after snapshot %d>, then rocklake cleanup", f.End.V, f.End.V)
		}
		c := candidate{ErasureHolder: h, f: f}
		if d, ok := dels[f.ID]; ok && !f.End.Known {
			c.deletes = e.DuckPath(d.Location(t))
		}
		cands = append(cands, c)
	}
	sched, err := cat.ScheduledFiles()
	if err != nil {
		return nil, err
	}
	for _, s := range sched {
		if s.TableID != t.ID || seen[s.Location] || deleteFileName(s.Location) {
			continue
		}
		seen[s.Location] = true
		h := ErasureHolder{Path: s.Location, FileID: s.FileID, State: "expired",
			Why: "no kept snapshot reads it; rocklake cleanup deletes it once its grace period has passed (--grace to shorten it)"}
		if !s.Owner.Deletable() {
			h.State, h.Why = "user", "expired, but the user's file (registered in place): cleanup unschedules it and never deletes it; delete it yourself"
		}
		cands = append(cands, candidate{ErasureHolder: h})
	}
	retired, err := r.RetiredFiles(t)
	if err != nil {
		return nil, err
	}
	for _, f := range retired {
		if !f.Forgotten || seen[f.Location] {
			continue
		}
		seen[f.Location] = true
		cands = append(cands, candidate{ErasureHolder: ErasureHolder{Path: f.Location, FileID: f.FileID, State: "user",
			Why: "expire forgot this file as the user's (registered in place): rocklake never deletes it; delete it yourself"}})
	}
	// What rocklake wrote for the table and no snapshot names.
	if root := cat.RewriteRoot(); root != "" {
		dir := filepath.Join(root, "table-"+strconv.FormatInt(t.ID, 10))
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".parquet") && !seen[p] && !deleteFileName(p) {
				seen[p] = true
				cands = append(cands, candidate{ErasureHolder: ErasureHolder{Path: p, State: "orphan",
					Why: "under a directory rocklake wrote, named by no snapshot: rocklake cleanup --orphans"}})
			}
			return nil
		})
	}
	if catalog.IsObject(cat.DataRoot()) || slices.ContainsFunc(cands, func(c candidate) bool { return catalog.IsObject(c.Path) }) {
		rep.Unlisted = append(rep.Unlisted, "object prefixes were not listed for objects no snapshot names (run rocklake cleanup --orphans)")
	}
	conn, err := e.DB().Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	for _, c := range cands {
		path := c.Path
		if catalog.IsObject(path) {
			if c.f == nil {
				rep.Holders = append(rep.Holders, withRows(c.ErasureHolder, -1, "an object the catalog no longer describes: not read; "+c.Why))
				continue
			}
			local, release, err := e.ObjectCopy(ctx, path, c.f.FileSizeBytes, c.f.ETag)
			if err != nil {
				if errors.Is(err, storage.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
					continue // gone
				}
				rep.Holders = append(rep.Holders, withRows(c.ErasureHolder, -1, "could not be read: "+err.Error()))
				continue
			}
			path = local
			defer release()
		} else if _, err := os.Stat(path); err != nil {
			if os.IsNotExist(err) {
				continue // deleted: nothing stored
			}
			rep.Holders = append(rep.Holders, withRows(c.ErasureHolder, -1, "could not be read: "+err.Error()))
			continue
		}
		rep.Checked++
		var n, left int64
		// left: the matching rows no delete file takes out.
		leftSQL := "count(*)"
		if c.deletes != "" {
			leftSQL = "count(*) FILTER (WHERE file_row_number NOT IN (SELECT pos FROM read_parquet(" + sqllex.QuoteString(c.deletes) + ")))"
		}
		q := fmt.Sprintf("SELECT count(*), %s FROM read_parquet(%s, file_row_number = %t) WHERE (%s\n)", leftSQL, sqllex.QuoteString(e.DuckPath(path)), c.deletes != "", predicate)
		if err := conn.QueryRowContext(ctx, q).Scan(&n, &left); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			rep.Holders = append(rep.Holders, withRows(c.ErasureHolder, -1, "the predicate could not be evaluated over it ("+firstLine(err.Error())+"): not proven erased"))
			continue
		}
		if n > 0 {
			h := c.ErasureHolder
			h.Rows = n
			if c.deletes != "" && left == 0 {
				h.State, h.Why = "deleted", "its delete file takes these rows out of the table, but the data file still stores them: rocklake fold "+sqllex.QuoteName(t.Name)+", then rocklake expire and rocklake cleanup"
			}
			rep.Holders = append(rep.Holders, h)
		}
	}
	rep.Erased = len(rep.Holders) == 0
	return rep, nil
}

// deleteFileName says whether p is a delete file a change wrote under
// merge-on-read (deleteByPosition: delete-<snapshot>/delete-<file id>.parquet
// under the rewrite root): it holds positions and a data file's path,
// none of the table's values.
func deleteFileName(p string) bool {
	return strings.HasPrefix(filepath.Base(p), "delete-") && strings.HasPrefix(filepath.Base(filepath.Dir(p)), "delete-")
}

func withRows(h ErasureHolder, rows int64, why string) ErasureHolder {
	h.Rows, h.Why = rows, why
	return h
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
