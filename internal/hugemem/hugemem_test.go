package hugemem

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// vmFlags is the VmFlags line of the mapping holding address p in
// /proc/self/smaps.
func vmFlags(t *testing.T, p uintptr) string {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if fields := strings.Fields(line); len(fields) > 0 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			lo, hi, _ := strings.Cut(fields[0], "-")
			a, err1 := strconv.ParseUint(lo, 16, 64)
			b, err2 := strconv.ParseUint(hi, 16, 64)
			in = err1 == nil && err2 == nil && uintptr(a) <= p && p < uintptr(b)
			continue
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			return line
		}
	}
	t.Fatalf("no mapping holds %#x", p)
	return ""
}

// A large array is marked for huge pages (VmFlags "hg") across its whole
// huge pages, is empty with the capacity asked, and holds what is
// appended.
func TestSliceMarksLargeArrays(t *testing.T) {
	const n = 3 * Min / 8
	s := Slice[int64](n)
	if len(s) != 0 || cap(s) != n {
		t.Fatalf("len %d cap %d, want 0 and %d", len(s), cap(s), n)
	}
	for i := range n {
		s = append(s, int64(i))
	}
	for _, i := range []int{0, n / 2, n - 1} {
		if s[i] != int64(i) {
			t.Fatalf("s[%d] = %d", i, s[i])
		}
	}
	if runtime.GOOS != "linux" {
		return
	}
	mid := uintptr(unsafe.Pointer(&s[n/2]))
	if flags := vmFlags(t, mid); !strings.Contains(flags, " hg") {
		t.Errorf("the middle of a %d MiB array is not marked for huge pages: %s", n*8>>20, flags)
	}
}

// Advise marks an array it did not make, from its length to its capacity,
// and leaves what it holds as it was.
func TestAdviseMarksAnArrayMadeElsewhere(t *testing.T) {
	const n = 3 * Min
	b := make([]byte, 16, n)
	copy(b, "written already.")
	Advise(b)
	b = b[:n]
	for i := 16; i < n; i += 4096 {
		b[i] = byte(i)
	}
	if half := n / 2; string(b[:16]) != "written already." || b[half] != byte(half) {
		t.Fatalf("the array changed: %q, %d", b[:16], b[half])
	}
	if runtime.GOOS != "linux" {
		return
	}
	if flags := vmFlags(t, uintptr(unsafe.Pointer(&b[n/2]))); !strings.Contains(flags, " hg") {
		t.Errorf("the middle of a %d MiB array is not marked for huge pages: %s", n>>20, flags)
	}
}
