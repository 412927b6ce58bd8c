package catalog

import (
	"errors"
	"fmt"
	"strings"

	"github.com/rocklake/rocklake/internal/sqllex"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

// ColumnDef defines a column for CreateTable.
type ColumnDef struct {
	Name    string
	Type    string // DuckDB or DuckLake type text
	NotNull bool
	// Partition is "" for a column the files hold, or PartitionHive for
	// one whose values come from each file's key=value directory
	// (NewFile.PartitionValues); only a top-level scalar column can be.
	Partition string
}

// PartitionBy marks the named columns of defs as Hive partition columns
// (PartitionHive): their values come from each file's key=value
// directories, in the declared types. A name that is not in defs is an
// error naming it.
func PartitionBy(defs []ColumnDef, names []string) error {
	for _, n := range names {
		n = strings.TrimSpace(n)
		found := false
		for i := range defs {
			if strings.EqualFold(defs[i].Name, n) {
				defs[i].Partition, found = PartitionHive, true
			}
		}
		if !found {
			var have []string
			for _, d := range defs {
				have = append(have, d.Name)
			}
			return fmt.Errorf("%w partition column %q: not among the columns (%s)", ErrInvalid, n, strings.Join(have, ", "))
		}
	}
	return nil
}

// ParseColumnDefs reads a column list such as
// `id BIGINT, name VARCHAR, tags STRUCT(a INT, "b c" VARCHAR[])`.
func ParseColumnDefs(spec string) ([]ColumnDef, error) {
	const wrap = "struct("
	t, err := types.ParseType(wrap + spec + ")")
	if err != nil {
		var te *types.TypeError
		if errors.As(err, &te) {
			pos := max(te.Pos-len(wrap), 0)
			msg := strings.ReplaceAll(te.Msg, "struct field", "column")
			if pos >= len(spec) {
				// The ")" the parser found is the one wrapped around the
				// list, not one the user wrote.
				pos = len(spec)
				msg = strings.Replace(msg, `found ")"`, "found the end of the list", 1)
			}
			if strings.HasPrefix(msg, `expected ")"`) && topLevel(spec, pos) {
				// The ")" expected is the wrapper's: between two columns
				// of the list itself, a comma is missing.
				msg = `expected "," between columns` + strings.TrimPrefix(msg, `expected ")"`)
			}
			return nil, fmt.Errorf("%w column list %q at offset %d: %s", ErrInvalid, spec, pos, msg)
		}
		return nil, err
	}
	if t.Kind != types.KindStruct || len(t.Fields) == 0 {
		return nil, fmt.Errorf("%w column list %q: want `name TYPE, ...`", ErrInvalid, spec)
	}
	defs := make([]ColumnDef, len(t.Fields))
	for i, f := range t.Fields {
		defs[i] = ColumnDef{Name: f.Name, Type: f.Type.DuckLakeName()}
	}
	return defs, nil
}

// topLevel reports whether offset at of a column list lies outside every
// parenthesis the list opens (strings and quoted names aside).
func topLevel(spec string, at int) bool {
	m := sqllex.Mask(spec[:min(at, len(spec))])
	return strings.Count(m, "(") == strings.Count(m, ")")
}

// PlanColumns returns the columns CreateTable makes from defs (ids, nested
// children, paths) without writing anything, so that files can be checked
// against a table that one commit creates and fills.
func PlanColumns(defs []ColumnDef) ([]Column, error) {
	return buildColumns(0, 0, "", defs)
}

// buildColumns numbers columns from 1 in depth-first order, children after
// their parent: struct fields by name, a list's "element", a map's "key"
// and "value".
func buildColumns(tableID, snap int64, table string, defs []ColumnDef) ([]Column, error) {
	var cols []Column
	seen := map[string]bool{}
	nextCol := int64(1)
	var add func(name string, typ types.Type, parent *int64, order int64, notNull bool)
	add = func(name string, typ types.Type, parent *int64, order int64, notNull bool) {
		cid := nextCol
		nextCol++
		col := Column{ID: cid, TableID: tableID, Order: order, Name: name, Type: typ, Nullable: !notNull, Begin: snap}
		if parent != nil {
			col.Parent = stats.Known(*parent)
		}
		cols = append(cols, col)
		switch typ.Kind {
		case types.KindStruct:
			for i, f := range typ.Fields {
				add(f.Name, f.Type, &cid, int64(i), false)
			}
		case types.KindList, types.KindArray:
			if typ.Elem != nil {
				add("element", *typ.Elem, &cid, 0, false)
			}
		case types.KindMap:
			if typ.Key != nil {
				add("key", *typ.Key, &cid, 0, true)
				add("value", *typ.Value, &cid, 1, false)
			}
		}
	}
	if len(defs) == 0 {
		return nil, fmt.Errorf("%w table %q: no columns", ErrInvalid, table)
	}
	for i, d := range defs {
		if strings.TrimSpace(d.Name) == "" {
			return nil, fmt.Errorf("%w table %q: column %d has no name", ErrInvalid, table, i+1)
		}
		if seen[strings.ToLower(d.Name)] {
			return nil, fmt.Errorf("table %q: column %q: %w", table, d.Name, ErrDuplicate)
		}
		seen[strings.ToLower(d.Name)] = true
		typ, err := types.ParseType(d.Type)
		if err != nil {
			return nil, fmt.Errorf("%w table %q column %q: %v", ErrInvalid, table, d.Name, err)
		}
		switch d.Partition {
		case "":
		case PartitionHive:
			if typ.Kind == types.KindStruct || typ.Kind == types.KindList || typ.Kind == types.KindArray ||
				typ.Kind == types.KindMap || typ.Kind == types.KindVariant {
				return nil, fmt.Errorf("%w table %q column %q: a partition column must be of a scalar type, not %s", ErrInvalid, table, d.Name, typ)
			}
		default:
			return nil, fmt.Errorf("%w table %q column %q: unknown partition kind %q", ErrInvalid, table, d.Name, d.Partition)
		}
		add(d.Name, typ, nil, int64(i), d.NotNull)
		cols[len(cols)-1].Partition = d.Partition
	}
	return treeOrder(cols), nil
}

// NegativeZeroPartition says why a FLOAT or DOUBLE partition value of
// negative zero is refused: DuckDB reads the directory's text with its
// sign, while partitions are kept apart, compared and rewritten by value,
// where -0.0 and 0.0 are one; registered, it would read as 0.0 here and
// as -0.0 in DuckDB.
const NegativeZeroPartition = "a negative zero, which rocklake cannot keep apart from 0.0 as DuckDB's reading of the directory does (it would read as 0.0); name the partition 0.0"
