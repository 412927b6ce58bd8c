package server

import (
	"bufio"
	"bytes"
	"strings"
	"testing"
)

// The statement forms clients send: psql's \copy passes its options on
// in the older syntax, pgx's CopyFrom sends "from stdin binary;".
func TestParseCopyStdin(t *testing.T) {
	for _, tc := range []struct {
		q                        string
		table, colList, format   string
		delim, quote, escape     byte
		null                     string
		header, match            bool
		forceNotNull, forceNulls string
	}{
		{q: "COPY t FROM STDIN", table: "t", format: "text", delim: '\t', null: `\N`, quote: '"', escape: '"'},
		{q: "copy t from stdin;", table: "t", format: "text", delim: '\t', null: `\N`, quote: '"', escape: '"'},
		{q: `copy "My T" ( "id", "Name" ) from stdin binary;`, table: "My T", colList: `( "id", "Name" )`, format: "binary", delim: '\t', null: `\N`, quote: '"', escape: '"'},
		{q: "COPY  t FROM STDIN CSV HEADER", table: "t", format: "csv", delim: ',', quote: '"', escape: '"', header: true},
		{q: "COPY t(a,b) FROM STDIN WITH CSV HEADER DELIMITER AS ';' NULL 'NA' QUOTE '''' ESCAPE '\\' FORCE NOT NULL a, b",
			table: "t", colList: "(a,b)", format: "csv", delim: ';', null: "NA", quote: '\'', escape: '\\', header: true, forceNotNull: "a,b"},
		{q: "COPY t FROM STDIN DELIMITER E'\\t' NULL ''", table: "t", format: "text", delim: '\t', quote: '"', escape: '"'},
		{q: "COPY t FROM STDIN DELIMITER E'\\x7C'", table: "t", format: "text", delim: '|', null: `\N`, quote: '"', escape: '"'},
		{q: "COPY t FROM STDIN WITH (FORMAT csv, HEADER match, DELIMITER '|', FORCE_NULL *, FORCE_NOT_NULL (a))",
			table: "t", format: "csv", delim: '|', quote: '"', escape: '"', header: true, match: true, forceNotNull: "a", forceNulls: "*"},
		{q: "COPY t FROM STDIN (FORMAT 'text', HEADER false, FREEZE, ENCODING 'UTF8', ON_ERROR stop) -- a comment", table: "t", format: "text", delim: '\t', null: `\N`, quote: '"', escape: '"'},
	} {
		cp, err := parseCopyStdin(tc.q)
		if err != nil || cp == nil {
			t.Errorf("%s: %v %v", tc.q, cp, err)
			continue
		}
		o := cp.opts
		forced := strings.Join(o.forceNotNull, ",")
		nulls := strings.Join(o.forceNull, ",")
		if o.allNull {
			nulls = "*"
		}
		if cp.table != tc.table || cp.colList != tc.colList || o.format != tc.format || o.delim != tc.delim || o.quote != tc.quote ||
			o.escape != tc.escape || o.null != tc.null || o.header != tc.header || o.match != tc.match || forced != tc.forceNotNull || nulls != tc.forceNulls {
			t.Errorf("%s: read as %+v %+v", tc.q, cp, o)
		}
	}
	for _, q := range []string{"COPY t FROM '/x.csv'", "COPY t TO STDOUT", "COPY (SELECT 1) TO STDOUT", "INSERT INTO t VALUES (1)", "COPY t (a) FROM '/x' (FORMAT csv)"} {
		if cp, err := parseCopyStdin(q); cp != nil || err != nil {
			t.Errorf("%s: %v %v, want no COPY FROM STDIN", q, cp, err)
		}
	}
	for q, code := range map[string]string{
		"COPY t FROM STDIN (FORMAT csv, HEADER, HEADER)": "42601",
		"COPY t FROM STDIN CSV HEADER bogus":             "42601",
		"COPY t FROM STDIN (FORMAT csv) extra":           "42601",
		"COPY t FROM STDIN (FORMAT text, QUOTE '\"')":    "0A000",
		"COPY t FROM STDIN (DELIMITER '\\')":             "22023",
		"COPY t FROM STDIN (FORMAT csv, DELIMITER '\"')": "22023",
		"COPY t FROM STDIN (NULL 'a,b', FORMAT csv)":     "22023",
		"COPY t FROM STDIN (FORCE_QUOTE *)":              "0A000",
		"COPY t FROM STDIN (ENCODING 'LATIN1')":          "0A000",
		"COPY t FROM STDIN (ON_ERROR ignore)":            "0A000",
		"COPY t FROM STDIN (DEFAULT 'x')":                "0A000",
		"COPY t FROM STDIN (FORMAT binary, NULL 'x')":    "0A000",
		"COPY s.t FROM STDIN":                            "0A000",
	} {
		_, err := parseCopyStdin(q)
		if pe := toPGError(orNil(err)); err == nil || pe.code != code {
			t.Errorf("%s: %v, want SQLSTATE %s", q, err, code)
		}
	}
}

func orNil(err error) error {
	if err == nil {
		return &pgError{}
	}
	return err
}

// staged runs a decoder over data, whole and a byte at a time (rows and
// escapes cut anywhere), and returns the staged CSV.
func staged(t *testing.T, q string, cols []copyCol, data string) (string, error) {
	t.Helper()
	cp, err := parseCopyStdin(q)
	if err != nil {
		t.Fatal(err)
	}
	var outs []string
	var errs []error
	for _, step := range []int{len(data) + 1, 1, 3} {
		var b bytes.Buffer
		st := &stager{w: bufio.NewWriter(&b), cols: cols, table: "t", binary: cp.opts.format == "binary"}
		var dec copyDecoder
		if cp.opts.format == "csv" {
			dec = &csvDecoder{st: st, o: &cp.opts}
		} else {
			dec = &textDecoder{st: st, o: &cp.opts}
		}
		var err error
		for i := 0; i < len(data) && err == nil; i += step {
			err = dec.write([]byte(data[i:min(len(data), i+step)]))
		}
		if err == nil {
			err = dec.finish()
		}
		st.w.Flush()
		outs, errs = append(outs, b.String()), append(errs, err)
	}
	for i := 1; i < len(outs); i++ {
		if (errs[i] == nil) != (errs[0] == nil) || errs[0] != nil && errs[i].Error() != errs[0].Error() || errs[0] == nil && outs[i] != outs[0] {
			t.Errorf("%s over %q: pieces disagree:\n%q %v\n%q %v", q, data, outs[0], errs[0], outs[i], errs[i])
		}
	}
	return outs[0], errs[0]
}

func TestTextFormat(t *testing.T) {
	two := []copyCol{{name: "a"}, {name: "b"}}
	for _, tc := range []struct{ q, data, want string }{
		// Tabs, newlines and backslashes in values, escaped; \N is NULL,
		// an empty field the empty string.
		{"COPY t FROM STDIN", "1\ta\\tb\\nc\\\\d\n\\N\t\n", "\"1\",\"a\tb\nc\\d\"\n,\"\"\n"},
		// Octal and hex escapes, an escaped delimiter, a backslash before
		// any other byte; \x without a hex digit is x.
		{"COPY t FROM STDIN", "\\101\\x42\\x4a\\7\tx\\\ty\\q\\xz\n", "\"ABJ\a\",\"x\ty" + "qxz\"\n"},
		// \N as a value is NULL only whole: \\N is the text \N.
		{"COPY t FROM STDIN", "\\\\N\t\\Nx\n", "\"\\N\",\"Nx\"\n"},
		// CRLF line ends, a last row without one, the end marker.
		{"COPY t FROM STDIN", "1\t2\r\n3\t4", "\"1\",\"2\"\n\"3\",\"4\"\n"},
		{"COPY t FROM STDIN", "1\t2\n\\.\nignored\tthis\n", "\"1\",\"2\"\n"},
		// Quotes are data in text format.
		{"COPY t FROM STDIN", "\"q\"\t'\n", "\"\"\"q\"\"\",\"'\"\n"},
		// Another delimiter and NULL string; a header line skipped.
		{"COPY t FROM STDIN (DELIMITER '|', NULL 'NULL', HEADER)", "a|b\n1|NULL\n|x\n", "\"1\",\n\"\",\"x\"\n"},
		{"COPY t FROM STDIN (HEADER match)", "a\tb\n1\t2\n", "\"1\",\"2\"\n"},
	} {
		got, err := staged(t, tc.q, two, tc.data)
		if err != nil || got != tc.want {
			t.Errorf("%s over %q:\n got %q %v\nwant %q", tc.q, tc.data, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ data, says string }{
		{"1\t2\t3\n", "line 1: extra data after last expected column"},
		{"1\t2\n3\n", `line 2: missing data for column "b"`},
		{"1\t\\xff\n", "line 1: column \"b\": invalid byte sequence"},
		{"1\t\\0\n", "line 1: column \"b\": invalid byte sequence"},
		{"1\t2\\", "line 1: the data ends after a backslash"},
	} {
		if _, err := staged(t, "COPY t FROM STDIN", two, tc.data); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%q: %v, want %q", tc.data, err, tc.says)
		}
	}
	if _, err := staged(t, "COPY t FROM STDIN (HEADER match)", two, "a\tc\n1\t2\n"); err == nil || !strings.Contains(err.Error(), `got "c", expected "b"`) {
		t.Errorf("HEADER match: %v", err)
	}
	// bytea in PostgreSQL's hex and escape forms becomes DuckDB's BLOB text.
	blob := []copyCol{{name: "b", blob: true}}
	got, err := staged(t, "COPY t FROM STDIN", blob, "\\\\x00ff41\n\\\\001a\\\\\\\\\n")
	if want := "\"\\x00\\xffA\"\n\"\\x01a\\x5c\"\n"; err != nil || got != want {
		t.Errorf("bytea: %q %v, want %q", got, err, want)
	}
	if _, err := staged(t, "COPY t FROM STDIN", blob, "\\\\xzz\n"); err == nil || !strings.Contains(err.Error(), "hexadecimal") {
		t.Errorf("bad bytea: %v", err)
	}
}

func TestCSVFormat(t *testing.T) {
	two := []copyCol{{name: "a"}, {name: "b"}}
	for _, tc := range []struct{ q, data, want string }{
		// Quoted delimiters, newlines and quotes; an unquoted empty field
		// is NULL, a quoted one the empty string.
		{"COPY t FROM STDIN CSV", "\"x,y\",\"l1\nl2\"\n\"say \"\"hi\"\"\",\n,\"\"\n", "\"x,y\",\"l1\nl2\"\n\"say \"\"hi\"\"\",\n,\"\"\n"},
		// A quote mid-field starts a quoted part, as in PostgreSQL.
		{"COPY t FROM STDIN CSV", "ab\"c,d\"e,f\n", "\"abc,de\",\"f\"\n"},
		// HEADER; CRLF; the end marker.
		{"COPY t FROM STDIN (FORMAT csv, HEADER)", "a,b\r\n1,2\r\n\\.\r\n3,4\r\n", "\"1\",\"2\"\n"},
		// Another escape, quote, delimiter and NULL string.
		{"COPY t FROM STDIN (FORMAT csv, QUOTE '''', ESCAPE '\\', DELIMITER ';', NULL 'NA')", "'it\\'s';NA\n'NA';'a\\\\b\\c'\n", "\"it's\",\n\"NA\",\"a\\b\\c\"\n"},
		// FORCE_NOT_NULL: the NULL string unquoted is a value; FORCE_NULL:
		// quoted, it is NULL.
		{"COPY t FROM STDIN (FORMAT csv, FORCE_NOT_NULL (a), FORCE_NULL (b))", ",\"\"\n", "\"\",\n"},
	} {
		cols := two
		cp, _ := parseCopyStdin(tc.q)
		if cp != nil && len(cp.opts.forceNotNull) > 0 {
			cols = []copyCol{{name: "a", notNull: true}, {name: "b", nul: true}}
		}
		got, err := staged(t, tc.q, cols, tc.data)
		if err != nil || got != tc.want {
			t.Errorf("%s over %q:\n got %q %v\nwant %q", tc.q, tc.data, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ data, says string }{
		{"1,2\n3,\"4\n5,6\n", "line 2: unterminated CSV quoted field"},
		{"1,\"a\nb\"\n3,4,5\n", "line 3: extra data after last expected column"},
		{"1\n", `line 1: missing data for column "b"`},
	} {
		if _, err := staged(t, "COPY t FROM STDIN CSV", two, tc.data); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%q: %v, want %q", tc.data, err, tc.says)
		}
	}
}

// DuckDB's errors over the staged file name the client's line.
func TestExplainNamesTheClientsLine(t *testing.T) {
	st := &stager{table: "w"}
	st.w = bufio.NewWriter(&bytes.Buffer{})
	st.cols = []copyCol{{name: "a"}}
	for _, line := range []int64{2, 3, 6, 7} { // a header, then a row of three lines
		if err := st.record([][]byte{[]byte("x")}, []bool{false}, line); err != nil {
			t.Fatal(err)
		}
	}
	err := st.explain(errorString("Conversion Error: CSV Error on Line: 4\nOriginal Line: \"x\"\nError when converting column \"a\". Could not convert string \"x\" to 'BIGINT'\n\nColumn a is being converted as type BIGINT\n  file = /tmp/staged.csv"), "/tmp/staged.csv")
	if want := `Conversion Error: COPY w, line 7: Error when converting column "a". Could not convert string "x" to 'BIGINT'`; err.Error() != want {
		t.Errorf("got  %q\nwant %q", err, want)
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }
