package prune

import (
	"slices"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/expr"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

// The Statistics of each level.

// fileStats is a table's files at a snapshot: the catalog's cached
// column-major stats (which offer their bounds as words), aligned with its
// FileSet, and for the columns under = the catalog's membership filters.
type fileStats struct {
	n         int
	ids       []int64
	cols      []ColumnStats
	subFields []SubField
}

func fileStatistics(r *catalog.Reader, tableID int64, fs *catalog.FileSet, b *expr.Bound, opts Options) (*fileStats, error) {
	s := &fileStats{n: fs.Len()}
	eq := equalityColumns(b.Pred)
	for _, c := range b.Columns {
		if c.Variant != nil {
			col, err := subFieldFiles(r, fs, c)
			if err != nil {
				return nil, err
			}
			s.ids, s.cols = append(s.ids, c.ID), append(s.cols, col)
			sf := SubField{Column: c.Variant.Column, Path: c.Variant.Path, Type: types.DisplayName(c.Type)}
			for _, u := range col {
				if u != nil {
					sf.StatsFileCount++
				}
			}
			s.subFields = append(s.subFields, sf)
			continue
		}
		if c.Type.Kind == types.KindGeometry {
			// Extents live in the stats rows' extra_stats, which the
			// column-major cache does not keep.
			col, err := extentFiles(r, tableID, fs, c)
			if err != nil {
				return nil, err
			}
			s.ids, s.cols = append(s.ids, c.ID), append(s.cols, col)
			continue
		}
		cb, err := r.ColumnBounds(tableID, c.ID)
		if err != nil {
			return nil, err
		}
		var col ColumnStats = cb
		mi, err := probedIndex(r, tableID, c.ID, eq, opts)
		if err != nil {
			return nil, err
		}
		if mi != nil {
			col = filteredFiles{cb, mi}
		}
		s.ids, s.cols = append(s.ids, c.ID), append(s.cols, col)
	}
	return s, nil
}

func (s *fileStats) Units() int { return s.n }

func (s *fileStats) Column(id int64) ColumnStats {
	if k := slices.Index(s.ids, id); k >= 0 {
		return s.cols[k]
	}
	return nil
}

// probedIndex is the column's membership index where a plan probes it (a
// column under =, filters not turned off), else nil.
func probedIndex(r *catalog.Reader, tableID, columnID int64, eq map[int64]bool, opts Options) (*catalog.MemberIndex, error) {
	if !eq[columnID] || opts.NoFilters {
		return nil, nil
	}
	return r.MemberIndex(tableID, columnID)
}

// filteredFiles is a column's file stats with its membership index (the
// files' filters, probed through the column's slabs).
type filteredFiles struct {
	*catalog.ColumnBounds
	mi *catalog.MemberIndex
}

func (c filteredFiles) Absent(i int, value []byte) bool { return c.mi.Absent(i, value) }

// unitStats holds statistics unit by unit: a file's row groups, or the
// pieces of a row group.
type unitStats struct {
	n    int
	ids  []int64
	cols []unitColumn
}

// unitColumn is one column's stats per unit; nil: the unit has none.
type unitColumn struct{ units []*stats.Column }

func newUnitStats(n int, b *expr.Bound) *unitStats {
	s := &unitStats{n: n, ids: make([]int64, len(b.Columns)), cols: make([]unitColumn, len(b.Columns))}
	for k, c := range b.Columns {
		s.ids[k], s.cols[k].units = c.ID, make([]*stats.Column, n)
	}
	return s
}

func (s *unitStats) Units() int { return s.n }

func (s *unitStats) Column(id int64) ColumnStats {
	if k := slices.Index(s.ids, id); k >= 0 {
		return &s.cols[k]
	}
	return nil
}

// unit is unit i's stats for a column, nil when it has none.
func (s *unitStats) unit(id int64, i int) *stats.Column {
	if k := slices.Index(s.ids, id); k >= 0 {
		return s.cols[k].units[i]
	}
	return nil
}

func (c *unitColumn) Fill(i int, st *stats.Column) bool {
	p := c.units[i]
	if p == nil {
		return false
	}
	*st = *p
	return true
}

// rowGroups is a file's row groups: their stored stats, and what the
// planner needs beside them.
type rowGroups struct {
	*unitStats
	rows, firsts []int64
	// haveRows: some predicate column had row-group stats, so rows are
	// real (else the file's rows spread evenly, for the byte estimate).
	haveRows bool
	// bloom[i]: row group i has a bloom filter for a column under =.
	bloom []bool
}

// rowGroupReader reads the row-group stats of kept files through one
// cursor per column for a whole plan (files come in id order).
type rowGroupReader struct {
	r       *catalog.Reader
	tableID int64
	eqCols  map[int64]bool // the columns under = (equalityColumns)
	cursors map[int64]*catalog.RowGroupCursor
	mapping *catalog.ColumnMapping // read on first use
	cols    []catalog.Column
}

// fileBound is b with each column's path as file f holds it, for the
// lookups in the file's page index and bloom filters: a column renamed
// since f was registered has its old name there, and a column added since
// gets no path at all, so that a column of the same name the file holds
// (one dropped before) is never read in its place. b itself when the
// table's columns never changed.
func (g *rowGroupReader) fileBound(f catalog.DataFile, b *expr.Bound) (*expr.Bound, error) {
	if g.mapping == nil {
		m, err := g.r.ColumnMapping(g.tableID)
		if err != nil {
			return nil, err
		}
		g.mapping = m
		if g.cols, err = g.r.Columns(g.tableID); err != nil {
			return nil, err
		}
	}
	if !g.mapping.Evolved() {
		return b, nil
	}
	out := &expr.Bound{Text: b.Text, Pred: b.Pred, Columns: make([]*expr.Column, len(b.Columns))}
	for k, c := range b.Columns {
		cp := *c
		out.Columns[k] = &cp
		if c.Variant != nil || len(c.Path) == 0 {
			continue
		}
		cp.Path = nil
		for _, top := range catalog.TopLevel(g.cols) {
			if types.SameIdent(top.Name, c.Path[0]) {
				if name, _, held := g.mapping.Source(top, f); held {
					cp.Path = append([]string{name}, c.Path[1:]...)
				}
				break
			}
		}
	}
	return out, nil
}

func (g *rowGroupReader) close() {
	for _, c := range g.cursors {
		c.Close()
	}
	g.cursors = nil
}

func (g *rowGroupReader) read(f catalog.DataFile, b *expr.Bound) (*rowGroups, error) {
	n := int(f.RowGroupCount)
	rg := &rowGroups{unitStats: newUnitStats(n, b), rows: make([]int64, n), firsts: make([]int64, n), bloom: make([]bool, n)}
	for k, c := range b.Columns {
		if c.Variant != nil {
			have, err := subFieldRowGroups(g.r, g.tableID, f, c, rg.cols[k].units, rg.rows, rg.firsts)
			if err != nil {
				return nil, err
			}
			rg.haveRows = rg.haveRows || have
			continue
		}
		cur := g.cursors[c.ID]
		if cur == nil {
			var err error
			if cur, err = g.r.RowGroupCursor(g.tableID, c.ID); err != nil {
				return nil, err
			}
			if g.cursors == nil {
				g.cursors = map[int64]*catalog.RowGroupCursor{}
			}
			g.cursors[c.ID] = cur
		}
		rgs, err := cur.Stats(f.ID)
		if err != nil {
			return nil, err
		}
		for _, x := range rgs {
			if int(x.Index) < n && x.Index >= 0 {
				st := x.Stats
				rg.cols[k].units[x.Index] = &st
				rg.rows[x.Index] = st.RowCount
				rg.firsts[x.Index] = x.FirstRow
				rg.haveRows = true
				if g.eqCols[c.ID] && x.BloomFilter.Length != 0 {
					rg.bloom[x.Index] = true
				}
			}
		}
	}
	if !rg.haveRows {
		for i := range rg.rows {
			rg.rows[i] = f.RecordCount / int64(max(n, 1))
			rg.firsts[i] = int64(i) * rg.rows[i]
		}
	}
	return rg, nil
}

// pieces cuts row group rg of a file at every page boundary of every
// predicate column: piece i is rows [cuts[i], cuts[i+1]) of the row group,
// and its stats for a column are those of the page holding its first row,
// or the row group's where the column has no page index. nil when no
// column has one.
func pieces(fx *fileIndex, rg int, rows int64, b *expr.Bound, rgs *unitStats) (*unitStats, []int64) {
	colPages := map[int64][]page{}
	cuts := []int64{0, rows}
	for _, c := range b.Columns {
		if c.Variant != nil || len(c.Path) == 0 {
			continue // no page index is read for a sub-field's leaf, nor for a column the file lacks
		}
		pages, err := fx.Pages(rg, c.Path, c.Type)
		if err != nil || len(pages) == 0 {
			continue // no page index: the row group's stats stand for it
		}
		colPages[c.ID] = pages
		for _, pg := range pages {
			if pg.FirstRow >= 0 && pg.FirstRow <= rows {
				cuts = append(cuts, pg.FirstRow)
			}
		}
	}
	if len(colPages) == 0 {
		return nil, nil
	}
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	s := newUnitStats(len(cuts)-1, b)
	for k, c := range b.Columns {
		units := s.cols[k].units
		pages, ok := colPages[c.ID]
		for i := range units {
			if !ok {
				units[i] = rgs.unit(c.ID, rg)
				continue
			}
			lo := cuts[i]
			for j := range pages {
				if pages[j].FirstRow <= lo && lo < pages[j].FirstRow+pages[j].Rows {
					units[i] = &pages[j].Stats
					break
				}
			}
		}
	}
	return s, cuts
}

// withBloom adds a file's bloom filters to row-group statistics (rg < 0:
// unit i is row group i) or to the pieces of row group rg.
type withBloom struct {
	Statistics
	fx *fileIndex
	b  *expr.Bound
	rg int
}

func (s *withBloom) Column(id int64) ColumnStats {
	c := s.Statistics.Column(id)
	if c == nil {
		return nil
	}
	return &bloomColumn{ColumnStats: c, s: s, col: columnByID(s.b, id)}
}

type bloomColumn struct {
	ColumnStats
	s   *withBloom
	col *expr.Column
}

func (c *bloomColumn) Absent(i int, value []byte) bool {
	if c.col == nil || c.col.Codec == nil || c.col.Variant != nil || len(c.col.Path) == 0 {
		return false
	}
	v, err := c.col.Codec.Decode(value)
	if err != nil {
		return false
	}
	rg := c.s.rg
	if rg < 0 {
		rg = i
	}
	absent, err := c.s.fx.BloomAbsent(rg, c.col.Path, c.col.Type, v)
	return err == nil && absent
}
