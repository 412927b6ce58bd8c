package types

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
)

// uuidCodec keeps the 16 bytes in RFC 4122 order. DuckDB stores a UUID as a
// HUGEINT with the top bit flipped, which orders exactly as these bytes
// compared unsigned.
func uuidCodec() *Codec {
	return &Codec{
		typ: Simple(KindUUID), width: 16, ordered: true,
		enc: func(dst []byte, v Value) ([]byte, error) {
			if len(v.B) != 16 {
				return dst, fmt.Errorf("UUID: %d bytes, want 16", len(v.B))
			}
			return append(dst, v.B...), nil
		},
		dec: func(b []byte) (Value, error) { return BytesValue(append([]byte(nil), b...)), nil },
		format: func(v Value) string {
			h := hex.EncodeToString(v.B)
			if len(h) != 32 {
				return h
			}
			return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
		},
		parse: func(s string, _ Rounding) (Value, bool, error) {
			t := strings.TrimSpace(s)
			if strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}") {
				t = t[1 : len(t)-1]
			}
			if len(t) == 36 {
				if t[8] != '-' || t[13] != '-' || t[18] != '-' || t[23] != '-' {
					return Value{}, false, fmt.Errorf("UUID: %q is not a UUID", s)
				}
				t = t[:8] + t[9:13] + t[14:18] + t[19:23] + t[24:]
			}
			if len(t) != 32 {
				return Value{}, false, fmt.Errorf("UUID: %q is not a UUID", s)
			}
			b, err := hex.DecodeString(t)
			if err != nil {
				return Value{}, false, fmt.Errorf("UUID: %q is not a UUID", s)
			}
			return BytesValue(b), true, nil
		},
	}
}

// bytesCodec: VARCHAR and BLOB bounds are the raw bytes, compared unsigned
// (DuckDB compares strings by their UTF-8 bytes, so 'é' > 'z'). The encoding
// is not self-delimiting: each bound is stored in a field of its own.
func bytesCodec(k Kind) *Codec {
	c := &Codec{
		typ: Simple(k), width: 0, ordered: true,
		enc: func(dst []byte, v Value) ([]byte, error) { return append(dst, v.B...), nil },
		dec: func(b []byte) (Value, error) { return BytesValue(append([]byte{}, b...)), nil },
	}
	if k == KindBlob {
		c.format = func(v Value) string { return formatBlob(v.B) }
		c.parse = func(s string, _ Rounding) (Value, bool, error) {
			b, err := parseBlob(s)
			return BytesValue(b), err == nil, err
		}
	} else {
		c.format = func(v Value) string { return string(v.B) }
		c.parse = func(s string, _ Rounding) (Value, bool, error) { return StringValue(s), true, nil }
	}
	return c
}

// formatBlob writes DuckDB's blob text: printable ASCII as itself, every
// other byte, and the quote and backslash characters, as \xHH.
func formatBlob(b []byte) string {
	var sb strings.Builder
	for _, c := range b {
		if c >= 0x20 && c <= 0x7e && c != '\\' && c != '\'' && c != '"' {
			sb.WriteByte(c)
			continue
		}
		fmt.Fprintf(&sb, `\x%02X`, c)
	}
	return sb.String()
}

// parseBlob reads DuckDB's blob text: literal bytes with \xHH hex escapes
// (either case). A backslash not starting an escape is an error, as in
// DuckDB.
func parseBlob(s string) ([]byte, error) {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			out = append(out, s[i])
			continue
		}
		if i+4 > len(s) || (s[i+1] != 'x' && s[i+1] != 'X') {
			return nil, fmt.Errorf("BLOB: %q: bad escape at byte %d (want \\xHH)", s, i)
		}
		v, err := hex.DecodeString(s[i+2 : i+4])
		if err != nil {
			return nil, fmt.Errorf("BLOB: %q: bad escape at byte %d (want \\xHH)", s, i)
		}
		out = append(out, v[0])
		i += 3
	}
	return out, nil
}

// enumCodec: the dictionary index as 4 big-endian bytes; DuckDB orders an
// ENUM by index, not by label. A bare `enum` without labels cannot map text
// to an index, so it gets no codec.
func enumCodec(t Type) (*Codec, bool) {
	if t.Labels == nil {
		return nil, false
	}
	labels := t.Labels
	index := make(map[string]uint64, len(labels))
	for i, l := range labels {
		index[l] = uint64(i)
	}
	n := uint64(len(labels))
	return &Codec{
		typ: t, width: 4, ordered: true,
		enc: func(dst []byte, v Value) ([]byte, error) {
			if v.U.Hi != 0 || v.U.Lo >= n {
				return dst, fmt.Errorf("enum: index %s of %d labels: %w", v.U, n, ErrOutOfRange)
			}
			return binary.BigEndian.AppendUint32(dst, uint32(v.U.Lo)), nil
		},
		dec: func(b []byte) (Value, error) {
			i := uint64(binary.BigEndian.Uint32(b))
			if i >= n {
				return Value{}, fmt.Errorf("enum: index %d of %d labels: %w", i, n, ErrOutOfRange)
			}
			return UintValue(i), nil
		},
		format: func(v Value) string {
			if v.U.Hi != 0 || v.U.Lo >= n {
				return fmt.Sprintf("<enum index %s>", v.U)
			}
			return labels[v.U.Lo]
		},
		parse: func(s string, _ Rounding) (Value, bool, error) {
			i, ok := index[s]
			if !ok {
				return Value{}, false, fmt.Errorf("enum: %q is not a label of %s", s, t)
			}
			return UintValue(i), true, nil
		},
	}, true
}
