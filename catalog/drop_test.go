package catalog

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/rocklake/rocklake/catalog/catalogpb"
	"github.com/rocklake/rocklake/kv"
	"github.com/rocklake/rocklake/kv/kvtest"
)

// A drop ends its table's files as it scans their rows (endAllFiles) where
// the commit has not touched them, and from the files loaded whole where
// it has. Both ways must leave the store exactly as the other: for random
// histories (files added, removed, rewritten, registered again, restamped,
// with identities and delete files, another table beside), the same
// history and drop run with the scan and with the loaded files, on a
// store with range deletes and on one without, and every key and value
// compared (on the memory store or, with ROCKLAKE_TEST_CATALOG=postgres,
// PostgreSQL's, whose range deletes are statements of their own). The drop is sometimes in one transaction with another change
// to the table, which must take the loaded way.
func TestDropScanMatchesLoadedFiles(t *testing.T) {
	cols := []ColumnDef{{Name: "x", Type: "bigint"}, {Name: "s", Type: "varchar"}}
	streamed := 0
	seeds := uint64(60)
	if kvtest.Postgres() {
		seeds = 12 // each commit a round trip or more
	}
	for seed := range seeds {
		for _, ranges := range []bool{true, false} {
			run := func(stream bool) (kv.Store, bool) {
				old := streamDrop
				streamDrop = stream
				defer func() { streamDrop = old }()
				store := kvtest.Store(t)
				if !ranges {
					store = noRangeStore{store}
				}
				c, err := CreateInStore(store, Options{Now: fixedNow()})
				if err != nil {
					t.Fatal(err)
				}
				return store, dropHistory(t, c, rand.New(rand.NewPCG(seed, 5)), cols)
			}
			a, same := run(true)
			b, _ := run(false)
			if same {
				streamed++
			}
			if diff := storeDiff(t, a, b); diff != "" {
				t.Fatalf("seed %d, range deletes %v (drop alone: %v): the scanned drop left another store than the loaded one:\n%s", seed, ranges, same, diff)
			}
		}
	}
	if streamed == 0 {
		t.Fatal("no history dropped its table alone: the scan was never compared")
	}
}

// dropHistory writes a random history of tables t and u into c, then drops
// t; alone says the drop's transaction changed nothing else in t.
func dropHistory(t *testing.T, c *Catalog, rng *rand.Rand, cols []ColumnDef) (alone bool) {
	t.Helper()
	commit(t, c, func(tx *Txn) {
		tx.CreateTableWithUUID("t", "00000000-0000-4000-8000-000000000001", cols)
		tx.CreateTableWithUUID("u", "00000000-0000-4000-8000-000000000002", cols)
	})
	n := 0
	file := func() NewFile {
		n++
		nf := NewFile{Path: fmt.Sprintf("f%d.parquet", n), RecordCount: int64(1 + rng.IntN(20)), FileSizeBytes: 100, FooterSize: 10, RowGroupCount: 1, FooterFingerprint: 99}
		if rng.IntN(2) == 0 {
			nf.Identity = FileIdentity{Device: 7, Inode: uint64(1 + rng.IntN(400))} // an inode reused now and then
		}
		return nf
	}
	// files are a table's live files and their current delete files.
	files := func(table string) ([]DataFile, map[int64]DeleteFile) {
		tb, fs := headFiles(t, c, table)
		r, err := c.Read(Latest)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		ds, err := r.DeleteFiles(tb.ID)
		if err != nil {
			t.Fatal(err)
		}
		return fs, ds
	}
	// tryCommit commits what fn stages, unless the commit refuses a file
	// as one registered already (an inode drawn twice): the history goes
	// on either way.
	tryCommit := func(fn func(tx *Txn)) {
		tx, err := c.Begin()
		if err != nil {
			t.Fatal(err)
		}
		fn(tx)
		if _, err := tx.Commit(); err != nil && !errors.Is(err, ErrDuplicate) {
			t.Fatal(err)
		}
	}
	for range 4 + rng.IntN(10) {
		table := []string{"t", "t", "u"}[rng.IntN(3)]
		live, deletes := files(table)
		switch op := rng.IntN(6); {
		case op <= 1 || len(live) == 0:
			var nfs []NewFile
			for range 1 + rng.IntN(30) {
				nfs = append(nfs, file())
			}
			tryCommit(func(tx *Txn) { tx.AddFiles(table, nfs...) })
		case op == 2:
			var ids []int64
			for _, f := range live {
				if rng.IntN(3) == 0 {
					ids = append(ids, f.ID)
				}
			}
			tryCommit(func(tx *Txn) {
				tx.RemoveFiles(table, ids...)
				tx.AddFiles(table, file())
			})
		case op == 3:
			var nds []NewDeleteFile
			for _, f := range live {
				if rng.IntN(2) == 0 {
					nds = append(nds, NewDeleteFile{DataFileID: f.ID, Path: fmt.Sprintf("/d/d%d-%d.parquet", f.ID, rng.IntN(1000)), DeleteCount: 1, FileSizeBytes: 50, Replaces: deletes[f.ID].ID})
				}
			}
			if len(nds) > 0 {
				tryCommit(func(tx *Txn) { tx.SetDeletes(table, nds...) })
			}
		case op == 4:
			f := live[rng.IntN(len(live))]
			tryCommit(func(tx *Txn) {
				tx.RegisterAgain(table, f.ID)
				tx.AddFiles(table, NewFile{Path: f.Path, RecordCount: f.RecordCount + 1, FileSizeBytes: 100, FooterSize: 10, RowGroupCount: 1, Identity: f.Identity, FooterFingerprint: 99})
			})
		default:
			f := live[rng.IntN(len(live))]
			tryCommit(func(tx *Txn) {
				tx.Restamp(table, Restamp{FileID: f.ID, ModifiedUnixNanos: 5, Identity: FileIdentity{Device: 8, Inode: uint64(100 + rng.IntN(40))}, FileSizeBytes: f.FileSizeBytes, FooterSize: f.FooterSize, FooterFingerprint: f.FooterFingerprint})
			})
		}
	}
	alone = rng.IntN(4) != 0
	tb, live := headFiles(t, c, "t")
	drop := commit(t, c, func(tx *Txn) {
		if !alone {
			switch {
			case len(live) > 0 && rng.IntN(2) == 0:
				tx.RemoveFiles("t", live[0].ID)
			default:
				tx.AddFiles("t", file())
			}
		}
		tx.DropTable("t")
	})
	// Either way, every file row of the table has ended by the drop (a
	// file the drop's own commit added as well), and no index entry is
	// left.
	var p catalogpb.DataFile
	err := scanBetween(c.Store(), key(tagDataFile, tb.ID), kv.PrefixEnd(key(tagDataFile, tb.ID)), func(k, v []byte) error {
		p.Reset()
		if err := decodeValue(v, &p); err != nil {
			return err
		}
		if p.EndSnapshot == nil || *p.EndSnapshot > drop.ID {
			return fmt.Errorf("file %d (%s) of the dropped table has end %v, want at most %d", p.Id, p.Path, p.EndSnapshot, drop.ID)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("drop alone %v: %v", alone, err)
	}
	err = scanBetween(c.Store(), key(tagFilePath, tb.ID), kv.PrefixEnd(key(tagFilePath, tb.ID)), func(k, _ []byte) error {
		return fmt.Errorf("index entry %q of the dropped table left", k)
	})
	if err != nil {
		t.Fatalf("drop alone %v: %v", alone, err)
	}
	return alone
}

// noRangeStore is a store whose batches do not delete ranges (Pebble's).
type noRangeStore struct{ kv.Store }

func (s noRangeStore) NewBatch() kv.Batch { return struct{ kv.Batch }{s.Store.NewBatch()} }

// storeDiff lists the keys two stores hold differently, but for what is
// random in each catalog or commit: the catalog's and schema's ids, the
// fence and the snapshots' commit tokens.
func storeDiff(t *testing.T, a, b kv.Store) string {
	t.Helper()
	dump := func(s kv.Store) map[string][]byte {
		out := map[string][]byte{}
		err := scanBetween(s, nil, []byte{0xff}, func(k, v []byte) error {
			switch k[0] {
			case tagFence, tagMeta, tagSchema: // random ids, not the drop's
				return nil
			case tagSnapshot:
				var p catalogpb.Snapshot
				if err := decodeValue(v, &p); err != nil {
					return err
				}
				// Not state: the batch that wrote it (fence values are random,
				// and a range delete is noted by a shorter prefix than the
				// point deletes of the same keys).
				p.CommitToken, p.FenceExpected, p.FenceWritten, p.Wrote = nil, nil, nil, nil
				v = []byte(p.String())
			}
			out[string(k)] = bytes.Clone(v)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	da, db := dump(a), dump(b)
	var diff bytes.Buffer
	for k, v := range da {
		if w, ok := db[k]; !ok {
			fmt.Fprintf(&diff, "only in the first: %x\n", k)
		} else if !bytes.Equal(v, w) {
			fmt.Fprintf(&diff, "differs: %x\n", k)
		}
	}
	for k := range db {
		if _, ok := da[k]; !ok {
			fmt.Fprintf(&diff, "only in the second: %x\n", k)
		}
	}
	return diff.String()
}
