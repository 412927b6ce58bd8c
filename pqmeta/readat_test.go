package pqmeta

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// countingReader is an object read by requests: it holds the last held
// bytes and counts every read outside them.
type countingReader struct {
	data  []byte
	held  int64
	reads int
}

func (r *countingReader) Holds(off, n int64) bool {
	return off >= int64(len(r.data))-r.held && off+n <= int64(len(r.data))
}

func (r *countingReader) ReadAt(p []byte, off int64) (int, error) {
	if !r.Holds(off, int64(len(p))) {
		r.reads++
	}
	return bytes.NewReader(r.data).ReadAt(p, off)
}

// ReadAt over the bytes of a file is Read of the file, and reading a
// footer that lies in the prefetched tail costs no further read.
func TestReadAtIsRead(t *testing.T) {
	p := writeInts(t, filepath.Join(t.TempDir(), "a.parquet"), "x", 5000)
	want, err := Read(p, FileIdentity{})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	r := &countingReader{data: data, held: int64(len(data)) - 100}
	got, err := ReadAt(r, int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	got.Modified, got.Changed, got.Identity = want.Modified, want.Changed, want.Identity
	if want.Parsed() == nil || got.Parsed() != nil {
		t.Errorf("Read keeps arrow-go's parse (%v), ReadAt does not (%v): want true, false", want.Parsed() != nil, got.Parsed() != nil)
	}
	want.Forget() // Read's own: not part of what the file says
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ReadAt differs from Read:\n%+v\n%+v", got, want)
	}
	if r.reads != 0 {
		t.Errorf("%d reads outside the prefetched tail, want 0 (the leading magic is not worth a request)", r.reads)
	}
	// A footer longer than the tail held costs one more read.
	r = &countingReader{data: data, held: 16}
	if _, err := ReadAt(r, int64(len(data))); err != nil || r.reads != 1 {
		t.Errorf("footer beyond the tail: %v, %d reads, want 1", err, r.reads)
	}
	// Damage is still found: a cut tail, a wrong footer length.
	if _, err := ReadAt(bytes.NewReader(data[:len(data)-3]), int64(len(data)-3)); !errors.Is(err, ErrTruncated) {
		t.Errorf("truncated: %v", err)
	}
	bad := bytes.Clone(data)
	bad[len(bad)-8] = 0xff
	bad[len(bad)-7] = 0xff
	if _, err := ReadAt(bytes.NewReader(bad), int64(len(bad))); !errors.Is(err, ErrCorruptFooter) {
		t.Errorf("bad footer length: %v", err)
	}
	notPq := bytes.Clone(data)
	copy(notPq, "XXXX")
	if _, err := ReadAt(bytes.NewReader(notPq), int64(len(notPq))); !errors.Is(err, ErrNotParquet) {
		t.Errorf("no leading magic, all held: %v", err)
	}
}
