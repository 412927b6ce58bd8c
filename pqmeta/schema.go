package pqmeta

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/rocklake/rocklake/types"
)

// Parquet's physical types, converted types and repetitions, by their
// numbers in the format's thrift definition.
const (
	physBoolean = 0
	physInt32   = 1
	physInt64   = 2
	physInt96   = 3
	physFloat   = 4
	physDouble  = 5
	physBinary  = 6
	physFLBA    = 7

	ctUTF8            = 0
	ctMap             = 1
	ctMapKeyValue     = 2
	ctList            = 3
	ctEnum            = 4
	ctDecimal         = 5
	ctDate            = 6
	ctTimeMillis      = 7
	ctTimeMicros      = 8
	ctTimestampMillis = 9
	ctTimestampMicros = 10
	ctUint8           = 11
	ctUint16          = 12
	ctUint32          = 13
	ctUint64          = 14
	ctInt8            = 15
	ctInt16           = 16
	ctInt32           = 17
	ctInt64           = 18
	ctJSON            = 19
	ctBSON            = 20
	ctInterval        = 21

	repRequired = 0
	repOptional = 1
	repRepeated = 2
)

// decodeKind says how a leaf's statistics bytes turn into a value of its
// DuckDB type.
type decodeKind uint8

const (
	decNone          decodeKind = iota // no usable bounds (INT96, INTERVAL, unknown, ...)
	decBool                            // 1 byte
	decInt32                           // 4 bytes little-endian, signed
	decUint32                          // 4 bytes little-endian, unsigned
	decInt64                           // 8 bytes little-endian, signed
	decUint64                          // 8 bytes little-endian, unsigned
	decFloat                           // IEEE 754 binary32
	decDouble                          // IEEE 754 binary64
	decFloat16                         // IEEE 754 binary16 in 2 bytes
	decBytes                           // raw bytes (strings, binary)
	decUUID                            // 16 raw bytes
	decDecimalInt                      // INT32/INT64 unscaled
	decDecimalBinary                   // big-endian two's complement unscaled
	decTimeMillis                      // INT32 ms of day → µs
	decTimeMicros                      // INT64 µs of day
	decTimeNanos                       // INT64 ns of day: exact as TIME_NS, else → µs rounded outward
	decTimestamp                       // INT64 in unitPerSec units since the epoch
)

// sortOrder of a leaf's statistics, as the Parquet format defines it.
type sortOrder uint8

const (
	orderUndefined sortOrder = iota
	orderSigned
	orderUnsigned
)

// Leaf is one primitive column of the file: one column chunk in every row
// group.
type Leaf struct {
	// Index is the leaf's position among the file's leaves, which is its
	// column chunk's position in every row group.
	Index int
	// Path is the column path a table names the leaf by: top-level name,
	// then nested names as the catalog spells them ("element", "key",
	// "value" below lists and maps). It is nil for the leaves of a VARIANT
	// column, whose statistics are not a table column's (see Variant).
	Path []string
	// Type is the DuckDB type the leaf reads as.
	Type types.Type
	// Repeated is set below a list or map: the chunk's counts are per
	// element, not per row.
	Repeated bool
	// Variant places the leaf in a shredded VARIANT column, or is nil.
	Variant *VariantLeaf

	parquet    []string // path_in_schema
	phys       int
	typeLength int32
	dec        decodeKind
	unitPerSec int64 // for decTimestamp: file units per second
	order      sortOrder
	keepDec    decodeKind // a variant leaf's own decoding, for variant stats
}

// Column is a column of the file as DuckDB reads it; File.Columns are the
// top-level ones.
type Column struct {
	Name string
	Type types.Type
	// Leaves are every leaf below the column (or the column itself), in
	// file order.
	Leaves []*Leaf
}

// schemaOf interprets a footer's schema: the top-level columns and every
// leaf, by column chunk index. It never panics on what it does not
// understand: such columns get an Unknown type and no bounds.
func schemaOf(md *metadata.FileMetaData) ([]*Column, []*Leaf, error) {
	els := rawSchema(md)
	if len(els) == 0 {
		return nil, nil, fmt.Errorf("%w: empty schema", ErrCorruptFooter)
	}
	w := &schemaWalker{els: els}
	n := int(els[0].numChildren())
	w.pos = 1
	var cols []*Column
	for range n {
		c, err := w.node(nil, nil, false)
		if err != nil {
			return nil, nil, err
		}
		cols = append(cols, c)
	}
	if w.pos != len(els) {
		return nil, nil, fmt.Errorf("%w: schema has %d elements, %d used", ErrCorruptFooter, len(els), w.pos)
	}
	return cols, w.leaves, nil
}

type schemaWalker struct {
	els    []*rawSchemaElement
	pos    int
	leaves []*Leaf
}

// node reads the element at w.pos and its subtree. catPath is the catalog
// path of the parent, pqPath the Parquet path.
func (w *schemaWalker) node(catPath, pqPath []string, repeated bool) (*Column, error) {
	if w.pos >= len(w.els) {
		return nil, fmt.Errorf("%w: schema ends early", ErrCorruptFooter)
	}
	el := w.els[w.pos]
	w.pos++
	name := el.Name
	myCat := append(append([]string(nil), catPath...), name)
	myPq := append(append([]string(nil), pqPath...), name)
	rep := el.repeated()
	if el.NumChildren == nil || el.numChildren() == 0 && el.Type != nil {
		c, err := w.primitive(el, myCat, myPq, repeated || rep)
		if err != nil {
			return nil, err
		}
		if rep {
			// A repeated primitive without a LIST annotation is a list.
			return w.wrapList(len(catPath), name, c), nil
		}
		return c, nil
	}
	kids := int(el.numChildren())
	lt := el.LogicalType
	ct := -1
	if el.Converted != nil {
		ct = *el.Converted
	}
	var c *Column
	var err error
	switch {
	case lt != nil && lt.LIST, ct == ctList:
		c, err = w.list(name, myCat, myPq, kids, repeated || rep)
	case lt != nil && lt.MAP, ct == ctMap, ct == ctMapKeyValue:
		c, err = w.mapGroup(name, myCat, myPq, kids, repeated || rep)
	case lt != nil && lt.VARIANT:
		c, err = w.variantGroup(name, myCat, myPq, kids, repeated || rep)
	default:
		c, err = w.structGroup(name, myCat, myPq, kids, repeated || rep)
		if err == nil && rep {
			c = w.wrapList(len(catPath), name, c)
		}
	}
	return c, err
}

// wrapList makes a list of a repeated field that has no LIST annotation;
// the catalog names the element "element", just below the list's name.
func (w *schemaWalker) wrapList(at int, name string, elem *Column) *Column {
	elem.Name = "element"
	for _, l := range elem.Leaves {
		p := append(append(append([]string(nil), l.Path[:at+1]...), "element"), l.Path[at+1:]...)
		l.Path = p
		l.Repeated = true
	}
	return &Column{Name: name, Type: types.List(elem.Type), Leaves: elem.Leaves}
}

func (w *schemaWalker) structGroup(name string, cat, pq []string, kids int, repeated bool) (*Column, error) {
	c := &Column{Name: name}
	var fields []types.Field
	for range kids {
		ch, err := w.node(cat, pq, repeated)
		if err != nil {
			return nil, err
		}
		c.Leaves = append(c.Leaves, ch.Leaves...)
		fields = append(fields, types.Field{Name: ch.Name, Type: ch.Type})
	}
	c.Type = types.Type{Kind: types.KindStruct, Fields: fields}
	if len(fields) == 0 {
		c.Type = types.Unknown("parquet_empty_struct")
	}
	return c, nil
}

// list reads a LIST-annotated group, with the format's backward-compatibility
// rules for two-level lists.
func (w *schemaWalker) list(name string, cat, pq []string, kids int, repeated bool) (*Column, error) {
	if kids != 1 {
		return w.unknownGroup(name, cat, pq, kids, repeated) // list group with several children
	}
	rg := w.els[w.pos]
	elemCat := append(append([]string(nil), cat...), "element")
	rgPq := append(append([]string(nil), pq...), rg.Name)
	isRepeated := rg.repeated()
	var elem *Column
	var err error
	switch {
	case !isRepeated:
		return w.unknownGroup(name, cat, pq, kids, repeated) // list without a repeated field
	case rg.NumChildren == nil || rg.numChildren() == 0:
		// Two-level list of primitives: the repeated field is the element.
		w.pos++
		elem, err = w.primitive(rg, elemCat, rgPq, true)
	case rg.LogicalType != nil && (rg.LogicalType.LIST || rg.LogicalType.MAP) ||
		rg.Converted != nil && (*rg.Converted == ctList || *rg.Converted == ctMap || *rg.Converted == ctMapKeyValue):
		// The repeated group is itself a list or map: the element, whatever
		// its name (DuckDB reads parquet-testing's old_list_structure as
		// INTEGER[][]).
		elem, err = w.node(cat, pq, true)
		if err == nil {
			renameTop(elem, cat, "element")
		}
	case rg.numChildren() > 1 || rg.Name == "array" || rg.Name == name+"_tuple":
		// Two-level list of structs: the repeated group is the element.
		w.pos++
		elem, err = w.structGroup("element", elemCat, rgPq, int(rg.numChildren()), true)
	default:
		// Three-level list: repeated group { element }.
		w.pos++
		elem, err = w.node(cat, rgPq, true)
		if err == nil {
			renameTop(elem, cat, "element")
		}
	}
	if err != nil {
		return nil, err
	}
	elem.Name = "element"
	for _, l := range elem.Leaves {
		l.Repeated = true
	}
	return &Column{Name: name, Type: types.List(elem.Type), Leaves: elem.Leaves}, nil
}

// renameTop renames a subtree's root (and the matching element of its
// leaves' catalog paths, just below prefix).
func renameTop(c *Column, prefix []string, name string) {
	c.Name = name
	for _, l := range c.Leaves {
		if len(l.Path) > len(prefix) {
			l.Path[len(prefix)] = name
		}
	}
}

func (w *schemaWalker) mapGroup(name string, cat, pq []string, kids int, repeated bool) (*Column, error) {
	if kids != 1 {
		return w.unknownGroup(name, cat, pq, kids, repeated) // map group with several children
	}
	kv := w.els[w.pos]
	if kv.NumChildren == nil || kv.numChildren() != 2 {
		return w.unknownGroup(name, cat, pq, kids, repeated) // map without key and value
	}
	w.pos++
	kvPq := append(append([]string(nil), pq...), kv.Name)
	key, err := w.node(cat, kvPq, true)
	if err != nil {
		return nil, err
	}
	renameTop(key, cat, "key")
	val, err := w.node(cat, kvPq, true)
	if err != nil {
		return nil, err
	}
	renameTop(val, cat, "value")
	c := &Column{Name: name}
	c.Leaves = append(append(c.Leaves, key.Leaves...), val.Leaves...)
	for _, l := range c.Leaves {
		l.Repeated = true
	}
	kt, vt := key.Type, val.Type
	c.Type = types.Type{Kind: types.KindMap, Key: &kt, Value: &vt}
	return c, nil
}

// unknownGroup consumes a group rocklake cannot map; its leaves keep no
// bounds and the column is stored with an Unknown type.
func (w *schemaWalker) unknownGroup(name string, cat, pq []string, kids int, repeated bool) (*Column, error) {
	c, err := w.structGroup(name, cat, pq, kids, repeated)
	if err != nil {
		return nil, err
	}
	for _, l := range c.Leaves {
		l.dec = decNone
		l.Repeated = true
	}
	c.Type = types.Unknown("parquet_unsupported_group")
	return c, nil
}

// primitive maps a leaf's physical and logical (or converted) type to a
// DuckDB type and to how its statistics decode.
func (w *schemaWalker) primitive(el *rawSchemaElement, cat, pq []string, repeated bool) (*Column, error) {
	if el.Type == nil {
		return nil, fmt.Errorf("%w: leaf %q has no physical type", ErrCorruptFooter, strings.Join(pq, "."))
	}
	phys := *el.Type
	if phys < physBoolean || phys > physFLBA {
		return nil, fmt.Errorf("%w: leaf %q has physical type %d", ErrCorruptFooter, strings.Join(pq, "."), phys)
	}
	l := &Leaf{Index: len(w.leaves), Path: cat, Repeated: repeated, parquet: pq, phys: phys}
	if el.TypeLength != nil {
		l.typeLength = *el.TypeLength
	}
	mapLeafType(el, l)
	w.leaves = append(w.leaves, l)
	return &Column{Name: el.Name, Type: l.Type, Leaves: []*Leaf{l}}, nil
}

func mapLeafType(el *rawSchemaElement, l *Leaf) {
	set := func(t types.Type, d decodeKind, o sortOrder) { l.Type, l.dec, l.order = t, d, o }
	simple := func(k types.Kind) types.Type { return types.Simple(k) }
	ct := -1
	if el.Converted != nil {
		ct = *el.Converted
	}
	lt := el.LogicalType
	if lt != nil && lt.unknown {
		// A logical type this reader does not know (a newer format): DuckDB
		// reads the physical type; its bounds follow an order nobody
		// stated, so they are never used.
		defer func() { l.dec, l.order = decNone, orderUndefined }()
		lt, ct = nil, -1
	}
	decimal := func(p, s int32) bool {
		if p < 1 || p > 38 || s < 0 || s > p {
			set(types.Unknown(fmt.Sprintf("parquet_decimal(%d, %d)", p, s)), decNone, orderUndefined)
			return false
		}
		return true
	}
	switch {
	case lt != nil && lt.DECIMAL != nil, ct == ctDecimal:
		p, s := el.precision(), el.scale()
		if lt != nil && lt.DECIMAL != nil {
			p, s = lt.DECIMAL.Precision, lt.DECIMAL.Scale
		}
		if !decimal(p, s) {
			return
		}
		t := types.Decimal(int(p), int(s))
		switch l.phys {
		case physInt32, physInt64:
			set(t, decDecimalInt, orderSigned)
		case physBinary, physFLBA:
			set(t, decDecimalBinary, orderSigned)
		default:
			set(types.Unknown("parquet_decimal_on_"+physName(l.phys)), decNone, orderUndefined)
		}
		return
	}
	switch l.phys {
	case physBoolean:
		set(simple(types.KindBoolean), decBool, orderSigned)
	case physInt32:
		switch {
		case lt != nil && lt.INTEGER != nil:
			set(intType(lt.INTEGER.BitWidth, lt.INTEGER.IsSigned))
		case ct == ctInt8:
			set(intType(8, true))
		case ct == ctInt16:
			set(intType(16, true))
		case ct == ctUint8:
			set(intType(8, false))
		case ct == ctUint16:
			set(intType(16, false))
		case ct == ctUint32:
			set(intType(32, false))
		case lt != nil && lt.DATE, ct == ctDate:
			set(simple(types.KindDate), decInt32, orderSigned)
		case lt != nil && lt.TIME != nil:
			set(timeType(lt.TIME.IsAdjustedToUTC), decTimeMillis, orderSigned)
		case ct == ctTimeMillis:
			set(simple(types.KindTime), decTimeMillis, orderSigned)
		default:
			set(simple(types.KindInteger), decInt32, orderSigned)
		}
	case physInt64:
		switch {
		case lt != nil && lt.INTEGER != nil:
			set(intType(lt.INTEGER.BitWidth, lt.INTEGER.IsSigned))
		case ct == ctUint64:
			set(intType(64, false))
		case lt != nil && lt.TIMESTAMP != nil:
			unit := lt.TIMESTAMP.Unit
			switch {
			case unit != nil && unit.MILLIS:
				l.unitPerSec = 1_000
			case unit != nil && unit.NANOS:
				l.unitPerSec = 1_000_000_000
			default:
				l.unitPerSec = 1_000_000
			}
			set(timestampType(lt.TIMESTAMP.IsAdjustedToUTC, l.unitPerSec), decTimestamp, orderSigned)
		case ct == ctTimestampMillis:
			l.unitPerSec = 1_000
			set(simple(types.KindTimestamp), decTimestamp, orderSigned)
		case ct == ctTimestampMicros:
			l.unitPerSec = 1_000_000
			set(simple(types.KindTimestamp), decTimestamp, orderSigned)
		case lt != nil && lt.TIME != nil:
			t, d := timeType(lt.TIME.IsAdjustedToUTC), decTimeMicros
			if lt.TIME.Unit != nil && lt.TIME.Unit.NANOS {
				d = decTimeNanos
				if !lt.TIME.IsAdjustedToUTC {
					t = simple(types.KindTimeNS)
				}
			}
			set(t, d, orderSigned)
		case ct == ctTimeMicros:
			set(simple(types.KindTime), decTimeMicros, orderSigned)
		default:
			set(simple(types.KindBigInt), decInt64, orderSigned)
		}
	case physInt96:
		// Legacy nanosecond timestamps: their statistics were never
		// written consistently, so no bounds. DuckDB reads them as
		// TIMESTAMP (µs), which also holds the dates beyond the
		// nanosecond range that Spark writes.
		set(simple(types.KindTimestamp), decNone, orderUndefined)
	case physFloat:
		set(simple(types.KindFloat), decFloat, orderSigned)
	case physDouble:
		set(simple(types.KindDouble), decDouble, orderSigned)
	case physBinary, physFLBA:
		switch {
		case lt != nil && lt.UUID && l.phys == physFLBA && l.typeLength == 16:
			set(simple(types.KindUUID), decUUID, orderUnsigned)
		case lt != nil && lt.FLOAT16 && l.phys == physFLBA && l.typeLength == 2:
			set(simple(types.KindFloat), decFloat16, orderSigned)
		case lt != nil && (lt.STRING || lt.ENUM), ct == ctUTF8, ct == ctEnum:
			set(simple(types.KindVarchar), decBytes, orderUnsigned)
		case lt != nil && lt.JSON, ct == ctJSON:
			set(simple(types.KindJSON), decNone, orderUnsigned)
		case lt != nil && lt.BSON, ct == ctBSON:
			// DuckDB refuses to read a file with a BSON column at all.
			set(types.Unknown("parquet_bson"), decNone, orderUndefined)
		case lt != nil && (lt.GEOMETRY || lt.GEOGRAPHY):
			set(simple(types.KindGeometry), decNone, orderUndefined)
		case ct == ctInterval:
			set(simple(types.KindInterval), decNone, orderUndefined)
		case lt != nil && lt.VARIANT:
			set(simple(types.KindVariant), decNone, orderUndefined)
		default:
			set(simple(types.KindBlob), decBytes, orderUnsigned)
		}
	}
}

func intType(bits int8, signed bool) (types.Type, decodeKind, sortOrder) {
	k := map[bool]map[int8]types.Kind{
		true:  {8: types.KindTinyInt, 16: types.KindSmallInt, 32: types.KindInteger, 64: types.KindBigInt},
		false: {8: types.KindUTinyInt, 16: types.KindUSmallInt, 32: types.KindUInteger, 64: types.KindUBigInt},
	}[signed][bits]
	if k == types.KindUnknown {
		return types.Unknown(fmt.Sprintf("parquet_int(%d, %v)", bits, signed)), decNone, orderUndefined
	}
	d := decInt32
	switch {
	case bits == 64 && signed:
		d = decInt64
	case bits == 64:
		d = decUint64
	case !signed:
		d = decUint32
	}
	o := orderSigned
	if !signed {
		o = orderUnsigned
	}
	return types.Simple(k), d, o
}

func timeType(utc bool) types.Type {
	if utc {
		return types.Simple(types.KindTimeTZ)
	}
	return types.Simple(types.KindTime)
}

// timestampType maps a Parquet timestamp to the type DuckDB reads it as:
// adjusted-to-UTC is TIMESTAMPTZ (microseconds, whatever the file's unit,
// so nanoseconds are cut); local time in nanoseconds is TIMESTAMP_NS, in
// milliseconds or microseconds TIMESTAMP.
func timestampType(utc bool, perSec int64) types.Type {
	switch {
	case utc:
		return types.Simple(types.KindTimestampTZ)
	case perSec == 1_000_000_000:
		return types.Simple(types.KindTimestampNS)
	}
	return types.Simple(types.KindTimestamp)
}

func physName(p int) string {
	return [...]string{"BOOLEAN", "INT32", "INT64", "INT96", "FLOAT", "DOUBLE", "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"}[p]
}
