package prune

import (
	"fmt"
	"path/filepath"

	"rocklake/catalog"
	"rocklake/expr"
)

// Counts are units total, kept (to read) and all-match (kept, no filter
// needed).
type Counts struct {
	Total    int `json:"total"`
	Kept     int `json:"kept"`
	AllMatch int `json:"all_match"`
}

// PageCounts are the pages the page level considered; Evaluated is false
// when no page index was consulted.
type PageCounts struct {
	Total     int  `json:"total"`
	Kept      int  `json:"kept"`
	Evaluated bool `json:"evaluated"`
}

// Bytes are data bytes in all files and in the kept units. A kept row
// group counts its share of the file by rows.
type Bytes struct {
	Total int64 `json:"total"`
	Kept  int64 `json:"kept"`
}

// KeptFile is a file the query must read, with the row groups to read;
// AllMatch says every row in those row groups matches.
type KeptFile struct {
	Path      string  `json:"path"`
	FileID    int64   `json:"file_id"`
	Rows      int64   `json:"rows"`
	RowGroups []int32 `json:"row_groups"`
	AllMatch  bool    `json:"all_match"`
}

// Plan is what pruning decided for one table and predicate.
type Plan struct {
	Table     string     `json:"table"`
	Snapshot  int64      `json:"snapshot"`
	Predicate string     `json:"predicate"`
	Bound     string     `json:"bound"`
	Files     Counts     `json:"files"`
	RowGroups Counts     `json:"row_groups"`
	Pages     PageCounts `json:"pages"`
	Bytes     Bytes      `json:"bytes"`
	KeptFiles []KeptFile `json:"kept_files"`
}

// Options tune planning. The zero value plans files and row groups.
type Options struct {
	// FilesOnly stops at the file level (no row-group stats read).
	FilesOnly bool
}

// PlanTable prunes a table's files and row groups for a predicate at the
// reader's snapshot. A predicate of "" or "true" keeps everything.
func PlanTable(r *catalog.Reader, table, predicate string, opts Options) (*Plan, error) {
	t, err := r.Table(table)
	if err != nil {
		return nil, err
	}
	cols, err := r.Columns(t.ID)
	if err != nil {
		return nil, err
	}
	if predicate == "" {
		predicate = "true"
	}
	b, err := expr.Compile(predicate, cols)
	if err != nil {
		return nil, err
	}
	files, err := r.Files(t.ID)
	if err != nil {
		return nil, err
	}
	plan := &Plan{Table: t.Name, Snapshot: r.Snapshot().ID, Predicate: predicate, Bound: b.Pred.String(), KeptFiles: []KeptFile{}}
	eval := Compile(b.Pred)

	// File level: one range scan per predicate column.
	fileStats := make(map[int64]map[int64]*catalog.ColumnStats, len(b.Columns))
	for _, c := range b.Columns {
		m := make(map[int64]*catalog.ColumnStats, len(files))
		err := r.FileColumnStats(t.ID, c.ID, func(fileID int64, st *catalog.ColumnStats) error {
			cp := *st
			m[fileID] = &cp
			return nil
		})
		if err != nil {
			return nil, err
		}
		fileStats[c.ID] = m
	}
	for _, f := range files {
		plan.Files.Total++
		plan.RowGroups.Total += int(f.RowGroupCount)
		plan.Bytes.Total += f.FileSizeBytes
		if f.RecordCount == 0 {
			continue // nothing to read
		}
		res := eval(func(colID int64) *catalog.ColumnStats { return fileStats[colID][f.ID] })
		if res == Skip {
			continue
		}
		kf := KeptFile{Path: absPath(r, t, f), FileID: f.ID, Rows: f.RecordCount, AllMatch: res == AllMatch}
		if res == AllMatch || opts.FilesOnly || f.RowGroupCount <= 0 {
			for i := int32(0); i < f.RowGroupCount; i++ {
				kf.RowGroups = append(kf.RowGroups, i)
			}
			plan.keep(kf, f, f.RecordCount, res == AllMatch, int(f.RowGroupCount))
			continue
		}
		rgRes, rgRows, err := planRowGroups(r, t.ID, f, b, eval)
		if err != nil {
			return nil, err
		}
		var keptRows int64
		allRG := 0
		for i, res := range rgRes {
			if res == Skip {
				continue
			}
			kf.RowGroups = append(kf.RowGroups, int32(i))
			keptRows += rgRows[i]
			if res == AllMatch {
				allRG++
			}
		}
		if len(kf.RowGroups) == 0 {
			continue // every row group skipped
		}
		kf.AllMatch = allRG == len(kf.RowGroups) // every row it reads matches
		plan.keep(kf, f, keptRows, false, allRG)
	}
	return plan, nil
}

func (p *Plan) keep(kf KeptFile, f catalog.DataFile, keptRows int64, allMatch bool, allMatchRGs int) {
	p.Files.Kept++
	if allMatch || kf.AllMatch {
		p.Files.AllMatch++
	}
	p.RowGroups.Kept += len(kf.RowGroups)
	p.RowGroups.AllMatch += allMatchRGs
	if f.RecordCount > 0 {
		p.Bytes.Kept += f.FileSizeBytes * keptRows / f.RecordCount
	}
	p.KeptFiles = append(p.KeptFiles, kf)
}

// planRowGroups evaluates each row group of a file from its stored stats.
func planRowGroups(r *catalog.Reader, tableID int64, f catalog.DataFile, b *expr.Bound, eval Evaluator) ([]Result, []int64, error) {
	n := int(f.RowGroupCount)
	per := make([]map[int64]*catalog.ColumnStats, n)
	rows := make([]int64, n)
	for i := range per {
		per[i] = map[int64]*catalog.ColumnStats{}
	}
	haveRows := false
	for _, c := range b.Columns {
		rgs, err := r.RowGroupStats(tableID, c.ID, f.ID)
		if err != nil {
			return nil, nil, err
		}
		for _, rg := range rgs {
			if int(rg.Index) < n && rg.Index >= 0 {
				st := rg.Stats
				per[rg.Index][c.ID] = &st
				rows[rg.Index] = st.RowCount
				haveRows = true
			}
		}
	}
	out := make([]Result, n)
	for i := range per {
		if haveRows && rows[i] == 0 {
			out[i] = Skip // an empty row group
			continue
		}
		m := per[i]
		out[i] = eval(func(colID int64) *catalog.ColumnStats { return m[colID] })
	}
	if !haveRows {
		// No row-group stats for any predicate column (e.g. the predicate
		// names none): spread the file's rows evenly for the byte estimate.
		for i := range rows {
			rows[i] = f.RecordCount / int64(max(n, 1))
		}
	}
	return out, rows, nil
}

// absPath is a data file's absolute path.
func absPath(r *catalog.Reader, t catalog.Table, f catalog.DataFile) string {
	if !f.PathIsRelative {
		return f.Path
	}
	return filepath.Join(t.Path, f.Path)
}

// String summarises a plan in one line.
func (p *Plan) String() string {
	return fmt.Sprintf("%s@%d: files %d/%d kept (%d all-match), row groups %d/%d kept (%d all-match), bytes %d/%d",
		p.Table, p.Snapshot, p.Files.Kept, p.Files.Total, p.Files.AllMatch, p.RowGroups.Kept, p.RowGroups.Total,
		p.RowGroups.AllMatch, p.Bytes.Kept, p.Bytes.Total)
}
