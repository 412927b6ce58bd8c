package maintain

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/internal/sqllex"
	"github.com/rocklake/rocklake/types"
)

// writeDeleteFiles writes into dir one delete file per affected file
// (delete-<file id>.parquet: file_path, pos, sorted by pos, DuckLake's
// layout): the positions of hit's rids in it, and those of its current
// delete file (dels, local copies in readable), which the new one
// replaces.
//
// DuckDB streams the rids once, sorted, so a file's positions come
// together and only one file's are held at a time; arrow-go writes the
// files (a COPY per file costs DuckDB a statement and a plan each, most of
// a one-id DELETE's time). One DuckDB statement per batch of files then
// reads them back and checks each holds what was written, as every
// reader (DuckDB's) will see it.
func writeDeleteFiles(ctx context.Context, conn *sql.Conn, st *tableState, verb, hit, dir string, affected []catalog.DataFile,
	dels map[int64]catalog.DeleteFile, readable map[int64]catalog.DeleteFile) ([]catalog.NewDeleteFile, error) {
	byID := make(map[int64]catalog.DataFile, len(affected))
	for _, f := range affected {
		byID[f.ID] = f
	}
	var nds []catalog.NewDeleteFile
	var firsts, lasts []int64
	flush := func(id int64, pos []int64) error {
		f, ok := byID[id]
		if !ok {
			return fmt.Errorf("%s: a row to delete is in file %d, not one the change read; nothing committed", verb, id)
		}
		delete(byID, id) // each file's rids come together, once
		loc := f.Location(st.t)
		old, had := dels[id]
		if had {
			before, err := engine.DeletedPositions(readable[id].Location(st.t))
			if err != nil {
				return fmt.Errorf("%s: reading the delete file of %s: %w", verb, loc, err)
			}
			if int64(len(before)) != old.DeleteCount {
				return fmt.Errorf("%s: the delete file of %s holds %d positions, its record says %d; nothing committed", verb, loc, len(before), old.DeleteCount)
			}
			pos = slices.Compact(slices.Sorted(slices.Values(append(pos, before...))))
		}
		if pos[0] < 0 || pos[len(pos)-1] >= f.RecordCount || (had && int64(len(pos)) <= old.DeleteCount) {
			return fmt.Errorf("%s: the positions to delete in %s run from %d to %d, %d of them (%d rows in the file, %d deleted before); nothing committed",
				verb, loc, pos[0], pos[len(pos)-1], len(pos), f.RecordCount, old.DeleteCount)
		}
		p := filepath.Join(dir, fmt.Sprintf("delete-%d.parquet", id))
		if err := writeDeleteFile(p, loc, pos); err != nil {
			return fmt.Errorf("%s: writing the delete file of %s: %w", verb, loc, err)
		}
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		nds = append(nds, catalog.NewDeleteFile{DataFileID: id, Path: p, DeleteCount: int64(len(pos)), FileSizeBytes: fi.Size(),
			ModifiedUnixNanos: fi.ModTime().UnixNano(), Replaces: old.ID})
		firsts, lasts = append(firsts, pos[0]), append(lasts, pos[len(pos)-1])
		return nil
	}
	rows, err := conn.QueryContext(ctx, "SELECT DISTINCT "+ridCol+" FROM ("+hit+") ORDER BY 1")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cur := int64(-1)
	var pos []int64
	for rows.Next() {
		var rid int64
		if err := rows.Scan(&rid); err != nil {
			return nil, err
		}
		if id := rid >> 32; id != cur {
			if cur >= 0 {
				if err := flush(cur, pos); err != nil {
					return nil, err
				}
			}
			cur, pos = id, pos[:0]
		}
		pos = append(pos, rid&(1<<32-1))
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if cur >= 0 {
		if err := flush(cur, pos); err != nil {
			return nil, err
		}
	}
	if len(byID) > 0 {
		return nil, fmt.Errorf("%s: %d files to change have no row to delete; nothing committed", verb, len(byID))
	}
	if err := checkDeleteFiles(ctx, conn, st, verb, affected, nds, firsts, lasts); err != nil {
		return nil, err
	}
	return nds, nil
}

// writeDeleteFile writes the positions (sorted, distinct) of the data
// file at loc as a delete file at p.
func writeDeleteFile(p, loc string, pos []int64) error {
	mem := memory.DefaultAllocator
	paths := array.NewStringBuilder(mem)
	defer paths.Release()
	ints := array.NewInt64Builder(mem)
	defer ints.Release()
	paths.Reserve(len(pos))
	for range pos {
		paths.Append(loc)
	}
	ints.AppendValues(pos, nil)
	pa, ia := paths.NewArray(), ints.NewArray()
	defer pa.Release()
	defer ia.Release()
	return pqwrite.Write(p, []pqwrite.Column{
		{Name: "file_path", Type: types.Simple(types.KindVarchar), Array: pa},
		{Name: "pos", Type: types.Simple(types.KindBigInt), Array: ia},
	}, pqwrite.Options{Zstd: true, Dictionary: true})
}

// checkDeleteFiles reads the delete files written back through DuckDB, a
// batch of files per statement, and checks each holds exactly the
// positions written: its count, distinct, first and last, and no other
// data file's path.
func checkDeleteFiles(ctx context.Context, conn *sql.Conn, st *tableState, verb string, affected []catalog.DataFile, nds []catalog.NewDeleteFile, firsts, lasts []int64) error {
	locs := make(map[int64]string, len(affected))
	for _, f := range affected {
		locs[f.ID] = f.Location(st.t)
	}
	const batch = 256
	for i := 0; i < len(nds); i += batch {
		part := nds[i:min(i+batch, len(nds))]
		want := make(map[string]int, len(part))
		paths := make([]string, len(part))
		for j, nd := range part {
			want[locs[nd.DataFileID]] = i + j
			paths[j] = sqllex.QuoteString(nd.Path)
		}
		rows, err := conn.QueryContext(ctx, "SELECT file_path, count(*), count(DISTINCT pos), min(pos), max(pos) FROM read_parquet(["+strings.Join(paths, ", ")+"]) GROUP BY file_path")
		if err != nil {
			return fmt.Errorf("%s: reading back the delete files: %w", verb, err)
		}
		seen := 0
		for rows.Next() {
			var path sql.NullString
			var n, distinct int64
			var first, last sql.NullInt64
			if err := rows.Scan(&path, &n, &distinct, &first, &last); err != nil {
				rows.Close()
				return err
			}
			k, ok := want[path.String]
			if !ok || !path.Valid {
				rows.Close()
				return fmt.Errorf("%s: a delete file written reads back with file_path %q, no file it was written for; nothing committed", verb, path.String)
			}
			nd := nds[k]
			if n != nd.DeleteCount || distinct != n || first.Int64 != firsts[k] || last.Int64 != lasts[k] || !first.Valid {
				rows.Close()
				return fmt.Errorf("%s: the delete file written for %s reads back as %d positions, %d distinct, from %d to %d; %d from %d to %d were written; nothing committed",
					verb, path.String, n, distinct, first.Int64, last.Int64, nd.DeleteCount, firsts[k], lasts[k])
			}
			seen++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if seen != len(part) {
			return fmt.Errorf("%s: %d of %d delete files written read back; nothing committed", verb, seen, len(part))
		}
	}
	return nil
}
