package catalog

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rocklake/rocklake/catalog/catalogpb"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

// Snapshot is one committed version of the catalog. Its JSON is what
// `rocklake snapshots --format json` and the HTTP API's /v1/snapshots
// print.
type Snapshot struct {
	ID            int64     `json:"snapshot_id"`
	Time          time.Time `json:"time"`
	SchemaVersion int64     `json:"schema_version"`
	NextCatalogID int64     `json:"next_catalog_id"`
	NextFileID    int64     `json:"next_file_id"`
	Changes       Changes   `json:"changes"`
}

// Changes lists what one snapshot changed. Its JSON has every list,
// empty (never null) where nothing of the kind changed.
type Changes struct {
	CreatedSchemas     []int64  `json:"created_schemas"`
	CreatedTables      []int64  `json:"created_tables"`
	DroppedTables      []int64  `json:"dropped_tables"`
	InsertedIntoTables []int64  `json:"inserted_into_tables"`
	DeletedFromTables  []int64  `json:"deleted_from_tables"`
	CreatedNames       []string `json:"created_names"`
	RenamedTables      []int64  `json:"renamed_tables"`
	AlteredTables      []int64  `json:"altered_tables"`
	// RestampedTables had live files' recorded identities replaced in
	// place (Txn.Restamp): the same rows, found again on disk.
	RestampedTables []int64 `json:"restamped_tables"`
}

func (c Changes) MarshalJSON() ([]byte, error) {
	type plain Changes // without this method
	p := plain(c)
	for _, l := range []*[]int64{&p.CreatedSchemas, &p.CreatedTables, &p.DroppedTables, &p.InsertedIntoTables,
		&p.DeletedFromTables, &p.RenamedTables, &p.AlteredTables, &p.RestampedTables} {
		if *l == nil {
			*l = []int64{}
		}
	}
	if p.CreatedNames == nil {
		p.CreatedNames = []string{}
	}
	return json.Marshal(p)
}

// Table is a table visible at some snapshot.
type Table struct {
	ID             int64
	UUID           string
	SchemaID       int64
	Name           string
	Path           string
	PathIsRelative bool
	Begin          int64
	End            stats.Maybe[int64]
	// PartitionedBy is the layout optimize and compact write files in
	// (SetPartitioning): each file holds one value of every field.
	PartitionedBy []PartitionField
	// SortedBy is the order writes and optimize put rows in before
	// cutting them into files (SetSorting); nil: none declared.
	SortedBy *SortKey
	// WriteOptions are the table's settings for the files written into it
	// (SetOption); the zero value is every writer's default.
	WriteOptions WriteOptions
}

// SortKey is a table's declared row order.
type SortKey struct {
	// Columns are top-level column ids, outermost sort first. Ids, not
	// names, so that a rename keeps the key.
	Columns []int64
	// Curve is "" for a plain lexicographic sort, or "zorder" or
	// "hilbert" (as internal/curve.Kind spells them): rows ordered along
	// that curve through all of Columns.
	Curve string
}

// Equal reports whether two sort keys (nil: none) are the same.
func (k *SortKey) Equal(o *SortKey) bool {
	if k == nil || o == nil {
		return k == o
	}
	return k.Curve == o.Curve && slices.Equal(k.Columns, o.Columns)
}

// WriteOptions are how writes into a table size and order their files.
type WriteOptions struct {
	// TargetFileRows cuts files at this many rows; 0: the writer's
	// default.
	TargetFileRows int64
	// TargetFileBytes, when positive, cuts files at about this many bytes
	// instead, and TargetFileRows is ignored.
	TargetFileBytes int64
	// Unsorted makes writes keep rows in the order they come, skipping the
	// sort by SortedBy or PartitionedBy: faster writes, files that prune
	// less.
	Unsorted bool
	// MergeOnRead records that the table asked for merge-on-read:
	// DELETE, UPDATE and MERGE write delete files (DeleteFile) of the
	// positions of the rows they take out, which readers apply, instead
	// of rewriting every file that held one: far less to write, a little
	// more to read until optimize folds them. It is also what a table
	// that asked for neither mode gets (DeletesByFile).
	MergeOnRead bool
	// CopyOnWrite records that the table asked for copy-on-write: the
	// files that held the rows a change takes out are rewritten, for
	// readers that do not apply delete files.
	CopyOnWrite bool
}

// DeletesByFile says whether DELETE, UPDATE and MERGE take rows out with
// delete files (merge-on-read, the default) rather than by rewriting the
// files that held them.
func (o WriteOptions) DeletesByFile() bool { return !o.CopyOnWrite }

// PartitionField is one field of a table's declared layout: a column
// through a transform (identity, year, month, day, hour, bucket(N)).
type PartitionField struct {
	ColumnID  int64
	Transform string
}

// Column is a column of a table; nested types have child columns whose
// Parent is the enclosing column (struct fields by name, a list's
// "element", a map's "key" and "value").
type Column struct {
	ID       int64
	TableID  int64
	Order    int64
	Name     string
	Type     types.Type
	Nullable bool
	Parent   stats.Maybe[int64]
	Begin    int64
	End      stats.Maybe[int64]
	// Path is the column's name and its ancestors', outermost first.
	Path []string
	// Partition says where the column's values come from when the files do
	// not hold it: "" (the files hold it) or PartitionHive.
	Partition string
	// Default is what files registered before the column was added hold
	// for it, in the DuckLake text form of its type; unknown: NULL.
	Default stats.Maybe[string]
	// WidenedFrom is the column this one replaced with a wider type:
	// files registered before the change hold it under that column's name
	// and type.
	WidenedFrom stats.Maybe[int64]
	// MappedIn are the files registered before the column was added that
	// hold it all the same (DataFile.IgnoredColumns: left out when they
	// were registered), with the name and type each holds it under: they
	// read their own values, not Default.
	MappedIn []FileColumnSource
}

// FileColumnSource is how one file holds a column added after the file
// was registered (Column.MappedIn): under Name, in Type, which the
// column's type is or widens exactly.
type FileColumnSource struct {
	FileID int64
	Name   string
	Type   types.Type
}

// PartitionHive marks a column whose value in each file is the file's
// key=value directory (DataFile.PartitionValues), as DuckDB's
// hive_partitioning reads it.
const PartitionHive = "hive"

// PartitionValue is one file's value of a partition column, in the DuckLake
// text form of the column's type; an unknown Value is NULL.
type PartitionValue struct {
	ColumnID int64
	Value    stats.Maybe[string]
}

// TopLevel returns the columns that are not nested fields of another, in
// order: the table's columns as a query names them.
func TopLevel(cols []Column) []Column {
	var out []Column
	for _, c := range cols {
		if !c.Parent.Known {
			out = append(out, c)
		}
	}
	return out
}

// DataFile is a Parquet file registered in a table.
type DataFile struct {
	ID             int64
	TableID        int64
	Path           string
	PathIsRelative bool
	Format         string
	RecordCount    int64
	FileSizeBytes  int64
	FooterSize     int64
	RowIDStart     int64
	RowGroupCount  int32
	Begin          int64
	End            stats.Maybe[int64]
	// ColumnsMatchTable: the file's top-level columns are the table's,
	// same names, order and types (see NewFile).
	ColumnsMatchTable bool
	// Owner says whether cleanup may delete the file from disk.
	Owner Ownership
	// ModifiedUnixNanos is the file's modification time when registered;
	// 0 when not recorded (files registered before it was).
	ModifiedUnixNanos int64
	// ChangedUnixNanos is the file's status change time (ctime) when
	// registered, which no one but root can set back; 0 when not recorded.
	ChangedUnixNanos int64
	// Identity is the file's device and inode when it was registered
	// (zero when unrecorded).
	Identity FileIdentity
	// FooterFingerprint is a hash of the file's Parquet footer as
	// registered (pqmeta.Fingerprint; 0 when not recorded): what tells a
	// file whose ctime moved but whose statistics and offsets did not.
	FooterFingerprint uint64
	// RegisteredAgain, on a retired file, says the commit that retired it
	// registered the same file again at its location (a refresh of its
	// statistics), so its rows did not go into files a rewrite wrote.
	RegisteredAgain bool
	// ETag is an object's entity tag when it was registered (objects in an
	// S3-compatible store only): with the size, what readers check.
	ETag string
	// IgnoredColumns are top-level columns the file holds and the table
	// lacks, left out at registration by request.
	IgnoredColumns []string
	// PartitionValues are the file's values of the table's partition
	// columns.
	PartitionValues []PartitionValue
	// LayoutValues are the file's values of the fields of the declared
	// layout it was written under (Table.PartitionedBy) by a rewrite, which
	// writes every file within one value of each; none for files added.
	LayoutValues []LayoutValue
}

// LayoutValue is a file's value of one field of a declared layout: the
// field's transform of column ColumnID, as text (LayoutText); an unknown
// Value is NULL.
type LayoutValue struct {
	ColumnID  int64
	Transform string
	Value     stats.Maybe[string]
}

func layoutValuesToPB(vs []LayoutValue) []*catalogpb.LayoutValue {
	var out []*catalogpb.LayoutValue
	for _, v := range vs {
		p := &catalogpb.LayoutValue{ColumnId: v.ColumnID, Transform: v.Transform}
		if v.Value.Known {
			s := v.Value.V
			p.Value = &s
		}
		out = append(out, p)
	}
	return out
}

func layoutValuesFromPB(ps []*catalogpb.LayoutValue) []LayoutValue {
	var out []LayoutValue
	for _, p := range ps {
		v := LayoutValue{ColumnID: p.ColumnId, Transform: p.Transform}
		if p.Value != nil {
			v.Value = stats.Known(*p.Value)
		}
		out = append(out, v)
	}
	return out
}

// PartitionValue returns the file's value of partition column id: set
// says the file has one, and an unknown value is NULL.
func (f DataFile) PartitionValue(id int64) (v stats.Maybe[string], set bool) {
	for _, pv := range f.PartitionValues {
		if pv.ColumnID == id {
			return pv.Value, true
		}
	}
	return v, false
}

func partitionValuesToPB(vs []PartitionValue) []*catalogpb.PartitionValue {
	var out []*catalogpb.PartitionValue
	for _, v := range vs {
		p := &catalogpb.PartitionValue{ColumnId: v.ColumnID}
		if v.Value.Known {
			s := v.Value.V
			p.Value = &s
		}
		out = append(out, p)
	}
	return out
}

func partitionValuesFromPB(ps []*catalogpb.PartitionValue) []PartitionValue {
	var out []PartitionValue
	for _, p := range ps {
		v := PartitionValue{ColumnID: p.ColumnId}
		if p.Value != nil {
			v.Value = stats.Known(*p.Value)
		}
		out = append(out, v)
	}
	return out
}

// FileIdentity is a file's device and inode number: every path that
// reaches the same file (symbolic links, hard links, bind mounts) has the
// same identity, which no path spelling can hide. The zero value is
// unknown.
type FileIdentity struct {
	Device uint64
	Inode  uint64
}

// Known reports whether the identity was recorded.
func (id FileIdentity) Known() bool { return id != FileIdentity{} }

func identityToPB(id FileIdentity) *catalogpb.FileIdentity {
	if !id.Known() {
		return nil
	}
	return &catalogpb.FileIdentity{Device: id.Device, Inode: id.Inode}
}

func identityFromPB(p *catalogpb.FileIdentity) FileIdentity {
	return FileIdentity{Device: p.GetDevice(), Inode: p.GetInode()}
}

// Location is where the file lives: its path, or, when the path is
// relative, the path under the table's directory.
func (f DataFile) Location(t Table) string {
	if f.PathIsRelative && !IsObject(t.Path) {
		return filepath.Join(t.Path, f.Path)
	}
	return f.Path
}

// Location is a byte range in a data file; Length 0 means absent.
type Location struct {
	Offset, Length int64
}

// RowGroupStats are one column's statistics in one row group, with where
// its page index and bloom filter are.
type RowGroupStats struct {
	Index       int32
	FirstRow    int64
	Stats       stats.Column
	ColumnIndex Location
	OffsetIndex Location
	BloomFilter Location
}

// VariantStats describe one fully shredded sub-field of a VARIANT column.
type VariantStats struct {
	Path            string // e.g. root, element, "a", element."a"
	ShreddedType    string
	ColumnSizeBytes int64
	ValueCount      int64
	NullCount       int64
	Min, Max        stats.Maybe[[]byte]
	ContainsNaN     stats.Maybe[bool]
	ExtraStats      string
	// RowGroups are the same statistics per row group (none in rows
	// stored before they were kept).
	RowGroups []VariantRowGroup
}

// VariantRowGroup is a sub-field's statistics in one row group.
type VariantRowGroup struct {
	Index       int32
	ValueCount  int64
	NullCount   int64
	Min, Max    stats.Maybe[[]byte]
	ContainsNaN stats.Maybe[bool]
}

// TableStats are a table's totals and per-column bounds at one snapshot.
type TableStats struct {
	RecordCount   int64
	NextRowID     int64
	FileSizeBytes int64
	FileCount     int64
	Columns       map[int64]*TableColumnStats // by column id
}

// TableColumnStats bound one column over every file of a table.
type TableColumnStats struct {
	ContainsNull stats.Maybe[bool]
	ContainsNaN  stats.Maybe[bool]
	Min, Max     stats.Maybe[[]byte]
	MinIsExact   bool
	MaxIsExact   bool
	ExtraStats   string
	// NoValues is set when every file holds no value (all NULL): Min and
	// Max are then absent because there is nothing to bound.
	NoValues bool
	// Variants keeps the sub-fields shredded with one type in every file.
	Variants []VariantStats
}

// Conversions between the Go model and the stored messages.

func optBytes(m stats.Maybe[[]byte]) []byte {
	if !m.Known {
		return nil
	}
	if m.V == nil {
		return []byte{} // present but empty (an empty string bound)
	}
	return m.V
}

func maybeBytes(b []byte) stats.Maybe[[]byte] {
	if b == nil {
		return stats.Maybe[[]byte]{}
	}
	return stats.Known(b)
}

func optInt(m stats.Maybe[int64]) *int64 {
	if !m.Known {
		return nil
	}
	v := m.V
	return &v
}

func maybeInt(p *int64) stats.Maybe[int64] {
	if p == nil {
		return stats.Maybe[int64]{}
	}
	return stats.Known(*p)
}

func optBool(m stats.Maybe[bool]) *bool {
	if !m.Known {
		return nil
	}
	v := m.V
	return &v
}

func maybeBool(p *bool) stats.Maybe[bool] {
	if p == nil {
		return stats.Maybe[bool]{}
	}
	return stats.Known(*p)
}

func columnStatsToPB(s *stats.Column) *catalogpb.ColumnStats {
	return &catalogpb.ColumnStats{
		Min: optBytes(s.Min), Max: optBytes(s.Max),
		NullCount: optInt(s.NullCount), ValueCount: optInt(s.ValueCount),
		ContainsNull: optBool(s.ContainsNull), ContainsNan: optBool(s.ContainsNaN),
		DistinctCount: optInt(s.DistinctCount), RowCount: s.RowCount,
		ColumnSizeBytes: s.ColumnSizeBytes, MinIsExact: s.MinIsExact, MaxIsExact: s.MaxIsExact,
		ExtraStats: s.ExtraStats,
	}
}

func columnStatsFromPB(p *catalogpb.ColumnStats) stats.Column {
	if p == nil {
		return stats.Column{}
	}
	return stats.Column{
		Min: maybeBytes(p.Min), Max: maybeBytes(p.Max),
		NullCount: maybeInt(p.NullCount), ValueCount: maybeInt(p.ValueCount),
		ContainsNull: maybeBool(p.ContainsNull), ContainsNaN: maybeBool(p.ContainsNan),
		DistinctCount: maybeInt(p.DistinctCount), RowCount: p.RowCount,
		ColumnSizeBytes: p.ColumnSizeBytes, MinIsExact: p.MinIsExact, MaxIsExact: p.MaxIsExact,
		ExtraStats: p.ExtraStats,
	}
}

func locToPB(l Location) *catalogpb.Location {
	if l.Length == 0 {
		return nil
	}
	return &catalogpb.Location{Offset: l.Offset, Length: l.Length}
}

func locFromPB(p *catalogpb.Location) Location {
	if p == nil {
		return Location{}
	}
	return Location{Offset: p.Offset, Length: p.Length}
}

func (v *VariantStats) toPB() *catalogpb.VariantStats {
	return &catalogpb.VariantStats{
		VariantPath: v.Path, ShreddedType: v.ShreddedType, ColumnSizeBytes: v.ColumnSizeBytes,
		ValueCount: v.ValueCount, NullCount: v.NullCount, Min: optBytes(v.Min), Max: optBytes(v.Max),
		ContainsNan: optBool(v.ContainsNaN), ExtraStats: v.ExtraStats,
		RowGroups: variantRowGroupsToPB(v.RowGroups),
	}
}

func variantRowGroupsToPB(rgs []VariantRowGroup) []*catalogpb.VariantRowGroup {
	out := make([]*catalogpb.VariantRowGroup, len(rgs))
	for i, g := range rgs {
		out[i] = &catalogpb.VariantRowGroup{Index: g.Index, ValueCount: g.ValueCount, NullCount: g.NullCount,
			Min: optBytes(g.Min), Max: optBytes(g.Max), ContainsNan: optBool(g.ContainsNaN)}
	}
	return out
}

func variantFromPB(p *catalogpb.VariantStats) VariantStats {
	return VariantStats{
		Path: p.VariantPath, ShreddedType: p.ShreddedType, ColumnSizeBytes: p.ColumnSizeBytes,
		ValueCount: p.ValueCount, NullCount: p.NullCount, Min: maybeBytes(p.Min), Max: maybeBytes(p.Max),
		ContainsNaN: maybeBool(p.ContainsNan), ExtraStats: p.ExtraStats,
		RowGroups: variantRowGroupsFromPB(p.RowGroups),
	}
}

func variantRowGroupsFromPB(ps []*catalogpb.VariantRowGroup) []VariantRowGroup {
	if len(ps) == 0 {
		return nil
	}
	out := make([]VariantRowGroup, len(ps))
	for i, p := range ps {
		out[i] = VariantRowGroup{Index: p.Index, ValueCount: p.ValueCount, NullCount: p.NullCount,
			Min: maybeBytes(p.Min), Max: maybeBytes(p.Max), ContainsNaN: maybeBool(p.ContainsNan)}
	}
	return out
}

func snapshotFromPB(p *catalogpb.Snapshot) Snapshot {
	s := Snapshot{
		ID: p.Id, Time: time.UnixMicro(p.TimeUnixMicros).UTC(), SchemaVersion: p.SchemaVersion,
		NextCatalogID: p.NextCatalogId, NextFileID: p.NextFileId,
	}
	if c := p.Changes; c != nil {
		s.Changes = Changes{
			CreatedSchemas: c.CreatedSchemas, CreatedTables: c.CreatedTables, DroppedTables: c.DroppedTables,
			InsertedIntoTables: c.InsertedIntoTables, DeletedFromTables: c.DeletedFromTables,
			CreatedNames: c.CreatedNames, RenamedTables: c.RenamedTables, AlteredTables: c.AlteredTables,
			RestampedTables: c.RestampedTables,
		}
	}
	return s
}

func columnFromPB(p *catalogpb.Column) Column {
	c := Column{
		ID: p.Id, TableID: p.TableId, Order: p.Order, Name: p.Name, Type: parseOrUnknown(p.Type), Nullable: p.Nullable,
		Parent: maybeInt(p.ParentColumn), Begin: p.BeginSnapshot, End: maybeInt(p.EndSnapshot),
		Partition: p.Partition, WidenedFrom: maybeInt(p.WidenedFrom),
	}
	if p.DefaultValue != nil {
		c.Default = stats.Known(*p.DefaultValue)
	}
	for _, m := range p.MappedIn {
		c.MappedIn = append(c.MappedIn, FileColumnSource{FileID: m.FileId, Name: m.Name, Type: parseOrUnknown(m.Type)})
	}
	return c
}

// columnToPB is c's row as stored, ending at end (nil: still visible).
func columnToPB(c Column, end *int64) *catalogpb.Column {
	p := &catalogpb.Column{
		Id: c.ID, TableId: c.TableID, Order: c.Order, Name: c.Name, Type: c.Type.DuckLakeName(), Nullable: c.Nullable,
		ParentColumn: optInt(c.Parent), BeginSnapshot: c.Begin, EndSnapshot: end, Partition: c.Partition,
		WidenedFrom: optInt(c.WidenedFrom),
	}
	if c.Default.Known {
		v := c.Default.V
		p.DefaultValue = &v
	}
	for _, m := range c.MappedIn {
		p.MappedIn = append(p.MappedIn, &catalogpb.MappedFileColumn{FileId: m.FileID, Name: m.Name, Type: m.Type.DuckLakeName()})
	}
	return p
}

func tableFromPB(p *catalogpb.Table) Table {
	t := Table{
		ID: p.Id, UUID: p.Uuid, SchemaID: p.SchemaId, Name: p.Name, Path: p.Path,
		PathIsRelative: p.PathIsRelative, Begin: p.BeginSnapshot, End: maybeInt(p.EndSnapshot),
	}
	for _, f := range p.PartitionedBy {
		t.PartitionedBy = append(t.PartitionedBy, PartitionField{ColumnID: f.ColumnId, Transform: f.Transform})
	}
	if k := p.SortedBy; k != nil {
		t.SortedBy = &SortKey{Columns: slices.Clone(k.ColumnIds), Curve: k.Curve}
	}
	if o := p.WriteOptions; o != nil {
		t.WriteOptions = WriteOptions{TargetFileRows: o.TargetFileRows, TargetFileBytes: o.TargetFileBytes, Unsorted: o.Unsorted, MergeOnRead: o.MergeOnRead, CopyOnWrite: o.CopyOnWrite}
	}
	return t
}

// tableToPB is t's row as stored, ending at end (nil: still visible).
func tableToPB(t Table, end *int64) *catalogpb.Table {
	p := &catalogpb.Table{
		Id: t.ID, Uuid: t.UUID, SchemaId: t.SchemaID, Name: t.Name, Path: t.Path,
		PathIsRelative: t.PathIsRelative, BeginSnapshot: t.Begin, EndSnapshot: end,
	}
	for _, f := range t.PartitionedBy {
		p.PartitionedBy = append(p.PartitionedBy, &catalogpb.PartitionField{ColumnId: f.ColumnID, Transform: f.Transform})
	}
	if k := t.SortedBy; k != nil {
		p.SortedBy = &catalogpb.SortKey{ColumnIds: slices.Clone(k.Columns), Curve: k.Curve}
	}
	// Left out when all default, so that rows of tables without options
	// are byte for byte what they were before options existed.
	if o := t.WriteOptions; o != (WriteOptions{}) {
		p.WriteOptions = &catalogpb.WriteOptions{TargetFileRows: o.TargetFileRows, TargetFileBytes: o.TargetFileBytes, Unsorted: o.Unsorted, MergeOnRead: o.MergeOnRead, CopyOnWrite: o.CopyOnWrite}
	}
	return p
}

func dataFileFromPB(p *catalogpb.DataFile) DataFile {
	return DataFile{
		ID: p.Id, TableID: p.TableId, Path: p.Path, PathIsRelative: p.PathIsRelative, Format: p.Format,
		RecordCount: p.RecordCount, FileSizeBytes: p.FileSizeBytes, FooterSize: p.FooterSize,
		RowIDStart: p.RowIdStart, RowGroupCount: p.RowGroupCount, Begin: p.BeginSnapshot,
		End: maybeInt(p.EndSnapshot), ColumnsMatchTable: p.ColumnsMatchTable, Owner: Ownership(p.Ownership),
		Identity: identityFromPB(p.Identity), ModifiedUnixNanos: p.ModifiedUnixNanos, ETag: p.Etag,
		IgnoredColumns: p.IgnoredColumns, PartitionValues: partitionValuesFromPB(p.PartitionValues),
		LayoutValues: layoutValuesFromPB(p.LayoutValues), ChangedUnixNanos: p.ChangedUnixNanos,
		FooterFingerprint: p.FooterFingerprint, RegisteredAgain: p.RegisteredAgain,
	}
}

func visibleAt(s, begin int64, end *int64) bool {
	return begin <= s && (end == nil || s < *end)
}

// FileIDs is the ids of files, in order.
func FileIDs(files []DataFile) []int64 {
	ids := make([]int64, len(files))
	for i, f := range files {
		ids[i] = f.ID
	}
	return ids
}

// IsObject reports whether a location names an object in an S3-compatible
// store (s3://bucket/key) rather than a local path. The catalog only
// records such locations; package storage reads them.
func IsObject(loc string) bool { return strings.HasPrefix(loc, "s3://") }
