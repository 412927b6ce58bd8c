package ingest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/internal/pathgate"
	"github.com/rocklake/rocklake/pqmeta"
	"github.com/rocklake/rocklake/storage"
)

// target is a file to register as the operating system resolved it.
type target struct {
	path string               // absolute; symbolic links and ".." resolved by the OS
	from string               // the argument that named it
	id   catalog.FileIdentity // device and inode (zero where the platform has none)
	obj  *storage.Object      // an object as listed (path is its s3:// location); nil for a local file
}

// ExpandPaths turns arguments into a sorted list of the files they name,
// each an absolute path with symbolic links and ".." resolved by the
// operating system: the path DuckDB will open. A file is itself, a
// directory contributes every *.parquet below it, a glob its matches. A
// missing path, an empty match, a path that is not a regular file, or the
// same file named twice (by two paths, symbolic links or hard links alike)
// is an error.
func ExpandPaths(args []string) ([]string, error) {
	ts, _, err := expand(args, nil, false, pathgate.Gate{})
	if err != nil {
		return nil, err
	}
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.path
	}
	return out, nil
}

// A directory walked (not named itself) that a rewrite created — it holds
// catalog.RewriteMarker — is left out and listed in skipped: its files are
// rocklake's, not the user's.
//
// An s3:// argument is listed through the store objects returns (made
// when first needed): a key, a prefix (every *.parquet object below it)
// or a glob. An object is named twice when two arguments list the same
// location. Objects a rewrite wrote (catalog.IsRewriteObject) are left out
// of a prefix's listing, as rewrite directories are of a walk, and their
// prefixes listed in skipped, unless rewrites is set (a rewrite
// registering its own output).
//
// Every local file, once resolved and before it is opened, must pass gate
// (the directories the reading side may read; see pathgate).
func expand(args []string, objects func() (storage.Store, error), rewrites bool, gate pathgate.Gate) (_ []target, skipped []string, _ error) {
	if len(args) == 0 {
		return nil, nil, errors.New("no files given")
	}
	var out []target
	byPath := map[string]target{}
	byID := map[catalog.FileIdentity]target{}
	// add resolves p (absolute, not cleaned) and records it once. A path
	// a walk found (resolved: below a resolved directory, through no link,
	// and not a link itself) is its own resolution: resolving it again
	// took an lstat per directory above it, most of listing ten thousand
	// files.
	add := func(p, from string, resolved bool) error {
		real := p
		if !resolved {
			var err error
			if real, err = filepath.EvalSymlinks(p); err != nil {
				return fmt.Errorf("%s: %w", from, err)
			}
		}
		if err := gate.CheckNamed(p, real); err != nil {
			return err
		}
		st, err := os.Stat(real)
		if err != nil {
			return fmt.Errorf("%s: %w", from, err)
		}
		if err := regular(real, st, from); err != nil {
			return err
		}
		t := target{path: real, from: from, id: catalog.FileIdentity(pqmeta.IdentityOf(st))}
		if prev, dup := byPath[real]; dup {
			return fmt.Errorf("%s: named twice (by %q and %q)", real, prev.from, from)
		}
		if prev, dup := byID[t.id]; dup && t.id.Known() {
			return fmt.Errorf("%s and %s are the same file (device %d, inode %d), named twice (by %q and %q)",
				prev.path, real, t.id.Device, t.id.Inode, prev.from, from)
		}
		byPath[real] = t
		if t.id.Known() {
			byID[t.id] = t
		}
		out = append(out, t)
		return nil
	}
	for _, arg := range args {
		if storage.IsS3(arg) {
			if objects == nil {
				return nil, nil, fmt.Errorf("%s: objects cannot be listed here", arg)
			}
			st, err := objects()
			if err != nil {
				return nil, nil, err
			}
			objs, err := st.List(context.Background(), arg)
			if err != nil {
				return nil, nil, err
			}
			prefix := strings.HasSuffix(arg, "/") || len(objs) != 1 || objs[0].Location != arg
			if err := refuseWithoutETag(objs, arg); err != nil {
				return nil, nil, err
			}
			taken := 0
			for _, o := range objs {
				if !rewrites && prefix && catalog.IsRewriteObject(o.Location) {
					dir := o.Location[:strings.Index(o.Location, catalog.RewriteObjectSegment)+len(catalog.RewriteObjectSegment)]
					if !slices.Contains(skipped, dir) {
						skipped = append(skipped, dir)
					}
					continue
				}
				if prev, dup := byPath[o.Location]; dup {
					return nil, nil, fmt.Errorf("%s: named twice (by %q and %q)", o.Location, prev.from, arg)
				}
				t := target{path: o.Location, from: arg, obj: &o}
				byPath[o.Location] = t
				out = append(out, t)
				taken++
			}
			if taken == 0 {
				return nil, nil, fmt.Errorf("%s: holds only objects rocklake's optimize or compact wrote (under %s)", arg, skipped[0])
			}
			continue
		}
		abs, err := absolute(arg)
		if err != nil {
			return nil, nil, err
		}
		st, err := os.Stat(abs)
		switch {
		case err == nil && st.IsDir():
			if err := walk(arg, abs, add, func(dir string) { skipped = append(skipped, dir) }); err != nil {
				return nil, nil, err
			}
		case err == nil:
			if err := regular(arg, st, arg); err != nil {
				return nil, nil, err
			}
			if err := add(abs, arg, false); err != nil {
				return nil, nil, err
			}
		case strings.ContainsAny(arg, "*?["):
			matches, gerr := glob(arg)
			if gerr != nil {
				return nil, nil, fmt.Errorf("%s: %w", arg, gerr)
			}
			if len(matches) == 0 {
				return nil, nil, fmt.Errorf("%s: no file matches", arg)
			}
			for _, m := range matches {
				mabs, err := absolute(m)
				if err != nil {
					return nil, nil, err
				}
				st, err := os.Stat(mabs)
				if err != nil {
					return nil, nil, fmt.Errorf("%s: %w", m, err)
				}
				if err := regular(m, st, arg); err != nil {
					return nil, nil, err
				}
				if err := add(mabs, arg, false); err != nil {
					return nil, nil, err
				}
			}
		case errors.Is(err, fs.ErrNotExist):
			return nil, nil, fmt.Errorf("%s: %w", arg, fs.ErrNotExist)
		default:
			return nil, nil, err
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out, skipped, nil
}

// refuseWithoutETag refuses a listing that describes an object without
// an ETag, naming the first: the ETag is what every later read of the
// object checks (storage.ErrNoETag). Nothing is read before.
func refuseWithoutETag(objs []storage.Object, arg string) error {
	var first string
	n := 0
	for _, o := range objs {
		if o.ETag == "" {
			if n == 0 {
				first = o.Location
			}
			n++
		}
	}
	switch {
	case n == 0:
		return nil
	case n == 1:
		return fmt.Errorf("%s: %w, so it is not registered: reads of it could not tell it from an object written over it with the same size",
			first, storage.ErrNoETag)
	}
	return fmt.Errorf("%s and %d more objects listed by %s: %w, so none is registered: reads of them could not tell them from objects written over them with the same size",
		first, n-1, arg, storage.ErrNoETag)
}

// walk adds every *.parquet below a directory. Symbolic links to files
// are followed; directories are walked, links to directories are not (a
// link could lead back up the tree). An entry named *.parquet that is not
// a regular file refuses the whole add rather than being skipped: the
// user asked for every Parquet file there, and a table quietly missing one
// is worse than an error (the same rule as for an unreadable file).
func walk(arg, dir string, add func(p, from string, resolved bool) error, skip func(dir string)) error {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return fmt.Errorf("%s: %w", arg, err)
	}
	found := 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && catalog.IsRewriteDir(p) {
			skip(p)
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(strings.ToLower(d.Name()), ".parquet") {
			return nil
		}
		if d.Type()&fs.ModeSymlink == 0 {
			// Not followed: DirEntry's type is the entry's own, so a named
			// pipe is caught here without a stat, let alone an open.
			if err := regularMode(p, d.Type(), arg); err != nil {
				return err
			}
		}
		found++
		// WalkDir descends into no link: only a link entry needs resolving.
		return add(p, arg, d.Type()&fs.ModeSymlink == 0)
	})
	if err != nil {
		return err
	}
	if found == 0 {
		return fmt.Errorf("%s: directory holds no .parquet files", arg)
	}
	return nil
}

// glob is filepath.Glob with the directories before the first pattern
// resolved by the operating system: filepath.Glob joins what it matches
// with filepath.Join, which would turn the match of "lnk/../f*" (read from
// the parent of lnk's target) into a path beside lnk.
func glob(pattern string) ([]string, error) {
	abs, err := absolute(pattern)
	if err != nil {
		return nil, err
	}
	cut := strings.LastIndexByte(abs[:strings.IndexAny(abs, "*?[")], filepath.Separator) + 1
	dir, err := filepath.EvalSymlinks(abs[:cut])
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	// Not filepath.Join: the rest keeps its "..", which match nothing
	// after a pattern (no directory lists ".."), rather than being cleaned
	// away.
	return filepath.Glob(strings.TrimSuffix(dir, string(filepath.Separator)) + string(filepath.Separator) + abs[cut:])
}

// absolute makes p absolute without cleaning it: "lnk/../f" must reach
// what the operating system reaches (the parent of lnk's target), which
// filepath.Clean (and filepath.Abs) would turn into "f".
func absolute(p string) (string, error) {
	if filepath.IsAbs(p) {
		return p, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return wd + string(filepath.Separator) + p, nil
}

// regular refuses anything but a regular file, naming the path and what
// it is.
func regular(p string, st fs.FileInfo, from string) error {
	return regularMode(p, st.Mode(), from)
}

// regularMode is regular for a mode known without a stat. A path that is
// not a regular file is refused before anything opens it: opening a named
// pipe blocks until a writer comes.
func regularMode(p string, m fs.FileMode, from string) error {
	if m.IsDir() && from != p {
		return fmt.Errorf("%s: %w, it is a directory (matched by %q): name a directory on its own to add the .parquet files below it", p, pqmeta.ErrNotRegular, from)
	}
	if err := pqmeta.CheckRegular(m); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	return nil
}
