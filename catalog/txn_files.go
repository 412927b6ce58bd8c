package catalog

import (
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/rocklake/rocklake/catalog/catalogpb"
	"github.com/rocklake/rocklake/membership"
	"github.com/rocklake/rocklake/types"
)

func (w *commitWriter) endFile(f DataFile) {
	s := w.next.ID
	w.put(key(tagDataFile, f.TableID, f.ID), dataFileToPB(f, &s))
}

func dataFileToPB(f DataFile, end *int64) *catalogpb.DataFile {
	return &catalogpb.DataFile{
		Id: f.ID, TableId: f.TableID, Path: f.Path, PathIsRelative: f.PathIsRelative, Format: f.Format,
		RecordCount: f.RecordCount, FileSizeBytes: f.FileSizeBytes, FooterSize: f.FooterSize,
		RowIdStart: f.RowIDStart, RowGroupCount: f.RowGroupCount, BeginSnapshot: f.Begin, EndSnapshot: end,
		ColumnsMatchTable: f.ColumnsMatchTable, Ownership: catalogpb.Ownership(f.Owner),
		Identity: identityToPB(f.Identity), ModifiedUnixNanos: f.ModifiedUnixNanos, Etag: f.ETag,
		IgnoredColumns: f.IgnoredColumns, PartitionValues: partitionValuesToPB(f.PartitionValues),
		LayoutValues: layoutValuesToPB(f.LayoutValues), ChangedUnixNanos: f.ChangedUnixNanos,
		FooterFingerprint: f.FooterFingerprint, RegisteredAgain: f.RegisteredAgain,
	}
}

func (w *commitWriter) addFiles(name string, files []NewFile) error {
	ts, err := w.table(name)
	if err != nil {
		return err
	}
	if ts.altered {
		return fmt.Errorf("%w: table %q: an alteration is a snapshot of its own", ErrInvalid, name)
	}
	if err := w.seedStats(ts); err != nil {
		return err
	}
	if err := w.prefetchIndexes(ts, files); err != nil {
		return err
	}
	for _, nf := range files {
		if nf.Path == "" {
			return fmt.Errorf("%w data file: empty path", ErrInvalid)
		}
		if err := w.c.checkRoot(nf); err != nil {
			return err
		}
		if id, dup, err := w.livePathID(ts, nf.Path); err != nil {
			return err
		} else if dup {
			return fmt.Errorf("file %s: %w in table %q (as file %d)", nf.Path, ErrDuplicate, ts.t.Name, id)
		}
		if nf.Identity.Known() {
			if other, dup, err := w.liveIdentity(ts, nf); err != nil {
				return err
			} else if dup {
				return fmt.Errorf("file %s: %w in table %q: it is file %d, registered as %s (the same file: device %d, inode %d)",
					nf.Path, ErrDuplicate, ts.t.Name, other.ID, other.Location(ts.t), nf.Identity.Device, nf.Identity.Inode)
			}
		}
		if nf.RecordCount < 0 || nf.FileSizeBytes < 0 {
			return fmt.Errorf("%w data file %s: negative counts", ErrInvalid, nf.Path)
		}
		pvs, err := partitionValues(ts, nf)
		if err != nil {
			return err
		}
		format := nf.Format
		if format == "" {
			format = "parquet"
		}
		f := DataFile{
			ID: w.next.NextFileID, TableID: ts.t.ID, Path: nf.Path, PathIsRelative: nf.PathIsRelative,
			Format: format, RecordCount: nf.RecordCount, FileSizeBytes: nf.FileSizeBytes,
			FooterSize: nf.FooterSize, RowIDStart: ts.stats.NextRowID, RowGroupCount: nf.RowGroupCount,
			Begin: w.next.ID, ColumnsMatchTable: nf.ColumnsMatchTable, Owner: w.c.ownerOf(nf),
			Identity: nf.Identity, ModifiedUnixNanos: nf.ModifiedUnixNanos, ETag: nf.ETag,
			IgnoredColumns: nf.IgnoredColumns, PartitionValues: pvs, LayoutValues: nf.LayoutValues,
			ChangedUnixNanos: nf.ChangedUnixNanos, FooterFingerprint: nf.FooterFingerprint,
		}
		for _, lv := range nf.LayoutValues {
			if !slices.Contains(ts.t.PartitionedBy, PartitionField{ColumnID: lv.ColumnID, Transform: lv.Transform}) {
				return fmt.Errorf("%w file %s: layout value of %s of column %d, which is not a field of table %q's layout", ErrInvalid, nf.Path, lv.Transform, lv.ColumnID, ts.t.Name)
			}
		}
		w.next.NextFileID++
		ts.livePaths[nf.Path] = f.ID
		delete(ts.gonePaths, nf.Path)
		ts.stats.addFile(f)
		w.put(key(tagDataFile, ts.t.ID, f.ID), dataFileToPB(f, nil))
		w.put(keyWithString(tagFilePath, nf.Path, ts.t.ID), &catalogpb.DataFile{Id: f.ID})
		if f.Identity.Known() {
			if ts.liveIdents == nil {
				ts.liveIdents = map[FileIdentity]DataFile{}
			}
			ts.liveIdents[f.Identity] = f
			delete(ts.goneIdents, f.Identity)
			w.put(identityKey(ts.t.ID, f.Identity), &catalogpb.DataFile{Id: f.ID})
		}
		af := addedFile{f: f, fc: map[int64]*FileColumn{}}
		ncs := ts.encodeColumns(&nf)
		for i := range nf.Columns {
			fc, nc := &nf.Columns[i], &ncs[i]
			if !nc.found {
				return nc.err
			}
			if af.fc[nc.col.ID] != nil {
				return fmt.Errorf("%w file %s: two stats entries for column %q", ErrInvalid, nf.Path, strings.Join(fc.Path, "."))
			}
			if nc.err != nil {
				return nc.err
			}
			af.fc[nc.col.ID] = fc
			w.putEncoded(key(tagFileColumnStats, ts.t.ID, nc.col.ID, f.ID), nc.stats)
			for j, rg := range fc.RowGroups {
				w.putEncoded(rowGroupKey(ts.t.ID, nc.col.ID, f.ID, rg.Index), nc.rowGroups[j])
			}
			for j, v := range fc.Variants {
				w.putEncoded(keyWithString(tagFileVariantStats, v.Path, ts.t.ID, nc.col.ID, f.ID), nc.variants[j])
			}
			if fl := fc.Filter; fl != nil {
				// The largest values of a commit: encoded straight into
				// the batch (put), checked in encodeColumn.
				w.put(key(tagFileFilter, ts.t.ID, nc.col.ID, f.ID), &catalogpb.MembershipFilter{Kind: fl.Kind, Data: fl.Data, DistinctCount: fl.Distinct})
				if fl.Signature != nil {
					if ts.sigs == nil {
						ts.sigs = map[int64][]fileSig{}
					}
					ts.sigs[nc.col.ID] = append(ts.sigs[nc.col.ID], fileSig{f.ID, fl.Signature})
				}
			}
		}
		for _, c := range ts.cols {
			if fc := af.fc[c.ID]; fc != nil {
				ts.accs[c.ID].add(&fc.Stats)
			} else {
				ts.accs[c.ID].add(nil)
			}
		}
		ts.added = append(ts.added, af)
	}
	if !ts.inserted {
		ts.inserted = true
		w.changes.InsertedIntoTables = append(w.changes.InsertedIntoTables, ts.t.ID)
	}
	return w.writeErr
}

// newColumn is one stats entry of a new file as its commit writes it:
// the column it names, checked, and its values encoded. None of it
// depends on the commit's state (file ids, the other files).
type newColumn struct {
	col   Column
	found bool  // the entry names a column of the table (else err says so)
	err   error // the entry's first problem
	// Encoded values: the stats, and each row group's and variant
	// sub-field's (in the entry's order). The filter is encoded at its put.
	stats     []byte
	rowGroups [][]byte
	variants  [][]byte
}

// encodeColumns resolves, checks and encodes every stats entry of nf.
func (ts *tableState) encodeColumns(nf *NewFile) []newColumn {
	out := make([]newColumn, len(nf.Columns))
	for i := range nf.Columns {
		out[i] = ts.encodeColumn(nf.Path, nf.RowGroupCount, &nf.Columns[i])
	}
	return out
}

func (ts *tableState) encodeColumn(path string, rowGroups int32, fc *FileColumn) (nc newColumn) {
	name := strings.Join(fc.Path, ".")
	nc.col, nc.found = ts.byPath[pathKey(fc.Path)]
	if !nc.found {
		nc.err = fmt.Errorf("file %s: stats for %w %q in table %q", path, ErrNoSuchColumn, name, ts.t.Name)
		return nc
	}
	fail := func(err error) newColumn {
		nc.err = err
		return nc
	}
	if err := checkStats(nc.col, &fc.Stats); err != nil {
		return fail(fmt.Errorf("file %s column %q: %w", path, name, err))
	}
	for j := range fc.Variants {
		if err := checkVariant(&fc.Variants[j]); err != nil {
			return fail(fmt.Errorf("file %s column %q variant %s: %w", path, name, fc.Variants[j].Path, err))
		}
	}
	for j := range fc.RowGroups {
		// Expiry deletes a file's row-group stats by index below its count,
		// without reading them.
		if ix := fc.RowGroups[j].Index; ix < 0 || ix >= rowGroups {
			return fail(fmt.Errorf("%w file %s column %q: stats for row group %d of a file of %d", ErrInvalid, path, name, ix, rowGroups))
		}
		if err := checkStats(nc.col, &fc.RowGroups[j].Stats); err != nil {
			return fail(fmt.Errorf("file %s column %q row group %d: %w", path, name, fc.RowGroups[j].Index, err))
		}
	}
	var err error
	enc := func(m proto.Message) []byte {
		b, e := encodeValue(m)
		if err == nil {
			err = e
		}
		return b
	}
	nc.stats = enc(columnStatsToPB(&fc.Stats))
	if len(fc.RowGroups) > 0 {
		nc.rowGroups = make([][]byte, len(fc.RowGroups))
	}
	for j, rg := range fc.RowGroups {
		nc.rowGroups[j] = enc(&catalogpb.RowGroupStats{
			Stats: columnStatsToPB(&rg.Stats), FirstRow: rg.FirstRow, ColumnIndex: locToPB(rg.ColumnIndex),
			OffsetIndex: locToPB(rg.OffsetIndex), BloomFilter: locToPB(rg.BloomFilter),
		})
	}
	if len(fc.Variants) > 0 {
		nc.variants = make([][]byte, len(fc.Variants))
	}
	for j := range fc.Variants {
		nc.variants[j] = enc(fc.Variants[j].toPB())
	}
	if fl := fc.Filter; fl != nil {
		if err := membership.Check(fl.Data); err != nil || fl.Kind != membership.Kind {
			return fail(fmt.Errorf("%w file %s column %q: membership filter of kind %q: %v", ErrInvalid, path, name, fl.Kind, err))
		}
		if fl.Signature != nil {
			if err := membership.CheckSignature(fl.Signature); err != nil {
				return fail(fmt.Errorf("%w file %s column %q: %v", ErrInvalid, path, name, err))
			}
		}
	}
	if err != nil {
		return fail(err)
	}
	return nc
}

// removeFiles retires files; again marks them registered again by this
// commit (Txn.RegisterAgain), which checkRegisteredAgain holds it to.
func (w *commitWriter) removeFiles(name string, ids []int64, again bool) error {
	ts, err := w.table(name)
	if err != nil {
		return err
	}
	if ts.altered {
		return fmt.Errorf("%w: table %q: an alteration is a snapshot of its own", ErrInvalid, name)
	}
	// Only the files removed, when they are few: a commit that retires a
	// file or two of a table of millions must not read every file row.
	if err := w.peekFiles(ts, ids); err != nil {
		return err
	}
	if err := w.prepareDeletes(ts, len(ids)); err != nil {
		return err
	}
	for _, id := range ids {
		f, ok := ts.live[id]
		if !ok || ts.removed[id] {
			return fmt.Errorf("%w %d in table %q at snapshot %d", ErrNoSuchFile, id, ts.t.Name, w.head.ID)
		}
		ts.removed[id] = true
		delete(ts.livePaths, f.Path)
		ts.gonePaths[f.Path] = true
		if again {
			f.RegisteredAgain = true
			if ts.again == nil {
				ts.again = map[string]int64{}
			}
			ts.again[f.Location(ts.t)] = f.ID
		}
		w.endFile(f)
		if err := w.batch.Delete(keyWithString(tagFilePath, f.Path, ts.t.ID)); err != nil {
			return err
		}
		if err := w.forgetIdentity(ts, f); err != nil {
			return err
		}
		if err := w.endDeletes(ts, f.ID); err != nil {
			return err
		}
	}
	if !ts.deleted {
		ts.deleted = true
		if !ts.deletesChanged {
			w.changes.DeletedFromTables = append(w.changes.DeletedFromTables, ts.t.ID)
		}
	}
	return w.writeErr
}

// partitionValues checks a new file's partition values against the
// table's partition columns, one value each, and numbers them by column:
// a file without its partition's value would read as NULL there, which no
// query could tell from a NULL partition.
func partitionValues(ts *tableState, nf NewFile) ([]PartitionValue, error) {
	given := map[string]NewPartitionValue{}
	for _, v := range nf.PartitionValues {
		k := strings.ToLower(v.Column)
		if _, dup := given[k]; dup {
			return nil, fmt.Errorf("%w data file %s: two values for partition column %q", ErrInvalid, nf.Path, v.Column)
		}
		given[k] = v
	}
	var out []PartitionValue
	for _, c := range ts.cols {
		if c.Partition == "" || c.Parent.Known {
			continue
		}
		v, ok := given[strings.ToLower(c.Name)]
		if !ok {
			return nil, fmt.Errorf("%w data file %s: no value for partition column %q of table %q", ErrInvalid, nf.Path, c.Name, ts.t.Name)
		}
		delete(given, strings.ToLower(c.Name))
		if v.Value.Known {
			codec, ok := types.CodecFor(c.Type)
			if !ok {
				return nil, fmt.Errorf("%w data file %s: partition column %q of type %s has no text form", ErrInvalid, nf.Path, c.Name, types.DisplayName(c.Type))
			}
			if _, err := codec.Parse(v.Value.V); err != nil {
				return nil, fmt.Errorf("%w data file %s: partition column %q: value %q does not read as %s: %s", ErrInvalid, nf.Path, c.Name, v.Value.V, c.Type, types.Unprefixed(err, c.Type))
			}
			if types.NegativeZero(c.Type, v.Value.V) {
				return nil, fmt.Errorf("%w data file %s: partition column %q: value %q: %s", ErrInvalid, nf.Path, c.Name, v.Value.V, NegativeZeroPartition)
			}
		}
		out = append(out, PartitionValue{ColumnID: c.ID, Value: v.Value})
	}
	for _, v := range given {
		return nil, fmt.Errorf("%w data file %s: %q is not a partition column of table %q", ErrInvalid, nf.Path, v.Column, ts.t.Name)
	}
	return out, nil
}
