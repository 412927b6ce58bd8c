//go:build !linux

package server

import (
	"os"

	"golang.org/x/sys/unix"
)

func growPipe(*os.File) {}

// pipeHolds is how many bytes wait to be read from the pipe fd reads.
func pipeHolds(fd uintptr) (int, error) { return unix.IoctlGetInt(int(fd), unix.FIONREAD) }
