package catalog

import (
	"fmt"

	"github.com/rocklake/rocklake/catalog/catalogpb"
)

// Restamping.
//
// A registered local file is known by what stat said of it then (size,
// modification and status change times, device and inode) and by a hash
// of its footer (DataFile.FooterFingerprint); readers refuse it once stat
// says otherwise. A chmod, a hard link or a restore from a backup moves
// the ctime (and a restore the inode) without touching a byte: Restamp
// records the file as found now, in its data file row, in place. Every
// snapshot that reads the file reads the same file on disk, so every one
// of them reads the new identity; its rows, statistics and row ids stay.
// A file whose content changed is registered again instead
// (Txn.RegisterAgain), so that older snapshots keep the statistics of
// what they read, and refuse the file that is there now.

// Restamp is a live local file as found on disk now (Txn.Restamp).
type Restamp struct {
	FileID int64
	// ModifiedUnixNanos, ChangedUnixNanos and Identity replace what was
	// recorded.
	ModifiedUnixNanos, ChangedUnixNanos int64
	Identity                            FileIdentity
	// FileSizeBytes, FooterSize and FooterFingerprint are the file's now:
	// they must be those recorded, the fingerprint too when one was (one
	// that was not is recorded now).
	FileSizeBytes, FooterSize int64
	FooterFingerprint         uint64
}

func (w *commitWriter) restamp(name string, rs []Restamp) error {
	ts, err := w.table(name)
	if err != nil {
		return err
	}
	if ts.altered {
		return fmt.Errorf("%w: table %q: an alteration is a snapshot of its own", ErrInvalid, name)
	}
	if err := w.loadFiles(ts); err != nil {
		return err
	}
	done := map[int64]bool{}
	for _, r := range rs {
		f, ok := ts.live[r.FileID]
		if !ok || ts.removed[r.FileID] {
			return fmt.Errorf("%w %d in table %q at snapshot %d", ErrNoSuchFile, r.FileID, ts.t.Name, w.head.ID)
		}
		if done[f.ID] {
			return fmt.Errorf("%w: file %d of table %q restamped twice in one commit", ErrInvalid, f.ID, ts.t.Name)
		}
		done[f.ID] = true
		loc := f.Location(ts.t)
		switch {
		case IsObject(loc):
			return fmt.Errorf("%w file %s: an object is known by its ETag, not restamped", ErrInvalid, loc)
		case r.FooterFingerprint == 0:
			return fmt.Errorf("%w file %s: a restamp needs the footer's fingerprint", ErrInvalid, loc)
		case r.FileSizeBytes != f.FileSizeBytes || r.FooterSize != f.FooterSize ||
			(f.FooterFingerprint != 0 && r.FooterFingerprint != f.FooterFingerprint):
			return fmt.Errorf("%w file %s of table %q: its size or footer are not those registered (%d bytes, a footer of %d): it is another file, to register again, not to restamp",
				ErrInvalid, loc, ts.t.Name, f.FileSizeBytes, f.FooterSize)
		}
		if r.Identity != f.Identity {
			if err := w.forgetIdentity(ts, f); err != nil {
				return err
			}
			if r.Identity.Known() {
				other, dup, err := w.liveIdentity(ts, NewFile{Path: loc, Identity: r.Identity})
				if err != nil {
					return err
				}
				if dup && other.ID != f.ID {
					return fmt.Errorf("file %s: %w in table %q: it is now file %d, registered as %s (the same file: device %d, inode %d)",
						loc, ErrDuplicate, ts.t.Name, other.ID, other.Location(ts.t), r.Identity.Device, r.Identity.Inode)
				}
			}
		}
		f.ModifiedUnixNanos, f.ChangedUnixNanos, f.Identity = r.ModifiedUnixNanos, r.ChangedUnixNanos, r.Identity
		f.FooterFingerprint = r.FooterFingerprint
		ts.live[f.ID] = f
		w.put(key(tagDataFile, ts.t.ID, f.ID), dataFileToPB(f, nil))
		if f.Identity.Known() {
			if ts.liveIdents == nil {
				ts.liveIdents = map[FileIdentity]DataFile{}
			}
			ts.liveIdents[f.Identity] = f
			delete(ts.goneIdents, f.Identity)
			w.put(identityKey(ts.t.ID, f.Identity), &catalogpb.DataFile{Id: f.ID})
		}
	}
	if !ts.restamped {
		ts.restamped = true
		w.changes.RestampedTables = append(w.changes.RestampedTables, ts.t.ID)
	}
	return w.writeErr
}

// checkRegisteredAgain holds Txn.RegisterAgain to its word: every file it
// retired is registered again, at its location, by this commit.
func (w *commitWriter) checkRegisteredAgain() error {
	for _, ts := range w.tables {
		if len(ts.again) == 0 {
			continue
		}
		added := map[string]bool{}
		for _, af := range ts.added {
			added[af.f.Location(ts.t)] = true
		}
		for loc, id := range ts.again {
			if !added[loc] {
				return fmt.Errorf("%w: file %d (%s) of table %q is retired to be registered again, and this commit does not register it", ErrInvalid, id, loc, ts.t.Name)
			}
		}
	}
	return nil
}
