package catalog

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/rocklake/rocklake/catalog/catalogpb"
	"github.com/rocklake/rocklake/stats"
)

// Positional delete files (merge-on-read).
//
// A delete of some rows of a data file, on a table whose write options ask
// for merge-on-read, writes a Parquet file of their positions, DuckLake's
// layout (file_path VARCHAR, pos BIGINT; pos counts from 0 as
// read_parquet's file_row_number does), and records it under row 19:
//
//	19 table file begin   DeleteFile   one version per delete of the file's rows
//
// At most one version per data file is visible at a snapshot, and it holds
// every position deleted up to it: a second delete writes a file of both
// deletes' positions and ends the first (Replaces), so a reader applies
// one file per data file. Retiring the data file (a rewrite that folds the
// deletes, a drop) ends its delete file in the same commit; expire forgets
// the versions no kept snapshot sees and schedules their files for cleanup
// like a data file's.
//
// The data file's statistics rows are untouched: bounds of all its rows
// bound the rows left, so pruning stays sound, but they are no longer
// exact, and its record count counts deleted rows too. Readers that answer
// from statistics (a metadata count, an exact min) subtract DeleteCount or
// read the file (see Reader.TableStats).

// DeleteFile is the positional delete file of one data file at a
// snapshot.
type DeleteFile struct {
	ID, TableID, DataFileID int64
	Path                    string
	PathIsRelative          bool
	// DeleteCount is how many of the data file's rows it deletes: the
	// number of distinct positions it holds, which the writer checked.
	DeleteCount       int64
	FileSizeBytes     int64
	ModifiedUnixNanos int64
	// ETag is an object's, as the store sent it (quotes kept): readers
	// fetch the object only while it still has it. Empty for local files.
	ETag  string
	Begin int64
	End   stats.Maybe[int64]
	Owner Ownership
}

// Location is where the file lives.
func (d DeleteFile) Location(t Table) string {
	if d.PathIsRelative && !IsObject(t.Path) {
		return filepath.Join(t.Path, d.Path)
	}
	return d.Path
}

// NewDeleteFile describes a delete file to record for a live data file.
type NewDeleteFile struct {
	DataFileID int64
	// DataFilePath names the data file instead of DataFileID (0): one
	// live, or added earlier in the same commit (whose id is not known
	// before it), by the path it was added under.
	DataFilePath string
	// Path is where the file was written (absolute, or an object).
	Path              string
	DeleteCount       int64
	FileSizeBytes     int64
	ModifiedUnixNanos int64
	// ETag is an object's (required for one), as the store sent it.
	ETag string
	// Replaces is the id of the data file's delete file the writer read
	// and merged into this one (0: the data file had none). The commit
	// fails with ErrConflict when another delete file became current
	// since, whose positions this one may lack.
	Replaces int64
}

// SetDeletes records delete files for live data files of a table, each
// ending the data file's current one (see NewDeleteFile.Replaces).
func (t *Txn) SetDeletes(table string, files ...NewDeleteFile) {
	t.ops = append(t.ops, op{kind: opSetDeletes, table: table, deletes: files})
}

// ExpectDeletes makes the commit fail with ErrConflict unless each of the
// table's files (by id) has at the head the delete file read (its id; 0:
// none): a rewrite of those files read their rows less those deletes, and
// a delete landed since would come back to life in its output. Put it
// before the RemoveFiles of the same files.
func (t *Txn) ExpectDeletes(table string, read map[int64]int64) {
	t.ops = append(t.ops, op{kind: opExpectDeletes, table: table, expect: read})
}

func (w *commitWriter) expectDeletes(name string, read map[int64]int64) error {
	ts, err := w.table(name)
	if err != nil {
		return err
	}
	if err := w.prepareDeletes(ts, len(read)); err != nil {
		return err
	}
	for id, want := range read {
		cur, _, err := w.currentDelete(ts, id)
		if err != nil {
			return err
		}
		if cur.ID != want {
			return fmt.Errorf("%w: rows of a file of table %q were deleted since it was read (file id %d); retry", ErrConflict, ts.t.Name, id)
		}
	}
	return ErrUnchanged
}

// deleteFilesColumn is the plan cache's column for a table's current
// delete files (FileSet's is -1).
const deleteFilesColumn = -2

// DeleteFiles returns the table's delete files visible at the reader's
// snapshot, by data file id; an empty map when none. The result is shared
// (a query asks for it several times, and a table of many delete files
// decodes each row every time otherwise); do not modify it.
//
// It is cached under the state's next_file_id, as the file set is: every
// commit that changes which delete files a table applies advances it (a
// delete file takes its id from it; retiring a data file, which ends its
// delete file, narrows the table's stats).
func (r *Reader) DeleteFiles(tableID int64) (map[int64]DeleteFile, error) {
	k := r.cacheKey(tableID, deleteFilesColumn)
	if v, ok := r.c.plan.get(k).(map[int64]DeleteFile); ok {
		return v, nil
	}
	out, err := r.readDeleteFiles(tableID)
	if err == nil {
		r.c.plan.put(k, out, 64+int64(len(out))*deleteFileBytes)
	}
	return out, err
}

// deleteFileBytes is about what one entry of DeleteFiles' map holds.
const deleteFileBytes = 200

func (r *Reader) readDeleteFiles(tableID int64) (map[int64]DeleteFile, error) {
	out := map[int64]DeleteFile{}
	var p catalogpb.DeleteFile
	err := scanPrefix(r, key(tagDeleteFile, tableID), func(k, v []byte) error {
		p.Reset()
		if err := decodeValue(v, &p); err != nil {
			return fmt.Errorf("delete file row %x: %w", k, err)
		}
		if visibleAt(r.snap.ID, p.BeginSnapshot, p.EndSnapshot) {
			out[p.DataFileId] = deleteFileFromPB(&p)
		}
		return nil
	})
	return out, err
}

// DeleteFileVersions returns every delete file row of the table the
// store holds, whatever snapshot sees it (expire forgets those no kept
// snapshot applies), in data file order; VisibleAt tells one snapshot's.
func (r *Reader) DeleteFileVersions(tableID int64) ([]DeleteFile, error) {
	var out []DeleteFile
	var p catalogpb.DeleteFile
	err := scanPrefix(r, key(tagDeleteFile, tableID), func(k, v []byte) error {
		p.Reset()
		if err := decodeValue(v, &p); err != nil {
			return fmt.Errorf("delete file row %x: %w", k, err)
		}
		out = append(out, deleteFileFromPB(&p))
		return nil
	})
	return out, err
}

// VisibleAt says whether snapshot s applies the delete file.
func (d DeleteFile) VisibleAt(s int64) bool {
	return d.Begin <= s && (!d.End.Known || s < d.End.V)
}

func deleteFileFromPB(p *catalogpb.DeleteFile) DeleteFile {
	return DeleteFile{
		ID: p.Id, TableID: p.TableId, DataFileID: p.DataFileId, Path: p.Path, PathIsRelative: p.PathIsRelative,
		DeleteCount: p.DeleteCount, FileSizeBytes: p.FileSizeBytes, ModifiedUnixNanos: p.ModifiedUnixNanos, ETag: p.Etag,
		Begin: p.BeginSnapshot, End: maybeInt(p.EndSnapshot), Owner: Ownership(p.Ownership),
	}
}

func deleteFileToPB(d DeleteFile, end *int64) *catalogpb.DeleteFile {
	return &catalogpb.DeleteFile{
		Id: d.ID, TableId: d.TableID, DataFileId: d.DataFileID, Path: d.Path, PathIsRelative: d.PathIsRelative,
		DeleteCount: d.DeleteCount, FileSizeBytes: d.FileSizeBytes, ModifiedUnixNanos: d.ModifiedUnixNanos, Etag: d.ETag,
		BeginSnapshot: d.Begin, EndSnapshot: end, Ownership: catalogpb.Ownership(d.Owner),
	}
}

// peekLimit is the most files an operation of a commit looks up one by
// one (a point read or a short scan each) before it reads all the table's
// rows of their kind instead: a DELETE of one id among 10,000 files
// touches a dozen, and reading the other rows cost it more than the rest
// of its commit.
const peekLimit = 64

// loadDeletes reads the head's current delete files of a table, once per
// commit, in one range scan; what this commit knows already (looked up or
// changed, delKnown) stays as it is.
func (w *commitWriter) loadDeletes(ts *tableState) error {
	if ts.deletesAll {
		return nil
	}
	if ts.deletes == nil {
		ts.deletes, ts.delKnown = map[int64]DeleteFile{}, map[int64]bool{}
	}
	ts.deletesAll = true
	if ts.created {
		return nil
	}
	ds, err := w.r.DeleteFiles(ts.t.ID)
	if err != nil {
		return err
	}
	for id, d := range ds {
		if !ts.delKnown[id] {
			ts.deletes[id] = d
		}
	}
	return nil
}

// prepareDeletes readies the current delete files of n data files to be
// looked up: all of the table's, in one scan, when n is more than a few.
func (w *commitWriter) prepareDeletes(ts *tableState, n int) error {
	if n > peekLimit {
		return w.loadDeletes(ts)
	}
	return nil
}

// currentDelete is a data file's current delete file at the head, as this
// commit has left it: from the table's loaded ones, or read alone.
func (w *commitWriter) currentDelete(ts *tableState, fileID int64) (DeleteFile, bool, error) {
	if ts.deletes == nil {
		ts.deletes, ts.delKnown = map[int64]DeleteFile{}, map[int64]bool{}
	}
	if !ts.deletesAll && !ts.delKnown[fileID] && !ts.created {
		var p catalogpb.DeleteFile
		err := scanPrefix(w.r, key(tagDeleteFile, ts.t.ID, fileID), func(k, v []byte) error {
			p.Reset()
			if err := decodeValue(v, &p); err != nil {
				return fmt.Errorf("delete file row %x: %w", k, err)
			}
			if p.DataFileId == fileID && visibleAt(w.head.ID, p.BeginSnapshot, p.EndSnapshot) {
				ts.deletes[fileID] = deleteFileFromPB(&p)
			}
			return nil
		})
		if err != nil {
			return DeleteFile{}, false, err
		}
	}
	ts.delKnown[fileID] = true
	d, ok := ts.deletes[fileID]
	return d, ok, nil
}

// endDeletes ends the current delete file of a data file the commit
// retires, if it has one: its rows go with it.
func (w *commitWriter) endDeletes(ts *tableState, fileID int64) error {
	d, ok, err := w.currentDelete(ts, fileID)
	if err != nil || !ok {
		return err
	}
	s := w.next.ID
	w.put(key(tagDeleteFile, ts.t.ID, fileID, d.Begin), deleteFileToPB(d, &s))
	delete(ts.deletes, fileID)
	return nil
}

// peekFiles makes the head's live files among ids known to the commit
// (ts.live) without reading the table's other rows into it: a commit that
// retires a file or two of a table of millions reads those alone, and one
// that retires a million keeps a million, not the table (a removal of a
// tenth of ten million files held every row and went past 19 GB). Up to
// an eighth of the table it reads the rows by key; past that, one scan of
// the table's rows costs less than the lookups, and keeps only these.
func (w *commitWriter) peekFiles(ts *tableState, ids []int64) error {
	if ts.loaded || ts.created {
		return nil
	}
	var want []int64
	for _, id := range ids {
		if _, ok := ts.live[id]; !ok {
			want = append(want, id)
		}
	}
	if len(want) == 0 {
		return nil
	}
	if len(want) > peekLimit {
		head, err := w.r.fileTableStats(ts.t.ID)
		if err != nil {
			return err
		}
		if 8*int64(len(want)) > head.FileCount {
			return w.scanFiles(ts, want)
		}
	}
	// In chunks: a networked store's reply to a million keys at once is
	// held whole.
	const chunk = 1 << 16
	keys := make([][]byte, 0, min(len(want), chunk))
	var p catalogpb.DataFile
	for lo := 0; lo < len(want); lo += chunk {
		keys = keys[:0]
		for _, id := range want[lo:min(lo+chunk, len(want))] {
			keys = append(keys, key(tagDataFile, ts.t.ID, id))
		}
		vals, err := w.getMany(keys)
		if err != nil {
			return err
		}
		for i, v := range vals {
			if v == nil {
				continue
			}
			if err := w.peekRow(ts, keys[i], v, &p); err != nil {
				return err
			}
		}
	}
	return nil
}

// scanFiles reads the table's file rows in one scan and keeps those of
// want (which it sorts) that the head sees.
func (w *commitWriter) scanFiles(ts *tableState, want []int64) error {
	slices.Sort(want)
	next := 0
	var p catalogpb.DataFile
	return scanPrefix(w.r, key(tagDataFile, ts.t.ID), func(k, v []byte) error {
		id, err := idAt(k, 1)
		if err != nil {
			return err
		}
		for next < len(want) && want[next] < id {
			next++
		}
		if next == len(want) || want[next] != id {
			return nil
		}
		return w.peekRow(ts, k, v, &p)
	})
}

// peekRow decodes a file row into ts.live when the head sees it.
func (w *commitWriter) peekRow(ts *tableState, k, v []byte, p *catalogpb.DataFile) error {
	p.Reset()
	if err := decodeValue(v, p); err != nil {
		return fmt.Errorf("data file row %x: %w", k, err)
	}
	if visibleAt(w.head.ID, p.BeginSnapshot, p.EndSnapshot) && p.TableId == ts.t.ID {
		f := dataFileFromPB(p)
		ts.live[f.ID] = f
	}
	return nil
}

func (w *commitWriter) setDeletes(name string, nds []NewDeleteFile) error {
	ts, err := w.table(name)
	if err != nil {
		return err
	}
	if ts.altered {
		return fmt.Errorf("%w: table %q: an alteration is a snapshot of its own", ErrInvalid, name)
	}
	ids := make([]int64, 0, len(nds))
	for _, nd := range nds {
		ids = append(ids, nd.DataFileID)
	}
	if err := w.peekFiles(ts, ids); err != nil {
		return err
	}
	if err := w.prepareDeletes(ts, len(nds)); err != nil {
		return err
	}
	var added map[int64]DataFile
	for _, nd := range nds {
		if nd.DataFileID == 0 && nd.DataFilePath != "" {
			id, ok, err := w.livePathID(ts, nd.DataFilePath)
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("%w %s in table %q (deleting rows of it)", ErrNoSuchFile, nd.DataFilePath, ts.t.Name)
			}
			nd.DataFileID = id
			if err := w.peekFiles(ts, []int64{id}); err != nil {
				return err
			}
		}
		f, ok := ts.live[nd.DataFileID]
		if !ok && len(ts.added) > 0 {
			// Added by this commit.
			if added == nil {
				added = make(map[int64]DataFile, len(ts.added))
				for _, a := range ts.added {
					added[a.f.ID] = a.f
				}
			}
			f, ok = added[nd.DataFileID]
		}
		if !ok || ts.removed[nd.DataFileID] {
			return fmt.Errorf("%w %d in table %q at snapshot %d (deleting rows of it)", ErrNoSuchFile, nd.DataFileID, ts.t.Name, w.head.ID)
		}
		cur, has, err := w.currentDelete(ts, nd.DataFileID)
		if err != nil {
			return err
		}
		if (has && cur.ID != nd.Replaces) || (!has && nd.Replaces != 0) {
			return fmt.Errorf("%w: the deleted rows of file %s of table %q changed since they were read; retry", ErrConflict, f.Location(ts.t), ts.t.Name)
		}
		if nd.DeleteCount < 1 || nd.DeleteCount > f.RecordCount || (has && nd.DeleteCount < cur.DeleteCount) {
			return fmt.Errorf("%w delete file %s: %d deleted rows of a file of %d rows (%d deleted before)", ErrInvalid, nd.Path, nd.DeleteCount, f.RecordCount, cur.DeleteCount)
		}
		if !filepath.IsAbs(nd.Path) && !IsObject(nd.Path) {
			return fmt.Errorf("%w delete file path %q: not absolute", ErrInvalid, nd.Path)
		}
		if IsObject(nd.Path) && nd.ETag == "" {
			// Without it a reader could not tell the object from another
			// put under its key since.
			return fmt.Errorf("%w delete file %s: an object needs its ETag", ErrInvalid, nd.Path)
		}
		if has {
			s := w.next.ID
			w.put(key(tagDeleteFile, ts.t.ID, f.ID, cur.Begin), deleteFileToPB(cur, &s))
		}
		d := DeleteFile{
			ID: w.next.NextFileID, TableID: ts.t.ID, DataFileID: f.ID, Path: nd.Path,
			DeleteCount: nd.DeleteCount, FileSizeBytes: nd.FileSizeBytes, ModifiedUnixNanos: nd.ModifiedUnixNanos, ETag: nd.ETag,
			Begin: w.next.ID, Owner: OwnerRocklake,
		}
		w.next.NextFileID++
		w.put(key(tagDeleteFile, ts.t.ID, f.ID, d.Begin), deleteFileToPB(d, nil))
		ts.deletes[f.ID] = d
		ts.delKnown[f.ID] = true
	}
	if !ts.deletesChanged {
		ts.deletesChanged = true
		if !ts.deleted {
			w.changes.DeletedFromTables = append(w.changes.DeletedFromTables, ts.t.ID)
		}
	}
	return w.writeErr
}
