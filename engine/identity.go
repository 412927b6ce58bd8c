package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/pqmeta"
)

// ErrDataFileChanged is returned when a data file a query must read is
// missing or no longer the file that was registered.
var ErrDataFileChanged = errors.New("data file changed since it was registered")

// fileStamp is what registration recorded of a file: for a local file
// what stat said (size, modification and status change times, device and
// inode) and its footer's fingerprint and length, for an object its size
// and ETag. A zero field was not recorded (files registered before it
// was, an object's local copy) and is not compared.
type fileStamp struct {
	size, modified int64
	etag           string // an object's ETag
	changed        int64  // ctime, Unix nanoseconds
	id             pqmeta.FileIdentity
	fingerprint    uint64
	footerSize     int64
}

func stampOf(f catalog.DataFile) fileStamp {
	return fileStamp{size: f.FileSizeBytes, modified: f.ModifiedUnixNanos, etag: f.ETag, changed: f.ChangedUnixNanos,
		id: pqmeta.FileIdentity(f.Identity), fingerprint: f.FooterFingerprint, footerSize: f.FooterSize}
}

func (s fileStamp) stat() pqmeta.Stamp {
	return pqmeta.Stamp{Size: s.size, Modified: s.modified, Changed: s.changed, ID: s.id}
}

// RegisteredStamp is what registration recorded of a local file's stat.
func RegisteredStamp(f catalog.DataFile) pqmeta.Stamp { return stampOf(f).stat() }

// checkDataFile makes sure a file about to be read is still the one whose
// statistics planned the query, by one stat: its size and modification
// time, which whoever writes it can set back, and its ctime, device and
// inode, which they cannot. Answering from a changed file would mix old
// statistics with new rows. The footer is not read here: the partial
// path, which reads it anyway, compares its fingerprint (partialRead).
func checkDataFile(table, path string, want fileStamp) error {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: %s of table %s is missing; `rocklake verify %s` lists every file that changed, `rocklake refresh --remove %s %s` removes it from the table",
			ErrDataFileChanged, path, table, shellWord(table), shellWord(table), shellWord(path))
	case err != nil:
		return fmt.Errorf("data file %s of table %s: %w", path, table, err)
	case !st.Mode().IsRegular():
		return fmt.Errorf("%w: %s of table %s is no longer a regular file", ErrDataFileChanged, path, table)
	}
	if what := want.stat().Differences(pqmeta.StampOf(st)); len(what) > 0 {
		return changedError(table, path, what)
	}
	return nil
}

// changedError is the refusal of a file that changed: what changed, and
// how to find the others and repair this one.
func changedError(table, path string, what []string) error {
	return fmt.Errorf("%w: %s of table %s: %s; `rocklake verify %s` lists every file that changed, and `rocklake refresh %s %s` checks this one and takes it back",
		ErrDataFileChanged, path, table, strings.Join(what, "; "), shellWord(table), shellWord(table), shellWord(path))
}

// CheckFile makes sure a registered local file of table t is still the
// file registered, for a reader outside queries (a rewrite, an export):
// its stat, and its footer against the fingerprint recorded. A file that
// changed is ErrDataFileChanged, naming it and the command that repairs
// it; an object is not checked here (its reads are pinned to its ETag).
func CheckFile(t catalog.Table, f catalog.DataFile) error {
	path := f.Location(t)
	if catalog.IsObject(path) {
		return nil
	}
	if err := checkDataFile(t.Name, path, stampOf(f)); err != nil {
		return err
	}
	_, err := pqmeta.ReadAs(path, RegisteredStamp(f), f.FooterFingerprint, f.FooterSize)
	var ce *pqmeta.ChangedError
	if errors.As(err, &ce) {
		return changedError(t.Name, path, ce.What)
	}
	if err != nil {
		return fmt.Errorf("%w: %s of table %s: %w; `rocklake refresh --remove %s %s` removes it from the table",
			ErrDataFileChanged, path, t.Name, err, shellWord(t.Name), shellWord(path))
	}
	return nil
}

// shellWord spells s as one word of a shell command line, for the
// commands errors suggest: quoted unless every byte is plain.
func shellWord(s string) string {
	plain := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+=:,@%", r)) {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
