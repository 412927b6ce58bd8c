package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/pqmeta"
	"github.com/rocklake/rocklake/prune"
)

// identityCase is a table of DuckDB-written files, each 100 rows of x
// from a base, and a DuckDB to write them with.
type identityCase struct {
	dir         string
	compression string // a COPY option, ", COMPRESSION ..."; "" for DuckDB's (Snappy)
	duck        func(q string)
	cat         *catalog.Catalog
	eng         *Engine
}

func newIdentityCase(t *testing.T) *identityCase {
	t.Helper()
	db, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cat, err := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := New(cat)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &identityCase{dir: dir, cat: cat, eng: eng, compression: ", COMPRESSION uncompressed", duck: func(q string) {
		t.Helper()
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}}
}

// write writes rows lo..lo+99 of x (and y) to name; uncompressed, the
// same size for every lo of the same number of digits.
func (c *identityCase) write(name string, lo int) string {
	p := filepath.Join(c.dir, name)
	c.duck(fmt.Sprintf("COPY (SELECT i::BIGINT AS x, (i %% 7)::BIGINT AS y FROM range(%d, %d) r(i)) TO '%s' (FORMAT parquet, ROW_GROUP_SIZE 50%s)", lo, lo+100, p, c.compression))
	return p
}

func (c *identityCase) answer(q string) (string, error) {
	res, err := c.eng.Query(context.Background(), q, QueryOptions{Snapshot: catalog.Latest})
	if err != nil {
		return "", err
	}
	var rows []string
	for _, r := range res.Rows {
		var vals []string
		for _, v := range r {
			if v == nil {
				vals = append(vals, "NULL")
			} else {
				vals = append(vals, *v)
			}
		}
		rows = append(rows, strings.Join(vals, ","))
	}
	return strings.Join(rows, ";"), nil
}

func ctime(t *testing.T, p string) time.Time {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return time.Unix(0, pqmeta.StampOf(st).Changed)
}

// untilCtimeMoves repeats change until p's ctime moves: the kernel stamps
// it from a clock that ticks every few milliseconds.
func untilCtimeMoves(t *testing.T, p string, change func()) {
	t.Helper()
	before := ctime(t, p)
	deadline := time.Now().Add(5 * time.Second)
	for change(); ctime(t, p).Equal(before); change() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: ctime stays put", p)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// overwrite gives p the bytes of src with p's modification time kept, in
// place (the same inode) or by a rename over it (another one).
func overwrite(t *testing.T, p, src string, rename bool) {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(data)) != st.Size() {
		t.Fatalf("%s and %s differ in size", p, src)
	}
	dst := p
	if rename {
		dst = p + ".new"
	}
	untilCtimeMoves(t, p, func() {
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(dst, st.ModTime(), st.ModTime()); err != nil {
			t.Fatal(err)
		}
		if rename {
			if err := os.Rename(dst, p); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// A query refuses a file that is not the one registered, whatever kept
// its size and modification time: a chmod (its ctime), a rewrite in place
// with the time set back, another file renamed over it (its inode), and
// a truncation, each naming the file and the command that repairs it. A
// query whose plan skips the file still answers.
func TestQueryRefusesChangedIdentity(t *testing.T) {
	c := newIdentityCase(t)
	files := map[string]string{}
	var paths []string
	for i, name := range []string{"chmod", "rewritten", "renamed", "truncated", "kept"} {
		p := c.write(name+".parquet", 1000+100*i)
		files[name] = p
		paths = append(paths, p)
	}
	if _, err := ingest.Add(c.cat, "t", paths, ingest.Options{Create: true}); err != nil {
		t.Fatal(err)
	}
	other := c.write("other.parquet", 5000)
	whole := "SELECT count(*), sum(x), sum(y) FROM t WHERE y >= 0"
	if got, err := c.answer(whole); err != nil || got != "500,624750,1498" {
		t.Fatalf("before any change: %s %v", got, err)
	}
	changes := []struct {
		name, what string
		change     func(p string)
	}{
		{"chmod", "ctime is", func(p string) {
			untilCtimeMoves(t, p, func() {
				if err := os.Chmod(p, 0o600); err != nil {
					t.Fatal(err)
				}
			})
		}},
		{"rewritten", "ctime is", func(p string) { overwrite(t, p, other, false) }},
		{"renamed", "another file has its path", func(p string) { overwrite(t, p, other, true) }},
		{"truncated", "size is 100 bytes", func(p string) {
			if err := os.Truncate(p, 100); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for i, ch := range changes {
		p := files[ch.name]
		ch.change(p)
		q := fmt.Sprintf("SELECT count(*), sum(x) FROM t WHERE x BETWEEN %d AND %d", 1000+100*i, 1000+100*i+99)
		_, err := c.answer(q)
		if !errors.Is(err, ErrDataFileChanged) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), ch.what) ||
			!strings.Contains(err.Error(), "rocklake refresh t "+p) {
			t.Errorf("%s: %v, want ErrDataFileChanged naming %s, %q and the refresh", ch.name, err, p, ch.what)
		}
	}
	if got, err := c.answer("SELECT count(*), sum(x) FROM t WHERE x >= 1400"); err != nil || got != "100,144950" {
		t.Errorf("a query that skips every changed file: %s %v", got, err)
	}
}

// The partial path reads a kept file's footer: one whose fingerprint is
// not the one registered fails the query, even where stat saw nothing.
func TestPartialReadComparesFooter(t *testing.T) {
	c := newIdentityCase(t)
	p := c.write("a.parquet", 1000)
	m, err := pqmeta.Read(p, pqmeta.FileIdentity{})
	if err != nil {
		t.Fatal(err)
	}
	kf := prune.KeptFile{Path: p, Rows: 100, Ranges: []prune.RowRange{{RowGroup: 0, First: 0, Count: 10}}}
	want := fileStamp{size: m.Size, modified: m.Modified, changed: m.Changed, id: m.Identity, fingerprint: m.Fingerprint, footerSize: m.FooterSize}
	if fp, err := partialRead(kf, "t", p, PartialAuto, want); err != nil || fp.read.How != ReadRowRanges {
		t.Fatalf("the file as registered: %v, read %s (%s)", err, fp.read.How, fp.read.Why)
	}
	want.fingerprint++
	if _, err := partialRead(kf, "t", p, PartialAuto, want); !errors.Is(err, ErrDataFileChanged) || !strings.Contains(err.Error(), "its footer changed") {
		t.Fatalf("another footer: %v, want ErrDataFileChanged", err)
	}
}

// A file rewritten in place of the same size with its time set back, and
// registered again, is read as it is now by an engine that read it
// before: DuckDB's cache of file bytes, which trusts the modification
// time, would hand back the old bytes under the new footer.
func TestRegisteredAgainIsReadAgain(t *testing.T) {
	c := newIdentityCase(t)
	// Compressed, as DuckDB writes by default: stale bytes then fail to
	// decompress, or decompress to the old rows.
	c.compression = ""
	p := c.write("a.parquet", 1000)
	if _, err := ingest.Add(c.cat, "t", []string{p}, ingest.Options{Create: true}); err != nil {
		t.Fatal(err)
	}
	size := func(p string) int64 {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}
	lo := 2000
	for b := c.write("b.parquet", lo); size(b) != size(p); b = c.write("b.parquet", lo) {
		if lo += 100; lo > 50_000 {
			t.Fatalf("no rows give a file of %d bytes", size(p))
		}
	}
	q := "SELECT count(*), sum(x), max(x) FROM t WHERE y >= 0"
	if got, err := c.answer(q); err != nil || got != "100,104950,1099" {
		t.Fatalf("before: %s %v", got, err)
	}
	overwrite(t, p, filepath.Join(c.dir, "b.parquet"), false)
	r, err := c.cat.Read(catalog.Latest)
	if err != nil {
		t.Fatal(err)
	}
	tb, _ := r.Table("t")
	files, _ := r.Files(tb.ID)
	nfs, err := ingest.PrepareAgain(context.Background(), r, tb, files, ingest.AgainOptions{})
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	tx, err := c.cat.Begin()
	if err != nil {
		t.Fatal(err)
	}
	tx.RegisterAgain("t", files[0].ID)
	tx.AddFiles("t", nfs...)
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("100,%d,%d", 100*lo+4950, lo+99)
	if got, err := c.answer(q); err != nil || got != want {
		t.Fatalf("after: %s %v, want %s, the new rows", got, err, want)
	}
}
