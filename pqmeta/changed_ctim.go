//go:build linux || openbsd || dragonfly || solaris || illumos

package pqmeta

import (
	"io/fs"
	"syscall"
	"time"
)

// changedOf is the file's status change time (ctime), Unix nanoseconds.
func changedOf(st fs.FileInfo) int64 {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return time.Unix(s.Ctim.Unix()).UnixNano()
	}
	return 0
}
