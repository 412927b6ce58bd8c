package catalog

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rocklake/rocklake/kv"
	"github.com/rocklake/rocklake/kv/kvtest"
)

// A commit that lost the fence builds its next attempt from what it read
// where that still holds (reread.go): random histories over four tables,
// where between each commit's reads and its write another writer (a
// handle of its own, as a process is) commits to another table, to the
// same one, or expires snapshots and then commits. verifyRereads (on in
// these tests) fails any attempt whose commit differs from one built
// from fresh reads; beyond that, a commit that conflicts with nothing
// lands, and it was served from its first attempt's reads unless
// something that wrote no snapshot moved the fence between. At the end
// every table's stored stats equal a fold of its files.
func TestRetriesServeWhatStillHolds(t *testing.T) {
	cols := []ColumnDef{{Name: "x", Type: "bigint"}, {Name: "s", Type: "varchar"}}
	domains := map[string][]string{"bigint": {"-3", "0", "1", "2", "5", "9"}, "varchar": {"", "a", "ab", "b", "zz"}, "integer": {"-1", "0", "4"}}
	defer func() { beforeBatchCommit = nil }()
	var servedCommits, brokenChains, conflicts int
	for seed := range uint64(8) {
		rng := rand.New(rand.NewPCG(seed, 1312))
		store := kvtest.Store(t)
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		clock := func() time.Time { now = now.Add(time.Second); return now }
		c, err := CreateInStore(store, Options{Now: clock})
		if err != nil {
			t.Fatal(err)
		}
		other, err := OpenStore(store, Options{Now: clock})
		if err != nil {
			t.Fatal(err)
		}
		names := []string{"a", "b", "c", "d"}
		for _, n := range names {
			commit(t, c, func(tx *Txn) { tx.CreateTable(n, cols) })
		}
		n := 0
		file := func(cat *Catalog, table string) NewFile {
			n++
			_, tcols, _ := tableAtLatest(t, cat, table)
			return randomStatsFile(t, rng, fmt.Sprintf("/d/f%d.parquet", n), tcols, domains)
		}
		// change adds to tx one random change of table, as read by cat.
		change := func(cat *Catalog, tx *Txn, table string) {
			files, tcols, dels := tableAtLatest(t, cat, table)
			switch op := rng.IntN(8); {
			case op < 3 || len(files) == 0:
				for range 1 + rng.IntN(3) {
					tx.AddFiles(table, file(cat, table))
				}
			case op == 3:
				tx.RemoveFiles(table, files[rng.IntN(len(files))].ID)
				if rng.IntN(2) == 0 {
					tx.AddFiles(table, file(cat, table))
				}
			case op == 4:
				f := files[rng.IntN(len(files))]
				tx.Restamp(table, Restamp{FileID: f.ID, ModifiedUnixNanos: f.ModifiedUnixNanos + 1, FileSizeBytes: f.FileSizeBytes, FooterSize: f.FooterSize, FooterFingerprint: f.FooterFingerprint})
			case op == 5:
				f := files[rng.IntN(len(files))]
				n++
				tx.SetDeletes(table, NewDeleteFile{DataFileID: f.ID, Path: fmt.Sprintf("/d/del-%d.parquet", n), DeleteCount: 1, FileSizeBytes: 50, Replaces: dels[f.ID].ID})
			case op == 6:
				n++
				tx.AlterTable(table, Alteration{Kind: AddColumn, Column: fmt.Sprintf("n%d", n), Type: "integer"})
			default:
				if len(tcols) > 2 {
					tx.AlterTable(table, Alteration{Kind: DropColumn, Column: tcols[len(tcols)-1].Name})
				} else {
					tx.AddFiles(table, file(cat, table))
				}
			}
		}
		for step := range 30 {
			table := names[rng.IntN(len(names))]
			tx, err := c.Begin()
			if err != nil {
				t.Fatal(err)
			}
			change(c, tx, table)
			if rng.IntN(4) == 0 {
				// A second table in the same commit.
				if second := names[rng.IntN(len(names))]; second != table {
					change(c, tx, second)
				}
			}
			mine := map[string]bool{}
			for _, o := range tx.ops {
				mine[o.table] = true
			}
			// The other writer changes a table this one does not, except
			// in kind 4, where it may.
			kind := rng.IntN(5)
			target := names[rng.IntN(len(names))]
			for kind < 4 && mine[target] {
				target = names[rng.IntN(len(names))]
			}
			fired := false
			beforeBatchCommit = func(in *Txn) {
				if in != tx || fired {
					return
				}
				fired = true
				beforeBatchCommit = nil
				defer func() { beforeBatchCommit = nil }()
				switch kind {
				case 0:
					// A new table: catalog-wide rows change.
					n++
					commit(t, other, func(o *Txn) { o.CreateTable(fmt.Sprintf("new%d", n), cols) })
				case 3:
					// Expiry moves the fence without a snapshot; then a
					// commit to another table.
					before, _ := store.Get(key(tagFence))
					if _, err := other.ExpireSnapshots(now.Add(-10*time.Second), false); err != nil {
						t.Fatal(err)
					}
					if after, _ := store.Get(key(tagFence)); string(after) == string(before) {
						kind = 2 // expiry found nothing to do
					}
					fallthrough
				default:
					o, err := other.Begin()
					if err != nil {
						t.Fatal(err)
					}
					change(other, o, target)
					if _, err := o.Commit(); err != nil && !errors.Is(err, ErrUnchanged) {
						t.Fatalf("seed %d step %d: the other writer: %v", seed, step, err)
					}
				}
			}
			_, err = tx.Commit()
			if !fired {
				t.Fatalf("seed %d step %d: the other writer never ran", seed, step)
			}
			touched := mine[target]
			switch {
			case err == nil || errors.Is(err, ErrUnchanged):
			case errors.Is(err, ErrConflict) && kind == 4 && touched:
				conflicts++
				continue
			default:
				t.Fatalf("seed %d step %d (other writer: kind %d on %s, this one on %s): %v", seed, step, kind, target, table, err)
			}
			if tx.attempts < 2 {
				t.Fatalf("seed %d step %d: %d attempts; the other writer took the fence, so at least 2", seed, step, tx.attempts)
			}
			switch {
			case kind == 3:
				// Expiry wrote no snapshot: nothing the first attempt
				// read may be served.
				if tx.reads.served != 0 {
					t.Fatalf("seed %d step %d: %d reads served across an expiry", seed, step, tx.reads.served)
				}
				brokenChains++
			case tx.reads.served > 0:
				servedCommits++
			case err == nil:
				t.Fatalf("seed %d step %d: the retry after a commit to another table read everything again", seed, step)
			}
		}
		r, err := c.Read(Latest)
		if err != nil {
			t.Fatal(err)
		}
		tables, err := r.Tables()
		if err != nil {
			t.Fatal(err)
		}
		for _, tb := range tables {
			got, err := r.fileTableStats(tb.ID)
			if err != nil {
				t.Fatal(err)
			}
			fold, err := r.computeTableStats(tb.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.RecordCount != fold.RecordCount || got.FileCount != fold.FileCount || len(got.Columns) != len(fold.Columns) {
				t.Fatalf("seed %d table %s: stats %+v, the fold's %+v", seed, tb.Name, got, fold)
			}
			for id, f := range fold.Columns {
				if g := got.Columns[id]; g == nil || fmt.Sprint(*g) != fmt.Sprint(*f) {
					t.Fatalf("seed %d table %s column %d: served %+v, the fold's %+v", seed, tb.Name, id, g, f)
				}
			}
		}
		r.Close()
		other.Close()
		c.Close()
	}
	t.Logf("%d retries served from the first attempt's reads, %d after an expiry read again, %d conflicts", servedCommits, brokenChains, conflicts)
	if servedCommits == 0 || brokenChains == 0 || conflicts == 0 {
		t.Fatal("every kind of interleaving must be met")
	}
}

// A record is trusted to build a commit, never to refuse one: an attempt
// whose build from the record fails is built again from fresh reads.
// Here the record is made wrong on purpose (the new file's path, absent,
// recorded as the path of a live file), with the check of served builds
// off: the commit must land all the same.
func TestRefusalsComeFromFreshReads(t *testing.T) {
	defer func(v bool) { verifyRereads = v; beforeBatchCommit = nil }(verifyRereads)
	verifyRereads = false
	store := kvtest.Store(t)
	c, other := twoHandles(t, store)
	defer other.Close()
	cols := []ColumnDef{{Name: "x", Type: "bigint"}}
	commit(t, c, func(tx *Txn) { tx.CreateTable("t", cols); tx.CreateTable("u", cols) })
	commit(t, c, func(tx *Txn) { tx.AddFiles("t", intFile(t, "/d/a.parquet", 1, 5, 0)) })
	tb, err := c.Read(Latest)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := tb.Table("t")
	tb.Close()
	if err != nil {
		t.Fatal(err)
	}
	live, err := store.Get(keyWithString(tagFilePath, "/d/a.parquet", tbl.ID))
	if err != nil {
		t.Fatal(err)
	}
	tx, err := c.Begin()
	if err != nil {
		t.Fatal(err)
	}
	tx.AddFiles("t", intFile(t, "/d/b.parquet", 1, 5, 0), intFile(t, "/d/c.parquet", 1, 5, 0))
	beforeBatchCommit = func(in *Txn) {
		if in != tx {
			return
		}
		beforeBatchCommit = nil
		for _, p := range []string{"/d/b.parquet", "/d/c.parquet"} {
			k := string(keyWithString(tagFilePath, p, tbl.ID))
			if !in.reads.pending.absent[k] {
				if _, ok := in.reads.pending.gets[k]; !ok {
					t.Fatalf("the first attempt did not record the path index of %s", p)
				}
			}
			delete(in.reads.pending.absent, k)
			if in.reads.pending.gets == nil {
				in.reads.pending.gets = map[string][]byte{}
			}
			in.reads.pending.gets[k] = live
		}
		commit(t, other, func(o *Txn) { o.AddFiles("u", intFile(t, "/d/u.parquet", 1, 5, 0)) })
	}
	if _, err := tx.Commit(); err != nil {
		t.Fatalf("a commit refused on a wrong record: %v", err)
	}
	if tx.reads.served == 0 {
		t.Fatal("the retry served nothing from the record: the wrong entry was never read")
	}
	r, err := c.Read(Latest)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	files, err := r.Files(tbl.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 3 {
		t.Fatalf("%d live files, want 3", len(files))
	}
}

// Reads are kept for retries on stores many processes share, and only
// there (recordsReads): a commit on the memory store that loses the fence
// to another handle retries from fresh reads and keeps nothing, and the
// same history with keeping forced on serves its retry.
func TestOnlySharedStoresKeepReads(t *testing.T) {
	defer func(r bool) { recordAllStores = r; beforeBatchCommit = nil }(recordAllStores)
	for _, keep := range []bool{false, true} {
		recordAllStores = keep
		c, other := twoHandles(t, kv.NewMemory())
		cols := []ColumnDef{{Name: "x", Type: "bigint"}}
		commit(t, c, func(tx *Txn) { tx.CreateTable("t", cols); tx.CreateTable("u", cols) })
		commit(t, c, func(tx *Txn) { tx.AddFiles("t", intFile(t, "/d/a.parquet", 1, 5, 0)) })
		tx, err := c.Begin()
		if err != nil {
			t.Fatal(err)
		}
		tx.AddFiles("t", intFile(t, "/d/b.parquet", 1, 5, 0))
		beforeBatchCommit = func(in *Txn) {
			if in != tx {
				return
			}
			beforeBatchCommit = nil
			commit(t, other, func(o *Txn) { o.AddFiles("u", intFile(t, "/d/u.parquet", 1, 5, 0)) })
		}
		if _, err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if beforeBatchCommit != nil {
			t.Fatal("the commit never reached its write")
		}
		switch kept := len(tx.reads.gets) + len(tx.reads.absent) + len(tx.reads.iters); {
		case !keep && (kept > 0 || tx.reads.served > 0):
			t.Fatalf("the memory store kept %d reads and served %d", kept, tx.reads.served)
		case keep && tx.reads.served == 0:
			t.Fatal("with keeping forced on, the retry served nothing: this test cannot tell")
		}
		other.Close()
		c.Close()
	}
}

// twoHandles creates a catalog in store and opens a second handle on it,
// as a second process would.
func twoHandles(t *testing.T, store kv.Store) (c, other *Catalog) {
	t.Helper()
	c, err := CreateInStore(store, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if other, err = OpenStore(store, Options{}); err != nil {
		t.Fatal(err)
	}
	return c, other
}
