package catalog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/rocklake/rocklake/kv"
	"github.com/rocklake/rocklake/kv/pgkv"
)

// ErrPartialCopy is returned by Copy for a destination that holds rows but
// no catalog metadata: what an interrupted copy leaves.
var ErrPartialCopy = errors.New("holds an incomplete catalog copy (rows without catalog metadata)")

// CopyOptions tune Copy. The zero value is the default.
type CopyOptions struct {
	// Options open and create the destination: the Pebble file system,
	// the PostgreSQL pool.
	Options
	// BatchBytes bounds the keys and values one write carries (default
	// DefaultCopyBatchBytes).
	BatchBytes int
	// Progress, when set, is called every ProgressEvery keys while
	// copying and while checking, and once at the end of each.
	Progress func(CopyProgress)
	// ProgressEvery is the number of keys between Progress calls (default
	// 100,000).
	ProgressEvery int64
}

// DefaultCopyBatchBytes is the size of Copy's batches: large enough that
// a database copy costs few round trips, small enough to hold in memory
// and in one statement.
const DefaultCopyBatchBytes = 4 << 20

// CopyProgress is how far a copy has got.
type CopyProgress struct {
	// Phase is "copy" while rows are written, "check" while the
	// destination is read back and compared.
	Phase string
	Keys  int64
	Bytes int64
	// Done marks the last call of a phase.
	Done bool
}

// CopyResult reports a finished copy.
type CopyResult struct {
	// Destination names the new catalog without credentials.
	Destination string
	// Keys and Bytes (of keys and values) copied, as checked.
	Keys  int64
	Bytes int64
	// Batches is the number of writes it took.
	Batches int
	// Snapshot is the newest snapshot copied.
	Snapshot int64
}

// Copy copies the whole catalog src, as of one consistent snapshot of its
// store, into a new catalog at dstLoc: a directory (created if missing,
// otherwise empty) or a PostgreSQL location, whichever src is. The
// destination must not hold a catalog; Copy never overwrites one. Data
// files are not copied: the new catalog names the same files (and keeps
// src's data root).
//
// Copy writes the store's rows in batches of about BatchBytes and the
// catalog's metadata row last, in a batch of its own that is conditional
// on there being none yet: until that batch commits the destination is not
// a catalog, so a copy cut off part-way leaves nothing Open accepts (it
// reports ErrNotCatalog), and another Copy onto it reports ErrPartialCopy
// rather than mixing two copies. Then Copy opens the destination as a
// catalog and compares every key and value, in order, with the snapshot
// it copied.
func Copy(src *Catalog, dstLoc string, opts CopyOptions) (CopyResult, error) {
	if opts.BatchBytes <= 0 {
		opts.BatchBytes = DefaultCopyBatchBytes
	}
	if opts.ProgressEvery <= 0 {
		opts.ProgressEvery = 100_000
	}
	snap, err := src.store.NewSnapshot()
	if err != nil {
		return CopyResult{}, fmt.Errorf("copy %s: %w", src.Location(), err)
	}
	defer snap.Close()
	meta, err := snap.Get(key(tagMeta))
	if err != nil {
		return CopyResult{}, fmt.Errorf("copy %s: catalog metadata: %w", src.Location(), err)
	}
	head, err := latestSnapshot(snap)
	if err != nil {
		return CopyResult{}, fmt.Errorf("copy %s: %w", src.Location(), err)
	}
	if src.dir != "" && !pgkv.IsLocation(dstLoc) && sameDir(src.dir, dstLoc) {
		return CopyResult{}, fmt.Errorf("copy %s to %s: that is the catalog being copied", src.Location(), dstLoc)
	}

	dst, name, err := newCopyDestination(dstLoc, opts.Options)
	if err != nil {
		return CopyResult{}, err
	}
	res := CopyResult{Destination: name, Snapshot: head.ID}
	err = writeCopy(snap, dst, meta, opts, &res)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return CopyResult{}, fmt.Errorf("copy to %s: %w; the destination holds an incomplete copy, which is not a catalog: %s before copying again",
			name, err, cleanHint(dstLoc))
	}

	copied, err := Open(dstLoc, opts.Options)
	if err != nil {
		return CopyResult{}, fmt.Errorf("copy to %s: the copy does not open: %w", name, err)
	}
	defer copied.Close()
	if _, _, err := compareStores(snap, copied.store, opts); err != nil {
		return CopyResult{}, fmt.Errorf("copy to %s: the copy differs from the source: %w", name, err)
	}
	return res, nil
}

// writeCopy writes every row of snap into dst, the metadata row last.
func writeCopy(snap kv.Reader, dst kv.Store, meta []byte, opts CopyOptions, res *CopyResult) error {
	it, err := snap.NewIter(nil, nil)
	if err != nil {
		return err
	}
	defer it.Close()
	metaKey := key(tagMeta)
	b := dst.NewBatch()
	defer func() { b.Close() }()
	pending := 0
	report := func(done bool) {
		if opts.Progress != nil {
			opts.Progress(CopyProgress{Phase: "copy", Keys: res.Keys, Bytes: res.Bytes, Done: done})
		}
	}
	for ok := it.First(); ok; ok = it.Next() {
		k, v := it.Key(), it.Value()
		res.Keys++
		res.Bytes += int64(len(k) + len(v))
		if !bytes.Equal(k, metaKey) {
			if err := b.Set(k, v); err != nil {
				return err
			}
			pending += len(k) + len(v)
		}
		if pending >= opts.BatchBytes {
			if err := b.Commit(); err != nil {
				return err
			}
			res.Batches++
			b.Close()
			b, pending = dst.NewBatch(), 0
		}
		if res.Keys%opts.ProgressEvery == 0 {
			report(false)
		}
	}
	if err := it.Error(); err != nil {
		return err
	}
	// The rows left over go with the metadata: the last batch makes the
	// destination a catalog, all at once, and only if no other copy
	// made it one meanwhile.
	if err := b.Expect(metaKey, nil); err != nil {
		return err
	}
	if err := b.Set(metaKey, meta); err != nil {
		return err
	}
	if err := b.Commit(); err != nil {
		if errors.Is(err, kv.ErrConditionFailed) {
			return fmt.Errorf("another process made the destination a catalog during the copy: %w", err)
		}
		return err
	}
	res.Batches++
	report(true)
	return nil
}

// compareStores walks a and b together and fails at the first key or
// value that differs; it returns the keys and bytes it read.
func compareStores(a, b kv.Reader, opts CopyOptions) (keys, size int64, err error) {
	ia, err := a.NewIter(nil, nil)
	if err != nil {
		return 0, 0, err
	}
	defer ia.Close()
	ib, err := b.NewIter(nil, nil)
	if err != nil {
		return 0, 0, err
	}
	defer ib.Close()
	okA, okB := ia.First(), ib.First()
	for ; okA && okB; okA, okB = ia.Next(), ib.Next() {
		switch c := bytes.Compare(ia.Key(), ib.Key()); {
		case c < 0:
			return keys, size, fmt.Errorf("key %x is missing", ia.Key())
		case c > 0:
			return keys, size, fmt.Errorf("key %x was not in the source", ib.Key())
		case !bytes.Equal(ia.Value(), ib.Value()):
			return keys, size, fmt.Errorf("the value of key %x differs", ia.Key())
		}
		keys++
		size += int64(len(ia.Key()) + len(ia.Value()))
		if opts.Progress != nil && keys%opts.ProgressEvery == 0 {
			opts.Progress(CopyProgress{Phase: "check", Keys: keys, Bytes: size})
		}
	}
	if err := errors.Join(ia.Error(), ib.Error()); err != nil {
		return keys, size, err
	}
	switch {
	case okA:
		return keys, size, fmt.Errorf("key %x and the ones after it are missing", ia.Key())
	case okB:
		return keys, size, fmt.Errorf("key %x and the ones after it were not in the source", ib.Key())
	}
	if opts.Progress != nil {
		opts.Progress(CopyProgress{Phase: "check", Keys: keys, Bytes: size, Done: true})
	}
	return keys, size, nil
}

// newCopyDestination opens an empty store at loc for a copy, and names it
// for messages. A directory must be missing or empty; a database schema
// is made as for Create and must hold no rows.
func newCopyDestination(loc string, opts Options) (kv.Store, string, error) {
	if pgkv.IsLocation(loc) {
		store, err := pgkv.Init(context.Background(), loc, opts.Postgres)
		if err != nil {
			return nil, pgkv.Redact(loc), fmt.Errorf("copy destination: %w", err)
		}
		name := store.String()
		if err := checkEmpty(store, name); err != nil {
			store.Close()
			return nil, name, err
		}
		return store, name, nil
	}
	if entries, err := os.ReadDir(loc); err == nil && len(entries) > 0 {
		return nil, loc, dirNotEmpty(loc, opts)
	}
	store, err := newDirStore(loc, opts)
	if err != nil {
		return nil, loc, err
	}
	return store, loc, nil
}

// checkEmpty refuses a destination store that holds a catalog or part of
// one.
func checkEmpty(store kv.Store, name string) error {
	if _, err := store.Get(key(tagMeta)); err == nil {
		return fmt.Errorf("%s: %w; a copy never overwrites one: choose another database or schema (search_path=NAME)", name, ErrExists)
	} else if !errors.Is(err, kv.ErrNotFound) {
		return err
	}
	it, err := store.NewIter(nil, nil)
	if err != nil {
		return err
	}
	defer it.Close()
	if it.First() {
		return fmt.Errorf("%s %w, as an interrupted copy leaves; %s (or choose another database or schema) and copy again", name, ErrPartialCopy, "drop its table "+pgkv.TableName)
	}
	return it.Error()
}

// dirNotEmpty says what the non-empty directory dir holds that keeps a
// copy out.
func dirNotEmpty(dir string, opts Options) error {
	c, err := Open(dir, opts)
	switch {
	case err == nil:
		c.Close()
		return fmt.Errorf("%s: %w; a copy never overwrites one: choose a new directory", dir, ErrExists)
	case errors.Is(err, ErrLocked):
		return err
	case errors.Is(err, ErrNotCatalog):
		po := opts.Pebble
		po.Create, po.ReadOnly = false, true
		if s, serr := kv.OpenPebble(dir, po); serr == nil {
			s.Close()
			return fmt.Errorf("%s %w, as an interrupted copy leaves; %s and copy again", dir, ErrPartialCopy, cleanHint(dir))
		}
	}
	return fmt.Errorf("%s: directory is not empty and is not a catalog; copy into a new or empty directory", dir)
}

// sameDir says whether two paths name one directory.
func sameDir(a, b string) bool {
	ra, err1 := filepath.Abs(a)
	rb, err2 := filepath.Abs(b)
	if err1 != nil || err2 != nil {
		return false
	}
	if x, err := filepath.EvalSymlinks(ra); err == nil {
		ra = x
	}
	if x, err := filepath.EvalSymlinks(rb); err == nil {
		rb = x
	}
	return ra == rb
}

// cleanHint says how to clear away an incomplete copy at loc.
func cleanHint(loc string) string {
	if pgkv.IsLocation(loc) {
		return "drop its table " + pgkv.TableName
	}
	return "remove the directory"
}
