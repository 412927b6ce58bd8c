package maintain

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/pqmeta"
)

// RefreshOptions say what Refresh may do with a named file that changed.
// The zero value takes back only files whose footer is the one
// registered.
type RefreshOptions struct {
	// Deep also checks, before taking a file back, its statistics and
	// membership filters against its rows, as Verify's deep check does.
	// It is what lets a file registered before footer fingerprints were
	// recorded be taken back.
	Deep bool
	// Stats registers a file whose content changed (its footer, size or
	// row count differ) again, with the statistics it holds now, in place
	// of the old registration; without it such a file is refused.
	Stats bool
	// Remove removes each named file that changed, or is missing, from
	// the table instead.
	Remove bool
	// All names every local file of the table (after a restore from a
	// backup, say): those that did not change are left as they are.
	All bool
	// ReadDirs, when set, are the only directories files may be read
	// from (a sandboxed lake's; see ingest.Options.ReadDirs).
	ReadDirs []string
}

// What Refresh did with a named file (RefreshedFile.Outcome).
const (
	RefreshUnchanged  = "unchanged"        // the file is the one registered: nothing to do
	RefreshAccepted   = "accepted"         // the same content found changed on disk: recorded as it is now
	RefreshRegistered = "registered again" // other content: new statistics, a new file id
	RefreshRemoved    = "removed"          // removed from the table (it stays on disk)
)

// RefreshedFile is what Refresh found of one named file and did with it.
type RefreshedFile struct {
	Path   string `json:"path"`
	FileID int64  `json:"file_id"`
	// Changed says how the file differs from its registration, one phrase
	// each; empty when it does not.
	Changed []string `json:"changed"`
	Outcome string   `json:"outcome"`
	// NewFileID is the file's id once registered again.
	NewFileID int64 `json:"new_file_id,omitempty"`
}

// RefreshReport lists what Refresh did, file by file.
type RefreshReport struct {
	Table string `json:"table"`
	// Snapshot is the snapshot made; 0 when every file was unchanged and
	// nothing was committed.
	Snapshot int64           `json:"snapshot_id"`
	Files    []RefreshedFile `json:"files"`
}

// Refresh re-checks named local files of a table (by their registered
// paths, as `rocklake files` lists them, or all of them: opts.All) that a
// reader refused as changed,
// and takes them back in one new snapshot, or changes nothing:
//
//   - a file whose footer is the one registered (its fingerprint, length
//     and row count) is accepted: what stat says of it now (modification
//     and status change times, device and inode) is recorded in place of
//     what registration recorded (catalog.Txn.Restamp), with --deep only
//     once its statistics hold for its rows. Its registration, row ids
//     and statistics stay, and every snapshot reads it again;
//   - a file whose content changed is refused, unless opts.Stats: then it
//     is registered again with the statistics it holds now
//     (ingest.PrepareAgain, catalog.Txn.RegisterAgain), and snapshots
//     before this one, whose statistics describe the old content, still
//     refuse it;
//   - with opts.Remove, every named file that changed or is missing is
//     removed from the table instead;
//   - a file that did not change is left as it is.
//
// Any refusal refuses the whole refresh, naming every file refused and
// why (an error matching engine.ErrDataFileChanged); nothing is
// committed. Objects are not refreshed: their reads are pinned to their
// ETags.
func Refresh(ctx context.Context, e *engine.Engine, table string, paths []string, opts RefreshOptions) (*RefreshReport, error) {
	if opts.Stats && opts.Remove {
		return nil, fmt.Errorf("%w: a refresh either registers changed files again or removes them, not both", catalog.ErrInvalid)
	}
	if len(paths) == 0 && !opts.All {
		return nil, fmt.Errorf("%w: refresh: no files named", catalog.ErrInvalid)
	}
	for attempt := 0; ; attempt++ {
		rep, err := refreshOnce(ctx, e, table, paths, opts)
		if errors.Is(err, catalog.ErrConflict) && attempt < 3 {
			continue // another writer changed the table: check again on the new state
		}
		return rep, err
	}
}

func refreshOnce(ctx context.Context, e *engine.Engine, table string, paths []string, opts RefreshOptions) (*RefreshReport, error) {
	c := e.Catalog()
	tx, err := c.Begin()
	if err != nil {
		return nil, err
	}
	st, err := openTable(c, tx.Base(), table)
	if err != nil {
		return nil, err
	}
	defer st.r.Close()
	t := st.t
	byLoc := map[string]catalog.DataFile{}
	for _, f := range st.files {
		byLoc[f.Location(t)] = f
	}
	var named []catalog.DataFile
	seen := map[int64]bool{}
	if opts.All {
		for _, f := range st.files {
			if !catalog.IsObject(f.Location(t)) {
				seen[f.ID] = true
				named = append(named, f)
			}
		}
	}
	for _, p := range paths {
		f, ok := lookupFile(byLoc, p)
		if !ok {
			return nil, fmt.Errorf("%s is not a file of table %s at the latest snapshot (see `rocklake files %s`); nothing was changed: %w", p, t.Name, t.Name, catalog.ErrNoSuchFile)
		}
		if catalog.IsObject(f.Location(t)) {
			return nil, fmt.Errorf("%w: %s is an object: reads of objects are pinned to their ETags, refresh takes back local files; nothing was changed", catalog.ErrInvalid, p)
		}
		if !seen[f.ID] {
			seen[f.ID] = true
			named = append(named, f)
		}
	}
	rep := &RefreshReport{Table: t.Name, Files: []RefreshedFile{}}
	var refused []string
	var restamps []catalog.Restamp
	var again []catalog.DataFile
	var remove []int64
	sigs := map[int64]*catalog.SignatureReader{}
	for _, f := range named {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		ex := examine(t, f)
		rf := RefreshedFile{Path: ex.path, FileID: f.ID, Changed: ex.what, Outcome: RefreshUnchanged}
		why := ""
		switch {
		case len(ex.what) == 0:
		case opts.Remove:
			remove, rf.Outcome = append(remove, f.ID), RefreshRemoved
		case ex.gone:
			why = "--remove removes it from the table"
		case ex.meta == nil:
			why = "it cannot be registered again: --remove removes it from the table"
		case ex.moved:
			why = "the file there is not the one registered at its location: --remove removes it from the table"
		case ex.contentChanged:
			if opts.Stats {
				again, rf.Outcome = append(again, f), RefreshRegistered
				break
			}
			why = "its content is not the content registered: --stats registers it again with the statistics it holds now, --remove removes it from the table"
		case f.FooterFingerprint == 0 && !opts.Deep:
			if opts.Stats {
				again, rf.Outcome = append(again, f), RefreshRegistered
				break
			}
			why = "it was registered before rocklake recorded footer fingerprints, so its content cannot be compared: --deep checks its statistics against its rows before taking it back, --stats registers it again"
		default:
			if opts.Deep {
				var problems []string
				bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
				if _, err := verifyData(ctx, e, st.r, sigs, t, f, ex.path, st.cols, bad); err != nil {
					return nil, err
				}
				if len(problems) > 0 {
					rf.Changed = append(rf.Changed, problems...)
					// Registered again, it would get the same statistics
					// from the same footer.
					why = "its rows contradict its statistics (" + strings.Join(problems, "; ") + "), which its footer holds as registered: --remove removes it from the table"
					break
				}
			}
			now := ex.meta.Stamp()
			restamps = append(restamps, catalog.Restamp{FileID: f.ID, ModifiedUnixNanos: now.Modified, ChangedUnixNanos: now.Changed,
				Identity: catalog.FileIdentity(now.ID), FileSizeBytes: ex.meta.Size, FooterSize: ex.meta.FooterSize, FooterFingerprint: ex.meta.Fingerprint})
			rf.Outcome = RefreshAccepted
		}
		if why != "" {
			refused = append(refused, fmt.Sprintf("%s: %s; %s", ex.path, strings.Join(ex.what, "; "), why))
		}
		rep.Files = append(rep.Files, rf)
	}
	if len(refused) > 0 {
		return nil, &refreshRefused{table: t.Name, files: refused}
	}
	if len(restamps) == 0 && len(again) == 0 && len(remove) == 0 {
		return rep, nil
	}
	if len(restamps) > 0 {
		tx.Restamp(t.Name, restamps...)
	}
	if len(remove) > 0 {
		tx.RemoveFiles(t.Name, remove...)
	}
	if len(again) > 0 {
		nfs, err := ingest.PrepareAgain(ctx, st.r, t, again, ingest.AgainOptions{ReadDirs: opts.ReadDirs})
		if err != nil {
			return nil, fmt.Errorf("registering changed files of table %s again: %w; nothing was changed", t.Name, err)
		}
		tx.RegisterAgain(t.Name, catalog.FileIDs(again)...)
		tx.AddFiles(t.Name, nfs...)
	}
	// The last point where a cancel leaves the catalog as it was.
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	snap, err := tx.Commit()
	if err != nil {
		return nil, err
	}
	rep.Snapshot = snap.ID
	if len(again) > 0 {
		r, err := c.Read(snap.ID)
		if err != nil {
			return nil, err
		}
		defer r.Close()
		files, err := r.Files(t.ID)
		if err != nil {
			return nil, err
		}
		newID := map[string]int64{}
		for _, f := range files {
			newID[f.Location(t)] = f.ID
		}
		for i := range rep.Files {
			if rep.Files[i].Outcome == RefreshRegistered {
				rep.Files[i].NewFileID = newID[rep.Files[i].Path]
			}
		}
	}
	return rep, nil
}

// examined is a registered local file as found on disk now.
type examined struct {
	path string
	what []string // how it differs from its registration
	gone bool     // missing, or no longer a regular file
	// meta is its footer as read now, nil when it cannot be read.
	meta *pqmeta.File
	// contentChanged: its size, row count or footer (fingerprint and
	// length, where a fingerprint was recorded) are not those registered.
	contentChanged bool
	// moved: its path now leads through a link to another path.
	moved bool
}

func examine(t catalog.Table, f catalog.DataFile) examined {
	ex := examined{path: f.Location(t), what: []string{}}
	st, err := os.Stat(ex.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		ex.gone, ex.what = true, append(ex.what, "missing")
		return ex
	case err != nil:
		ex.gone, ex.what = true, append(ex.what, err.Error())
		return ex
	case !st.Mode().IsRegular():
		ex.gone, ex.what = true, append(ex.what, fmt.Sprintf("no longer a regular file (%s)", st.Mode().Type()))
		return ex
	}
	now := pqmeta.StampOf(st)
	m, err := pqmeta.Read(ex.path, pqmeta.FileIdentity{})
	if err == nil {
		now = m.Stamp() // of the file whose footer was read
	}
	ex.what = append(ex.what, engine.RegisteredStamp(f).Differences(now)...)
	if err != nil {
		ex.what = append(ex.what, fmt.Sprintf("its footer cannot be read: %v", err))
		return ex
	}
	ex.meta = m
	if d := m.FooterDifference(f.FooterFingerprint, f.FooterSize); d != "" {
		ex.what, ex.contentChanged = append(ex.what, d), true
	} else if f.FooterFingerprint == 0 && m.FooterSize != f.FooterSize {
		ex.what, ex.contentChanged = append(ex.what, fmt.Sprintf("its footer is %d bytes, registered as %d", m.FooterSize, f.FooterSize)), true
	}
	if m.Rows != f.RecordCount {
		ex.what, ex.contentChanged = append(ex.what, fmt.Sprintf("holds %d rows, registered as %d", m.Rows, f.RecordCount)), true
	}
	ex.contentChanged = ex.contentChanged || m.Size != f.FileSizeBytes
	// Registration resolved the path's links: one put in its way since
	// leads to a file the registration never named (the same file found
	// through it is still the one registered).
	if real, err := filepath.EvalSymlinks(ex.path); err == nil && real != ex.path && len(ex.what) > 0 {
		ex.what, ex.moved = append(ex.what, fmt.Sprintf("its path now resolves to %s (links followed)", real)), true
	}
	return ex
}

// lookupFile finds a path among registered locations as written, made
// absolute, or with symbolic links resolved.
func lookupFile(byLoc map[string]catalog.DataFile, p string) (catalog.DataFile, bool) {
	if f, ok := byLoc[p]; ok {
		return f, true
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return catalog.DataFile{}, false
	}
	if f, ok := byLoc[abs]; ok {
		return f, true
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		if f, ok := byLoc[real]; ok {
			return f, true
		}
	}
	return catalog.DataFile{}, false
}

// refreshRefused lists the files a refresh refused, and why; nothing was
// committed. It matches engine.ErrDataFileChanged: the files are still
// changed.
type refreshRefused struct {
	table string
	files []string
}

func (e *refreshRefused) Error() string {
	return fmt.Sprintf("refresh of table %s refused, nothing was changed:\n  %s", e.table, strings.Join(e.files, "\n  "))
}

func (e *refreshRefused) Unwrap() error { return engine.ErrDataFileChanged }
