//go:build unix

package pqmeta

import (
	"io/fs"
	"os"
	"syscall"
)

// identityOf is the file's device and inode.
func identityOf(st fs.FileInfo) FileIdentity {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return FileIdentity{Device: uint64(s.Dev), Inode: uint64(s.Ino)}
	}
	return FileIdentity{}
}

// openFlags open without waiting: a named pipe that took a listed file's
// place opens at once (and is then refused) instead of blocking until a
// writer comes.
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK
