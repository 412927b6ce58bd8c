package pqmeta

import (
	"regexp"
	"strconv"
)

// writer is what rocklake knows of the program that wrote a file, from the
// footer's created_by. Only behaviour verified against that writer is
// relied on:
//
//   - DuckDB ≥ 1.5 writes no min/max at all for a FLOAT/DOUBLE chunk that
//     holds a NaN (and never writes nan_count), so a float chunk with bounds
//     holds no NaN.
//   - Other writers (arrow-go, parquet-cpp, parquet-mr, parquet-rs) leave
//     NaN out of min/max without saying whether one was there, unless they
//     write nan_count: their float chunks have contains_nan unknown.
type writer struct {
	createdBy      string
	nanDropsBounds bool
}

var duckdbVersion = regexp.MustCompile(`^DuckDB version v(\d+)\.(\d+)\.`)

func writerOf(createdBy string) writer {
	w := writer{createdBy: createdBy}
	if m := duckdbVersion.FindStringSubmatch(createdBy); m != nil {
		major, _ := strconv.Atoi(m[1])
		minor, _ := strconv.Atoi(m[2])
		w.nanDropsBounds = major > 1 || (major == 1 && minor >= 5)
	}
	return w
}
