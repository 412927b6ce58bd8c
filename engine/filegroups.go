package engine

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/internal/sqllex"
	"github.com/rocklake/rocklake/pqmeta"
	"github.com/rocklake/rocklake/types"
)

// fileSchema is how DuckDB reads a file: sig is its whole Parquet schema
// (every node, with DuckDB's type for each leaf), so files of one sig read
// alike; names are its top-level columns, in order.
type fileSchema struct {
	sig   string
	names []string
}

func schemaKey(path string, st fileStamp) string {
	return fmt.Sprintf("%d\x00%d\x00%d\x00%d\x00%d\x00%x\x00%s", st.size, st.modified, st.changed, st.id.Device, st.id.Inode, st.fingerprint, path)
}

// fileSchemas reads the schemas of files whose columns differ from their
// table's, from the engine's cache or in one parquet_schema call for the
// rest. The key holds the file as registered (fileStamp): a file
// replaced since is refused before it is read (checkDataFile), and one
// registered again is another key.
func (e *Engine) fileSchemas(ctx context.Context, conn *sql.Conn, files []string, stamps map[string]fileStamp) (map[string]fileSchema, error) {
	out := map[string]fileSchema{}
	var todo []string
	for _, f := range files {
		if _, done := out[f]; done {
			continue
		}
		if s, ok := e.schemas.Get(schemaKey(f, stamps[f])); ok {
			out[f] = s
		} else {
			out[f] = fileSchema{}
			todo = append(todo, f)
		}
	}
	if len(todo) == 0 {
		return out, nil
	}
	// parquet_schema names each file as it opened it: as duckPath spelled
	// it.
	rows, err := conn.QueryContext(ctx, `SELECT file_name, name, type, type_length, repetition_type, num_children,
		converted_type, scale, precision, field_id, logical_type, duckdb_type FROM parquet_schema(?::VARCHAR[])`, duckPaths(todo))
	if err != nil {
		return nil, fmt.Errorf("reading the schemas of files whose columns differ from their table's: %w", err)
	}
	defer rows.Close()
	type node struct {
		name     string
		children int64
		row      string
	}
	byFile := map[string][]node{}
	for rows.Next() {
		var file string
		var name, typ, length, rep, conv, logical, duck sql.NullString
		var children, scale, precision, fieldID sql.NullInt64
		if err := rows.Scan(&file, &name, &typ, &length, &rep, &children, &conv, &scale, &precision, &fieldID, &logical, &duck); err != nil {
			return nil, err
		}
		row := fmt.Sprintf("%q|%s|%s|%s|%d|%s|%d|%d|%d|%s|%s", name.String, typ.String, length.String, rep.String, children.Int64,
			conv.String, scale.Int64, precision.Int64, fieldID.Int64, logical.String, duck.String)
		byFile[file] = append(byFile[file], node{name: name.String, children: children.Int64, row: row})
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, f := range todo {
		nodes, ok := byFile[duckPath(f)]
		if !ok || len(nodes) == 0 {
			return nil, fmt.Errorf("reading the schema of %s: DuckDB returned none", f)
		}
		var sig strings.Builder
		for _, n := range nodes[1:] { // the root's name is the writer's
			sig.WriteString(n.row)
			sig.WriteByte('\n')
		}
		// Top-level columns: the root's children, each followed by its own
		// subtree in pre-order.
		var names []string
		var skip func(i int) int
		skip = func(i int) int { // index after the subtree at i
			next := i + 1
			for range nodes[i].children {
				if next >= len(nodes) {
					return next
				}
				next = skip(next)
			}
			return next
		}
		for i, k := 1, int64(0); k < nodes[0].children && i < len(nodes); k++ {
			names = append(names, nodes[i].name)
			i = skip(i)
		}
		s := fileSchema{sig: sig.String(), names: names}
		out[f] = s
		e.schemas.Add(schemaKey(f, stamps[f]), s)
	}
	return out, nil
}

// readSQL is a SELECT of a table's columns, cast to its types, over files
// in their order: runs of consecutive files whose columns are exactly the
// table's (not in odd) in one read_parquet each, and runs of other files
// of one schema in one read_parquet each, naming the table's columns as the
// files spell them (DuckDB folds ASCII case only), NULL for a column they
// lack; UNION ALL of the runs. Keeping the files' order keeps the rows'
// (POSITIONAL joins, ASOF ties and LIMIT without ORDER BY see it). source
// gives an expression for a long file list (a variable), or "" to spell it.
// mixed says the SELECT unions runs whose files store some column in
// different types (see Engine.mixedDB).
//
// A partitioned table's files are also split into runs by their partition
// values (consts), each run selecting its values as constants of the
// column's type: files written partition by partition keep a partition's
// files together, so a table has about one run per partition.
// fileSource is how a view spells what it hands over: list gives an
// expression for a long file list (a variable), or "" to spell it;
// runDeletes, for a run of files some of which have delete files, the
// condition that leaves their deleted rows out over one bitstring of the
// whole run (a variable), or "" for the list of the files' own
// bitstrings. Either may be nil.
type fileSource struct {
	list       func([]string) string
	runDeletes func(files []string, consts partConsts) string
}

func (s fileSource) of(files []string) string {
	if s.list == nil {
		return ""
	}
	return s.list(files)
}

func readSQL(t catalog.Table, cols []catalog.Column, files []string, odd map[string]bool, consts partConsts,
	schemas map[string]fileSchema, source fileSource) (sql string, mixed bool, err error) {
	parts, mixed, err := readParts(t, cols, files, odd, consts, schemas, source)
	return unionAll(parts, false), mixed, err
}

// readParts is readSQL's runs, one SELECT each, in the files' order.
func readParts(t catalog.Table, cols []catalog.Column, files []string, odd map[string]bool, consts partConsts,
	schemas map[string]fileSchema, source fileSource) (parts []string, mixed bool, err error) {
	if len(files) == 0 {
		return []string{viewSQL(t, cols, nil, "", false, nil)}, false, nil
	}
	type run struct {
		sig   string // "" for files matching the table
		key   string // the partition values
		files []string
	}
	var runs []run
	sigs := map[string]bool{}
	for _, f := range files {
		sig := ""
		if odd[f] {
			s, ok := schemas[f]
			if !ok {
				return nil, false, fmt.Errorf("no schema read for %s", f)
			}
			sig = "\x00" + s.sig
		}
		sigs[sig] = true
		key := consts[f].key()
		if n := len(runs); n > 0 && runs[n-1].sig == sig && runs[n-1].key == key {
			runs[n-1].files = append(runs[n-1].files, f)
		} else {
			runs = append(runs, run{sig: sig, key: key, files: []string{f}})
		}
	}
	parts = make([]string, 0, len(runs))
	for _, r := range runs {
		pc := runConsts(consts, r.files, source.runDeletes)
		if r.sig == "" {
			parts = append(parts, viewSQL(t, cols, r.files, source.of(r.files), false, pc))
			continue
		}
		names := schemas[r.files[0]].names
		var sel []string
		for _, c := range cols {
			if c.Parent.Known {
				continue
			}
			dt := types.DuckDBName(c.Type)
			if e, ok := pc[c.ID]; ok || c.Partition != "" {
				sel = append(sel, fmt.Sprintf("%s AS %s", e, sqllex.QuoteName(c.Name)))
				continue
			}
			src := "NULL"
			for _, n := range names {
				if types.SameIdent(n, c.Name) {
					src = sqllex.QuoteName(n)
					break
				}
			}
			switch {
			case dt != "":
				sel = append(sel, fmt.Sprintf("%s AS %s", noBloomProbe(fmt.Sprintf("CAST(%s AS %s)", src, dt), c.Type), sqllex.QuoteName(c.Name)))
			case src == "NULL":
				sel = append(sel, fmt.Sprintf("CAST(NULL AS VARCHAR) AS %s", sqllex.QuoteName(c.Name)))
			default:
				sel = append(sel, fmt.Sprintf("%s AS %s", src, sqllex.QuoteName(c.Name)))
			}
		}
		// can_have_nan as in viewSQL.
		parts = append(parts, fmt.Sprintf("SELECT %s FROM read_parquet(%s, hive_partitioning = false, can_have_nan = true%s)%s",
			strings.Join(sel, ", "), fileList(r.files, source.of(r.files)), rowNumbers(pc), deletedWhere(pc)))
	}
	// Runs of one schema are of one type by construction; two runs, one of
	// them odd, may differ (a run of plain files has the table's types).
	// Partition values are constants of the column's type.
	mixed = len(sigs) > 1
	// Files registered under different columns of an altered table may
	// store a column in different types too.
	shapes := map[string]bool{}
	for _, r := range runs {
		shapes[consts[r.files[0]][shapeKey]] = true
	}
	mixed = mixed || len(shapes) > 1
	return parts, mixed, nil
}

// unionAll joins a view's parts (runs of files, files read in part) with
// UNION ALL. A plain SELECT of the union returns the parts' rows in order,
// but DuckDB 1.5.6's POSITIONAL JOIN pairs rows in the order they reach
// it, and nothing keeps that order: into a sink that does not keep order
// (an aggregate over the join), DuckDB runs a union's branches at once, so
// `SELECT count(*) FILTER (WHERE a.x <> b.x) FROM t a POSITIONAL JOIN ...`
// over four files in two schemas counted 358,192 of 400,000 pairs apart;
// and a single scan of files with delete files, filtered in a subquery,
// paired rows out of order too (TestPositionalJoinKeepsFileOrder). ordered
// tags each part's rows with the part and the row's place in it (one scan
// per part, in the order the window sees it, which DuckDB keeps) and sorts
// by both: a pipeline breaker whose output is the files' order, however the
// parts ran, read by the join's single-threaded pipeline.
func unionAll(parts []string, ordered bool) string {
	if !ordered {
		return strings.Join(parts, " UNION ALL ")
	}
	const branch, row = "__rocklake_branch", "__rocklake_row"
	tagged := make([]string, len(parts))
	for i, p := range parts {
		tagged[i] = fmt.Sprintf("SELECT *, %d AS %s, row_number() OVER () AS %s FROM (%s)", i, branch, row, p)
	}
	return fmt.Sprintf("SELECT * EXCLUDE (%s, %s) FROM (%s) ORDER BY %s, %s", branch, row, strings.Join(tagged, " UNION ALL "), branch, row)
}

// orderedReads says whether query may pair rows by their place in a
// table (POSITIONAL JOIN), so that its views must keep the files' order
// (see unionAll). It reads the text, strings included, rather than the
// parse tree: a join inside query('...') or a statement the walker does
// not see counts too, and a false alarm costs only a sort.
func orderedReads(query string) bool {
	return strings.Contains(strings.ToUpper(query), "POSITIONAL")
}

// fileList is src, or the files spelled as a list literal.
func fileList(files []string, src string) string {
	if src != "" {
		return src
	}
	quoted := make([]string, len(files))
	for i, f := range files {
		quoted[i] = "'" + strings.ReplaceAll(duckPath(f), "'", "''") + "'"
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

// partConsts maps a file to its partition columns' values, each an SQL
// constant of the column's type, by column id.
type partConsts map[string]fileConstants

type fileConstants map[int64]string

// key is the values as one string: files with equal keys read in one run.
func (c fileConstants) key() string {
	if len(c) == 0 {
		return ""
	}
	ids := make([]int64, 0, len(c))
	for id := range c {
		if !deleteKeys[id] { // files with deleted rows read in runs with others
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	var b strings.Builder
	for _, id := range ids {
		fmt.Fprintf(&b, "%d\x00%s\x00", id, c[id])
	}
	return b.String()
}

// fileConsts is a file's values of the partition columns as SQL
// constants: the stored text cast to the column's type, or a typed NULL
// (as DuckDB's hive_partitioning reads __HIVE_DEFAULT_PARTITION__). A file
// registered without a value for a column reads NULL there.
func fileConsts(f catalog.DataFile, partCols []catalog.Column) fileConstants {
	out := make(fileConstants, len(partCols))
	for _, c := range partCols {
		dt := types.DuckDBName(c.Type)
		if dt == "" {
			dt = "VARCHAR"
		}
		v, _ := f.PartitionValue(c.ID)
		if v.Known {
			out[c.ID] = fmt.Sprintf("CAST(%s AS %s)", "'"+strings.ReplaceAll(v.V, "'", "''")+"'", dt)
		} else {
			out[c.ID] = fmt.Sprintf("CAST(NULL AS %s)", dt)
		}
	}
	return out
}

// shapeKey is the entry of a file's constants that names the columns it
// was registered with (mapColumns), so that files registered under other
// columns read in runs of their own.
const shapeKey = -1

// deletesKey is the entry of a file's constants that holds its delete
// file (catalog.DeleteFile) as an SQL string of the path DuckDB reads:
// the file's rows at the positions it lists are gone. A file with one
// reads in a run of its own.
const deletesKey = -2

// deletesRowsKey holds the data file's last position, its row count less
// one (with deletesKey), and
// deletesVarKey, when a query set one, the expression over a DuckDB
// variable that gives its deleted positions as a bitstring
// (nameDeleteVariables).
const (
	deletesRowsKey = -5
	deletesVarKey  = -6
)

// runDeletesKey holds, for a run of several files some of which have
// deleted rows, the condition that leaves them out (runConsts).
const runDeletesKey = -7

// deleteKeys are the entries of a file's constants about its deleted
// rows, which do not split runs: one scan reads a run, each file's rows
// filtered on its own bitstring.
var deleteKeys = map[int64]bool{deletesKey: true, deletesPathKey: true, deletesRowsKey: true, deletesVarKey: true, runDeletesKey: true, deletesStampKey: true}

// deletesStampKey holds what identifies a delete file on disk (deleteStamp),
// which keys its positions in deleteBits.
const deletesStampKey = -8

// runConsts is the constants a run of files (of equal keys) reads with:
// the first file's, and, for a run of more than one with deleted rows,
// the condition that leaves them out: each row's bit in the bitstring of
// its own file, picked by read_parquet's file_index (NULL for a file
// without deleted rows). A plain filter again, so the rows keep their
// order; one file alone keeps the constant its scan is given.
func runConsts(consts partConsts, files []string, runDeletes func([]string, partConsts) string) fileConstants {
	pc := consts[files[0]]
	if len(files) == 1 {
		return pc
	}
	if runDeletes != nil {
		if w := runDeletes(files, consts); w != "" {
			out := maps.Clone(pc)
			for k := range deleteKeys {
				delete(out, k)
			}
			if out == nil {
				out = fileConstants{}
			}
			out[runDeletesKey] = w
			return out
		}
	}
	var bits []string
	deleted := false
	for _, f := range files {
		c := consts[f]
		lit, ok := c[deletesKey]
		switch {
		case !ok:
			bits = append(bits, "NULL::BIT")
		case c[deletesVarKey] != "":
			bits, deleted = append(bits, c[deletesVarKey]), true
		default:
			bits, deleted = append(bits, "("+deletedBits(lit, c[deletesRowsKey])+")"), true
		}
	}
	out := maps.Clone(pc)
	for k := range deleteKeys {
		delete(out, k)
	}
	if deleted {
		if out == nil {
			out = fileConstants{}
		}
		out[runDeletesKey] = "coalesce(get_bit([" + strings.Join(bits, ", ") + "][file_index::BIGINT + 1], file_row_number::INTEGER), 0) = 0"
	}
	return out
}

// deletedRows is the condition that leaves a file's deleted rows out,
// over read_parquet's file_row_number; "" when it has none. The positions
// are a bitstring, one bit per row of the file, and the condition a plain
// filter on each row's bit: a join (NOT IN) would cost a hash table per
// file and would not keep the file's rows in their order. A query reads
// the bitstring from a variable it set (a constant DuckDB pushes into the
// scan); other readers from a scalar subquery over the delete file.
func deletedRows(c fileConstants) string {
	if w, ok := c[runDeletesKey]; ok {
		return w
	}
	d, ok := c[deletesKey]
	if !ok {
		return ""
	}
	bits := c[deletesVarKey]
	if bits == "" {
		bits = "(" + deletedBits(d, c[deletesRowsKey]) + ")"
	}
	return "get_bit(" + bits + ", file_row_number::INTEGER) = 0"
}

// runVariable is the name of a query's i-th variable of a run's deleted
// rows (runBits).
func runVariable(i int) string { return fmt.Sprintf("__rocklake_run_deleted_%d", i) }

// maxRunBits bounds the bitstring of one run (one bit per row of its files
// with delete files); a longer run filters on its files' own bitstrings.
const maxRunBits = 1 << 24

// inlineRunBytes bounds the bits of a run set in the query's own round
// trip (bind): 32 KiB is 262,144 rows, whose base64 text DuckDB decodes in
// well under the cost of a statement of its own. A variable so that tests
// take both ways.
var inlineRunBytes = 32 << 10

// runBits is the condition that leaves out the deleted rows of a run of
// files read by one scan, over one bitstring of the run (its files'
// bitstrings end to end, bitsOf by their delete files' literals, each
// from a byte boundary), which variable runVariable(n) must hold as the
// BLOB bits packs them into (8 to a byte, the first the high bit, as
// DuckDB casts a BLOB to BIT): each row's bit is at its file's offset in
// it (by read_parquet's file_index) plus its file_row_number; a file
// without deleted rows has no offset (NULL), so its rows stay. Picking a
// file's own bitstring out of a list for each row costs about as much
// again as the scan, and DuckDB parses '0'/'1' text eight times slower
// than it takes a BLOB. When every file of the run has deleted rows, each
// file's bits start at a multiple of one stride (the longest file's,
// whole bytes), so that a row's bit is found by arithmetic alone: indexing
// a list of offsets for each row costs about a tenth of the scan. "" when
// the run has no deleted rows, or its bits are not all known or too many.
func runBits(files []string, consts partConsts, bitsOf map[string]string, n int) (cond string, bits []byte) {
	stride := 0 // bytes
	for _, f := range files {
		lit, ok := consts[f][deletesKey]
		if !ok {
			stride = 0
			break
		}
		stride = max(stride, (len(bitsOf[lit])+7)/8)
	}
	if stride > 0 && 8*stride*len(files) <= maxRunBits {
		bits = make([]byte, stride*len(files))
		for i, f := range files {
			lit := consts[f][deletesKey]
			fb, ok := bitsOf[lit]
			last, err := strconv.Atoi(consts[f][deletesRowsKey])
			if !ok || err != nil || len(fb) != last+1 {
				return "", nil
			}
			pack(bits[i*stride:], fb)
		}
		return fmt.Sprintf("get_bit(getvariable('%s'), file_index::INTEGER * %d + file_row_number::INTEGER) = 0", runVariable(n), 8*stride), bits
	}
	offsets := make([]string, len(files))
	size := 0 // bytes
	for i, f := range files {
		lit, ok := consts[f][deletesKey]
		if !ok {
			offsets[i] = "NULL"
			continue
		}
		fb, ok := bitsOf[lit]
		last, err := strconv.Atoi(consts[f][deletesRowsKey])
		if !ok || err != nil || len(fb) != last+1 || 8*size+len(fb) > maxRunBits {
			return "", nil
		}
		offsets[i] = strconv.Itoa(8 * size)
		size += (len(fb) + 7) / 8
	}
	if size == 0 {
		return "", nil
	}
	bits = make([]byte, size)
	for i, f := range files {
		if offsets[i] != "NULL" {
			at, _ := strconv.Atoi(offsets[i])
			pack(bits[at/8:], bitsOf[consts[f][deletesKey]])
		}
	}
	return fmt.Sprintf("coalesce(get_bit(getvariable('%s'), ([%s]::INTEGER[])[file_index::BIGINT + 1] + file_row_number::INTEGER), 0) = 0",
		runVariable(n), strings.Join(offsets, ", ")), bits
}

// pack sets in into the bits of '0'/'1' text, from into's first byte's
// high bit on.
func pack(into []byte, text string) {
	for j := 0; j < len(text); j++ {
		if text[j] == '1' {
			into[j/8] |= 0x80 >> (j % 8)
		}
	}
}

// deleteVariable is the name of a query's i-th variable of delete files.
func deleteVariable(i int) string { return fmt.Sprintf("__rocklake_deleted_%d", i) }

// deleteVariableFiles is how many delete files one variable holds: each
// variable costs a statement, and each delete file a scan of it in that
// statement, all open at once.
const deleteVariableFiles = 128

// deleteRef is a delete file a query's variable holds: its path as a
// literal, its data file's last position, and what identifies the file
// on disk (deletesStampKey).
type deleteRef struct{ lit, last, stamp string }

// nameDeleteVariables gives each delete file the views read a place in a
// variable of the query's (deletesVarKey: a list of their bitstrings), so
// that its positions are read once, into a constant the scans filter on;
// it returns, per variable, the delete files it holds, in order.
func nameDeleteVariables(views []partConsts) [][]deleteRef {
	var out [][]deleteRef
	var parts []deleteRef
	byFile := map[string]string{}
	flush := func() {
		if len(parts) > 0 {
			out = append(out, parts)
			parts = nil
		}
	}
	for _, vp := range views {
		for _, f := range slices.Sorted(maps.Keys(vp)) {
			c := vp[f]
			lit, ok := c[deletesKey]
			if !ok || c[deletesVarKey] != "" {
				continue
			}
			at, seen := byFile[lit]
			if !seen {
				k := len(parts)
				parts = append(parts, deleteRef{lit: lit, last: c[deletesRowsKey], stamp: c[deletesStampKey]})
				at = fmt.Sprintf("getvariable('%s')[%d]", deleteVariable(len(out)), k+1)
				byFile[lit] = at
				if len(parts) == deleteVariableFiles {
					flush()
				}
			}
			c[deletesVarKey] = at
		}
	}
	flush()
	return out
}

// deleteBitsBudget bounds the text of the bitstrings an engine keeps (one
// byte per row of each data file with a delete file).
const deleteBitsBudget = 64 << 20

// deleteBits keeps delete files' positions as bitstring text ('0010…',
// bit i set when row i is deleted), by delete file, the file's stamp
// (size, modification time, inode: a file changed in place is another
// key) and its data file's row count. Reading a delete file costs a
// Parquet read per query otherwise; delete files are written once and
// never changed (a second delete writes a new one).
type deleteBits struct {
	mu    sync.Mutex
	cache *lru.Cache[string, string]
	bytes int
}

// deleteStamp is what tells a delete file from another at its path: its
// size, modification time and identity (device, inode).
func deleteStamp(fi os.FileInfo) string {
	id := pqmeta.IdentityOf(fi)
	return fmt.Sprintf("%d/%d/%d/%d", fi.Size(), fi.ModTime().UnixNano(), id.Device, id.Inode)
}

func newDeleteBits() *deleteBits {
	d := &deleteBits{}
	d.cache, _ = lru.NewWithEvict[string, string](1<<20, func(_ string, v string) { d.bytes -= len(v) })
	return d
}

// bitstrings is the bitstring text of each delete file in refs, read
// through conn for those not kept yet (one statement per batch).
func (d *deleteBits) bitstrings(ctx context.Context, conn *sql.Conn, refs []deleteRef) ([]string, error) {
	out := make([]string, len(refs))
	key := func(r deleteRef) string { return r.lit + "\x00" + r.stamp + "\x00" + r.last }
	var missing []int
	d.mu.Lock()
	for i, r := range refs {
		if v, ok := d.cache.Get(key(r)); ok && r.stamp != "" {
			out[i] = v
		} else {
			missing = append(missing, i)
		}
	}
	d.mu.Unlock()
	if len(missing) == 0 {
		return out, nil
	}
	var parts []string
	for k, i := range missing {
		parts = append(parts, fmt.Sprintf("SELECT %d AS k, (%s)::VARCHAR AS b", k, deletedBits(refs[i].lit, refs[i].last)))
	}
	rows, err := conn.QueryContext(ctx, "SELECT k, b FROM ("+strings.Join(parts, " UNION ALL ")+") ORDER BY k")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	got := 0
	for rows.Next() {
		var k int
		var b sql.NullString
		if err := rows.Scan(&k, &b); err != nil {
			return nil, err
		}
		if k < 0 || k >= len(missing) {
			continue
		}
		if out[missing[k]] = b.String; !b.Valid {
			// bitstring_agg of no rows is NULL: a delete file of no
			// positions deletes nothing.
			last, err := strconv.Atoi(refs[missing[k]].last)
			if err != nil {
				return nil, err
			}
			out[missing[k]] = strings.Repeat("0", last+1)
		}
		got++
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if got != len(missing) {
		return nil, fmt.Errorf("read %d of %d delete files", got, len(missing))
	}
	d.mu.Lock()
	for _, i := range missing {
		if refs[i].stamp == "" || out[i] == "" || len(out[i]) > deleteBitsBudget/16 {
			continue
		}
		k := key(refs[i])
		if _, ok := d.cache.Peek(k); !ok {
			d.cache.Add(k, out[i])
			d.bytes += len(out[i])
		}
	}
	for d.bytes > deleteBitsBudget && d.cache.Len() > 0 {
		d.cache.RemoveOldest()
	}
	d.mu.Unlock()
	return out, nil
}

// deletedBits is the query of a delete file's positions as a bitstring of
// last+1 bits: bit i set when row i is deleted. A position outside the
// file fails it (bitstring_agg checks its range), never drops a row
// silently.
func deletedBits(lit, last string) string {
	// The positions' own column, pos, binds inside the subquery, before
	// any column of the data file of that name.
	return "SELECT bitstring_agg(pos, 0, " + last + ") FROM read_parquet(" + lit + ")"
}

// deletesPathKey is the entry of a file's constants that holds its delete
// file's path as the page path opens it (with deletesKey).
const deletesPathKey = -4

// positionsKey is the entry of a file's constants naming the column that
// gives each row's position in the file (ReadFileRowsSQL).
const positionsKey = -3

// rowNumbers is the read_parquet option a file's deletes or positions
// need.
func rowNumbers(c fileConstants) string {
	_, del := c[deletesKey]
	_, run := c[runDeletesKey]
	_, pos := c[positionsKey]
	if del || run || pos {
		return ", file_row_number = true"
	}
	return ""
}

// deletedWhere is deletedRows as a WHERE clause.
func deletedWhere(c fileConstants) string {
	if w := deletedRows(c); w != "" {
		return " WHERE " + w
	}
	return ""
}

// withDeletes adds a file's delete file, if it has one, to its constants
// (into, made when nil), checked to be the file recorded: a delete file
// changed or gone fails the read, as a data file does, since reading the
// rows without it would bring deleted rows back.
func withDeletes(t catalog.Table, f catalog.DataFile, d catalog.DeleteFile, into fileConstants) (fileConstants, error) {
	loc := d.Location(t)
	if f.RecordCount < 1 || f.RecordCount > math.MaxInt32 {
		return nil, fmt.Errorf("table %q: file %s of %d rows has a delete file: deleted rows are applied in files of 1 to %d rows", t.Name, f.Location(t), f.RecordCount, math.MaxInt32)
	}
	if catalog.IsObject(loc) {
		// A reader fetches them first (LocalDeleteFiles): reaching here
		// is a reader that forgot to.
		return nil, fmt.Errorf("table %q: delete file %s is an object not fetched to a local copy", t.Name, loc)
	}
	fi, err := os.Stat(loc)
	if err != nil {
		return nil, fmt.Errorf("%w: the delete file %s of table %q: %v", ErrDataFileChanged, loc, t.Name, err)
	}
	if fi.Size() != d.FileSizeBytes || (d.ModifiedUnixNanos != 0 && fi.ModTime().UnixNano() != d.ModifiedUnixNanos) {
		return nil, fmt.Errorf("%w: the delete file %s of table %q is not the file recorded (size %d, recorded %d)", ErrDataFileChanged, loc, t.Name, fi.Size(), d.FileSizeBytes)
	}
	if into == nil {
		into = fileConstants{}
	}
	into[deletesKey] = "'" + strings.ReplaceAll(duckPath(loc), "'", "''") + "'"
	into[deletesPathKey] = loc
	into[deletesRowsKey] = strconv.FormatInt(f.RecordCount-1, 10)
	into[deletesStampKey] = deleteStamp(fi)
	return into, nil
}

// mapColumns adds to a file's constants how it holds the columns of a
// table altered since it was registered (catalog.ColumnMapping): a column
// added later reads as its default (a typed NULL without one), one renamed
// since reads from its old name, one widened since is cast from the
// file's type. A column dropped since is simply not selected.
func mapColumns(m *catalog.ColumnMapping, f catalog.DataFile, cols []catalog.Column, into fileConstants) {
	if !m.Evolved() {
		return
	}
	var shape strings.Builder
	for _, c := range m.Names(f) {
		fmt.Fprintf(&shape, "%q %s,", c.Name, c.Type.DuckLakeName())
	}
	into[shapeKey] = shape.String()
	for _, c := range cols {
		if c.Parent.Known || c.Partition != "" {
			continue
		}
		dt := types.DuckDBName(c.Type)
		name, typ, held := m.Source(c, f)
		switch {
		case !held && dt == "":
			into[c.ID] = "NULL"
		case !held && c.Default.Known:
			into[c.ID] = fmt.Sprintf("CAST(%s AS %s)", "'"+strings.ReplaceAll(c.Default.V, "'", "''")+"'", dt)
		case !held:
			into[c.ID] = fmt.Sprintf("CAST(NULL AS %s)", dt)
		case name == c.Name && typ.DuckLakeName() == c.Type.DuckLakeName():
		case dt == "":
			into[c.ID] = sqllex.QuoteName(name)
		default:
			into[c.ID] = noBloomProbe(fmt.Sprintf("CAST(%s AS %s)", sqllex.QuoteName(name), dt), c.Type)
		}
	}
}

// ReadFileRowsSQL is ReadTableFilesWithSQL of one file, path where DuckDB
// reads it, with each row's position in the file (read_parquet's
// file_row_number, what a delete file records) as column pos: the rows its
// delete file in dels, if it has one, deletes are left out.
func (e *Engine) ReadFileRowsSQL(r *catalog.Reader, t catalog.Table, cols []catalog.Column, f catalog.DataFile, path, pos string, dels map[int64]catalog.DeleteFile) (string, error) {
	m, err := r.ColumnMapping(t.ID)
	if err != nil {
		return "", err
	}
	var partCols []catalog.Column
	for _, c := range cols {
		if c.Partition != "" && !c.Parent.Known {
			partCols = append(partCols, c)
		}
	}
	fc := fileConsts(f, partCols)
	mapColumns(m, f, cols, fc)
	if d, ok := dels[f.ID]; ok {
		if fc, err = withDeletes(t, f, d, fc); err != nil {
			return "", err
		}
	}
	fc[positionsKey] = sqllex.QuoteName(pos)
	return viewSQL(t, cols, []string{path}, "", true, fc), nil
}

// ReadTableFilesSQL is ReadFilesSQL for registered files, which it reads
// through the table's column mapping (mapColumns), with each file's values
// of the table's partition columns (DataFile.PartitionValues): files
// registered under other columns than the reader's snapshot has, or in
// other partitions, read in runs of their own, in order. paths[i] is where
// DuckDB reads files[i].
func (e *Engine) ReadTableFilesSQL(r *catalog.Reader, t catalog.Table, cols []catalog.Column, files []catalog.DataFile, paths []string) (string, error) {
	dels, err := r.DeleteFiles(t.ID)
	if err != nil {
		return "", err
	}
	return e.ReadTableFilesWithSQL(r, t, cols, files, paths, dels)
}

// ReadTableFilesWithSQL is ReadTableFilesSQL with the delete files dels
// (by data file id) applied instead of those of r's snapshot: files as
// another snapshot than the one whose columns they read through saw them
// (a change feed's), or delete files that are objects where DuckDB reads
// their local copies (LocalDeleteFiles).
func (e *Engine) ReadTableFilesWithSQL(r *catalog.Reader, t catalog.Table, cols []catalog.Column, files []catalog.DataFile, paths []string, dels map[int64]catalog.DeleteFile) (string, error) {
	m, err := r.ColumnMapping(t.ID)
	if err != nil {
		return "", err
	}
	var partCols []catalog.Column
	for _, c := range cols {
		if c.Partition != "" && !c.Parent.Known {
			partCols = append(partCols, c)
		}
	}
	deleted := slices.ContainsFunc(files, func(f catalog.DataFile) bool { _, ok := dels[f.ID]; return ok })
	if (!m.Evolved() && len(partCols) == 0 && !deleted) || len(files) == 0 {
		return e.ReadFilesSQL(t, cols, paths), nil
	}
	var parts []string
	var run []string
	var first fileConstants
	byPath := partConsts{}
	flush := func() {
		if len(run) > 0 {
			parts = append(parts, viewSQL(t, cols, run, "", true, runConsts(byPath, run, nil)))
		}
	}
	for i, f := range files {
		// A partition column's value is the file's (its directories'),
		// never read from the file.
		fc := fileConsts(f, partCols)
		mapColumns(m, f, cols, fc)
		if d, ok := dels[f.ID]; ok {
			if fc, err = withDeletes(t, f, d, fc); err != nil {
				return "", err
			}
		}
		if len(run) > 0 && fc.key() != first.key() {
			flush()
			run = nil
		}
		if len(run) == 0 {
			first = fc
		}
		byPath[paths[i]] = fc
		run = append(run, paths[i])
	}
	flush()
	return strings.Join(parts, " UNION ALL "), nil
}
