//go:build !unix

package storage

import "os"

// Without flock, entries are protected from eviction only by EvictGrace.
func lockShared(*os.File) error      { return nil }
func tryLockExclusive(*os.File) bool { return true }
