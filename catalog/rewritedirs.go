package catalog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Where rewrites put their files.
//
// optimize and compact write every new file into a directory they create
// for it, which must not exist before. Unless told where (--dir), that
// directory lies under the catalog's rewrite root, named by the table's id
// and the snapshot rewritten, never by the table's name (a name is any
// text, "../x" and "a/b" included):
//
//	<root>/table-<table id>/<optimize|compact>-<snapshot>[-<n>]/part-00000.parquet
//
// The root is rocklake's alone, apart from the user's data, so that adding a
// directory of one's own data never registers rocklake's files as one's own:
//
//   - "_rocklake" under the catalog's data root when it has one (the new
//     files must lie under the root to be registered);
//   - else "<catalog directory>.files" beside the catalog, as DuckLake's
//     default DATA_PATH ("<metadata>.files").
//
// Every directory a rewrite creates, under the root or at --dir, holds a
// marker file (RewriteMarker): it tells rocklake's directories from the
// user's wherever they are, for cleanup (which removes them once empty and
// deletes the orphaned files in them, DeleteOrphans) and for add (which
// must not register what rocklake wrote as the user's).

// RewriteMarker is the file every directory a rewrite creates holds.
const RewriteMarker = ".rocklake-rewrite"

// RewriteRoot is the directory default rewrite directories go under; ""
// for a catalog that has neither a data root nor a directory (one in a
// memory store).
func (c *Catalog) RewriteRoot() string {
	switch {
	case IsObject(c.dataRoot):
		// A key prefix is no directory to write into: rewrites of objects
		// name their output with ObjectRewritePrefix.
		return ""
	case c.dataRoot != "":
		return filepath.Join(c.dataRoot, "_rocklake")
	case c.dir != "":
		abs, err := filepath.Abs(c.dir)
		if err != nil {
			return ""
		}
		return abs + ".files"
	}
	return ""
}

// DefaultRewriteDir is a new directory for a rewrite (what: "optimize" or
// "compact") of the table with id tableID at snapshot: under root, named
// by the table id and snapshot, with a suffix when an earlier rewrite of
// the same snapshot left that name taken. It does not create it.
func DefaultRewriteDir(root string, tableID, snapshot int64, what string) string {
	base := filepath.Join(root, "table-"+strconv.FormatInt(tableID, 10), fmt.Sprintf("%s-%d", what, snapshot))
	dir := base
	for n := 2; ; n++ {
		if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
			return dir
		}
		dir = fmt.Sprintf("%s-%d", base, n)
	}
}

// MakeRewriteDir creates dir, which must not exist, with its marker and
// a lease the caller holds until the files it writes there are committed
// or removed (Lease.Release); parents are created too when root is not ""
// and dir lies under it. A failure leaves nothing created behind but
// parents under root.
func MakeRewriteDir(dir, root string) (*Lease, error) {
	under := root != "" && within(root, dir)
	for try := 0; ; try++ {
		if under {
			if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
				return nil, err
			}
		}
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			break
		}
		// The table's directory under the root goes when a write that
		// committed nothing or cleanup leaves it empty, and may go
		// between the two calls above: made again, not a failed write.
		if !under || !errors.Is(err, fs.ErrNotExist) || try == 10 {
			return nil, err
		}
	}
	err := os.WriteFile(filepath.Join(dir, RewriteMarker),
		[]byte("rocklake wrote this directory for rewritten files; rocklake cleanup removes it once no snapshot reads them\n"), 0o644)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	l, err := TakeLease(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return l, nil
}

// IsRewriteDir reports whether a rewrite created dir: it holds the marker.
func IsRewriteDir(dir string) bool {
	st, err := os.Lstat(filepath.Join(dir, RewriteMarker))
	return err == nil && st.Mode().IsRegular()
}

// WrittenByRocklake reports whether the file at path is one a rewrite
// wrote (or one placed in a directory a rewrite created): it lies in a
// directory holding the marker, or under the catalog's rewrite root.
// add uses it to refuse or skip such files rather than register them as
// the user's.
func (c *Catalog) WrittenByRocklake(path string) bool {
	return c.WrittenByRocklakeFunc()(path)
}

// WrittenByRocklakeFunc is WrittenByRocklake for many paths at once (an
// add of ten thousand files): the rewrite root's links are resolved once,
// and each directory's marker and links once per directory, not once per
// file.
func (c *Catalog) WrittenByRocklakeFunc() func(path string) bool {
	root := c.RewriteRoot()
	var realRoot string
	var rootErr error
	rootResolved := false
	marked := map[string]bool{}     // by directory: IsRewriteDir
	realDirs := map[string]string{} // by directory: its links resolved, "" when that failed
	return func(path string) bool {
		if IsObject(path) {
			return IsRewriteObject(path)
		}
		abs, err := filepath.Abs(path)
		if err != nil {
			return false
		}
		dir := filepath.Dir(abs)
		m, ok := marked[dir]
		if !ok {
			m = IsRewriteDir(dir)
			marked[dir] = m
		}
		if m {
			return true
		}
		if root == "" {
			return false
		}
		if within(root, abs) {
			return true
		}
		// The same test with symbolic links resolved on both sides.
		if !rootResolved {
			realRoot, rootErr = filepath.EvalSymlinks(root)
			rootResolved = true
		}
		if rootErr != nil {
			return false
		}
		st, err := os.Lstat(abs)
		if err != nil {
			return false // EvalSymlinks would fail on it too
		}
		var realPath string
		if st.Mode()&os.ModeSymlink != 0 {
			if realPath, err = filepath.EvalSymlinks(abs); err != nil {
				return false
			}
		} else {
			// Not a link itself: it resolves to its directory resolved.
			rd, ok := realDirs[dir]
			if !ok {
				if rd, err = filepath.EvalSymlinks(dir); err != nil {
					rd = ""
				}
				realDirs[dir] = rd
			}
			if rd == "" {
				return false
			}
			realPath = filepath.Join(rd, filepath.Base(abs))
		}
		return within(realRoot, realPath)
	}
}

// partName matches the names rewrites give their files.
var partName = regexp.MustCompile(`^part-[0-9]{5,}\.parquet$`)

// stageName matches the names of the files a write stages its rows in for
// arrow-go to read (.rows.tmp, .rows-NNNNN.tmp), removed once read: one
// left behind is a killed write's.
var stageName = regexp.MustCompile(`^\.rows(-[0-9]{5,})?\.tmp$`)

// leaseTmpName matches the temporary file a lease is written to before it
// is renamed into place (TakeLease): one left behind is a killed write's.
var leaseTmpName = regexp.MustCompile(`^\.rocklake-in-use\.[0-9]+\.tmp$`)

// deleteName matches the names of the delete files a change writes
// (delete-<data file id>.parquet, in a directory of its own).
var deleteName = regexp.MustCompile(`^delete-[0-9]+\.parquet$`)

// within reports whether path lies strictly inside dir (both absolute and
// clean).
func within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != "." && rel != ".." && !filepath.IsAbs(rel) &&
		(len(rel) < 3 || rel[:3] != ".."+string(filepath.Separator))
}

// RewriteObjectSegment is the key segment under which rewrites of objects
// put their output: s3://bucket/…/_rocklake/table-<id>/<what>-<snapshot>/.
// An object with it in its key is rocklake's: add leaves such objects out
// of a listing and refuses them when named.
const RewriteObjectSegment = "/_rocklake/"

// IsRewriteObject reports whether loc is an object a rewrite wrote.
func IsRewriteObject(loc string) bool {
	return IsObject(loc) && strings.Contains(loc, RewriteObjectSegment)
}

// ObjectRewritePrefix is the key prefix (ending in "/") for the output of
// a rewrite of table tableID at snapshot, given the location of one of the
// table's objects: under the catalog's object data root when it has one,
// else beside that object (beside the rewrite it came from, when it is
// rocklake's), never nested in an earlier rewrite. suffix tells apart the
// prefixes of writers that read the same snapshot (a random one: see
// maintain's objectOutput).
func (c *Catalog) ObjectRewritePrefix(object string, tableID, snapshot int64, what, suffix string) string {
	root := c.dataRoot
	if !IsObject(root) {
		root = object[:strings.LastIndexByte(object, '/')+1]
		if i := strings.Index(root, RewriteObjectSegment); i >= 0 {
			root = root[:i+1]
		}
	}
	return fmt.Sprintf("%s_rocklake/table-%d/%s-%d%s/", root, tableID, what, snapshot, suffix)
}
