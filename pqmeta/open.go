package pqmeta

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"reflect"

	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/thrift/lib/go/thrift"
)

// ErrNotParquet, ErrTruncated and ErrCorruptFooter classify files whose
// footer cannot be read.
var (
	ErrNotParquet    = errors.New("not a Parquet file")
	ErrTruncated     = errors.New("truncated Parquet file")
	ErrCorruptFooter = errors.New("corrupt Parquet footer")
)

// ErrNotRegular reports a path that is not a regular file: a named pipe,
// a socket, a device, or a directory where a file was expected. Opening a
// named pipe the ordinary way blocks until a writer comes, so Open never
// does, and callers that list files check their modes first (CheckRegular).
var ErrNotRegular = errors.New("not a regular file")

var parquetMagic = []byte("PAR1")

// FileIdentity is a file's device and inode number: every path that
// reaches the same file (symbolic links, hard links, bind mounts) has the
// same identity. The zero value is unknown, as it is where the platform
// has none.
type FileIdentity struct {
	Device uint64
	Inode  uint64
}

// Known reports whether the identity is known.
func (id FileIdentity) Known() bool { return id != FileIdentity{} }

// IdentityOf is the identity of the file st describes.
func IdentityOf(st fs.FileInfo) FileIdentity { return identityOf(st) }

// CheckRegular returns nil for a regular file's mode, and otherwise an
// error wrapping ErrNotRegular that says what the file is.
func CheckRegular(m fs.FileMode) error {
	if m.IsRegular() {
		return nil
	}
	return fmt.Errorf("%w, it is %s", ErrNotRegular, describeMode(m))
}

// Open opens a regular file for reading, without blocking on anything
// else, and refuses anything else. When want is known, the file opened
// must be that one: a file replaced since it was listed is refused.
func Open(path string, want FileIdentity) (*os.File, error) {
	f, _, err := open(path, want)
	return f, err
}

func open(path string, want FileIdentity) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, openFlags, 0)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err == nil {
		err = CheckRegular(st.Mode())
	}
	if err == nil && want.Known() {
		if got := identityOf(st); got.Known() && got != want {
			err = fmt.Errorf("replaced by another file since it was listed (inode %d, was %d)", got.Inode, want.Inode)
		}
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, st, nil
}

// footer is a file's parsed footer. md embeds arrow-go's raw thrift
// FileMetaData, which keeps what the typed API drops (column orders,
// nan_count, is_min/max_value_exact, unknown logical types).
type footer struct {
	md          *metadata.FileMetaData
	full        bool // md is arrow-go's own parse, not the thrift struct alone
	fileSize    int64
	footerLen   int64
	fingerprint uint64
	stamp       Stamp // of the open file the footer was read from
}

// readFooter reads and decodes the footer of the Parquet file at path.
func readFooter(path string, want FileIdentity) (*footer, error) {
	f, st, err := open(path, want)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ft, err := readFooterAt(f, st.Size())
	if err != nil {
		return nil, err
	}
	ft.stamp = StampOf(st)
	return ft, nil
}

// prefetched is a reader that can say which bytes it holds already (an
// object's tail, read in one request): anything else costs a request.
type prefetched interface {
	Holds(off, n int64) bool
}

// readFooterAt reads and decodes the footer of a Parquet file of size
// bytes through r. The leading magic is checked only where reading it is
// free: from an object store it would be a request per file, for four
// bytes the trailing magic and the footer's own checks already vouch
// for.
func readFooterAt(r io.ReaderAt, size int64) (*footer, error) {
	checkHead := true
	if p, ok := r.(prefetched); ok && !p.Holds(0, 4) {
		checkHead = false
	}
	if size < 12 {
		if size >= 4 && hasMagicAt(r, 0) {
			return nil, fmt.Errorf("%w: only %d bytes", ErrTruncated, size)
		}
		return nil, fmt.Errorf("%w: only %d bytes", ErrNotParquet, size)
	}
	if checkHead && !hasMagicAt(r, 0) {
		return nil, fmt.Errorf("%w: no PAR1 magic at the start", ErrNotParquet)
	}
	var tail [8]byte
	if _, err := r.ReadAt(tail[:], size-8); err != nil && !(errors.Is(err, io.EOF)) {
		return nil, err
	}
	if !bytes.Equal(tail[4:], parquetMagic) {
		return nil, fmt.Errorf("%w: no PAR1 magic at the end (%d bytes)", ErrTruncated, size)
	}
	flen := int64(binary.LittleEndian.Uint32(tail[:4]))
	if flen <= 0 || flen > size-12 {
		return nil, fmt.Errorf("%w: footer length %d does not fit a %d-byte file", ErrCorruptFooter, flen, size)
	}
	buf := make([]byte, flen)
	if _, err := r.ReadAt(buf, size-8-flen); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	md, full, err := decodeFooter(buf)
	if err != nil {
		return nil, err
	}
	return &footer{md: md, full: full, fileSize: size, footerLen: flen, fingerprint: Fingerprint(buf)}, nil
}

func hasMagicAt(r io.ReaderAt, off int64) bool {
	var m [4]byte
	_, err := r.ReadAt(m[:], off)
	return (err == nil || errors.Is(err, io.EOF)) && bytes.Equal(m[:], parquetMagic)
}

// decodeFooter parses footer bytes with arrow-go. arrow-go also converts the
// schema, which panics or fails on schemas it does not understand (an
// unknown logical type); the footer itself may still be sound, so then the
// thrift struct is decoded alone and the schema is interpreted here.
// full says arrow-go itself parsed it (its readers can take md).
func decodeFooter(buf []byte) (md *metadata.FileMetaData, full bool, err error) {
	md, err = newFileMetaData(buf)
	if err == nil {
		return md, true, nil
	}
	raw, rawErr := decodeRawFooter(buf)
	if rawErr != nil {
		return nil, false, fmt.Errorf("%w: %v", ErrCorruptFooter, rawErr)
	}
	return raw, false, nil
}

func newFileMetaData(buf []byte) (md *metadata.FileMetaData, err error) {
	defer func() {
		if r := recover(); r != nil {
			md, err = nil, fmt.Errorf("arrow-go: %v", r)
		}
	}()
	return metadata.NewFileMetaData(buf, nil)
}

// decodeRawFooter decodes only the thrift FileMetaData. Its Go type lives
// in an internal package of arrow-go, so it is made by reflection from the
// exported embedding field.
func decodeRawFooter(buf []byte) (md *metadata.FileMetaData, err error) {
	defer func() {
		if r := recover(); r != nil {
			md, err = nil, fmt.Errorf("thrift: %v", r)
		}
	}()
	md = &metadata.FileMetaData{}
	field := reflect.ValueOf(md).Elem().FieldByName("FileMetaData")
	raw := reflect.New(field.Type().Elem())
	msg, ok := raw.Interface().(thrift.TStruct)
	if !ok {
		return nil, errors.New("arrow-go's FileMetaData is not a thrift struct")
	}
	proto := thrift.NewTCompactProtocolConf(&thrift.TMemoryBuffer{Buffer: bytes.NewBuffer(buf)}, &thrift.TConfiguration{})
	if err := msg.Read(context.Background(), proto); err != nil {
		return nil, err
	}
	field.Set(raw)
	return md, nil
}

func describeMode(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "an irregular file"
}
