package catalog

import (
	"slices"
	"sync"
)

// Table and column definitions change only in a DDL commit (create, drop,
// rename), which advances schema_version: every snapshot with the same
// schema_version sees the same tables and columns. Their rows' end
// snapshots, though, are set in place by a later drop or rename, so only
// readers opened at the newest snapshot share them: at the head no
// visible row has an end yet. They are cached under schema_version, so
// that a warm plan reads no definitions (on a networked store, two round
// trips fewer). Expiry deletes only rows no kept snapshot sees.
type defCache struct {
	mu     sync.Mutex
	tables map[int64][]Table     // schema_version → visible tables, by name
	cols   map[[2]int64][]Column // (schema_version, table) → columns
	maps   map[[2]int64]*ColumnMapping
	order  []int64 // cached schema versions, oldest first
}

const defCacheVersions = 16

func (d *defCache) getTables(v int64) ([]Table, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t, ok := d.tables[v]
	return slices.Clone(t), ok
}

func (d *defCache) getColumns(v, table int64) ([]Column, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c, ok := d.cols[[2]int64{v, table}]
	return slices.Clone(c), ok
}

// touch makes room for version v; the caller holds mu.
func (d *defCache) touch(v int64) {
	if d.tables == nil {
		d.tables, d.cols, d.maps = map[int64][]Table{}, map[[2]int64][]Column{}, map[[2]int64]*ColumnMapping{}
	}
	if slices.Contains(d.order, v) {
		return
	}
	if len(d.order) >= defCacheVersions {
		old := d.order[0]
		d.order = d.order[1:]
		delete(d.tables, old)
		for k := range d.cols {
			if k[0] == old {
				delete(d.cols, k)
			}
		}
		for k := range d.maps {
			if k[0] == old {
				delete(d.maps, k)
			}
		}
	}
	d.order = append(d.order, v)
}

func (d *defCache) putTables(v int64, t []Table) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.touch(v)
	d.tables[v] = slices.Clone(t)
}

func (d *defCache) putColumns(v, table int64, c []Column) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.touch(v)
	d.cols[[2]int64{v, table}] = slices.Clone(c)
}

// A table's column mapping (every version of every column) is cached
// alike: a change to it is an alteration, which advances schema_version.
func (d *defCache) getMapping(v, table int64) (*ColumnMapping, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	m, ok := d.maps[[2]int64{v, table}]
	return m, ok
}

func (d *defCache) putMapping(v, table int64, m *ColumnMapping) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.touch(v)
	d.maps[[2]int64{v, table}] = m
}
