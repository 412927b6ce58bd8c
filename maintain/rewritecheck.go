package maintain

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/internal/sqllex"
	"github.com/rocklake/rocklake/types"
)

// digestSQL returns one row over exprs, expressions over the slot columns
// of from (exactSQL of each): the row count, for each column the sum of
// DuckDB's hash of every value (NULLs included), and the sum of the hashes
// of whole rows. Row order does not change it; a value lost, added or
// altered does, and so does a value moved to another row (but for a hash
// collision).
func digestSQL(from string, exprs []string) string {
	parts := []string{"count(*)::VARCHAR"}
	for _, x := range exprs {
		parts = append(parts, fmt.Sprintf("coalesce(sum(hash(%s))::VARCHAR, '')", x))
	}
	parts = append(parts, fmt.Sprintf("coalesce(sum(hash(%s))::VARCHAR, '')", strings.Join(exprs, ", ")))
	return "SELECT " + strings.Join(parts, ", ") + " FROM " + from
}

func digest(ctx context.Context, conn *sql.Conn, from string, exprs []string) ([]string, error) {
	out := make([]string, len(exprs)+2)
	ptrs := make([]any, len(out))
	for i := range out {
		ptrs[i] = &out[i]
	}
	if err := conn.QueryRowContext(ctx, digestSQL(from, exprs)).Scan(ptrs...); err != nil {
		return nil, err
	}
	return out, nil
}

// DuckDB's hash() equates -0.0 with +0.0 and every NaN with every other
// (as = does), so a digest of floats alone cannot see a sign or a NaN
// payload lost. A cast to BIT keeps a float's IEEE bits (verified against
// the DuckDB linked: '-0.0'::DOUBLE::BIT has the sign bit set, and a NaN
// read from a file keeps its payload), so exactSQL hashes those instead,
// at any depth of a LIST, ARRAY, STRUCT or MAP. A VARIANT's hash already
// covers its encoded bits.

// exactSQL is an expression over x (of type t) whose hash tells apart
// every value that differs in any bit; depth numbers lambda parameters.
func exactSQL(x string, t types.Type, depth int) string {
	if !hasFloat(t) {
		return x
	}
	l := fmt.Sprintf("l%d", depth)
	switch t.Kind {
	case types.KindFloat, types.KindDouble:
		return "(" + x + ")::BIT"
	case types.KindList, types.KindArray:
		return fmt.Sprintf("list_transform(%s, lambda %s: %s)", x, l, exactSQL(l, *t.Elem, depth+1))
	case types.KindStruct:
		fields := make([]string, len(t.Fields))
		for i, f := range t.Fields {
			name := strings.ReplaceAll(f.Name, "'", "''")
			fields[i] = fmt.Sprintf("'%s': %s", name, exactSQL(fmt.Sprintf("struct_extract(%s, '%s')", x, name), f.Type, depth))
		}
		return fmt.Sprintf("CASE WHEN %s IS NULL THEN NULL ELSE {%s} END", x, strings.Join(fields, ", "))
	case types.KindMap:
		return fmt.Sprintf("CASE WHEN %[1]s IS NULL THEN NULL ELSE list_transform(map_entries(%[1]s), lambda %[2]s: {'k': %[3]s, 'v': %[4]s}) END",
			x, l, exactSQL(l+".key", *t.Key, depth+1), exactSQL(l+".value", *t.Value, depth+1))
	}
	return x
}

// hasFloat reports whether values of t hold a FLOAT or DOUBLE anywhere.
func hasFloat(t types.Type) bool {
	switch t.Kind {
	case types.KindFloat, types.KindDouble:
		return true
	case types.KindList, types.KindArray:
		return t.Elem != nil && hasFloat(*t.Elem)
	case types.KindStruct:
		for _, f := range t.Fields {
			if hasFloat(f.Type) {
				return true
			}
		}
	case types.KindMap:
		return t.Key != nil && t.Value != nil && (hasFloat(*t.Key) || hasFloat(*t.Value))
	}
	return false
}

// slotTypes are the types DuckDB gives the first n slots of from (a type
// rocklake does not parse is Unknown).
func slotTypes(ctx context.Context, conn *sql.Conn, from string, n int) ([]types.Type, error) {
	slots := make([]string, n)
	for i := range slots {
		slots[i] = slot(i)
	}
	rs, err := conn.QueryContext(ctx, "DESCRIBE SELECT "+strings.Join(slots, ", ")+" FROM "+from)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	cols, err := rs.Columns()
	if err != nil {
		return nil, err
	}
	out := make([]types.Type, 0, n)
	for rs.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rs.Scan(ptrs...); err != nil {
			return nil, err
		}
		text, _ := vals[1].(string)
		typ, err := types.ParseType(text)
		if err != nil {
			typ = types.Type{}
		}
		out = append(out, typ)
	}
	if err := rs.Err(); err != nil {
		return nil, err
	}
	if len(out) != n {
		return nil, fmt.Errorf("DESCRIBE gave %d columns, want %d", len(out), n)
	}
	return out, nil
}

// exactSlots is exactSQL of each slot, of the types typs.
func exactSlots(typs []types.Type) []string {
	exprs := make([]string, len(typs))
	for i, t := range typs {
		exprs[i] = exactSQL(slot(i), t, 0)
	}
	return exprs
}

// plainFloats reports whether a COPY of values of t must not use
// dictionary encoding: DuckDB's Parquet writer keys its dictionary by
// value, so -0.0 comes back +0.0 and every NaN the first one's bits
// (verified against the DuckDB linked); a VARIANT may shred to floats.
func plainFloats(t types.Type) bool {
	switch t.Kind {
	case types.KindVariant, types.KindUnknown:
		return true
	case types.KindList, types.KindArray:
		return t.Elem == nil || plainFloats(*t.Elem)
	case types.KindStruct:
		for _, f := range t.Fields {
			if plainFloats(f.Type) {
				return true
			}
		}
		return t.Fields == nil
	case types.KindMap:
		return t.Key == nil || t.Value == nil || plainFloats(*t.Key) || plainFloats(*t.Value)
	}
	return hasFloat(t)
}

// ErrRewriteMismatch reports written files whose content differs from the
// rows read; nothing was committed.
var ErrRewriteMismatch = errors.New("the written files do not hold the rows read")

// checkRewrite compares what a rewrite read (the slot columns of tmp) with
// what it wrote (the new files, read back as the table reads them): row
// count and every column's content digest.
func checkRewrite(ctx context.Context, e *engine.Engine, conn *sql.Conn, st *tableState, tmp string, typs []types.Type, written []string,
	hive *hiveLayout, groups []int) error {
	top := catalog.TopLevel(st.cols)
	exprs := exactSlots(typs)
	read, err := digest(ctx, conn, tmp, exprs)
	if err != nil {
		return fmt.Errorf("digest of the rows read: %w", err)
	}
	src := slotSQL(e, st.t, st.cols, written)
	if hive != nil {
		// The files as they will be registered: each with its partition's
		// values, holding the table's columns as they are now.
		files := make([]catalog.DataFile, len(written))
		for i, g := range groups {
			files[i] = catalog.DataFile{ID: -1 - int64(i), Begin: st.r.Snapshot().ID + 1, PartitionValues: hive.groups[g].values}
		}
		read, err := e.ReadTableFilesSQL(st.r, st.t, st.cols, files, written)
		if err != nil {
			return err
		}
		src = slotsOf(st.cols, read)
	}
	wrote, err := digest(ctx, conn, "("+src+")", exprs)
	if err != nil {
		return fmt.Errorf("digest of the files written: %w", err)
	}
	if read[0] != wrote[0] {
		return fmt.Errorf("%w: read %s rows, the files hold %s", ErrRewriteMismatch, read[0], wrote[0])
	}
	for i, c := range top {
		if read[i+1] != wrote[i+1] {
			hint := ""
			if typs[i].Kind == types.KindVariant {
				// Parquet's variant encoding keeps a DECIMAL's scale and
				// width, not its precision: only a shredded typed_value
				// column does, and DuckDB's writer shreds each path as one
				// type, chosen from the first row group.
				hint = " (a VARIANT's DECIMAL keeps its precision in Parquet only where the writer shreds it: values of other shapes in the same files read back as DECIMAL(38,s))"
			}
			return fmt.Errorf("%w: column %s holds other values than were read (hash sum %s, read %s)%s",
				ErrRewriteMismatch, sqllex.QuoteName(c.Name), wrote[i+1], read[i+1], hint)
		}
	}
	if n := len(top) + 1; read[n] != wrote[n] {
		return fmt.Errorf("%w: every column holds the values read, but the rows pair them differently", ErrRewriteMismatch)
	}
	return nil
}
