package ducklake

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/google/uuid"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/storage"
	"github.com/rocklake/rocklake/types"
)

// ExportOptions tune Export. The zero value exports every kept snapshot
// and references the data files where they are.
type ExportOptions struct {
	// FromSnapshot leaves out the snapshots before it, as if DuckLake had
	// expired them; rows that ended before it are left out too.
	FromSnapshot int64
	// CopyFiles copies every exported data file under DataPath and
	// records it relative to its table's directory, so the export can
	// move as a whole; otherwise files keep their absolute paths.
	CopyFiles bool
	// DataPath is the catalog's data_path, where DuckLake writes new
	// files (and CopyFiles puts the copies). Default: DEST + ".files/",
	// the extension's own default.
	DataPath string
	// Objects reads the footers of delete files that are s3:// objects;
	// nil makes an S3 store from the environment when one is needed.
	Objects storage.Store
}

// ExportResult says what an export wrote and what it left behind.
type ExportResult struct {
	Destination string
	DataPath    string
	Snapshots   int
	Tables      int
	Files       int
	CopiedFiles int
	// LeftBehind lists what DuckLake 1.0 cannot express, one line each.
	LeftBehind []string
}

// ErrExists reports an export onto an existing file.
var ErrExists = errors.New("already exists")

// Export writes the catalog as a DuckLake 1.0 catalog in a new DuckDB
// database file at dest. It writes to a temporary file beside dest and
// renames it at the end, so a failed export leaves nothing at dest.
func Export(ctx context.Context, c *catalog.Catalog, dest string, opts ExportOptions) (ExportResult, error) {
	res := ExportResult{Destination: dest}
	if _, err := os.Lstat(dest); err == nil {
		return res, fmt.Errorf("export to %s: %w (choose a new file)", dest, ErrExists)
	}
	absDest, err := filepath.Abs(dest)
	if err != nil {
		return res, err
	}
	dataPath := opts.DataPath
	if dataPath == "" {
		dataPath = absDest + ".files/"
	} else if dataPath, err = filepath.Abs(dataPath); err != nil {
		return res, err
	}
	if !strings.HasSuffix(dataPath, "/") {
		dataPath += "/"
	}
	res.DataPath = dataPath

	m, err := collect(c, opts.FromSnapshot)
	if err != nil {
		return res, err
	}
	res.LeftBehind = m.leftBehind
	if err := ctx.Err(); err != nil {
		return res, err
	}

	tmp := fmt.Sprintf("%s.tmp-%d", absDest, os.Getpid())
	os.Remove(tmp)
	var copied []string
	_, statErr := os.Stat(dataPath)
	madeDataPath := opts.CopyFiles && errors.Is(statErr, fs.ErrNotExist)
	ok := false
	defer func() {
		if !ok {
			os.Remove(tmp)
			os.Remove(tmp + ".wal")
			for _, p := range copied {
				os.Remove(p)
			}
			if madeDataPath {
				// Only the directories the copies needed: it did not exist.
				os.RemoveAll(dataPath)
			}
		}
	}()
	db, err := engine.Open(tmp)
	if err != nil {
		return res, err
	}
	w := &writer{db: db, ctx: ctx}
	if err := w.begin(); err != nil {
		db.Close()
		return res, err
	}
	objects := lazyStore(ctx, opts.Objects)
	m.deleteFooter = func(path string, d catalog.DeleteFile) (int64, error) {
		if !catalog.IsObject(path) {
			return footerSize(path)
		}
		store, err := objects()
		if err != nil {
			return 0, err
		}
		// The object as the delete recorded it (size, ETag): one changed
		// since is refused, not exported with another's footer.
		obj := storage.Object{Location: path, Size: d.FileSizeBytes, ETag: d.ETag}
		if obj.Size < 12 {
			return 0, fmt.Errorf("%d bytes: not a Parquet file", obj.Size)
		}
		tail, err := store.ReadRange(ctx, obj, obj.Size-8, 8)
		if err != nil {
			return 0, err
		}
		return footerLength(tail)
	}
	err = m.write(w, dataPath, opts.CopyFiles, &copied)
	if err == nil {
		err = w.commit()
	} else {
		w.rollback()
	}
	if err == nil {
		_, err = db.ExecContext(ctx, "CHECKPOINT")
	}
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return res, fmt.Errorf("export to %s: %w", dest, err)
	}
	if err := os.Rename(tmp, absDest); err != nil {
		return res, err
	}
	ok = true
	res.Snapshots, res.Tables, res.Files, res.CopiedFiles = len(m.snaps), len(m.tableIDs), m.fileCount, len(copied)
	return res, nil
}

// model is the part of a rocklake catalog an export writes, read at the
// snapshots that show it.
type model struct {
	// deleteFooter is a delete file's footer length, read from the file
	// or, for an object, from the store.
	deleteFooter func(path string, d catalog.DeleteFile) (int64, error)

	snaps      []catalog.Snapshot
	versions   []catalog.Table // every table row, by id then begin
	tableIDs   []int64
	cols       map[int64][]catalog.Column
	tableEnd   map[int64]stats.Maybe[int64] // end of a table's last version
	files      map[int64][]catalog.DataFile
	deletes    map[int64][]catalog.DeleteFile              // delete file versions some exported snapshot applies
	fileStats  map[int64]map[int64]map[int64]*stats.Column // table, file, column
	variants   map[int64]map[int64]map[int64][]catalog.VariantStats
	tableStats map[int64]*catalog.TableStats
	fileCount  int
	leftBehind []string
}

// expressible reports why a column type cannot be a DuckLake 1.0 column,
// or "" when it can.
func expressible(t types.Type) string {
	switch t.Kind {
	case types.KindArray:
		return "fixed-size ARRAY (DuckLake has lists only)"
	case types.KindEnum:
		return "ENUM"
	case types.KindUnknown:
		return "type " + t.DuckLakeName() + " unknown to DuckLake"
	case types.KindList:
		if t.Elem != nil {
			return expressible(*t.Elem)
		}
	case types.KindStruct:
		for _, f := range t.Fields {
			if why := expressible(f.Type); why != "" {
				return why
			}
		}
	case types.KindMap:
		if t.Key != nil {
			if why := expressible(*t.Key); why != "" {
				return why
			}
		}
		if t.Value != nil {
			return expressible(*t.Value)
		}
	}
	return ""
}

func collect(c *catalog.Catalog, from int64) (*model, error) {
	all, err := c.Snapshots()
	if err != nil {
		return nil, err
	}
	m := &model{cols: map[int64][]catalog.Column{}, tableEnd: map[int64]stats.Maybe[int64]{},
		files: map[int64][]catalog.DataFile{}, deletes: map[int64][]catalog.DeleteFile{}, fileStats: map[int64]map[int64]map[int64]*stats.Column{},
		variants: map[int64]map[int64]map[int64][]catalog.VariantStats{}, tableStats: map[int64]*catalog.TableStats{}}
	for _, s := range all {
		if s.ID >= from {
			m.snaps = append(m.snaps, s)
		}
	}
	if len(m.snaps) == 0 || (from > 0 && m.snaps[0].ID != from) {
		return nil, fmt.Errorf("%w %d (kept snapshots: %d to %d)", catalog.ErrNoSuchSnapshot, from, all[0].ID, all[len(all)-1].ID)
	}
	seen := map[[2]int64]bool{}
	skipped := map[int64]bool{}
	for _, s := range m.snaps {
		r, err := c.Read(s.ID)
		if err != nil {
			return nil, err
		}
		tables, err := r.Tables()
		if err != nil {
			r.Close()
			return nil, err
		}
		for _, t := range tables {
			if skipped[t.ID] {
				continue
			}
			if _, ok := m.cols[t.ID]; !ok {
				cols, err := r.Columns(t.ID)
				if err != nil {
					r.Close()
					return nil, err
				}
				cm, err := r.ColumnMapping(t.ID)
				if err != nil {
					r.Close()
					return nil, err
				}
				why := ""
				if cm.Evolved() {
					// One name mapping per table is written: files that hold
					// the columns under other names or types need their own.
					why = fmt.Sprintf("table %q (id %d) left out: its columns were altered (added, renamed, dropped or widened), and the export writes one name mapping per table", t.Name, t.ID)
				}
				for _, col := range cols {
					if why != "" {
						break
					}
					if col.Partition != "" {
						// DuckLake reads a column from the files; these
						// values live in the paths, so DuckLake would read
						// NULL. Mapped to DuckLake's partition values later.
						why = fmt.Sprintf("table %q (id %d) left out: column %q is a partition column whose values are in the files' paths, not in the files", t.Name, t.ID, col.Name)
						break
					}
					if why = expressible(col.Type); why != "" {
						why = fmt.Sprintf("table %q (id %d) left out: column %q is %s", t.Name, t.ID, strings.Join(col.Path, "."), why)
						break
					}
				}
				if why != "" {
					skipped[t.ID] = true
					m.leftBehind = append(m.leftBehind, why)
					continue
				}
				m.cols[t.ID] = cols
				m.tableIDs = append(m.tableIDs, t.ID)
			}
			k := [2]int64{t.ID, t.Begin}
			if !seen[k] {
				seen[k] = true
				m.versions = append(m.versions, t)
			}
		}
		r.Close()
	}
	sort.Slice(m.versions, func(i, j int) bool {
		a, b := m.versions[i], m.versions[j]
		return a.ID < b.ID || (a.ID == b.ID && a.Begin < b.Begin)
	})
	for _, v := range m.versions {
		m.tableEnd[v.ID] = v.End
	}
	sort.Slice(m.tableIDs, func(i, j int) bool { return m.tableIDs[i] < m.tableIDs[j] })

	first, head := m.snaps[0].ID, m.snaps[len(m.snaps)-1].ID
	hr, err := c.Read(head)
	if err != nil {
		return nil, err
	}
	defer hr.Close()
	// A retired file's stats are read where it was live: the readers'
	// per-file stats scans show live files only.
	byReadAt := map[int64]map[int64][]int64{} // snapshot -> table -> file ids
	for _, tid := range m.tableIDs {
		files, err := hr.FilesEver(tid)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			if f.End.Known && f.End.V <= first {
				continue
			}
			m.files[tid] = append(m.files[tid], f)
			m.fileCount++
			at := max(f.Begin, first)
			if byReadAt[at] == nil {
				byReadAt[at] = map[int64][]int64{}
			}
			byReadAt[at][tid] = append(byReadAt[at][tid], f.ID)
		}
		dels, err := hr.DeleteFileVersions(tid)
		if err != nil {
			return nil, err
		}
		for _, d := range dels {
			if !(d.End.Known && d.End.V <= first) {
				m.deletes[tid] = append(m.deletes[tid], d)
			}
		}
		m.fileStats[tid] = map[int64]map[int64]*stats.Column{}
		m.variants[tid] = map[int64]map[int64][]catalog.VariantStats{}
		if !m.tableEnd[tid].Known {
			ts, err := hr.TableStats(tid)
			if err != nil {
				return nil, err
			}
			m.tableStats[tid] = ts
		}
	}
	m.noteLeftBehind(hr)
	for at, perTable := range byReadAt {
		r, err := c.Read(at)
		if err != nil {
			return nil, err
		}
		for tid, ids := range perTable {
			want := map[int64]bool{}
			for _, id := range ids {
				want[id] = true
				m.fileStats[tid][id] = map[int64]*stats.Column{}
			}
			for _, col := range m.cols[tid] {
				err := r.FileColumnStats(tid, col.ID, func(fid int64, st *stats.Column) error {
					if want[fid] {
						cp := *st
						m.fileStats[tid][fid][col.ID] = &cp
					}
					return nil
				})
				if err != nil {
					r.Close()
					return nil, err
				}
				if col.Type.Kind != types.KindVariant {
					continue
				}
				for _, id := range ids {
					vs, err := r.FileVariantStats(tid, col.ID, id)
					if err != nil {
						r.Close()
						return nil, err
					}
					if len(vs) > 0 {
						if m.variants[tid][id] == nil {
							m.variants[tid][id] = map[int64][]catalog.VariantStats{}
						}
						m.variants[tid][id][col.ID] = vs
					}
				}
			}
		}
		r.Close()
	}
	return m, nil
}

// writer appends rows to the new database through DuckDB's appender, a
// hundred times faster than one INSERT a row. No transaction: the file is
// a temporary one, renamed into place only once complete.
type writer struct {
	db   *sql.DB
	ctx  context.Context
	conn *sql.Conn
	apps map[string]*duckdb.Appender
}

func (w *writer) begin() error {
	for _, ddl := range metadataDDL {
		if _, err := w.db.ExecContext(w.ctx, ddl); err != nil {
			return fmt.Errorf("%s: %w", ddl, err)
		}
	}
	conn, err := w.db.Conn(w.ctx)
	w.conn, w.apps = conn, map[string]*duckdb.Appender{}
	return err
}

func (w *writer) insert(table string, vals ...any) error {
	app := w.apps[table]
	if app == nil {
		err := w.conn.Raw(func(dc any) error {
			var err error
			app, err = duckdb.NewAppenderFromConn(dc.(driver.Conn), "", table)
			return err
		})
		if err != nil {
			return fmt.Errorf("append to %s: %w", table, err)
		}
		w.apps[table] = app
	}
	row := make([]driver.Value, len(vals))
	for i, v := range vals {
		if n, ok := v.(int); ok {
			v = int64(n)
		}
		row[i] = v
	}
	if err := app.AppendRow(row...); err != nil {
		return fmt.Errorf("append to %s: %w", table, err)
	}
	return nil
}

func (w *writer) commit() error {
	var first error
	for table, app := range w.apps {
		if err := app.Close(); err != nil && first == nil {
			first = fmt.Errorf("append to %s: %w", table, err)
		}
	}
	w.apps = nil
	if err := w.conn.Close(); err != nil && first == nil {
		first = err
	}
	return first
}

func (w *writer) rollback() {
	for _, app := range w.apps {
		app.Close()
	}
	w.conn.Close()
}

func nullInt(m stats.Maybe[int64]) any {
	if !m.Known {
		return nil
	}
	return m.V
}

// valueCount is DuckLake's value_count: every value, NULLs included (the
// extension takes null_count == value_count to mean "only NULLs", and
// would then skip the file for any comparison). rocklake counts non-NULL
// values; without both counts there is no DuckLake value_count.
func valueCount(nonNull, nulls stats.Maybe[int64]) any {
	if !nonNull.Known || !nulls.Known {
		return nil
	}
	return nonNull.V + nulls.V
}

func nullBool(m stats.Maybe[bool]) any {
	if !m.Known {
		return nil
	}
	return m.V
}

func nullStr(s string, ok bool) any {
	if !ok {
		return nil
	}
	return s
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// quoteName quotes a name as DuckDB's KeywordHelper::WriteQuoted does in
// ducklake_snapshot_changes.
func quoteName(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func (m *model) changes(s catalog.Snapshot) string {
	var parts []string
	if s.ID == 0 {
		parts = append(parts, `created_schema:"main"`)
	}
	exported := map[int64]bool{}
	for _, id := range m.tableIDs {
		exported[id] = true
	}
	ids := func(kind string, list []int64) {
		for _, id := range list {
			if exported[id] {
				parts = append(parts, kind+":"+strconv.FormatInt(id, 10))
			}
		}
	}
	ids("dropped_table", s.Changes.DroppedTables)
	for _, id := range s.Changes.CreatedTables {
		for _, v := range m.versions {
			if v.ID == id && v.Begin == s.ID {
				parts = append(parts, "created_table:"+quoteName("main")+"."+quoteName(v.Name))
			}
		}
	}
	ids("inserted_into_table", s.Changes.InsertedIntoTables)
	ids("deleted_from_table", s.Changes.DeletedFromTables)
	ids("altered_table", s.Changes.RenamedTables)
	return strings.Join(parts, ",")
}

func (m *model) write(w *writer, dataPath string, copyFiles bool, copied *[]string) error {
	meta := [][2]string{{"version", Version}, {"created_by", "rocklake"}, {"data_path", dataPath}, {"encrypted", "false"}}
	for _, kv := range meta {
		if err := w.insert("ducklake_metadata", kv[0], kv[1], nil, nil); err != nil {
			return err
		}
	}
	for _, s := range m.snaps {
		if err := w.insert("ducklake_snapshot", s.ID, s.Time.UTC(), s.SchemaVersion, s.NextCatalogID, s.NextFileID); err != nil {
			return err
		}
		if err := w.insert("ducklake_snapshot_changes", s.ID, m.changes(s), nil, nil, nil); err != nil {
			return err
		}
	}
	// rocklake has the one schema "main", id 0, made with the catalog.
	if err := w.insert("ducklake_schema", 0, duckdb.UUID(uuid.New()), 0, nil, "main", "main/", true); err != nil {
		return err
	}
	for _, v := range m.versions {
		id, err := uuid.Parse(v.UUID)
		if err != nil {
			return fmt.Errorf("table %q: uuid %q: %w", v.Name, v.UUID, err)
		}
		if err := w.insert("ducklake_table", v.ID, duckdb.UUID(id), v.Begin, nullInt(v.End), v.SchemaID, v.Name, v.Path, v.PathIsRelative); err != nil {
			return err
		}
	}
	// Every snapshot that changed a table's definition starts a schema
	// version for it; DuckLake uses these rows to find inlined data of
	// the right shape.
	for _, s := range m.snaps {
		touched := append(append(append([]int64{}, s.Changes.CreatedTables...), s.Changes.DroppedTables...), s.Changes.RenamedTables...)
		for _, id := range touched {
			if _, ok := m.cols[id]; ok {
				if err := w.insert("ducklake_schema_versions", s.ID, s.SchemaVersion, id); err != nil {
					return err
				}
			}
		}
	}
	for _, tid := range m.tableIDs {
		if err := m.writeTable(w, tid, dataPath, copyFiles, copied); err != nil {
			return err
		}
	}
	return nil
}

func (m *model) writeTable(w *writer, tid int64, dataPath string, copyFiles bool, copied *[]string) error {
	cols := m.cols[tid]
	end := nullInt(m.tableEnd[tid])
	var tablePath string
	begin := int64(-1)
	for _, v := range m.versions {
		if v.ID == tid {
			tablePath = v.Path
			if begin < 0 {
				begin = v.Begin
			}
		}
	}
	byID := map[int64]catalog.Column{}
	for _, c := range cols {
		byID[c.ID] = c
	}
	for _, c := range cols {
		var parent any
		if c.Parent.Known {
			parent = c.Parent.V
		}
		if err := w.insert("ducklake_column", c.ID, c.Begin, end, tid, c.Order, c.Name, columnType(c.Type),
			nil, nil, c.Nullable, parent, "literal", nil); err != nil {
			return err
		}
	}
	files := m.files[tid]
	// One name mapping per table: rocklake matches a file's columns to the
	// table's by name, and files written elsewhere carry no Parquet field
	// ids (or ones that mean something else), so DuckLake must match by
	// name too. Mapping ids come from the file id sequence, as the
	// extension's do, so the first file's id is free and below
	// next_file_id wherever the mapping is used.
	var mappingID any
	if len(files) > 0 {
		id := files[0].ID
		mappingID = id
		if err := w.insert("ducklake_column_mapping", id, tid, "map_by_name"); err != nil {
			return err
		}
		for _, c := range cols {
			source := c.Name
			var parent any
			if c.Parent.Known {
				parent = c.Parent.V
				if p := byID[c.Parent.V]; p.Type.Kind == types.KindList {
					// The extension names every list child "list", whatever
					// the file calls it ("element", "array").
					source = "list"
				}
			}
			if err := w.insert("ducklake_name_mapping", id, c.ID, source, c.ID, parent, false); err != nil {
				return err
			}
		}
	}
	for i, f := range files {
		path, rel := f.Path, f.PathIsRelative
		if rel || !filepath.IsAbs(path) && !catalog.IsObject(path) {
			loc := f.Location(catalog.Table{Path: tablePath})
			abs, err := filepath.Abs(loc)
			if err != nil {
				return err
			}
			path, rel = abs, false
		}
		if copyFiles {
			if catalog.IsObject(path) {
				return fmt.Errorf("--copy: file %s is an object; copy it yourself", path)
			}
			name := fmt.Sprintf("ducklake-%d-%s", f.ID, filepath.Base(path))
			target := filepath.Join(dataPath, "main", tablePath, name)
			if err := copyFile(path, target); err != nil {
				return err
			}
			*copied = append(*copied, target)
			path, rel = name, true
		}
		if err := w.insert("ducklake_data_file", f.ID, tid, f.Begin, nullInt(f.End), int64(i), path, rel, "parquet",
			f.RecordCount, f.FileSizeBytes, f.FooterSize, f.RowIDStart, nil, nil, mappingID, nil); err != nil {
			return err
		}
		fs := m.fileStats[tid][f.ID]
		for _, c := range cols {
			st := fs[c.ID]
			if st == nil {
				continue
			}
			minS, minOK := "", false
			maxS, maxOK := "", false
			if st.Min.Known {
				minS, minOK = formatBound(c.Type, st.Min.V, false)
			}
			if st.Max.Known {
				maxS, maxOK = formatBound(c.Type, st.Max.V, true)
			}
			extra := st.ExtraStats
			if vs := m.variants[tid][f.ID][c.ID]; extra == "" && len(vs) > 0 {
				// The specification keeps a VARIANT column's sub-fields in
				// extra_stats too, beside ducklake_file_variant_stats.
				extra = variantExtra(c, vs)
			}
			if err := w.insert("ducklake_file_column_stats", f.ID, tid, c.ID, st.ColumnSizeBytes, valueCount(st.ValueCount, st.NullCount),
				nullInt(st.NullCount), nullStr(minS, minOK), nullStr(maxS, maxOK), nullBool(st.ContainsNaN), nullIfEmpty(extra)); err != nil {
				return err
			}
		}
		for colID, vs := range m.variants[tid][f.ID] {
			for _, v := range vs {
				if err := m.writeVariant(w, f.ID, tid, colID, v); err != nil {
					return err
				}
			}
		}
	}
	// Delete files (merge-on-read) are DuckLake's own layout: Parquet of
	// (file_path, pos), one current per data file.
	for _, d := range m.deletes[tid] {
		path, rel := d.Location(catalog.Table{Path: tablePath}), false
		footer, err := m.deleteFooter(path, d)
		if err != nil {
			return fmt.Errorf("delete file %s: %w", path, err)
		}
		if copyFiles {
			if catalog.IsObject(path) {
				return fmt.Errorf("--copy: delete file %s is an object; copy it yourself", path)
			}
			name := fmt.Sprintf("ducklake-%d-%s", d.ID, filepath.Base(path))
			target := filepath.Join(dataPath, "main", tablePath, name)
			if err := copyFile(path, target); err != nil {
				return err
			}
			*copied = append(*copied, target)
			path, rel = name, true
		}
		if err := w.insert("ducklake_delete_file", d.ID, tid, d.Begin, nullInt(d.End), d.DataFileID, path, rel, "parquet",
			d.DeleteCount, d.FileSizeBytes, footer, nil, nil); err != nil {
			return err
		}
	}
	if ts := m.tableStats[tid]; ts != nil {
		if err := w.insert("ducklake_table_stats", tid, ts.RecordCount, ts.NextRowID, ts.FileSizeBytes); err != nil {
			return err
		}
		for _, c := range cols {
			cs := ts.Columns[c.ID]
			if cs == nil {
				continue
			}
			minS, minOK := "", false
			maxS, maxOK := "", false
			if cs.Min.Known {
				minS, minOK = formatBound(c.Type, cs.Min.V, false)
			}
			if cs.Max.Known {
				maxS, maxOK = formatBound(c.Type, cs.Max.V, true)
			}
			extra := cs.ExtraStats
			if c.Type.Kind == types.KindVariant && extra == "" && len(cs.Variants) > 0 {
				extra = variantExtra(c, cs.Variants)
			}
			if err := w.insert("ducklake_table_column_stats", tid, c.ID, nullBool(cs.ContainsNull), nullBool(cs.ContainsNaN),
				nullStr(minS, minOK), nullStr(maxS, maxOK), nullIfEmpty(extra)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (m *model) writeVariant(w *writer, fileID, tid, colID int64, v catalog.VariantStats) error {
	minS, minOK, maxS, maxOK := variantBounds(v)
	return w.insert("ducklake_file_variant_stats", fileID, tid, colID, v.Path, v.ShreddedType, v.ColumnSizeBytes,
		v.ValueCount+v.NullCount, v.NullCount, nullStr(minS, minOK), nullStr(maxS, maxOK), nullBool(v.ContainsNaN), nullIfEmpty(v.ExtraStats))
}

// variantBounds formats a sub-field's bounds in its shredded type.
func variantBounds(v catalog.VariantStats) (minS string, minOK bool, maxS string, maxOK bool) {
	t, err := types.ParseType(v.ShreddedType)
	if err != nil {
		return
	}
	if v.Min.Known {
		minS, minOK = formatBound(t, v.Min.V, false)
	}
	if v.Max.Known {
		maxS, maxOK = formatBound(t, v.Max.V, true)
	}
	return
}

// footerSize is a Parquet file's footer length, from its last 8 bytes.
func footerSize(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	var tail [8]byte
	if fi.Size() < 12 {
		return 0, fmt.Errorf("%d bytes: not a Parquet file", fi.Size())
	}
	if _, err := f.ReadAt(tail[:], fi.Size()-8); err != nil {
		return 0, err
	}
	return footerLength(tail[:])
}

// footerLength reads a Parquet file's last 8 bytes: the footer's length
// and the magic.
func footerLength(tail []byte) (int64, error) {
	if len(tail) != 8 || string(tail[4:]) != "PAR1" {
		return 0, fmt.Errorf("no Parquet footer")
	}
	return int64(binary.LittleEndian.Uint32(tail[:4])), nil
}

func copyFile(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	st, err := in.Stat()
	if err != nil {
		return err
	}
	// The copy keeps the source's time, so a catalog importing it back
	// and rocklake's own checks see the file as written.
	return os.Chtimes(dst, time.Now(), st.ModTime())
}

// columnType is a column's ducklake_column.column_type: nested types by
// kind alone (their children are rows of their own), decimals with
// precision and scale.
func columnType(t types.Type) string {
	if t.Kind == types.KindDecimal {
		return fmt.Sprintf("decimal(%d,%d)", t.Precision, t.Scale)
	}
	return t.Kind.String()
}

// variantExtra is the table-wide VARIANT statistics as the specification's
// JSON array in extra_stats: one entry per consistently shredded field.
func variantExtra(c catalog.Column, vs []catalog.VariantStats) string {
	type entry struct {
		FieldName       string  `json:"field_name"`
		ShreddedType    string  `json:"shredded_type"`
		NullCount       int64   `json:"null_count"`
		Min             *string `json:"min"`
		Max             *string `json:"max"`
		NumValues       int64   `json:"num_values"`
		ColumnSizeBytes int64   `json:"column_size_bytes"`
		AnyValid        bool    `json:"any_valid"`
	}
	out := make([]entry, 0, len(vs))
	for _, v := range vs {
		e := entry{FieldName: v.Path, ShreddedType: v.ShreddedType, NullCount: v.NullCount, NumValues: v.ValueCount + v.NullCount,
			ColumnSizeBytes: v.ColumnSizeBytes, AnyValid: v.ValueCount > 0}
		minS, minOK, maxS, maxOK := variantBounds(v)
		if minOK {
			e.Min = &minS
		}
		if maxOK {
			e.Max = &maxS
		}
		out = append(out, e)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return ""
	}
	return string(b)
}

// noteLeftBehind lists, per table, what the export cannot write: DuckLake
// keeps no membership filters and no min/max for some types. Row-group
// statistics, page-index and bloom locations and exactness flags never
// cross (an import reads them again from the footers), so they are named
// once.
func (m *model) noteLeftBehind(r *catalog.Reader) {
	m.leftBehind = append(m.leftBehind, "row-group statistics, page-index and bloom-filter locations and the exactness of bounds (DuckLake keeps per-file bounds only; an import reads them again from the footers)")
	for _, tid := range m.tableIDs {
		name := ""
		for _, v := range m.versions {
			if v.ID == tid {
				name = v.Name
			}
		}
		var filters, bounds []string
		for _, c := range m.cols[tid] {
			if has, err := r.HasFilters(tid, c.ID); err == nil && has {
				filters = append(filters, strings.Join(c.Path, "."))
			}
			if noMinMax(c.Type) && !c.Type.Kind.IsNested() {
				bounds = append(bounds, strings.Join(c.Path, ".")+" ("+c.Type.Kind.String()+")")
			}
		}
		if len(filters) > 0 {
			m.leftBehind = append(m.leftBehind, fmt.Sprintf("membership filters of table %q on %s (DuckLake has none; an import builds them again)", name, strings.Join(filters, ", ")))
		}
		if len(bounds) > 0 {
			m.leftBehind = append(m.leftBehind, fmt.Sprintf("min/max of table %q columns %s (DuckLake keeps none for these types)", name, strings.Join(bounds, ", ")))
		}
	}
}
