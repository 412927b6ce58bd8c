package catalog

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"
)

// Every value is an envelope: a version byte, two magic bytes, then the
// protobuf message.
//
//	+---------+------+------+------------------+
//	| version | 'R'  | 'L'  | protobuf message |
//	+---------+------+------+------------------+
//
// The version says how to read the message; a reader refuses versions it
// does not know instead of misreading them. The magic catches a value that
// is not ours (or a torn write) before protobuf guesses at it.
const (
	envelopeVersion byte = 1
	magic0          byte = 'R'
	magic1          byte = 'L'
)

// ErrCorrupt reports a stored value that cannot be read.
var ErrCorrupt = errors.New("catalog: corrupt value")

// envelopeLen is the envelope's length before the message.
const envelopeLen = 3

func encodeValue(m proto.Message) ([]byte, error) {
	buf := []byte{envelopeVersion, magic0, magic1}
	return proto.MarshalOptions{Deterministic: true}.MarshalAppend(buf, m)
}

func decodeValue(b []byte, m proto.Message) error {
	body, err := envelopeBody(b)
	if err != nil {
		return err
	}
	if err := proto.Unmarshal(body, m); err != nil {
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return nil
}

// envelopeBody checks the envelope and returns the message it holds.
func envelopeBody(b []byte) ([]byte, error) {
	if len(b) < 3 {
		return nil, fmt.Errorf("%w: %d-byte value", ErrCorrupt, len(b))
	}
	if b[1] != magic0 || b[2] != magic1 {
		return nil, fmt.Errorf("%w: bad magic %x", ErrCorrupt, b[:3])
	}
	if b[0] != envelopeVersion {
		return nil, fmt.Errorf("%w: envelope version %d is newer than this rocklake reads (%d)", ErrCorrupt, b[0], envelopeVersion)
	}
	return b[3:], nil
}
