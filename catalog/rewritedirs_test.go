package catalog

import (
	"os"
	"path/filepath"
	"testing"
)

// writtenByRocklakeOne is WrittenByRocklake as it was written for one
// path at a time, the reference for the batched form: the marker, then
// the rewrite root, then both with their links resolved.
func writtenByRocklakeOne(c *Catalog, path string) bool {
	if IsObject(path) {
		return IsRewriteObject(path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return false
	}
	if IsRewriteDir(filepath.Dir(abs)) {
		return true
	}
	root := c.RewriteRoot()
	if root == "" {
		return false
	}
	if within(root, abs) {
		return true
	}
	realRoot, err1 := filepath.EvalSymlinks(root)
	realPath, err2 := filepath.EvalSymlinks(abs)
	return err1 == nil && err2 == nil && within(realRoot, realPath)
}

// The batched WrittenByRocklakeFunc answers as the one-path reference for
// every kind of path, asked in one batch and again in another order (its
// per-directory caches must not carry one file's answer to another):
// files in and out of the rewrite root, through links to the root, to a
// directory in it and to a file in it, marked directories, dangling links,
// missing files, objects.
func TestWrittenByRocklakeBatchedAgrees(t *testing.T) {
	dir := t.TempDir()
	c, err := Create(filepath.Join(dir, "cat"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	root := c.RewriteRoot()
	mk := func(p string) string {
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	link := func(target, at string) string {
		os.MkdirAll(filepath.Dir(at), 0o755)
		if err := os.Symlink(target, at); err != nil {
			t.Fatal(err)
		}
		return at
	}
	user := filepath.Join(dir, "user")
	inRoot := mk(filepath.Join(root, "table-1", "compact-3", "part-00000.parquet"))
	mk(filepath.Join(root, "table-1", "compact-3", "part-00001.parquet"))
	outside := mk(filepath.Join(user, "a.parquet"))
	mk(filepath.Join(user, "b.parquet"))
	marked := mk(filepath.Join(dir, "elsewhere", "part-00000.parquet"))
	mk(filepath.Join(dir, "elsewhere", RewriteMarker))
	paths := []string{
		inRoot, filepath.Join(root, "table-1", "compact-3", "part-00001.parquet"),
		outside, filepath.Join(user, "b.parquet"), marked,
		// Into the root through a linked directory and a linked file, and
		// out of it through a link in it.
		filepath.Join(link(root, filepath.Join(dir, "rootlink")), "table-1", "compact-3", "part-00000.parquet"),
		filepath.Join(link(filepath.Join(root, "table-1"), filepath.Join(user, "t1")), "compact-3", "part-00001.parquet"),
		link(inRoot, filepath.Join(user, "c.parquet")),
		link(outside, filepath.Join(root, "table-1", "compact-3", "mine.parquet")),
		filepath.Join(link(user, filepath.Join(dir, "userlink")), "a.parquet"),
		// In a linked directory: a plain file, then a link to the root's file.
		link(inRoot, filepath.Join(dir, "userlink", "d.parquet")),
		link(filepath.Join(dir, "nowhere"), filepath.Join(user, "dangling.parquet")),
		filepath.Join(user, "missing.parquet"),
		filepath.Join(dir, "rootlink", "missing.parquet"),
		"s3://bucket/t/_rocklake/table-1/compact-3/part-00000.parquet",
		"s3://bucket/t/x.parquet",
		"relative/missing.parquet",
	}
	for round, order := range [][]int{nil, {16, 10, 5, 9, 0, 1, 2, 3, 4, 6, 7, 8, 11, 12, 13, 14, 15}} {
		written := c.WrittenByRocklakeFunc()
		yes := 0
		for k := range paths {
			i := k
			if order != nil {
				i = order[k]
			}
			want := writtenByRocklakeOne(c, paths[i])
			if got := written(paths[i]); got != want {
				t.Errorf("round %d: %s: batched %v, one at a time %v", round, paths[i], got, want)
			}
			if want {
				yes++
			}
		}
		if yes < 6 || yes > len(paths)-6 {
			t.Fatalf("round %d: %d of %d paths are rocklake's: the cases do not cover both answers", round, yes, len(paths))
		}
	}
}
