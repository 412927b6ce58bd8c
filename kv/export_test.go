package kv

// SetPebbleBatchLimit lowers the bytes a Pebble batch may hold, for a test
// to reach the limit; the returned func restores it.
func SetPebbleBatchLimit(n uint64) (restore func()) {
	old := pebbleBatchLimit
	pebbleBatchLimit = n
	return func() { pebbleBatchLimit = old }
}
