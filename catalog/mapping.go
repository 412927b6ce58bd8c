package catalog

import (
	"fmt"

	"github.com/rocklake/rocklake/catalog/catalogpb"
	"github.com/rocklake/rocklake/types"
)

// ColumnMapping says how the files of a table hold the columns of a
// snapshot: DuckLake's name mapping, kept as every version of every
// column the table ever had, so that a file's columns are the table's as
// of the snapshot that registered it.
type ColumnMapping struct {
	byID map[int64][]Column
	// mapped is, per column id, the files that hold it though they
	// predate it (Column.MappedIn), by file id.
	mapped  map[int64]map[int64]FileColumnSource
	evolved bool
}

// ColumnMapping reads the mapping of a table's files (shared: read it,
// never modify it).
func (r *Reader) ColumnMapping(tableID int64) (*ColumnMapping, error) {
	if r.head {
		if m, ok := r.c.defs.getMapping(r.snap.SchemaVersion, tableID); ok {
			return m, nil
		}
	}
	m, err := r.readColumnMapping(tableID)
	if err == nil && r.head {
		r.c.defs.putMapping(r.snap.SchemaVersion, tableID, m)
	}
	return m, err
}

func (r *Reader) readColumnMapping(tableID int64) (*ColumnMapping, error) {
	m := &ColumnMapping{byID: map[int64][]Column{}}
	first := int64(-1)
	var p catalogpb.Column
	err := scanRange(r.kvs, key(tagColumn, tableID), func(k, v []byte) error {
		p.Reset()
		if err := decodeValue(v, &p); err != nil {
			return fmt.Errorf("column row %x: %w", k, err)
		}
		c := columnFromPB(&p)
		m.byID[c.ID] = append(m.byID[c.ID], c)
		for _, src := range c.MappedIn {
			if m.mapped == nil {
				m.mapped = map[int64]map[int64]FileColumnSource{}
			}
			if m.mapped[c.ID] == nil {
				m.mapped[c.ID] = map[int64]FileColumnSource{}
			}
			m.mapped[c.ID][src.FileID] = src
		}
		if first < 0 || c.Begin < first {
			first = c.Begin
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// A table's columns all begin when it is created and, when it is
	// dropped, all end then: anything else is an alteration.
	ends := map[int64]bool{}
	for _, vs := range m.byID {
		for _, c := range vs {
			end := int64(-1)
			if c.End.Known {
				end = c.End.V
			}
			ends[end] = true
			if c.Begin != first || c.WidenedFrom.Known || len(vs) > 1 {
				m.evolved = true
			}
		}
	}
	m.evolved = m.evolved || len(ends) > 1
	return m, nil
}

// Evolved says some column was added, renamed, dropped or retyped after
// the table was created: otherwise every file holds the columns under
// their names.
func (m *ColumnMapping) Evolved() bool { return m.evolved }

// Source says under which name file f holds top-level column c, and in
// which type; held is false when f was registered before the column was
// added, and then reads as c.Default.
func (m *ColumnMapping) Source(c Column, f DataFile) (name string, typ types.Type, held bool) {
	if !m.evolved {
		return c.Name, c.Type, true
	}
	id := c.ID
	for range len(m.byID) + 1 {
		vs := m.byID[id]
		for _, v := range vs {
			if v.Begin <= f.Begin && (!v.End.Known || f.Begin < v.End.V) {
				return v.Name, v.Type, true
			}
		}
		if src, ok := m.mapped[id][f.ID]; ok {
			return src.Name, src.Type, true
		}
		if len(vs) == 0 || !vs[0].WidenedFrom.Known {
			break
		}
		id = vs[0].WidenedFrom.V
	}
	return "", c.Type, false
}

// Names are the top-level columns file f holds, as registered, and those
// mapped in from it since (Column.MappedIn) under its names and types.
func (m *ColumnMapping) Names(f DataFile) []Column {
	var out []Column
	for id, vs := range m.byID {
		for _, v := range vs {
			if !v.Parent.Known && v.Partition == "" && v.Begin <= f.Begin && (!v.End.Known || f.Begin < v.End.V) {
				out = append(out, v)
			}
		}
		if src, ok := m.mapped[id][f.ID]; ok && len(vs) > 0 {
			v := vs[0]
			v.Name, v.Type = src.Name, src.Type
			out = append(out, v)
		}
	}
	return treeOrder(out)
}

// PerFile says file f holds a column mapped in from it (Column.MappedIn):
// its mapping is its own, not that of every file its snapshot registered.
func (m *ColumnMapping) PerFile(f DataFile) bool {
	for _, files := range m.mapped {
		if _, ok := files[f.ID]; ok {
			return true
		}
	}
	return false
}

// HoldersOf are the files among files that hold a top-level column named
// name (as DuckDB binds names) that was left out when they were registered
// (DataFile.IgnoredColumns) and has not been mapped into a column since:
// those an `add column name` reads the values of. A file whose column was
// mapped into a column since dropped holds that column, so a column added
// again under the name reads as its default there, as it does in files that
// held the dropped column from the start.
func (m *ColumnMapping) HoldersOf(files []DataFile, name string) []DataFile {
	var out []DataFile
	for _, f := range files {
		held := false
		for _, n := range f.IgnoredColumns {
			held = held || types.SameIdent(n, name)
		}
		if !held {
			continue
		}
		for _, srcs := range m.mapped {
			if src, ok := srcs[f.ID]; ok && types.SameIdent(src.Name, name) {
				held = false
			}
		}
		if held {
			out = append(out, f)
		}
	}
	return out
}

// Held is cols (a snapshot's columns, nested ones included) as file f
// holds them: each top-level column under the name f holds it by, in the
// snapshot's type, and without the columns f predates (with their nested
// fields). Partition columns, which no file holds, stay as they are.
func (m *ColumnMapping) Held(f DataFile, cols []Column) []Column {
	if !m.evolved {
		return cols
	}
	rename := map[string]string{} // the snapshot's top-level name → the file's
	gone := map[string]bool{}
	out := make([]Column, 0, len(cols))
	for _, c := range cols {
		if len(c.Path) == 0 {
			out = append(out, c)
			continue
		}
		top := c.Path[0]
		if !c.Parent.Known && c.Partition == "" {
			name, _, held := m.Source(c, f)
			if !held {
				gone[top] = true
				continue
			}
			rename[top] = name
		} else if gone[top] {
			continue
		}
		if n, ok := rename[top]; ok {
			c.Path = append([]string{n}, c.Path[1:]...)
			if !c.Parent.Known {
				c.Name = n
			}
		}
		out = append(out, c)
	}
	return out
}

// LayoutFieldTexts spells each of a file's layout values' fields as
// FieldText does, under the name cols (a snapshot's columns) give the
// column now: a rename shows, and a column widened since is found through
// the columns it replaced. A column dropped since is named by its id
// ("#7").
func (m *ColumnMapping) LayoutFieldTexts(vs []LayoutValue, cols []Column) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		name := fmt.Sprintf("#%d", v.ColumnID)
	find:
		for _, c := range TopLevel(cols) {
			for id, n := c.ID, 0; n <= len(m.byID); n++ {
				if id == v.ColumnID {
					name = fieldName(c.Name)
					break find
				}
				vs := m.byID[id]
				if len(vs) == 0 || !vs[0].WidenedFrom.Known {
					break
				}
				id = vs[0].WidenedFrom.V
			}
		}
		out[i] = fieldText(PartitionField{ColumnID: v.ColumnID, Transform: v.Transform}, name)
	}
	return out
}
