package pqmeta

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func stampNow(t *testing.T, p string) Stamp {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return StampOf(st)
}

// untilChanged repeats change until the file's ctime moves: the kernel
// stamps it from a clock that ticks every few milliseconds.
func untilChanged(t *testing.T, p string, change func()) {
	t.Helper()
	before := stampNow(t, p).Changed
	deadline := time.Now().Add(5 * time.Second)
	for change(); stampNow(t, p).Changed == before; change() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: ctime stays put", p)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// What a user can do to a file without root, each seen by its stamp: a
// chmod and a write with the time set back move the ctime, a rename over
// the path changes the inode; an untouched file differs in nothing, and
// a field not recorded is not compared.
func TestStampDifferences(t *testing.T) {
	dir := t.TempDir()
	p := writeInts(t, filepath.Join(dir, "a.parquet"), "x", 100)
	reg := stampNow(t, p)
	if reg.Changed == 0 || !reg.ID.Known() {
		t.Skip("stat gives no ctime or inode here")
	}
	if d := reg.Differences(stampNow(t, p)); len(d) != 0 {
		t.Fatalf("an untouched file differs: %v", d)
	}
	untilChanged(t, p, func() {
		if err := os.Chmod(p, 0o600); err != nil {
			t.Fatal(err)
		}
	})
	d := reg.Differences(stampNow(t, p))
	if len(d) != 1 || !strings.HasPrefix(d[0], "ctime is ") {
		t.Fatalf("after a chmod: %v, want the ctime alone", d)
	}
	if d := (Stamp{Size: reg.Size, Modified: reg.Modified, ID: reg.ID}).Differences(stampNow(t, p)); len(d) != 0 {
		t.Fatalf("a stamp recorded without a ctime compares it: %v", d)
	}
	// The same bytes under a new inode, with the old time.
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	mt := time.Unix(0, reg.Modified)
	if err := os.Chtimes(tmp, mt, mt); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
	d = reg.Differences(stampNow(t, p))
	if len(d) != 2 || !strings.HasPrefix(d[0], "another file has its path") || !strings.HasPrefix(d[1], "ctime is ") {
		t.Fatalf("after a rename over it: %v, want the inode and the ctime", d)
	}
	if err := os.Truncate(p, 10); err != nil {
		t.Fatal(err)
	}
	if d := reg.Differences(stampNow(t, p)); len(d) < 2 || d[0] != "size is 10 bytes, registered as "+strconv.FormatInt(reg.Size, 10) {
		t.Fatalf("after a truncation: %v", d)
	}
}

// ReadAs reads a file only as it was registered: a fingerprint of its
// footer that the same bytes keep and other rows of the same size do not,
// a stat that still matches; anything else is a *ChangedError.
func TestReadAs(t *testing.T) {
	dir := t.TempDir()
	p := writeInts(t, filepath.Join(dir, "a.parquet"), "x", 100)
	f, err := Read(p, FileIdentity{})
	if err != nil {
		t.Fatal(err)
	}
	if f.Fingerprint == 0 || f.Changed == 0 || !f.Identity.Known() {
		t.Fatalf("footer read without its fingerprint or ctime: %+v", f)
	}
	reg := f.Stamp()
	if _, err := ReadAs(p, reg, f.Fingerprint, f.FooterSize); err != nil {
		t.Fatalf("the file as registered: %v", err)
	}
	// A copy has the same footer; other values of the same width do not.
	data, _ := os.ReadFile(p)
	q := filepath.Join(dir, "copy.parquet")
	if err := os.WriteFile(q, data, 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := Read(q, FileIdentity{})
	if err != nil || g.Fingerprint != f.Fingerprint {
		t.Fatalf("a byte-for-byte copy: %v, fingerprint %x, want %x", err, g.Fingerprint, f.Fingerprint)
	}
	other := writeInts(t, filepath.Join(dir, "b.parquet"), "y", 100)
	h, err := Read(other, FileIdentity{})
	if err != nil || h.Fingerprint == f.Fingerprint {
		t.Fatalf("another footer, same fingerprint %x (%v)", h.Fingerprint, err)
	}
	_, err = ReadAs(p, reg, h.Fingerprint, f.FooterSize)
	var ce *ChangedError
	if !errors.As(err, &ce) || !errors.Is(err, ErrChanged) || !strings.Contains(err.Error(), "its footer changed") {
		t.Fatalf("another fingerprint: %v, want a ChangedError saying the footer changed", err)
	}
	if _, err := ReadAs(p, reg, 0, 0); err != nil {
		t.Fatalf("no fingerprint recorded: %v, want none compared", err)
	}
	untilChanged(t, p, func() {
		if err := os.Chmod(p, 0o600); err != nil {
			t.Fatal(err)
		}
	})
	if _, err := ReadAs(p, reg, f.Fingerprint, f.FooterSize); !errors.As(err, &ce) || !strings.Contains(err.Error(), "ctime is") {
		t.Fatalf("after a chmod: %v, want a ChangedError naming the ctime", err)
	}
	// Index structures likewise.
	fx, err := OpenIndexAs(q, stampNow(t, q))
	if err != nil {
		t.Fatalf("index of an unchanged file: %v", err)
	}
	fx.Close()
	if _, err := OpenIndexAs(p, reg); !errors.Is(err, ErrChanged) || !strings.Contains(err.Error(), p) {
		t.Fatalf("index of a changed file: %v, want ErrChanged naming it", err)
	}
}
