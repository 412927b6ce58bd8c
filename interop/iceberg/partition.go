package iceberg

import (
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"math"
	"slices"
	"strconv"

	ig "github.com/apache/iceberg-go"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/types"
)

// A table's declared layout (Table.PartitionedBy) is shown as an Iceberg
// partition spec, field by field where Iceberg has the transform (identity,
// year, month, day, hour: not bucket, whose hash is DuckDB's, not
// Iceberg's murmur3). A data file's partition values are not taken from
// how it was written but proven from its statistics: a file is in the
// spec when, for every field, its column holds no NULL and the transform
// of its lower bound equals that of its upper bound (computed by
// iceberg-go's own transforms, so that the client's projections of a
// filter agree with them); since every transform is monotonic, every row
// of the file then has that value. Any other file (one added that spans
// partitions, one written in a session time zone whose days are not UTC's)
// is listed under the unpartitioned spec 0, which every reader keeps: a
// file is never placed in a partition some row of it is not in.
//
// The spec's id and its fields' ids are functions of the fields alone, so
// that a version written once names the same spec as the metadata built
// around it later, whatever versions that lists.

// partitioning is a version's partition spec and the columns behind it.
type partitioning struct {
	spec   ig.PartitionSpec
	fields []partField
}

type partField struct {
	column    catalog.Column
	transform ig.Transform
	fieldID   int
}

var transformCodes = map[string]int{"identity": 0, "year": 1, "month": 2, "day": 3, "hour": 4}

// partitioningOf is the spec a table's declared layout shows as, or nil
// when no field of it has an Iceberg form.
func partitioningOf(t catalog.Table, cols []catalog.Column, s *Schema) *partitioning {
	byID := map[int64]catalog.Column{}
	for _, c := range cols {
		byID[c.ID] = c
	}
	names := map[string]bool{}
	for _, f := range s.Iceberg.Fields() {
		names[f.Name] = true
	}
	p := &partitioning{}
	var pfs []ig.PartitionField
	h := fnv.New32a()
	for _, lf := range t.PartitionedBy {
		code, ok := transformCodes[lf.Transform]
		c, known := byID[lf.ColumnID]
		if !ok || !known || c.Parent.Known || c.Partition != "" {
			continue
		}
		typ, shown := s.types[int(c.ID)]
		if !shown || !identityKind(c.Type) && code == 0 {
			continue
		}
		tr, err := ig.ParseTransform(lf.Transform)
		if err != nil || !tr.CanTransform(typ) {
			continue
		}
		if c.ID > (math.MaxInt32-1000)/8 {
			continue
		}
		fieldID := 1000 + int(c.ID)*8 + code
		if slices.ContainsFunc(p.fields, func(f partField) bool { return f.fieldID == fieldID }) {
			continue
		}
		name := c.Name
		if code != 0 {
			name += "_" + lf.Transform
		}
		// A partition field may share a schema field's name only as that
		// field's identity.
		if (code != 0 && names[name]) || slices.ContainsFunc(pfs, func(f ig.PartitionField) bool { return f.Name == name }) {
			name += "_" + strconv.Itoa(fieldID)
		}
		p.fields = append(p.fields, partField{column: c, transform: tr, fieldID: fieldID})
		pfs = append(pfs, ig.PartitionField{SourceIDs: []int{int(c.ID)}, FieldID: fieldID, Name: name, Transform: tr})
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], uint32(fieldID))
		h.Write(b[:])
		h.Write([]byte(name))
		h.Write([]byte{0})
	}
	if len(p.fields) == 0 {
		return nil
	}
	id := int(h.Sum32() & math.MaxInt32)
	if id == 0 {
		id = 1
	}
	p.spec = ig.NewPartitionSpecID(id, pfs...)
	return p
}

// identityKind says whether a column's bounds prove one identity value:
// not floats (NaN and the two zeros escape bounds), decimals or binaries
// (whose bounds rocklake does not keep as Iceberg literals).
func identityKind(t types.Type) bool {
	switch t.Kind {
	case types.KindBoolean, types.KindTinyInt, types.KindSmallInt, types.KindInteger, types.KindBigInt,
		types.KindUTinyInt, types.KindUSmallInt, types.KindUInteger, types.KindDate, types.KindTime,
		types.KindTimestamp, types.KindTimestampTZ, types.KindTimestampMS, types.KindTimestampS,
		types.KindVarchar, types.KindUUID:
		return true
	}
	return false
}

// value is a field's value for a file whose column, holding no NULL, lies
// between lo and hi, or ok false when the bounds span more than one.
func (f partField) value(lo, hi ig.Literal) (any, bool) {
	a := f.transform.Apply(ig.Optional[ig.Literal]{Valid: true, Val: lo})
	b := f.transform.Apply(ig.Optional[ig.Literal]{Valid: true, Val: hi})
	if !a.Valid || !b.Valid || !a.Val.Equals(b.Val) {
		return nil, false
	}
	return a.Val.Any(), true
}

// specJSON is a version's spec as its record keeps it.
func (p *partitioning) specJSON() json.RawMessage {
	if p == nil {
		return nil
	}
	raw, _ := json.Marshal(p.spec)
	return raw
}
