package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// Local is the local file system as a Store. A local file has no ETag:
// its size and modification time stand for it (the checks the engine and
// verify already make), so a read of a file whose size or time differ
// from obj's is ErrChanged.
//
// Registration of local files keeps its own path handling (package
// ingest resolves links and ".." as open(2) does and records device and
// inode); Local serves the places that only need the interface.
type Local struct{}

func (Local) Stat(_ context.Context, loc string) (Object, error) {
	st, err := os.Stat(loc)
	if errors.Is(err, fs.ErrNotExist) {
		return Object{}, fmt.Errorf("%s: %w", loc, ErrNotFound)
	}
	if err != nil {
		return Object{}, err
	}
	if !st.Mode().IsRegular() {
		return Object{}, fmt.Errorf("%s: not a regular file", loc)
	}
	return Object{Location: loc, Size: st.Size(), Modified: st.ModTime()}, nil
}

func (l Local) List(ctx context.Context, pattern string) ([]Object, error) {
	var out []Object
	st, err := os.Stat(pattern)
	switch {
	case err == nil && st.IsDir():
		err = filepath.WalkDir(pattern, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !isParquet(d.Name()) {
				return err
			}
			o, err := l.Stat(ctx, p)
			if err == nil {
				out = append(out, o)
			}
			return err
		})
		if err == nil && len(out) == 0 {
			err = fmt.Errorf("%s: directory holds no .parquet files", pattern)
		}
	case err == nil:
		var o Object
		if o, err = l.Stat(ctx, pattern); err == nil {
			out = append(out, o)
		}
	case hasGlob(pattern):
		var matches []string
		if matches, err = filepath.Glob(pattern); err == nil && len(matches) == 0 {
			err = fmt.Errorf("%s: no file matches", pattern)
		}
		for _, m := range matches {
			o, serr := l.Stat(ctx, m)
			if serr != nil {
				return nil, serr
			}
			out = append(out, o)
		}
	case errors.Is(err, fs.ErrNotExist):
		err = fmt.Errorf("%s: %w", pattern, ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Location < out[j].Location })
	return out, nil
}

// open opens obj's file and checks that it is still the file described.
func (Local) open(obj Object) (*os.File, error) {
	f, err := os.Open(obj.Location)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", obj.Location, ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && (st.Size() != obj.Size || (!obj.Modified.IsZero() && !st.ModTime().Equal(obj.Modified))) {
		err = fmt.Errorf("%s: %w (now %d bytes, modified %s)", obj.Location, ErrChanged, st.Size(), st.ModTime().UTC())
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func (l Local) ReadRange(_ context.Context, obj Object, off, n int64) ([]byte, error) {
	f, err := l.open(obj)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if off < 0 || n < 0 || off+n > obj.Size {
		return nil, fmt.Errorf("%s: bytes %d..%d are beyond its %d bytes", obj.Location, off, off+n, obj.Size)
	}
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, off); err != nil {
		return nil, fmt.Errorf("%s: %w", obj.Location, err)
	}
	return buf, nil
}

func (l Local) Fetch(_ context.Context, obj Object, w io.Writer) (int64, error) {
	f, err := l.open(obj)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return io.Copy(w, f)
}
