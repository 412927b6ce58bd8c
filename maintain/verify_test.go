package maintain

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/membership"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

// lieAboutMax rewrites a file's footer so that its first column's max in
// row group 0 is max, although larger values are present.
func lieAboutMax(t *testing.T, path string, max int64) { lieAboutColumnMax(t, path, 0, 0, max) }

func TestVerify(t *testing.T) {
	dir := t.TempDir()
	mk := func(name string, n int) string {
		vals := make([]*types.Value, n)
		for i := range vals {
			v := types.IntValue(int64(i))
			vals[i] = &v
		}
		p := filepath.Join(dir, name)
		if err := pqwrite.Write(p, []pqwrite.Column{{Name: "x", Type: types.MustParseType("int64"), Values: vals}}, pqwrite.Options{RowGroupRows: 50}); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good, liar, gone, grown := mk("good.parquet", 100), mk("liar.parquet", 100), mk("gone.parquet", 10), mk("grown.parquet", 10)
	lieAboutMax(t, liar, 20) // row group 0 holds 0..49
	c, _ := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	if _, err := ingest.Add(c, "t", []string{good, liar, gone, grown}, ingest.Options{Create: true}); err != nil {
		t.Fatal(err)
	}
	e, _ := engine.New(c)
	defer e.Close()
	ctx := context.Background()
	rep, err := Verify(ctx, e, "t", catalog.Latest, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].What, "stored max 20 excludes the value 49") || rep.Problems[0].Path != liar {
		t.Fatalf("deep verify of a lying footer: %+v", rep.Problems)
	}
	_ = os.Remove(gone)
	_ = os.WriteFile(grown, append(mustRead(t, grown), 0), 0o644)
	rep, err = Verify(ctx, e, "t", catalog.Latest, false)
	if err != nil {
		t.Fatal(err)
	}
	var whats []string
	for _, p := range rep.Problems {
		whats = append(whats, filepath.Base(p.Path)+": "+p.What)
	}
	got := strings.Join(whats, "\n")
	if len(rep.Problems) != 2 || !strings.Contains(got, "gone.parquet: missing") || !strings.Contains(got, "grown.parquet: size is") {
		t.Fatalf("verify of missing and changed files:\n%s", got)
	}
}

func mustRead(t *testing.T, p string) []byte {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// verify --deep reads each file's values against its membership filter: a
// filter that rules out a value the file holds is reported (and a sound
// one is not).
func TestVerifyMembershipFilters(t *testing.T) {
	dir := t.TempDir()
	var ids []*types.Value
	for i := range 1500 {
		v := types.IntValue(int64(i) * 7919)
		ids = append(ids, &v)
	}
	good := filepath.Join(dir, "good.parquet")
	bad := filepath.Join(dir, "bad.parquet")
	badSig := filepath.Join(dir, "badsig.parquet")
	for _, p := range []string{good, bad, badSig} {
		if err := pqwrite.Write(p, []pqwrite.Column{{Name: "id", Type: types.MustParseType("int64"), Values: ids}}, pqwrite.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	c, _ := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	if _, err := ingest.Add(c, "t", []string{good}, ingest.Options{Create: true}); err != nil {
		t.Fatal(err)
	}
	// A registration whose filter holds other values than the file.
	st, _ := os.Stat(bad)
	wrong, _, err := membership.Build([]uint64{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	tx, _ := c.Begin()
	tx.AddFiles("t", catalog.NewFile{Path: bad, RecordCount: 1500, FileSizeBytes: st.Size(), RowGroupCount: 1,
		Columns: []catalog.FileColumn{{Path: []string{"id"}, Stats: stats.Column{RowCount: 1500},
			Filter: &catalog.Filter{Kind: membership.Kind, Data: wrong, Distinct: 3}}}})
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	// One whose filter is right and whose signature (in the membership
	// index) holds other values.
	codec, _ := types.CodecFor(types.MustParseType("int64"))
	var hs []uint64
	for _, v := range ids {
		e, err := codec.Encode(*v)
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, membership.Hash(e))
	}
	right, d, err := membership.Build(hs)
	if err != nil {
		t.Fatal(err)
	}
	tx, _ = c.Begin()
	tx.AddFiles("t", catalog.NewFile{Path: badSig, RecordCount: 1500, FileSizeBytes: st.Size(), RowGroupCount: 1,
		Columns: []catalog.FileColumn{{Path: []string{"id"}, Stats: stats.Column{RowCount: 1500},
			Filter: &catalog.Filter{Kind: membership.Kind, Data: right, Distinct: int64(d),
				Signature: membership.BuildSignature([]uint64{1, 2, 3}, membership.SignatureBlocks(d))}}}})
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	rep, err := Verify(context.Background(), e, "t", catalog.Latest, true)
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, p := range rep.Problems {
		found = append(found, filepath.Base(p.Path)+": "+p.What)
	}
	slices.Sort(found)
	if len(found) != 2 || !strings.HasPrefix(found[0], "bad.parquet: column id: the membership filter rules out 1500 values") ||
		!strings.HasPrefix(found[1], "badsig.parquet: column id: the membership index's signature rules out 1") {
		t.Fatalf("problems: %q", found)
	}
}
