package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"rocklake/catalog"
	"rocklake/ingest"
)

// OptimizeOptions steer a rewrite.
type OptimizeOptions struct {
	// SortBy names top-level columns; rows are written in that order.
	SortBy []string
	// RowsPerFile sizes the new files (default 1,000,000 rows).
	RowsPerFile int64
	// Dir receives the new files; it must not exist yet. Default: beside the
	// table's first live file, named after the table and the snapshot.
	Dir string
}

// OptimizeResult says what a rewrite did.
type OptimizeResult struct {
	Snapshot    catalog.Snapshot
	FilesBefore int
	FilesAfter  int
	Rows        int64
	Dir         string
}

// ErrNothingToOptimize reports a table without live files.
var ErrNothingToOptimize = errors.New("the table has no files to rewrite")

// Optimize rewrites a table's live files sorted by columns, so that each
// new file covers a narrow range of them, and swaps them in for the old
// files in one snapshot. The old files stay on disk and readable by time
// travel. When the commit fails (another writer retired one of the files
// meanwhile), the new files are deleted and the catalog is unchanged.
func (e *Engine) Optimize(ctx context.Context, table string, o OptimizeOptions) (res *OptimizeResult, err error) {
	if len(o.SortBy) == 0 {
		return nil, errors.New("optimize: no sort column given")
	}
	if o.RowsPerFile <= 0 {
		o.RowsPerFile = 1_000_000
	}
	st, err := e.openTable(catalog.Latest, table)
	if err != nil {
		return nil, err
	}
	defer st.r.Close()
	t, cols := st.t, st.cols
	var order []string
	for _, s := range o.SortBy {
		found := false
		for _, c := range cols {
			if !c.Parent.Known && strings.EqualFold(c.Name, strings.TrimSpace(s)) {
				order, found = append(order, quoteIdent(c.Name)), true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("%w: %q in table %q", catalog.ErrNoSuchColumn, s, t.Name)
		}
	}
	if len(st.files) == 0 {
		return nil, fmt.Errorf("%s: %w", t.Name, ErrNothingToOptimize)
	}
	return e.rewrite(ctx, st, st.files, order, o.RowsPerFile, o.Dir, "optimize")
}

// rewrite writes the rows of files (in order, or in their present order
// when order is empty) to new files of rowsPerFile rows in dir and swaps
// them in for files in one snapshot.
func (e *Engine) rewrite(ctx context.Context, st *tableState, files []catalog.DataFile, order []string,
	rowsPerFile int64, dir, what string) (res *OptimizeResult, err error) {
	t, cols := st.t, st.cols
	paths := make([]string, len(files))
	ids := make([]int64, len(files))
	for i, f := range files {
		paths[i], ids[i] = f.Location(t), f.ID
	}
	if dir == "" {
		dir = filepath.Join(filepath.Dir(paths[0]), fmt.Sprintf("%s-%s-%d", t.Name, what, st.r.Snapshot().ID))
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%s: output directory: %w", what, err)
	}
	committed := false
	defer func() {
		if !committed {
			os.RemoveAll(dir) // nothing refers to the new files
		}
	}()

	conn, err := e.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	// One pass into a temporary table, numbered, then one COPY per output
	// file: file boundaries fall at exact row counts and every file holds a
	// contiguous run of the order. Without a sort the numbering is the
	// table's rowid, which follows insertion order: DuckDB keeps the scan's
	// order (preserve_insertion_order, on by default) so rows stay in their
	// files' order and whatever clustering they had survives.
	const tmp = "__rocklake_rewrite"
	fill := fmt.Sprintf("CREATE OR REPLACE TEMP TABLE %s AS SELECT * FROM (%s)", tmp, viewSQL(t, cols, paths))
	sel, rn := "*", "rowid + 1"
	if len(order) > 0 {
		fill = fmt.Sprintf("CREATE OR REPLACE TEMP TABLE %s AS SELECT *, row_number() OVER (ORDER BY %s) AS __rn FROM (%s)",
			tmp, strings.Join(order, ", "), viewSQL(t, cols, paths))
		sel, rn = "* EXCLUDE (__rn)", "__rn"
	}
	if _, err := conn.ExecContext(ctx, fill); err != nil {
		return nil, fmt.Errorf("%s: reading the files: %w", what, err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS "+tmp)
	var rows int64
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM "+tmp).Scan(&rows); err != nil {
		return nil, err
	}
	n := 0
	for off := int64(0); off < rows; off += rowsPerFile {
		p := filepath.Join(dir, fmt.Sprintf("part-%05d.parquet", n))
		q := fmt.Sprintf("COPY (SELECT %s FROM %s WHERE %s > %d AND %s <= %d ORDER BY %s) TO '%s' (FORMAT parquet)",
			sel, tmp, rn, off, rn, off+rowsPerFile, rn, strings.ReplaceAll(p, "'", "''"))
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return nil, fmt.Errorf("%s: writing %s: %w", what, p, err)
		}
		n++
	}
	added, err := ingest.Add(e.cat, t.Name, []string{dir}, ingest.Options{Replace: ids})
	if err != nil {
		return nil, fmt.Errorf("%s: registering the rewritten files: %w", what, err)
	}
	committed = true
	if added.Rows != rows {
		// Cannot happen unless the writer's footers lie; the snapshot is
		// made, so say so loudly (the previous snapshot still reads the
		// old files).
		return nil, fmt.Errorf("%s: wrote %d rows but registered %d at snapshot %d", what, rows, added.Rows, added.Snapshot.ID)
	}
	return &OptimizeResult{Snapshot: added.Snapshot, FilesBefore: len(files), FilesAfter: n, Rows: rows, Dir: dir}, nil
}

// CompactOptions steer Compact.
type CompactOptions struct {
	// RowsPerFile is the size of the merged files; files with fewer rows
	// are merged (default 1,000,000).
	RowsPerFile int64
	// Dir receives the merged files; it must not exist yet.
	Dir string
}

// Compact merges a table's small files (fewer than RowsPerFile rows) into
// files of RowsPerFile rows, keeping the rows' order, and swaps them in
// in one snapshot. Fewer than two small files: nothing to do, no snapshot,
// a nil result.
func (e *Engine) Compact(ctx context.Context, table string, o CompactOptions) (*OptimizeResult, error) {
	if o.RowsPerFile <= 0 {
		o.RowsPerFile = 1_000_000
	}
	st, err := e.openTable(catalog.Latest, table)
	if err != nil {
		return nil, err
	}
	defer st.r.Close()
	var small []catalog.DataFile
	for _, f := range st.files {
		if f.RecordCount < o.RowsPerFile {
			small = append(small, f)
		}
	}
	if len(small) < 2 {
		return nil, nil
	}
	return e.rewrite(ctx, st, small, nil, o.RowsPerFile, o.Dir, "compact")
}

// tableState is a table as a snapshot sees it.
type tableState struct {
	r     *catalog.Reader
	t     catalog.Table
	cols  []catalog.Column
	files []catalog.DataFile
}

// openTable reads a table, its columns and its live files at a snapshot;
// the caller closes st.r.
func (e *Engine) openTable(snapshot int64, table string) (*tableState, error) {
	r, err := e.cat.Read(snapshot)
	if err != nil {
		return nil, err
	}
	st := &tableState{r: r}
	if st.t, err = r.Table(table); err == nil {
		if st.cols, err = r.Columns(st.t.ID); err == nil {
			st.files, err = r.Files(st.t.ID)
		}
	}
	if err != nil {
		r.Close()
		return nil, err
	}
	return st, nil
}
