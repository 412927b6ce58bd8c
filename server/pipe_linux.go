package server

import (
	"os"

	"golang.org/x/sys/unix"
)

// pipeSize is the capacity asked for a COPY's pipe: with Linux's default
// of 64 KB DuckDB's writers waited on the session a few lines at a time;
// 1 MB (the most an unprivileged process may ask, fs.pipe-max-size) took
// a fifth off a COPY's time. Without it a COPY is only slower.
const pipeSize = 1 << 20

func growPipe(f *os.File) {
	if c, err := f.SyscallConn(); err == nil {
		c.Control(func(fd uintptr) { unix.FcntlInt(fd, unix.F_SETPIPE_SZ, pipeSize) })
	}
}

// pipeHolds is how many bytes wait to be read from the pipe fd reads.
func pipeHolds(fd uintptr) (int, error) { return unix.IoctlGetInt(int(fd), unix.TIOCINQ) }
