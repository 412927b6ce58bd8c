package ingest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/membership"
	"github.com/rocklake/rocklake/pqmeta"
	"github.com/rocklake/rocklake/storage"
	"github.com/rocklake/rocklake/types"
)

// Membership filters (package membership) are built at registration for:
//
//   - the columns Options.FilterColumns names;
//   - columns that already have filters in the table (a column once given
//     filters keeps getting them);
//   - when Add creates the table (and Options.NoAutoFilters is unset), the
//     columns of the first file whose values are mostly distinct: at least
//     AutoFilterMinDistinct distinct values, making up at least
//     AutoFilterMinRatio of its non-NULL values. Random ids, keys, hashes:
//     exactly the columns min/max bounds cannot separate.
//
// Only flat top-level columns of integer, VARCHAR, BLOB and UUID type get
// filters, and only where the file's type is the table's and DuckDB reads
// each stored value as exactly one value of it (pqmeta.Leaf.ReadsExactly):
// a filter holds what DuckDB compares, one key per value. Building one
// reads the column's data once.
const (
	AutoFilterMinDistinct = 1000
	AutoFilterMinRatio    = 0.9
)

// filterable reports whether a column type can have membership filters.
func filterable(t types.Type) bool {
	switch t.Kind {
	case types.KindTinyInt, types.KindSmallInt, types.KindInteger, types.KindBigInt, types.KindHugeInt,
		types.KindUTinyInt, types.KindUSmallInt, types.KindUInteger, types.KindUBigInt, types.KindUHugeInt,
		types.KindVarchar, types.KindBlob, types.KindUUID:
		return true
	}
	return false
}

// fileFilters reads flat leaves' values from one file (opened once) and
// builds their filters; a nil filter where the leaf holds no value.
// nonNull counts each leaf's values.
// meta, when given, is the footer registration read from this path: the
// reader takes it instead of parsing the footer again, while the open file
// is the one it was read from (identity, size, modification time).
func fileFilters(path string, id catalog.FileIdentity, meta *pqmeta.File, leaves []*pqmeta.Leaf, ts []types.Type) (fls []*catalog.Filter, nonNull []int64, err error) {
	defer func() {
		if r := recover(); r != nil {
			fls, nonNull, err = nil, nil, fmt.Errorf("arrow-go: %v", r)
		}
	}()
	f, err := pqmeta.Open(path, pqmeta.FileIdentity(id))
	if err != nil {
		return nil, nil, err
	}
	var opts []file.ReadOption
	if meta != nil && meta.Parsed() != nil {
		if st, err := f.Stat(); err == nil && st.Size() == meta.Size && st.ModTime().UnixNano() == meta.Modified {
			opts = append(opts, file.WithMetadata(meta.Parsed()))
		}
	}
	rdr, err := file.NewParquetReader(f, opts...)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	defer rdr.Close()
	fls, nonNull = make([]*catalog.Filter, len(leaves)), make([]int64, len(leaves))
	for i, l := range leaves {
		if fls[i], nonNull[i], err = leafFilter(rdr, l, ts[i]); err != nil {
			return nil, nil, err
		}
	}
	return fls, nonNull, nil
}

// leafFilter reads one flat leaf's values and builds its filter.
func leafFilter(rdr *file.Reader, l *pqmeta.Leaf, t types.Type) (fl *catalog.Filter, nonNull int64, err error) {
	codec, ok := types.CodecFor(t)
	if !ok || l.Repeated || !l.Type.Equal(t) {
		return nil, 0, fmt.Errorf("column %s cannot have a membership filter", strings.Join(l.Path, "."))
	}
	// One hash per value read: sized once, not grown by doubling; the
	// footer's count is only a hint (a corrupt one must not allocate).
	hashes := make([]uint64, 0, min(max(rdr.NumRows(), 0), 1<<20))
	var enc []byte
	addValue := func(v types.Value) error {
		if enc, err = codec.Append(enc[:0], v); err != nil {
			return err
		}
		hashes = append(hashes, membership.Hash(enc))
		return nil
	}
	add := func(plain []byte) error {
		v, ok := l.Value(plain)
		if !ok {
			return fmt.Errorf("column %s: a value does not decode as %s", strings.Join(l.Path, "."), types.DisplayName(t))
		}
		return addValue(v)
	}
	// Integers encoded straight from the reader's (Codec.AppendInt: the
	// bytes Append makes of the Value), a batch per call. The loops work
	// on locals: the closures' captured slices live on the heap, and
	// storing to them per value cost a write barrier each while the
	// collector ran.
	addInts := func(xs []int64) error {
		e, hs := enc, hashes
		for _, x := range xs {
			var err error
			if e, err = codec.AppendInt(e[:0], x); err != nil {
				return err
			}
			hs = append(hs, membership.Hash(e))
		}
		enc, hashes = e, hs
		return nil
	}
	addUints := func(xs []int64) error {
		e, hs := enc, hashes
		for _, x := range xs {
			var err error
			if e, err = codec.AppendUint(e[:0], uint64(x)); err != nil {
				return err
			}
			hs = append(hs, membership.Hash(e))
		}
		enc, hashes = e, hs
		return nil
	}
	// Integers as Value reads them (IntKind), straight from the reader's.
	signed, ints := l.IntKind()
	ints = ints && intFastPath
	var buf [8]byte
	var wide []int64
	if ints {
		wide = make([]int64, 0, valueBatch)
	}
	for g := range rdr.NumRowGroups() {
		cr, err := rdr.RowGroup(g).Column(l.Index)
		if err != nil {
			return nil, 0, err
		}
		var n int64
		switch cr := cr.(type) {
		case *file.Int32ColumnChunkReader:
			switch {
			case ints && signed:
				n, err = readBatches(cr, func(xs []int32) error { return addInts(widen(wide[:0], xs, false)) })
			case ints:
				n, err = readBatches(cr, func(xs []int32) error { return addUints(widen(wide[:0], xs, true)) })
			default:
				n, err = readValues(cr, func(x int32) error { return add(binary.LittleEndian.AppendUint32(buf[:0], uint32(x))) })
			}
		case *file.Int64ColumnChunkReader:
			switch {
			case ints && signed:
				n, err = readBatches(cr, addInts)
			case ints:
				n, err = readBatches(cr, addUints)
			default:
				n, err = readValues(cr, func(x int64) error { return add(binary.LittleEndian.AppendUint64(buf[:0], uint64(x))) })
			}
		case *file.ByteArrayColumnChunkReader:
			n, err = readValues(cr, func(x parquet.ByteArray) error { return add(x) })
		case *file.FixedLenByteArrayColumnChunkReader:
			n, err = readValues(cr, func(x parquet.FixedLenByteArray) error { return add(x) })
		default:
			return nil, 0, fmt.Errorf("column %s: physical type %T has no membership filter", strings.Join(l.Path, "."), cr)
		}
		if err != nil {
			return nil, 0, err
		}
		nonNull += n
	}
	data, distinct, err := membership.Build(hashes)
	if errors.Is(err, membership.ErrEmpty) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	sig := membership.BuildSignature(hashes, membership.SignatureBlocks(distinct))
	return &catalog.Filter{Kind: membership.Kind, Data: data, Distinct: int64(distinct), Signature: sig}, nonNull, nil
}

// batchReader is arrow-go's typed column chunk reader.
type batchReader[T any] interface {
	HasNext() bool
	ReadBatch(batchSize int64, values []T, defLvls, repLvls []int16) (total int64, valuesRead int, err error)
}

// intFastPath lets leafFilter take integers from the reader's ints
// (Leaf.IntKind); tests turn it off to compare with the plain bytes' way.
var intFastPath = true

// valueBatch is the values a column chunk reader is asked for at once.
const valueBatch = 1024

// readValues reads a column chunk's non-NULL values and hands each to
// each; it returns how many it read.
func readValues[T any](cr batchReader[T], each func(T) error) (int64, error) {
	return readBatches(cr, func(xs []T) error {
		for _, x := range xs {
			if err := each(x); err != nil {
				return err
			}
		}
		return nil
	})
}

// readBatches is readValues handing over a batch of values per call.
func readBatches[T any](cr batchReader[T], each func([]T) error) (int64, error) {
	vals, defs := make([]T, valueBatch), make([]int16, valueBatch)
	var read int64
	for cr.HasNext() {
		total, n, err := cr.ReadBatch(valueBatch, vals, defs, nil)
		if err != nil {
			return read, err
		}
		if total == 0 {
			break // no progress: do not spin on a reader that says it has more
		}
		if err := each(vals[:n]); err != nil {
			return read, err
		}
		read += int64(n)
	}
	return read, nil
}

// widen appends int32s to dst as int64s: sign-extended, or (unsigned) as
// the uint32 their bits spell.
func widen(dst []int64, xs []int32, unsigned bool) []int64 {
	for _, x := range xs {
		if unsigned {
			dst = append(dst, int64(uint32(x)))
		} else {
			dst = append(dst, int64(x))
		}
	}
	return dst
}

// filterLeaf is the flat leaf of a top-level column in a file, when the
// column can have a filter there.
func (fi *fileInfo) filterLeaf(col catalog.Column) (*pqmeta.Leaf, bool) {
	if col.Parent.Known || !filterable(col.Type) {
		return nil, false
	}
	for _, l := range fi.meta.Leaves {
		if len(l.Path) == 1 && types.SameIdent(l.Path[0], col.Name) {
			return l, !l.Repeated && l.Variant == nil && l.Type.Equal(col.Type) && l.ReadsExactly()
		}
	}
	return nil, false
}

// autoFilterColumns picks the columns of a new table that get filters,
// from its first file (see the rule above).
func autoFilterColumns(fi *fileInfo, cols []catalog.Column) map[int64]bool {
	out := map[int64]bool{}
	if fi.obj != nil {
		return out // the data is not fetched (see buildFilters)
	}
	var leaves []*pqmeta.Leaf
	var ts []types.Type
	var ids []int64
	for _, col := range cols {
		if l, ok := fi.filterLeaf(col); ok {
			leaves, ts, ids = append(leaves, l), append(ts, col.Type), append(ids, col.ID)
		}
	}
	if len(leaves) == 0 {
		return out
	}
	fls, nonNull, err := fileFilters(fi.path, fi.id, fi.meta, leaves, ts)
	if err != nil {
		return out
	}
	for i, fl := range fls {
		if fl != nil && fl.Distinct >= AutoFilterMinDistinct && float64(fl.Distinct) >= AutoFilterMinRatio*float64(nonNull[i]) {
			out[ids[i]] = true
		}
	}
	return out
}

// buildFilters builds every file's filters for the chosen columns, in
// parallel; filters[i][columnID].
//
// An object gets filters only for the explicit columns (--filter-columns):
// its whole data is fetched for them into a temporary file, which other
// columns' filters are not worth.
func buildFilters(infos []*fileInfo, cols []catalog.Column, chosen, explicit map[int64]bool, workers int, objects storage.Store) ([]map[int64]*catalog.Filter, error) {
	out := make([]map[int64]*catalog.Filter, len(infos))
	if len(chosen) == 0 {
		for _, fi := range infos {
			fi.meta.Forget()
		}
		return out, nil
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	errs := make([]error, len(infos))
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(workers, len(infos)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				fi := infos[i]
				out[i] = map[int64]*catalog.Filter{}
				var leaves []*pqmeta.Leaf
				var ts []types.Type
				var ids []int64
				for _, col := range cols {
					if !chosen[col.ID] || (fi.obj != nil && !explicit[col.ID]) {
						continue
					}
					// A file whose column differs gets no filter: read when in doubt.
					if l, ok := fi.filterLeaf(col); ok {
						leaves, ts, ids = append(leaves, l), append(ts, col.Type), append(ids, col.ID)
					}
				}
				if len(leaves) == 0 {
					fi.meta.Forget()
					continue
				}
				var fls []*catalog.Filter
				var err error
				if fi.obj != nil {
					fls, err = objectFilters(objects, *fi.obj, leaves, ts)
				} else {
					fls, _, err = fileFilters(fi.path, fi.id, fi.meta, leaves, ts)
				}
				fi.meta.Forget() // the File is all registration needs now
				if err != nil {
					errs[i] = &FileError{Path: fi.path, Err: fmt.Errorf("membership filter: %w", err)}
					continue
				}
				for j, fl := range fls {
					if fl != nil {
						out[i][ids[j]] = fl
					}
				}
			}
		}()
	}
	for i := range infos {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// objectFilters fetches an object (as listed: its ETag) into a temporary
// file and builds its filters from it.
func objectFilters(objects storage.Store, obj storage.Object, leaves []*pqmeta.Leaf, ts []types.Type) ([]*catalog.Filter, error) {
	tmp, err := os.CreateTemp("", "rocklake-filter-*.parquet")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	_, err = objects.Fetch(context.Background(), obj, tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	fls, _, err := fileFilters(tmp.Name(), catalog.FileIdentity{}, nil, leaves, ts)
	return fls, err
}

// filterColumns is the set of columns whose filters this registration
// builds, and of those the ones opts.FilterColumns names (explicit): the
// only ones built for objects, whose data must be fetched for it.
func filterColumns(r *catalog.Reader, t catalog.Table, cols []catalog.Column, first *fileInfo, created bool, opts Options) (chosen, explicit map[int64]bool, _ error) {
	chosen, explicit = map[int64]bool{}, map[int64]bool{}
	for _, name := range opts.FilterColumns {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		var col *catalog.Column
		for i := range cols {
			if !cols[i].Parent.Known && types.SameIdent(cols[i].Name, name) {
				col = &cols[i]
			}
		}
		if col == nil {
			return nil, nil, fmt.Errorf("membership filter: %w %q", catalog.ErrNoSuchColumn, name)
		}
		if !filterable(col.Type) {
			return nil, nil, fmt.Errorf("membership filter on column %q: %s columns have none (integers, VARCHAR, BLOB and UUID do)", col.Name, col.Type)
		}
		chosen[col.ID], explicit[col.ID] = true, true
	}
	if created {
		if !opts.NoAutoFilters {
			for id := range autoFilterColumns(first, cols) {
				chosen[id] = true
			}
		}
		return chosen, explicit, nil
	}
	any := false
	for _, col := range cols {
		if col.Parent.Known || !filterable(col.Type) || chosen[col.ID] {
			continue
		}
		has, err := r.HasFilters(t.ID, col.ID)
		if err != nil {
			return nil, nil, err
		}
		chosen[col.ID] = has
		any = any || has
	}
	if opts.AutoFilters && !any && len(explicit) == 0 {
		for id := range autoFilterColumns(first, cols) {
			chosen[id] = true
		}
	}
	return chosen, explicit, nil
}

// attachFilters hangs a file's filters on its column stats entries.
func attachFilters(nf *catalog.NewFile, cols []catalog.Column, filters map[int64]*catalog.Filter) {
	if len(filters) == 0 {
		return
	}
	for _, col := range cols {
		fl := filters[col.ID]
		if fl == nil {
			continue
		}
		for j := range nf.Columns {
			if len(nf.Columns[j].Path) == 1 && types.SameIdent(nf.Columns[j].Path[0], col.Name) {
				nf.Columns[j].Filter = fl
			}
		}
	}
}
