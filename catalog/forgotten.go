package catalog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"

	"github.com/rocklake/rocklake/catalog/catalogpb"
	"github.com/rocklake/rocklake/kv"
)

// Retired files, remembered.
//
// A file the user registered in place stays on disk when a rewrite
// (optimize, compact) takes its rows into files of rocklake's, or when it
// is removed from its table. While the catalog keeps its data file row,
// add knows it; once expire forgets that row, the catalog keeps a small
// record of it instead (ForgottenFile, key 0x18 table file), so that
// adding its directory again still does not register rows the table
// holds already. Cleanup drops the record once the file has left the
// disk: a file written there later is new.

// RetiredFile is a file a table once held and no longer does: retired by
// a rewrite or a removal, known by its data file row or, after expire
// forgot that row, by the record kept for a user's file (Forgotten).
type RetiredFile struct {
	TableID, FileID int64
	Location        string
	EndSnapshot     int64
	// Rewritten says the snapshot that retired the file also registered
	// files in its table (optimize, compact): its rows are still in the
	// table, in other files. A file retired to be registered again
	// (DataFile.RegisteredAgain) is not: its rows went to itself.
	Rewritten         bool
	FileSizeBytes     int64
	ModifiedUnixNanos int64
	Identity          FileIdentity
	ETag              string
	Forgotten         bool
}

// Unchanged reports whether a file found now (its size, modification
// time, and ETag for an object) is the file as it was registered: a file
// rewritten in place since holds other rows.
func (f RetiredFile) Unchanged(size, modifiedUnixNanos int64, etag string) bool {
	if f.FileSizeBytes != size {
		return false
	}
	if IsObject(f.Location) {
		return f.ETag != "" && f.ETag == etag
	}
	return f.ModifiedUnixNanos != 0 && f.ModifiedUnixNanos == modifiedUnixNanos
}

// RetiredFiles lists the files table t held before the reader's snapshot
// and no longer holds at it: those whose data file rows are still kept,
// and the user's files expire forgot. Every add into an existing table
// asks, so a table in file blocks reads only its removal records and the
// rows they name, not every row it ever had.
func (r *Reader) RetiredFiles(t Table) ([]RetiredFile, error) {
	tableID := t.ID
	files, err := r.retiredRows(tableID)
	if err != nil {
		return nil, err
	}
	rewrote := map[int64]bool{} // by snapshot: it registered files in the table
	var out []RetiredFile
	for _, f := range files {
		rw, ok := rewrote[f.End.V]
		if !ok {
			ins, err := insertedAt(r.kvs, f.End.V)
			if err != nil {
				return nil, err
			}
			rw = slices.Contains(ins, tableID)
			rewrote[f.End.V] = rw
		}
		out = append(out, RetiredFile{TableID: tableID, FileID: f.ID, Location: f.Location(t), EndSnapshot: f.End.V,
			Rewritten: rw && !f.RegisteredAgain, FileSizeBytes: f.FileSizeBytes, ModifiedUnixNanos: f.ModifiedUnixNanos, Identity: f.Identity, ETag: f.ETag})
	}
	err = scanPrefix(r, key(tagForgottenFile, tableID), func(k, v []byte) error {
		var p catalogpb.ForgottenFile
		if err := decodeValue(v, &p); err != nil {
			return fmt.Errorf("forgotten file row %x: %w", k, err)
		}
		out = append(out, forgottenFromPB(&p))
		return nil
	})
	return out, err
}

// retiredRows are the data file rows of the files the table retired at or
// before the reader's snapshot: from its removal records (table | end →
// ids) when its files are in blocks, else from every row it ever had.
func (r *Reader) retiredRows(tableID int64) ([]DataFile, error) {
	inBlocks, err := r.readsBlocks(tableID)
	if err != nil {
		return nil, err
	}
	if !inBlocks {
		all, err := r.FilesEver(tableID)
		return slices.DeleteFunc(all, func(f DataFile) bool { return !f.End.Known || f.End.V > r.snap.ID }), err
	}
	var ids []int64
	var rf catalogpb.RemovedFiles
	err = r.scan(key(tagRemovedFiles, tableID), key(tagRemovedFiles, tableID, r.snap.ID+1), func(k, v []byte) error {
		rf.Reset()
		if err := decodeValue(v, &rf); err != nil {
			return fmt.Errorf("removed files %x: %w", k, err)
		}
		ids = append(ids, rf.Ids...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]DataFile, 0, len(ids))
	var p catalogpb.DataFile
	for _, id := range ids {
		raw, err := r.kvs.Get(key(tagDataFile, tableID, id))
		if errors.Is(err, kv.ErrNotFound) {
			// An expiry cut off between its commits forgot the file and
			// had yet to delete its removal record (expirewrites.go): its
			// ForgottenFile record, if it is the user's, is read below.
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("data file %d of table %d, named by a removal record: %w", id, tableID, err)
		}
		p.Reset()
		if err := decodeValue(raw, &p); err != nil {
			return nil, fmt.Errorf("data file %d of table %d: %w", id, tableID, err)
		}
		if f := dataFileFromPB(&p); f.End.Known && f.End.V <= r.snap.ID {
			out = append(out, f)
		}
	}
	return out, nil
}

// insertedAt is the tables snapshot id inserted into, read from its row
// or, where an expiry cut off between its commits deleted that row, from
// the copy it kept for the files it had yet to forget (expirewrites.go).
// A copy is kept only of a snapshot that inserted into some table.
func insertedAt(r kv.Reader, id int64) ([]int64, error) {
	s, err := readSnapshot(r, id)
	if err == nil {
		return s.Changes.InsertedIntoTables, nil
	}
	if !errors.Is(err, ErrNoSuchSnapshot) {
		return nil, err
	}
	raw, gerr := r.Get(key(tagExpiredSnapshot, id))
	if errors.Is(gerr, kv.ErrNotFound) {
		if first, ferr := firstSnapshotID(r); ferr == nil && id < first {
			return nil, nil
		}
		return nil, err
	}
	if gerr != nil {
		return nil, gerr
	}
	var p catalogpb.Snapshot
	if err := decodeValue(raw, &p); err != nil {
		return nil, fmt.Errorf("expired snapshot %d: %w", id, err)
	}
	return p.Changes.GetInsertedIntoTables(), nil
}

func forgottenFromPB(p *catalogpb.ForgottenFile) RetiredFile {
	return RetiredFile{TableID: p.TableId, FileID: p.FileId, Location: p.Location, EndSnapshot: p.EndSnapshot,
		Rewritten: p.Rewritten, FileSizeBytes: p.FileSizeBytes, ModifiedUnixNanos: p.ModifiedUnixNanos,
		Identity: identityFromPB(p.Identity), ETag: p.Etag, Forgotten: true}
}

// rememberForgotten is the record expire keeps of a user's file whose row
// it forgets; nil for a file rocklake deletes itself (cleanup), whose
// location a later file may take.
func rememberForgotten(f DataFile, loc string, rewritten bool) *catalogpb.ForgottenFile {
	if f.Owner.Deletable() {
		return nil
	}
	return &catalogpb.ForgottenFile{TableId: f.TableID, FileId: f.ID, Location: loc, EndSnapshot: f.End.V,
		Rewritten: rewritten, FileSizeBytes: f.FileSizeBytes, ModifiedUnixNanos: f.ModifiedUnixNanos,
		Identity: identityToPB(f.Identity), Etag: f.ETag}
}

// goneForgotten lists the keys of records of forgotten local files that
// have left the disk (objects are kept: no store is at hand to ask).
func goneForgotten(r kv.Reader) ([][]byte, []string, error) {
	var keys [][]byte
	var locs []string
	err := scanRange(r, key(tagForgottenFile), func(k, v []byte) error {
		var p catalogpb.ForgottenFile
		if err := decodeValue(v, &p); err != nil {
			return fmt.Errorf("forgotten file row %x: %w", k, err)
		}
		if IsObject(p.Location) {
			return nil
		}
		if _, err := os.Lstat(p.Location); errors.Is(err, fs.ErrNotExist) {
			keys = append(keys, append([]byte(nil), k...))
			locs = append(locs, p.Location)
		}
		return nil
	})
	return keys, locs, err
}
