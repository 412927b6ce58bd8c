//go:build unix

package storage

import (
	"os"
	"syscall"
)

// lockShared blocks until f holds a shared lock: evictors take an
// exclusive one only briefly, and never while a reader holds its own.
func lockShared(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_SH) }

// tryLockExclusive takes an exclusive lock if no process holds any.
func tryLockExclusive(f *os.File) bool {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
}
