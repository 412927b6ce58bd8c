// Package pathgate is the one check of where a local file may be
// registered from when the side that reads tables may read only some
// directories (a server's sandboxed DuckDB): every way a file enters the
// catalog (the CLI, HTTP, a command forwarded through the server's socket,
// the Go API) passes its path through a Gate after the operating system
// has resolved it (symbolic links, ".."), so that a link inside a readable
// directory to a file elsewhere is refused, not registered and left
// unqueryable or read where no client may read.
//
// DuckDB's allowed_directories compares path prefixes and does not follow
// links, so the directories a Gate holds are also the ones DuckDB is given:
// each as written and as resolved, so that a directory reached through a
// link (/data -> /mnt/data) admits its files by either name.
package pathgate

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// ErrOutside reports a file that resolves outside every readable
// directory.
var ErrOutside = errors.New("outside the directories this server reads")

// Gate holds the readable directories. The zero Gate (or one made from no
// directories) admits every path: nothing restricts the reading side.
type Gate struct {
	dirs []string // cleaned, each with its resolved form beside it
}

// New is a Gate over dirs. A directory that does not resolve (it does not
// exist yet) is kept as written.
func New(dirs []string) Gate {
	var out []string
	for _, d := range dirs {
		if d == "" {
			continue
		}
		d = filepath.Clean(d)
		out = append(out, d)
		if real, err := filepath.EvalSymlinks(d); err == nil && real != d {
			out = append(out, real)
		}
	}
	slices.Sort(out)
	return Gate{dirs: slices.Compact(out)}
}

// Open reports whether the gate restricts nothing.
func (g Gate) Open() bool { return len(g.dirs) == 0 }

// Dirs are the directories, as written and as resolved, sorted.
func (g Gate) Dirs() []string { return slices.Clone(g.dirs) }

// Check admits a path the operating system has resolved (the caller
// resolved it: the path is the one a reader will open) when it lies under
// a readable directory.
func (g Gate) Check(resolved string) error {
	if g.Open() || g.admits(resolved) {
		return nil
	}
	return fmt.Errorf("%s: %w (%s)", resolved, ErrOutside, strings.Join(g.dirs, ", "))
}

// CheckNamed is Check for a file a user named as name, which resolved to
// resolved: the error names both when they differ.
func (g Gate) CheckNamed(name, resolved string) error {
	if g.Open() || g.admits(resolved) {
		return nil
	}
	if name != resolved {
		return fmt.Errorf("%s resolves to %s, %w (%s)", name, resolved, ErrOutside, strings.Join(g.dirs, ", "))
	}
	return g.Check(resolved)
}

func (g Gate) admits(p string) bool {
	p = filepath.Clean(p)
	for _, d := range g.dirs {
		// A prefix match needs the separator: /data must not admit /data2.
		if p == d || strings.HasPrefix(p, d+string(filepath.Separator)) || d == string(filepath.Separator) {
			return true
		}
	}
	return false
}
