package pqmeta

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
	"os"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

// FileIndex reads what lies below a file's row-group statistics: the page
// index (column index and offset index) and bloom filters. Everything it
// cannot read is reported as unknown, never as a reason to skip.
type FileIndex struct {
	rdr  *file.Reader
	file *File
}

// OpenIndex opens the Parquet file at path for its page index and bloom
// filters. arrow-go can panic on schemas and indexes it does not
// understand: that is an error here.
func OpenIndex(path string) (fx *FileIndex, err error) {
	defer func() {
		if r := recover(); r != nil {
			fx, err = nil, fmt.Errorf("%s: arrow-go: %v", path, r)
		}
	}()
	// A registered file replaced by a named pipe must not hang a plan.
	f, err := Open(path, FileIdentity{})
	if errors.Is(err, ErrNotRegular) {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err != nil {
		return nil, err
	}
	return openIndexFile(f, path)
}

// openIndexFile is OpenIndexAt of an open file, which it closes on an
// error.
func openIndexFile(f *os.File, path string) (*FileIndex, error) {
	fx, err := OpenIndexAt(f, path)
	if err != nil {
		f.Close()
	}
	return fx, err
}

// OpenIndexAt is OpenIndex of a file read through r (an object read by
// ranged requests; Close closes r when it is an io.Closer). name names it
// in errors.
func OpenIndexAt(r parquet.ReaderAtSeeker, name string) (fx *FileIndex, err error) {
	defer func() {
		if p := recover(); p != nil {
			fx, err = nil, fmt.Errorf("%s: arrow-go: %v", name, p)
		}
	}()
	rdr, err := file.NewParquetReader(r)
	if err != nil {
		return nil, err
	}
	meta, err := fromMetadata(rdr.MetaData())
	if err != nil {
		rdr.Close()
		return nil, err
	}
	return &FileIndex{rdr: rdr, file: meta}, nil
}

// Close closes the file.
func (fx *FileIndex) Close() error { return fx.rdr.Close() }

// leaf is the flat leaf a table column reads, when its statistics can be
// given in the table column's type.
func (fx *FileIndex) leaf(path []string, as types.Type) (*Leaf, bool) {
	l, ok := fx.file.Leaf(path)
	return l, ok && !l.Repeated && Fits(l.Type, as)
}

// Page is one data page of a column: its rows within the row group and its
// statistics in the table column's type.
type Page struct {
	FirstRow int64 // within the row group
	Rows     int64
	Stats    stats.Column
}

// Pages returns the pages, in row group rg, of the leaf a table column's
// path names, with their statistics in the column's type as; nil when the
// file has no usable page index for it.
func (fx *FileIndex) Pages(rg int, path []string, as types.Type) (pages []Page, err error) {
	defer func() {
		if r := recover(); r != nil {
			pages, err = nil, fmt.Errorf("page index: %v", r)
		}
	}()
	l, ok := fx.leaf(path, as)
	if !ok || rg < 0 || rg >= len(fx.file.RowGroups) {
		return nil, nil
	}
	pir := fx.rdr.GetPageIndexReader()
	if pir == nil {
		return nil, nil
	}
	rgr, err := pir.RowGroup(rg)
	if err != nil || rgr == nil {
		return nil, err
	}
	ci, err := rgr.GetColumnIndex(l.Index)
	if err != nil || ci == nil {
		return nil, err
	}
	oi, err := rgr.GetOffsetIndex(l.Index)
	if err != nil || oi == nil {
		return nil, err
	}
	locs := oi.GetPageLocations()
	nulls, mins, maxs := ci.GetNullPages(), ci.GetMinValues(), ci.GetMaxValues()
	if len(locs) != len(nulls) || len(mins) != len(nulls) || len(maxs) != len(nulls) {
		return nil, errors.New("page index: column and offset index disagree on the page count")
	}
	var counts []int64
	if ci.IsSetNullCounts() {
		counts = ci.GetNullCounts()
	}
	total := fx.file.RowGroups[rg].Rows
	for i, loc := range locs {
		first := loc.FirstRowIndex
		end := total
		if i+1 < len(locs) {
			end = locs[i+1].FirstRowIndex
		}
		if first < 0 || end < first || end > total {
			return nil, errors.New("page index: page rows out of order")
		}
		rows := end - first
		rs := &rawStats{}
		if !nulls[i] {
			rs.MinValue, rs.MaxValue = mins[i], maxs[i]
		}
		if counts != nil {
			nc := counts[i]
			rs.NullCount = &nc
		}
		ch := Chunk{hasMeta: true, Values: rows, stats: rs}
		// No writer rule here: "bounds mean no NaN" was verified for
		// DuckDB's row-group statistics, not for page indexes.
		st := chunkStats(l, &ch, fx.file.order(l.Index), rows, writer{createdBy: fx.file.writer.createdBy})
		if nulls[i] {
			st.NullCount, st.ValueCount = stats.Known(rows), stats.Known[int64](0)
			st.ContainsNull = stats.Known(rows > 0)
			st.ContainsNaN = stats.Known(false)
		}
		st.DistinctCount = stats.Maybe[int64]{}
		pages = append(pages, Page{FirstRow: first, Rows: rows, Stats: toTableType(st, l.Type, as)})
	}
	return pages, nil
}

// BloomAbsent reports whether row group rg's bloom filter for the leaf a
// table column's path names proves v, a value of the column's type as,
// absent. Without a filter, or when the value's bytes as the writer hashed
// them cannot be known, it answers false.
func (fx *FileIndex) BloomAbsent(rg int, path []string, as types.Type, v types.Value) (absent bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			absent, err = false, fmt.Errorf("bloom filter: %v", r)
		}
	}()
	l, ok := fx.leaf(path, as)
	if !ok {
		return false, nil
	}
	b, ok := plainBytes(l, as, v)
	if !ok {
		return false, nil
	}
	bfr := fx.rdr.GetBloomFilterReader()
	if bfr == nil {
		return false, nil
	}
	rgr, err := bfr.RowGroup(rg)
	if err != nil || rgr == nil {
		return false, err
	}
	bf, err := rgr.GetColumnBloomFilter(l.Index)
	if err != nil || bf == nil {
		return false, err
	}
	return !bf.CheckHash(bf.Hasher().Sum64(b)), nil
}

// plainBytes is the one PLAIN encoding of the file's physical column that
// DuckDB reads as the table value v, which is what a bloom filter hashes:
// small integers widened to INT32, decimals at their physical width,
// times and timestamps in the unit the file stores. It fails ("may match")
// unless exactly one stored value reads as v: the read of the physical
// value as the file's type and the cast from that type to the table's must
// both be one-to-one where v is concerned. Many stored values read as one
// table value when DuckDB rounds or cuts them: a decimal(10,3) 7.005 and
// 7.014 are both 7.01 in decimal(10,2), and the nanoseconds of a Parquet
// TIMESTAMP(NANOS) are cut on the way to TIMESTAMP or to TIMESTAMPTZ (a
// UTC-adjusted column, even with no schema change); one probe cannot cover
// them. Floats fail too: ±0.0 are two encodings of one value.
func plainBytes(l *Leaf, tableType types.Type, v types.Value) ([]byte, bool) {
	le32 := func(x uint32) []byte { return binary.LittleEndian.AppendUint32(nil, x) }
	le64 := func(x uint64) []byte { return binary.LittleEndian.AppendUint64(nil, x) }
	switch l.dec {
	case decTimeMillis, decTimeMicros, decTimeNanos:
		x, ok := storedTime(l, tableType, v)
		if !ok {
			return nil, false
		}
		if l.dec == decTimeMillis {
			return le32(uint32(int32(x))), true
		}
		return le64(uint64(x)), true
	case decTimestamp:
		x, ok := storedTimestamp(l, tableType, v)
		if !ok {
			return nil, false
		}
		return le64(uint64(x)), true
	}
	if !l.Type.Equal(tableType) {
		fv, ok := toFileType(v, tableType, l.Type)
		if !ok {
			return nil, false
		}
		v = fv
	}
	switch l.dec {
	case decInt32:
		return le32(uint32(int32(v.Int64()))), true
	case decUint32:
		return le32(uint32(v.Uint64())), true
	case decInt64:
		return le64(uint64(v.Int64())), true
	case decUint64:
		return le64(v.Uint64()), true
	case decFloat:
		if v.F == 0 || math.IsNaN(v.F) {
			return nil, false
		}
		return le32(math.Float32bits(float32(v.F))), true
	case decDouble:
		if v.F == 0 || math.IsNaN(v.F) {
			return nil, false
		}
		return le64(math.Float64bits(v.F)), true
	case decBytes, decUUID:
		return v.B, true
	case decDecimalInt:
		if l.phys == physInt32 {
			return le32(uint32(int32(v.Int64()))), true
		}
		return le64(uint64(v.Int64())), true
	case decDecimalBinary:
		if l.phys != physFLBA || l.typeLength <= 0 || l.typeLength > 16 {
			return nil, false
		}
		z := v.I.Big()
		if z.Sign() < 0 {
			z.Add(z, new(big.Int).Lsh(big.NewInt(1), uint(8*l.typeLength)))
		}
		out := make([]byte, l.typeLength)
		z.FillBytes(out)
		return out, true
	}
	return nil, false
}

// timeUnit is the units per second of a time-of-day kind.
func timeUnit(k types.Kind) int64 {
	switch k {
	case types.KindTime, types.KindTimeTZ:
		return 1_000_000
	case types.KindTimeNS:
		return 1_000_000_000
	}
	return 0
}

// storedTime is the stored count (of the file's unit) that reads as the
// table's time v, when exactly one does: the file's unit must be no finer
// than the type DuckDB reads it as and than the table's, or values were
// rounded on the way.
func storedTime(l *Leaf, tableType types.Type, v types.Value) (int64, bool) {
	stored := map[decodeKind]int64{decTimeMillis: 1_000, decTimeMicros: 1_000_000, decTimeNanos: 1_000_000_000}[l.dec]
	read, table := timeUnit(l.Type.Kind), timeUnit(tableType.Kind)
	if read == 0 || table == 0 || stored > read || stored > table || !Fits(l.Type, tableType) {
		return 0, false
	}
	if (l.Type.Kind == types.KindTimeTZ) != (tableType.Kind == types.KindTimeTZ) || v.Offset != 0 {
		// A file's TIMETZ values are at offset +00; DuckDB holds a value
		// at another offset unequal to all of them, so there is nothing to
		// probe (and no reason to trust a guess).
		return 0, false
	}
	x := v.Int64()
	if x%(table/stored) != 0 {
		return 0, false
	}
	return x / (table / stored), true
}

// storedTimestamp is the stored count that reads as the table's timestamp
// v, when exactly one does (see storedTime). Infinities are never probed.
func storedTimestamp(l *Leaf, tableType types.Type, v types.Value) (int64, bool) {
	okRead, read := unitOf(l.Type.Kind)
	okTable, table := unitOf(tableType.Kind)
	if !okRead || !okTable || l.unitPerSec <= 0 || l.unitPerSec > read || l.unitPerSec > table || !Fits(l.Type, tableType) {
		return 0, false
	}
	x := v.Int64()
	if x == timestampInf || x == -timestampInf || x%(table/l.unitPerSec) != 0 {
		return 0, false
	}
	return x / (table / l.unitPerSec), true
}

// toFileType converts a value of the table's type back to the file's when
// DuckDB's cast from the file's type is one-to-one (a wider integer, a
// decimal of a larger scale) and v is in its image; never where the cast
// rounds, for then several file values read as v.
func toFileType(v types.Value, tableType, fileType types.Type) (types.Value, bool) {
	fc, ok := types.CodecFor(fileType)
	if !ok {
		return types.Value{}, false
	}
	tk, fk := tableType.Kind, fileType.Kind
	switch {
	case isSigned(tk) && isSigned(fk):
		_, err := fc.Encode(v)
		return v, err == nil
	case isSigned(tk) && isUnsigned(fk):
		if v.I.Hi < 0 {
			return types.Value{}, false
		}
		x := types.Uint128Value(types.Uint128{Hi: uint64(v.I.Hi), Lo: v.I.Lo})
		_, err := fc.Encode(x)
		return x, err == nil
	case isUnsigned(tk) && isUnsigned(fk):
		_, err := fc.Encode(v)
		return v, err == nil
	case tk == types.KindDecimal && fk == types.KindDecimal:
		if tableType.Scale < fileType.Scale {
			return types.Value{}, false // the cast rounds: not one-to-one
		}
		z, exact := rescale(v.I.Big(), int(fileType.Scale)-int(tableType.Scale), lower)
		x, ok := types.Int128FromBig(z)
		if !exact || !ok {
			return types.Value{}, false
		}
		out := types.Int128Value(x)
		_, err := fc.Encode(out)
		return out, err == nil
	}
	return types.Value{}, false
}
