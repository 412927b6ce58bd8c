package pgkv

import "time"

// SetRangeChunk makes range deletes use statements of n rows, so that a
// test's range spans several; restore sets it back.
func SetRangeChunk(n int) (restore func()) {
	old := rangeChunk
	rangeChunk = n
	return func() { rangeChunk = old }
}

// SetReindexLockWait makes Compact's index rebuild wait at most d for
// transactions open when it starts; restore sets it back.
func SetReindexLockWait(d time.Duration) (restore func()) {
	old := reindexLockWait
	reindexLockWait = d
	return func() { reindexLockWait = old }
}
