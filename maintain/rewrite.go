package maintain

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/internal/curve"
	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/internal/sqllex"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

// RewriteResult says what a rewrite (Optimize, MergeSmallFiles) did.
type RewriteResult struct {
	Snapshot    catalog.Snapshot
	FilesBefore int
	FilesAfter  int
	Rows        int64
	Dir         string
	// BytesBefore and BytesAfter total the old and the new files' sizes.
	BytesBefore, BytesAfter int64
}

// sizing says how large the new files are: bytes when positive, else rows
// (default 1,000,000).
type sizing struct{ rows, bytes int64 }

// next is the row count of the next file, given the rows left, the bytes
// per row measured so far (input files, then output files).
func (z sizing) next(left int64, bytesPerRow float64) int64 {
	if z.bytes <= 0 {
		if z.rows <= 0 {
			return min(left, 1_000_000)
		}
		return min(left, z.rows)
	}
	n := int64(1)
	if bytesPerRow > 0 {
		n = max(1, int64(float64(z.bytes)/bytesPerRow))
	}
	// A tail under half a file joins this one rather than making a small
	// file of its own: every file then lies within half a target of it.
	if left-n < n/2 {
		return left
	}
	return n
}

// Inside a rewrite the table's top-level columns go by their positions,
// c0, c1, ... (slot), never by their names: DuckDB resolves a name against
// the user's columns before its own (a column named rowid hides the row
// id), so a name the rewrite adds (rn, curve, k0, ...) must be one no
// column can have. The names come back only when the files are written.

// slot is the name of the i-th top-level column inside a rewrite.
func slot(i int) string { return "c" + strconv.Itoa(i) }

// slotSQL reads files as the table's columns renamed to their slots, by
// position, so that no name is resolved.
func slotSQL(e *engine.Engine, t catalog.Table, cols []catalog.Column, files []string) string {
	return slotsOf(cols, e.ReadFilesSQL(t, cols, files))
}

// slotsOf renames the top-level columns of read to their slots.
func slotsOf(cols []catalog.Column, read string) string {
	top := catalog.TopLevel(cols)
	slots := make([]string, len(top))
	for i := range top {
		slots[i] = slot(i)
	}
	return fmt.Sprintf("SELECT * FROM (%s) AS src(%s)", read, strings.Join(slots, ", "))
}

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

// afterWrite, when set (by tests), sees the written files before they are
// checked: it can damage them as a faulty writer would.
var afterWrite func(written []string)

// afterUpload, when set (by tests), sees the objects a rewrite of objects
// uploaded, before the commit.
var afterUpload func(uploaded []string)

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

type rewriteSpec struct {
	order  []string // slots of the sort columns; empty keeps the present order
	curve  curve.Kind
	sizing sizing
	dir    string
	what   string

	// A write (write.go) gives the rows instead of files: src, a SELECT
	// of the slot columns, read on conn, which holds what src reads.
	src  string
	conn *sql.Conn
	// place is a file whose location the output follows (its object
	// prefix, or its directory when the catalog has no rewrite root): a
	// live file of the table, or the catalog's data root; "" for none.
	place string
	// bytesPerRow guesses the size of the rows before any is written
	// (rewrites measure their input files).
	bytesPerRow float64
	// create, when set, makes the table in the snapshot that registers the
	// files (CREATE TABLE AS): st.t and st.cols are what it will be.
	create []catalog.ColumnDef
	// stage, when set, receives the written and checked files instead of
	// a commit: a transaction's write, registered with the others.
	stage *Staged
	// group, when set, names a column src has beyond the slots: rows with
	// equal values go to files of their own, as a layout's partitions do
	// (a change rewrites each file it touches into its own successor, so
	// that no file spans more than the one it replaces did).
	group string
	// deletes are delete files to record in the commit that registers the
	// new files (an UPDATE or MERGE under merge-on-read).
	deletes []catalog.NewDeleteFile
}

// stageBatch is how many files stageFiles reads per statement (a
// variable for tests).
var stageBatch = 128

// stageFiles reads files (DuckDB reading files[i] at paths[i]) as slot
// columns into the temporary table name on conn, stageBatch files per
// statement, in their order: a file with deleted rows is a scan of its own
// and of its delete file, and DuckDB keeps every scan of a statement open
// at once, so ten thousand of them in one statement run out of file
// descriptors. group, when set, adds each file's index in files as that
// column, for a rewrite of each file into its own successor.
func stageFiles(ctx context.Context, e *engine.Engine, conn *sql.Conn, st *tableState, files []catalog.DataFile, paths []string, name, group string) error {
	for i := 0; i == 0 || i < len(files); i += stageBatch {
		var parts []string
		for j := i; j < min(i+stageBatch, len(files)); j++ {
			read, err := e.ReadTableFilesSQL(st.r, st.t, st.cols, files[j:j+1], paths[j:j+1])
			if err != nil {
				return err
			}
			if group != "" {
				read = fmt.Sprintf("SELECT *, %d AS %s FROM (%s)", j, group, read)
			}
			parts = append(parts, read)
		}
		if len(parts) == 0 {
			parts = append(parts, e.ReadFilesSQL(st.t, st.cols, nil))
		}
		q := fmt.Sprintf("INSERT INTO %s %s", name, slotsOf(st.cols, strings.Join(parts, " UNION ALL ")))
		if i == 0 {
			q = fmt.Sprintf("CREATE OR REPLACE TEMP TABLE %s AS %s", name, slotsOf(st.cols, strings.Join(parts, " UNION ALL ")))
		}
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// hasDeletes says whether any of files has deleted rows at st's snapshot.
func hasDeletes(st *tableState, files []catalog.DataFile) (bool, error) {
	dels, err := st.r.DeleteFiles(st.t.ID)
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(files, func(f catalog.DataFile) bool { _, ok := dels[f.ID]; return ok }), nil
}

// deletesRead is, for each of files, the id of the delete file its rows
// were read less (0: none), which the commit that replaces them checks
// (catalog.Txn.ExpectDeletes): a delete landed since must not be undone.
func deletesRead(st *tableState, files []catalog.DataFile) (map[int64]int64, error) {
	if len(files) == 0 {
		return nil, nil
	}
	dels, err := st.r.DeleteFiles(st.t.ID)
	if err != nil {
		return nil, err
	}
	out := make(map[int64]int64, len(files))
	for _, f := range files {
		out[f.ID] = dels[f.ID].ID
	}
	return out, nil
}

// rewrite writes the rows of files (in sp's order, or in their present
// order) to new files in sp.dir and swaps them in for files in one
// snapshot.
func rewrite(ctx context.Context, e *engine.Engine, st *tableState, files []catalog.DataFile, sp rewriteSpec) (res *RewriteResult, err error) {
	t, cols := st.t, st.cols
	what, dir := sp.what, sp.dir
	paths := make([]string, len(files))
	ids := make([]int64, len(files))
	var inputBytes int64
	var out *objectOutput // set when the table's files are objects: so is the output
	for i, f := range files {
		paths[i], ids[i] = f.Location(t), f.ID
		inputBytes += f.FileSizeBytes
		if catalog.IsObject(paths[i]) {
			if out == nil {
				if out, err = newObjectOutput(ctx, e, st, paths[i], what, dir); err != nil {
					return nil, err
				}
				defer out.close()
			}
			// DuckDB reads the object's local copy, pinned until the
			// rewrite is done.
			local, release, err := e.ObjectCopy(ctx, paths[i], f.FileSizeBytes, f.ETag)
			if err != nil {
				return nil, fmt.Errorf("%s: reading %s: %w", what, paths[i], err)
			}
			defer release()
			paths[i] = local
		} else if err := engine.CheckFile(t, f); err != nil {
			// Its rows would enter the new files, and the table, as if they
			// were the rows registered.
			return nil, fmt.Errorf("%s: %w", what, err)
		}
	}
	hive, err := newHiveLayout(st, files, paths)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	place := sp.place
	if len(paths) > 0 {
		place = files[0].Location(t)
	}
	if sp.src != "" {
		if hive != nil {
			return nil, fmt.Errorf("%s: table %q has Hive partition column %q, whose values its files' key=value directories hold: writing such a table in SQL is not supported yet (declare a layout instead: rocklake table alter %s set partitioned by ...)",
				what, t.Name, catalog.TopLevel(cols)[hive.slots[0]].Name, sqllex.QuoteName(t.Name))
		}
		if catalog.IsObject(place) {
			if out, err = newObjectOutput(ctx, e, st, place, what, dir); err != nil {
				return nil, err
			}
			defer out.close()
		}
	}
	root := ""
	if out != nil {
		dir = out.staging
	} else if dir == "" {
		// Under the catalog's rewrite root, named by the table's id (a
		// table's name may be "../x" or "a/b"). A catalog without a
		// directory (in memory) has no root: the rewrites of its tables
		// share one beside the files, never nested in an earlier one.
		if root = e.Catalog().RewriteRoot(); root == "" {
			if place == "" {
				return nil, fmt.Errorf("%s: table %q has no files, and the catalog neither a data root nor a directory: there is no place to write new files (open the lake with a data root)", what, t.Name)
			}
			base := filepath.Dir(place)
			// Above a partitioned file's key=value directories: the new
			// files get their own.
			for hive != nil && strings.Contains(filepath.Base(base), "=") && filepath.Dir(base) != base {
				base = filepath.Dir(base)
			}
			if catalog.IsRewriteDir(base) {
				root = filepath.Dir(filepath.Dir(base))
			} else {
				root = filepath.Join(base, "_rocklake")
			}
		}
		dir = catalog.DefaultRewriteDir(root, t.ID, st.r.Snapshot().ID, what)
	}
	if hive != nil {
		if err := noKeyValueDirs(dir); err != nil {
			return nil, fmt.Errorf("%s: table %q is partitioned: %w", what, t.Name, err)
		}
	}
	if out == nil {
		err := catalog.MakeRewriteDir(dir, root)
		// Writers from other processes that read the same snapshot pick
		// the same next name: the one that loses takes the one after.
		for n := 0; errors.Is(err, fs.ErrExist) && sp.dir == "" && n < 100; n++ {
			dir = catalog.DefaultRewriteDir(root, t.ID, st.r.Snapshot().ID, what)
			err = catalog.MakeRewriteDir(dir, root)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: output directory: %w", what, err)
		}
	}
	committed := false
	defer func() {
		if !committed {
			// Nothing refers to the new files. The table's directory
			// under the root goes too when it held nothing else.
			os.RemoveAll(dir)
			if root != "" {
				os.Remove(filepath.Dir(dir))
			}
		}
	}()

	conn := sp.conn
	if conn == nil {
		if conn, err = e.DB().Conn(ctx); err != nil {
			return nil, err
		}
		defer conn.Close()
	}
	// One pass into a temporary table, numbered, then one COPY per output
	// file: file boundaries fall at exact row counts and every file holds a
	// contiguous run of the order. Without a sort the numbering is the
	// table's rowid, which follows insertion order: DuckDB keeps the scan's
	// order (preserve_insertion_order, on by default) so rows stay in their
	// files' order and whatever clustering they had survives.
	//
	// The temporary table holds the slot columns (and rn, curve), none
	// named by the user, so its rowid is DuckDB's row id.
	const tmp = "__rocklake_rewrite"
	// Older files of an altered table hold its columns as they were
	// registered: they are read through the table's column mapping.
	src := sp.src
	deleted, err := hasDeletes(st, files)
	if err != nil {
		return nil, err
	}
	switch {
	case src == "" && deleted:
		// Each file with deleted rows is a scan of its own: read a batch
		// at a time (stageFiles).
		const staged = "__rocklake_rewrite_src"
		if err := stageFiles(ctx, e, conn, st, files, paths, staged, ""); err != nil {
			return nil, fmt.Errorf("%s: reading the files: %w", what, err)
		}
		defer conn.ExecContext(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS "+staged)
		src = "SELECT * FROM " + staged
	case src == "":
		read, err := e.ReadTableFilesSQL(st.r, t, cols, files, paths)
		if err != nil {
			return nil, err
		}
		src = slotsOf(cols, read)
	}
	// A table with a declared layout is numbered in two steps: first as
	// any other (into), then by its partition key before that order, so
	// that each partition is a contiguous run of rn and files are cut at
	// its ends too.
	pkeys, ltexts, err := partitionKeys(st)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if sp.group != "" {
		pkeys = append([]string{sp.group}, pkeys...)
	}
	layout := map[string][]catalog.LayoutValue{} // by file name, unique in dir
	if hive != nil {
		var hk []string
		for _, s := range hive.slots {
			hk = append(hk, slot(s))
		}
		pkeys = append(hk, pkeys...)
	}
	into := tmp
	if len(pkeys) > 0 {
		into = tmp + "_in"
	}
	fill := fmt.Sprintf("CREATE OR REPLACE TEMP TABLE %s AS %s", into, src)
	// rn is qualified by the table: the COPY below names its output
	// columns after the user's, and an unqualified ORDER BY rn would sort by
	// a user column named rn (and hand its floats back normalised).
	rn := into + ".rowid + 1"
	if len(sp.order) > 0 {
		// DuckDB sorts on a normalised key and hands the key columns back
		// decoded from it: -0.0 comes back +0.0, every NaN the one NaN.
		// The sort and the ranks therefore read copies of the sort columns
		// (o0, o1, ...), dropped afterwards, and the slots pass through as
		// payload, bit for bit.
		keys := make([]string, len(sp.order))
		copies := make([]string, len(sp.order))
		for i, c := range sp.order {
			keys[i] = fmt.Sprintf("o%d", i)
			copies[i] = c + " AS " + keys[i]
		}
		src = fmt.Sprintf("SELECT *, %s FROM (%s)", strings.Join(copies, ", "), src)
		key := strings.Join(keys, ", ")
		if sp.curve != "" {
			if src, err = curveSQL(ctx, e, sp.curve, keys, src); err != nil {
				return nil, fmt.Errorf("%s: %w", what, err)
			}
			key = curveKey + ", " + key
		}
		// Rows with equal keys are ordered by their content: DuckDB's sort
		// is not stable, and without this the same rows could be cut into
		// files of other sizes from one run to the next.
		var all []string
		for i := range catalog.TopLevel(cols) {
			all = append(all, slot(i))
		}
		key += ", hash(" + strings.Join(all, ", ") + ")"
		fill = fmt.Sprintf("CREATE OR REPLACE TEMP TABLE %s AS SELECT * EXCLUDE (%s), row_number() OVER (ORDER BY %s) AS rn FROM (%s)",
			into, strings.Join(keys, ", "), key, src)
		rn = into + ".rn"
	}
	top := catalog.TopLevel(cols)
	if _, err := conn.ExecContext(ctx, fill); err != nil {
		if sp.src != "" {
			return nil, fmt.Errorf("%s: laying out the rows: %w", what, err)
		}
		return nil, fmt.Errorf("%s: reading the files: %w", what, err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS "+tmp)
	var cuts []int64 // the last rn of each partition, ascending
	if len(pkeys) > 0 {
		defer conn.ExecContext(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS "+into)
		exclude := ""
		if len(sp.order) > 0 {
			exclude = " EXCLUDE (rn)"
		}
		if _, err := conn.ExecContext(ctx, fmt.Sprintf("CREATE OR REPLACE TEMP TABLE %s AS SELECT *%s, row_number() OVER (ORDER BY %s, %s) AS rn FROM %s",
			tmp, exclude, strings.Join(pkeys, ", "), rn, into)); err != nil {
			return nil, fmt.Errorf("%s: laying out the rows by partition: %w", what, err)
		}
		rn = tmp + ".rn"
		prs, err := conn.QueryContext(ctx, fmt.Sprintf("SELECT max(rn) FROM %s GROUP BY %s ORDER BY 1", tmp, strings.Join(pkeys, ", ")))
		if err != nil {
			return nil, fmt.Errorf("%s: partitions: %w", what, err)
		}
		for prs.Next() {
			var end int64
			if err := prs.Scan(&end); err != nil {
				prs.Close()
				return nil, err
			}
			cuts = append(cuts, end)
		}
		prs.Close()
		if err := prs.Err(); err != nil {
			return nil, err
		}
	}
	var rows int64
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM "+tmp).Scan(&rows); err != nil {
		return nil, err
	}
	typs, err := slotTypes(ctx, conn, tmp, len(top))
	if err != nil {
		return nil, fmt.Errorf("%s: types of the rows read: %w", what, err)
	}
	// No bloom filters from DuckDB's writer: DuckDB 1.5.6 probes those of
	// BLOB and float columns wrongly (see engine's noBloomProbe), for any
	// reader that pushes an equality into the scan.
	copyOpts := "FORMAT parquet, WRITE_BLOOM_FILTER false"
	for _, t := range typs {
		if plainFloats(t) {
			copyOpts += ", DICTIONARY_SIZE_LIMIT 0"
			break
		}
	}
	if rows == 0 && sp.src != "" && len(files) == 0 {
		// No rows to write: no file and no snapshot, but a table CREATE
		// TABLE AS makes.
		if sp.create == nil {
			return &RewriteResult{Snapshot: st.r.Snapshot()}, nil
		}
		tx, err := e.Catalog().Begin()
		if err != nil {
			return nil, err
		}
		tx.CreateTable(t.Name, sp.create)
		snap, err := tx.Commit()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		return &RewriteResult{Snapshot: snap}, nil
	}
	read, err := deletesRead(st, files)
	if err != nil {
		return nil, err
	}
	if rows == 0 {
		// Files without rows: nothing to write, only retire them.
		tx, err := e.Catalog().Begin()
		if err != nil {
			return nil, err
		}
		tx.ExpectDeletes(t.Name, read)
		tx.RemoveFiles(t.Name, ids...)
		if len(sp.deletes) > 0 {
			tx.SetDeletes(t.Name, sp.deletes...)
		}
		snap, err := tx.Commit()
		if err != nil {
			return nil, fmt.Errorf("%s: retiring empty files: %w", what, err)
		}
		return &RewriteResult{Snapshot: snap, FilesBefore: len(files), BytesBefore: inputBytes}, nil
	}
	w, err := newArrowWriter(st, hive)
	if err != nil {
		return nil, err
	}
	const groups = "__rocklake_rewrite_groups"
	var writtenGroups []int // the partition of each file written
	if hive != nil {
		if err := hive.groupsTable(ctx, conn, top, groups); err != nil {
			return nil, fmt.Errorf("%s: partitions: %w", what, err)
		}
		defer conn.ExecContext(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS "+groups)
	}
	// With arrow-go, file i is encoded in the background while the rows of
	// file i+1 come out of DuckDB (two files in memory at most); sizing
	// then learns from the files finished so far.
	n := 0
	var written []string
	var outRows, outBytes int64
	type inFlight struct {
		path string
		rows int64
		done chan error
	}
	var pending *inFlight
	finish := func() error {
		if pending == nil {
			return nil
		}
		err := <-pending.done
		if err == nil {
			var fi os.FileInfo
			if fi, err = os.Stat(pending.path); err == nil {
				outRows, outBytes = outRows+pending.rows, outBytes+fi.Size()
			}
		}
		if err != nil {
			err = fmt.Errorf("%s: writing %s: %w", what, pending.path, err)
		}
		pending = nil
		return err
	}
	defer finish() // on an early return, let the writer end before the directory goes
	for off := int64(0); off < rows; {
		bpr := float64(inputBytes) / float64(rows)
		if inputBytes == 0 {
			bpr = sp.bytesPerRow
		}
		if outRows > 0 {
			bpr = float64(outBytes) / float64(outRows)
		}
		step := sp.sizing.next(rows-off, bpr)
		for len(cuts) > 0 && cuts[0] <= off {
			cuts = cuts[1:]
		}
		if len(cuts) > 0 {
			step = min(step, cuts[0]-off) // a file never spans two partitions
		}
		p := filepath.Join(dir, fmt.Sprintf("part-%05d.parquet", n))
		if hive != nil {
			gid, err := hive.groupOf(ctx, conn, groups, tmp, rn, off+1)
			if err != nil {
				return nil, fmt.Errorf("%s: the partition of rows from %d: %w", what, off+1, err)
			}
			sub := filepath.Join(append([]string{dir}, hive.groups[gid].dirs...)...)
			if err := os.MkdirAll(sub, 0o755); err != nil {
				return nil, fmt.Errorf("%s: %w", what, err)
			}
			p = filepath.Join(sub, fmt.Sprintf("part-%05d.parquet", n))
			writtenGroups = append(writtenGroups, gid)
		}
		if len(ltexts) > 0 {
			lv, err := layoutValues(ctx, conn, st, ltexts, tmp, rn, off+1)
			if err != nil {
				return nil, fmt.Errorf("%s: the layout values of rows from %d: %w", what, off+1, err)
			}
			layout[filepath.Base(p)] = lv
		}
		run := fmt.Sprintf("WHERE %s > %d AND %s <= %d", rn, off, rn, off+step)
		where := run + " ORDER BY " + rn
		if w != nil {
			cols, err := w.read(ctx, conn, fmt.Sprintf("FROM %s %s", tmp, where), step)
			if err != nil {
				return nil, fmt.Errorf("%s: reading rows for %s: %w", what, p, err)
			}
			if err := finish(); err != nil {
				release(cols)
				return nil, err
			}
			pending = &inFlight{path: p, rows: step, done: make(chan error, 1)}
			go func(done chan error) {
				defer release(cols)
				done <- pqwrite.Write(p, cols, w.opts)
			}(pending.done)
		} else {
			sel, err := narrowSQL(ctx, conn, top, hive, fmt.Sprintf("FROM %s %s", tmp, run))
			if err != nil {
				return nil, fmt.Errorf("%s: writing %s: %w", what, p, err)
			}
			_, err = conn.ExecContext(ctx, fmt.Sprintf("COPY (SELECT %s FROM %s %s) TO '%s' (%s)",
				sel, tmp, where, strings.ReplaceAll(p, "'", "''"), copyOpts))
			if err != nil {
				return nil, fmt.Errorf("%s: writing %s: %w", what, p, err)
			}
			pending = &inFlight{path: p, rows: step, done: make(chan error, 1)}
			pending.done <- nil
			if err := finish(); err != nil {
				return nil, err
			}
		}
		written = append(written, p)
		off += step
		n++
	}
	if err := finish(); err != nil {
		return nil, err
	}
	if afterWrite != nil {
		afterWrite(written)
	}
	// Nothing is committed unless the files hold exactly the rows read.
	if err := checkRewrite(ctx, e, conn, st, tmp, typs, written, hive, writtenGroups); err != nil {
		return nil, fmt.Errorf("%s: %w; nothing committed, the new files removed", what, err)
	}
	register, addOpts := dir, ingest.Options{Replace: ids, ReplaceDeletes: read, Owner: catalog.OwnerRocklake, Deletes: sp.deletes}
	if sp.src != "" {
		addOpts.Written = true
		addOpts.TableID = t.ID // 0 for CREATE TABLE AS, whose table is made here
		addOpts.AutoFilters = len(st.files) == 0
	}
	if sp.create != nil {
		addOpts.Create, addOpts.CreateColumns = true, sp.create
	}
	if len(layout) > 0 {
		// Every file written holds one value of each field: recorded
		// with it. Names are unique in the output directory (and keep
		// their base name when uploaded).
		addOpts.LayoutValues = func(path string) []catalog.LayoutValue { return layout[filepath.Base(path)] }
	}
	if out != nil {
		// Uploaded before the commit that names them; deleted again
		// unless it happens.
		if err := out.upload(ctx, written); err != nil {
			return nil, fmt.Errorf("%s: %w; nothing committed, the objects uploaded deleted", what, err)
		}
		if afterUpload != nil {
			afterUpload(out.uploaded)
		}
		register, addOpts.Objects = out.prefix, out.store
		defer func() { out.committed = committed }()
	}
	if sp.stage != nil {
		// The files are the transaction's now: its commit registers them,
		// its rollback (Discard) removes them.
		committed = true
		local, prefix := dir, ""
		var store objectStore
		var uploaded []string
		if out != nil {
			local, prefix, store, uploaded = "", out.prefix, out.store, slices.Clone(out.uploaded)
		}
		*sp.stage = Staged{table: t.Name, path: register, opts: addOpts, rows: rows, files: n,
			discard: func() {
				for _, loc := range uploaded {
					_ = store.Delete(context.Background(), loc)
				}
				if local != "" {
					os.RemoveAll(local)
					if root != "" {
						os.Remove(filepath.Dir(local))
					}
				}
			}}
		if out != nil {
			dir = prefix
		}
		return &RewriteResult{FilesAfter: n, Rows: rows, Dir: dir, BytesAfter: outBytes}, nil
	}
	// An interrupt up to here leaves the catalog as it was and removes
	// the new files; past here the commit completes.
	if err := context.Cause(ctx); err != nil {
		return nil, fmt.Errorf("%s: %w; nothing committed, the new files removed", what, err)
	}
	// The new files are rocklake's own: cleanup may delete them, and the
	// directory made for them, once no kept snapshot reads them.
	added, err := ingest.Add(e.Catalog(), t.Name, []string{register}, addOpts)
	if err != nil {
		return nil, fmt.Errorf("%s: registering the new files: %w", what, err)
	}
	committed = true
	if out != nil {
		dir = out.prefix
	}
	if added.Rows != rows {
		// Cannot happen unless the writer's footers lie; the snapshot is
		// made, so say so loudly (the previous snapshot still reads the
		// old files).
		return nil, fmt.Errorf("%s: wrote %d rows but registered %d at snapshot %d", what, rows, added.Rows, added.Snapshot.ID)
	}
	return &RewriteResult{Snapshot: added.Snapshot, FilesBefore: len(files), FilesAfter: n, Rows: rows, Dir: dir,
		BytesBefore: inputBytes, BytesAfter: outBytes}, nil
}

// narrowSQL is the select list of DuckDB's COPY of the rows "<from>": the
// slots, given the table's names back by position. DuckDB writes a HUGEINT
// or UHUGEINT as a DOUBLE, which loses digits and which registration
// refuses; a HUGEINT column is cast to BIGINT, or to UBIGINT, whichever
// holds every value of the file, a UHUGEINT one to UBIGINT (as pqwrite
// writes them: every value a table can hold fits one of them).
func narrowSQL(ctx context.Context, conn *sql.Conn, top []catalog.Column, hive *hiveLayout, from string) (string, error) {
	named := make([]string, len(top))
	var wide []int
	var checks []string
	for i, c := range top {
		if !hive.held(i) {
			continue // a partition column: its values are the file's directories'
		}
		named[i] = slot(i) + " AS " + sqllex.QuoteName(c.Name)
		if k := c.Type.Kind; k == types.KindHugeInt || k == types.KindUHugeInt {
			wide = append(wide, i)
			signed := fmt.Sprintf("%s BETWEEN -9223372036854775808 AND 9223372036854775807", slot(i))
			if k == types.KindUHugeInt {
				signed = "false" // a signed file column never fits an unsigned table column
			}
			checks = append(checks, fmt.Sprintf("coalesce(bool_and(%s), true)", signed),
				fmt.Sprintf("coalesce(bool_and(%s >= 0 AND %[1]s <= 18446744073709551615), true)", slot(i)))
		}
	}
	if len(wide) > 0 {
		fit := make([]bool, len(checks))
		ptrs := make([]any, len(checks))
		for i := range fit {
			ptrs[i] = &fit[i]
		}
		if err := conn.QueryRowContext(ctx, "SELECT "+strings.Join(checks, ", ")+" "+from).Scan(ptrs...); err != nil {
			return "", err
		}
		for j, i := range wide {
			switch {
			case fit[2*j]:
				named[i] = slot(i) + "::BIGINT AS " + sqllex.QuoteName(top[i].Name)
			case fit[2*j+1]:
				named[i] = slot(i) + "::UBIGINT AS " + sqllex.QuoteName(top[i].Name)
			default:
				return "", fmt.Errorf("column %s (%s) holds values no 64-bit Parquet integer type holds together",
					sqllex.QuoteName(top[i].Name), top[i].Type)
			}
		}
	}
	return strings.Join(slices.DeleteFunc(named, func(s string) bool { return s == "" }), ", "), nil
}

// arrowWriter writes rewritten files with arrow-go rather than DuckDB's
// COPY: DuckDB writes no page index, and bloom filters only for
// dictionary-encoded chunks. Rows come out of DuckDB in its text form and
// are parsed back with the column's codec (exact for every type with one:
// the types cross-check against DuckDB tests that round trip).
type arrowWriter struct {
	cols   []catalog.Column
	slots  []int // each column's top-level position: its slot
	codecs []*types.Codec
	opts   pqwrite.Options
}

// Rewritten files: row groups of DuckDB's default size, 64 KiB pages with
// a page index (so a sorted column prunes within row groups), dictionary
// encoding where it pays, and bloom filters for the columns that have
// membership filters (random ids).
const (
	rewriteRowGroupRows = 122_880
	rewritePageBytes    = 64 << 10
)

// newArrowWriter returns nil when a column has a type arrow-go cannot be
// given here (nested, INTERVAL, ...): DuckDB's COPY writes those tables.
func newArrowWriter(st *tableState, hive *hiveLayout) (*arrowWriter, error) {
	w := &arrowWriter{opts: pqwrite.Options{RowGroupRows: rewriteRowGroupRows, PageBytes: rewritePageBytes,
		PageIndex: true, Dictionary: true, Zstd: true}}
	for i, c := range st.cols {
		if c.Parent.Known {
			return nil, nil
		}
		if !hive.held(i) {
			continue // its values are the file's directories'
		}
		w.slots = append(w.slots, i)
		codec, ok := types.CodecFor(c.Type)
		if !ok || !pqwrite.Supported(c.Type) {
			return nil, nil
		}
		w.cols, w.codecs = append(w.cols, c), append(w.codecs, codec)
		has, err := st.r.HasFilters(st.t.ID, c.ID)
		if err != nil {
			return nil, err
		}
		// DuckDB 1.5.6 probes a BLOB column's bloom filter with the hash of
		// the constant's escaped text, dropping matching rows: a reader
		// outside rocklake (DuckLake, DuckDB itself) must find none.
		if has && c.Type.Kind != types.KindBlob {
			w.opts.BloomColumns = append(w.opts.BloomColumns, c.Name)
		}
	}
	return w, nil
}

// read reads the rows "SELECT cols <from>" as columns for pqwrite; from
// holds the table's columns by slot (w.cols are every top-level column).
// Floats come from DuckDB as the driver's float32 and float64, bits
// intact, into arrow arrays (the caller releases them with release);
// DuckDB's text of a float has no NaN sign or payload. Every other type
// comes as text, parsed back with the column's codec.
func (w *arrowWriter) read(ctx context.Context, conn *sql.Conn, from string, rows int64) ([]pqwrite.Column, error) {
	sel := make([]string, len(w.cols))
	out := make([]pqwrite.Column, len(w.cols))
	f32 := make([]*array.Float32Builder, len(w.cols))
	f64 := make([]*array.Float64Builder, len(w.cols))
	defer func() {
		for i := range w.cols {
			if f32[i] != nil {
				f32[i].Release()
			}
			if f64[i] != nil {
				f64[i].Release()
			}
		}
	}()
	for i, c := range w.cols {
		out[i] = pqwrite.Column{Name: c.Name, Type: c.Type}
		switch c.Type.Kind {
		case types.KindFloat:
			sel[i] = slot(w.slots[i])
			f32[i] = array.NewFloat32Builder(memory.DefaultAllocator)
			f32[i].Reserve(int(rows))
		case types.KindDouble:
			sel[i] = slot(w.slots[i])
			f64[i] = array.NewFloat64Builder(memory.DefaultAllocator)
			f64[i].Reserve(int(rows))
		default:
			sel[i] = slot(w.slots[i]) + "::VARCHAR"
			out[i].Values = make([]*types.Value, 0, rows)
		}
	}
	rs, err := conn.QueryContext(ctx, "SELECT "+strings.Join(sel, ", ")+" "+from)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	vals := make([]any, len(w.cols))
	ptrs := make([]any, len(w.cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rs.Next() {
		if err := rs.Scan(ptrs...); err != nil {
			return nil, err
		}
		for i, v := range vals {
			switch {
			case f32[i] != nil:
				switch x := v.(type) {
				case nil:
					f32[i].AppendNull()
				case float32:
					f32[i].Append(x)
				default:
					return nil, fmt.Errorf("column %s: DuckDB gave a %T for a FLOAT", w.cols[i].Name, v)
				}
			case f64[i] != nil:
				switch x := v.(type) {
				case nil:
					f64[i].AppendNull()
				case float64:
					f64[i].Append(x)
				default:
					return nil, fmt.Errorf("column %s: DuckDB gave a %T for a DOUBLE", w.cols[i].Name, v)
				}
			case v == nil:
				out[i].Values = append(out[i].Values, nil)
			default:
				text, ok := v.(string)
				if !ok {
					return nil, fmt.Errorf("column %s: DuckDB gave a %T for text", w.cols[i].Name, v)
				}
				x, err := parseText(w.codecs[i], w.cols[i].Type.Kind, text)
				if err != nil {
					return nil, fmt.Errorf("column %s: DuckDB's text %q does not parse back: %w", w.cols[i].Name, text, err)
				}
				out[i].Values = append(out[i].Values, &x)
			}
		}
	}
	if err := rs.Err(); err != nil {
		return nil, err
	}
	for i := range out {
		switch {
		case f32[i] != nil:
			out[i].Array = f32[i].NewArray()
		case f64[i] != nil:
			out[i].Array = f64[i].NewArray()
		}
	}
	return out, nil
}

// release frees the arrow arrays of columns read.
func release(cols []pqwrite.Column) {
	for _, c := range cols {
		if c.Array != nil {
			c.Array.Release()
		}
	}
}

// parseText reads DuckDB's text of a value. Integers and strings
// take the standard library's exact parsers (DuckDB prints them in forms
// strconv reads to the same value; the rewrite tests compare every value);
// everything else the codec's CAST parser. (Floats do not come as text.)
func parseText(codec *types.Codec, k types.Kind, s string) (types.Value, error) {
	switch k {
	case types.KindTinyInt, types.KindSmallInt, types.KindInteger, types.KindBigInt:
		if x, err := strconv.ParseInt(s, 10, 64); err == nil {
			return types.IntValue(x), nil
		}
	case types.KindUTinyInt, types.KindUSmallInt, types.KindUInteger, types.KindUBigInt:
		if x, err := strconv.ParseUint(s, 10, 64); err == nil {
			return types.UintValue(x), nil
		}
	case types.KindVarchar:
		return types.StringValue(s), nil
	case types.KindDecimal:
		// DuckDB prints exactly scale fractional digits: the digits are
		// the unscaled value.
		if t := codec.Type(); t.Precision <= 18 {
			whole, frac, _ := strings.Cut(s, ".")
			if len(frac) == int(t.Scale) {
				if x, err := strconv.ParseInt(whole+frac, 10, 64); err == nil && !strings.ContainsAny(whole+frac, "+_") {
					return types.IntValue(x), nil
				}
			}
		}
	}
	return codec.Parse(s)
}

// tableState is a table as a snapshot sees it.
type tableState struct {
	r     *catalog.Reader
	t     catalog.Table
	cols  []catalog.Column
	files []catalog.DataFile
}

// openTable reads a table, its columns and its live files at a snapshot;
// the caller closes st.r.
func openTable(cat *catalog.Catalog, snapshot int64, table string) (*tableState, error) {
	r, err := cat.Read(snapshot)
	if err != nil {
		return nil, err
	}
	st := &tableState{r: r}
	if st.t, err = r.Table(table); err == nil {
		if st.cols, err = r.Columns(st.t.ID); err == nil {
			st.files, err = r.Files(st.t.ID)
		}
	}
	if err != nil {
		r.Close()
		return nil, err
	}
	return st, nil
}

// partitionKeys are the SQL expressions, over the slots, of the table's
// declared layout (catalog.Table.PartitionedBy): rows with equal keys go
// to the same files. bucket(N) is DuckDB's hash of the value modulo N
// (not Iceberg's murmur3): a layout, not a format other engines read.
// texts are the same values as the text a file's layout values record
// (catalog.LayoutValue): each a function of its key, so one per file.
func partitionKeys(st *tableState) (out, texts []string, err error) {
	top := catalog.TopLevel(st.cols)
	for _, f := range st.t.PartitionedBy {
		i := slices.IndexFunc(top, func(c catalog.Column) bool { return c.ID == f.ColumnID })
		if i < 0 {
			return nil, nil, fmt.Errorf("table %q: partition field %s names column %d, which the table lacks", st.t.Name, f.Transform, f.ColumnID)
		}
		x := slot(i)
		switch {
		case f.Transform == "identity":
			out = append(out, x)
			texts = append(texts, "CAST("+x+" AS VARCHAR)")
		case f.Transform == "year":
			out = append(out, "year("+x+")")
			texts = append(texts, "CAST(year("+x+") AS VARCHAR)")
		case f.Transform == "month":
			out = append(out, fmt.Sprintf("year(%[1]s) * 12 + month(%[1]s)", x))
			texts = append(texts, fmt.Sprintf("CAST(year(%[1]s) AS VARCHAR) || '-' || lpad(CAST(month(%[1]s) AS VARCHAR), 2, '0')", x))
		case f.Transform == "day":
			out = append(out, "CAST("+x+" AS DATE)")
			texts = append(texts, "CAST(CAST("+x+" AS DATE) AS VARCHAR)")
		case f.Transform == "hour":
			out = append(out, "date_trunc('hour', "+x+")")
			texts = append(texts, "CAST(date_trunc('hour', "+x+") AS VARCHAR)")
		case strings.HasPrefix(f.Transform, "bucket("):
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(f.Transform, "bucket("), ")"))
			if err != nil || n < 1 {
				return nil, nil, fmt.Errorf("table %q: partition field %s: bad bucket count", st.t.Name, f.Transform)
			}
			out = append(out, fmt.Sprintf("hash(%s) %% %d", x, n))
			texts = append(texts, fmt.Sprintf("CAST(hash(%s) %% %d AS VARCHAR)", x, n))
		default:
			return nil, nil, fmt.Errorf("table %q: unknown partition transform %q", st.t.Name, f.Transform)
		}
	}
	return out, texts, nil
}

// layoutValues are the declared layout's values of the row numbered rn in
// from: those of every row of the file it begins.
func layoutValues(ctx context.Context, conn *sql.Conn, st *tableState, texts []string, from, rnCol string, rn int64) ([]catalog.LayoutValue, error) {
	vals := make([]sql.NullString, len(texts))
	ptrs := make([]any, len(texts))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := conn.QueryRowContext(ctx, fmt.Sprintf("SELECT %s FROM %s WHERE %s = %d", strings.Join(texts, ", "), from, rnCol, rn)).Scan(ptrs...); err != nil {
		return nil, err
	}
	out := make([]catalog.LayoutValue, len(texts))
	for i, f := range st.t.PartitionedBy {
		out[i] = catalog.LayoutValue{ColumnID: f.ColumnID, Transform: f.Transform}
		if vals[i].Valid {
			out[i].Value = stats.Known(vals[i].String)
		}
	}
	return out, nil
}

// hiveLayout is how a rewrite keeps a table's Hive partitions (columns
// whose values are the files' key=value directories, which no file holds):
// rows are laid out by those columns first, so that every file written
// holds one partition's rows, each file goes under the key=value
// directories of an input file of its partition, its values spelled as
// that file's path spells them (registration reads them back, in the
// table's types, as the same values) under the columns' names now (a
// renamed partition column's files keep their old directories, but files
// added later name it as it is), and the files hold every column but
// those.
type hiveLayout struct {
	slots  []int // the top-level positions of the partition columns
	groups []hiveGroup
}

// hiveGroup is one partition of the input files: its values, as the
// catalog stores them, and the directories of one of its files.
type hiveGroup struct {
	values []catalog.PartitionValue
	dirs   []string
}

// newHiveLayout is nil for a table without partition columns.
func newHiveLayout(st *tableState, files []catalog.DataFile, paths []string) (*hiveLayout, error) {
	top := catalog.TopLevel(st.cols)
	var hl hiveLayout
	for i, c := range top {
		if c.Partition != "" {
			hl.slots = append(hl.slots, i)
		}
	}
	if len(hl.slots) == 0 {
		return nil, nil
	}
	m, err := st.r.ColumnMapping(st.t.ID)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for i, f := range files {
		if catalog.IsObject(f.Location(st.t)) {
			return nil, fmt.Errorf("table %q has partition column %q, and a rewrite of partitioned objects is not supported yet (their key=value prefixes would be lost)", st.t.Name, top[hl.slots[0]].Name)
		}
		var key strings.Builder
		g := hiveGroup{}
		for _, s := range hl.slots {
			v, _ := f.PartitionValue(top[s].ID)
			g.values = append(g.values, catalog.PartitionValue{ColumnID: top[s].ID, Value: v})
			if v.Known {
				fmt.Fprintf(&key, "%q,", v.V)
			} else {
				key.WriteString("NULL,")
			}
		}
		if seen[key.String()] {
			continue
		}
		seen[key.String()] = true
		dirs, err := ingest.HiveDirs(paths[i])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", paths[i], err)
		}
		for _, s := range hl.slots {
			c := top[s]
			if strings.ContainsAny(c.Name, "/=") || c.Name == "." || c.Name == ".." {
				return nil, fmt.Errorf("table %q: partition column %q cannot name a key=value directory", st.t.Name, c.Name)
			}
			held, _, _ := m.Source(c, f) // the key the file's path spells
			at := slices.IndexFunc(dirs, func(d string) bool {
				k, _, _ := strings.Cut(d, "=")
				return types.SameIdent(k, held)
			})
			if at < 0 {
				return nil, fmt.Errorf("%s: no %s= directory in the path, for partition column %q", paths[i], held, c.Name)
			}
			_, raw, _ := strings.Cut(dirs[at], "=")
			g.dirs = append(g.dirs, c.Name+"="+raw)
		}
		hl.groups = append(hl.groups, g)
	}
	return &hl, nil
}

// partitionValue is the SQL constant of a stored partition value, as
// queries read it (engine's fileConsts).
func partitionValue(c catalog.Column, v stats.Maybe[string]) string {
	dt := types.DuckDBName(c.Type)
	if dt == "" {
		dt = "VARCHAR"
	}
	if !v.Known {
		return "CAST(NULL AS " + dt + ")"
	}
	return "CAST('" + strings.ReplaceAll(v.V, "'", "''") + "' AS " + dt + ")"
}

// groupsTable creates a temporary table of the partitions: gid and the
// values (p0, p1, ...), as queries read them.
func (hl *hiveLayout) groupsTable(ctx context.Context, conn *sql.Conn, top []catalog.Column, name string) error {
	var rows []string
	for gid, g := range hl.groups {
		vals := []string{strconv.Itoa(gid)}
		for j, s := range hl.slots {
			vals = append(vals, partitionValue(top[s], g.values[j].Value))
		}
		rows = append(rows, "("+strings.Join(vals, ", ")+")")
	}
	cols := []string{"gid"}
	for j := range hl.slots {
		cols = append(cols, fmt.Sprintf("p%d", j))
	}
	_, err := conn.ExecContext(ctx, fmt.Sprintf("CREATE OR REPLACE TEMP TABLE %s AS SELECT * FROM (VALUES %s) g(%s)", name, strings.Join(rows, ", "), strings.Join(cols, ", ")))
	return err
}

// groupOf is the partition of the row numbered rn in from (a run of one
// partition's rows): the group whose values it holds, NULLs equal.
func (hl *hiveLayout) groupOf(ctx context.Context, conn *sql.Conn, groups, from, rnCol string, rn int64) (int, error) {
	var on []string
	for j, s := range hl.slots {
		on = append(on, fmt.Sprintf("g.p%d IS NOT DISTINCT FROM r.%s", j, slot(s)))
	}
	var gid int
	err := conn.QueryRowContext(ctx, fmt.Sprintf("SELECT min(g.gid) FROM %s g JOIN (SELECT * FROM %s WHERE %s = %d) r ON %s",
		groups, from, rnCol, rn, strings.Join(on, " AND "))).Scan(&gid)
	return gid, err
}

// held says top-level position i is written into files: not a partition
// column.
func (hl *hiveLayout) held(i int) bool { return hl == nil || !slices.Contains(hl.slots, i) }

// noKeyValueDirs refuses an output directory a key=value directory of
// which registration would read as one more partition key.
func noKeyValueDirs(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	for _, seg := range strings.Split(filepath.ToSlash(abs), "/") {
		if k, _, ok := strings.Cut(seg, "="); ok && k != "" {
			return fmt.Errorf("the output directory %s is below %q, which registration would read as a partition directory: choose one without '=' in its path", dir, seg)
		}
	}
	return nil
}
