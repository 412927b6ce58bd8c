package pgkv

// SetRangeChunk makes range deletes use statements of n rows, so that a
// test's range spans several; restore sets it back.
func SetRangeChunk(n int) (restore func()) {
	old := rangeChunk
	rangeChunk = n
	return func() { rangeChunk = old }
}
