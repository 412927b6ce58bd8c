// Package gatetest builds the class of paths the path gate decides on, for
// every way a file enters the catalog to be tested against: links to
// files, to directories, to devices and along chains, "..", globs and
// special files, each inside or outside the readable directory.
package gatetest

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Case is one argument to an add and whether the gate admits it.
type Case struct {
	Name  string
	Arg   string
	Admit bool
}

// Cases lays the class out under data (the readable directory) and
// outside (a sibling directory whose name extends data's, so that a
// prefix test without the separator would admit it), writing each Parquet
// file with write (a file the table takes). Admitted cases name files no
// other case names, so each may be added once, in order.
func Cases(t *testing.T, data string, write func(t *testing.T, path string)) []Case {
	t.Helper()
	outside := data + "-outside"
	mkdir := func(d string) {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, name string) string {
		if err := os.Symlink(target, name); err != nil {
			t.Fatal(err)
		}
		return name
	}
	mkdir(filepath.Join(data, "gate"))
	mkdir(filepath.Join(data, "gate", "indir"))
	mkdir(filepath.Join(outside, "dir"))
	in := func(name string) string { return filepath.Join(data, "gate", name) }
	out := filepath.Join(outside, "a.parquet")
	write(t, out)
	write(t, filepath.Join(outside, "dir", "b.parquet"))
	write(t, in("plain.parquet"))
	write(t, in("target.parquet"))
	write(t, filepath.Join(data, "gate", "indir", "c.parquet"))
	fifo := in("fifo.parquet")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	return []Case{
		{"a link inside to a file outside", link(out, in("to-outside.parquet")), false},
		{"a relative link inside to a file outside", link(filepath.Join("..", "..", filepath.Base(outside), "a.parquet"), in("rel-outside.parquet")), false},
		{"a chain of links inside ending outside", link(in("to-outside.parquet"), in("chain.parquet")), false},
		{"a link inside to a directory outside", link(filepath.Join(outside, "dir"), in("dir-outside")), false},
		{"a file under a link to a directory outside", filepath.Join(in("dir-outside"), "b.parquet"), false},
		{"a link inside to a device", link("/dev/null", in("device.parquet")), false},
		{"a link inside to /etc/passwd", link("/etc/passwd", in("passwd.parquet")), false},
		{"a glob matching a link outside", in("to-out*.parquet"), false},
		{"a .. path leaving the directory", filepath.Join(data, "gate", "..", "..", filepath.Base(outside), "a.parquet"), false},
		{"a file in a sibling sharing the prefix", out, false},
		{"a named pipe inside", fifo, false},
		{"a file inside", in("plain.parquet"), true},
		{"a link inside to a file inside", link(in("target.parquet"), in("to-inside.parquet")), true},
		{"a link inside to a directory inside", link(filepath.Join(data, "gate", "indir"), in("dir-inside")), true},
	}
}
