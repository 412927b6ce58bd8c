package server

// SetStreamCopies turns DuckDB's own COPY for COPY TO STDOUT on or off
// (copystream.go), for tests that compare it with the row path.
func SetStreamCopies(on bool) (was bool) {
	was, streamCopies = streamCopies, on
	return was
}

// StreamedCopies counts the COPY TO STDOUT statements DuckDB's own COPY
// has written so far.
func StreamedCopies() int64 { return streamedCopies.Load() }

// SetIcebergTasksPerPage sets how many file scan tasks one Iceberg plan
// response holds before the rest go to plan tasks.
func SetIcebergTasksPerPage(n int) (was int) {
	was, icebergTasksPerPage = icebergTasksPerPage, n
	return was
}

func StreamedCursors() int64 { return streamedCursors.Load() }
