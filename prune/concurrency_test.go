package prune

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

// TestPlanningDuringCommits runs planners against the catalog while writers
// commit (run under -race in CI): every plan sees one consistent snapshot —
// its kept files are files of that snapshot, and a plan of "true" keeps
// exactly the snapshot's files.
func TestPlanningDuringCommits(t *testing.T) {
	c, _ := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	tx, _ := c.Begin()
	tx.CreateTable("t", []catalog.ColumnDef{{Name: "x", Type: "bigint"}})
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	codec, _ := types.CodecFor(types.Simple(types.KindBigInt))
	enc := func(x int64) []byte { b, _ := codec.Encode(types.IntValue(x)); return b }
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				for {
					tx, _ := c.Begin()
					lo := int64(i * 10)
					tx.AddFiles("t", catalog.NewFile{Path: fmt.Sprintf("w%d-%d", w, i), RecordCount: 10, RowGroupCount: 1,
						Columns: []catalog.FileColumn{{Path: []string{"x"}, Stats: stats.Column{
							Min: stats.Known(enc(lo)), Max: stats.Known(enc(lo + 9)), NullCount: stats.Known[int64](0),
							RowCount: 10, MinIsExact: true, MaxIsExact: true}}}})
					_, err := tx.Commit()
					if errors.Is(err, catalog.ErrConflict) {
						continue
					}
					if err != nil {
						errs <- err
						return
					}
					break
				}
			}
		}()
	}
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				r, err := c.Read(catalog.Latest)
				if err != nil {
					errs <- err
					return
				}
				files, _ := r.Files(1)
				all, err := PlanTable(r, "t", "true", Options{})
				if err != nil {
					errs <- err
					r.Close()
					return
				}
				some, err := PlanTable(r, "t", "x < 50", Options{})
				if err != nil {
					errs <- err
					r.Close()
					return
				}
				if all.Files.Kept != len(files) || all.Files.Total != len(files) || some.Files.Kept > len(files) {
					errs <- fmt.Errorf("snapshot %d: %d files, plan of true kept %d of %d", r.Snapshot().ID, len(files), all.Files.Kept, all.Files.Total)
				}
				r.Close()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
