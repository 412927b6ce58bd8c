package server

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgtype"
)

// byteaText reads PostgreSQL's text of a bytea: \x and hex digits, or the
// older escape form (\\ and \ooo).
func byteaText(v []byte) ([]byte, error) {
	if len(v) >= 2 && v[0] == '\\' && v[1] == 'x' {
		h := strings.Map(func(r rune) rune {
			if r == ' ' || r == '\t' || r == '\n' || r == '\r' {
				return -1
			}
			return r
		}, string(v[2:]))
		b, err := hex.DecodeString(h)
		if err != nil {
			return nil, errors.New("invalid hexadecimal data for type bytea")
		}
		return b, nil
	}
	out := make([]byte, 0, len(v))
	for i := 0; i < len(v); i++ {
		if v[i] != '\\' {
			out = append(out, v[i])
			continue
		}
		switch {
		case i+1 < len(v) && v[i+1] == '\\':
			out = append(out, '\\')
			i++
		case i+3 < len(v) && isOctal(v[i+1]) && v[i+1] <= '3' && isOctal(v[i+2]) && isOctal(v[i+3]):
			out = append(out, (v[i+1]-'0')<<6|(v[i+2]-'0')<<3|(v[i+3]-'0'))
			i += 3
		default:
			return nil, errors.New("invalid input syntax for type bytea")
		}
	}
	return out, nil
}

func isOctal(c byte) bool { return '0' <= c && c <= '7' }

func hexValue(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// copyDecoder reads one format of the client's data, as it arrives in
// CopyData pieces that cut rows anywhere.
type copyDecoder interface {
	write(p []byte) error
	finish() error
}

// fieldBuf holds the fields of the row being read.
type fieldBuf struct {
	buf    []byte
	ends   []int
	nulls  []bool
	fields [][]byte
}

// rowOut hands the n-th decoded row on to the stager; a header row is
// checked against the columns (HEADER MATCH) or skipped.
func rowOut(st *stager, o *copyOptions, n int64, fb *fieldBuf, start int64) error {
	fields, nulls := fb.row()
	if n == 1 && o.header {
		if o.match {
			return headerRow(st, fields, nulls, start)
		}
		return nil
	}
	return st.record(fields, nulls, start)
}

func (f *fieldBuf) end(null bool) {
	f.ends = append(f.ends, len(f.buf))
	f.nulls = append(f.nulls, null)
}

func (f *fieldBuf) row() ([][]byte, []bool) {
	f.fields = f.fields[:0]
	start := 0
	for _, e := range f.ends {
		f.fields = append(f.fields, f.buf[start:e])
		start = e
	}
	return f.fields, f.nulls
}

func (f *fieldBuf) reset() { f.buf, f.ends, f.nulls = f.buf[:0], f.ends[:0], f.nulls[:0] }

// value is the field being read.
func (f *fieldBuf) value() []byte {
	start := 0
	if len(f.ends) > 0 {
		start = f.ends[len(f.ends)-1]
	}
	return f.buf[start:]
}

// headerRow checks a HEADER MATCH row against the columns.
func headerRow(st *stager, fields [][]byte, nulls []bool, line int64) error {
	if len(fields) != len(st.cols) {
		return st.fail("22P04", line, "wrong number of fields in header line: got %d, expected %d", len(fields), len(st.cols))
	}
	for i, f := range fields {
		if nulls[i] || string(f) != st.cols[i].name {
			return st.fail("22P04", line, "column name mismatch in header line field %d: got %q, expected %q", i+1, f, st.cols[i].name)
		}
	}
	return nil
}

// textDecoder reads PostgreSQL's text format: fields split by the
// delimiter, rows by newlines, \N (the NULL string, compared before
// escapes are read) for NULL, and backslash escapes: \b \f \n \r \t \v,
// \ and one to three octal digits, \x and one or two hex digits, and a
// backslash before any other byte for that byte. A row of \. alone ends
// the data.
type textDecoder struct {
	st *stager
	o  *copyOptions
	fieldBuf

	state   int // textNormal, textEscape, textOctal, textHexStart, textHex
	num     byte
	digits  int
	raw     []byte // the field as sent, as far as the NULL test needs
	rawLong bool
	skipLF  bool
	pending bool // some of a row has been read
	line    int64
	start   int64 // the line the row started on
	rows    int64
	done    bool
}

func (d *textDecoder) addRaw(c byte) {
	if len(d.raw) <= max(len(d.o.null), 2) {
		d.raw = append(d.raw, c)
	} else {
		d.rawLong = true
	}
}

func (d *textDecoder) rawIs(s string) bool { return !d.rawLong && string(d.raw) == s }

func (d *textDecoder) endField() {
	d.flushPending()
	null := d.rawIs(d.o.null)
	if null {
		d.buf = d.buf[:len(d.buf)-len(d.value())]
	}
	d.end(null)
	d.raw, d.rawLong = d.raw[:0], false
}

func (d *textDecoder) flushPending() {
	switch d.state {
	case textOctal, textHex:
		d.buf = append(d.buf, d.num)
	case textHexStart:
		d.buf = append(d.buf, 'x')
	}
	if d.state != textEscape {
		d.state = textNormal
	}
}

func (d *textDecoder) endRow() error {
	marker := len(d.ends) == 0 && d.rawIs(`\.`)
	d.endField()
	defer func() { d.reset(); d.pending = false }()
	if marker {
		d.done = true
		return nil
	}
	d.rows++
	return rowOut(d.st, d.o, d.rows, &d.fieldBuf, d.start)
}

func (d *textDecoder) write(p []byte) error {
	for i := 0; i < len(p); i++ {
		if d.done {
			return nil
		}
		c := p[i]
		if d.skipLF {
			d.skipLF = false
			if c == '\n' {
				continue
			}
		}
		if !d.pending {
			d.pending, d.line = true, d.line+1
			d.start = d.line
		}
		switch d.state {
		case textNormal:
			switch c {
			case '\\':
				d.state = textEscape
				d.addRaw(c)
			case d.o.delim:
				d.endField()
			case '\n', '\r':
				d.skipLF = c == '\r'
				if err := d.endRow(); err != nil {
					return err
				}
			default:
				d.buf = append(d.buf, c)
				d.addRaw(c)
			}
		case textEscape:
			d.addRaw(c)
			d.state = textNormal
			switch c {
			case 'b':
				d.buf = append(d.buf, '\b')
			case 'f':
				d.buf = append(d.buf, '\f')
			case 'n':
				d.buf = append(d.buf, '\n')
			case 'r':
				d.buf = append(d.buf, '\r')
			case 't':
				d.buf = append(d.buf, '\t')
			case 'v':
				d.buf = append(d.buf, '\v')
			case 'x':
				d.state = textHexStart
			case '0', '1', '2', '3', '4', '5', '6', '7':
				d.state, d.num, d.digits = textOctal, c-'0', 1
			case '\n':
				d.buf = append(d.buf, c) // a backslash and a newline: a newline in the data
				d.line++
			default:
				d.buf = append(d.buf, c)
			}
		case textOctal:
			if isOctal(c) {
				d.addRaw(c)
				d.num, d.digits = d.num<<3|(c-'0'), d.digits+1
				if d.digits == 3 {
					d.buf = append(d.buf, d.num)
					d.state = textNormal
				}
				continue
			}
			d.buf = append(d.buf, d.num)
			d.state = textNormal
			i-- // c is read again, outside the escape
		case textHexStart, textHex:
			if h, ok := hexValue(c); ok {
				d.addRaw(c)
				if d.state == textHexStart {
					d.state, d.num = textHex, h
				} else {
					d.buf = append(d.buf, d.num<<4|h)
					d.state = textNormal
				}
				continue
			}
			d.flushPending()
			i--
		}
	}
	return nil
}

func (d *textDecoder) finish() error {
	if d.done || !d.pending {
		return nil
	}
	if d.state == textEscape {
		return d.st.fail("22P04", d.start, "the data ends after a backslash")
	}
	return d.endRow()
}

// csvDecoder reads CSV as PostgreSQL does: a quote anywhere in a field
// starts a quoted part, in which the escape (the quote itself unless
// ESCAPE says otherwise) before a quote or the escape stands for that
// byte; an unquoted field equal to the NULL string (empty by default) is
// NULL, a quoted one never is (but FORCE_NULL makes it so, FORCE_NOT_NULL
// the reverse); a row of \. alone ends the data.
type csvDecoder struct {
	st *stager
	o  *copyOptions
	fieldBuf

	state    int // csvUnquoted, csvQuoted, csvQuoteInQuoted, csvEscapeInQuoted
	sawQuote bool
	skipLF   bool
	pending  bool
	line     int64
	start    int64
	rows     int64
	done     bool
}

func (d *csvDecoder) endField() {
	col := len(d.ends)
	v := d.value()
	null := false
	if col < len(d.st.cols) {
		c := d.st.cols[col]
		null = !d.sawQuote && !c.notNull && string(v) == d.o.null || d.sawQuote && c.nul && string(v) == d.o.null
	} else {
		null = !d.sawQuote && string(v) == d.o.null
	}
	if null {
		d.buf = d.buf[:len(d.buf)-len(v)]
	}
	d.end(null)
	d.sawQuote = false
}

func (d *csvDecoder) endRow() error {
	marker := len(d.ends) == 0 && !d.sawQuote && string(d.value()) == `\.`
	d.endField()
	defer func() { d.reset(); d.pending = false }()
	if marker {
		d.done = true
		return nil
	}
	d.rows++
	return rowOut(d.st, d.o, d.rows, &d.fieldBuf, d.start)
}

func (d *csvDecoder) write(p []byte) error {
	q, e, delim := d.o.quote, d.o.escape, d.o.delim
	for i := 0; i < len(p); i++ {
		if d.done {
			return nil
		}
		c := p[i]
		if d.skipLF {
			d.skipLF = false
			if c == '\n' {
				continue
			}
		}
		if !d.pending {
			d.pending, d.line = true, d.line+1
			d.start = d.line
		}
		switch d.state {
		case csvUnquoted:
			switch c {
			case delim:
				d.endField()
			case q:
				d.state, d.sawQuote = csvQuoted, true
			case '\n', '\r':
				d.skipLF = c == '\r'
				if err := d.endRow(); err != nil {
					return err
				}
			default:
				d.buf = append(d.buf, c)
			}
		case csvQuoted:
			switch {
			case c == e && e != q:
				d.state = csvEscapeInQuoted
			case c == q:
				if e == q {
					d.state = csvQuoteInQuoted
				} else {
					d.state = csvUnquoted
				}
			default:
				if c == '\n' {
					d.line++
				}
				d.buf = append(d.buf, c)
			}
		case csvQuoteInQuoted:
			if c == q {
				d.buf = append(d.buf, q)
				d.state = csvQuoted
				continue
			}
			d.state = csvUnquoted
			i--
		case csvEscapeInQuoted:
			d.state = csvQuoted
			if c == q || c == e {
				d.buf = append(d.buf, c)
				continue
			}
			d.buf = append(d.buf, e)
			i--
		}
	}
	return nil
}

func (d *csvDecoder) finish() error {
	if d.done || !d.pending {
		return nil
	}
	if d.state == csvQuoted || d.state == csvEscapeInQuoted {
		return d.st.fail("22P04", d.start, "unterminated CSV quoted field")
	}
	return d.endRow()
}

// binaryDecoder reads PostgreSQL's binary COPY format: the PGCOPY
// signature, flags and a header extension, then each row as a field
// count and each field as a length (-1 for NULL) and its bytes in the
// type's binary form, then -1. Values are turned into their text through
// pgx's codecs, for the types the server describes the columns as.
type binaryDecoder struct {
	st     *stager
	buf    []byte
	off    int
	header bool
	done   bool
	rows   int64
	fields [][]byte
	nulls  []bool
}

func (d *binaryDecoder) write(p []byte) error {
	if d.done {
		return nil
	}
	if d.off > 0 && d.off >= len(d.buf)/2 {
		d.buf = append(d.buf[:0], d.buf[d.off:]...)
		d.off = 0
	}
	d.buf = append(d.buf, p...)
	for !d.done {
		ok, err := d.step()
		if err != nil || !ok {
			return err
		}
	}
	return nil
}

// step reads the header or one row when the whole of it has arrived.
func (d *binaryDecoder) step() (bool, error) {
	b := d.buf[d.off:]
	if !d.header {
		if len(b) < len(binarySignature)+8 {
			if len(b) > 0 && !strings.HasPrefix(string(binarySignature), string(b[:min(len(b), len(binarySignature))])) {
				return false, d.bad("COPY file signature not recognized")
			}
			return false, nil
		}
		if string(b[:len(binarySignature)]) != string(binarySignature) {
			return false, d.bad("COPY file signature not recognized")
		}
		flags := binary.BigEndian.Uint32(b[11:])
		if flags&(1<<16) != 0 {
			return false, &pgError{code: "0A000", msg: "binary COPY with OIDs is not supported"}
		}
		if flags>>16 != 0 {
			return false, d.bad("unrecognized critical flags in COPY file header")
		}
		ext := int(binary.BigEndian.Uint32(b[15:]))
		if ext < 0 || ext > 1<<20 {
			return false, d.bad("invalid COPY file header (wrong length)")
		}
		if len(b) < 19+ext {
			return false, nil
		}
		d.off += 19 + ext
		d.header = true
		return true, nil
	}
	if len(b) < 2 {
		return false, nil
	}
	n := int(int16(binary.BigEndian.Uint16(b)))
	if n == -1 {
		d.done = true
		return true, nil
	}
	line := d.rows + 1
	if n != len(d.st.cols) {
		return false, d.st.fail("22P04", line, "row field count is %d, expected %d", n, len(d.st.cols))
	}
	pos := 2
	d.fields, d.nulls = d.fields[:0], d.nulls[:0]
	for range n {
		if len(b) < pos+4 {
			return false, nil
		}
		l := int(int32(binary.BigEndian.Uint32(b[pos:])))
		pos += 4
		if l == -1 {
			d.fields, d.nulls = append(d.fields, nil), append(d.nulls, true)
			continue
		}
		if l < 0 {
			return false, d.st.fail("22P04", line, "invalid field size")
		}
		if len(b) < pos+l {
			return false, nil
		}
		d.fields, d.nulls = append(d.fields, b[pos:pos+l]), append(d.nulls, false)
		pos += l
	}
	d.rows++
	if err := d.decode(line); err != nil {
		return false, err
	}
	if err := d.st.record(d.fields, d.nulls, line); err != nil {
		return false, err
	}
	d.off += pos
	return true, nil
}

// decode turns each field's binary form into its text (bytea stays
// bytes, text types are their own text).
func (d *binaryDecoder) decode(line int64) error {
	tm := d.st.tm
	for i, raw := range d.fields {
		c := d.st.cols[i]
		if d.nulls[i] || c.blob {
			continue
		}
		switch c.oid {
		case oidText, oidVarchar, oidJSON:
			continue
		}
		t, ok := tm.TypeForOID(c.oid)
		if !ok {
			return d.st.fail("0A000", line, "column %q: binary COPY cannot carry its type (oid %d); use COPY's text or CSV format", c.name, c.oid)
		}
		v, err := t.Codec.DecodeValue(tm, c.oid, pgtype.BinaryFormatCode, raw)
		if err != nil {
			return d.st.fail("22P03", line, "column %q: invalid binary %s: %v", c.name, t.Name, err)
		}
		txt, err := tm.Encode(c.oid, pgtype.TextFormatCode, v, nil)
		if err != nil {
			return d.st.fail("22P03", line, "column %q: %s value as text: %v", c.name, t.Name, err)
		}
		d.fields[i] = txt
	}
	return nil
}

func (d *binaryDecoder) bad(msg string) error {
	return &pgError{code: "22P04", msg: "COPY " + d.st.table + ": " + msg}
}

func (d *binaryDecoder) finish() error {
	if d.done {
		return nil
	}
	if !d.header {
		if len(d.buf) == d.off {
			return nil // no data at all: no rows
		}
		return d.bad("the data ends inside the binary COPY header")
	}
	if len(d.buf) > d.off {
		return d.st.fail("22P04", d.rows+1, "the data ends inside a row")
	}
	return nil
}
