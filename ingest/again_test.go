package ingest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/pqmeta"
)

// Registration records what a reader needs to tell the file from another
// one at its path later: its ctime, device and inode, and its footer's
// fingerprint, as read from the file it read.
func TestAddRecordsIdentity(t *testing.T) {
	dir := realDir(t)
	p := writeInts(t, filepath.Join(dir, "a.parquet"), "x", 10)
	c := memCatalog(t)
	if _, err := Add(c, "t", []string{p}, Options{Create: true}); err != nil {
		t.Fatal(err)
	}
	f := liveFiles(t, c, "t")[0]
	m, err := pqmeta.Read(p, pqmeta.FileIdentity{})
	if err != nil {
		t.Fatal(err)
	}
	if f.ChangedUnixNanos == 0 || f.ChangedUnixNanos != m.Changed || f.ModifiedUnixNanos != m.Modified ||
		f.FooterFingerprint == 0 || f.FooterFingerprint != m.Fingerprint || f.FooterSize != m.FooterSize ||
		f.Identity != catalog.FileIdentity(m.Identity) {
		t.Fatalf("registered %+v, the file is %+v", f, m.Stamp())
	}
}

// PrepareAgain builds a file's registration from what it holds now, as
// Add would, keeping what is the file's and not its content's: its
// ownership, the extra columns it was registered without, the table's
// membership filters; a file that no longer fits, or whose location now
// leads elsewhere, is refused naming it.
func TestPrepareAgain(t *testing.T) {
	dir := realDir(t)
	a := writeFile(t, filepath.Join(dir, "d", "a.parquet"), intColumn("x", 0, 10))
	b := writeFile(t, filepath.Join(dir, "d", "b.parquet"), intColumn("x", 100, 10), intColumn("extra", 0, 10))
	c := memCatalog(t)
	if _, err := Add(c, "t", []string{a}, Options{Create: true, FilterColumns: []string{"x"}, Owner: catalog.OwnerTaken}); err != nil {
		t.Fatal(err)
	}
	if _, err := Add(c, "t", []string{b}, Options{IgnoreExtraColumns: true}); err != nil {
		t.Fatal(err)
	}
	// Both rewritten in place with other rows.
	writeFile(t, a, intColumn("x", 1000, 20))
	writeFile(t, b, intColumn("x", 2000, 30), intColumn("extra", 0, 30))
	r, err := c.Read(catalog.Latest)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tb, err := r.Table("t")
	if err != nil {
		t.Fatal(err)
	}
	files := liveFiles(t, c, "t")
	byPath := map[string]catalog.DataFile{}
	for _, f := range files {
		byPath[f.Path] = f
	}
	nfs, err := PrepareAgain(context.Background(), r, tb, []catalog.DataFile{byPath[a], byPath[b]}, AgainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if nfs[0].Path != a || nfs[0].RecordCount != 20 || nfs[0].Owner != catalog.OwnerTaken || nfs[0].FooterFingerprint == byPath[a].FooterFingerprint {
		t.Errorf("a again: %+v", nfs[0])
	}
	if nfs[1].Path != b || nfs[1].RecordCount != 30 || nfs[1].Owner != catalog.OwnerUser && nfs[1].Owner != catalog.OwnerUnrecorded ||
		len(nfs[1].IgnoredColumns) != 1 || nfs[1].IgnoredColumns[0] != "extra" {
		t.Errorf("b again: %+v", nfs[1])
	}
	for i, nf := range nfs {
		filtered := false
		for _, fc := range nf.Columns {
			filtered = filtered || fc.Filter != nil
		}
		if !filtered {
			t.Errorf("file %d again has no membership filter on x, which the table keeps", i)
		}
	}

	// A file that no longer fits.
	writeFile(t, a, intColumn("y", 0, 5))
	if _, err := PrepareAgain(context.Background(), r, tb, []catalog.DataFile{byPath[a]}, AgainOptions{}); !errors.Is(err, ErrSchemaMismatch) || !strings.Contains(err.Error(), a) {
		t.Errorf("a file without the table's column: %v, want ErrSchemaMismatch naming it", err)
	}
	// A location that now leads to another directory.
	moved := filepath.Join(dir, "moved")
	if err := os.Rename(filepath.Join(dir, "d"), moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(moved, filepath.Join(dir, "d")); err != nil {
		t.Fatal(err)
	}
	if _, err := PrepareAgain(context.Background(), r, tb, []catalog.DataFile{byPath[b]}, AgainOptions{}); err == nil || !strings.Contains(err.Error(), "now resolves to "+filepath.Join(moved, "b.parquet")) {
		t.Errorf("a location leading elsewhere: %v, want a refusal naming where it leads", err)
	}
}
