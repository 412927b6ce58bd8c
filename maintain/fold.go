package maintain

import (
	"context"
	"fmt"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
)

// FoldDeletes rewrites every live file of a table that has deleted rows
// (a delete file, catalog.DeleteFile) into a file of the rows left, each
// into its own successor so that none spans more than it did, and swaps
// them in, delete files ended, in one snapshot; a file whose every row was
// deleted is only retired. Older snapshots still read the old files and
// their delete files: an erasure needs expire and cleanup after it
// (CheckErased says what still holds the rows). A table without deleted
// rows is left as it is (the result's snapshot is the latest, FilesBefore
// 0).
func FoldDeletes(ctx context.Context, e *engine.Engine, table string) (*RewriteResult, error) {
	cat := e.Catalog()
	st, err := openTable(cat, catalog.Latest, table)
	if err != nil {
		return nil, err
	}
	defer st.r.Close()
	dels, err := st.r.DeleteFiles(st.t.ID)
	if err != nil {
		return nil, err
	}
	var files []catalog.DataFile
	for _, f := range st.files {
		if _, ok := dels[f.ID]; ok {
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		return &RewriteResult{Snapshot: st.r.Snapshot()}, nil
	}
	conn, err := e.DB().Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = f.Location(st.t)
		if catalog.IsObject(paths[i]) {
			local, release, err := e.ObjectCopy(ctx, paths[i], f.FileSizeBytes, f.ETag)
			if err != nil {
				return nil, fmt.Errorf("fold %s: reading %s: %w", st.t.Name, paths[i], err)
			}
			defer release()
			paths[i] = local
		} else if err := engine.CheckFile(st.t, f); err != nil {
			return nil, err
		}
	}
	dels, release, err := e.LocalDeleteFiles(ctx, st.t, dels, catalog.FileIDs(files))
	if err != nil {
		return nil, fmt.Errorf("fold %s: %w", st.t.Name, err)
	}
	defer release()
	const staged = "__rocklake_fold"
	if err := stageFiles(ctx, e, conn, st, files, paths, dels, staged, groupCol); err != nil {
		return nil, fmt.Errorf("fold %s: reading the files: %w", st.t.Name, err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS temp."+staged)
	sp := rewriteSpec{conn: conn, what: "fold", src: "SELECT * FROM temp." + staged, group: groupCol,
		sizing: writeSizing(st.t.WriteOptions), place: writePlace(cat, st), bytesPerRow: liveBytesPerRow(st)}
	if sp.order, sp.curve, err = writeOrder(st); err != nil {
		return nil, err
	}
	return rewrite(ctx, e, st, files, sp)
}
