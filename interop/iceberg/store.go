package iceberg

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/storage"
)

// A store keeps one table's metadata files under the local directory
// (<dir>/<table uuid>/) and, for a table whose files are objects, as
// objects too, where an engine on another machine reads them:
//
//	<object home>/_rocklake/iceberg/<table uuid>/<the same layout>
//
// The object home is the catalog's data root when that is in object
// storage, else the prefix holding the table's first object (above any
// rewrite's prefix). Readers are given the objects' locations. A file is
// uploaded before its local copy is put in place, so the local copy says
// the object was written: loadTable reads the local copies only.
type store struct {
	ctx    context.Context
	local  string
	remote string // "" for a table of local files
	s3     func() (*storage.S3, error)
}

// objectHome is where the metadata of a table whose live files include
// objects goes, or "" when none is an object.
func objectHome(c *catalog.Catalog, files []catalog.DataFile, t catalog.Table) string {
	var first string
	for _, f := range files {
		if loc := f.Location(t); catalog.IsObject(loc) {
			first = loc
			break
		}
	}
	if first == "" {
		return ""
	}
	if root := c.DataRoot(); catalog.IsObject(root) {
		return strings.TrimSuffix(root, "/") + "/"
	}
	root := first[:strings.LastIndexByte(first, '/')+1]
	if i := strings.Index(root, catalog.RewriteObjectSegment); i >= 0 {
		root = root[:i+1]
	}
	return root
}

// loc is the location readers name a file by: rel is a slash path under
// the table's metadata home.
func (s *store) loc(rel string) string {
	if s.remote != "" {
		return s.remote + "/" + rel
	}
	return filepath.Join(s.local, filepath.FromSlash(rel))
}

// read is the local copy of rel.
func (s *store) read(rel string) ([]byte, error) {
	return os.ReadFile(filepath.Join(s.local, filepath.FromSlash(rel)))
}

// write writes rel: uploaded first, for a table of objects, then put in
// place locally. A reader never sees half a file either way.
func (s *store) write(rel string, data []byte) error {
	p := filepath.Join(s.local, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(name, 0o644)
	}
	if err == nil && s.remote != "" {
		var st *storage.S3
		if st, err = s.s3(); err == nil {
			if _, err = st.Put(s.ctx, s.loc(rel), name); err != nil {
				err = fmt.Errorf("writing the Iceberg metadata of a table in object storage: %w", err)
			}
		}
	}
	if err == nil {
		err = os.Rename(name, p)
	}
	if err != nil {
		os.Remove(name)
	}
	return err
}

// remove removes rel, a file or a directory of them: the objects first,
// then the local copies, which say the objects are there.
func (s *store) remove(rel string) error {
	p := filepath.Join(s.local, filepath.FromSlash(rel))
	if s.remote != "" {
		var files []string
		err := filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && !strings.HasPrefix(d.Name(), ".tmp-") {
				r, rerr := filepath.Rel(s.local, path)
				if rerr != nil {
					return rerr
				}
				files = append(files, filepath.ToSlash(r))
			}
			return err
		})
		if err != nil {
			return err
		}
		st, err := s.s3()
		if err != nil {
			return err
		}
		for _, f := range files {
			if err := st.Delete(s.ctx, s.loc(f)); err != nil {
				return err
			}
		}
	}
	return os.RemoveAll(p)
}

// rel joins slash path elements.
func rel(elem ...string) string { return path.Join(elem...) }
