package maintain

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/internal/s3test"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/storage"
	"github.com/rocklake/rocklake/types"
)

// An object registered without an ETag (before add refused such objects)
// cannot be told from one overwritten at the same size: verify names it,
// beside an object registered with its ETag, which it passes.
func TestVerifyNamesObjectsWithoutETag(t *testing.T) {
	srv := s3test.StartWithEnv(t, "lake")
	dir := t.TempDir()
	for _, name := range []string{"a", "b"} {
		v := types.IntValue(1)
		p := filepath.Join(dir, name+".parquet")
		if err := pqwrite.Write(p, []pqwrite.Column{{Name: "x", Type: types.MustParseType("int64"), Values: []*types.Value{&v}}}, pqwrite.Options{}); err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(p)
		srv.Put(t, "s3://lake/t/"+name+".parquet", data)
	}
	ctx := context.Background()
	st, err := storage.NewS3(ctx, storage.S3OptionsFromEnv())
	if err != nil {
		t.Fatal(err)
	}
	c, _ := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	if _, err := ingest.Add(c, "t", []string{"s3://lake/t/a.parquet"}, ingest.Options{Create: true, Objects: st}); err != nil {
		t.Fatal(err)
	}
	r, _ := c.Read(catalog.Latest)
	tb, _ := r.Table("t")
	cols, _ := r.Columns(tb.ID)
	r.Close()
	nfs, _, err := ingest.PrepareFiles(ctx, "t", cols, []string{"s3://lake/t/b.parquet"}, ingest.PrepareOptions{Objects: st})
	if err != nil {
		t.Fatal(err)
	}
	nfs[0].ETag = "" // as registered before ETags were required
	tx, _ := c.Begin()
	tx.AddFiles("t", nfs...)
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	e.UseObjects(st, &storage.Cache{Dir: t.TempDir()})
	rep, err := Verify(ctx, e, "t", catalog.Latest, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 1 || rep.Problems[0].Path != "s3://lake/t/b.parquet" || !strings.Contains(rep.Problems[0].What, "without an ETag") {
		t.Errorf("verify: %+v", rep.Problems)
	}
}
