package maintain

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/rocklake/rocklake/catalog"
)

// A write into a table without partitions, of columns arrow-go writes
// from DuckDB's Parquet (arrowWriter.viaParquet), is streamed: its rows
// are not laid out in a temporary table and read back a file at a time,
// but leave DuckDB once, in order, through one COPY of the source (sorted
// as the table says) to an uncompressed Parquet file beside the new
// files; arrow-go reads it a batch at a time and the files are cut from
// the batches at the sizing's row counts. The check compares the new
// files with the source itself.

// orderStream is order for a streamed write of src.
func (w *rewriteRun) orderStream(src string) error {
	ctx, conn, what := w.ctx, w.conn, w.what
	w.stream, w.streamSrc, w.into = true, src, "("+src+")"
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM "+w.into).Scan(&w.rows); err != nil {
		return fmt.Errorf("%s: laying out the rows: %w", what, err)
	}
	var err error
	if w.typs, err = slotTypes(ctx, conn, w.into, len(catalog.TopLevel(w.st.cols))); err != nil {
		return fmt.Errorf("%s: types of the rows read: %w", what, err)
	}
	return nil
}

// writeStream is write for a streamed write.
func (w *rewriteRun) writeStream() (err error) {
	ctx, conn, what, aw := w.ctx, w.conn, w.what, w.aw
	sel := make([]string, len(aw.cols))
	for i := range aw.cols {
		sel[i] = slot(aw.slots[i])
	}
	query := fmt.Sprintf("SELECT %s FROM (%s)", strings.Join(sel, ", "), w.streamSrc)
	if len(w.sp.order) > 0 {
		sorted, key, _, err := w.sortedSource(w.streamSrc)
		if err != nil {
			return err
		}
		// The ORDER BY is the query's own, whose order the COPY keeps.
		query = fmt.Sprintf("SELECT %s FROM (%s) ORDER BY %s", strings.Join(sel, ", "), sorted, key)
	}
	// Not a .parquet name, which registration would take; removed when
	// read, and with the directory should the write stop.
	stage := filepath.Join(w.dir, ".rows.tmp")
	defer os.Remove(stage)
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("COPY (%s) TO '%s' (%s)", query, strings.ReplaceAll(stage, "'", "''"), stageCopyOptions)); err != nil {
		return fmt.Errorf("%s: laying out the rows: %w", what, err)
	}
	fr, done, err := openStage(stage)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer done()
	rr, err := fr.GetRecordReader(ctx, nil, nil)
	if err != nil {
		return fmt.Errorf("%s: reading the rows DuckDB wrote: %w", what, err)
	}
	defer rr.Release()
	w.later(func() { w.finish() }) // on an early return, let the writer end before the directory goes
	var batch arrow.RecordBatch    // the batch being cut, from pos on
	var pos int64
	defer func() {
		if batch != nil {
			batch.Release()
		}
	}()
	next := func() bool {
		if batch != nil {
			batch.Release()
			batch = nil
		}
		for rr.Next() {
			if b := rr.RecordBatch(); b.NumRows() > 0 {
				b.Retain()
				batch, pos = b, 0
				return true
			}
		}
		return false
	}
	for off := int64(0); off < w.rows; {
		step := w.fileRows(off)
		parts := make([][]arrow.Array, len(aw.cols))
		for got := int64(0); got < step; {
			if (batch == nil || pos == batch.NumRows()) && !next() {
				releaseAll(parts)
				if err := rr.Err(); err != nil {
					return fmt.Errorf("%s: reading the rows DuckDB wrote: %w", what, err)
				}
				return fmt.Errorf("%s: DuckDB wrote %d rows of %d", what, off+got, w.rows)
			}
			take := min(step-got, batch.NumRows()-pos)
			for i := range parts {
				parts[i] = append(parts[i], array.NewSlice(batch.Column(i), pos, pos+take))
			}
			pos, got = pos+take, got+take
		}
		arrays := make([]arrow.Array, len(parts))
		for i, ps := range parts {
			if arrays[i], err = joined(ps); err != nil {
				releaseAll(append([][]arrow.Array{arrays[:i]}, parts[i+1:]...))
				return fmt.Errorf("%s: %w", what, err)
			}
		}
		cols, err := aw.columns(arrays)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		p, err := w.filePath(off)
		if err != nil {
			release(cols)
			return err
		}
		if err := w.encode(p, step, cols); err != nil {
			return err
		}
		w.written = append(w.written, p)
		off += step
	}
	if (batch != nil && pos < batch.NumRows()) || next() {
		return fmt.Errorf("%s: DuckDB wrote more than the %d rows counted", what, w.rows)
	}
	if err := rr.Err(); err != nil {
		return fmt.Errorf("%s: reading the rows DuckDB wrote: %w", what, err)
	}
	if err := w.finish(); err != nil {
		return err
	}
	if afterWrite != nil {
		afterWrite(w.written)
	}
	return nil
}

func releaseAll(parts [][]arrow.Array) {
	for _, ps := range parts {
		for _, a := range ps {
			a.Release()
		}
	}
}
