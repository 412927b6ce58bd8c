package iceberg

import (
	"fmt"
	"sort"
	"strings"

	ig "github.com/apache/iceberg-go"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/types"
)

// Schema is a table's columns as Iceberg sees them, with what could not
// be shown.
type Schema struct {
	Iceberg *ig.Schema
	// Left are the top-level columns with no Iceberg form, each with why:
	// the Iceberg table does not show them.
	Left []LeftColumn
	// Mapping is the name mapping (schema.name-mapping.default) that tells
	// a reader which file column is which field: rocklake's files carry no
	// Iceberg field ids.
	Mapping ig.NameMapping
	// byID are the columns shown, nested ones included, by field id.
	byID map[int]catalog.Column
	// types are the shown columns' Iceberg types by field id.
	types map[int]ig.Type
}

// LeftColumn is a column the Iceberg table does not show.
type LeftColumn struct {
	Name   string `json:"name"`
	Type   string `json:"type"`
	Reason string `json:"reason"`
}

// primitive is the Iceberg type a rocklake type is read as, or "" and why
// not. Only types whose Parquet form an Iceberg reader decodes to the same
// values are mapped: the unsigned 64-bit and 128-bit integers, TIME WITH
// TIME ZONE, TIME_NS, INTERVAL, nanosecond timestamps (format version 3
// only), VARIANT and GEOMETRY have none in format version 2.
func primitive(t types.Type) (ig.Type, string) {
	switch t.Kind {
	case types.KindBoolean:
		return ig.PrimitiveTypes.Bool, ""
	case types.KindTinyInt, types.KindSmallInt, types.KindInteger, types.KindUTinyInt, types.KindUSmallInt:
		return ig.PrimitiveTypes.Int32, ""
	case types.KindBigInt, types.KindUInteger:
		return ig.PrimitiveTypes.Int64, ""
	case types.KindFloat:
		return ig.PrimitiveTypes.Float32, ""
	case types.KindDouble:
		return ig.PrimitiveTypes.Float64, ""
	case types.KindDecimal:
		if t.Precision == 0 || t.Precision > 38 {
			return nil, "no Iceberg decimal of this precision"
		}
		return ig.DecimalTypeOf(int(t.Precision), int(t.Scale)), ""
	case types.KindDate:
		return ig.PrimitiveTypes.Date, ""
	case types.KindTime:
		return ig.PrimitiveTypes.Time, ""
	case types.KindTimestamp, types.KindTimestampMS, types.KindTimestampS:
		return ig.PrimitiveTypes.Timestamp, ""
	case types.KindTimestampTZ:
		return ig.PrimitiveTypes.TimestampTz, ""
	case types.KindUUID:
		return ig.PrimitiveTypes.UUID, ""
	case types.KindVarchar, types.KindJSON:
		return ig.PrimitiveTypes.String, ""
	case types.KindBlob:
		return ig.PrimitiveTypes.Binary, ""
	case types.KindTimestampNS:
		return nil, "nanosecond timestamps need Iceberg format version 3"
	case types.KindVariant, types.KindGeometry:
		return nil, "needs Iceberg format version 3"
	}
	return nil, "no Iceberg type"
}

// TableSchema maps a table's columns (catalog order, children after their
// parents) to an Iceberg schema whose field ids are rocklake's column ids.
// files are the table's live files, whose column names go into the name
// mapping. A column is left out when its type (or a nested part of it)
// has no Iceberg form, when files that predate it read a default other
// than NULL (Iceberg format version 2 would read NULL), and when it comes
// from Hive partition directories (the files do not hold it).
func TableSchema(cols []catalog.Column, schemaID int, fileNames map[int64][]string) (*Schema, error) {
	kids := map[int64][]catalog.Column{}
	var top []catalog.Column
	for _, c := range cols {
		if c.Parent.Known {
			kids[c.Parent.V] = append(kids[c.Parent.V], c)
		} else {
			top = append(top, c)
		}
	}
	s := &Schema{byID: map[int]catalog.Column{}, types: map[int]ig.Type{}}
	var build func(c catalog.Column) (ig.Type, string)
	build = func(c catalog.Column) (ig.Type, string) {
		ch := kids[c.ID]
		switch c.Type.Kind {
		case types.KindStruct:
			if len(ch) == 0 {
				return nil, "a struct with no fields"
			}
			st := &ig.StructType{}
			for _, k := range ch {
				t, why := build(k)
				if t == nil {
					return nil, fmt.Sprintf("field %s: %s", k.Name, why)
				}
				st.FieldList = append(st.FieldList, ig.NestedField{ID: int(k.ID), Name: k.Name, Type: t, Required: !k.Nullable})
			}
			return st, ""
		case types.KindList, types.KindArray:
			if len(ch) != 1 {
				return nil, "a list without its element"
			}
			t, why := build(ch[0])
			if t == nil {
				return nil, "element: " + why
			}
			return &ig.ListType{ElementID: int(ch[0].ID), Element: t, ElementRequired: !ch[0].Nullable}, ""
		case types.KindMap:
			if len(ch) != 2 {
				return nil, "a map without its key and value"
			}
			kt, why := build(ch[0])
			if kt == nil {
				return nil, "key: " + why
			}
			vt, why := build(ch[1])
			if vt == nil {
				return nil, "value: " + why
			}
			return &ig.MapType{KeyID: int(ch[0].ID), KeyType: kt, ValueID: int(ch[1].ID), ValueType: vt, ValueRequired: !ch[1].Nullable}, ""
		}
		return primitive(c.Type)
	}
	var record func(c catalog.Column, t ig.Type)
	record = func(c catalog.Column, t ig.Type) {
		s.byID[int(c.ID)] = c
		s.types[int(c.ID)] = t
		for _, k := range kids[c.ID] {
			if nt, ok := t.(ig.NestedType); ok {
				for _, f := range nt.Fields() {
					if f.ID == int(k.ID) {
						record(k, f.Type)
					}
				}
			}
		}
	}
	var fields []ig.NestedField
	for _, c := range top {
		why := ""
		t, whyType := build(c)
		switch {
		case c.Partition != "":
			why = "its values are in the files' directory names (Hive partitioning), not in the files"
		case c.Default.Known:
			why = fmt.Sprintf("files that predate it read its default %s, which Iceberg format version 2 cannot say", c.Default.V)
		case t == nil:
			why = whyType
		}
		if why != "" {
			s.Left = append(s.Left, LeftColumn{Name: c.Name, Type: types.DisplayName(c.Type), Reason: why})
			continue
		}
		fields = append(fields, ig.NestedField{ID: int(c.ID), Name: c.Name, Type: t, Required: !c.Nullable})
		record(c, t)
	}
	if len(fields) == 0 {
		return nil, fmt.Errorf("no column of the table has an Iceberg form (%s)", describeLeft(s.Left))
	}
	s.Iceberg = ig.NewSchema(schemaID, fields...)
	s.Mapping = nameMapping(top, kids, fileNames)
	if err := ambiguous(s.Mapping); err != nil {
		return nil, err
	}
	return s, nil
}

func describeLeft(left []LeftColumn) string {
	var parts []string
	for _, l := range left {
		parts = append(parts, l.Name+": "+l.Reason)
	}
	return strings.Join(parts, "; ")
}

// nameMapping maps every column to the names files hold it under: its
// own, and for top-level columns the names of files registered before a
// rename (fileNames, by column id). Columns the schema does not show are
// mapped too (an Iceberg reader converts a file's whole schema before it
// projects the table's fields, and fails on a column it cannot place).
func nameMapping(top []catalog.Column, kids map[int64][]catalog.Column, fileNames map[int64][]string) ig.NameMapping {
	var walk func(cs []catalog.Column, topLevel bool) []ig.MappedField
	walk = func(cs []catalog.Column, topLevel bool) []ig.MappedField {
		var out []ig.MappedField
		for _, c := range cs {
			names := []string{c.Name}
			if topLevel {
				for _, n := range fileNames[c.ID] {
					if !contains(names, n) {
						names = append(names, n)
					}
				}
				sort.Strings(names[1:])
			}
			id := int(c.ID)
			out = append(out, ig.MappedField{Names: names, FieldID: &id, Fields: walk(kids[c.ID], false)})
		}
		return out
	}
	return walk(top, true)
}

// ambiguous refuses a mapping in which one name stands for two fields at
// one level (a column renamed, and another added under its old name): a
// reader could take the old column's values for the new one.
func ambiguous(fields []ig.MappedField) error {
	seen := map[string]int{}
	for _, f := range fields {
		for _, n := range f.Names {
			if id, dup := seen[n]; dup && id != *f.FieldID {
				return fmt.Errorf("files hold two columns under the name %q (one was renamed and the other took its name): an Iceberg reader could not tell them apart", n)
			}
			seen[n] = *f.FieldID
		}
		if err := ambiguous(f.Fields); err != nil {
			return err
		}
	}
	return nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// structPath is the names leading to a shown field, or false when the
// field is not one rocklake prunes on: only top-level columns are (a
// struct's fields are read through their column in DuckDB's syntax, which
// the translation does not write yet).
func (s *Schema) structPath(id int) ([]string, bool) {
	c, ok := s.byID[id]
	if !ok || c.Parent.Known {
		return nil, false
	}
	return []string{c.Name}, true
}
