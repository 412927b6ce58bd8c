package catalog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"rocklake/catalog/catalogpb"
	"rocklake/kv"
)

// ExpireResult says what ExpireSnapshots removed (or, in a dry run, would
// remove).
type ExpireResult struct {
	// OldestKept is the oldest snapshot left; time travel reaches it and
	// everything after it.
	OldestKept Snapshot
	// Expired are the forgotten snapshot ids, oldest first.
	Expired []int64
	// FilesForgotten counts data-file rows deleted with their stats;
	// TablesForgotten counts dropped tables deleted with everything in them.
	FilesForgotten, TablesForgotten int
	// Scheduled are the file locations handed to Cleanup. A forgotten file
	// whose location a kept row still names is not scheduled.
	Scheduled []string
}

// ExpireSnapshots forgets every snapshot committed before olderThan, except
// the newest, which is always kept. Files retired and tables dropped at or
// before the oldest kept snapshot are invisible to every kept snapshot:
// their rows and statistics are deleted and their files scheduled for
// Cleanup. Snapshots kept read exactly what they read before. With dryRun
// nothing is written.
//
// A transaction that began at a forgotten snapshot fails at Commit with
// ErrConflict (its conflict check cannot read what happened since).
func (c *Catalog) ExpireSnapshots(olderThan time.Time, dryRun bool) (*ExpireResult, error) {
	c.commitMu.Lock()
	defer c.commitMu.Unlock()
	kvs, err := c.store.NewSnapshot()
	if err != nil {
		return nil, err
	}
	defer kvs.Close()
	snaps, err := c.Snapshots()
	if err != nil {
		return nil, err
	}
	if len(snaps) == 0 {
		return nil, fmt.Errorf("%w: the catalog has no snapshot", ErrCorrupt)
	}
	// Snapshot ids grow with commit time, but a clock may step back: the
	// oldest kept snapshot is the first committed at or after the cutoff,
	// and everything after it is kept too.
	oldest := snaps[len(snaps)-1]
	for _, s := range snaps {
		if !s.Time.Before(olderThan) {
			oldest = s
			break
		}
	}
	res := &ExpireResult{OldestKept: oldest}
	b := c.store.NewBatch()
	defer b.Close()
	del := func(k []byte) error {
		if dryRun {
			return nil
		}
		return b.Delete(append([]byte(nil), k...))
	}
	for _, s := range snaps {
		if s.ID >= oldest.ID {
			break
		}
		res.Expired = append(res.Expired, s.ID)
		if err := del(key(tagSnapshot, s.ID)); err != nil {
			return nil, err
		}
	}
	gone := func(end *int64) bool { return end != nil && *end <= oldest.ID }

	tables, err := allTableRows(kvs)
	if err != nil {
		return nil, err
	}
	type forgotten struct {
		f   DataFile
		loc string
	}
	var files []forgotten
	kept := map[string]bool{} // locations kept rows name
	for _, t := range tables {
		tb := tableFromPB(t)
		tableGone := gone(t.EndSnapshot)
		var colIDs []int64
		err := scanRange(kvs, key(tagColumn, t.Id), func(k, _ []byte) error {
			id, err := idAt(k, 1)
			if len(colIDs) == 0 || colIDs[len(colIDs)-1] != id {
				colIDs = append(colIDs, id)
			}
			return err
		})
		if err != nil {
			return nil, err
		}
		var p catalogpb.DataFile
		err = scanRange(kvs, key(tagDataFile, t.Id), func(k, v []byte) error {
			p.Reset()
			if err := decodeValue(v, &p); err != nil {
				return fmt.Errorf("data file row %x: %w", k, err)
			}
			f := dataFileFromPB(&p)
			if !tableGone && !gone(p.EndSnapshot) {
				kept[f.Location(tb)] = true
				return nil
			}
			files = append(files, forgotten{f, f.Location(tb)})
			if tableGone {
				return nil // the whole table's key ranges go below
			}
			if err := del(k); err != nil {
				return err
			}
			for _, col := range colIDs {
				for _, tag := range []byte{tagFileColumnStats, tagFileFilter} {
					if err := del(key(tag, t.Id, col, f.ID)); err != nil {
						return err
					}
				}
				for _, tag := range []byte{tagRowGroupStats, tagFileVariantStats} {
					if err := scanRange(kvs, key(tag, t.Id, col, f.ID), func(k, _ []byte) error { return del(k) }); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if tableGone {
			res.TablesForgotten++
			for _, tag := range []byte{tagTable, tagColumn, tagDataFile, tagFilePath, tagFileColumnStats,
				tagRowGroupStats, tagFileVariantStats, tagTableStats, tagTableColumnStats, tagTableVariantStats, tagFileFilter} {
				if err := scanRange(kvs, key(tag, t.Id), func(k, _ []byte) error { return del(k) }); err != nil {
					return nil, err
				}
			}
		}
	}
	now := c.now().UTC().UnixMicro()
	for _, f := range files {
		res.FilesForgotten++
		if kept[f.loc] {
			continue
		}
		res.Scheduled = append(res.Scheduled, f.loc)
		if dryRun {
			continue
		}
		v, err := encodeValue(&catalogpb.FileToDelete{
			TableId: f.f.TableID, FileId: f.f.ID, Location: f.loc, ScheduledUnixMicros: now,
			EndSnapshot: f.f.End.V,
		})
		if err == nil {
			err = b.Set(key(tagFileToDelete, f.f.TableID, f.f.ID), v)
		}
		if err != nil {
			return nil, err
		}
	}
	if dryRun || b.Len() == 0 {
		return res, nil
	}
	if err := b.Commit(); err != nil {
		return nil, fmt.Errorf("expire snapshots: %w", err)
	}
	return res, nil
}

// allTableRows reads every table row, dropped or not, of every version.
func allTableRows(r kv.Reader) ([]*catalogpb.Table, error) {
	var out []*catalogpb.Table
	err := scanRange(r, key(tagTable), func(k, v []byte) error {
		p := &catalogpb.Table{}
		if err := decodeValue(v, p); err != nil {
			return fmt.Errorf("table row %x: %w", k, err)
		}
		out = append(out, p)
		return nil
	})
	return out, err
}

// scanRange calls fn for every key with the prefix, through any reader.
func scanRange(r kv.Reader, prefix []byte, fn func(k, v []byte) error) error {
	return scanBetween(r, prefix, kv.PrefixEnd(prefix), fn)
}

// ScheduledFile is a file awaiting Cleanup.
type ScheduledFile struct {
	TableID, FileID int64
	Location        string
	Scheduled       time.Time
	EndSnapshot     int64
}

// CleanupResult says what Cleanup did.
type CleanupResult struct {
	// Deleted are the locations removed from disk (or already gone).
	Deleted []string
	// Kept are scheduled locations that a data-file row names again (the
	// path was registered anew); they are unscheduled, not deleted.
	Kept []string
	// Failed maps a location to why it could not be removed; it stays
	// scheduled.
	Failed map[string]error
	// Dirs are directories that deleting the files left empty, removed
	// too (a rewrite's output directory, once all its files are gone).
	Dirs []string
}

// ScheduledFiles lists the files ExpireSnapshots handed to Cleanup.
func (c *Catalog) ScheduledFiles() ([]ScheduledFile, error) {
	var out []ScheduledFile
	err := scanRange(c.store, key(tagFileToDelete), func(k, v []byte) error {
		var p catalogpb.FileToDelete
		if err := decodeValue(v, &p); err != nil {
			return fmt.Errorf("scheduled file row %x: %w", k, err)
		}
		out = append(out, ScheduledFile{TableID: p.TableId, FileID: p.FileId, Location: p.Location,
			Scheduled: time.UnixMicro(p.ScheduledUnixMicros).UTC(), EndSnapshot: p.EndSnapshot})
		return nil
	})
	return out, err
}

// Cleanup deletes the files ExpireSnapshots scheduled and unschedules them.
// It deletes nothing else: only files the catalog once registered and no
// kept snapshot reads, re-checked here against every data-file row (a path
// registered again since is kept). With dryRun nothing is deleted.
func (c *Catalog) Cleanup(dryRun bool) (*CleanupResult, error) {
	c.commitMu.Lock()
	defer c.commitMu.Unlock()
	sched, err := c.ScheduledFiles()
	if err != nil || len(sched) == 0 {
		return &CleanupResult{}, err
	}
	kvs, err := c.store.NewSnapshot()
	if err != nil {
		return nil, err
	}
	defer kvs.Close()
	tables, err := allTableRows(kvs)
	if err != nil {
		return nil, err
	}
	named := map[string]bool{}
	for _, t := range tables {
		tb := tableFromPB(t)
		var p catalogpb.DataFile
		err := scanRange(kvs, key(tagDataFile, t.Id), func(k, v []byte) error {
			p.Reset()
			if err := decodeValue(v, &p); err != nil {
				return fmt.Errorf("data file row %x: %w", k, err)
			}
			named[dataFileFromPB(&p).Location(tb)] = true
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	res := &CleanupResult{Failed: map[string]error{}}
	b := c.store.NewBatch()
	defer b.Close()
	for _, s := range sched {
		switch {
		case named[s.Location]:
			res.Kept = append(res.Kept, s.Location)
		case dryRun:
			res.Deleted = append(res.Deleted, s.Location)
			continue
		default:
			if err := os.Remove(s.Location); err != nil && !errors.Is(err, fs.ErrNotExist) {
				res.Failed[s.Location] = err
				continue
			}
			res.Deleted = append(res.Deleted, s.Location)
		}
		if !dryRun {
			if err := b.Delete(key(tagFileToDelete, s.TableID, s.FileID)); err != nil {
				return nil, err
			}
		}
	}
	if b.Len() > 0 {
		if err := b.Commit(); err != nil {
			return nil, fmt.Errorf("cleanup: %w", err)
		}
	}
	if !dryRun {
		// A directory the deletions emptied goes too; os.Remove refuses
		// one that still holds anything.
		dirs := map[string]bool{}
		for _, p := range res.Deleted {
			dirs[filepath.Dir(p)] = true
		}
		for d := range dirs {
			if os.Remove(d) == nil {
				res.Dirs = append(res.Dirs, d)
			}
		}
		sort.Strings(res.Dirs)
	}
	return res, nil
}
