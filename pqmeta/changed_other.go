//go:build !(linux || openbsd || dragonfly || solaris || illumos || darwin || freebsd || netbsd)

package pqmeta

import "io/fs"

// changedOf is unknown where stat gives no status change time: a stamp
// then leaves it out (Stamp.Differences compares only what is known).
func changedOf(fs.FileInfo) int64 { return 0 }
