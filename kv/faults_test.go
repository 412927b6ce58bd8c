package kv

import (
	"errors"
	"fmt"
	"io/fs"
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
)

// fullDisk makes every write of the file system fail with ENOSPC while on,
// as a full disk does.
type fullDisk struct{ errorfs.Toggle }

func newFullDisk() (*fullDisk, vfs.FS) {
	d := &fullDisk{}
	d.Toggle = errorfs.Toggle{Injector: errorfs.InjectorFunc(func(op errorfs.Op) error {
		// Taking the lock of an existing LOCK file needs no space.
		if op.Kind.ReadOrWrite() == errorfs.OpIsWrite && op.Kind != errorfs.OpLock {
			return &os.PathError{Op: "write", Path: op.Path, Err: syscall.ENOSPC}
		}
		return nil
	})}
	return d, errorfs.Wrap(vfs.Default, d)
}

// within fails the test if fn does not return in time: a full disk or a
// damaged file must never make a call hang.
func within(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not return within 30s", what)
	}
}

func put(t *testing.T, s Store, kvs ...string) error {
	t.Helper()
	b := s.NewBatch()
	defer b.Close()
	for i := 0; i+1 < len(kvs); i += 2 {
		if err := b.Set([]byte(kvs[i]), []byte(kvs[i+1])); err != nil {
			t.Fatal(err)
		}
	}
	return b.Commit()
}

func mustGet(t *testing.T, s Reader, k, want string) {
	t.Helper()
	v, err := s.Get([]byte(k))
	if err != nil || string(v) != want {
		t.Fatalf("get %s = %q, %v; want %q", k, v, err, want)
	}
}

func checkNoSpace(t *testing.T, err error, dir string) {
	t.Helper()
	abs, _ := filepath.Abs(dir)
	if !errors.Is(err, ErrNoSpace) || !errors.Is(err, syscall.ENOSPC) ||
		!strings.Contains(err.Error(), "no space left on device in "+abs) {
		t.Fatalf("want a no-space error naming %s, got %v", abs, err)
	}
}

// TestFullDiskCommit: a commit on a full disk fails at once with an error
// naming the directory, the store then refuses everything without
// hanging, and after space is freed it reopens with every acknowledged
// write and none of the failed one.
func TestFullDiskCommit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	disk, fsys := newFullDisk()
	s, err := OpenPebble(dir, PebbleOptions{Create: true, FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	if err := put(t, s, "a", "1"); err != nil {
		t.Fatal(err)
	}
	disk.On()
	within(t, "commit on a full disk", func() { err = put(t, s, "b", "2") })
	checkNoSpace(t, err, dir)
	within(t, "a second commit", func() { err = put(t, s, "c", "3") })
	checkNoSpace(t, err, dir)
	within(t, "close", func() { _ = s.Close() })

	disk.Off()
	s, err = OpenPebble(dir, PebbleOptions{FS: fsys})
	if err != nil {
		t.Fatalf("reopen after space is freed: %v", err)
	}
	defer s.Close()
	mustGet(t, s, "a", "1")
	for _, k := range []string{"b", "c"} {
		if _, err := s.Get([]byte(k)); !errors.Is(err, ErrNotFound) {
			t.Fatalf("failed commit's key %s: %v", k, err)
		}
	}
	if err := put(t, s, "d", "4"); err != nil {
		t.Fatalf("commit after space is freed: %v", err)
	}
	mustGet(t, s, "d", "4")
}

// TestFullDiskOpen: a store whose disk is full opens read-only (Pebble's
// read-write open writes a manifest and options), reads work, writes fail
// with ErrNoSpace; nothing in the directory changes.
func TestFullDiskOpen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	disk, fsys := newFullDisk()
	s, err := OpenPebble(dir, PebbleOptions{Create: true, FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	if err := put(t, s, "a", "1"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	before := listing(t, dir)

	disk.On()
	within(t, "open on a full disk", func() { s, err = OpenPebble(dir, PebbleOptions{FS: fsys}) })
	if err != nil {
		t.Fatalf("open on a full disk: %v", err)
	}
	mustGet(t, s, "a", "1")
	err = put(t, s, "b", "2")
	checkNoSpace(t, err, dir)
	within(t, "close", func() { _ = s.Close() })
	if after := listing(t, dir); after != before {
		t.Fatalf("a full-disk open changed the directory:\n%s\nto\n%s", before, after)
	}

	disk.Off()
	s, err = OpenPebble(dir, PebbleOptions{FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := put(t, s, "b", "2"); err != nil {
		t.Fatal(err)
	}
	mustGet(t, s, "a", "1")
}

// TestFullDiskUnflushedLog: a read-write open must flush the log it
// replays; on a full disk that flush used to be retried forever, one
// printed line per try, and the open never returned. It now opens
// read-only with the log's writes visible.
func TestFullDiskUnflushedLog(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	disk, fsys := newFullDisk()
	s, err := OpenPebble(dir, PebbleOptions{Create: true, FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	if err := put(t, s, "a", "1"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	before := listing(t, dir)

	disk.On()
	within(t, "open with a log to replay", func() { s, err = OpenPebble(dir, PebbleOptions{FS: fsys}) })
	if err != nil {
		t.Fatalf("open with a log to replay on a full disk: %v", err)
	}
	mustGet(t, s, "a", "1")
	checkNoSpace(t, put(t, s, "b", "2"), dir)
	within(t, "close", func() { _ = s.Close() })
	if after := listing(t, dir); after != before {
		t.Fatalf("a full-disk open changed the directory:\n%s\nto\n%s", before, after)
	}

	disk.Off()
	s, err = OpenPebble(dir, PebbleOptions{FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mustGet(t, s, "a", "1")
}

// TestFullTmpfs runs the same against a real full file system: a small
// tmpfs, mounted when the test may mount.
func TestFullTmpfs(t *testing.T) {
	mnt := mountTmpfs(t, "8m")
	dir := filepath.Join(mnt, "db")
	s, err := OpenPebble(dir, PebbleOptions{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := put(t, s, "a", "1"); err != nil {
		t.Fatal(err)
	}
	fill := filepath.Join(mnt, "fill")
	fillUp(t, fill)
	big := strings.Repeat("x", 256<<10)
	within(t, "commit on a full tmpfs", func() { err = put(t, s, "b", big) })
	checkNoSpace(t, err, dir)
	within(t, "close", func() { _ = s.Close() })
	within(t, "open on a full tmpfs", func() { s, err = OpenPebble(dir, PebbleOptions{}) })
	if err != nil {
		t.Fatalf("open on a full tmpfs: %v", err)
	}
	mustGet(t, s, "a", "1")
	s.Close()
	os.Remove(fill)
	s, err = OpenPebble(dir, PebbleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := put(t, s, "b", big); err != nil {
		t.Fatalf("commit after space is freed: %v", err)
	}
}

// mountTmpfs mounts a tmpfs of the given size for the test, or skips when
// this process may not mount (not root, or no mount namespace rights).
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root; the injected-ENOSPC tests cover a full disk")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v: %s); the injected-ENOSPC tests cover a full disk", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", mnt, err, out)
		}
	})
	return mnt
}

// fillUp writes path until the file system is full.
func fillUp(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
	}
}

func listing(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, e := range entries {
		info, _ := e.Info()
		lines = append(lines, fmt.Sprintf("%s %d", e.Name(), info.Size()))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// flushedStore makes a store with keys k000..k199 flushed into a table, and
// returns its directory.
func flushedStore(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "db")
	s, err := OpenPebble(dir, PebbleOptions{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	var kvs []string
	for i := range 200 {
		kvs = append(kvs, fmt.Sprintf("k%03d", i), strings.Repeat("v", 100))
	}
	if err := put(t, s, kvs...); err != nil {
		t.Fatal(err)
	}
	if err := s.(Compacter).Compact(nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if off < 0 {
		off += int64(len(b))
	}
	b[off] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func only(t *testing.T, dir, pattern string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, pattern))
	if len(m) == 0 {
		t.Fatalf("no %s in %s", pattern, dir)
	}
	sort.Strings(m)
	return m[len(m)-1]
}

// readAll opens the store and reads every key; it returns the first error.
func readAll(dir string) (n int, err error) {
	s, err := OpenPebble(dir, PebbleOptions{ReadOnly: true})
	if err != nil {
		return 0, err
	}
	defer s.Close()
	it, err := s.NewIter(nil, nil)
	if err != nil {
		return 0, err
	}
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	if err := it.Error(); err != nil {
		it.Close()
		return n, err
	}
	return n, it.Close()
}

func checkCorrupt(t *testing.T, err error, file string) {
	t.Helper()
	if err == nil || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), file) {
		t.Fatalf("want a corruption error naming %s, got %v", file, err)
	}
	if errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a damaged store must not read as a missing one: %v", err)
	}
}

// TestFlippedTableByte: a damaged table is reported as corruption naming
// the file, never as a panic (Pebble's default answer to corruption is its
// logger's Fatalf), on reads through Get and iterators.
func TestFlippedTableByte(t *testing.T) {
	dir := flushedStore(t)
	sst := only(t, dir, "*.sst")
	flipByte(t, sst, 200)
	_, err := readAll(dir)
	checkCorrupt(t, err, sst)

	s, err := OpenPebble(dir, PebbleOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.Get([]byte("k000"))
	checkCorrupt(t, err, sst)
	// The store stops: a write after damage is found is refused too.
	checkCorrupt(t, put(t, s, "x", "y"), sst)
}

// TestMissingTable: a table file the manifest lists and the directory lacks
// is damage, not "no store here".
func TestMissingTable(t *testing.T) {
	dir := flushedStore(t)
	sst := only(t, dir, "*.sst")
	if err := os.Remove(sst); err != nil {
		t.Fatal(err)
	}
	_, err := OpenPebble(dir, PebbleOptions{})
	checkCorrupt(t, err, sst)
	if !strings.Contains(err.Error(), "missing") {
		t.Fatalf("want the file called missing: %v", err)
	}
}

// TestFlippedManifestByte: damage in the manifest's records is corruption
// naming a manifest file, or (a flip in its last record, which Pebble takes
// for a torn write) a table it no longer lists; either way an error.
func TestFlippedManifestByte(t *testing.T) {
	for _, off := range []int64{0, 12, 30} {
		t.Run(fmt.Sprint(off), func(t *testing.T) {
			dir := flushedStore(t)
			m := only(t, dir, "MANIFEST-*")
			flipByte(t, m, off)
			_, err := OpenPebble(dir, PebbleOptions{})
			checkCorrupt(t, err, filepath.Base(m))
		})
	}
}

// TestFlippedOptionsByte: Pebble reads its OPTIONS file only to check it;
// a flip in a value it does not check leaves the store readable, one that
// breaks the syntax is corruption naming the file. Never a panic.
func TestFlippedOptionsByte(t *testing.T) {
	dir := flushedStore(t)
	o := only(t, dir, "OPTIONS-*")
	flipByte(t, o, 0)
	_, err := OpenPebble(dir, PebbleOptions{})
	checkCorrupt(t, err, filepath.Base(o))

	dir = flushedStore(t)
	o = only(t, dir, "OPTIONS-*")
	flipByte(t, o, -5)
	if n, err := readAll(dir); err != nil || n != 200 {
		t.Fatalf("options damaged in a comment: %d keys, %v", n, err)
	}
}

// TestFlippedLogByte: Pebble recovers the newest log by stopping at its
// first damaged record, which it cannot tell from a write torn by a crash:
// the damaged record and every one after it are dropped without an error.
// The kv layer cannot see this (the catalog's record of its last snapshot
// does); what it guarantees is no panic, and either an error naming the
// log or fewer writes, never different ones.
func TestFlippedLogByte(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	s, err := OpenPebble(dir, PebbleOptions{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := put(t, s, fmt.Sprintf("k%d", i), strings.Repeat("v", 100)); err != nil {
			t.Fatal(err)
		}
	}
	// The commits are in the log only, as a crash would leave them.
	crashed := filepath.Join(t.TempDir(), "crashed")
	copyDir(t, dir, crashed)
	s.Close()

	for _, off := range []int64{20, -20} {
		damaged := filepath.Join(t.TempDir(), "damaged")
		copyDir(t, crashed, damaged)
		wal := only(t, damaged, "*.log")
		flipByte(t, wal, off)
		n, err := readAll(damaged)
		switch {
		case err != nil:
			checkCorrupt(t, err, filepath.Base(wal))
		case n >= 3:
			t.Fatalf("flip at %d: all %d writes read back from a damaged log", off, n)
		}
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFatalBecomesError: Pebble's fatal errors inside a call of ours become
// that call's error and fail the store; they never panic out of it.
func TestFatalBecomesError(t *testing.T) {
	st := newFailState(t.TempDir())
	err := st.call(func() error {
		logger{st}.Fatalf("MANIFEST flush failed: %v", &os.PathError{Op: "write", Path: "MANIFEST-000009", Err: syscall.ENOSPC})
		return nil
	})
	if !errors.Is(err, ErrNoSpace) || !strings.Contains(err.Error(), "MANIFEST flush failed") {
		t.Fatalf("fatal inside a call: %v", err)
	}
	if err := st.call(func() error { return nil }); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("a failed store must keep failing: %v", err)
	}
}
