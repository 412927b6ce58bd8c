package catalog

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rocklake/rocklake/catalog/catalogpb"
	"github.com/rocklake/rocklake/kv"
	"github.com/rocklake/rocklake/stats"
)

// Ownership says whether cleanup may delete a data file from disk once no
// kept snapshot reads it. Files registered in place are the user's: they
// leave the catalog, never the disk. Only files rocklake wrote itself, or
// was handed when they were added, are deleted.
type Ownership uint8

const (
	// OwnerUnrecorded marks a file registered before ownership was
	// recorded. Nothing tells rocklake's rewrites from the user's files
	// then, so it is treated as the user's: never deleted.
	OwnerUnrecorded Ownership = iota
	// OwnerUser marks a file the user registered in place.
	OwnerUser
	// OwnerTaken marks a file the user handed over when adding it (add
	// --take-ownership): cleanup deletes the file, never its directory,
	// which rocklake did not create.
	OwnerTaken
	// OwnerRocklake marks a file optimize or compact wrote into a
	// directory they created: cleanup deletes the file, and the directory
	// once nothing is left in it.
	OwnerRocklake
)

// Deletable reports whether cleanup may delete a file of this ownership.
func (o Ownership) Deletable() bool { return o == OwnerTaken || o == OwnerRocklake }

func (o Ownership) String() string {
	switch o {
	case OwnerUnrecorded:
		return "unrecorded"
	case OwnerUser:
		return "user"
	case OwnerTaken:
		return "taken"
	case OwnerRocklake:
		return "rocklake"
	}
	return fmt.Sprintf("ownership(%d)", uint8(o))
}

// ownerOf is the ownership a commit records for a new file: its own, else
// the user's.
func (c *Catalog) ownerOf(nf NewFile) Ownership {
	if nf.Owner != OwnerUnrecorded {
		return nf.Owner
	}
	return OwnerUser
}

// DefaultRetention is the youngest age of snapshots Expire forgets unless
// told otherwise, as Delta's VACUUM: a reader that planned at an older
// snapshot, or a user about to time-travel, still needs its files.
const DefaultRetention = 7 * 24 * time.Hour

// ErrRetentionTooShort reports an Expire cutoff under the retention floor.
var ErrRetentionTooShort = errors.New("retention under the floor")

// ExpireOptions steer Expire. The zero value is the default.
type ExpireOptions struct {
	// DryRun reports what would be expired and writes nothing.
	DryRun bool
	// MinRetention is the floor: Expire refuses a cutoff less than this
	// long ago. 0 means DefaultRetention; negative, no floor.
	MinRetention time.Duration
}

// Expire is ExpireSnapshots behind the retention floor: a cutoff younger
// than o.MinRetention fails with ErrRetentionTooShort and changes nothing.
func (c *Catalog) Expire(olderThan time.Time, o ExpireOptions) (*ExpireResult, error) {
	floor := o.MinRetention
	if floor == 0 {
		floor = DefaultRetention
	}
	if age := c.now().Sub(olderThan); floor > 0 && age < floor {
		return nil, fmt.Errorf("%w: snapshots younger than %s are kept, and a cutoff %s ago would forget them",
			ErrRetentionTooShort, fmtAge(floor), fmtAge(max(age, 0)))
	}
	return c.ExpireSnapshots(olderThan, o.DryRun)
}

// fmtAge prints a duration in whole days when it is one, else as Go does.
func fmtAge(d time.Duration) string {
	if d > 0 && d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return d.Round(time.Second).String()
}

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
	// Deletable are the scheduled locations Cleanup will delete (rocklake
	// wrote them, or was handed them); it forgets the others and leaves
	// them on disk.
	Deletable []string
	// sweep are the forgotten tables whose keys go after the commits
	// (sweepTable).
	sweep []int64
}

// ExpireSnapshots forgets every snapshot committed before olderThan, except
// the newest, which is always kept. It applies no retention floor (Expire
// does). Files retired and tables dropped at or
// before the oldest kept snapshot are invisible to every kept snapshot:
// their rows and statistics are deleted and their files scheduled for
// Cleanup. Snapshots kept read exactly what they read before, between any
// two of its commits too (expirewrites.go). With dryRun nothing is
// written.
//
// A transaction that began at a forgotten snapshot fails at Commit with
// ErrConflict (its conflict check cannot read what happened since).
func (c *Catalog) ExpireSnapshots(olderThan time.Time, dryRun bool) (*ExpireResult, error) {
	c.commitMu.Lock()
	defer c.commitMu.Unlock()
	// What attempts cut off after some of their commits did: the attempt
	// that finishes finds only the rest.
	var earlier ExpireResult
	// Expiring again after a lost attempt is harmless: no token needed.
	res, err := retryWrites("expire snapshots", func(attempt) (*ExpireResult, error) {
		res, err := c.expireOnce(olderThan, dryRun)
		if err != nil && res != nil {
			earlier.add(res)
		}
		return res, err
	})
	if err != nil {
		if n := len(earlier.Expired) + earlier.FilesForgotten + len(earlier.Scheduled); n > 0 {
			return nil, fmt.Errorf("%w (commits before it expired %d snapshots, forgot %d files and scheduled %d; expire again to finish)",
				err, len(earlier.Expired), earlier.FilesForgotten, len(earlier.Scheduled))
		}
		return nil, err
	}
	earlier.OldestKept, earlier.sweep = res.OldestKept, res.sweep
	earlier.add(res)
	res = &earlier
	// After expireOnce has let go of its store snapshot: while one is
	// open, Pebble's compactions keep every key it sees, and the deleted
	// keys with their tombstones stayed on disk after a compaction.
	for _, id := range res.sweep {
		if err := c.sweepTable(id); err != nil {
			return nil, fmt.Errorf("expire snapshots: the expiry is committed, but deleting the keys of dropped table %d failed (expire again to finish): %w", id, err)
		}
	}
	res.sweep = nil
	return res, nil
}

// add appends what o did to what r says.
func (r *ExpireResult) add(o *ExpireResult) {
	r.Expired = append(r.Expired, o.Expired...)
	r.FilesForgotten += o.FilesForgotten
	r.TablesForgotten += o.TablesForgotten
	r.Scheduled = append(r.Scheduled, o.Scheduled...)
	r.Deletable = append(r.Deletable, o.Deletable...)
}

// forgottenFile is what expiry needs of a file it forgets (a whole
// DataFile with its path and partition values was about 400 bytes a file,
// held for every forgotten file).
type forgottenFile struct {
	id, end, size, modified int64
	rowGroups               int32
	identity                FileIdentity
	loc, etag               string
	owner                   Ownership
	registeredAgain         bool
}

// expiringTable is what expiry read of one table before writing.
type expiringTable struct {
	t              *catalogpb.Table
	gone           bool    // dropped at or before the oldest kept snapshot
	cols, filtered []int64 // its columns; those with membership filters
	live           []int64 // files whose rows stay, ascending
	dropped        int     // of a dropped table: its files, as read
	files          []forgottenFile
	deletes        []forgottenDeletes
}

// expireGroup is how many forgotten files expiry deletes between two
// points where it may commit: their variant statistics are deleted
// together (by one pass over the range they span, where the forgotten
// files are many). A variable for tests.
var expireGroup = 1024

// expireOnce reads everything it will change from one store snapshot,
// then writes in the order expirewrites.go gives. Cut off after some of
// its commits, it returns what they did with the error.
func (c *Catalog) expireOnce(olderThan time.Time, dryRun bool) (*ExpireResult, error) {
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
	w, err := newChunkedWrites(c.store, kvs, dryRun)
	if err != nil {
		return nil, err
	}
	defer w.close()
	var rewritten []int64 // tables whose blocks lose files
	var done ExpireResult // what the commits so far hold
	w.committed = func() {
		for _, id := range rewritten {
			c.plan.dropTable(id)
		}
		done = ExpireResult{Expired: res.Expired, FilesForgotten: res.FilesForgotten, TablesForgotten: res.TablesForgotten,
			Scheduled: res.Scheduled, Deletable: res.Deletable}
	}
	// partial returns what the commits so far did, with err: the caller
	// tries again, and what is committed stays done.
	partial := func(err error) (*ExpireResult, error) {
		if w.commits > 0 {
			return &done, err
		}
		return nil, err
	}

	// What forgetting needs of the expired snapshots: those an expiry cut
	// off before left (1C), and those this one expires.
	inserted := map[int64][]int64{}
	var copies [][]byte
	err = scanRange(kvs, key(tagExpiredSnapshot), func(k, v []byte) error {
		var p catalogpb.Snapshot
		if err := decodeValue(v, &p); err != nil {
			return fmt.Errorf("expired snapshot row %x: %w", k, err)
		}
		inserted[p.Id] = p.Changes.GetInsertedIntoTables()
		copies = append(copies, append([]byte(nil), k...))
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, s := range snaps {
		inserted[s.ID] = s.Changes.InsertedIntoTables
	}
	gone := func(end *int64) bool { return end != nil && *end <= oldest.ID }

	// Reading: every table's rows, the kept locations, and what goes.
	tableRows, err := latestTableRows(kvs, gone, w.del)
	if err != nil {
		return nil, err
	}
	// kept holds each location a kept row names. A forgotten file whose
	// location it holds is not scheduled.
	kept := newLocationSet()
	var tables []*expiringTable
	for _, t := range tableRows {
		et, err := readExpiring(kvs, t, gone, kept.add)
		if err != nil {
			return nil, err
		}
		tables = append(tables, et)
	}

	// 1. The expired snapshots, with a copy of what forgetting their
	// files needs where it has files to forget.
	ends := map[int64]bool{}
	for _, et := range tables {
		for _, f := range et.files {
			ends[f.end] = true
		}
	}
	for _, s := range snaps {
		if s.ID >= oldest.ID {
			break
		}
		res.Expired = append(res.Expired, s.ID)
		if err := w.del(key(tagSnapshot, s.ID)); err != nil {
			return nil, err
		}
		if ends[s.ID] && len(s.Changes.InsertedIntoTables) > 0 {
			k := key(tagExpiredSnapshot, s.ID)
			copies = append(copies, k)
			err := w.put(k, &catalogpb.Snapshot{Id: s.ID, TimeUnixMicros: s.Time.UnixMicro(),
				Changes: &catalogpb.Changes{InsertedIntoTables: s.Changes.InsertedIntoTables}})
			if err != nil {
				return nil, err
			}
		}
	}
	if err := w.boundary(); err != nil {
		return partial(err)
	}

	now := c.now().UTC().UnixMicro()
	// schedule records a file no kept snapshot reads for cleanup.
	schedule := func(tableID, fileID int64, loc string, end int64, owner Ownership) error {
		res.Scheduled = append(res.Scheduled, loc)
		if owner.Deletable() {
			res.Deletable = append(res.Deletable, loc)
		}
		return w.put(key(tagFileToDelete, tableID, fileID), &catalogpb.FileToDelete{
			TableId: tableID, FileId: fileID, Location: loc, ScheduledUnixMicros: now,
			EndSnapshot: end, Ownership: catalogpb.Ownership(owner),
		})
	}
	// forget deletes a group of a table's forgotten files, each with every
	// key of its own and its row last, and schedules them.
	forget := func(et *expiringTable, group []forgottenFile, dense bool) error {
		id := et.t.Id
		if !et.gone {
			if err := deleteFileStats(kvs, id, et.cols, et.filtered, group, et.live, dense, w.del, w.delRange()); err != nil {
				return err
			}
		}
		for _, f := range group {
			if !et.gone {
				// A dropped table's files are counted where its keys go.
				res.FilesForgotten++
				if err := w.del(key(tagDataFile, id, f.id)); err != nil {
					return err
				}
			}
			if kept.has(f.loc) {
				continue
			}
			df := DataFile{ID: f.id, TableID: id, End: stats.Known(f.end), Owner: f.owner, FileSizeBytes: f.size,
				ModifiedUnixNanos: f.modified, Identity: f.identity, ETag: f.etag}
			rewrote := slices.Contains(inserted[f.end], id) && !f.registeredAgain
			if rec := rememberForgotten(df, f.loc, rewrote); rec != nil && !et.gone {
				if err := w.put(key(tagForgottenFile, id, f.id), rec); err != nil {
					return err
				}
			}
			if err := schedule(id, f.id, f.loc, f.end, f.owner); err != nil {
				return err
			}
		}
		return w.boundary()
	}
	forgetDeletes := func(et *expiringTable, d forgottenDeletes) error {
		if !et.gone {
			if err := w.del(d.k); err != nil {
				return err
			}
		}
		// A delete file is rocklake's own and no other row names it.
		if kept.has(d.loc) {
			return nil
		}
		return schedule(et.t.Id, d.d.ID, d.loc, d.d.End.V, d.d.Owner)
	}
	var sweep []int64
	var swept []*expiringTable // dropped tables whose keys go after
	for _, et := range tables {
		id := et.t.Id
		if et.gone {
			// 3. A dropped table's files, as they are read. Those an
			// expiry cut off after scheduling them scheduled are not
			// scheduled again (ascending: keys order them by id).
			var scheduled []int64
			err := scanRange(kvs, key(tagFileToDelete, id), func(k, _ []byte) error {
				fid, err := idAt(k, 1)
				scheduled = append(scheduled, fid)
				return err
			})
			isScheduled := func(id int64) bool {
				_, ok := slices.BinarySearch(scheduled, id)
				return ok
			}
			group := make([]forgottenFile, 0, expireGroup)
			if err == nil {
				err = forgottenRows(kvs, et, gone, nil, func(f forgottenFile) error {
					et.dropped++
					if isScheduled(f.id) {
						return nil
					}
					if group = append(group, f); len(group) < expireGroup {
						return nil
					}
					err := forget(et, group, false)
					group = group[:0]
					return err
				}, func(d forgottenDeletes) error {
					if isScheduled(d.d.ID) {
						return nil
					}
					return forgetDeletes(et, d)
				})
			}
			if err == nil {
				err = forget(et, group, false)
			}
			if err != nil {
				return partial(err)
			}
		} else {
			if len(et.files) > 0 {
				rewritten = append(rewritten, id)
			}
			// 2. The blocks without the forgotten files.
			forgot := make(map[int64]bool, len(et.files))
			for _, f := range et.files {
				forgot[f.id] = true
			}
			if err := expireBlocks(kvs, id, et.cols, forgot, w.put, w.del, w.boundary); err != nil {
				return partial(err)
			}
			// 3. The forgotten files, a group at a time.
			dense := len(et.files)*16 >= len(et.files)+len(et.live)
			for start := 0; start < len(et.files); start += expireGroup {
				if err := forget(et, et.files[start:min(start+expireGroup, len(et.files))], dense); err != nil {
					return partial(err)
				}
			}
			for _, d := range et.deletes {
				if err := forgetDeletes(et, d); err != nil {
					return partial(err)
				}
			}
		}
		// 4. What named the forgotten files last.
		if !et.gone {
			err := scanBetween(kvs, key(tagRemovedFiles, id), key(tagRemovedFiles, id, oldest.ID+1), func(k, _ []byte) error {
				return w.del(k)
			})
			if err == nil {
				err = expireSlabs(kvs, id, et.cols, et.live, w.del)
			}
			if err == nil {
				err = w.boundary()
			}
			if err != nil {
				return partial(err)
			}
			continue
		}
		rd, ranges := w.b.(kv.RangeDeleter)
		if !ranges {
			// Counted after the last commit: a retry after a later
			// commit lost finds the table again.
			if !dryRun {
				sweep = append(sweep, id)
			}
			swept = append(swept, et)
			continue
		}
		// Counted in the commit that deletes its keys.
		res.TablesForgotten++
		res.FilesForgotten += et.dropped
		for _, tag := range tableTags {
			if dryRun {
				break
			}
			// One range delete: a delete per key held every key of the
			// table in the batch at once.
			prefix := key(tag, id)
			if err := rd.DeleteRange(prefix, kv.PrefixEnd(prefix)); err != nil {
				return partial(err)
			}
		}
		if err := w.boundary(); err != nil {
			return partial(err)
		}
	}
	// 5. Every file is forgotten: the snapshot copies have served.
	for _, k := range copies {
		if err := w.del(k); err != nil {
			return partial(err)
		}
	}
	if err := w.commit(); err != nil {
		return partial(fmt.Errorf("expire snapshots: %w", err))
	}
	for _, et := range swept {
		res.TablesForgotten++
		res.FilesForgotten += et.dropped
	}
	res.sweep = sweep
	return res, nil
}

// readExpiring reads what expiry changes in one table: its columns, which
// have filters, its live files (each location handed to keep) and the
// files and delete files that go. Of a dropped table it reads only the
// columns: its files are read as they are forgotten (forgottenRows), as
// a dropped table of ten million files held as a list was gigabytes.
func readExpiring(kvs kv.Reader, t *catalogpb.Table, gone func(*int64) bool, keep func(string)) (*expiringTable, error) {
	et := &expiringTable{t: t, gone: gone(t.EndSnapshot)}
	err := scanRange(kvs, key(tagColumn, t.Id), func(k, _ []byte) error {
		id, err := idAt(k, 1)
		if len(et.cols) == 0 || et.cols[len(et.cols)-1] != id {
			et.cols = append(et.cols, id)
		}
		return err
	})
	if err != nil || et.gone {
		return et, err
	}
	// Filter rows are deleted only in columns that have any: a delete
	// of an absent key still costs a tombstone (Pebble) or an index
	// probe (PostgreSQL), and most columns have none.
	for _, col := range et.cols {
		has := false
		err := scanRange(kvs, key(tagFileFilter, t.Id, col), func(_, _ []byte) error {
			has = true
			return errStopScan
		})
		if err != nil && err != errStopScan {
			return nil, err
		}
		if has {
			et.filtered = append(et.filtered, col)
		}
	}
	err = forgottenRows(kvs, et, gone, func(loc string, id int64) {
		keep(loc)
		if id >= 0 {
			et.live = append(et.live, id)
		}
	}, func(f forgottenFile) error {
		et.files = append(et.files, f)
		return nil
	}, func(d forgottenDeletes) error {
		et.deletes = append(et.deletes, d)
		return nil
	})
	return et, err
}

// forgottenRows reads the table's data file and delete file rows in key
// order: it calls live with the location and id of each that stays (-1
// for a delete file), file and deletes with each that goes.
func forgottenRows(kvs kv.Reader, et *expiringTable, gone func(*int64) bool,
	live func(loc string, id int64), file func(forgottenFile) error, deletes func(forgottenDeletes) error) error {
	tb := tableFromPB(et.t)
	var p catalogpb.DataFile
	err := scanRange(kvs, key(tagDataFile, et.t.Id), func(k, v []byte) error {
		p.Reset()
		if err := decodeValue(v, &p); err != nil {
			return fmt.Errorf("data file row %x: %w", k, err)
		}
		f := dataFileFromPB(&p)
		if !et.gone && !gone(p.EndSnapshot) {
			live(f.Location(tb), f.ID)
			return nil
		}
		return file(forgottenFile{id: f.ID, end: f.End.V, size: f.FileSizeBytes, modified: f.ModifiedUnixNanos,
			rowGroups: f.RowGroupCount, identity: f.Identity, loc: f.Location(tb), etag: f.ETag, owner: f.Owner,
			registeredAgain: f.RegisteredAgain})
	})
	if err != nil {
		return err
	}
	var dp catalogpb.DeleteFile
	return scanRange(kvs, key(tagDeleteFile, et.t.Id), func(k, v []byte) error {
		dp.Reset()
		if err := decodeValue(v, &dp); err != nil {
			return fmt.Errorf("delete file row %x: %w", k, err)
		}
		d := deleteFileFromPB(&dp)
		if !et.gone && !gone(dp.EndSnapshot) {
			live(d.Location(tb), -1)
			return nil
		}
		return deletes(forgottenDeletes{d, d.Location(tb), append([]byte(nil), k...)})
	})
}

// deleteFileStats deletes every statistics key of a group of forgotten
// files (ascending ids): per column, file stats, row-group stats (their
// indexes are below the file's count: a commit refuses others, so they
// are deleted without reading the column's row-group rows, which a store
// over the network sends whole), membership filters where the column
// has any, and variant statistics.
//
// Where the batch deletes ranges (delRange not nil), a run of at least
// minRangeFiles of the group's files with no live file's id between them
// (live, ascending) goes as one range per column and tag instead: from
// the run's first id to the id after its last, which holds the keys of
// those files and of no other file still in the table (ids between them
// are the run's, or of files forgotten before, whose keys went with
// them; a file registered later has a larger id than any). Key by key,
// each delete is an index probe on PostgreSQL: expiring the oldest tenth
// of a million files took 13 s that way, about 4 s by range.
func deleteFileStats(kvs kv.Reader, table int64, cols, filtered []int64, group []forgottenFile, live []int64, dense bool,
	del func([]byte) error, delRange func(start, end []byte) error) error {
	var single []forgottenFile // the files of runs too short for ranges
	for _, run := range fileRuns(group, live) {
		if delRange == nil || len(run) < minRangeFiles {
			single = append(single, run...)
			continue
		}
		first, past := run[0].id, run[len(run)-1].id+1
		for _, col := range cols {
			for _, tag := range []byte{tagFileColumnStats, tagRowGroupStats, tagFileVariantStats} {
				if err := delRange(key(tag, table, col, first), key(tag, table, col, past)); err != nil {
					return err
				}
			}
		}
		for _, col := range filtered {
			if err := delRange(key(tagFileFilter, table, col, first), key(tagFileFilter, table, col, past)); err != nil {
				return err
			}
		}
	}
	if len(single) == 0 {
		return nil
	}
	group = single
	for _, f := range group {
		for _, col := range cols {
			if err := del(key(tagFileColumnStats, table, col, f.id)); err != nil {
				return err
			}
			for rg := range f.rowGroups {
				if err := del(rowGroupKey(table, col, f.id, rg)); err != nil {
					return err
				}
			}
		}
		for _, col := range filtered {
			if err := del(key(tagFileFilter, table, col, f.id)); err != nil {
				return err
			}
		}
	}
	ids := make([]int64, len(group))
	for i, f := range group {
		ids[i] = f.id
	}
	for _, col := range cols {
		if err := deleteFileKeys(kvs, key(tagFileVariantStats, table, col), ids, dense, del); err != nil {
			return err
		}
	}
	return nil
}

// minRangeFiles is the fewest files deleteFileStats deletes by range: a
// range costs PostgreSQL two statements of its own, and a key of a short
// run is cheaper in the batch's one statement of deletes. A variable for
// tests.
var minRangeFiles = 32

// fileRuns splits files (ascending ids) where a live file's id (live,
// ascending) lies between two of them.
func fileRuns(files []forgottenFile, live []int64) [][]forgottenFile {
	var runs [][]forgottenFile
	start := 0
	for i := 1; i <= len(files); i++ {
		if i < len(files) {
			// The live files below each: equal when none is between.
			a, _ := slices.BinarySearch(live, files[i-1].id)
			b, _ := slices.BinarySearch(live, files[i].id)
			if a == b {
				continue
			}
		}
		runs = append(runs, files[start:i])
		start = i
	}
	return runs
}

// sweepKeys is the most deletes one batch of sweepTable holds: about
// 8 MB of keys, 32 MB of batch as Pebble grows it (a million deletes were
// 128 MB, held beside the flushable batch Pebble makes of it).
var sweepKeys = 1 << 18

// sweepTable deletes every key of a table that expiry forgot, in batches
// of at most sweepKeys deletes, each committed alone, the table's own row
// last. Deleted key by key in one batch (a store without range deletes),
// the keys of a dropped table of a million files were 25 million deletes
// and 1.5 GB held at once.
//
// This is safe after expiry's commits: no kept snapshot reads the table
// (it ended at or before the oldest kept one, and the snapshots before
// that are deleted by then), no commit writes to it, and its files were
// scheduled in expiry's commits. A sweep cut off part-way leaves the
// table's row, so the next expiry finds the table forgotten again and
// sweeps what is left, without scheduling its files again.
func (c *Catalog) sweepTable(id int64) error {
	var tags []byte
	for _, tag := range tableTags {
		if tag != tagTable {
			tags = append(tags, tag)
		}
	}
	tags = append(tags, tagTable)
	b := c.store.NewBatch()
	defer func() { b.Close() }()
	flush := func() error {
		if b.Len() == 0 {
			return nil
		}
		if err := b.Commit(); err != nil {
			return err
		}
		b.Close()
		b = c.store.NewBatch()
		return nil
	}
	for _, tag := range tags {
		if tag == tagTable {
			// The row goes in a batch after every other key's.
			if err := flush(); err != nil {
				return err
			}
		}
		err := scanRange(c.store, key(tag, id), func(k, _ []byte) error {
			if err := b.Delete(k); err != nil {
				return err
			}
			if b.Len() >= sweepKeys {
				return flush()
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return flush()
}

// tableTags are the tags whose keys begin with a table's id: everything
// of a table but its scheduled files (which cleanup settles).
var tableTags = []byte{tagTable, tagColumn, tagDataFile, tagFilePath, tagFileColumnStats,
	tagRowGroupStats, tagFileVariantStats, tagTableStats, tagTableColumnStats, tagTableVariantStats, tagFileFilter,
	tagMemberSlab, tagMemberGroup, tagFileBlock, tagStatsBlock, tagBlockSummary, tagRemovedFiles, tagBlocksMarker, tagForgottenFile, tagDeleteFile}

// deleteFileKeys deletes every key under prefix+id for the ids given
// (ascending): a file's variant stats in one column. Seeking
// to each file costs a read per file (a round trip on a networked store),
// so where the files are a sixteenth of the table or more (dense) the
// range from the first id to the last is read once instead; elsewhere one iterator seeks forward
// from file to file, which keeps the blocks it read.
func deleteFileKeys(r kv.Reader, prefix []byte, ids []int64, dense bool, del func([]byte) error) error {
	it, err := r.NewIter(prefix, kv.PrefixEnd(prefix))
	if err != nil {
		return err
	}
	defer it.Close()
	fileOf := func(k []byte) int64 {
		if len(k) < len(prefix)+8 {
			return -1
		}
		return int64(binary.BigEndian.Uint64(k[len(prefix):]))
	}
	if len(ids) == 0 {
		return nil
	}
	i := 0 // the first id not yet passed
	if dense {
		first := binary.BigEndian.AppendUint64(slices.Clip(prefix), uint64(ids[0]))
		for ok := it.SeekGE(first); ok && i < len(ids); ok = it.Next() {
			f := fileOf(it.Key())
			for i < len(ids) && ids[i] < f {
				i++
			}
			if i < len(ids) && ids[i] == f {
				if err := del(it.Key()); err != nil {
					return err
				}
			}
		}
		return it.Error()
	}
	for _, id := range ids {
		k := binary.BigEndian.AppendUint64(slices.Clip(prefix), uint64(id))
		for ok := it.SeekGE(k); ok && fileOf(it.Key()) == id; ok = it.Next() {
			if err := del(it.Key()); err != nil {
				return err
			}
		}
		if err := it.Error(); err != nil {
			return err
		}
	}
	return nil
}

// locationSet holds file locations as 64-bit hashes, not strings: ten
// million live files' locations held as strings in a map were a gigabyte.
// Two locations with one hash (odds near one in 10^12 at these counts)
// make a location it does not hold look held, so it serves only where
// held means the file stays: a file is never deleted or scheduled for
// it, at worst kept for cleanup --orphans to find.
type locationSet struct {
	seed   maphash.Seed
	hashes []uint64
	sorted bool
}

func newLocationSet() *locationSet { return &locationSet{seed: maphash.MakeSeed()} }

func (s *locationSet) add(loc string) {
	s.hashes = append(s.hashes, maphash.String(s.seed, loc))
	s.sorted = false
}

func (s *locationSet) has(loc string) bool {
	if !s.sorted {
		slices.Sort(s.hashes)
		s.sorted = true
	}
	_, ok := slices.BinarySearch(s.hashes, maphash.String(s.seed, loc))
	return ok
}

// forgottenDeletes is a delete file no kept snapshot applies.
type forgottenDeletes struct {
	d   DeleteFile
	loc string
	k   []byte // its row's key
}

// expireSlabs deletes the membership slabs (header and groups) of the
// table's columns that name no file whose row stays: no snapshot can ask
// about any of their files, and a probe would read their header for
// nothing. A slab naming a live file stays whole, dead files included
// (probes skip them): rewriting it would mean reading every group.
// Deleting a slab a live file were in would only make that file's probes
// read its own filter (membership.go), never lose a row.
//
// live is the ids of the files whose rows stay, ascending.
func expireSlabs(r kv.Reader, table int64, cols []int64, live []int64, del func([]byte) error) error {
	for _, col := range cols {
		var dead [][]byte // slab keys
		err := scanRange(r, key(tagMemberSlab, table, col), func(k, v []byte) error {
			var p catalogpb.MembershipSlab
			if err := decodeValue(v, &p); err != nil {
				return nil // not understood: left as it is, as probes leave it
			}
			for _, id := range p.FileIds {
				if _, ok := slices.BinarySearch(live, id); ok {
					return nil
				}
			}
			dead = append(dead, append([]byte(nil), k...))
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range dead {
			if err := del(k); err != nil {
				return err
			}
			level, first, err := slabAt(k)
			if err != nil {
				return err
			}
			if err := scanRange(r, key(tagMemberGroup, table, col, level, first), func(k, _ []byte) error { return del(k) }); err != nil {
				return err
			}
		}
	}
	return nil
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
	Owner           Ownership
}

// DefaultGrace is how long a scheduled file waits before Cleanup deletes
// it: a query that planned before the expiry may still be reading it.
const DefaultGrace = time.Hour

// CleanupOptions steer Cleanup. The zero value is the default.
type CleanupOptions struct {
	// DryRun reports what would be done and changes nothing.
	DryRun bool
	// Grace: a file scheduled less than this long ago waits for a later
	// Cleanup. 0 means DefaultGrace; negative, none.
	Grace time.Duration
	// Context, when set, stops Cleanup between two deletions once it is
	// done: the files deleted so far are unscheduled, the others stay
	// scheduled, and Cleanup returns its result with the context's cause.
	Context context.Context
	// DeleteObject deletes a scheduled object of rocklake's (an s3://
	// location; a missing one is no error). Without it such objects stay
	// scheduled and are reported as failed.
	DeleteObject func(loc string) error
}

// CleanupResult says what Cleanup did (or, in a dry run, would do).
type CleanupResult struct {
	// Deleted are the locations removed from disk (or already gone).
	Deleted []string
	// Forgotten are the user's files (registered in place, or before
	// ownership was recorded): unscheduled and left on disk.
	Forgotten []string
	// Kept are scheduled locations that a data-file row names again (the
	// path was registered anew); they are unscheduled, not deleted.
	Kept []string
	// Waiting are files scheduled less than the grace period ago; they
	// stay scheduled.
	Waiting []ScheduledFile
	// Failed maps a location to why it could not be removed; it stays
	// scheduled.
	Failed map[string]error
	// Dirs are directories rocklake created for rewritten files that the
	// deletions left empty, removed too. No other directory is removed.
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
			Scheduled: time.UnixMicro(p.ScheduledUnixMicros).UTC(), EndSnapshot: p.EndSnapshot,
			Owner: Ownership(p.Ownership)})
		return nil
	})
	return out, err
}

// Cleanup settles the files ExpireSnapshots scheduled. A file rocklake
// wrote, or was handed, is deleted once it has been scheduled for the
// grace period; the user's files are unscheduled and left on disk. It
// deletes nothing else: only files the catalog once registered and no kept
// snapshot reads, re-checked here against every data-file row (a path
// registered again since is kept), and the directories rocklake created
// for its rewrites once they are empty.
func (c *Catalog) Cleanup(o CleanupOptions) (*CleanupResult, error) {
	c.commitMu.Lock()
	defer c.commitMu.Unlock()
	// Between reading which files no row names and deleting them, no
	// other process may register one of them again.
	newBatch, release, err := c.writeLock()
	if err != nil {
		return nil, err
	}
	defer release()
	grace := o.Grace
	if grace == 0 {
		grace = DefaultGrace
	}
	dryRun := o.DryRun
	if !dryRun {
		if err := c.pruneForgotten(newBatch); err != nil {
			return nil, err
		}
	}
	sched, err := c.ScheduledFiles()
	if err != nil || len(sched) == 0 {
		return &CleanupResult{Failed: map[string]error{}}, err
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
	// named holds every location a row names: cleanup keeps those files.
	named := newLocationSet()
	for _, t := range tables {
		tb := tableFromPB(t)
		var p catalogpb.DataFile
		err := scanRange(kvs, key(tagDataFile, t.Id), func(k, v []byte) error {
			p.Reset()
			if err := decodeValue(v, &p); err != nil {
				return fmt.Errorf("data file row %x: %w", k, err)
			}
			named.add(dataFileFromPB(&p).Location(tb))
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	res := &CleanupResult{Failed: map[string]error{}}
	due := graceCutoff(c.now(), grace)
	b := newBatch()
	defer b.Close()
	dirs := map[string]bool{} // directories of deleted rewrite outputs
	var stopped error
	for _, s := range sched {
		if o.Context != nil && o.Context.Err() != nil {
			stopped = context.Cause(o.Context)
			break
		}
		switch {
		case named.has(s.Location):
			res.Kept = append(res.Kept, s.Location)
		case !s.Owner.Deletable():
			// Forgetting touches no file: no reader can be hurt, so no
			// grace period applies.
			res.Forgotten = append(res.Forgotten, s.Location)
		case s.Scheduled.After(due):
			res.Waiting = append(res.Waiting, s)
			continue
		case IsObject(s.Location) && o.DeleteObject == nil:
			// os.Remove must never be handed an s3:// location, which it
			// would read as a relative path; the object stays scheduled.
			res.Failed[s.Location] = errors.New("an object, and no object store was given to delete it with")
			continue
		case dryRun:
			res.Deleted = append(res.Deleted, s.Location)
		default:
			var err error
			if IsObject(s.Location) {
				err = o.DeleteObject(s.Location)
			} else if err = os.Remove(s.Location); errors.Is(err, fs.ErrNotExist) {
				err = nil
			}
			if err != nil {
				res.Failed[s.Location] = err
				continue
			}
			res.Deleted = append(res.Deleted, s.Location)
		}
		if s.Owner == OwnerRocklake && !named.has(s.Location) && !IsObject(s.Location) {
			dirs[filepath.Dir(s.Location)] = true
		}
		if !dryRun {
			if err := b.Delete(key(tagFileToDelete, s.TableID, s.FileID)); err != nil {
				return nil, err
			}
		}
	}
	if !dryRun && b.Len() > 0 {
		err := fence(kvs, b)
		if err == nil {
			err = b.Commit()
		}
		if err != nil {
			return nil, fmt.Errorf("cleanup: %w", err)
		}
	}
	// Only the directory a rewrite created for its files goes, and only
	// when nothing but its marker is left in it.
	deleted := map[string]bool{}
	for _, p := range res.Deleted {
		deleted[p] = true
	}
	for d := range dirs {
		if dryRun {
			if emptiedBy(d, deleted) {
				res.Dirs = append(res.Dirs, d)
			}
		} else {
			res.Dirs = append(res.Dirs, removeEmptied(d, c.RewriteRoot())...)
		}
	}
	sort.Strings(res.Dirs)
	if stopped != nil {
		return res, fmt.Errorf("cleanup stopped: %w (%d files deleted and unscheduled, the rest still scheduled)", stopped, len(res.Deleted))
	}
	return res, nil
}

// pruneForgotten drops the records of forgotten user files (forgotten.go)
// whose local file has left the disk: a file written at that path later
// holds other rows.
func (c *Catalog) pruneForgotten(newBatch func() kv.Batch) error {
	kvs, err := c.store.NewSnapshot()
	if err != nil {
		return err
	}
	defer kvs.Close()
	keys, _, err := goneForgotten(kvs)
	if err != nil || len(keys) == 0 {
		return err
	}
	b := newBatch()
	defer b.Close()
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	if err := fence(kvs, b); err != nil {
		return err
	}
	if err := b.Commit(); err != nil {
		return fmt.Errorf("cleanup: %w", err)
	}
	return nil
}

// removeEmptied removes d once nothing but a rewrite's marker is left in
// it and, where d is a key=value directory of a Hive layout below a
// rewrite directory, each parent up to that rewrite directory that it
// leaves as empty; it returns the directories removed. A table's
// directory under the rewrite root (root/<table>/<rewrite>) goes with its
// last rewrite directory, if that leaves it empty; it is not listed, as
// cleanup never listed it.
func removeEmptied(d, root string) []string {
	top := rewriteDirAbove(d)
	var out []string
	for removeRewriteDir(d) {
		out = append(out, d)
		if top == "" || d == top {
			break
		}
		d = filepath.Dir(d)
	}
	if len(out) > 0 {
		last := out[len(out)-1]
		if root != "" && within(root, last) && filepath.Dir(filepath.Dir(last)) == root {
			os.Remove(filepath.Dir(last))
		}
	}
	return out
}

// rewriteDirAbove is the rewrite directory d is, or lies in through the
// key=value directories of a Hive layout; "" when there is none.
func rewriteDirAbove(d string) string {
	for !IsRewriteDir(d) {
		parent := filepath.Dir(d)
		if !strings.Contains(filepath.Base(d), "=") || parent == d {
			return ""
		}
		d = parent
	}
	return d
}

// removeRewriteDir removes dir when nothing but a rewrite's marker is left
// in it, and reports whether it did.
func removeRewriteDir(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if e.Name() != RewriteMarker {
			return false
		}
	}
	if len(entries) > 0 {
		if err := os.Remove(filepath.Join(dir, RewriteMarker)); err != nil {
			return false
		}
	}
	return os.Remove(dir) == nil
}

// emptiedBy reports whether deleting the paths would leave dir empty.
func emptiedBy(dir string, deleted map[string]bool) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if e.Name() != RewriteMarker && !deleted[filepath.Join(dir, e.Name())] {
			return false
		}
	}
	return true
}
