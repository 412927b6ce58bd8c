package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// DuckDB globs every path read_parquet is given, and a registered
// p?.parquet would also read pa.parquet. A glob character put in a bracket
// class of its own ([?]) is matched literally by the first expansion, but
// DuckDB 1.5.6 expands the already expanded name again in some plans (a
// window with QUALIFY inside query(): reading p5*.parquet also read
// p5.parquet and failed on its schema). So a path holding ?, * or [ reaches
// DuckDB as a symbolic link of a plain name to the file, in a directory of
// this process's own; every other path as it is.

var links struct {
	sync.Mutex
	dir     string // made on first use
	engines int    // open engines; the last Close removes dir
}

// duckPath is a path DuckDB opens as exactly the file at path, whatever
// characters its name holds.
func duckPath(path string) string {
	if !strings.ContainsAny(path, "?*[") {
		return path
	}
	links.Lock()
	defer links.Unlock()
	if links.dir == "" {
		dir, err := os.MkdirTemp("", "rocklake-paths-")
		if err != nil {
			return bracketed(path)
		}
		links.dir = dir
	}
	sum := sha256.Sum256([]byte(path))
	link := filepath.Join(links.dir, hex.EncodeToString(sum[:16])+filepath.Ext(path))
	if err := os.Symlink(path, link); err != nil && !errors.Is(err, fs.ErrExist) {
		return bracketed(path)
	}
	return link
}

func duckPaths(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = duckPath(p)
	}
	return out
}

// bracketed escapes glob characters as bracket classes: the fallback when
// no link can be made.
func bracketed(path string) string {
	var b strings.Builder
	for _, r := range path {
		switch r {
		case '?', '*', '[':
			b.WriteByte('[')
			b.WriteRune(r)
			b.WriteByte(']')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func engineOpened() {
	links.Lock()
	links.engines++
	links.Unlock()
}

func engineClosed() {
	links.Lock()
	defer links.Unlock()
	links.engines--
	if links.engines == 0 && links.dir != "" {
		os.RemoveAll(links.dir)
		links.dir = ""
	}
}
