package maintain

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/kv"
)

// Transactions of writes (BEGIN ... COMMIT): several statements, one
// snapshot, and reads of their own writes in between.
//
// The first write opens a speculation of the catalog (catalog.Speculate:
// its latest state, with commits of its own kept in memory). Each
// statement runs on an engine over the speculation and is committed into
// it at once, so that the transaction's later statements and queries read
// its writes as committed rows are read: pruned by the same statistics,
// with the same checks. A change copies on write there, whatever the
// table's delete mode: its new files and the files it retires are all the
// real commit needs.
//
// COMMIT registers the net effect in the catalog itself, in one snapshot,
// through ingest like any write (the footers read again there, so what
// the catalog records comes from the files, not from the speculation):
// the files the transaction wrote that are still live in the speculation,
// and the retirement of files the catalog had. Files it wrote and retired
// again (an INSERT, then an UPDATE of those rows) are never registered and
// are removed. Appends commute with other writers' commits; a retirement
// of a file another writer retired since fails the commit with
// ErrWriteRaced (40001). ROLLBACK removes every file the transaction
// wrote.

// Staged is one statement of a transaction: its files written and checked,
// registered in the transaction's speculation, and waiting for the real
// commit.
type Staged struct {
	table   string
	t       catalog.Table
	cols    []catalog.Column
	path    string // what to register: the output directory or object prefix
	retires bool   // no path: the write only retires files (opts.Replace)
	opts    ingest.Options
	rows    int64
	files   int
	discard func()
	// lease keeps orphan cleanup off the statement's output directory
	// until the transaction ends (catalog.Lease).
	lease *catalog.Lease
	// remove deletes one of the files the statement wrote (a location),
	// once another statement of the transaction retired it.
	remove func(loc string)
}

// Discard removes a staged write's files; it does nothing once they are
// committed, or when it wrote none.
func (s *Staged) Discard() {
	if s != nil && s.discard != nil {
		s.discard()
		s.discard = nil
	}
	s.release()
}

// release gives up the staged write's lease: its files are committed, or
// removed, or left for cleanup --orphans.
func (s *Staged) release() {
	if s != nil {
		s.lease.Release()
		s.lease = nil
	}
}

// batch is the staged write as one batch of ingest.AddAll.
func (s *Staged) batch() (ingest.Batch, bool) {
	switch {
	case s.path != "":
		return ingest.Batch{Table: s.table, Paths: []string{s.path}, Options: s.opts}, true
	case s.retires:
		return ingest.Batch{Table: s.table, Options: s.opts}, true
	}
	return ingest.Batch{}, false
}

// ownFile is a file a statement of the transaction wrote, as its
// speculation registered it.
type ownFile struct {
	stmt  int // index in Txn.staged
	table int64
	loc   string
	rows  int64
}

// Txn is a transaction of writes. It is for one goroutine at a time.
type Txn struct {
	e      *engine.Engine
	spec   *catalog.Catalog // nil until the first write
	view   *engine.Engine   // e over spec
	base   catalog.Snapshot // the catalog's latest when spec was made
	staged []*Staged
	own    map[int64]ownFile // by the speculation's file id
	done   bool
	// failed is why the speculation no longer matches the statements
	// recorded (a statement registered there and then failed): the
	// transaction can only roll back.
	failed error
}

// ErrTxnDone is an Exec, Commit or query of a transaction that ended.
var ErrTxnDone = errors.New("the transaction has ended")

// NewTxn begins a transaction of writes to e's catalog. Nothing is held
// until its first write.
func NewTxn(e *engine.Engine) *Txn { return &Txn{e: e, own: map[int64]ownFile{}} }

// Engine is the engine the transaction's queries run on: one over its
// speculation once it has written, reading its writes, else e.
func (t *Txn) Engine() *engine.Engine {
	if t.view != nil {
		return t.view
	}
	return t.e
}

// Written says whether a statement of the transaction has run, so that
// its queries read the speculation's latest state.
func (t *Txn) Written() bool { return t.view != nil }

// Exec runs an INSERT, COPY, DELETE, UPDATE or MERGE statement in the
// transaction, reading the transaction's writes; o.Query.Snapshot zero
// reads its latest state. CREATE TABLE is refused: a transaction writes
// to tables that exist.
func (t *Txn) Exec(ctx context.Context, text string, o WriteOptions) (*WriteResult, error) {
	if t.done {
		return nil, ErrTxnDone
	}
	if t.failed != nil {
		return nil, t.failed
	}
	if t.spec == nil {
		spec, base, err := t.e.Catalog().Speculate()
		if err != nil {
			return nil, err
		}
		t.spec, t.base, t.view = spec, base, t.e.On(spec)
	}
	if id := o.Query.Snapshot; id != catalog.Latest && id > t.base.ID {
		// The speculation's snapshots after its base are its own, not the
		// catalog's of the same ids.
		return nil, fmt.Errorf("%w: snapshot %d: inside a transaction of writes, a statement reads the transaction's state or a snapshot up to %d, where it began", catalog.ErrNoSuchSnapshot, id, t.base.ID)
	}
	o.NoMerge = true
	st := &Staged{}
	res, err := write(ctx, t.view, text, o, st)
	if err != nil {
		// A statement may fail after its files were handed over (staged):
		// they are no one's then.
		st.Discard()
		return nil, err
	}
	b, ok := st.batch()
	if !ok {
		return res, nil
	}
	snap, err := registerStaged(ctx, t.spec, []ingest.Batch{b}, []*Staged{st}, st.rows)
	if err == nil {
		err = t.recordOwn(snap, st)
	}
	if err != nil {
		st.Discard()
		if snap.ID != 0 {
			t.failed = fmt.Errorf("the transaction cannot go on, roll it back: a statement failed after its speculative commit: %w", err)
		}
		return nil, err
	}
	t.staged = append(t.staged, st)
	return res, nil
}

// recordOwn notes the files the speculation registered at snap for the
// statement st.
func (t *Txn) recordOwn(snap catalog.Snapshot, st *Staged) error {
	if st.path == "" {
		return nil
	}
	r, err := t.spec.Read(snap.ID)
	if err != nil {
		return err
	}
	defer r.Close()
	tb, err := r.Table(st.table)
	if err != nil {
		return err
	}
	files, err := r.Files(tb.ID)
	if err != nil {
		return err
	}
	for _, f := range files {
		if f.Begin == snap.ID {
			t.own[f.ID] = ownFile{stmt: len(t.staged), table: tb.ID, loc: f.Location(tb), rows: f.RecordCount}
		}
	}
	return nil
}

// Commit registers the transaction's net effect in one snapshot of the
// catalog: all of it or, failing, none (and its files are removed). A
// transaction that wrote nothing makes no snapshot (the zero Snapshot).
func (t *Txn) Commit(ctx context.Context) (catalog.Snapshot, error) {
	if t.done {
		return catalog.Snapshot{}, ErrTxnDone
	}
	t.done = true
	defer t.closeSpec()
	defer func() {
		for _, st := range t.staged {
			st.release()
		}
	}()
	if t.failed != nil {
		t.discard()
		return catalog.Snapshot{}, t.failed
	}
	batches, rows, retired, err := t.net()
	if err != nil {
		t.discard()
		return catalog.Snapshot{}, err
	}
	if len(batches) == 0 {
		t.discard()
		return catalog.Snapshot{}, nil
	}
	snap, err := registerStaged(ctx, t.e.Catalog(), batches, t.staged, rows)
	if err != nil {
		switch {
		case errors.Is(err, kv.ErrUnknownOutcome):
			// It may have landed, and then its snapshot reads these
			// files: they stay (cleanup --orphans removes them if not).
			err = fmt.Errorf("%w; the transaction's files were kept (if nothing was committed, rocklake cleanup --orphans removes them)", err)
		case snap.ID == 0:
			t.discard() // nothing landed
		}
		return snap, err
	}
	for _, f := range retired {
		if rm := t.staged[f.stmt].remove; rm != nil {
			rm(f.loc)
		}
	}
	for _, st := range t.staged {
		st.discard = nil
	}
	return snap, nil
}

// net is what the real commit registers: per statement, the files it wrote
// that are live at the speculation's latest state (its whole output
// directory when it is all live) and its retirements of the catalog's
// files, with the rows those files hold; and the files written and
// retired again within the transaction.
func (t *Txn) net() (batches []ingest.Batch, rows int64, retired []ownFile, err error) {
	if t.spec == nil {
		return nil, 0, nil, nil
	}
	r, err := t.spec.Read(catalog.Latest)
	if err != nil {
		return nil, 0, nil, err
	}
	defer r.Close()
	live := map[int64]bool{}
	for _, table := range slices.Sorted(maps.Keys(t.tables())) {
		files, err := r.Files(table)
		if err != nil {
			return nil, 0, nil, err
		}
		for _, f := range files {
			live[f.ID] = true
		}
	}
	kept := make([][]string, len(t.staged))
	whole := make([]bool, len(t.staged))
	for i := range whole {
		whole[i] = true
	}
	for _, id := range slices.Sorted(maps.Keys(t.own)) {
		f := t.own[id]
		if !live[id] {
			whole[f.stmt] = false
			retired = append(retired, f)
			continue
		}
		kept[f.stmt] = append(kept[f.stmt], f.loc)
		rows += f.rows
	}
	for i, st := range t.staged {
		opts := st.opts
		opts.Replace = slices.DeleteFunc(slices.Clone(opts.Replace), func(id int64) bool { _, ok := t.own[id]; return ok })
		if opts.ReplaceDeletes != nil {
			opts.ReplaceDeletes = maps.Clone(opts.ReplaceDeletes)
			for id := range opts.ReplaceDeletes {
				if _, ok := t.own[id]; ok {
					delete(opts.ReplaceDeletes, id)
				}
			}
		}
		b := ingest.Batch{Table: st.table, Options: opts}
		switch {
		case st.path != "" && whole[i]:
			b.Paths = []string{st.path}
		case st.path != "":
			b.Paths = kept[i]
		}
		if len(b.Paths) > 0 || len(opts.Replace) > 0 {
			batches = append(batches, b)
		}
	}
	return batches, rows, retired, nil
}

// tables are the ids of the tables the transaction wrote.
func (t *Txn) tables() map[int64]bool {
	out := map[int64]bool{}
	for _, st := range t.staged {
		out[st.t.ID] = true
	}
	return out
}

// Rollback ends the transaction and removes the files its statements
// wrote; after Commit it does nothing.
func (t *Txn) Rollback() {
	if !t.done {
		t.done = true
		t.discard()
		t.closeSpec()
	}
}

func (t *Txn) discard() {
	for _, st := range t.staged {
		st.Discard()
	}
}

func (t *Txn) closeSpec() {
	if t.spec != nil {
		t.spec.Close()
		t.spec, t.view = nil, nil
	}
}

// registerStaged registers batches, the staged writes' files, in one
// snapshot of cat, and checks that rows were registered.
func registerStaged(ctx context.Context, cat *catalog.Catalog, batches []ingest.Batch, staged []*Staged, rows int64) (catalog.Snapshot, error) {
	snap, res, err := ingest.AddAll(ctx, cat, batches)
	if err != nil {
		changes := false
		for _, s := range staged {
			if s.path != "" || s.retires {
				if rerr := raced(cat, s.t, s.cols, err); rerr != err {
					return catalog.Snapshot{}, fmt.Errorf("commit: %w", rerr)
				}
				changes = changes || len(s.opts.Replace) > 0
			}
		}
		if changes && errors.Is(err, catalog.ErrNoSuchFile) {
			// A file a change of the transaction retires was retired by
			// another writer since the change read it.
			return catalog.Snapshot{}, fmt.Errorf("commit: %w: another writer changed or rewrote a file this transaction changes; nothing was committed, run the transaction again (%v)", ErrWriteRaced, err)
		}
		return catalog.Snapshot{}, fmt.Errorf("commit: %w", err)
	}
	var got int64
	for _, r := range res {
		got += r.Rows
	}
	if got != rows {
		return snap, fmt.Errorf("commit: wrote %d rows but registered %d at snapshot %d: %w", rows, got, snap.ID, errLanded)
	}
	return snap, nil
}
