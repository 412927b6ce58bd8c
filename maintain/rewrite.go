package maintain

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/internal/curve"
	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/internal/sqllex"
	"github.com/rocklake/rocklake/kv"
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

// afterWrite, when set (by tests), sees the written files before they are
// checked: it can damage them as a faulty writer would.
var afterWrite func(written []string)

// afterUpload, when set (by tests), sees the objects a rewrite of objects
// uploaded, before the commit.
var afterUpload func(uploaded []string)

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
	// leases are held on the directories of deletes, committed with the
	// new files.
	leases []*catalog.Lease
}

// stageBatch is how many files stageFiles reads per statement (a
// variable for tests).
var stageBatch = 128

// stageFiles reads files (DuckDB reading files[i] at paths[i], and their
// delete files in dels where it reads them) as slot
// columns into the temporary table name on conn, stageBatch files per
// statement, in their order: a file with deleted rows is a scan of its own
// and of its delete file, and DuckDB keeps every scan of a statement open
// at once, so ten thousand of them in one statement run out of file
// descriptors. group, when set, adds each file's index in files as that
// column, for a rewrite of each file into its own successor.
func stageFiles(ctx context.Context, e *engine.Engine, conn *sql.Conn, st *tableState, files []catalog.DataFile, paths []string,
	dels map[int64]catalog.DeleteFile, name, group string) error {
	for i := 0; i == 0 || i < len(files); i += stageBatch {
		var parts []string
		for j := i; j < min(i+stageBatch, len(files)); j++ {
			read, err := e.ReadTableFilesWithSQL(st.r, st.t, st.cols, files[j:j+1], paths[j:j+1], dels)
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
// snapshot, in the steps package doc names: read, order, write, check,
// commit (rewriteRun, one method each).
func rewrite(ctx context.Context, e *engine.Engine, st *tableState, files []catalog.DataFile, sp rewriteSpec) (*RewriteResult, error) {
	w := &rewriteRun{ctx: ctx, e: e, st: st, files: files, sp: sp, what: sp.what, dir: sp.dir}
	defer w.close()
	if err := w.read(); err != nil {
		return nil, err
	}
	if err := w.output(); err != nil {
		return nil, err
	}
	if err := w.order(); err != nil {
		return nil, err
	}
	if res, done, err := w.nothingToWrite(); done || err != nil {
		return res, err
	}
	if err := w.write(); err != nil {
		return nil, err
	}
	if err := w.check(); err != nil {
		return nil, err
	}
	return w.commit()
}

// rewriteRun is one rewrite on its way through rewrite's steps. Each step
// reads what the ones before it left in the fields below its name; what a
// step must undo or let go when the rewrite ends (temporary tables, pinned
// object copies, an output that was not committed) it adds to undo, which
// close runs last first, whatever step the rewrite stopped at.
type rewriteRun struct {
	ctx   context.Context
	e     *engine.Engine
	st    *tableState
	files []catalog.DataFile
	sp    rewriteSpec
	what  string
	undo  []func()

	// read
	paths []string // where DuckDB reads each of files
	// dels are the delete files of files, objects among them where DuckDB
	// reads their local copies (engine.LocalDeleteFiles).
	dels       map[int64]catalog.DeleteFile
	ids        []int64
	inputBytes int64
	out        *objectOutput // set when the table's files are objects: so is the output
	hive       *hiveLayout
	place      string

	// output
	dir       string         // where the new files are written
	root      string         // the rewrite root dir is under, "" for a directory of the caller's
	lease     *catalog.Lease // dir's, held until the files are committed or removed (or handed to a transaction's Staged)
	committed bool           // the new files are referred to: by a snapshot, or a transaction's Staged
	conn      *sql.Conn

	// order
	aw        *arrowWriter // nil where DuckDB's COPY writes the files
	stream    bool         // the rows are written from one sorted COPY (orderStream)
	streamSrc string       // the rows, for that COPY
	into      string       // the rows as read, before partitions renumber them into rewriteTmp
	rn        string       // the expression numbering tmp's rows in output order
	cuts      []int64      // the last rn of each partition, ascending
	ltexts    []string
	rows      int64
	typs      []types.Type

	// write
	written       []string
	writtenGroups []int // the partition of each file written
	layout        map[string][]catalog.LayoutValue
	outRows       int64
	outBytes      int64
	pending       []*inFlight // oldest first
}

// inFlight is a file arrow-go is encoding in the background.
type inFlight struct {
	path string
	rows int64
	done chan error
}

// The temporary tables of a rewrite on its connection. tmp holds the slot
// columns (and rn, curve), none named by the user, so its rowid is
// DuckDB's row id.
const (
	rewriteTmp    = "__rocklake_rewrite"
	rewriteStaged = "__rocklake_rewrite_src"
	rewriteGroups = "__rocklake_rewrite_groups"
)

// later adds f to what close runs.
func (w *rewriteRun) later(f func()) { w.undo = append(w.undo, f) }

// dropLater drops a temporary table on close, even after ctx ended.
func (w *rewriteRun) dropLater(table string) {
	conn, ctx := w.conn, context.WithoutCancel(w.ctx)
	w.later(func() { conn.ExecContext(ctx, "DROP TABLE IF EXISTS "+table) })
}

func (w *rewriteRun) close() {
	for i := len(w.undo) - 1; i >= 0; i-- {
		w.undo[i]()
	}
}

// read finds where DuckDB reads each file: a local file still the one
// registered, or an object's local copy, pinned until the rewrite is done.
func (w *rewriteRun) read() error {
	t, ctx, what := w.st.t, w.ctx, w.what
	w.paths = make([]string, len(w.files))
	w.ids = make([]int64, len(w.files))
	for i, f := range w.files {
		w.paths[i], w.ids[i] = f.Location(t), f.ID
		w.inputBytes += f.FileSizeBytes
		if catalog.IsObject(w.paths[i]) {
			if w.out == nil {
				out, err := newObjectOutput(ctx, w.e, w.st, w.paths[i], what, w.dir)
				if err != nil {
					return err
				}
				w.out, w.lease = out, out.lease
				w.later(out.close)
			}
			local, release, err := w.e.ObjectCopy(ctx, w.paths[i], f.FileSizeBytes, f.ETag)
			if err != nil {
				return fmt.Errorf("%s: reading %s: %w", what, w.paths[i], err)
			}
			w.later(release)
			w.paths[i] = local
		} else if err := engine.CheckFile(t, f); err != nil {
			// Its rows would enter the new files, and the table, as if they
			// were the rows registered.
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	if len(w.files) > 0 && w.sp.src == "" {
		// Read with their deletes here (stageFiles); a rewrite given its
		// rows (fold, a change) read them itself.
		dels, err := w.st.r.DeleteFiles(t.ID)
		if err != nil {
			return err
		}
		dels, release, err := w.e.LocalDeleteFiles(ctx, t, dels, w.ids)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		w.later(release)
		w.dels = dels
	}
	hive, err := newHiveLayout(w.st, w.files, w.paths)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	w.hive = hive
	w.place = w.sp.place
	if len(w.paths) > 0 {
		w.place = w.files[0].Location(t)
	}
	return nil
}

// output makes the directory the new files are written to (removed on
// close unless they were committed) and takes a DuckDB connection.
func (w *rewriteRun) output() error {
	t, what, hive, sp := w.st.t, w.what, w.hive, w.sp
	if sp.src != "" {
		if catalog.IsObject(w.place) {
			place := w.place
			if hive != nil {
				place = aboveKeyValues(place)
			}
			out, err := newObjectOutput(w.ctx, w.e, w.st, place, what, w.dir)
			if err != nil {
				return err
			}
			if hive != nil {
				if err := noKeyValuePrefix(out.prefix); err != nil {
					out.close()
					return fmt.Errorf("%s: table %q is partitioned: %w", what, t.Name, err)
				}
			}
			w.out, w.lease = out, out.lease
			w.later(out.close)
		}
	}
	if w.out != nil {
		w.dir = w.out.staging
	} else if w.dir == "" {
		// Under the catalog's rewrite root, named by the table's id (a
		// table's name may be "../x" or "a/b"). A catalog without a
		// directory (in memory) has no root: the rewrites of its tables
		// share one beside the files, never nested in an earlier one.
		if w.root = w.e.Catalog().RewriteRoot(); w.root == "" {
			if w.place == "" {
				return fmt.Errorf("%s: table %q has no files, and the catalog neither a data root nor a directory: there is no place to write new files (open the lake with a data root)", what, t.Name)
			}
			base := filepath.Dir(w.place)
			// Above a partitioned file's key=value directories: the new
			// files get their own.
			for hive != nil && strings.Contains(filepath.Base(base), "=") && filepath.Dir(base) != base {
				base = filepath.Dir(base)
			}
			if catalog.IsRewriteDir(base) {
				w.root = filepath.Dir(filepath.Dir(base))
			} else {
				w.root = filepath.Join(base, "_rocklake")
			}
		}
		w.dir = catalog.DefaultRewriteDir(w.root, t.ID, w.st.r.Snapshot().ID, what)
	}
	if hive != nil {
		if err := noKeyValueDirs(w.dir); err != nil {
			return fmt.Errorf("%s: table %q is partitioned: %w", what, t.Name, err)
		}
	}
	if w.out == nil {
		lease, err := catalog.MakeRewriteDir(w.dir, w.root)
		// Writers from other processes that read the same snapshot pick
		// the same next name: the one that loses takes the one after.
		for n := 0; errors.Is(err, fs.ErrExist) && sp.dir == "" && n < 100; n++ {
			w.dir = catalog.DefaultRewriteDir(w.root, t.ID, w.st.r.Snapshot().ID, what)
			lease, err = catalog.MakeRewriteDir(w.dir, w.root)
		}
		if err != nil {
			return fmt.Errorf("%s: output directory: %w", what, err)
		}
		w.lease = lease
		w.later(func() { w.lease.Release() })
	}
	dir := w.dir
	w.later(func() {
		if !w.committed {
			// Nothing refers to the new files. The table's directory
			// under the root goes too when it held nothing else. The
			// lease goes first: once the directory is gone its name is
			// free for another write's.
			w.lease.Release()
			os.RemoveAll(dir)
			if w.root != "" {
				os.Remove(filepath.Dir(dir))
			}
		}
	})
	w.conn = sp.conn
	if w.conn == nil {
		conn, err := w.e.DB().Conn(w.ctx)
		if err != nil {
			return err
		}
		w.conn = conn
		w.later(func() { conn.Close() })
	}
	return nil
}

// order reads the rows into the temporary table rewriteTmp in the order
// they are written, numbered (rn) by its rowid: one pass, then one write
// per output file, so that file boundaries fall at exact row counts and
// every file holds a contiguous run of the order. DuckDB keeps the order
// of a scan, and of an ORDER BY, in the table it fills
// (preserve_insertion_order, on by default): without a sort, rows stay in
// their files' order and whatever clustering they had survives.
func (w *rewriteRun) order() error {
	ctx, conn, st, sp, what := w.ctx, w.conn, w.st, w.sp, w.what
	const tmp = rewriteTmp
	// Older files of an altered table hold its columns as they were
	// registered: they are read through the table's column mapping.
	src := sp.src
	deleted, err := hasDeletes(st, w.files)
	if err != nil {
		return err
	}
	switch {
	case src == "" && deleted:
		// Each file with deleted rows is a scan of its own: read a batch
		// at a time (stageFiles).
		if err := stageFiles(ctx, w.e, conn, st, w.files, w.paths, w.dels, rewriteStaged, ""); err != nil {
			return fmt.Errorf("%s: reading the files: %w", what, err)
		}
		w.dropLater(rewriteStaged)
		src = "SELECT * FROM " + rewriteStaged
	case src == "":
		read, err := w.e.ReadTableFilesSQL(st.r, st.t, st.cols, w.files, w.paths)
		if err != nil {
			return err
		}
		src = slotsOf(st.cols, read)
	}
	// A table with a declared layout is numbered in two steps: first as
	// any other (into), then by its partition key before that order, so
	// that each partition is a contiguous run of rn and files are cut at
	// its ends too.
	pkeys, ltexts, err := partitionKeys(st)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	w.ltexts = ltexts
	if sp.group != "" {
		pkeys = append([]string{sp.group}, pkeys...)
	}
	if w.hive != nil {
		// A Hive partition is a value's text, as its directory spells it
		// (groupsOfRows): DuckDB holds INTERVAL '30 days' equal to '1
		// month', and grouping by value would put both in one directory,
		// whose value every row then reads.
		var hk []string
		for _, s := range w.hive.slots {
			hk = append(hk, "CAST("+slot(s)+" AS VARCHAR)")
		}
		pkeys = append(hk, pkeys...)
	}
	if w.aw, err = newArrowWriter(st, w.hive); err != nil {
		return err
	}
	if sp.src != "" && len(pkeys) == 0 && w.hive == nil && w.aw != nil && w.aw.viaParquet() {
		return w.orderStream(src)
	}
	into := tmp
	if len(pkeys) > 0 {
		into = tmp + "_in"
	}
	w.into = into
	fill := fmt.Sprintf("CREATE OR REPLACE TEMP TABLE %s AS %s", into, src)
	w.rn = into + ".rowid + 1"
	if len(sp.order) > 0 {
		// A table made from an ORDER BY keeps its rows in that order
		// (preserve_insertion_order): the rowid numbers them, with one
		// sort and no window to rank them.
		sorted, key, keys, err := w.sortedSource(src)
		if err != nil {
			return err
		}
		fill = fmt.Sprintf("CREATE OR REPLACE TEMP TABLE %s AS SELECT * EXCLUDE (%s) FROM (%s) ORDER BY %s", into, keys, sorted, key)
	}
	if _, err := conn.ExecContext(ctx, fill); err != nil {
		if sp.src != "" {
			return fmt.Errorf("%s: laying out the rows: %w", what, err)
		}
		return fmt.Errorf("%s: reading the files: %w", what, err)
	}
	w.dropLater(tmp)
	if len(pkeys) > 0 {
		w.dropLater(into)
		if err := w.partitions(into, pkeys); err != nil {
			return err
		}
	}
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM "+tmp).Scan(&w.rows); err != nil {
		return err
	}
	if w.typs, err = slotTypes(ctx, conn, tmp, len(catalog.TopLevel(st.cols))); err != nil {
		return fmt.Errorf("%s: types of the rows read: %w", what, err)
	}
	return nil
}

// sortedSource is src with the copies of its sort keys (keys, to be
// dropped after the sort), and the ORDER BY key that puts its rows in
// sp.order (through a curve, if sp says one).
func (w *rewriteRun) sortedSource(src string) (sorted, key, keys string, err error) {
	// DuckDB sorts on a normalised key and hands the key columns back
	// decoded from it: -0.0 comes back +0.0, every NaN the one NaN. The
	// sort therefore reads copies of the sort columns (o0,
	// o1, ...), dropped afterwards, and the slots pass through as
	// payload, bit for bit.
	names := make([]string, len(w.sp.order))
	copies := make([]string, len(w.sp.order))
	for i, c := range w.sp.order {
		names[i] = fmt.Sprintf("o%d", i)
		copies[i] = c + " AS " + names[i]
	}
	src = fmt.Sprintf("SELECT *, %s FROM (%s)", strings.Join(copies, ", "), src)
	key = strings.Join(names, ", ")
	if w.sp.curve != "" {
		if src, err = curveSQL(w.ctx, w.e, w.sp.curve, names, src); err != nil {
			return "", "", "", fmt.Errorf("%s: %w", w.what, err)
		}
		key = curveKey + ", " + key
	}
	// Rows with equal keys are ordered by their content: DuckDB's sort is
	// not stable, and without this the same rows could be cut into files
	// of other sizes from one run to the next.
	var all []string
	for i := range catalog.TopLevel(w.st.cols) {
		all = append(all, slot(i))
	}
	key += ", hash(" + strings.Join(all, ", ") + ")"
	return src, key, strings.Join(names, ", "), nil
}

// partitions orders into's rows again by pkeys before their order, into
// rewriteTmp (numbered by its rowid, as in sortedFill), and finds where
// each partition's run of rn ends (cuts).
// As in sortedFill, the sort reads copies of the keys (p0, p1, ...): a
// key that is a column itself (a layout's identity field on a DOUBLE)
// would come back decoded from DuckDB's normalised sort key, -0.0 as 0.0
// and every NaN as the one NaN, and be written so.
func (w *rewriteRun) partitions(into string, pkeys []string) error {
	ctx, conn, what := w.ctx, w.conn, w.what
	keys := make([]string, len(pkeys))
	copies := make([]string, len(pkeys))
	for i, k := range pkeys {
		keys[i] = fmt.Sprintf("p%d", i)
		copies[i] = k + " AS " + keys[i]
	}
	// prn is the order within a partition (into's rowid), read where
	// into's name is in scope.
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("CREATE OR REPLACE TEMP TABLE %s AS SELECT * EXCLUDE (prn, %s) FROM (SELECT *, %s AS prn, %s FROM %s) ORDER BY %s, prn",
		rewriteTmp, strings.Join(keys, ", "), w.rn, strings.Join(copies, ", "), into, strings.Join(keys, ", "))); err != nil {
		return fmt.Errorf("%s: laying out the rows by partition: %w", what, err)
	}
	w.rn = rewriteTmp + ".rowid + 1"
	prs, err := conn.QueryContext(ctx, fmt.Sprintf("SELECT max(%s) FROM %s GROUP BY %s ORDER BY 1", w.rn, rewriteTmp, strings.Join(pkeys, ", ")))
	if err != nil {
		return fmt.Errorf("%s: partitions: %w", what, err)
	}
	defer prs.Close()
	for prs.Next() {
		var end int64
		if err := prs.Scan(&end); err != nil {
			return err
		}
		w.cuts = append(w.cuts, end)
	}
	return prs.Err()
}

// nothingToWrite ends a rewrite that read no rows (done): a write of none
// makes no file and no snapshot, but the table CREATE TABLE AS makes; old
// files without rows are retired.
func (w *rewriteRun) nothingToWrite() (_ *RewriteResult, done bool, _ error) {
	if w.rows > 0 {
		return nil, false, nil
	}
	t, what := w.st.t, w.what
	if w.sp.src != "" && len(w.files) == 0 {
		if w.sp.create == nil {
			return &RewriteResult{Snapshot: w.st.r.Snapshot()}, true, nil
		}
		tx, err := w.e.Catalog().Begin()
		if err != nil {
			return nil, true, err
		}
		tx.CreateTable(t.Name, w.sp.create)
		snap, err := tx.Commit()
		if err != nil {
			return nil, true, fmt.Errorf("%s: %w", what, err)
		}
		return &RewriteResult{Snapshot: snap}, true, nil
	}
	read, err := deletesRead(w.st, w.files)
	if err != nil {
		return nil, true, err
	}
	if w.sp.stage != nil {
		// A transaction's: the files go at its commit.
		*w.sp.stage = Staged{table: t.Name, t: t, cols: w.st.cols, retires: true,
			opts: ingest.Options{Replace: w.ids, ReplaceDeletes: read, Deletes: w.sp.deletes, TableID: t.ID}}
		return &RewriteResult{FilesBefore: len(w.files), BytesBefore: w.inputBytes}, true, nil
	}
	tx, err := w.e.Catalog().Begin()
	if err != nil {
		return nil, true, err
	}
	tx.ExpectDeletes(t.Name, read)
	tx.RemoveFiles(t.Name, w.ids...)
	if len(w.sp.deletes) > 0 {
		tx.SetDeletes(t.Name, w.sp.deletes...)
	}
	snap, err := tx.Commit()
	if err != nil {
		return nil, true, fmt.Errorf("%s: retiring empty files: %w", what, err)
	}
	return &RewriteResult{Snapshot: snap, FilesBefore: len(w.files), BytesBefore: w.inputBytes}, true, nil
}

// write cuts rewriteTmp's rows into files at sp.sizing's target, never
// across a partition: with arrow-go, file i is encoded in the background
// while the rows of file i+1 come out of DuckDB (two files in memory at
// most), and sizing learns from the files finished so far; DuckDB's COPY
// writes the types arrow-go is not given.
func (w *rewriteRun) write() error {
	ctx, conn, what, hive := w.ctx, w.conn, w.what, w.hive
	// No bloom filters from DuckDB's writer: DuckDB 1.5.6 probes those of
	// BLOB and float columns wrongly (see engine's noBloomProbe), for any
	// reader that pushes an equality into the scan.
	copyOpts := "FORMAT parquet, WRITE_BLOOM_FILTER false"
	for _, t := range w.typs {
		if plainFloats(t) {
			copyOpts += ", DICTIONARY_SIZE_LIMIT 0"
			break
		}
	}
	top := catalog.TopLevel(w.st.cols)
	aw := w.aw
	if w.stream {
		return w.writeStream()
	}
	if hive != nil && w.sp.src != "" {
		// A write's partitions are those of its rows.
		if err := hive.groupsOfRows(ctx, conn, top, w.into); err != nil {
			return fmt.Errorf("%s: partitions: %w", what, err)
		}
	}
	if hive != nil {
		if err := hive.groupsTable(ctx, conn, top, rewriteGroups); err != nil {
			return fmt.Errorf("%s: partitions: %w", what, err)
		}
		w.dropLater(rewriteGroups)
	}
	w.layout = map[string][]catalog.LayoutValue{} // by file name, unique in dir
	w.later(func() { w.finish() })                // on an early return, let the writer end before the directory goes
	cuts := w.cuts
	for off := int64(0); off < w.rows; {
		step := w.fileRows(off)
		for len(cuts) > 0 && cuts[0] <= off {
			cuts = cuts[1:]
		}
		if len(cuts) > 0 {
			step = min(step, cuts[0]-off) // a file never spans two partitions
		}
		p, err := w.filePath(off)
		if err != nil {
			return err
		}
		// rewriteTmp's rows are in rowid order, which a scan keeps
		// (preserve_insertion_order): a range of rowids is a file's rows,
		// in order, with no sort.
		run := fmt.Sprintf("WHERE %s.rowid BETWEEN %d AND %d", rewriteTmp, off, off+step-1)
		if aw != nil {
			from := fmt.Sprintf("FROM %s %s", rewriteTmp, run)
			var cols []pqwrite.Column
			if aw.viaParquet() {
				// Beside the files, removed as soon as read (and with
				// the directory should the rewrite stop); not a
				// .parquet name, which registration would take.
				cols, err = aw.readFile(ctx, conn, from, filepath.Join(w.dir, fmt.Sprintf(".rows-%05d.tmp", len(w.written))))
			} else {
				cols, err = aw.read(ctx, conn, from, step)
			}
			if err != nil {
				return fmt.Errorf("%s: reading rows for %s: %w", what, p, err)
			}
			if err := w.encode(p, step, cols); err != nil {
				return err
			}
		} else {
			sel, err := narrowSQL(ctx, conn, top, hive, fmt.Sprintf("FROM %s %s", rewriteTmp, run))
			if err != nil {
				return fmt.Errorf("%s: writing %s: %w", what, p, err)
			}
			_, err = conn.ExecContext(ctx, fmt.Sprintf("COPY (SELECT %s FROM %s %s) TO '%s' (%s)",
				sel, rewriteTmp, run, strings.ReplaceAll(p, "'", "''"), copyOpts))
			if err != nil {
				return fmt.Errorf("%s: writing %s: %w", what, p, err)
			}
			if err := w.counted(p, step, nil); err != nil {
				return err
			}
		}
		w.written = append(w.written, p)
		off += step
	}
	if err := w.finish(); err != nil {
		return err
	}
	if afterWrite != nil {
		afterWrite(w.written)
	}
	return nil
}

// fileRows is the number of rows of the file that starts after off rows,
// at sp.sizing's target: in bytes, from the bytes per row of the files
// finished so far, or else of the input files, or else of the table.
func (w *rewriteRun) fileRows(off int64) int64 {
	bpr := float64(w.inputBytes) / float64(w.rows)
	if w.inputBytes == 0 {
		bpr = w.sp.bytesPerRow
	}
	if w.outRows > 0 {
		bpr = float64(w.outBytes) / float64(w.outRows)
	}
	return w.sp.sizing.next(w.rows-off, bpr)
}

// filePath is the path of the next file, whose first row is off+1: under
// its partition's key=value directories in a Hive-partitioned table, with
// its layout values recorded for registration.
func (w *rewriteRun) filePath(off int64) (string, error) {
	ctx, conn, what, hive := w.ctx, w.conn, w.what, w.hive
	n := len(w.written)
	p := filepath.Join(w.dir, fmt.Sprintf("part-%05d.parquet", n))
	if hive != nil {
		// By rowid itself, which DuckDB finds without a scan.
		gid, err := hive.groupOf(ctx, conn, rewriteGroups, rewriteTmp, rewriteTmp+".rowid", off)
		if err != nil {
			return "", fmt.Errorf("%s: the partition of rows from %d: %w", what, off+1, err)
		}
		sub := filepath.Join(append([]string{w.dir}, hive.groups[gid].dirs...)...)
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return "", fmt.Errorf("%s: %w", what, err)
		}
		p = filepath.Join(sub, fmt.Sprintf("part-%05d.parquet", n))
		w.writtenGroups = append(w.writtenGroups, gid)
	}
	if len(w.ltexts) > 0 {
		lv, err := layoutValues(ctx, conn, w.st, w.ltexts, rewriteTmp, rewriteTmp+".rowid", off)
		if err != nil {
			return "", fmt.Errorf("%s: the layout values of rows from %d: %w", what, off+1, err)
		}
		w.layout[filepath.Base(p)] = lv
	}
	return p, nil
}

// encoders is how many files arrow-go encodes at once: each on a core of
// its own while DuckDB, which has the others, hands over the next; each
// holds its rows in memory until written.
var encoders = min(max(runtime.GOMAXPROCS(0), 1), 4)

// encode has arrow-go write cols (rows rows, released when written) to
// p in the background, once fewer than encoders files are in flight.
func (w *rewriteRun) encode(p string, rows int64, cols []pqwrite.Column) error {
	for len(w.pending) >= encoders {
		if err := w.finishOne(); err != nil {
			release(cols)
			return err
		}
	}
	f := &inFlight{path: p, rows: rows, done: make(chan error, 1)}
	w.pending = append(w.pending, f)
	go func() {
		defer release(cols)
		f.done <- pqwrite.Write(p, cols, w.aw.opts)
	}()
	return nil
}

// finish waits for the files being encoded, if any, and counts them.
func (w *rewriteRun) finish() error {
	var first error
	for len(w.pending) > 0 {
		if err := w.finishOne(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// finishOne waits for the oldest file being encoded and counts it.
func (w *rewriteRun) finishOne() error {
	f := w.pending[0]
	w.pending = w.pending[1:]
	return w.counted(f.path, f.rows, <-f.done)
}

// counted adds a written file of rows rows at p to the output's size,
// unless writing it failed (err).
func (w *rewriteRun) counted(p string, rows int64, err error) error {
	if err == nil {
		var fi os.FileInfo
		if fi, err = os.Stat(p); err == nil {
			w.outRows, w.outBytes = w.outRows+rows, w.outBytes+fi.Size()
		}
	}
	if err != nil {
		return fmt.Errorf("%s: writing %s: %w", w.what, p, err)
	}
	return nil
}

// check commits nothing unless the files hold exactly the rows read: as
// read (into), so that the steps between (the numbering by partition) are
// checked too.
func (w *rewriteRun) check() error {
	if err := checkRewrite(w.ctx, w.e, w.conn, w.st, w.into, w.typs, w.written, w.hive, w.writtenGroups); err != nil {
		return fmt.Errorf("%s: %w; nothing committed, the new files removed", w.what, err)
	}
	return nil
}

// commit registers the new files in place of the old ones in one snapshot
// (uploaded first, for objects), or hands them to the transaction that
// staged the write.
func (w *rewriteRun) commit() (*RewriteResult, error) {
	ctx, t, sp, what, out := w.ctx, w.st.t, w.sp, w.what, w.out
	read, err := deletesRead(w.st, w.files)
	if err != nil {
		return nil, err
	}
	n := len(w.written)
	register, addOpts := w.dir, ingest.Options{Replace: w.ids, ReplaceDeletes: read, Owner: catalog.OwnerRocklake, Deletes: sp.deletes, Leases: append([]*catalog.Lease{w.lease}, sp.leases...)}
	if sp.src != "" {
		addOpts.Written = true
		addOpts.TableID = t.ID // 0 for CREATE TABLE AS, whose table is made here
		addOpts.AutoFilters = len(w.st.files) == 0
	}
	if sp.create != nil {
		addOpts.Create, addOpts.CreateColumns = true, sp.create
	}
	if len(w.layout) > 0 {
		// Every file written holds one value of each field: recorded
		// with it. Names are unique in the output directory (and keep
		// their base name when uploaded).
		layout := w.layout
		addOpts.LayoutValues = func(path string) []catalog.LayoutValue { return layout[filepath.Base(path)] }
	}
	if out != nil {
		// Uploaded before the commit that names them; deleted again
		// unless it happens.
		if err := out.upload(ctx, w.written); err != nil {
			return nil, fmt.Errorf("%s: %w; nothing committed, the objects uploaded deleted", what, err)
		}
		if afterUpload != nil {
			afterUpload(out.uploaded)
		}
		register, addOpts.Objects = out.prefix, out.store
		w.later(func() { out.committed = w.committed })
	}
	if sp.stage != nil {
		// The files are the transaction's now: its commit registers them,
		// its rollback (Discard) removes them.
		w.committed = true
		local, prefix, root, lease := w.dir, "", w.root, w.lease
		w.lease = nil // the transaction's now: released at its end
		if out != nil {
			out.lease = nil
		}
		var store objectStore
		var uploaded []string
		if out != nil {
			local, prefix, store, uploaded = "", out.prefix, out.store, slices.Clone(out.uploaded)
		}
		*sp.stage = Staged{table: t.Name, t: t, cols: w.st.cols, path: register, opts: addOpts, rows: w.rows, files: n, lease: lease,
			remove: func(loc string) {
				if store != nil {
					_ = store.Delete(context.Background(), loc)
				} else {
					os.Remove(loc)
				}
			},
			discard: func() {
				for _, loc := range uploaded {
					_ = store.Delete(context.Background(), loc)
				}
				if local != "" {
					lease.Release() // before the name is free for another write's
					os.RemoveAll(local)
					if root != "" {
						os.Remove(filepath.Dir(local))
					}
				}
			}}
		dir := w.dir
		if out != nil {
			dir = prefix
		}
		return &RewriteResult{FilesAfter: n, Rows: w.rows, Dir: dir, BytesAfter: w.outBytes}, nil
	}
	// An interrupt up to here leaves the catalog as it was and removes
	// the new files; past here the commit completes.
	if err := context.Cause(ctx); err != nil {
		return nil, fmt.Errorf("%s: %w; nothing committed, the new files removed", what, err)
	}
	// The new files are rocklake's own: cleanup may delete them, and the
	// directory made for them, once no kept snapshot reads them.
	added, err := ingest.Add(w.e.Catalog(), t.Name, []string{register}, addOpts)
	if errors.Is(err, kv.ErrUnknownOutcome) {
		// The commit may have landed, and then its snapshot reads these
		// files: they stay. Had it not, they are orphans, which cleanup
		// --orphans removes.
		w.committed = true
		return nil, fmt.Errorf("%s: registering the new files: %w; the new files were kept (if nothing was committed, rocklake cleanup --orphans removes them)", what, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: registering the new files: %w", what, err)
	}
	w.committed = true
	dir := w.dir
	if out != nil {
		dir = out.prefix
	}
	if added.Rows != w.rows {
		// Cannot happen unless the writer's footers lie; the snapshot is
		// made, so say so loudly (the previous snapshot still reads the
		// old files).
		return nil, fmt.Errorf("%s: wrote %d rows but registered %d at snapshot %d: %w", what, w.rows, added.Rows, added.Snapshot.ID, errLanded)
	}
	return &RewriteResult{Snapshot: added.Snapshot, FilesBefore: len(w.files), FilesAfter: n, Rows: w.rows, Dir: dir,
		BytesBefore: w.inputBytes, BytesAfter: w.outBytes}, nil
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

// tableState is a table as a snapshot sees it.
type tableState struct {
	r     *catalog.Reader
	t     catalog.Table
	cols  []catalog.Column
	files []catalog.DataFile
	// lazy: files are not read yet (openTableLazy); loadFiles reads them.
	lazy bool
}

// openTable reads a table, its columns and its live files at a snapshot;
// the caller closes st.r.
func openTable(cat *catalog.Catalog, snapshot int64, table string) (*tableState, error) {
	st, err := openTableLazy(cat, snapshot, table)
	if err == nil {
		if err = st.loadFiles(); err != nil {
			st.r.Close()
		}
	}
	return st, err
}

// openTableLazy is openTable leaving the live files unread (st.files nil
// until loadFiles): a change of a few files of a large table finds them
// through the reader's cached file set (filesByID) instead of decoding
// every file's row.
func openTableLazy(cat *catalog.Catalog, snapshot int64, table string) (*tableState, error) {
	r, err := cat.Read(snapshot)
	if err != nil {
		return nil, err
	}
	st := &tableState{r: r, lazy: true}
	if st.t, err = r.Table(table); err == nil {
		st.cols, err = r.Columns(st.t.ID)
	}
	if err != nil {
		r.Close()
		return nil, err
	}
	return st, nil
}

// loadFiles reads the live files of a table opened lazily.
func (st *tableState) loadFiles() error {
	if !st.lazy {
		return nil
	}
	files, err := st.r.Files(st.t.ID)
	if err != nil {
		return err
	}
	st.files, st.lazy = files, false
	return nil
}

// filesByID returns the live files of the ids, in their order; an id
// that names none is an error.
func (st *tableState) filesByID(ids []int64) ([]catalog.DataFile, error) {
	out := make([]catalog.DataFile, 0, len(ids))
	if !st.lazy {
		byID := make(map[int64]catalog.DataFile, len(st.files))
		for _, f := range st.files {
			byID[f.ID] = f
		}
		for _, id := range ids {
			f, ok := byID[id]
			if !ok {
				return nil, fmt.Errorf("file %d is not a live file of table %q at snapshot %d", id, st.t.Name, st.r.Snapshot().ID)
			}
			out = append(out, f)
		}
		return out, nil
	}
	fs, err := st.r.FileSet(st.t.ID)
	if err != nil {
		return nil, err
	}
	at := make(map[int64]int, len(ids))
	for _, id := range ids {
		at[id] = -1
	}
	for i, id := range fs.IDs {
		if _, ok := at[id]; ok {
			at[id] = i
		}
	}
	for _, id := range ids {
		if at[id] < 0 {
			return nil, fmt.Errorf("file %d is not a live file of table %q at snapshot %d", id, st.t.Name, st.r.Snapshot().ID)
		}
		f, err := st.r.FileAt(fs, at[id])
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}
