package catalog

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"github.com/rocklake/rocklake/catalog/catalogpb"
	"github.com/rocklake/rocklake/kv"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

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
	// leases must still be there when the commit has read the head
	// (Hold).
	leases []*Lease

	attempts int // how many times Commit tried to write
	// baseIDs: the tables the ops' names (touched, lower-cased; creating,
	// "0."-qualified) meant at base, resolved by the first attempt that
	// needs them (resolveAtBase).
	baseIDs           map[int64]string
	touched, creating map[string]bool
	// reads: what the attempts read, for the next (reread.go).
	reads readLog
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
	for i := range t.ops {
		if o := &t.ops[i]; o.kind == opCreateTable && o.uuid == "" {
			// One identity whichever attempt lands, so that an attempt
			// built from an earlier one's reads writes what one built
			// from fresh reads would (reread.go).
			o.uuid = uuid.NewString()
		}
	}
	c := t.c
	c.commitMu.Lock()
	defer c.commitMu.Unlock()
	return retryWrites("commit", func(a attempt) (Snapshot, error) {
		t.attempts++
		if a.unknown {
			// The store could not say whether an earlier attempt landed:
			// look for it before trying again, so that it lands once.
			if s, ok, err := t.findCommitted(); err != nil || ok {
				return s, err
			}
		}
		// Where the store said an earlier attempt wrote nothing (it
		// failed, or its fence was taken), the attempt below looks for it
		// all the same, in the snapshots since the base that its conflict
		// check reads anyway (Txn.checkConflicts): were the
		// store wrong (a COMMIT it retried itself after it had landed
		// then finds its own fence taken), the attempt would take its own
		// commit for another writer's and answer ErrConflict for a commit
		// that landed. Found by the storm with a server shut down
		// immediately.
		if a.lost >= lockAfterLost {
			if s, ok, err := t.commitLocked(); ok {
				return s, err
			}
		}
		return t.commitOnce(c.store.NewBatch)
	})
}

// estimateBytes is about what the commit of the transaction's added files
// writes (file rows, column statistics, row-group statistics, filters);
// an estimate for sizing the batch (kv.Reserver), 0 when it adds none.
func (t *Txn) estimateBytes() int {
	n := 0
	for _, o := range t.ops {
		for _, f := range o.files {
			n += 256 + 2*len(f.Path)
			for _, c := range f.Columns {
				n += 96 + 64*len(c.RowGroups) + 64*len(c.Variants)
				if c.Filter != nil {
					n += 64 + len(c.Filter.Data) + 8*len(c.Filter.Signature)
				}
			}
		}
	}
	return n
}

// commitOnce builds the commit on the newest snapshot and writes it, with
// a batch from newBatch, on condition that no other writer wrote since it
// read (the fence).
func (t *Txn) commitOnce(newBatch func() kv.Batch) (Snapshot, error) {
	c := t.c
	snap, err := c.store.NewSnapshot()
	if err != nil {
		return Snapshot{}, err
	}
	defer snap.Close()
	kvs := kv.Snapshot(snap)
	var cr *cachedReader
	if recordsReads(c.store) {
		kvs, cr = newCachedReader(snap, &t.reads)
	}
	head, err := latestSnapshot(kvs)
	if err != nil {
		return Snapshot{}, err
	}
	fenceOld, err := kvs.Get(key(tagFence))
	if errors.Is(err, kv.ErrNotFound) {
		fenceOld, err = nil, nil
	}
	if err != nil {
		return Snapshot{}, err
	}
	// After the first read: orphan cleanup deletes a lease before it moves
	// the fence, so a lease seen here is either still there at the write
	// or the fence this commit read is gone (see lease.go).
	for _, l := range t.leases {
		if err := l.Check(); err != nil {
			return Snapshot{}, err
		}
	}
	if len(t.leases) > 0 && leasesChecked != nil {
		leasesChecked()
	}
	ch := t.reads.startChain()
	if head.ID != t.base {
		if own, landed, err := t.checkConflicts(kvs, head, ch); err != nil || landed {
			return own, err
		}
	}
	// What the attempts before read holds from here on where ch says so,
	// and what this one reads is recorded as of head.
	ch.finish(head.ID, fenceOld)
	if cr != nil {
		cr.serve = t.reads.valid
		t.reads.valid, t.reads.at, t.reads.fence = true, head.ID, fenceOld
	}
	served := t.reads.served
	fenceNew := uuid.New()
	now := c.now().UTC()
	w, err := t.build(c, kvs, head, now, fenceOld, fenceNew[:], newBatch())
	if t.reads.served > served {
		if verifyRereads {
			if verr := t.verifyBuild(snap, w, err, head, now, fenceOld, fenceNew[:]); verr != nil {
				w.batch.Close()
				return Snapshot{}, verr
			}
		}
		if err != nil || !w.changed {
			// A refusal, or nothing to write, is decided on fresh reads:
			// what an earlier attempt read is trusted to build a commit
			// (and checked to in tests), never to fail or skip one.
			w.batch.Close()
			cr.serve = false
			w, err = t.build(c, kvs, head, now, fenceOld, fenceNew[:], newBatch())
		}
	}
	defer w.batch.Close()
	if err != nil {
		return Snapshot{}, err
	}
	if !w.changed {
		return w.head, w.unchanged
	}
	if err := w.batch.Expect(key(tagFence), fenceOld); err != nil {
		return Snapshot{}, err
	}
	if err := w.batch.Set(key(tagFence), fenceNew[:]); err != nil {
		return Snapshot{}, err
	}
	if beforeBatchCommit != nil {
		beforeBatchCommit(t)
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

// build applies the transaction's operations to head, read through kvs,
// into batch: the commit, short of its fence. Where no operation changed
// anything, w.changed is unset and w.unchanged says why (ErrUnchanged).
// w is never nil: its batch is the caller's to close.
func (t *Txn) build(c *Catalog, kvs kv.Snapshot, head Snapshot, now time.Time, fenceOld, fenceNew []byte, batch kv.Batch) (*commitWriter, error) {
	nb := newNotingBatch(batch)
	w := &commitWriter{
		c: c, r: &Reader{c: c, kvs: kvs, snap: head, head: true}, head: head,
		next: Snapshot{
			ID: head.ID + 1, Time: now, SchemaVersion: head.SchemaVersion,
			NextCatalogID: head.NextCatalogID, NextFileID: head.NextFileID,
		},
		tables: map[string]*tableState{},
		batch:  nb, raw: batch, nb: nb,
		fenceOld: fenceOld, fenceNew: fenceNew,
	}
	if r, ok := batch.(kv.Reserver); ok {
		r.Reserve(t.estimateBytes())
	}
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
			if w.unchanged == nil {
				w.unchanged = err
			}
			continue
		}
		if err != nil {
			return w, err
		}
		w.changed = true
	}
	if !w.changed {
		// A snapshot that changes nothing would still show in the
		// history and end every cache keyed by the head, for nothing.
		return w, nil
	}
	if err := w.checkRegisteredAgain(); err != nil {
		return w, err
	}
	return w, w.finish(t.token)
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
	// deletes: the current delete files (deletes.go) the commit knows, by
	// data file id; deletesChanged: the commit records some.
	deletes        map[int64]DeleteFile
	deletesChanged bool
	// delKnown: the data files whose current delete file the commit knows
	// (deletes has it, or it has none), looked up alone or changed;
	// deletesAll: every one of the table's is in deletes.
	delKnown   map[int64]bool
	deletesAll bool
}

type addedFile struct {
	f  DataFile
	fc map[int64]*FileColumn
}

type commitWriter struct {
	c      *Catalog
	r      *Reader
	head   Snapshot
	next   Snapshot
	tables map[string]*tableState // by lower-cased name
	// batch takes the commit's writes, noting them (nb); raw is the
	// store's batch under it, asked for its optional extras, whose
	// writes the commit notes itself.
	batch              kv.Batch
	raw                kv.Batch
	nb                 *notingBatch
	fenceOld, fenceNew []byte
	changed            bool  // an operation changed something
	unchanged          error // why none did (ErrUnchanged)
	ddl                bool
	changes            catalogpb.Changes
	writeErr           error
	fetched            map[string][]byte // head keys prefetched in one round trip (nil: missing)
}

func (w *commitWriter) put(k []byte, m proto.Message) {
	if w.writeErr != nil {
		return
	}
	if s, ok := w.raw.(kv.InPlaceSetter); ok {
		// Encoded into the batch itself: the same bytes encodeValue makes.
		n := proto.MarshalOptions{Deterministic: true}.Size(m)
		v, done := s.SetInPlace(k, envelopeLen+n)
		v = append(v[:0], envelopeVersion, magic0, magic1)
		out, err := proto.MarshalOptions{Deterministic: true, UseCachedSize: true}.MarshalAppend(v, m)
		// v holds envelopeLen+n bytes, so a value of that length was
		// encoded in place: only its length needs checking.
		if err == nil && len(out) != envelopeLen+n {
			err = fmt.Errorf("catalog: a value encoded to %d bytes, %d expected", len(out), envelopeLen+n)
		}
		if err == nil {
			w.nb.noteWrite(k, out)
			err = done()
		}
		w.writeErr = err
		return
	}
	v, err := encodeValue(m)
	if err == nil {
		err = w.batch.Set(k, v)
	}
	w.writeErr = err
}

// putEncoded writes a value encodeValue made.
func (w *commitWriter) putEncoded(k, v []byte) {
	if w.writeErr == nil {
		w.writeErr = w.batch.Set(k, v)
	}
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

// checkConflicts fails with ErrConflict when a snapshot since the
// transaction's base changed a table it changes. A snapshot carrying the
// transaction's own token is its commit, landed by an earlier attempt:
// landed, and that snapshot.
func (t *Txn) checkConflicts(kvs kv.Snapshot, head Snapshot, ch *chain) (own Snapshot, landed bool, err error) {
	if t.baseIDs == nil {
		if err := t.resolveAtBase(kvs); err != nil {
			return Snapshot{}, false, err
		}
	}
	ids, touched, creating := t.baseIDs, t.touched, t.creating
	err = scanSnapshotsPB(kvs, t.base+1, head.ID, func(p *catalogpb.Snapshot) error {
		if bytes.Equal(p.CommitToken, t.token) {
			own, landed = snapshotFromPB(p), true
			return errStopScan
		}
		ch.step(p)
		ch, s := p.Changes, p.Id
		if ch == nil {
			return nil
		}
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
	if landed {
		return own, true, nil
	}
	var gone *missingSnapshot
	if errors.As(err, &gone) {
		return Snapshot{}, false, fmt.Errorf("%w: snapshot %d, committed after this transaction began at snapshot %d, was expired; retry", ErrConflict, gone.id, t.base)
	}
	return Snapshot{}, false, err
}

// resolveAtBase finds which tables the transaction's names meant at its
// base snapshot (a name dropped and re-created since names another
// table), once: those are facts of the base, which every later attempt
// of the commit checks the snapshots since against.
func (t *Txn) resolveAtBase(r kv.Snapshot) error {
	t.touched = map[string]bool{}
	t.creating = map[string]bool{}
	for _, o := range t.ops {
		t.touched[strings.ToLower(o.table)] = true
		if o.kind == opCreateTable {
			t.creating["0."+strings.ToLower(o.table)] = true
		}
	}
	baseSnap, err := readSnapshot(r, t.base)
	if errors.Is(err, ErrNoSuchSnapshot) {
		return fmt.Errorf("%w: this transaction began at snapshot %d, since expired; retry", ErrConflict, t.base)
	}
	if err != nil {
		return err
	}
	base := &Reader{c: t.c, kvs: r, snap: baseSnap}
	ids := map[int64]string{}
	for name := range t.touched {
		if tb, err := base.Table(name); err == nil {
			ids[tb.ID] = tb.Name
		}
	}
	t.baseIDs = ids
	return nil
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
	return scanSnapshotsPB(r, from, to, func(p *catalogpb.Snapshot) error { return fn(snapshotFromPB(p)) })
}

// scanSnapshotsPB is scanSnapshots handing fn the stored rows, valid
// until it returns; an fn failing with errStopScan ends the scan without
// error.
func scanSnapshotsPB(r kv.Reader, from, to int64, fn func(*catalogpb.Snapshot) error) error {
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
		if err := fn(&p); err != nil {
			if errors.Is(err, errStopScan) {
				return nil
			}
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
			kept := false
			if !ts.altered {
				var err error
				if kept, err = w.removalKeepsStats(ts); err != nil {
					return err
				}
			}
			if !kept {
				if err := w.recompute(ts); err != nil {
					return err
				}
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
	wrote, many := w.nb.wrote()
	w.put(key(tagSnapshot, w.next.ID), &catalogpb.Snapshot{
		Id: w.next.ID, TimeUnixMicros: w.next.Time.UnixMicro(), SchemaVersion: w.next.SchemaVersion,
		NextCatalogId: w.next.NextCatalogID, NextFileId: w.next.NextFileID, Changes: &w.changes,
		CommitToken: token, FenceExpected: w.fenceOld, FenceWritten: w.fenceNew, Wrote: wrote, WroteMany: many,
	})
	return w.writeErr
}
