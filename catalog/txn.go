package catalog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"github.com/rocklake/rocklake/catalog/catalogpb"
	"github.com/rocklake/rocklake/internal/sqllex"
	"github.com/rocklake/rocklake/kv"
	"github.com/rocklake/rocklake/membership"
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
		defs[i] = ColumnDef{Name: f.Name, Type: f.Type.String()}
	}
	return defs, nil
}

// topLevel reports whether offset at of a column list lies outside every
// parenthesis the list opens (strings and quoted names aside).
func topLevel(spec string, at int) bool {
	m := sqllex.Mask(spec[:min(at, len(spec))])
	return strings.Count(m, "(") == strings.Count(m, ")")
}

// NewFile describes a data file to register, with its statistics.
type NewFile struct {
	Path           string
	PathIsRelative bool
	Format         string // default "parquet"
	RecordCount    int64
	FileSizeBytes  int64
	FooterSize     int64
	RowGroupCount  int32
	Columns        []FileColumn
	// ColumnsMatchTable says the file's top-level columns are exactly the
	// table's (names, order, types), so a reader need not match them by
	// name. The writer of the registration vouches for it.
	ColumnsMatchTable bool
	// Owner says whether cleanup may delete the file once no snapshot
	// reads it. Zero: the user's.
	Owner Ownership
	// Identity, when known, is the file's device and inode: a commit
	// refuses a file that is, under another path, a live file of the
	// table.
	Identity FileIdentity
	// ModifiedUnixNanos is the file's modification time as registration
	// read it (0: unknown): readers refuse a file whose time changed.
	ModifiedUnixNanos int64
	// ChangedUnixNanos is its status change time (ctime) as registration
	// read it (0: unknown): readers refuse a file whose ctime moved.
	ChangedUnixNanos int64
	// FooterFingerprint is a hash of its footer (pqmeta.Fingerprint; 0:
	// unknown), which verify and refresh compare.
	FooterFingerprint uint64
	// ETag is an object's entity tag as listed (objects only): readers
	// refuse an object whose ETag changed.
	ETag string
	// IgnoredColumns are top-level columns the file holds and the table
	// lacks, recorded so that they can be mapped in later.
	IgnoredColumns []string
	// PartitionValues give the file's value of every partition column of
	// the table, by column name; the commit refuses a file that misses
	// one. Its statistics for those columns are the caller's (min = max =
	// the value), as for any other column.
	PartitionValues []NewPartitionValue
	// LayoutValues are, for a file a rewrite wrote under the table's
	// declared layout, its value of each field (DataFile.LayoutValues):
	// the commit refuses a field the table's layout lacks.
	LayoutValues []LayoutValue
}

// NewPartitionValue is a new file's value of one partition column, in the
// DuckLake text form of its type; an unknown Value is NULL.
type NewPartitionValue struct {
	Column string
	Value  stats.Maybe[string]
}

// FileColumn holds one column's statistics in a new file. Path is the
// top-level column name, then child names for nested leaves ("element",
// "key", "value", or a struct field). A column without a FileColumn gets no
// stats row, which readers treat as unknown.
type FileColumn struct {
	Path      []string
	Stats     stats.Column
	RowGroups []RowGroupStats
	Variants  []VariantStats
	// Filter, when set, is a membership filter (package membership) of the
	// column's distinct values in the file.
	Filter *Filter
}

// Filter is a stored membership filter.
type Filter struct {
	Kind     string
	Data     []byte
	Distinct int64
	// Signature, when set, is the file's membership signature
	// (membership.BuildSignature over the same values): the commit adds it
	// to the column's slabs, the catalog-wide index a probe reads a few
	// bytes of per file (membership.go).
	Signature []uint64
}

// Txn collects changes that Commit applies as one new snapshot, atomically.
// Operations are checked against the newest state at Commit; a failed
// commit writes nothing.
type Txn struct {
	c     *Catalog
	base  int64
	ops   []op
	done  bool
	token []byte
}

type opKind uint8

const (
	opCreateTable opKind = iota
	opDropTable
	opRenameTable
	opAddFiles
	opRemoveFiles
	opAlterTable
	opRestamp
	opRegisterAgain
	opSetDeletes
	opExpectDeletes
)

type op struct {
	kind    opKind
	table   string
	columns []ColumnDef
	files   []NewFile
	fileIDs []int64
	newName string
	uuid    string
	alter   Alteration
	stamps  []Restamp
	deletes []NewDeleteFile
	expect  map[int64]int64
}

// Begin starts a transaction based on the newest snapshot.
func (c *Catalog) Begin() (*Txn, error) {
	kvs, err := c.store.NewSnapshot()
	if err != nil {
		return nil, err
	}
	defer kvs.Close()
	head, err := latestSnapshot(kvs)
	if err != nil {
		return nil, err
	}
	return &Txn{c: c, base: head.ID}, nil
}

// Base is the snapshot the transaction started from.
func (t *Txn) Base() int64 { return t.base }

// CreateTable adds a table to the schema "main".
func (t *Txn) CreateTable(name string, cols []ColumnDef) {
	t.ops = append(t.ops, op{kind: opCreateTable, table: name, columns: cols})
}

// CreateTableWithUUID is CreateTable keeping a table's identity from
// elsewhere (an import of another catalog): id must be a UUID.
func (t *Txn) CreateTableWithUUID(name, id string, cols []ColumnDef) {
	t.ops = append(t.ops, op{kind: opCreateTable, table: name, columns: cols, uuid: id})
}

// DropTable removes a table; its files stay readable by time travel.
func (t *Txn) DropTable(name string) { t.ops = append(t.ops, op{kind: opDropTable, table: name}) }

// RenameTable gives a table a new name from this snapshot on; earlier
// snapshots still know it by the old one. Its files and statistics stay
// as they are (they belong to the table's id, not its name).
func (t *Txn) RenameTable(name, newName string) {
	t.ops = append(t.ops, op{kind: opRenameTable, table: name, newName: newName})
}

// AddFiles registers data files in a table.
func (t *Txn) AddFiles(table string, files ...NewFile) {
	t.ops = append(t.ops, op{kind: opAddFiles, table: table, files: files})
}

// RemoveFiles retires data files from a table. The table's stats are then
// recomputed exactly from the files that remain.
func (t *Txn) RemoveFiles(table string, fileIDs ...int64) {
	t.ops = append(t.ops, op{kind: opRemoveFiles, table: table, fileIDs: fileIDs})
}

// Restamp records new identities for live local files of a table, in
// place (see restamp.go).
func (t *Txn) Restamp(table string, files ...Restamp) {
	t.ops = append(t.ops, op{kind: opRestamp, table: table, stamps: files})
}

// RegisterAgain retires live files of a table that the same transaction
// registers again at the same locations (AddFiles): new statistics for a
// file whose content changed in place. The retired rows say so
// (DataFile.RegisteredAgain): their rows went to the new registrations,
// not into files a rewrite wrote. Commit refuses, with ErrInvalid, a file
// the transaction does not register again.
func (t *Txn) RegisterAgain(table string, fileIDs ...int64) {
	t.ops = append(t.ops, op{kind: opRegisterAgain, table: table, fileIDs: fileIDs})
}

// Commit writes one snapshot with every change, in one synced batch, or
// nothing. It fails with ErrConflict when a snapshot committed since Begin
// changed a table this transaction changes. An error matching
// kv.ErrUnknownOutcome (test for it first: it may match ErrConflict too)
// means an attempt was cut off and may have landed.
func (t *Txn) Commit() (Snapshot, error) {
	if t.done {
		return Snapshot{}, errors.New("catalog: transaction already committed")
	}
	t.done = true
	if len(t.ops) == 0 {
		return Snapshot{}, errors.New("catalog: nothing to commit")
	}
	token := uuid.New()
	t.token = token[:]
	c := t.c
	c.commitMu.Lock()
	defer c.commitMu.Unlock()
	return retryWrites("commit", func(a attempt) (Snapshot, error) {
		if a.unknown {
			// The store could not say whether an earlier attempt landed:
			// look for it before trying again, so that it lands once.
			if s, ok, err := t.findCommitted(); err != nil || ok {
				return s, err
			}
		}
		return t.commitOnce()
	})
}

// commitOnce builds the commit on the newest snapshot and writes it on
// condition that no other writer wrote since it read (the fence).
func (t *Txn) commitOnce() (Snapshot, error) {
	c := t.c
	kvs, err := c.store.NewSnapshot()
	if err != nil {
		return Snapshot{}, err
	}
	defer kvs.Close()
	head, err := latestSnapshot(kvs)
	if err != nil {
		return Snapshot{}, err
	}
	w := &commitWriter{
		c: c, r: &Reader{c: c, kvs: kvs, snap: head, head: true}, head: head,
		next: Snapshot{
			ID: head.ID + 1, Time: c.now().UTC(), SchemaVersion: head.SchemaVersion,
			NextCatalogID: head.NextCatalogID, NextFileID: head.NextFileID,
		},
		tables: map[string]*tableState{},
		batch:  c.store.NewBatch(),
	}
	defer w.batch.Close()
	if head.ID != t.base {
		if err := w.checkConflicts(t); err != nil {
			return Snapshot{}, err
		}
	}
	var unchanged error
	changed := false
	for _, o := range t.ops {
		var err error
		switch o.kind {
		case opCreateTable:
			err = w.createTable(o.table, o.columns, o.uuid)
		case opDropTable:
			err = w.dropTable(o.table)
		case opRenameTable:
			err = w.renameTable(o.table, o.newName)
		case opAddFiles:
			err = w.addFiles(o.table, o.files)
		case opRemoveFiles:
			err = w.removeFiles(o.table, o.fileIDs, false)
		case opAlterTable:
			err = w.alterTable(o.table, o.alter)
		case opRestamp:
			err = w.restamp(o.table, o.stamps)
		case opRegisterAgain:
			err = w.removeFiles(o.table, o.fileIDs, true)
		case opSetDeletes:
			err = w.setDeletes(o.table, o.deletes)
		case opExpectDeletes:
			err = w.expectDeletes(o.table, o.expect)
		}
		if errors.Is(err, ErrUnchanged) {
			if unchanged == nil {
				unchanged = err
			}
			continue
		}
		if err != nil {
			return Snapshot{}, err
		}
		changed = true
	}
	if !changed {
		// A snapshot that changes nothing would still show in the
		// history and end every cache keyed by the head, for nothing.
		return w.head, unchanged
	}
	if err := w.checkRegisteredAgain(); err != nil {
		return Snapshot{}, err
	}
	if err := w.finish(t.token); err != nil {
		return Snapshot{}, err
	}
	if err := fence(kvs, w.batch); err != nil {
		return Snapshot{}, err
	}
	if err := w.batch.Commit(); err != nil {
		return Snapshot{}, fmt.Errorf("commit snapshot %d: %w", w.next.ID, err)
	}
	for _, id := range w.changes.RestampedTables {
		// Older snapshots read the new rows too; another process's
		// cache keeps the old ones until evicted, which only refuses.
		c.plan.dropFileSets(id)
	}
	return w.next, nil
}

// findCommitted looks for this transaction's snapshot after its base.
func (t *Txn) findCommitted() (Snapshot, bool, error) {
	it, err := t.c.store.NewIter(key(tagSnapshot, t.base+1), key(tagSnapshot+1))
	if err != nil {
		return Snapshot{}, false, err
	}
	defer it.Close()
	var p catalogpb.Snapshot
	for ok := it.First(); ok; ok = it.Next() {
		p.Reset()
		if err := decodeValue(it.Value(), &p); err != nil {
			return Snapshot{}, false, fmt.Errorf("snapshot row %x: %w", it.Key(), err)
		}
		if bytes.Equal(p.CommitToken, t.token) {
			return snapshotFromPB(&p), true, nil
		}
	}
	return Snapshot{}, false, it.Error()
}

// tableState is what a commit knows of one table it touches.
type tableState struct {
	t          Table
	created    bool
	dropped    bool
	inserted   bool
	deleted    bool
	cols       []Column
	byPath     map[string]Column  // lower-cased path joined by \x00
	live       map[int64]DataFile // the head's live files, loaded only when needed
	loaded     bool
	livePaths  map[string]int64          // paths added by this commit (and, once loaded, the head's)
	gonePaths  map[string]bool           // paths removed by this commit
	liveIdents map[FileIdentity]DataFile // files added by this commit, by identity
	goneIdents map[FileIdentity]bool     // identity index entries deleted by this commit
	removed    map[int64]bool
	added      []addedFile
	stats      *TableStats
	accs       map[int64]*colAcc
	seeded     bool
	varLists   map[int64][][]VariantStats // new files' variant stats per column
	varsLoaded bool
	sigs       map[int64][]fileSig // new files' membership signatures per column
	// blocks: the table's files are all in file blocks (blocks.go);
	// blocksKnown: blocks was read.
	blocks, blocksKnown bool
	// restamped: live files' identities were replaced in place (restamp.go);
	// again: the locations of files retired to be registered again, to
	// the retired file's id.
	restamped bool
	again     map[string]int64
	// altered: the table's columns changed (alter.go); synth holds the
	// statistics the alteration stored, per column and file, which the
	// head does not hold yet.
	altered bool
	synth   map[int64]map[int64]*stats.Column
	// deletes: the current delete files (deletes.go), by data file id,
	// once loaded; deletesChanged: the commit records some.
	deletes        map[int64]DeleteFile
	deletesChanged bool
}

type addedFile struct {
	f  DataFile
	fc map[int64]*FileColumn
}

type commitWriter struct {
	c        *Catalog
	r        *Reader
	head     Snapshot
	next     Snapshot
	tables   map[string]*tableState // by lower-cased name
	batch    kv.Batch
	ddl      bool
	changes  catalogpb.Changes
	writeErr error
	fetched  map[string][]byte // head keys prefetched in one round trip (nil: missing)
}

func (w *commitWriter) put(k []byte, m proto.Message) {
	if w.writeErr != nil {
		return
	}
	v, err := encodeValue(m)
	if err == nil {
		err = w.batch.Set(k, v)
	}
	w.writeErr = err
}

// table resolves a live table by name, from this commit's own changes first.
func (w *commitWriter) table(name string) (*tableState, error) {
	lname := strings.ToLower(name)
	if ts, ok := w.tables[lname]; ok {
		if ts.dropped {
			return nil, fmt.Errorf("%w %q (dropped in this transaction)", ErrNoSuchTable, name)
		}
		return ts, nil
	}
	t, err := w.r.Table(name)
	if err != nil {
		return nil, err
	}
	ts := &tableState{t: t}
	if err := w.loadTable(ts); err != nil {
		return nil, err
	}
	w.tables[lname] = ts
	return ts, nil
}

func pathKey(path []string) string { return strings.ToLower(strings.Join(path, "\x00")) }

func (w *commitWriter) loadTable(ts *tableState) error {
	cols, err := w.r.Columns(ts.t.ID)
	if err != nil {
		return err
	}
	ts.cols = cols
	ts.byPath = columnPaths(cols)
	ts.live = map[int64]DataFile{}
	ts.livePaths = map[string]int64{}
	ts.gonePaths = map[string]bool{}
	ts.removed = map[int64]bool{}
	return nil
}

// loadFiles reads the head's live files of a table: removals, drops and
// exact recomputes need them; appends do not (they check paths through
// the path index), so that an append costs the same however large the
// table is.
func (w *commitWriter) loadFiles(ts *tableState) error {
	if ts.loaded || ts.created {
		ts.loaded = true
		return nil
	}
	files, err := w.r.Files(ts.t.ID)
	if err != nil {
		return err
	}
	for _, f := range files {
		ts.live[f.ID] = f
		if _, added := ts.livePaths[f.Path]; !added && !ts.gonePaths[f.Path] {
			ts.livePaths[f.Path] = f.ID
		}
	}
	ts.loaded = true
	return nil
}

// prefetchIndexes reads the path and identity index entries of the files
// an append checks, in one round trip where the store can (a networked
// store would otherwise pay one or two per file).
func (w *commitWriter) prefetchIndexes(ts *tableState, files []NewFile) error {
	mg, ok := w.r.kvs.(kv.MultiGetter)
	if !ok || ts.created || len(files) < 2 {
		return nil
	}
	keys := make([][]byte, 0, 2*len(files))
	for _, nf := range files {
		keys = append(keys, keyWithString(tagFilePath, nf.Path, ts.t.ID))
		if nf.Identity.Known() {
			keys = append(keys, identityKey(ts.t.ID, nf.Identity))
		}
	}
	vals, err := mg.GetMany(keys)
	if err != nil {
		return err
	}
	if w.fetched == nil {
		w.fetched = map[string][]byte{}
	}
	for i, k := range keys {
		w.fetched[string(k)] = vals[i]
	}
	return nil
}

// get reads a key of the head, from what prefetchIndexes read when it
// read it (a missing key is a nil value there).
func (w *commitWriter) get(k []byte) ([]byte, error) {
	if v, ok := w.fetched[string(k)]; ok {
		if v == nil {
			return nil, kv.ErrNotFound
		}
		return v, nil
	}
	return w.r.kvs.Get(k)
}

// livePathID reports the live file at a path in the table, if any: one
// added by this commit, else the head's through the path index.
func (w *commitWriter) livePathID(ts *tableState, path string) (int64, bool, error) {
	if id, ok := ts.livePaths[path]; ok {
		return id, true, nil
	}
	if ts.gonePaths[path] || ts.created {
		return 0, false, nil
	}
	raw, err := w.get(keyWithString(tagFilePath, path, ts.t.ID))
	if errors.Is(err, kv.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	var ref catalogpb.DataFile
	if err := decodeValue(raw, &ref); err != nil {
		return 0, false, fmt.Errorf("path index of %s: %w", path, err)
	}
	raw, err = w.r.kvs.Get(key(tagDataFile, ts.t.ID, ref.Id))
	if err != nil {
		return 0, false, nil
	}
	var f catalogpb.DataFile
	if err := decodeValue(raw, &f); err != nil {
		return 0, false, err
	}
	if !visibleAt(w.head.ID, f.BeginSnapshot, f.EndSnapshot) {
		return 0, false, nil
	}
	return f.Id, true, nil
}

// columnPaths maps each column's path of names (Column.Path) to it.
func columnPaths(cols []Column) map[string]Column {
	out := map[string]Column{}
	for _, c := range cols {
		out[pathKey(c.Path)] = c
	}
	return out
}

func (w *commitWriter) checkConflicts(t *Txn) error {
	touched := map[string]bool{}
	creating := map[string]bool{}
	for _, o := range t.ops {
		touched[strings.ToLower(o.table)] = true
		if o.kind == opCreateTable {
			creating["0."+strings.ToLower(o.table)] = true
		}
	}
	// The tables the transaction meant are those its names had at its base
	// snapshot (a name dropped and re-created since names another table).
	baseSnap, err := readSnapshot(w.r.kvs, t.base)
	if errors.Is(err, ErrNoSuchSnapshot) {
		return fmt.Errorf("%w: this transaction began at snapshot %d, since expired; retry", ErrConflict, t.base)
	}
	if err != nil {
		return err
	}
	base := &Reader{c: w.c, kvs: w.r.kvs, snap: baseSnap}
	ids := map[int64]string{}
	for name := range touched {
		if tb, err := base.Table(name); err == nil {
			ids[tb.ID] = tb.Name
		}
	}
	err = scanSnapshots(w.r.kvs, t.base+1, w.head.ID, func(snap Snapshot) error {
		ch, s := snap.Changes, snap.ID
		for _, list := range [][]int64{ch.CreatedTables, ch.DroppedTables, ch.InsertedIntoTables, ch.DeletedFromTables, ch.RenamedTables, ch.AlteredTables, ch.RestampedTables} {
			for _, id := range list {
				if name, ok := ids[id]; ok {
					return fmt.Errorf("%w: table %q was changed by snapshot %d after this transaction began at snapshot %d; retry", ErrConflict, name, s, t.base)
				}
			}
		}
		for _, n := range ch.CreatedNames {
			if creating[strings.ToLower(n)] || touched[strings.TrimPrefix(strings.ToLower(n), "0.")] {
				return fmt.Errorf("%w: table %q was created by snapshot %d after this transaction began at snapshot %d; retry", ErrConflict, strings.TrimPrefix(n, "0."), s, t.base)
			}
		}
		return nil
	})
	var gone *missingSnapshot
	if errors.As(err, &gone) {
		return fmt.Errorf("%w: snapshot %d, committed after this transaction began at snapshot %d, was expired; retry", ErrConflict, gone.id, t.base)
	}
	return err
}

// missingSnapshot reports a gap in a range of snapshots (expired ones).
type missingSnapshot struct{ id int64 }

func (e *missingSnapshot) Error() string {
	return fmt.Sprintf("snapshot %d: %v", e.id, ErrNoSuchSnapshot)
}
func (e *missingSnapshot) Unwrap() error { return ErrNoSuchSnapshot }

// scanSnapshots calls fn for each snapshot from..to in order, in one range
// scan: a reader far behind the head (a commit that lost the fence again
// and again, a plan cache extended over many commits) would otherwise pay
// a round trip per snapshot on a networked store. A gap fails with
// *missingSnapshot.
func scanSnapshots(r kv.Reader, from, to int64, fn func(Snapshot) error) error {
	if from > to {
		return nil
	}
	it, err := r.NewIter(key(tagSnapshot, from), key(tagSnapshot, to+1))
	if err != nil {
		return err
	}
	defer it.Close()
	want := from
	var p catalogpb.Snapshot
	for ok := it.First(); ok; ok = it.Next() {
		p.Reset()
		if err := decodeValue(it.Value(), &p); err != nil {
			return fmt.Errorf("snapshot row %x: %w", it.Key(), err)
		}
		if p.Id != want {
			return &missingSnapshot{want}
		}
		if err := fn(snapshotFromPB(&p)); err != nil {
			return err
		}
		want++
	}
	if err := it.Error(); err != nil {
		return err
	}
	if want <= to {
		return &missingSnapshot{want}
	}
	return nil
}

func (w *commitWriter) createTable(name string, defs []ColumnDef, tableUUID string) error {
	if strings.TrimSpace(name) == "" {
		return fmt.Errorf("%w table name: empty", ErrInvalid)
	}
	if tableUUID == "" {
		tableUUID = uuid.NewString()
	} else if u, err := uuid.Parse(tableUUID); err != nil {
		return fmt.Errorf("%w table %q: uuid %q: %v", ErrInvalid, name, tableUUID, err)
	} else {
		tableUUID = u.String()
	}
	if _, err := w.table(name); err == nil {
		return fmt.Errorf("table %q: %w", name, ErrDuplicate)
	} else if !errors.Is(err, ErrNoSuchTable) {
		return err
	}
	id := w.next.NextCatalogID
	w.next.NextCatalogID++
	s := w.next.ID
	tbl := Table{ID: id, UUID: tableUUID, SchemaID: 0, Name: name, Path: name + "/", PathIsRelative: true, Begin: s}
	w.put(key(tagTable, id, s), &catalogpb.Table{
		Id: id, Uuid: tbl.UUID, SchemaId: 0, Name: name, Path: tbl.Path, PathIsRelative: true, BeginSnapshot: s,
	})
	ts := &tableState{t: tbl, created: true, live: map[int64]DataFile{}, livePaths: map[string]int64{},
		gonePaths: map[string]bool{}, removed: map[int64]bool{}, loaded: true, stats: &TableStats{Columns: map[int64]*TableColumnStats{}}, seeded: true}
	cols, err := buildColumns(id, s, name, defs)
	if err != nil {
		return err
	}
	ts.cols = cols
	for _, c := range cols {
		w.put(key(tagColumn, id, c.ID, s), columnToPB(c, nil))
	}
	ts.byPath = columnPaths(ts.cols)
	ts.accs = map[int64]*colAcc{}
	for _, c := range ts.cols {
		ts.accs[c.ID] = newColAcc(c.Type)
	}
	w.tables[strings.ToLower(name)] = ts
	w.ddl = true
	w.changes.CreatedTables = append(w.changes.CreatedTables, id)
	w.changes.CreatedNames = append(w.changes.CreatedNames, "0."+strings.ToLower(name))
	return w.writeErr
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

func (w *commitWriter) dropTable(name string) error {
	ts, err := w.table(name)
	if err != nil {
		return err
	}
	if ts.created {
		return fmt.Errorf("%w: table %q is created and dropped in one transaction", ErrInvalid, name)
	}
	s := w.next.ID
	w.put(key(tagTable, ts.t.ID, ts.t.Begin), tableToPB(ts.t, &s))
	for _, c := range ts.cols {
		w.put(key(tagColumn, ts.t.ID, c.ID, c.Begin), columnToPB(c, &s))
	}
	if err := w.loadFiles(ts); err != nil {
		return err
	}
	for _, f := range ts.live {
		w.endFile(f)
		if err := w.batch.Delete(keyWithString(tagFilePath, f.Path, ts.t.ID)); err != nil {
			return err
		}
		if err := w.forgetIdentity(ts, f); err != nil {
			return err
		}
		if err := w.endDeletes(ts, f.ID); err != nil {
			return err
		}
	}
	ts.dropped = true
	w.ddl = true
	w.changes.DroppedTables = append(w.changes.DroppedTables, ts.t.ID)
	return w.writeErr
}

func (w *commitWriter) renameTable(name, newName string) error {
	if strings.TrimSpace(newName) == "" {
		return fmt.Errorf("%w table name: empty", ErrInvalid)
	}
	ts, err := w.table(name)
	if err != nil {
		return err
	}
	if ts.created {
		return fmt.Errorf("%w: table %q is created and renamed in one transaction", ErrInvalid, name)
	}
	if other, err := w.table(newName); err == nil && other != ts {
		return fmt.Errorf("table %q: %w", newName, ErrDuplicate)
	} else if err != nil && !errors.Is(err, ErrNoSuchTable) {
		return err
	}
	s := w.next.ID
	old := ts.t
	w.put(key(tagTable, old.ID, old.Begin), tableToPB(old, &s))
	// The path stays: relative file paths are under it.
	renamed := old
	renamed.Name, renamed.Begin = newName, s
	w.put(key(tagTable, old.ID, s), tableToPB(renamed, nil))
	ts.t.Name, ts.t.Begin = newName, s
	delete(w.tables, strings.ToLower(name))
	w.tables[strings.ToLower(newName)] = ts
	w.ddl = true
	w.changes.RenamedTables = append(w.changes.RenamedTables, old.ID)
	w.changes.CreatedNames = append(w.changes.CreatedNames, "0."+strings.ToLower(newName))
	return w.writeErr
}

func (w *commitWriter) endFile(f DataFile) {
	s := w.next.ID
	w.put(key(tagDataFile, f.TableID, f.ID), dataFileToPB(f, &s))
}

func dataFileToPB(f DataFile, end *int64) *catalogpb.DataFile {
	return &catalogpb.DataFile{
		Id: f.ID, TableId: f.TableID, Path: f.Path, PathIsRelative: f.PathIsRelative, Format: f.Format,
		RecordCount: f.RecordCount, FileSizeBytes: f.FileSizeBytes, FooterSize: f.FooterSize,
		RowIdStart: f.RowIDStart, RowGroupCount: f.RowGroupCount, BeginSnapshot: f.Begin, EndSnapshot: end,
		ColumnsMatchTable: f.ColumnsMatchTable, Ownership: catalogpb.Ownership(f.Owner),
		Identity: identityToPB(f.Identity), ModifiedUnixNanos: f.ModifiedUnixNanos, Etag: f.ETag,
		IgnoredColumns: f.IgnoredColumns, PartitionValues: partitionValuesToPB(f.PartitionValues),
		LayoutValues: layoutValuesToPB(f.LayoutValues), ChangedUnixNanos: f.ChangedUnixNanos,
		FooterFingerprint: f.FooterFingerprint, RegisteredAgain: f.RegisteredAgain,
	}
}

// seedStats loads the table's stats as of the head, to widen on append.
func (w *commitWriter) seedStats(ts *tableState) error {
	if ts.seeded {
		return nil
	}
	ts.seeded = true
	stored, err := w.r.fileTableStats(ts.t.ID)
	if err != nil {
		return err
	}
	ts.stats = &TableStats{
		RecordCount: stored.RecordCount, NextRowID: stored.NextRowID,
		FileSizeBytes: stored.FileSizeBytes, FileCount: stored.FileCount,
		Columns: map[int64]*TableColumnStats{},
	}
	ts.accs = map[int64]*colAcc{}
	for _, c := range ts.cols {
		acc := newColAcc(c.Type)
		if cs := stored.Columns[c.ID]; cs != nil && stored.FileCount > 0 {
			acc.seed(cs)
		}
		ts.accs[c.ID] = acc
	}
	return nil
}

func (w *commitWriter) addFiles(name string, files []NewFile) error {
	ts, err := w.table(name)
	if err != nil {
		return err
	}
	if ts.altered {
		return fmt.Errorf("%w: table %q: an alteration is a snapshot of its own", ErrInvalid, name)
	}
	if err := w.seedStats(ts); err != nil {
		return err
	}
	if err := w.prefetchIndexes(ts, files); err != nil {
		return err
	}
	for _, nf := range files {
		if nf.Path == "" {
			return fmt.Errorf("%w data file: empty path", ErrInvalid)
		}
		if err := w.c.checkRoot(nf); err != nil {
			return err
		}
		if id, dup, err := w.livePathID(ts, nf.Path); err != nil {
			return err
		} else if dup {
			return fmt.Errorf("file %s: %w in table %q (as file %d)", nf.Path, ErrDuplicate, ts.t.Name, id)
		}
		if nf.Identity.Known() {
			if other, dup, err := w.liveIdentity(ts, nf); err != nil {
				return err
			} else if dup {
				return fmt.Errorf("file %s: %w in table %q: it is file %d, registered as %s (the same file: device %d, inode %d)",
					nf.Path, ErrDuplicate, ts.t.Name, other.ID, other.Location(ts.t), nf.Identity.Device, nf.Identity.Inode)
			}
		}
		if nf.RecordCount < 0 || nf.FileSizeBytes < 0 {
			return fmt.Errorf("%w data file %s: negative counts", ErrInvalid, nf.Path)
		}
		pvs, err := partitionValues(ts, nf)
		if err != nil {
			return err
		}
		format := nf.Format
		if format == "" {
			format = "parquet"
		}
		f := DataFile{
			ID: w.next.NextFileID, TableID: ts.t.ID, Path: nf.Path, PathIsRelative: nf.PathIsRelative,
			Format: format, RecordCount: nf.RecordCount, FileSizeBytes: nf.FileSizeBytes,
			FooterSize: nf.FooterSize, RowIDStart: ts.stats.NextRowID, RowGroupCount: nf.RowGroupCount,
			Begin: w.next.ID, ColumnsMatchTable: nf.ColumnsMatchTable, Owner: w.c.ownerOf(nf),
			Identity: nf.Identity, ModifiedUnixNanos: nf.ModifiedUnixNanos, ETag: nf.ETag,
			IgnoredColumns: nf.IgnoredColumns, PartitionValues: pvs, LayoutValues: nf.LayoutValues,
			ChangedUnixNanos: nf.ChangedUnixNanos, FooterFingerprint: nf.FooterFingerprint,
		}
		for _, lv := range nf.LayoutValues {
			if !slices.Contains(ts.t.PartitionedBy, PartitionField{ColumnID: lv.ColumnID, Transform: lv.Transform}) {
				return fmt.Errorf("%w file %s: layout value of %s of column %d, which is not a field of table %q's layout", ErrInvalid, nf.Path, lv.Transform, lv.ColumnID, ts.t.Name)
			}
		}
		w.next.NextFileID++
		ts.livePaths[nf.Path] = f.ID
		delete(ts.gonePaths, nf.Path)
		ts.stats.addFile(f)
		w.put(key(tagDataFile, ts.t.ID, f.ID), dataFileToPB(f, nil))
		w.put(keyWithString(tagFilePath, nf.Path, ts.t.ID), &catalogpb.DataFile{Id: f.ID})
		if f.Identity.Known() {
			if ts.liveIdents == nil {
				ts.liveIdents = map[FileIdentity]DataFile{}
			}
			ts.liveIdents[f.Identity] = f
			delete(ts.goneIdents, f.Identity)
			w.put(identityKey(ts.t.ID, f.Identity), &catalogpb.DataFile{Id: f.ID})
		}
		af := addedFile{f: f, fc: map[int64]*FileColumn{}}
		for i := range nf.Columns {
			fc := &nf.Columns[i]
			col, ok := ts.byPath[pathKey(fc.Path)]
			if !ok {
				return fmt.Errorf("file %s: stats for %w %q in table %q", nf.Path, ErrNoSuchColumn, strings.Join(fc.Path, "."), ts.t.Name)
			}
			if af.fc[col.ID] != nil {
				return fmt.Errorf("%w file %s: two stats entries for column %q", ErrInvalid, nf.Path, strings.Join(fc.Path, "."))
			}
			if err := checkStats(col, &fc.Stats); err != nil {
				return fmt.Errorf("file %s column %q: %w", nf.Path, strings.Join(fc.Path, "."), err)
			}
			for j := range fc.Variants {
				if err := checkVariant(&fc.Variants[j]); err != nil {
					return fmt.Errorf("file %s column %q variant %s: %w", nf.Path, strings.Join(fc.Path, "."), fc.Variants[j].Path, err)
				}
			}
			for j := range fc.RowGroups {
				if err := checkStats(col, &fc.RowGroups[j].Stats); err != nil {
					return fmt.Errorf("file %s column %q row group %d: %w", nf.Path, strings.Join(fc.Path, "."), fc.RowGroups[j].Index, err)
				}
			}
			af.fc[col.ID] = fc
			w.put(key(tagFileColumnStats, ts.t.ID, col.ID, f.ID), columnStatsToPB(&fc.Stats))
			for _, rg := range fc.RowGroups {
				w.put(rowGroupKey(ts.t.ID, col.ID, f.ID, rg.Index), &catalogpb.RowGroupStats{
					Stats: columnStatsToPB(&rg.Stats), FirstRow: rg.FirstRow, ColumnIndex: locToPB(rg.ColumnIndex),
					OffsetIndex: locToPB(rg.OffsetIndex), BloomFilter: locToPB(rg.BloomFilter),
				})
			}
			for _, v := range fc.Variants {
				w.put(keyWithString(tagFileVariantStats, v.Path, ts.t.ID, col.ID, f.ID), v.toPB())
			}
			if fl := fc.Filter; fl != nil {
				if _, err := membership.Decode(fl.Data); err != nil || fl.Kind != membership.Kind {
					return fmt.Errorf("%w file %s column %q: membership filter of kind %q: %v", ErrInvalid, nf.Path, strings.Join(fc.Path, "."), fl.Kind, err)
				}
				w.put(key(tagFileFilter, ts.t.ID, col.ID, f.ID), &catalogpb.MembershipFilter{Kind: fl.Kind, Data: fl.Data, DistinctCount: fl.Distinct})
				if fl.Signature != nil {
					if err := membership.CheckSignature(fl.Signature); err != nil {
						return fmt.Errorf("%w file %s column %q: %v", ErrInvalid, nf.Path, strings.Join(fc.Path, "."), err)
					}
					if ts.sigs == nil {
						ts.sigs = map[int64][]fileSig{}
					}
					ts.sigs[col.ID] = append(ts.sigs[col.ID], fileSig{f.ID, fl.Signature})
				}
			}
		}
		for _, c := range ts.cols {
			if fc := af.fc[c.ID]; fc != nil {
				ts.accs[c.ID].add(&fc.Stats)
			} else {
				ts.accs[c.ID].add(nil)
			}
		}
		ts.added = append(ts.added, af)
	}
	if !ts.inserted {
		ts.inserted = true
		w.changes.InsertedIntoTables = append(w.changes.InsertedIntoTables, ts.t.ID)
	}
	return w.writeErr
}

// identityKey indexes a table's live files by identity (FileIdentity), so
// that an append checks its files without reading the table's file list.
// It lives under the path index's tag: no path holds a NUL byte, so no
// path key equals one of these, and what removes a table's path keys
// removes these too.
func identityKey(tableID int64, id FileIdentity) []byte {
	k := keyWithString(tagFilePath, "\x00identity\x00", tableID)
	k = binary.BigEndian.AppendUint64(k, id.Device)
	return binary.BigEndian.AppendUint64(k, id.Inode)
}

// liveIdentity reports the live file of the table that is nf under another
// path, if any: one added by this commit, else the head's through the
// identity index.
func (w *commitWriter) liveIdentity(ts *tableState, nf NewFile) (DataFile, bool, error) {
	if f, ok := ts.liveIdents[nf.Identity]; ok {
		return f, true, nil
	}
	if ts.goneIdents[nf.Identity] || ts.created {
		return DataFile{}, false, nil
	}
	raw, err := w.get(identityKey(ts.t.ID, nf.Identity))
	if errors.Is(err, kv.ErrNotFound) {
		return DataFile{}, false, nil
	}
	if err != nil {
		return DataFile{}, false, err
	}
	var ref catalogpb.DataFile
	if err := decodeValue(raw, &ref); err != nil {
		return DataFile{}, false, fmt.Errorf("identity index of %s: %w", nf.Path, err)
	}
	raw, err = w.r.kvs.Get(key(tagDataFile, ts.t.ID, ref.Id))
	if err != nil {
		return DataFile{}, false, nil
	}
	var p catalogpb.DataFile
	if err := decodeValue(raw, &p); err != nil {
		return DataFile{}, false, err
	}
	f := dataFileFromPB(&p)
	if !visibleAt(w.head.ID, p.BeginSnapshot, p.EndSnapshot) || f.Identity != nf.Identity {
		return DataFile{}, false, nil
	}
	// Inode numbers are reused once a file is deleted: the entry names
	// this file only while the registered path still reaches it.
	if !SameFile(nf.Path, f.Location(ts.t)) {
		return DataFile{}, false, nil
	}
	return f, true, nil
}

// SameFile reports whether two local paths reach the same file now (an
// identity recorded at registration names a file only while its path
// still reaches it: inode numbers are reused).
func SameFile(a, b string) bool {
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}

// forgetIdentity deletes a retired file's identity index entry, unless the
// entry names another file by now (one this commit adds, or one registered
// after the retired file's inode was reused).
func (w *commitWriter) forgetIdentity(ts *tableState, f DataFile) error {
	if !f.Identity.Known() || ts.goneIdents[f.Identity] {
		return nil
	}
	if _, ok := ts.liveIdents[f.Identity]; ok {
		return nil
	}
	k := identityKey(ts.t.ID, f.Identity)
	raw, err := w.r.kvs.Get(k)
	if errors.Is(err, kv.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	var ref catalogpb.DataFile
	if err := decodeValue(raw, &ref); err != nil {
		return fmt.Errorf("identity index of %s: %w", f.Path, err)
	}
	if ref.Id != f.ID {
		return nil
	}
	if ts.goneIdents == nil {
		ts.goneIdents = map[FileIdentity]bool{}
	}
	ts.goneIdents[f.Identity] = true
	return w.batch.Delete(k)
}

// ErrOutsideRoot reports a data file outside the catalog's data root.
var ErrOutsideRoot = errors.New("outside the catalog's data root")

// CheckRoot reports whether a commit would refuse nf for lying outside
// the catalog's data root (ErrOutsideRoot), for a caller that checks many
// commits' files before making the first.
func (c *Catalog) CheckRoot(nf NewFile) error { return c.checkRoot(nf) }

// checkRoot refuses a file that does not lie under the data root, after
// resolving symbolic links and ".." (so neither can lead out of it).
func (c *Catalog) checkRoot(nf NewFile) error {
	if c.dataRoot == "" {
		return nil
	}
	if IsObject(c.dataRoot) || IsObject(nf.Path) {
		// Object keys are never resolved (no links, no ".."; package
		// storage refuses keys with "." or ".." segments), so a prefix is
		// the whole check; a local file is never under an object root, nor
		// an object under a directory.
		if nf.PathIsRelative || !IsObject(nf.Path) || !IsObject(c.dataRoot) || !strings.HasPrefix(nf.Path, c.dataRoot) {
			return fmt.Errorf("file %s: %w %s", nf.Path, ErrOutsideRoot, c.dataRoot)
		}
		return nil
	}
	if nf.PathIsRelative {
		// A relative path resolves against the table's own location, which
		// lies under the root; only a climb out with ".." can escape it.
		rel := filepath.Clean(nf.Path)
		if filepath.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return fmt.Errorf("file %s: %w %s", nf.Path, ErrOutsideRoot, c.dataRoot)
		}
		return nil
	}
	p, err := filepath.Abs(nf.Path)
	if err != nil {
		return err
	}
	if resolved, err := filepath.EvalSymlinks(p); err == nil {
		p = resolved
	}
	rel, err := filepath.Rel(c.dataRoot, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return fmt.Errorf("file %s: %w %s", nf.Path, ErrOutsideRoot, c.dataRoot)
	}
	return nil
}

// checkStats rejects bounds that do not decode as the column's type, or a
// min above the max: a catalog must not hold a bound it cannot use.
func checkStats(col Column, st *stats.Column) error {
	codec, ok := types.CodecFor(col.Type)
	if !ok {
		if st.Min.Known || st.Max.Known {
			return fmt.Errorf("%w stats: type %s keeps no min/max", ErrInvalid, types.DisplayName(col.Type))
		}
		return nil
	}
	for _, b := range []stats.Maybe[[]byte]{st.Min, st.Max} {
		if b.Known {
			v, err := codec.Decode(b.V)
			if err != nil {
				return fmt.Errorf("%w bound: %v", ErrInvalid, err)
			}
			// Only the canonical encoding compares right against others.
			if re, err := codec.Encode(v); err != nil || !bytes.Equal(re, b.V) {
				return fmt.Errorf("%w bound: % x is not the canonical encoding of %s", ErrInvalid, b.V, codec.Format(v))
			}
		}
	}
	if st.Min.Known && st.Max.Known && codec.Ordered() && codec.Compare(st.Min.V, st.Max.V) > 0 {
		return fmt.Errorf("%w stats: min %s > max %s", ErrInvalid, fmtBound(codec, st.Min.V), fmtBound(codec, st.Max.V))
	}
	return nil
}

// checkVariant applies checkStats to a sub-field in its shredded type.
func checkVariant(v *VariantStats) error {
	col := Column{Type: parseOrUnknown(v.ShreddedType)}
	st := stats.Column{Min: v.Min, Max: v.Max}
	if err := checkStats(col, &st); err != nil {
		return err
	}
	for _, g := range v.RowGroups {
		st := stats.Column{Min: g.Min, Max: g.Max}
		if err := checkStats(col, &st); err != nil {
			return fmt.Errorf("row group %d: %w", g.Index, err)
		}
	}
	return nil
}

func fmtBound(c *types.Codec, b []byte) string {
	v, err := c.Decode(b)
	if err != nil {
		return fmt.Sprintf("%x", b)
	}
	return c.Format(v)
}

// removeFiles retires files; again marks them registered again by this
// commit (Txn.RegisterAgain), which checkRegisteredAgain holds it to.
func (w *commitWriter) removeFiles(name string, ids []int64, again bool) error {
	ts, err := w.table(name)
	if err != nil {
		return err
	}
	if ts.altered {
		return fmt.Errorf("%w: table %q: an alteration is a snapshot of its own", ErrInvalid, name)
	}
	if err := w.loadFiles(ts); err != nil {
		return err
	}
	for _, id := range ids {
		f, ok := ts.live[id]
		if !ok || ts.removed[id] {
			return fmt.Errorf("%w %d in table %q at snapshot %d", ErrNoSuchFile, id, ts.t.Name, w.head.ID)
		}
		ts.removed[id] = true
		delete(ts.livePaths, f.Path)
		ts.gonePaths[f.Path] = true
		if again {
			f.RegisteredAgain = true
			if ts.again == nil {
				ts.again = map[string]int64{}
			}
			ts.again[f.Location(ts.t)] = f.ID
		}
		w.endFile(f)
		if err := w.batch.Delete(keyWithString(tagFilePath, f.Path, ts.t.ID)); err != nil {
			return err
		}
		if err := w.forgetIdentity(ts, f); err != nil {
			return err
		}
		if err := w.endDeletes(ts, f.ID); err != nil {
			return err
		}
	}
	if !ts.deleted {
		ts.deleted = true
		if !ts.deletesChanged {
			w.changes.DeletedFromTables = append(w.changes.DeletedFromTables, ts.t.ID)
		}
	}
	return w.writeErr
}

// recompute rebuilds a table's stats exactly from the files that survive
// this commit: the head's live files less the removed ones, plus the added.
func (w *commitWriter) recompute(ts *tableState) error {
	if err := w.loadFiles(ts); err != nil {
		return err
	}
	st := &TableStats{Columns: map[int64]*TableColumnStats{}}
	var survivors []DataFile
	for id, f := range ts.live {
		if !ts.removed[id] {
			survivors = append(survivors, f)
			st.addFile(f)
		}
	}
	for _, af := range ts.added {
		st.addFile(af.f)
	}
	keep := map[int64]bool{}
	for _, f := range survivors {
		keep[f.ID] = true
	}
	ts.accs = map[int64]*colAcc{}
	for _, c := range ts.cols {
		acc := newColAcc(c.Type)
		if made, ok := ts.synth[c.ID]; ok {
			for _, f := range survivors {
				acc.add(made[f.ID])
			}
			ts.accs[c.ID] = acc
			continue
		}
		var n int
		err := w.r.FileColumnStats(ts.t.ID, c.ID, func(fileID int64, cs *stats.Column) error {
			if keep[fileID] {
				acc.add(cs)
				n++
			}
			return nil
		})
		if err != nil {
			return err
		}
		if n < len(survivors) {
			acc.add(nil)
		}
		for _, af := range ts.added {
			if fc := af.fc[c.ID]; fc != nil {
				acc.add(&fc.Stats)
			} else {
				acc.add(nil)
			}
		}
		ts.accs[c.ID] = acc
	}
	// Row ids keep counting up: a removed file's ids are never reused.
	st.NextRowID = max(st.NextRowID, ts.stats.NextRowID)
	ts.stats = st
	return nil
}

// variants returns the table-level variant stats of a VARIANT column over
// the files that survive the commit.
func (w *commitWriter) variants(ts *tableState, col Column) ([]VariantStats, error) {
	if err := w.loadFiles(ts); err != nil {
		return nil, err
	}
	var lists [][]VariantStats
	for id := range ts.live {
		if ts.removed[id] {
			continue
		}
		vs, err := w.r.FileVariantStats(ts.t.ID, col.ID, id)
		if err != nil {
			return nil, err
		}
		lists = append(lists, vs)
	}
	for _, af := range ts.added {
		var vs []VariantStats
		if fc := af.fc[col.ID]; fc != nil {
			vs = fc.Variants
		}
		lists = append(lists, vs)
	}
	return mergeVariantLists(lists), nil
}

func (w *commitWriter) finish(token []byte) error {
	narrowed := false
	for _, ts := range w.tables {
		if ts.dropped {
			continue
		}
		if ts.deleted || ts.altered {
			if !ts.seeded {
				if err := w.seedStats(ts); err != nil {
					return err
				}
			}
			if err := w.recompute(ts); err != nil {
				return err
			}
			narrowed = true
		}
	}
	restamped := false
	for _, ts := range w.tables {
		restamped = restamped || ts.restamped
	}
	if narrowed || restamped {
		// Stats may have narrowed, or file rows changed in place: advance
		// next_file_id even when no file was written, so that nothing keyed
		// by it (a cache of table stats, of file rows) can mistake this
		// state for an older one.
		w.next.NextFileID++
	}
	if w.ddl {
		w.next.SchemaVersion++
	}
	for _, ts := range w.tables {
		if (ts.restamped || ts.deletesChanged) && !(ts.dropped || ts.created || ts.inserted || ts.deleted || ts.altered) {
			// Its stats are what they were (a delete file only narrows
			// what they bound: TableStats adjusts them as it reads); the
			// row says which state they describe (TableStats reads them
			// only for that one).
			if err := w.seedStats(ts); err != nil {
				return err
			}
			w.put(key(tagTableStats, ts.t.ID), ts.stats.toPB(w.next))
			continue
		}
		if ts.dropped || !(ts.created || ts.inserted || ts.deleted || ts.altered) {
			continue
		}
		for _, c := range ts.cols {
			cs := ts.accs[c.ID].result()
			if c.Type.Kind == types.KindVariant && (ts.inserted || ts.deleted || ts.altered) {
				vs, err := w.variants(ts, c)
				if err != nil {
					return err
				}
				cs.Variants = vs
			}
			ts.stats.Columns[c.ID] = &cs
			w.put(key(tagTableColumnStats, ts.t.ID, c.ID), cs.toPB())
			if c.Type.Kind == types.KindVariant {
				if err := w.replaceTableVariants(ts.t.ID, c.ID, cs.Variants); err != nil {
					return err
				}
			}
		}
		w.put(key(tagTableStats, ts.t.ID), ts.stats.toPB(w.next))
		if err := w.writeSlabs(ts); err != nil {
			return err
		}
		if err := w.writeBlocks(ts); err != nil {
			return err
		}
	}
	w.next.Changes = Changes{
		CreatedTables: w.changes.CreatedTables, DroppedTables: w.changes.DroppedTables,
		InsertedIntoTables: w.changes.InsertedIntoTables, DeletedFromTables: w.changes.DeletedFromTables,
		CreatedNames: w.changes.CreatedNames, RenamedTables: w.changes.RenamedTables, AlteredTables: w.changes.AlteredTables,
		RestampedTables: w.changes.RestampedTables,
	}
	w.put(key(tagSnapshot, w.next.ID), &catalogpb.Snapshot{
		Id: w.next.ID, TimeUnixMicros: w.next.Time.UnixMicro(), SchemaVersion: w.next.SchemaVersion,
		NextCatalogId: w.next.NextCatalogID, NextFileId: w.next.NextFileID, Changes: &w.changes,
		CommitToken: token,
	})
	return w.writeErr
}

func (w *commitWriter) replaceTableVariants(tableID, colID int64, vs []VariantStats) error {
	err := scanPrefix(w.r, key(tagTableVariantStats, tableID, colID), func(k, _ []byte) error {
		return w.batch.Delete(append([]byte(nil), k...))
	})
	if err != nil {
		return err
	}
	for _, v := range vs {
		w.put(keyWithString(tagTableVariantStats, v.Path, tableID, colID), v.toPB())
	}
	return nil
}

// partitionValues checks a new file's partition values against the
// table's partition columns, one value each, and numbers them by column:
// a file without its partition's value would read as NULL there, which no
// query could tell from a NULL partition.
func partitionValues(ts *tableState, nf NewFile) ([]PartitionValue, error) {
	given := map[string]NewPartitionValue{}
	for _, v := range nf.PartitionValues {
		k := strings.ToLower(v.Column)
		if _, dup := given[k]; dup {
			return nil, fmt.Errorf("%w data file %s: two values for partition column %q", ErrInvalid, nf.Path, v.Column)
		}
		given[k] = v
	}
	var out []PartitionValue
	for _, c := range ts.cols {
		if c.Partition == "" || c.Parent.Known {
			continue
		}
		v, ok := given[strings.ToLower(c.Name)]
		if !ok {
			return nil, fmt.Errorf("%w data file %s: no value for partition column %q of table %q", ErrInvalid, nf.Path, c.Name, ts.t.Name)
		}
		delete(given, strings.ToLower(c.Name))
		if v.Value.Known {
			codec, ok := types.CodecFor(c.Type)
			if !ok {
				return nil, fmt.Errorf("%w data file %s: partition column %q of type %s has no text form", ErrInvalid, nf.Path, c.Name, types.DisplayName(c.Type))
			}
			if _, err := codec.Parse(v.Value.V); err != nil {
				return nil, fmt.Errorf("%w data file %s: partition column %q: value %q is not a %s: %v", ErrInvalid, nf.Path, c.Name, v.Value.V, c.Type, err)
			}
		}
		out = append(out, PartitionValue{ColumnID: c.ID, Value: v.Value})
	}
	for _, v := range given {
		return nil, fmt.Errorf("%w data file %s: %q is not a partition column of table %q", ErrInvalid, nf.Path, v.Column, ts.t.Name)
	}
	return out, nil
}
