package pqmeta

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"
)

// Stamp is what stat says of a file that tells one version of it from
// another. Whoever may write a file can give it back its size and its
// modification time (touch -r); only root can set back its status change
// time (ctime), which every write, rename over it, link and chmod moves,
// or make another file take its device and inode. A zero field is
// unknown (not recorded, or the platform has none) and is not compared.
type Stamp struct {
	Size     int64
	Modified int64 // modification time (mtime), Unix nanoseconds
	Changed  int64 // status change time (ctime), Unix nanoseconds
	ID       FileIdentity
}

// StampOf is the stamp of the file st describes.
func StampOf(st fs.FileInfo) Stamp {
	return Stamp{Size: st.Size(), Modified: st.ModTime().UnixNano(), Changed: changedOf(st), ID: identityOf(st)}
}

// Differences says how now differs from s, a stamp as it was recorded at
// registration: one phrase per field, none when the file is still the
// one recorded. Only what both stamps know is compared, so a file
// recorded before ctimes were is checked as it was then.
func (s Stamp) Differences(now Stamp) []string {
	var out []string
	if s.Size > 0 && now.Size != s.Size {
		out = append(out, fmt.Sprintf("size is %d bytes, registered as %d", now.Size, s.Size))
	}
	if s.ID.Known() && now.ID.Known() && now.ID != s.ID {
		out = append(out, fmt.Sprintf("another file has its path: device %d inode %d, registered as device %d inode %d",
			now.ID.Device, now.ID.Inode, s.ID.Device, s.ID.Inode))
	}
	if s.Modified != 0 && now.Modified != s.Modified {
		out = append(out, fmt.Sprintf("modified at %s, registered as modified at %s", stampTime(now.Modified), stampTime(s.Modified)))
	}
	if s.Changed != 0 && now.Changed != 0 && now.Changed != s.Changed {
		out = append(out, fmt.Sprintf("ctime is %s, registered as %s (written, renamed over, linked or chmod-ed since)", stampTime(now.Changed), stampTime(s.Changed)))
	}
	return out
}

func stampTime(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339Nano) }

// ErrChanged is matched by a ChangedError.
var ErrChanged = errors.New("changed since it was registered")

// ChangedError reports a file that is no longer the one recorded: What
// says how (Stamp.Differences, FooterDifference).
type ChangedError struct{ What []string }

func (e *ChangedError) Error() string        { return strings.Join(e.What, "; ") }
func (e *ChangedError) Is(target error) bool { return target == ErrChanged }

// Fingerprint is the fingerprint of a footer's bytes (the thrift
// FileMetaData, without its length and magic): the first 8 bytes of its
// SHA-256, never 0, so that 0 can mean "not recorded". The footer holds
// every statistic and page offset of the file, so a rewrite that keeps
// it byte for byte is one that left every bound, count and size as it
// was.
func Fingerprint(footer []byte) uint64 {
	sum := sha256.Sum256(footer)
	return max(binary.BigEndian.Uint64(sum[:8]), 1)
}

// FooterDifference says how f's footer differs from the one registered
// (its fingerprint and length; a fingerprint of 0 is not recorded, and
// nothing is compared), "" when it does not.
func (f *File) FooterDifference(fingerprint uint64, footerSize int64) string {
	if fingerprint == 0 || (f.Fingerprint == fingerprint && f.FooterSize == footerSize) {
		return ""
	}
	return fmt.Sprintf("its footer changed: fingerprint %016x (%d bytes), registered as %016x (%d bytes)",
		f.Fingerprint, f.FooterSize, fingerprint, footerSize)
}

// ReadAs is Read of a file as it was registered: one that is no longer
// the file want describes, or whose footer is not the one registered
// (fingerprint and footerSize, when the fingerprint is recorded), is a
// *ChangedError. The stamp is taken from the open file, so the footer
// read is that of the file compared.
func ReadAs(path string, want Stamp, fingerprint uint64, footerSize int64) (*File, error) {
	f, err := Read(path, FileIdentity{})
	if err != nil {
		return nil, err
	}
	what := want.Differences(f.Stamp())
	if d := f.FooterDifference(fingerprint, footerSize); d != "" {
		what = append(what, d)
	}
	if len(what) > 0 {
		return nil, &ChangedError{What: what}
	}
	return f, nil
}

// OpenIndexAs is OpenIndex of a file as it was registered: one that is
// no longer the file want describes is a *ChangedError, and its page
// index and bloom filters are not read.
func OpenIndexAs(path string, want Stamp) (*FileIndex, error) {
	f, st, err := open(path, FileIdentity{})
	if err != nil {
		if errors.Is(err, ErrNotRegular) {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return nil, err
	}
	if what := want.Differences(StampOf(st)); len(what) > 0 {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, &ChangedError{What: what})
	}
	return openIndexFile(f, path)
}
