// Package hugemem allocates large arrays that are filled once and kept
// (a plan's file set and column bounds, cached between plans) so that
// the kernel may back them with huge pages.
//
// A fresh 4 KiB page costs a fault when it is first written. On the
// virtual machines this project is measured on a fault costs 12 to 17 µs,
// so filling 80 MB of fresh memory (a ten-million-file table's ids) takes
// about 0.25 s, most of a new process's plan. Linux backs a range marked
// MADV_HUGEPAGE (where transparent huge pages are "always" or "madvise")
// with 2 MiB pages on first touch: 40 faults instead of 20,000 (20 to
// 150 ms for the same 80 MB here, depending on how fragmented free memory
// is). The Go runtime does not mark its heap so, and an array must be
// marked before its first write: hence an allocation here, not a call
// after one.
//
// Elsewhere, and for arrays under Min, Slice is make.
package hugemem

import "unsafe"

// Min is the smallest array marked: below a few huge pages there is
// little to gain.
const Min = 4 << 20

// Slice returns make([]T, 0, n), its memory marked for huge pages when it
// is at least Min bytes. T must hold no pointers.
func Slice[T any](n int) []T {
	s := make([]T, 0, n)
	var zero T
	mark(unsafe.Pointer(unsafe.SliceData(s)), uintptr(n)*unsafe.Sizeof(zero))
	return s
}

// Advise marks the capacity of b, made by someone else and not yet
// written past its length (a Pebble batch sized for a large commit), as
// Slice marks what it makes. Only the huge pages wholly inside it are
// marked: the ones already written stay as they are.
func Advise(b []byte) { mark(unsafe.Pointer(unsafe.SliceData(b)), uintptr(cap(b))) }

// mark advises size bytes at p when they are at least Min.
func mark(p unsafe.Pointer, size uintptr) {
	if size >= Min {
		advise(p, size)
	}
}

// Zeroed returns make([]T, n), marked as Slice marks it.
func Zeroed[T any](n int) []T { return Slice[T](n)[:n] }
