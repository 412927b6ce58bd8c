package pqmeta

import (
	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/rocklake/rocklake/stats"
)

// arrow-go keeps the footer's thrift structs in an internal package: their
// fields can be read, but their types cannot be named outside arrow-go. The
// mirrors below copy what rocklake reads, once per footer.

type rawSchemaElement struct {
	Name        string
	Type        *int
	TypeLength  *int32
	Repetition  *int
	NumChildren *int32
	Converted   *int
	Scale       *int32
	Precision   *int32
	LogicalType *rawLogicalType
}

func (e *rawSchemaElement) numChildren() int32 {
	if e.NumChildren == nil {
		return 0
	}
	return *e.NumChildren
}

func (e *rawSchemaElement) repeated() bool {
	return e.Repetition != nil && *e.Repetition == repRepeated
}

func (e *rawSchemaElement) precision() int32 {
	if e.Precision == nil {
		return 0
	}
	return *e.Precision
}

func (e *rawSchemaElement) scale() int32 {
	if e.Scale == nil {
		return 0
	}
	return *e.Scale
}

type rawTimeUnit struct{ MILLIS, MICROS, NANOS bool }

type rawTimeLike struct {
	IsAdjustedToUTC bool
	Unit            *rawTimeUnit
}

type rawLogicalType struct {
	STRING, MAP, LIST, ENUM, DATE, UNKNOWN, JSON, BSON, UUID, FLOAT16, VARIANT, GEOMETRY, GEOGRAPHY bool

	DECIMAL   *struct{ Precision, Scale int32 }
	TIME      *rawTimeLike
	TIMESTAMP *rawTimeLike
	INTEGER   *struct {
		BitWidth int8
		IsSigned bool
	}
	// unknown is set when the union names none of the above: a logical type
	// newer than this reader.
	unknown bool
}

func intPtr[T ~int32 | ~int64](p *T) *int {
	if p == nil {
		return nil
	}
	v := int(*p)
	return &v
}

func rawSchema(md *metadata.FileMetaData) []*rawSchemaElement {
	out := make([]*rawSchemaElement, 0, len(md.FileMetaData.Schema))
	for _, e := range md.FileMetaData.Schema {
		if e == nil {
			out = append(out, &rawSchemaElement{})
			continue
		}
		r := &rawSchemaElement{
			Name: e.Name, Type: intPtr(e.Type), TypeLength: e.TypeLength, Repetition: intPtr(e.RepetitionType),
			NumChildren: e.NumChildren, Converted: intPtr(e.ConvertedType), Scale: e.Scale, Precision: e.Precision,
		}
		if lt := e.LogicalType; lt != nil {
			m := &rawLogicalType{
				STRING: lt.STRING != nil, MAP: lt.MAP != nil, LIST: lt.LIST != nil, ENUM: lt.ENUM != nil,
				DATE: lt.DATE != nil, UNKNOWN: lt.UNKNOWN != nil, JSON: lt.JSON != nil, BSON: lt.BSON != nil,
				UUID: lt.UUID != nil, FLOAT16: lt.FLOAT16 != nil, VARIANT: lt.VARIANT != nil,
				GEOMETRY: lt.GEOMETRY != nil, GEOGRAPHY: lt.GEOGRAPHY != nil,
			}
			if d := lt.DECIMAL; d != nil {
				m.DECIMAL = &struct{ Precision, Scale int32 }{d.Precision, d.Scale}
			}
			if t := lt.TIME; t != nil {
				m.TIME = &rawTimeLike{IsAdjustedToUTC: t.IsAdjustedToUTC}
				if u := t.Unit; u != nil {
					m.TIME.Unit = &rawTimeUnit{u.MILLIS != nil, u.MICROS != nil, u.NANOS != nil}
				}
			}
			if t := lt.TIMESTAMP; t != nil {
				m.TIMESTAMP = &rawTimeLike{IsAdjustedToUTC: t.IsAdjustedToUTC}
				if u := t.Unit; u != nil {
					m.TIMESTAMP.Unit = &rawTimeUnit{u.MILLIS != nil, u.MICROS != nil, u.NANOS != nil}
				}
			}
			if i := lt.INTEGER; i != nil {
				m.INTEGER = &struct {
					BitWidth int8
					IsSigned bool
				}{i.BitWidth, i.IsSigned}
			}
			m.unknown = !(m.STRING || m.MAP || m.LIST || m.ENUM || m.DATE || m.UNKNOWN || m.JSON || m.BSON ||
				m.UUID || m.FLOAT16 || m.VARIANT || m.GEOMETRY || m.GEOGRAPHY) &&
				m.DECIMAL == nil && m.TIME == nil && m.TIMESTAMP == nil && m.INTEGER == nil
			r.LogicalType = m
		}
		out = append(out, r)
	}
	return out
}

// rawStats mirrors the thrift Statistics of one column chunk.
type rawStats struct {
	Min, Max           []byte // deprecated fields, signed order of the physical type
	MinValue, MaxValue []byte
	NullCount          *int64
	DistinctCount      *int64
	NanCount           *int64
	IsMinExact         *bool
	IsMaxExact         *bool
}

// columnOrder of a leaf, as the footer's column_orders say.
type columnOrder uint8

const (
	columnOrderMissing columnOrder = iota // no column_orders in the footer
	columnOrderUnknown                    // an order this reader does not know
	columnOrderType                       // TYPE_ORDER
	columnOrderIEEE754                    // IEEE_754_TOTAL_ORDER
)

func rawColumnOrders(md *metadata.FileMetaData) []columnOrder {
	cos := md.FileMetaData.ColumnOrders
	if cos == nil {
		return nil
	}
	out := make([]columnOrder, len(cos))
	for i, co := range cos {
		switch {
		case co == nil:
			out[i] = columnOrderUnknown
		case co.TYPE_ORDER != nil:
			out[i] = columnOrderType
		case co.IEEE_754_TOTAL_ORDER != nil:
			out[i] = columnOrderIEEE754
		default:
			out[i] = columnOrderUnknown
		}
	}
	return out
}

// rowGroups reads the footer's row groups. A chunk keeps its raw
// statistics for ChunkStats; what else a caller may need is copied into
// its exported fields.
func rowGroups(md *metadata.FileMetaData) []RowGroup {
	out := make([]RowGroup, 0, len(md.FileMetaData.RowGroups))
	for _, rg := range md.FileMetaData.RowGroups {
		if rg == nil {
			out = append(out, RowGroup{})
			continue
		}
		r := RowGroup{Rows: rg.NumRows, Chunks: make([]Chunk, len(rg.Columns))}
		for i, cc := range rg.Columns {
			if cc == nil {
				continue
			}
			c := &r.Chunks[i]
			c.ColumnIndex = location(cc.ColumnIndexOffset, cc.ColumnIndexLength)
			c.OffsetIndex = location(cc.OffsetIndexOffset, cc.OffsetIndexLength)
			m := cc.MetaData
			if m == nil {
				continue
			}
			c.hasMeta = true
			c.Values, c.CompressedSize = m.NumValues, m.TotalCompressedSize
			c.BloomFilter = location(m.BloomFilterOffset, m.BloomFilterLength)
			if st := m.Statistics; st != nil {
				c.stats = &rawStats{
					Min: st.Min, Max: st.Max, MinValue: st.MinValue, MaxValue: st.MaxValue,
					NullCount: st.NullCount, DistinctCount: st.DistinctCount, NanCount: st.NanCount,
					IsMinExact: st.IsMinValueExact, IsMaxExact: st.IsMaxValueExact,
				}
				if st.NullCount != nil {
					c.NullCount = stats.Known(*st.NullCount)
				}
			}
		}
		out = append(out, r)
	}
	return out
}

// location records where a page-index structure or bloom filter is. A
// bloom filter written without its length (older writers) gets Length -1:
// present, size unknown until its header is read.
func location(off *int64, length *int32) Location {
	if off == nil || *off < 0 {
		return Location{}
	}
	if length == nil || *length <= 0 {
		return Location{Offset: *off, Length: -1}
	}
	return Location{Offset: *off, Length: int64(*length)}
}
