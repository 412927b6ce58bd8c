package iceberg

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"

	ig "github.com/apache/iceberg-go"
	"github.com/google/uuid"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/prune"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

// ErrNotShown is a table rocklake cannot show as an Iceberg table.
var ErrNotShown = errors.New("not readable as an Iceberg table")

// Table is one rocklake table at one snapshot, as an Iceberg table.
type Table struct {
	Name     string
	Table    catalog.Table
	Snapshot int64 // the rocklake snapshot read
	Schema   *Schema
	Files    []prune.KeptFile
	// Content is a hash of everything a reader of the table sees at the
	// snapshot (schema, mapping, files and their delete files): two
	// snapshots with the same content share one materialized metadata.
	Content string
	deletes map[int64]catalog.DeleteFile
	// begins are the live data files' first snapshots, by file id: their
	// sequence numbers in the manifests.
	begins map[int64]int64
	// held are the top-level column names live files hold, each with
	// the ids of the table's columns held under it (0: a column that is
	// not the table's now).
	held    map[string][]int64
	columns []catalog.Column
	// part is the partition spec the declared layout shows as (nil:
	// none), and partOf each data file's partition values under it, for
	// the files proven to lie in one partition (see partition.go).
	part   *partitioning
	partOf map[int64]map[int]any
}

// Load reads a table at the reader's snapshot.
func Load(r *catalog.Reader, name string) (*Table, error) {
	t, err := r.Table(name)
	if err != nil {
		return nil, err
	}
	cols, err := r.Columns(t.ID)
	if err != nil {
		return nil, err
	}
	all, err := prune.PlanTable(r, t.Name, "true", prune.Options{FilesOnly: true})
	if err != nil {
		return nil, err
	}
	dels, err := r.DeleteFiles(t.ID)
	if err != nil {
		return nil, err
	}
	live, err := liveFiles(r, t.ID)
	if err != nil {
		return nil, err
	}
	// The names files hold columns under, for the name mapping; and the
	// columns some file holds in a type Iceberg cannot promote to the
	// table's.
	fileNames := map[int64][]string{}
	byName := map[string]int64{}
	for _, c := range cols {
		if !c.Parent.Known {
			byName[c.Name] = c.ID
		}
	}
	badType := map[int64]string{}
	for _, f := range all.KeptFiles {
		for _, src := range f.Columns {
			id, ok := byName[src.Column]
			if !ok || src.FileColumn == "" {
				continue
			}
			if !contains(fileNames[id], src.FileColumn) {
				fileNames[id] = append(fileNames[id], src.FileColumn)
			}
			ft, err := types.ParseType(src.FileType)
			if err != nil {
				badType[id] = unpromoted(src.FileType)
				continue
			}
			for _, c := range cols {
				if c.ID == id && !promotes(ft, c.Type) {
					badType[id] = unpromoted(src.FileType)
				}
			}
		}
	}
	held, err := heldNames(r, t.ID, cols, live, dels)
	if err != nil {
		return nil, err
	}
	// An Iceberg reader finds a field in a file by name alone: a column
	// is shown only if every file holding a column under one of its names
	// holds this one (not a column dropped since whose name it took, nor
	// one a file brought that the table never took in).
	for _, c := range cols {
		if c.Parent.Known {
			continue
		}
		for _, n := range append([]string{c.Name}, fileNames[c.ID]...) {
			if slices.ContainsFunc(held[n], func(id int64) bool { return id != c.ID }) {
				badType[c.ID] = fmt.Sprintf("some files hold another column under the name %q (one dropped since, or one the table never took in), which an Iceberg reader, finding columns by name, would read as this one", n)
				break
			}
		}
	}
	s, err := TableSchema(cols, int(t.SchemaID), fileNames)
	if err != nil && len(badType) == 0 {
		return nil, fmt.Errorf("%w: table %s: %v", ErrNotShown, t.Name, err)
	}
	if len(badType) > 0 {
		// Drop the columns again: a reader would misread them.
		var keep []catalog.Column
		var dropped []LeftColumn
		for _, c := range cols {
			if why, bad := badType[c.ID]; bad {
				dropped = append(dropped, LeftColumn{Name: c.Name, Type: types.DisplayName(c.Type), Reason: why})
				continue
			}
			if c.Parent.Known {
				if _, bad := badType[c.Parent.V]; bad {
					continue
				}
			}
			keep = append(keep, c)
		}
		if s, err = TableSchema(keep, int(t.SchemaID), fileNames); err != nil {
			return nil, fmt.Errorf("%w: table %s: %v", ErrNotShown, t.Name, err)
		}
		s.Left = append(dropped, s.Left...)
	}
	begins := make(map[int64]int64, len(live))
	for _, f := range live {
		begins[f.ID] = f.Begin
	}
	tb := &Table{Name: t.Name, Table: t, Snapshot: r.Snapshot().ID, held: held, Schema: s, Files: all.KeptFiles, deletes: dels, begins: begins, columns: cols}
	tb.part = partitioningOf(t, cols, s)
	tb.Content = tb.contentHash()
	return tb, nil
}

// liveFiles are a table's live files at the reader's snapshot, from the
// catalog's cached file set (planning's): a plan request reads them
// decoded once, not again per request.
func liveFiles(r *catalog.Reader, tableID int64) ([]catalog.DataFile, error) {
	fs, err := r.FileSet(tableID)
	if err != nil {
		return nil, err
	}
	out := make([]catalog.DataFile, fs.Len())
	for i := range out {
		if out[i], err = r.FileAt(fs, i); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func unpromoted(fileType string) string {
	return "some files hold it as " + fileType + ", which Iceberg does not promote to the table's type"
}

// heldNames are the top-level column names the live files hold, each with
// the ids of the table's columns (cols) held under it, 0 for a column that
// is not one of them: dropped since, or never taken in (DataFile.
// IgnoredColumns). A file whose delete file deletes every row gives a
// reader no value, and counts for nothing. Names are Iceberg's, compared
// exactly.
func heldNames(r *catalog.Reader, tableID int64, cols []catalog.Column, files []catalog.DataFile, dels map[int64]catalog.DeleteFile) (map[string][]int64, error) {
	m, err := r.ColumnMapping(tableID)
	if err != nil {
		return nil, err
	}
	held := map[string][]int64{}
	add := func(n string, id int64) {
		if !slices.Contains(held[n], id) {
			held[n] = append(held[n], id)
		}
	}
	var top []catalog.Column
	for _, c := range cols {
		if !c.Parent.Known && c.Partition == "" {
			top = append(top, c)
		}
	}
	if !m.Evolved() {
		// Every file holds every column under its name: only the
		// columns files brought that the table never took in remain.
		claimed := map[string]bool{}
		for _, c := range top {
			add(c.Name, c.ID)
			claimed[c.Name] = true
		}
		for _, f := range files {
			if d, ok := dels[f.ID]; ok && d.DeleteCount >= f.RecordCount {
				continue
			}
			for _, n := range f.IgnoredColumns {
				if !claimed[n] {
					add(n, 0)
				}
			}
		}
		return held, nil
	}
	for _, f := range files {
		if d, ok := dels[f.ID]; ok && d.DeleteCount >= f.RecordCount {
			continue
		}
		claimed := map[string]bool{}
		for _, c := range top {
			n, _, ok := m.Source(c, f)
			if !ok {
				continue
			}
			add(n, c.ID)
			claimed[n] = true
		}
		for _, v := range m.Names(f) {
			if !claimed[v.Name] {
				add(v.Name, 0)
			}
		}
		for _, n := range f.IgnoredColumns {
			if !claimed[n] {
				add(n, 0)
			}
		}
	}
	return held, nil
}

// promotes says whether Iceberg reads a file's type as the table's: the
// same Iceberg type, or one of Iceberg's promotions (int to long, float to
// double, a wider decimal of the same scale).
func promotes(file, tbl types.Type) bool {
	a, _ := primitive(file)
	b, _ := primitive(tbl)
	if a == nil || b == nil {
		return file.Equal(tbl)
	}
	if a.Equals(b) {
		return file.Kind == tbl.Kind || (file.Kind != types.KindTimestampS && file.Kind != types.KindTimestampMS && tbl.Kind != types.KindTimestampS && tbl.Kind != types.KindTimestampMS)
	}
	switch {
	case a.Equals(ig.PrimitiveTypes.Int32) && b.Equals(ig.PrimitiveTypes.Int64):
		return true
	case a.Equals(ig.PrimitiveTypes.Float32) && b.Equals(ig.PrimitiveTypes.Float64):
		return true
	}
	da, okA := a.(ig.DecimalType)
	db, okB := b.(ig.DecimalType)
	return okA && okB && da.Scale() == db.Scale() && da.Precision() <= db.Precision()
}

func (t *Table) contentHash() string {
	h := sha256.New()
	schema, _ := json.Marshal(t.Schema.Iceberg)
	mapping, _ := json.Marshal(t.Schema.Mapping)
	left, _ := json.Marshal(t.Schema.Left)
	fmt.Fprintf(h, "rocklake-iceberg-1\x00%d\x00%s\x00%s\x00%s\x00%s\x00", t.Table.ID, t.Table.UUID, schema, mapping, left)
	if t.part != nil {
		fmt.Fprintf(h, "spec\x00%s\x00", t.part.specJSON())
	}
	var buf [16]byte
	for _, f := range t.Files {
		binary.BigEndian.PutUint64(buf[:8], uint64(f.FileID))
		var del int64 = -1
		if d, ok := t.deletes[f.FileID]; ok {
			del = d.ID
		}
		binary.BigEndian.PutUint64(buf[8:], uint64(del))
		h.Write(buf[:])
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// Properties are the table properties rocklake sets.
const (
	PropNameMapping = "schema.name-mapping.default"
	PropLeft        = "rocklake.columns-not-shown"
	PropTable       = "rocklake.table"
	// PropSnapshot is the rocklake snapshot that made the table's current
	// content: the current Iceberg snapshot's id.
	PropSnapshot = "rocklake.snapshot-id"
)

// dataFiles are the manifest's entries: each live data file with its
// counts and bounds in Iceberg's single-value serialization, and, for the
// files proven to lie in one partition of the table's spec, its values
// (t.partOf).
func (t *Table) dataFiles(r *catalog.Reader) ([]ig.DataFile, error) {
	type fileStats struct {
		values, nulls map[int]int64
		lower, upper  map[int][]byte
		sizes         map[int]int64
		// part are the file's partition values found so far, by field id.
		part map[int]any
	}
	byFile := make(map[int64]*fileStats, len(t.Files))
	for _, f := range t.Files {
		byFile[f.FileID] = &fileStats{values: map[int]int64{}, nulls: map[int]int64{}, lower: map[int][]byte{}, upper: map[int][]byte{}, sizes: map[int]int64{}, part: map[int]any{}}
	}
	var fields map[int64][]partField
	if t.part != nil {
		fields = map[int64][]partField{}
		for _, pf := range t.part.fields {
			fields[pf.column.ID] = append(fields[pf.column.ID], pf)
		}
	}
	// Files that hold a column under another name or type get no bounds
	// for it: their statistics are in the file's type.
	remapped := map[int64]map[string]bool{}
	for _, f := range t.Files {
		for _, src := range f.Columns {
			if remapped[f.FileID] == nil {
				remapped[f.FileID] = map[string]bool{}
			}
			remapped[f.FileID][src.Column] = true
		}
	}
	for _, c := range t.columns {
		if c.Parent.Known {
			continue // bounds of top-level columns only
		}
		typ, shown := t.Schema.types[int(c.ID)]
		if !shown {
			continue
		}
		prim, ok := typ.(ig.PrimitiveType)
		if !ok {
			continue
		}
		codec, _ := types.CodecFor(c.Type)
		err := r.FileColumnStats(t.Table.ID, c.ID, func(fileID int64, st *stats.Column) error {
			fs := byFile[fileID]
			if fs == nil || remapped[fileID][c.Name] {
				return nil
			}
			id := int(c.ID)
			if st.ColumnSizeBytes > 0 {
				fs.sizes[id] = st.ColumnSizeBytes
			}
			if st.NullCount.Known {
				fs.nulls[id] = st.NullCount.V
				if st.ValueCount.Known {
					fs.values[id] = st.ValueCount.V + st.NullCount.V // Iceberg counts NULLs as values
				}
			}
			if codec == nil || !codec.Ordered() {
				return nil
			}
			if st.Min.Known {
				if b, ok := bound(codec, c.Type, prim, st.Min.V, true); ok {
					fs.lower[id] = b
				}
			}
			if st.Max.Known {
				if b, ok := bound(codec, c.Type, prim, st.Max.V, false); ok {
					fs.upper[id] = b
				}
			}
			if pfs := fields[c.ID]; len(pfs) > 0 && st.NullCount.Known && st.NullCount.V == 0 && st.Min.Known && st.Max.Known {
				lo, okLo := icebergLiteral(codec, c.Type, st.Min.V, true)
				hi, okHi := icebergLiteral(codec, c.Type, st.Max.V, false)
				for _, pf := range pfs {
					if v, ok := pf.value(lo, hi); okLo && okHi && ok {
						fs.part[pf.fieldID] = v
					}
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	out := make([]ig.DataFile, 0, len(t.Files))
	t.partOf = map[int64]map[int]any{}
	for _, f := range t.Files {
		fs := byFile[f.FileID]
		spec, part := *ig.UnpartitionedSpec, map[int]any(nil)
		if t.part != nil && len(fs.part) == len(t.part.fields) {
			spec, part = t.part.spec, fs.part
			t.partOf[f.FileID] = part
		}
		b, err := ig.NewDataFileBuilder(spec, ig.EntryContentData, f.Path, ig.ParquetFile, part, nil, nil, f.Rows, f.Bytes)
		if err != nil {
			return nil, fmt.Errorf("data file %s: %w", f.Path, err)
		}
		b.ValueCounts(fs.values).NullValueCounts(fs.nulls).LowerBoundValues(fs.lower).UpperBoundValues(fs.upper).ColumnSizes(fs.sizes)
		out = append(out, b.Build())
	}
	return out, nil
}

// DeleteFile is a live data file's current delete file, as Iceberg's
// position delete file: rocklake writes DuckLake's (file_path, pos) rows,
// file_path being the data file's path as the manifest gives it, which is
// what an Iceberg reader matches by name.
func (t *Table) DeleteFile(fileID int64) (ig.DataFile, bool) {
	return t.deleteFile(fileID, *ig.UnpartitionedSpec, nil)
}

// deleteFile is DeleteFile in a partition spec: its data file's, so that
// a reader that matches delete files to data files by partition (Java's)
// finds it.
func (t *Table) deleteFile(fileID int64, spec ig.PartitionSpec, part map[int]any) (ig.DataFile, bool) {
	d, ok := t.deletes[fileID]
	if !ok {
		return nil, false
	}
	var path string
	for _, f := range t.Files {
		if f.FileID == fileID {
			path = f.Path
		}
	}
	b, err := ig.NewDataFileBuilder(spec, ig.EntryContentPosDeletes, d.Location(t.Table), ig.ParquetFile, part, nil, nil, d.DeleteCount, d.FileSizeBytes)
	if err != nil {
		return nil, false
	}
	if path != "" {
		b.ReferencedDataFile(path)
	}
	return b.Build(), true
}

// deleteFile is a delete file's manifest entry and the snapshot that
// wrote it.
type deleteFile struct {
	file  ig.DataFile
	begin int64
}

// deleteFiles are the delete files' entries, each in its data file's
// partition (t.partOf: call dataFiles first).
func (t *Table) deleteFiles() []deleteFile {
	var out []deleteFile
	for _, f := range t.Files {
		spec, part := *ig.UnpartitionedSpec, t.partOf[f.FileID]
		if part != nil {
			spec = t.part.spec
		}
		if d, ok := t.deleteFile(f.FileID, spec, part); ok {
			out = append(out, deleteFile{d, t.deletes[f.FileID].Begin})
		}
	}
	return out
}

type countingWriter struct {
	w interface{ Write([]byte) (int, error) }
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

// bound converts one rocklake bound to Iceberg's single-value
// serialization, or ok false when it has none: an infinite date or
// timestamp, a value outside the Iceberg type. A float zero lower bound
// is written as -0.0 and an upper as +0.0: rocklake stores both zeros as
// +0.0 (DuckDB holds them equal), Java's Iceberg orders -0.0 first.
func bound(codec *types.Codec, t types.Type, typ ig.PrimitiveType, enc []byte, lower bool) ([]byte, bool) {
	if t.Kind == types.KindDecimal {
		v, err := codec.Decode(enc)
		if err != nil {
			return nil, false
		}
		return decimalBytes(v, t)
	}
	lit, ok := icebergLiteral(codec, t, enc, lower)
	if !ok {
		return nil, false
	}
	b, err := lit.MarshalBinary()
	if err != nil {
		return nil, false
	}
	return b, true
}

// icebergLiteral is one rocklake value as an Iceberg literal of the type the
// column is shown in, or ok false (see bound); decimals have none here.
func icebergLiteral(codec *types.Codec, t types.Type, enc []byte, lower bool) (ig.Literal, bool) {
	v, err := codec.Decode(enc)
	if err != nil {
		return nil, false
	}
	var lit ig.Literal
	switch t.Kind {
	case types.KindBoolean:
		lit = ig.BoolLiteral(v.I.Lo != 0)
	case types.KindTinyInt, types.KindSmallInt, types.KindInteger:
		lit = ig.Int32Literal(int32(v.I.Lo))
	case types.KindUTinyInt, types.KindUSmallInt:
		lit = ig.Int32Literal(int32(v.U.Lo))
	case types.KindBigInt:
		lit = ig.Int64Literal(int64(v.I.Lo))
	case types.KindUInteger:
		lit = ig.Int64Literal(int64(v.U.Lo))
	case types.KindFloat, types.KindDouble:
		f := v.F
		if math.IsNaN(f) {
			return nil, false
		}
		if f == 0 {
			f = 0
			if lower {
				f = math.Copysign(0, -1)
			}
		}
		if t.Kind == types.KindFloat {
			lit = ig.Float32Literal(float32(f))
		} else {
			lit = ig.Float64Literal(f)
		}
	case types.KindDate:
		d := int64(v.I.Lo)
		if d <= math.MinInt32+1 || d >= math.MaxInt32-1 {
			return nil, false
		}
		lit = ig.DateLiteral(ig.Date(int32(d)))
	case types.KindTime:
		lit = ig.TimeLiteral(ig.Time(int64(v.I.Lo)))
	case types.KindTimestamp, types.KindTimestampTZ, types.KindTimestampMS, types.KindTimestampS:
		x := int64(v.I.Lo)
		mul := int64(1)
		switch t.Kind {
		case types.KindTimestampMS:
			mul = 1000
		case types.KindTimestampS:
			mul = 1e6
		}
		if x == math.MaxInt64 || x == math.MinInt64 || x > math.MaxInt64/mul-1 || x < math.MinInt64/mul+1 {
			return nil, false
		}
		lit = ig.TimestampLiteral(ig.Timestamp(x * mul))
	case types.KindUUID:
		if len(v.B) != 16 {
			return nil, false
		}
		var u uuid.UUID
		copy(u[:], v.B)
		lit = ig.UUIDLiteral(u)
	case types.KindVarchar:
		lit = ig.StringLiteral(string(v.B))
	case types.KindBlob:
		lit = ig.BinaryLiteral(v.B)
	default:
		return nil, false
	}
	return lit, true
}

// decimalBytes is the unscaled value, big-endian two's complement in the
// fewest bytes, as Iceberg serializes a decimal.
func decimalBytes(v types.Value, t types.Type) ([]byte, bool) {
	hi, lo := v.I.Hi, v.I.Lo
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(hi))
	binary.BigEndian.PutUint64(b[8:], lo)
	i := 0
	for i < 15 {
		if (b[i] == 0 && b[i+1]&0x80 == 0) || (b[i] == 0xff && b[i+1]&0x80 != 0) {
			i++
			continue
		}
		break
	}
	_ = t
	return append([]byte(nil), b[i:]...), true
}
