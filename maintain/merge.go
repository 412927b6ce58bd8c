package maintain

import (
	"context"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
)

// MergeOptions steer MergeSmallFiles.
type MergeOptions struct {
	// RowsPerFile is the size of the merged files; files with fewer rows
	// are merged (default 1,000,000).
	RowsPerFile int64
	// TargetFileSize, when positive, sizes in bytes instead: files smaller
	// than it are merged into files of about that size.
	TargetFileSize int64
	// Dir receives the merged files; it must not exist yet. Default: as
	// OptimizeOptions.Dir.
	Dir string
}

// MergeSmallFiles merges a table's small files into larger ones, keeping
// the rows' order, and swaps them in in one snapshot (the rocklake compact
// command). Fewer than two small files: nothing to do, no snapshot, a nil
// result.
func MergeSmallFiles(ctx context.Context, e *engine.Engine, table string, o MergeOptions) (*RewriteResult, error) {
	if o.RowsPerFile <= 0 {
		o.RowsPerFile = 1_000_000
	}
	st, err := openTable(e.Catalog(), catalog.Latest, table)
	if err != nil {
		return nil, err
	}
	defer st.r.Close()
	var small []catalog.DataFile
	for _, f := range st.files {
		if o.TargetFileSize > 0 && f.FileSizeBytes < o.TargetFileSize || o.TargetFileSize <= 0 && f.RecordCount < o.RowsPerFile {
			small = append(small, f)
		}
	}
	if len(small) < 2 {
		return nil, nil
	}
	// "compact" names the output directory and the errors: the command's
	// name, which users know.
	return rewrite(ctx, e, st, small, rewriteSpec{sizing: sizing{rows: o.RowsPerFile, bytes: o.TargetFileSize}, dir: o.Dir, what: "compact"})
}
