package storage

import (
	"encoding/binary"
	"syscall"
)

// sumAttr is the extended attribute that holds a whole copy's checksum
// where the file system keeps them (ext4, xfs, btrfs, tmpfs since Linux
// 6.6): set on the temporary file, it moves with the rename, so an entry
// and its checksum appear together, and it costs no file of its own
// (creating one cost more than the rest of a cold read's check).
const sumAttr = "user.rocklake.crc32c"

func setSumAttr(path string, sum uint32) error {
	return syscall.Setxattr(path, sumAttr, binary.BigEndian.AppendUint32(nil, sum), 0)
}

func sumAttrOf(path string) (uint32, bool) {
	var b [4]byte
	n, err := syscall.Getxattr(path, sumAttr, b[:])
	if err != nil || n != 4 {
		return 0, false
	}
	return binary.BigEndian.Uint32(b[:]), true
}
