package prune

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/pqmeta"
	"github.com/rocklake/rocklake/types"
)

// A plan reads a file's page index only while the file is the one
// registered: the index of a file changed on disk since (here a chmod,
// which a rewrite in place with its time set back would do as well)
// would place pages of rows the catalog's statistics never saw, and its
// row groups are kept whole for the reader to refuse.
func TestPlanIgnoresIndexOfChangedFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.parquet")
	vals := make([]*types.Value, 20_000)
	for i := range vals {
		v := types.IntValue(int64(i))
		vals[i] = &v
	}
	if err := pqwrite.Write(p, []pqwrite.Column{{Name: "x", Type: types.MustParseType("int64"), Values: vals}},
		pqwrite.Options{PageIndex: true, PageBytes: 1 << 10}); err != nil {
		t.Fatal(err)
	}
	c, err := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ingest.Add(c, "t", []string{p}, ingest.Options{Create: true}); err != nil {
		t.Fatal(err)
	}
	plan := func() *Plan {
		t.Helper()
		r, err := c.Read(catalog.Latest)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		pl, err := PlanTable(r, "t", "x = 5", Options{Pages: true, PageMinRows: -1, IndexMinRows: -1})
		if err != nil {
			t.Fatal(err)
		}
		return pl
	}
	if pl := plan(); !pl.Pages.Evaluated || pl.Pages.Kept == 0 || pl.Pages.Kept >= pl.Pages.Total {
		t.Fatalf("the file as registered: pages %+v, want its page index read", pl.Pages)
	}
	st, _ := os.Stat(p)
	before := pqmeta.StampOf(st).Changed
	deadline := time.Now().Add(5 * time.Second)
	for {
		if err := os.Chmod(p, 0o600); err != nil {
			t.Fatal(err)
		}
		st, _ = os.Stat(p)
		if pqmeta.StampOf(st).Changed != before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("ctime stays put")
		}
		time.Sleep(5 * time.Millisecond)
		os.Chmod(p, 0o644)
	}
	pl := plan()
	var rows int64
	for _, f := range pl.KeptFiles {
		for _, r := range f.Ranges {
			rows += r.Count
		}
	}
	if pl.Pages.Total != 0 || len(pl.KeptFiles) != 1 || rows != 20_000 {
		t.Fatalf("a file changed since registration: pages %+v, kept %+v, want its row group kept whole, its index unread", pl.Pages, pl.KeptFiles)
	}
}
