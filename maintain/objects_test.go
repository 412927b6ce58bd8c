package maintain

import (
	"context"
	"errors"
	"fmt"
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

// keysUnder lists the keys of a bucket under a prefix.
func keysUnder(t *testing.T, srv *s3test.Server, bucket, prefix string) []string {
	t.Helper()
	return srv.Keys(t, bucket, prefix)
}

// A rewrite of objects interrupted after its uploads commits nothing and
// deletes every object it uploaded; run again, it rewrites the table with
// the same rows.
func TestRewriteObjectsInterrupted(t *testing.T) {
	srv := s3test.Start(t)
	srv.Bucket(t, "lake")
	srv.SetEnv(t)
	dir := t.TempDir()
	for f := range 3 {
		vals := make([]*types.Value, 500)
		for i := range vals {
			v := types.IntValue(int64((i*31 + f*7) % 997))
			vals[i] = &v
		}
		p := filepath.Join(dir, fmt.Sprintf("f%d.parquet", f))
		if err := pqwrite.Write(p, []pqwrite.Column{{Name: "x", Type: types.MustParseType("int64"), Values: vals}}, pqwrite.Options{}); err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(p)
		srv.Put(t, fmt.Sprintf("s3://lake/t/f%d.parquet", f), data)
	}
	st, err := storage.NewS3(context.Background(), storage.S3OptionsFromEnv())
	if err != nil {
		t.Fatal(err)
	}
	c, err := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ingest.Add(c, "t", []string{"s3://lake/t/"}, ingest.Options{Create: true, Objects: st}); err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	e.UseObjects(st, &storage.Cache{Dir: t.TempDir()})
	answer := func() string {
		res, err := e.Query(context.Background(), "SELECT count(*), sum(x), min(x), max(x) FROM t", engine.QueryOptions{Snapshot: catalog.Latest, NoMetadataAnswers: true})
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(*res.Rows[0][0], *res.Rows[0][1], *res.Rows[0][2], *res.Rows[0][3])
	}
	want := answer()

	ctx, cancel := context.WithCancelCause(context.Background())
	var uploaded []string
	afterUpload = func(up []string) {
		uploaded = append(uploaded, up...)
		cancel(errors.New("interrupted"))
	}
	defer func() { afterUpload = nil }()
	_, err = Optimize(ctx, e, "t", OptimizeOptions{SortBy: []string{"x"}, RowsPerFile: 400})
	afterUpload = nil
	if err == nil || len(uploaded) != 4 {
		t.Fatalf("interrupted optimize: %v, uploaded %v", err, uploaded)
	}
	if keys := keysUnder(t, srv, "lake", "t/_rocklake/"); len(keys) != 0 {
		t.Errorf("an interrupted rewrite left %v", keys)
	}
	r, _ := c.Read(catalog.Latest)
	snap := r.Snapshot().ID
	r.Close()
	if snap != 1 {
		t.Errorf("an interrupted rewrite committed: snapshot %d", snap)
	}

	res, err := Optimize(context.Background(), e, "t", OptimizeOptions{SortBy: []string{"x"}, RowsPerFile: 400})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Dir, "s3://lake/t/_rocklake/table-1/optimize-1-") || res.FilesAfter != 4 {
		t.Errorf("optimize: %+v", res)
	}
	if keys := keysUnder(t, srv, "lake", "t/_rocklake/"); len(keys) != 4 {
		t.Errorf("after optimize: %v", keys)
	}
	if got := answer(); got != want {
		t.Errorf("after optimize %s, before %s", got, want)
	}
}
