package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/rocklake/rocklake/catalog"
)

// runWithin runs the CLI and fails the test if it does not return in time:
// no fault may make a command hang.
func runWithin(t *testing.T, args ...string) (string, error) {
	t.Helper()
	type res struct {
		out string
		err error
	}
	done := make(chan res, 1)
	go func() {
		out, err := run(t, args...)
		done <- res{out, err}
	}()
	select {
	case r := <-done:
		return r.out, r.err
	case <-time.After(60 * time.Second):
		t.Fatalf("rocklake %s did not return within 60s", strings.Join(args, " "))
		return "", nil
	}
}

// injectFullDisk makes the catalog's store see ENOSPC on every write while
// the returned toggle is on.
func injectFullDisk(t *testing.T) *errorfs.Toggle {
	t.Helper()
	tog := &errorfs.Toggle{Injector: errorfs.InjectorFunc(func(op errorfs.Op) error {
		if op.Kind.ReadOrWrite() == errorfs.OpIsWrite && op.Kind != errorfs.OpLock {
			return &os.PathError{Op: "write", Path: op.Path, Err: syscall.ENOSPC}
		}
		return nil
	})}
	storeFS = errorfs.Wrap(vfs.Default, tog)
	t.Cleanup(func() { storeFS = nil })
	return tog
}

func wantErr(t *testing.T, err error, out string, subs ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want an error containing %q, got none; output:\n%s", subs, out)
	}
	for _, s := range subs {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("want an error containing %q, got: %v", s, err)
		}
	}
	for _, bad := range []string{"panic", "goroutine ", "not a rocklake catalog"} {
		if strings.Contains(err.Error()+out, bad) {
			t.Fatalf("error or output mentions %q: %v\n%s", bad, err, out)
		}
	}
}

// TestFullDiskInjected: on a full disk, reading commands work (the store
// opens read-only), writing ones fail at once with an error naming the
// problem and the directory; once space is back the catalog is as before
// and takes commits.
func TestFullDiskInjected(t *testing.T) {
	dir := newCatalogDir(t)
	mustRun(t, "--catalog", dir, "table", "create", "t", "x BIGINT")
	before := mustRun(t, "--catalog", dir, "snapshots")
	abs, _ := filepath.Abs(dir)

	tog := injectFullDisk(t)
	tog.On()
	out, err := runWithin(t, "--catalog", dir, "snapshots")
	if err != nil || out != before {
		t.Fatalf("snapshots on a full disk: %v\n%s", err, out)
	}
	out, err = runWithin(t, "--catalog", dir, "table", "create", "u", "x BIGINT")
	wantErr(t, err, out, "commit snapshot 2", "no space left on device in "+abs)

	tog.Off()
	if out := mustRun(t, "--catalog", dir, "snapshots"); out != before {
		t.Fatalf("catalog changed by the failed commit:\n%s\nwas\n%s", out, before)
	}
	mustRun(t, "--catalog", dir, "table", "create", "u", "x BIGINT")
	if out := mustRun(t, "--catalog", dir, "snapshots"); !strings.Contains(out, "created tables u") {
		t.Fatalf("commit after space is freed: %s", out)
	}
}

// TestFullDiskTmpfs: the same on a real full file system, a small tmpfs.
func TestFullDiskTmpfs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root; TestFullDiskInjected covers a full disk")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v: %s); TestFullDiskInjected covers a full disk", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", mnt).Run() })
	dir := filepath.Join(mnt, "lake")
	mustRun(t, "--catalog", dir, "init")
	mustRun(t, "--catalog", dir, "table", "create", "t", "x BIGINT")
	before := mustRun(t, "--catalog", dir, "snapshots")

	fill := filepath.Join(mnt, "fill")
	f, err := os.Create(fill)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			break
		}
	}
	f.Close()
	out, err := runWithin(t, "--catalog", dir, "snapshots")
	if err != nil || out != before {
		t.Fatalf("snapshots on a full tmpfs: %v\n%s", err, out)
	}
	out, err = runWithin(t, "--catalog", dir, "table", "create", "u", "x BIGINT")
	wantErr(t, err, out, "no space left on device in "+dir)
	os.Remove(fill)
	if out := mustRun(t, "--catalog", dir, "snapshots"); out != before {
		t.Fatalf("catalog changed by the failed commit:\n%s\nwas\n%s", out, before)
	}
	mustRun(t, "--catalog", dir, "table", "create", "u", "x BIGINT")
}

// damaged makes a catalog with a table, its rows flushed into a table
// file, and returns its directory.
func damaged(t *testing.T) string {
	t.Helper()
	dir := newCatalogDir(t)
	mustRun(t, "--catalog", dir, "table", "create", "t", "x BIGINT")
	c, err := catalog.Open(dir, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CompactStore(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	return dir
}

func newest(t *testing.T, dir, pattern string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, pattern))
	if len(m) == 0 {
		t.Fatalf("no %s in %s", pattern, dir)
	}
	sort.Strings(m)
	return m[len(m)-1]
}

func flip(t *testing.T, path string, off int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if off < 0 {
		off += len(b)
	}
	b[off] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestFlippedTableByteCLI: a damaged table file is corruption naming the
// file for every command, verify --deep included; it used to be a panic.
func TestFlippedTableByteCLI(t *testing.T) {
	dir := damaged(t)
	sst := newest(t, dir, "*.sst")
	flip(t, sst, 100)
	for _, args := range [][]string{{"snapshots"}, {"table", "list"}, {"verify", "--deep", "t"}, {"table", "create", "u", "x INT"}} {
		out, err := runWithin(t, append([]string{"--catalog", dir}, args...)...)
		wantErr(t, err, out, "is corrupt", sst)
	}
}

// TestMissingTableCLI: a table file gone from the catalog directory is
// corruption naming it, not "not a rocklake catalog".
func TestMissingTableCLI(t *testing.T) {
	dir := damaged(t)
	sst := newest(t, dir, "*.sst")
	if err := os.Remove(sst); err != nil {
		t.Fatal(err)
	}
	out, err := runWithin(t, "--catalog", dir, "snapshots")
	wantErr(t, err, out, "is corrupt", sst, "missing")
}

// TestFlippedManifestByteCLI: a damaged manifest is corruption naming it.
func TestFlippedManifestByteCLI(t *testing.T) {
	dir := damaged(t)
	m := newest(t, dir, "MANIFEST-*")
	flip(t, m, 12)
	out, err := runWithin(t, "--catalog", dir, "snapshots")
	wantErr(t, err, out, "is corrupt", filepath.Base(m))
}

// TestFlippedOptionsByteCLI: damage that breaks the OPTIONS file's syntax
// is corruption naming it; damage Pebble does not read leaves the catalog
// as it was.
func TestFlippedOptionsByteCLI(t *testing.T) {
	dir := damaged(t)
	before := mustRun(t, "--catalog", dir, "snapshots")
	o := newest(t, dir, "OPTIONS-*")
	flip(t, o, 0)
	out, err := runWithin(t, "--catalog", dir, "snapshots")
	wantErr(t, err, out, "is corrupt", filepath.Base(o))

	dir = damaged(t)
	flip(t, newest(t, dir, "OPTIONS-*"), -5)
	if out := mustRun(t, "--catalog", dir, "snapshots"); strings.Count(out, "\n") != strings.Count(before, "\n") {
		t.Fatalf("options damaged in a comment: %s", out)
	}
}

// TestLostSnapshotCLI: a damaged last log record used to drop the last
// acknowledged snapshot silently, and the next commit reused its id. The
// record of the last committed snapshot now makes every command, verify
// included, refuse the catalog, naming the missing snapshot; no commit
// can reuse its id.
func TestLostSnapshotCLI(t *testing.T) {
	dir := newCatalogDir(t)
	mustRun(t, "--catalog", dir, "table", "create", "t", "x BIGINT")
	c, err := catalog.Open(dir, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tx, _ := c.Begin()
	tx.CreateTable("u", []catalog.ColumnDef{{Name: "x", Type: "bigint"}})
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	// Snapshot 2 is acknowledged and lives in the log: copy the directory
	// as a crash now would leave it.
	crashed := filepath.Join(t.TempDir(), "lake")
	if err := os.MkdirAll(crashed, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if os.IsNotExist(err) {
			continue // removed by the store since the listing
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(crashed, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	flip(t, newest(t, crashed, "*.log"), -20)

	for _, args := range [][]string{{"snapshots"}, {"verify", "t"}, {"table", "create", "v", "x INT"}} {
		out, err := runWithin(t, append([]string{"--catalog", crashed}, args...)...)
		wantErr(t, err, out, "is corrupt", "snapshot 2 was committed", "the newest snapshot the store holds is 1")
	}
}
