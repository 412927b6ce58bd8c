//go:build !linux

package hugemem

import "unsafe"

func advise(unsafe.Pointer, uintptr) {}
