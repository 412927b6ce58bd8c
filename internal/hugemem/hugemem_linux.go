package hugemem

import (
	"syscall"
	"unsafe"
)

// hugePage is the x86-64 and arm64 huge page size Linux uses for
// transparent huge pages.
const hugePage = 2 << 20

// advise marks the huge pages wholly inside [p, p+size). A failure (no
// transparent huge pages, an old kernel) leaves the memory as it was:
// only slower to fill.
func advise(p unsafe.Pointer, size uintptr) {
	start := uintptr(p)
	beg := (start + hugePage - 1) &^ (hugePage - 1)
	end := (start + size) &^ (hugePage - 1)
	if beg >= end {
		return
	}
	_ = syscall.Madvise(unsafe.Slice((*byte)(unsafe.Add(p, beg-start)), end-beg), syscall.MADV_HUGEPAGE)
}
