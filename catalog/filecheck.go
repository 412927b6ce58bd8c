package catalog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/rocklake/rocklake/catalog/catalogpb"
	"github.com/rocklake/rocklake/kv"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

// identityKey indexes a table's live files by identity (FileIdentity), so
// that an append checks its files without reading the table's file list.
// It lives under the path index's tag: no path holds a NUL byte, so no
// path key equals one of these, and what removes a table's path keys
// removes these too.
func identityKey(tableID int64, id FileIdentity) []byte {
	k := keyWithString(tagFilePath, "\x00identity\x00", tableID)
	k = binary.BigEndian.AppendUint64(k, id.Device)
	return binary.BigEndian.AppendUint64(k, id.Inode)
}

// liveIdentity reports the live file of the table that is nf under another
// path, if any: one added by this commit, else the head's through the
// identity index.
func (w *commitWriter) liveIdentity(ts *tableState, nf NewFile) (DataFile, bool, error) {
	if f, ok := ts.liveIdents[nf.Identity]; ok {
		return f, true, nil
	}
	if ts.goneIdents[nf.Identity] || ts.created {
		return DataFile{}, false, nil
	}
	raw, err := w.get(identityKey(ts.t.ID, nf.Identity))
	if errors.Is(err, kv.ErrNotFound) {
		return DataFile{}, false, nil
	}
	if err != nil {
		return DataFile{}, false, err
	}
	var ref catalogpb.DataFile
	if err := decodeValue(raw, &ref); err != nil {
		return DataFile{}, false, fmt.Errorf("identity index of %s: %w", nf.Path, err)
	}
	raw, err = w.r.kvs.Get(key(tagDataFile, ts.t.ID, ref.Id))
	if err != nil {
		return DataFile{}, false, nil
	}
	var p catalogpb.DataFile
	if err := decodeValue(raw, &p); err != nil {
		return DataFile{}, false, err
	}
	f := dataFileFromPB(&p)
	if !visibleAt(w.head.ID, p.BeginSnapshot, p.EndSnapshot) || f.Identity != nf.Identity {
		return DataFile{}, false, nil
	}
	// Inode numbers are reused once a file is deleted: the entry names
	// this file only while the registered path still reaches it.
	if !SameFile(nf.Path, f.Location(ts.t)) {
		return DataFile{}, false, nil
	}
	return f, true, nil
}

// SameFile reports whether two local paths reach the same file now (an
// identity recorded at registration names a file only while its path
// still reaches it: inode numbers are reused).
func SameFile(a, b string) bool {
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}

// forgetIdentity deletes a retired file's identity index entry, unless the
// entry names another file by now (one this commit adds, or one registered
// after the retired file's inode was reused).
func (w *commitWriter) forgetIdentity(ts *tableState, f DataFile) error {
	if !f.Identity.Known() || ts.goneIdents[f.Identity] {
		return nil
	}
	if _, ok := ts.liveIdents[f.Identity]; ok {
		return nil
	}
	k := identityKey(ts.t.ID, f.Identity)
	raw, err := w.r.kvs.Get(k)
	if errors.Is(err, kv.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	var ref catalogpb.DataFile
	if err := decodeValue(raw, &ref); err != nil {
		return fmt.Errorf("identity index of %s: %w", f.Path, err)
	}
	if ref.Id != f.ID {
		return nil
	}
	if ts.goneIdents == nil {
		ts.goneIdents = map[FileIdentity]bool{}
	}
	ts.goneIdents[f.Identity] = true
	return w.batch.Delete(k)
}

// ErrOutsideRoot reports a data file outside the catalog's data root.
var ErrOutsideRoot = errors.New("outside the catalog's data root")

// CheckRoot reports whether a commit would refuse nf for lying outside
// the catalog's data root (ErrOutsideRoot), for a caller that checks many
// commits' files before making the first.
func (c *Catalog) CheckRoot(nf NewFile) error { return c.checkRoot(nf) }

// checkRoot refuses a file that does not lie under the data root, after
// resolving symbolic links and ".." (so neither can lead out of it).
func (c *Catalog) checkRoot(nf NewFile) error {
	if c.dataRoot == "" {
		return nil
	}
	if IsObject(c.dataRoot) || IsObject(nf.Path) {
		// Object keys are never resolved (no links, no ".."; package
		// storage refuses keys with "." or ".." segments), so a prefix is
		// the whole check; a local file is never under an object root, nor
		// an object under a directory.
		if nf.PathIsRelative || !IsObject(nf.Path) || !IsObject(c.dataRoot) || !strings.HasPrefix(nf.Path, c.dataRoot) {
			return fmt.Errorf("file %s: %w %s", nf.Path, ErrOutsideRoot, c.dataRoot)
		}
		return nil
	}
	if nf.PathIsRelative {
		// A relative path resolves against the table's own location, which
		// lies under the root; only a climb out with ".." can escape it.
		rel := filepath.Clean(nf.Path)
		if filepath.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return fmt.Errorf("file %s: %w %s", nf.Path, ErrOutsideRoot, c.dataRoot)
		}
		return nil
	}
	p, err := filepath.Abs(nf.Path)
	if err != nil {
		return err
	}
	if resolved, err := filepath.EvalSymlinks(p); err == nil {
		p = resolved
	}
	rel, err := filepath.Rel(c.dataRoot, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return fmt.Errorf("file %s: %w %s", nf.Path, ErrOutsideRoot, c.dataRoot)
	}
	return nil
}

// checkStats rejects bounds that do not decode as the column's type, or a
// min above the max: a catalog must not hold a bound it cannot use.
func checkStats(col Column, st *stats.Column) error {
	codec, ok := types.CodecFor(col.Type)
	if !ok {
		if st.Min.Known || st.Max.Known {
			return fmt.Errorf("%w stats: type %s keeps no min/max", ErrInvalid, types.DisplayName(col.Type))
		}
		return nil
	}
	for _, b := range []stats.Maybe[[]byte]{st.Min, st.Max} {
		if b.Known {
			v, err := codec.Decode(b.V)
			if err != nil {
				return fmt.Errorf("%w bound: %v", ErrInvalid, err)
			}
			// Only the canonical encoding compares right against others.
			if re, err := codec.Encode(v); err != nil || !bytes.Equal(re, b.V) {
				return fmt.Errorf("%w bound: % x is not the canonical encoding of %s", ErrInvalid, b.V, codec.Format(v))
			}
		}
	}
	if st.Min.Known && st.Max.Known && codec.Ordered() && codec.Compare(st.Min.V, st.Max.V) > 0 {
		return fmt.Errorf("%w stats: min %s > max %s", ErrInvalid, fmtBound(codec, st.Min.V), fmtBound(codec, st.Max.V))
	}
	return nil
}

// checkVariant applies checkStats to a sub-field in its shredded type.
func checkVariant(v *VariantStats) error {
	col := Column{Type: parseOrUnknown(v.ShreddedType)}
	st := stats.Column{Min: v.Min, Max: v.Max}
	if err := checkStats(col, &st); err != nil {
		return err
	}
	for _, g := range v.RowGroups {
		st := stats.Column{Min: g.Min, Max: g.Max}
		if err := checkStats(col, &st); err != nil {
			return fmt.Errorf("row group %d: %w", g.Index, err)
		}
	}
	return nil
}

func fmtBound(c *types.Codec, b []byte) string {
	v, err := c.Decode(b)
	if err != nil {
		return fmt.Sprintf("%x", b)
	}
	return c.Format(v)
}
