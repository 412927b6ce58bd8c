package engine

import (
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/expr"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/kv"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/prune"
	"github.com/rocklake/rocklake/types"
)

// countingStore counts the reads made through its snapshots.
type countingStore struct {
	kv.Store
	reads *atomic.Int64
}

func (s countingStore) NewSnapshot() (kv.Snapshot, error) {
	sn, err := s.Store.NewSnapshot()
	return countingSnapshot{sn, s.reads}, err
}

type countingSnapshot struct {
	kv.Snapshot
	reads *atomic.Int64
}

func (s countingSnapshot) Get(k []byte) ([]byte, error) {
	s.reads.Add(1)
	return s.Snapshot.Get(k)
}

func (s countingSnapshot) NewIter(lower, upper []byte) (kv.Iterator, error) {
	s.reads.Add(1)
	return s.Snapshot.NewIter(lower, upper)
}

// Warm reads ahead what a plan of the query reads: planning after it
// reads less from the store than planning on a catalog not warmed, and
// keeps the same files.
func TestWarmReadsWhatThePlanReads(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for f := range 40 {
		var ids, uids []*types.Value
		for i := range 50 {
			id, uid := types.IntValue(int64(f*50+i)), types.IntValue(int64((f*7919+i*104729)%100000))
			ids, uids = append(ids, &id), append(uids, &uid)
		}
		p := filepath.Join(dir, fmt.Sprintf("f%02d.parquet", f))
		if err := pqwrite.Write(p, []pqwrite.Column{{Name: "id", Type: types.MustParseType("int64"), Values: ids},
			{Name: "user_id", Type: types.MustParseType("int64"), Values: uids}}, pqwrite.Options{}); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	var reads atomic.Int64
	store := countingStore{kvtest.Store(t), &reads}
	c, err := catalog.CreateInStore(store, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ingest.Add(c, "events", paths, ingest.Options{Create: true, FilterColumns: []string{"user_id"}}); err != nil {
		t.Fatal(err)
	}
	query := "SELECT count(*) FROM events WHERE user_id = 4242 AND id < 500"
	plan := func(c *catalog.Catalog) (int64, string) {
		before := reads.Load()
		r, err := c.Read(catalog.Latest)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		tb, err := r.Table("events")
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := r.Columns(tb.ID)
		b, err := expr.Compile("user_id = 4242 AND id < 500", cols)
		if err != nil {
			t.Fatal(err)
		}
		p, err := prune.PlanBound(r, tb, b, prune.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return reads.Load() - before, p.String()
	}
	cold, err := catalog.OpenStore(store, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	coldReads, coldPlan := plan(cold)
	warmed, err := catalog.OpenStore(store, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	Warm(warmed, query, -1)
	warmReads, warmPlan := plan(warmed)
	if warmPlan != coldPlan {
		t.Fatalf("warmed plan %s, cold plan %s", warmPlan, coldPlan)
	}
	// The warmed plan reads the probe's groups and filters, and what a
	// reader opens; the file list, bounds and slab headers are read.
	if warmReads*2 > coldReads {
		t.Fatalf("planning read the store %d times after Warm, %d times cold: Warm read ahead little of it", warmReads, coldReads)
	}
	t.Logf("store reads: cold %d, warmed %d", coldReads, warmReads)
}
