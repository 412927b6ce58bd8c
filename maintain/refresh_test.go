package maintain

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/pqmeta"
)

// refreshCase is a table of uncompressed DuckDB-written files of 100
// rows each, on an engine.
type refreshCase struct {
	t   *testing.T
	dir string
	cat *catalog.Catalog
	eng *engine.Engine
}

func newRefreshCase(t *testing.T) *refreshCase {
	t.Helper()
	c, err := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &refreshCase{t: t, dir: dir, cat: c, eng: e}
}

// write writes x = lo..lo+99 to name, PLAIN-encoded and uncompressed, so
// that every lo of four digits gives a file of the same size and each
// value's eight bytes lie in the file as they are.
func (rc *refreshCase) write(name string, lo int) string {
	rc.t.Helper()
	p := filepath.Join(rc.dir, name)
	q := fmt.Sprintf("COPY (SELECT (i * 1000003)::BIGINT AS x FROM range(%d, %d) r(i)) TO '%s' (FORMAT parquet, COMPRESSION uncompressed, DICTIONARY_COMPRESSION_RATIO_THRESHOLD -1)", lo, lo+100, p)
	if _, err := rc.eng.DB().Exec(q); err != nil {
		rc.t.Fatal(err)
	}
	return p
}

func (rc *refreshCase) answer(q string) (string, error) {
	res, err := rc.eng.Query(context.Background(), q, engine.QueryOptions{Snapshot: catalog.Latest})
	if err != nil {
		return "", err
	}
	var out []string
	for _, r := range res.Rows {
		for _, v := range r {
			out = append(out, *v)
		}
	}
	return strings.Join(out, ","), nil
}

func (rc *refreshCase) ctime(p string) time.Time {
	st, err := os.Stat(p)
	if err != nil {
		rc.t.Fatal(err)
	}
	return time.Unix(0, pqmeta.StampOf(st).Changed)
}

// touch moves p's ctime and nothing else (a chmod to its own mode), again
// until the kernel's clock has ticked.
func (rc *refreshCase) touch(p string) {
	rc.t.Helper()
	before := rc.ctime(p)
	deadline := time.Now().Add(5 * time.Second)
	for rc.ctime(p).Equal(before) {
		if time.Now().After(deadline) {
			rc.t.Fatalf("%s: ctime stays put", p)
		}
		if err := os.Chmod(p, 0o644); err != nil {
			rc.t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// patch replaces the first occurrence of old's eight little-endian bytes
// in p with new's, keeping p's time: a value changed in a data page,
// with the footer (statistics, offsets) byte for byte as it was.
func (rc *refreshCase) patch(p string, old, new int64) {
	rc.t.Helper()
	st, _ := os.Stat(p)
	data, err := os.ReadFile(p)
	if err != nil {
		rc.t.Fatal(err)
	}
	var o, n [8]byte
	binary.LittleEndian.PutUint64(o[:], uint64(old))
	binary.LittleEndian.PutUint64(n[:], uint64(new))
	i := bytes.Index(data, o[:])
	if i < 0 {
		rc.t.Fatalf("%s holds no %d", p, old)
	}
	copy(data[i:], n[:])
	before := rc.ctime(p)
	for rc.ctime(p).Equal(before) {
		if err := os.WriteFile(p, data, 0o644); err != nil {
			rc.t.Fatal(err)
		}
		if err := os.Chtimes(p, st.ModTime(), st.ModTime()); err != nil {
			rc.t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// refused runs a refresh that must be refused naming every file given
// and why, leaving the catalog exactly as it was.
func (rc *refreshCase) refused(why string, paths []string, o RefreshOptions) {
	rc.t.Helper()
	d := kvtest.Digest(rc.t, rc.cat.Store())
	_, err := Refresh(context.Background(), rc.eng, "t", paths, o)
	if !errors.Is(err, engine.ErrDataFileChanged) || !strings.Contains(err.Error(), why) || !strings.Contains(err.Error(), "nothing was changed") {
		rc.t.Fatalf("refresh %v %+v: %v, want a refusal saying %q", paths, o, err, why)
	}
	for _, p := range paths {
		if !strings.Contains(err.Error(), p) {
			rc.t.Fatalf("refresh %v: %v, want %s named", paths, err, p)
		}
	}
	if kvtest.Digest(rc.t, rc.cat.Store()) != d {
		rc.t.Fatalf("refresh %v was refused and changed the catalog", paths)
	}
}

func (rc *refreshCase) file(p string) catalog.DataFile {
	rc.t.Helper()
	r, err := rc.cat.Read(catalog.Latest)
	if err != nil {
		rc.t.Fatal(err)
	}
	defer r.Close()
	tb, _ := r.Table("t")
	files, _ := r.Files(tb.ID)
	for _, f := range files {
		if f.Path == p {
			return f
		}
	}
	rc.t.Fatalf("%s is not a live file of t", p)
	return catalog.DataFile{}
}

// verify's plain check names every file whose identity changed, with
// what changed: the ctime of a chmod, the inode of a file renamed over
// it, the footer of a rewrite in place that kept size and time, the size
// of a truncation.
func TestVerifyNamesIdentityChanges(t *testing.T) {
	rc := newRefreshCase(t)
	a, b, c, d, e := rc.write("a.parquet", 1000), rc.write("b.parquet", 1100), rc.write("c.parquet", 1200), rc.write("d.parquet", 1300), rc.write("e.parquet", 1400)
	if _, err := ingest.Add(rc.cat, "t", []string{a, b, c, d, e}, ingest.Options{Create: true}); err != nil {
		t.Fatal(err)
	}
	rc.touch(a)
	data, _ := os.ReadFile(b)
	st, _ := os.Stat(b)
	os.WriteFile(b+".new", data, 0o644)
	os.Chtimes(b+".new", st.ModTime(), st.ModTime())
	if err := os.Rename(b+".new", b); err != nil {
		t.Fatal(err)
	}
	other := rc.write("other.parquet", 5000)
	data, _ = os.ReadFile(other)
	st, _ = os.Stat(c)
	if int64(len(data)) != st.Size() {
		t.Fatalf("%s and %s differ in size", other, c)
	}
	before := rc.ctime(c)
	for rc.ctime(c).Equal(before) {
		os.WriteFile(c, data, 0o644)
		os.Chtimes(c, st.ModTime(), st.ModTime())
		time.Sleep(5 * time.Millisecond)
	}
	if err := os.Truncate(d, 50); err != nil {
		t.Fatal(err)
	}
	rep, err := Verify(context.Background(), rc.eng, "t", catalog.Latest, false)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range rep.Problems {
		got[p.Path] = p.What
	}
	for p, whats := range map[string][]string{
		a: {"ctime is"},
		b: {"another file has its path", "ctime is"},
		c: {"ctime is", "its footer changed"},
		d: {"size is 50 bytes", "its footer cannot be read"},
	} {
		for _, w := range whats {
			if !strings.Contains(got[p], w) || !strings.Contains(got[p], "rocklake refresh t "+p) {
				t.Errorf("verify of %s: %q, want %q and the refresh named", filepath.Base(p), got[p], w)
			}
		}
	}
	if len(got) != 4 || got[e] != "" {
		t.Errorf("verify: %v, want the four changed files and not e", got)
	}
}

// Refresh takes back a file whose footer is the one registered, as it is
// now, keeping its registration; refuses a file whose content changed
// unless told to register it again or remove it; with Deep refuses a file
// whose rows contradict the statistics its unchanged footer holds; and
// leaves the catalog as it was whenever it refuses.
func TestRefresh(t *testing.T) {
	rc := newRefreshCase(t)
	a, b, c, d := rc.write("a.parquet", 1000), rc.write("b.parquet", 1100), rc.write("c.parquet", 1200), rc.write("d.parquet", 1300)
	if _, err := ingest.Add(rc.cat, "t", []string{a, b, c, d}, ingest.Options{Create: true, Owner: catalog.OwnerTaken}); err != nil {
		t.Fatal(err)
	}
	scan := "SELECT count(*), sum(x) FROM t WHERE x >= 0"
	if got, err := rc.answer(scan); err != nil || got != fmt.Sprintf("400,%d", int64(479800)*1000003) {
		t.Fatalf("before: %s %v", got, err)
	}
	ctx := context.Background()

	// Nothing changed: nothing to do.
	rep, err := Refresh(ctx, rc.eng, "t", []string{a}, RefreshOptions{})
	if err != nil || rep.Snapshot != 0 || len(rep.Files) != 1 || rep.Files[0].Outcome != RefreshUnchanged {
		t.Fatalf("refresh of an unchanged file: %+v %v", rep, err)
	}
	if _, err := Refresh(ctx, rc.eng, "t", []string{filepath.Join(rc.dir, "nosuch.parquet")}, RefreshOptions{}); !errors.Is(err, catalog.ErrNoSuchFile) {
		t.Fatalf("refresh of a file the table lacks: %v", err)
	}

	// a: a chmod. Accepted, the same registration.
	rc.touch(a)
	before := rc.file(a)
	rep, err = Refresh(ctx, rc.eng, "t", []string{a}, RefreshOptions{Deep: true})
	if err != nil || rep.Snapshot == 0 || rep.Files[0].Outcome != RefreshAccepted || !strings.Contains(strings.Join(rep.Files[0].Changed, ";"), "ctime is") {
		t.Fatalf("refresh after a chmod: %+v %v", rep, err)
	}
	if now := rc.file(a); now.ID != before.ID || now.RowIDStart != before.RowIDStart || now.ChangedUnixNanos == before.ChangedUnixNanos || now.Owner != catalog.OwnerTaken {
		t.Fatalf("accepted: %+v, was %+v", now, before)
	}

	// b: one value changed in place, the footer (and so its statistics)
	// kept: its max no longer bounds it. Only Deep sees it.
	rc.patch(b, 1150*1000003, 9_000_000_000)
	rc.refused("its rows contradict its statistics", []string{b}, RefreshOptions{Deep: true})
	rc.refused("its rows contradict its statistics", []string{b}, RefreshOptions{Deep: true, Stats: true})

	// c: rewritten with other rows of the same size, its time kept.
	other := rc.write("other.parquet", 5000)
	data, _ := os.ReadFile(other)
	st, _ := os.Stat(c)
	if int64(len(data)) != st.Size() {
		t.Fatalf("%s and %s differ in size", other, c)
	}
	ct := rc.ctime(c)
	for rc.ctime(c).Equal(ct) {
		os.WriteFile(c, data, 0o644)
		os.Chtimes(c, st.ModTime(), st.ModTime())
		time.Sleep(5 * time.Millisecond)
	}
	rc.refused("its content is not the content registered", []string{c}, RefreshOptions{})
	rc.refused("its content is not the content registered", []string{c}, RefreshOptions{Deep: true})
	// d: gone.
	if err := os.Remove(d); err != nil {
		t.Fatal(err)
	}
	rc.refused("--remove removes it", []string{d}, RefreshOptions{})
	rc.refused("--remove removes it", []string{d}, RefreshOptions{Stats: true})
	// One refusal refuses all: c, which Stats would register again, too.
	dg := kvtest.Digest(t, rc.cat.Store())
	if _, err := Refresh(ctx, rc.eng, "t", []string{c, d}, RefreshOptions{Stats: true}); !errors.Is(err, engine.ErrDataFileChanged) ||
		!strings.Contains(err.Error(), d+": missing") || strings.Contains(err.Error(), c) {
		t.Fatalf("refresh --stats of a rewritten and a missing file: %v, want d refused alone", err)
	}
	if kvtest.Digest(t, rc.cat.Store()) != dg {
		t.Fatal("a refused refresh registered a file again")
	}

	oldC := rc.file(c)
	rep, err = Refresh(ctx, rc.eng, "t", []string{c}, RefreshOptions{Stats: true})
	if err != nil || rep.Files[0].Outcome != RefreshRegistered || rep.Files[0].NewFileID == 0 || rep.Files[0].NewFileID == oldC.ID {
		t.Fatalf("refresh --stats of a rewritten file: %+v %v", rep, err)
	}
	if now := rc.file(c); now.RecordCount != 100 || now.Owner != catalog.OwnerTaken || now.ID != rep.Files[0].NewFileID {
		t.Fatalf("registered again: %+v", now)
	}
	rep, err = Refresh(ctx, rc.eng, "t", []string{b, d}, RefreshOptions{Remove: true})
	if err != nil || len(rep.Files) != 2 || rep.Files[0].Outcome != RefreshRemoved || rep.Files[1].Outcome != RefreshRemoved {
		t.Fatalf("refresh --remove: %+v %v", rep, err)
	}
	// a, as it was; c, its new rows 5000..5099 (times 1000003).
	want := fmt.Sprintf("200,%d", int64(104950+504950)*1000003)
	if got, err := rc.answer(scan); err != nil || got != want {
		t.Fatalf("after: %s %v, want %s", got, err, want)
	}
	if got, err := rc.answer("SELECT max(x) FROM t"); err != nil || got != fmt.Sprint(int64(5099)*1000003) {
		t.Fatalf("max from statistics after: %s %v", got, err)
	}
	rep, err = Refresh(ctx, rc.eng, "t", nil, RefreshOptions{All: true})
	if err != nil || rep.Snapshot != 0 || len(rep.Files) != 2 {
		t.Fatalf("refresh --all with nothing changed: %+v %v", rep, err)
	}
	if v, err := Verify(ctx, rc.eng, "t", catalog.Latest, true); err != nil || len(v.Problems) != 0 {
		t.Fatalf("verify --deep after: %+v %v", v, err)
	}
}

// A rewrite (optimize, compact) reads a table's files only as registered:
// a file changed on disk since would bring its rows into the new files,
// and the table, as if they were those registered.
func TestRewriteRefusesChangedFiles(t *testing.T) {
	rc := newRefreshCase(t)
	a, b := rc.write("a.parquet", 1000), rc.write("b.parquet", 1100)
	if _, err := ingest.Add(rc.cat, "t", []string{a, b}, ingest.Options{Create: true}); err != nil {
		t.Fatal(err)
	}
	rc.touch(b)
	d := kvtest.Digest(t, rc.cat.Store())
	_, err := Optimize(context.Background(), rc.eng, "t", OptimizeOptions{SortBy: []string{"x"}})
	if !errors.Is(err, engine.ErrDataFileChanged) || !strings.Contains(err.Error(), b) || !strings.Contains(err.Error(), "rocklake refresh") {
		t.Fatalf("optimize over a changed file: %v, want ErrDataFileChanged naming it", err)
	}
	if kvtest.Digest(t, rc.cat.Store()) != d {
		t.Fatal("a refused optimize changed the catalog")
	}
}

// A file registered before ctimes and fingerprints were recorded is
// checked as it was then (its size and modification time), and is taken
// back only once Deep has checked it, which records them.
func TestRefreshLegacyFile(t *testing.T) {
	rc := newRefreshCase(t)
	a := rc.write("a.parquet", 1000)
	tx, _ := rc.cat.Begin()
	tx.CreateTable("t", []catalog.ColumnDef{{Name: "x", Type: "BIGINT"}})
	cols, err := catalog.PlanColumns([]catalog.ColumnDef{{Name: "x", Type: "BIGINT"}})
	if err != nil {
		t.Fatal(err)
	}
	nfs, _, err := ingest.PrepareFiles(context.Background(), "t", cols, []string{a}, ingest.PrepareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nfs[0].ChangedUnixNanos, nfs[0].FooterFingerprint = 0, 0
	tx.AddFiles("t", nfs...)
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	rc.touch(a)
	if _, err := rc.answer("SELECT sum(x) FROM t WHERE x > 0"); err != nil {
		t.Fatalf("a chmod of a file registered without a ctime: %v, want it read as before", err)
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(a, later, later); err != nil {
		t.Fatal(err)
	}
	if _, err := rc.answer("SELECT sum(x) FROM t WHERE x > 0"); !errors.Is(err, engine.ErrDataFileChanged) {
		t.Fatalf("its modification time changed: %v, want ErrDataFileChanged", err)
	}
	rc.refused("registered before rocklake recorded footer fingerprints", []string{a}, RefreshOptions{})
	rep, err := Refresh(context.Background(), rc.eng, "t", []string{a}, RefreshOptions{Deep: true})
	if err != nil || rep.Files[0].Outcome != RefreshAccepted {
		t.Fatalf("refresh --deep: %+v %v", rep, err)
	}
	if f := rc.file(a); f.FooterFingerprint == 0 || f.ChangedUnixNanos == 0 {
		t.Fatalf("taken back without its fingerprint and ctime: %+v", f)
	}
	if _, err := rc.answer("SELECT sum(x) FROM t WHERE x > 0"); err != nil {
		t.Fatal(err)
	}
}

// A registered path that now leads through a link to another file is not
// taken back, even one with the same bytes: registration resolved the
// path's links, and the file registered there is gone.
func TestRefreshRefusesPathThroughLink(t *testing.T) {
	rc := newRefreshCase(t)
	if err := os.Mkdir(filepath.Join(rc.dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	a := rc.write(filepath.Join("d", "a.parquet"), 1000)
	if _, err := ingest.Add(rc.cat, "t", []string{a}, ingest.Options{Create: true}); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(a)
	data, _ := os.ReadFile(a)
	elsewhere := filepath.Join(rc.dir, "elsewhere")
	if err := os.Mkdir(elsewhere, 0o755); err != nil {
		t.Fatal(err)
	}
	copyPath := filepath.Join(elsewhere, "a.parquet")
	if err := os.WriteFile(copyPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(copyPath, st.ModTime(), st.ModTime())
	if err := os.Rename(filepath.Join(rc.dir, "d"), filepath.Join(rc.dir, "d.old")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(rc.dir, "d")); err != nil {
		t.Fatal(err)
	}
	rc.refused("its path now resolves to "+copyPath, []string{a}, RefreshOptions{})
	rc.refused("its path now resolves to "+copyPath, []string{a}, RefreshOptions{Deep: true})
	rep, err := Refresh(context.Background(), rc.eng, "t", []string{a}, RefreshOptions{Remove: true})
	if err != nil || rep.Files[0].Outcome != RefreshRemoved {
		t.Fatalf("refresh --remove: %+v %v", rep, err)
	}
}
