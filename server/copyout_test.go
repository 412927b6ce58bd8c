package server_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// copyOut runs a COPY ... TO STDOUT through pgconn's CopyTo.
func copyOut(t *testing.T, c *pgconn.PgConn, q string) (string, string, error) {
	t.Helper()
	var b bytes.Buffer
	tag, err := c.CopyTo(context.Background(), &b, q)
	return b.String(), tag.String(), err
}

// COPY TO STDOUT in PostgreSQL's formats and with its options, as pgx's
// CopyTo reads it.
func TestCopyToStdout(t *testing.T) {
	f := newFixture(t, newConfig())
	_, c := f.pgconn(t)
	for _, tc := range []struct{ q, want, tag string }{
		{"COPY (SELECT id, name FROM t WHERE id < 3 ORDER BY id) TO STDOUT", "0\tn0\n1\tn1\n2\tn2\n", "COPY 3"},
		{"COPY (SELECT id, name, amount FROM t WHERE id IN (0, 1) ORDER BY id) TO STDOUT (FORMAT csv, HEADER)", "id,name,amount\n0,n0,\n1,n1,1.25\n", "COPY 2"},
		{"COPY (SELECT id, name, amount FROM t WHERE id IN (0, 1) ORDER BY id) TO STDOUT WITH CSV HEADER DELIMITER ';' NULL 'none' FORCE QUOTE name", "id;name;amount\n0;\"n0\";none\n1;\"n1\";1.25\n", "COPY 2"},
		{"COPY (SELECT id, even, score FROM t WHERE id IN (0, 1) ORDER BY id) TO STDOUT (FORMAT text, HEADER true, DELIMITER '|', NULL '')", "id|even|score\n0|t|NaN\n1|f|0.25\n", "COPY 2"},
		// Escapes: text's backslashes; CSV's quotes, for the NULL string too.
		{"COPY (SELECT 'a' || chr(9) || 'b' || chr(10) || 'c\\d|' AS s, NULL::VARCHAR AS n, '' AS e) TO STDOUT", "a\\tb\\nc\\\\d|\t\\N\t\n", "COPY 1"},
		{"COPY (SELECT 'say \"hi\", ok' AS s, NULL::VARCHAR AS n, '' AS e, 'x' || chr(10) || 'y' AS l) TO STDOUT (FORMAT csv)", "\"say \"\"hi\"\", ok\",,\"\",\"x\ny\"\n", "COPY 1"},
		{"COPY (SELECT 'it''s' AS s) TO STDOUT (FORMAT csv, QUOTE '''', ESCAPE '\\', FORCE_QUOTE *)", "'it\\'s'\n", "COPY 1"},
		{"COPY (SELECT '\\.' AS s) TO STDOUT (FORMAT csv)", "\"\\.\"\n", "COPY 1"},
		{"COPY (SELECT raw, span, pair FROM t WHERE id = 13) TO STDOUT", "\\\\x623133\t1 year 1 mon\t[13, 14]\n", "COPY 1"},
		{"COPY t (name, id) TO STDOUT (FORMAT csv)", "", "COPY 300"},
		{"COPY \"t\" TO STDOUT", "", "COPY 300"},
		{"COPY (SELECT * FROM t WHERE id < 0) TO STDOUT", "", "COPY 0"},
	} {
		got, tag, err := copyOut(t, c, tc.q)
		if err != nil || tag != tc.tag || tc.want != "" && got != tc.want {
			t.Errorf("%s:\n got %q %q %v\nwant %q %q", tc.q, got, tag, err, tc.want, tc.tag)
		}
	}
	got, _, err := copyOut(t, c, "COPY t (name, id) TO STDOUT (FORMAT csv)")
	if lines := strings.Split(got, "\n"); err != nil || len(lines) != 301 || lines[0] != "n0,0" && !strings.Contains(got, "n0,0\n") {
		t.Errorf("COPY t (cols): %d lines, %v", len(lines), err)
	}
	// The binary format: signature, flags, header extension, then each
	// row's field count and fields (length -1 for NULL), then -1.
	got, _, err = copyOut(t, c, "COPY (SELECT 1::INTEGER AS a, NULL::VARCHAR AS b, 'x' AS c) TO STDOUT (FORMAT binary)")
	want := "PGCOPY\n\xff\r\n\x00" + "\x00\x00\x00\x00" + "\x00\x00\x00\x00" +
		"\x00\x03" + "\x00\x00\x00\x04\x00\x00\x00\x01" + "\xff\xff\xff\xff" + "\x00\x00\x00\x01x" + "\xff\xff"
	if err != nil || got != want {
		t.Errorf("binary:\n got %q %v\nwant %q", got, err, want)
	}
	for _, tc := range []struct{ q, code string }{
		{"COPY t (nosuch) TO STDOUT", "42703"},
		{"COPY nosuch TO STDOUT", "42P01"},
		{"COPY (SELECT 1) TO STDOUT (FORMAT binary, HEADER)", "0A000"},
		{"COPY (SELECT 1) TO STDOUT (FORCE_QUOTE *)", "0A000"},
		{"COPY (SELECT 1) TO STDOUT (FORMAT csv, FORCE_NOT_NULL (a))", "0A000"},
		{"COPY (SELECT 1) TO STDOUT (FORMAT csv, HEADER match)", "0A000"},
		{"COPY (SELECT 1 AS a) TO STDOUT (FORMAT csv, FORCE_QUOTE (b))", "42P10"},
		{"COPY (SELECT 1) TO STDOUT (FORMAT xml)", "22023"},
		{"COPY (SELECT 1) TO STDOUT (DELIMITER ',', DELIMITER ';')", "42601"},
		{"COPY (INSERT INTO t SELECT * FROM t) TO STDOUT", "0A000"},
	} {
		if _, _, err := copyOut(t, c, tc.q); sqlstate(err) != tc.code {
			t.Errorf("%s: %v, want SQLSTATE %s", tc.q, err, tc.code)
		}
	}
	// The session goes on after each.
	if got, _, err := copyOut(t, c, "COPY (SELECT count(*) FROM t) TO STDOUT"); err != nil || got != "300\n" {
		t.Errorf("after the errors: %q %v", got, err)
	}
}

// COPY TO through the extended protocol, as a driver that prepares
// everything sends it: Describe says NoData, Execute sends the data.
func TestCopyToExtendedProtocol(t *testing.T) {
	f := newFixture(t, newConfig())
	conn, fe := rawLogin(t, f, "raw", 0)
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	fe.Send(&pgproto3.Parse{Query: "COPY (SELECT id FROM t WHERE id < $1 ORDER BY id) TO STDOUT (FORMAT csv)", ParameterOIDs: []uint32{20}})
	fe.Send(&pgproto3.Bind{Parameters: [][]byte{[]byte("2")}})
	fe.Send(&pgproto3.Describe{ObjectType: 'P'})
	fe.Send(&pgproto3.Execute{MaxRows: 1}) // COPY's data is not cut into a portal's batches
	fe.Send(&pgproto3.Sync{})
	fe.Flush()
	var got []string
	for {
		msg, err := fe.Receive()
		if err != nil {
			t.Fatal(err)
		}
		s := strings.TrimPrefix(fmt.Sprintf("%T", msg), "*pgproto3.")
		switch m := msg.(type) {
		case *pgproto3.CopyData:
			s += fmt.Sprintf("(%q)", m.Data)
		case *pgproto3.CommandComplete:
			s += "(" + string(m.CommandTag) + ")"
		case *pgproto3.ErrorResponse:
			t.Fatalf("%s %s", m.Code, m.Message)
		}
		got = append(got, s)
		if _, ok := msg.(*pgproto3.ReadyForQuery); ok {
			break
		}
	}
	want := `ParseComplete BindComplete NoData CopyOutResponse CopyData("0\n") CopyData("1\n") CopyDone CommandComplete(COPY 2) ReadyForQuery`
	if strings.Join(got, " ") != want {
		t.Errorf("messages:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
}

// everyType is a table of every type the server sends, for the
// round trips: its DuckDB type and the values a generated row draws from
// (NULL among them).
var everyType = []struct {
	name, typ string
	vals      []string
}{
	{"b", "BOOLEAN", []string{"TRUE", "FALSE"}},
	{"i1", "TINYINT", []string{"-128", "127", "0"}},
	{"i2", "SMALLINT", []string{"-32768", "32767", "7"}},
	{"i4", "INTEGER", []string{"-2147483648", "2147483647", "-1"}},
	{"i8", "BIGINT", []string{"-9223372036854775808", "9223372036854775807", "42"}},
	{"u1", "UTINYINT", []string{"0", "255"}},
	{"u2", "USMALLINT", []string{"65535", "1"}},
	{"u4", "UINTEGER", []string{"4294967295", "3"}},
	{"u8", "UBIGINT", []string{"18446744073709551615", "5"}},
	{"h", "HUGEINT", []string{"-9223372036854775808", "9223372036854775807", "-3"}}, // Parquet holds 64 bits
	{"f4", "FLOAT", []string{"1.5", "'-0.0'", "'nan'", "'inf'", "'-inf'", "3.4e38", "1e-45", "0.1"}},
	{"f8", "DOUBLE", []string{"0.1", "'nan'", "'inf'", "-1e308", "5e-324", "-2.5"}},
	{"d1", "DECIMAL(10,2)", []string{"12345678.91", "-0.01", "0"}},
	{"d2", "DECIMAL(38,10)", []string{"1234567890123456789012345678.0123456789", "-0.0000000001"}},
	{"s", "VARCHAR", []string{"''", "'plain'", "'tab\there'", "'\\.'", "'\\N'", "'NULL'", "'quote\"and'''", "'comma,semi;pipe|'", "'back\\slash'", "'ünïcödé'", "'line1\nline2'", "'cr\r'"}},
	{"bl", "BLOB", []string{"'\\x00\\xFF'::BLOB", "''::BLOB", "'abc'::BLOB", "'\\x5C\\x22\\x2C\\x0A\\x09'::BLOB"}},
	{"dt", "DATE", []string{"'2024-02-29'", "'0001-01-01'", "'9999-12-31'", "'1970-01-01'", "'infinity'", "'-infinity'", "DATE '0001-01-01' - 400", "DATE '0001-01-01' - 1"}},
	{"tm", "TIME", []string{"'00:00:00'", "'23:59:59.999999'", "'12:34:56.5'"}},
	{"ts", "TIMESTAMP", []string{"'2024-01-02 03:04:05.123456'", "'1970-01-01 00:00:00'", "'1900-01-01 00:00:00'", "'infinity'", "'-infinity'", "TIMESTAMP '0001-01-01 10:00:00.5' - INTERVAL 400 DAY", "TIMESTAMP '9999-12-31 23:59:59.999999' + INTERVAL 1 DAY"}},
	{"tsn", "TIMESTAMP_NS", []string{"'2024-01-02 03:04:05.123456'", "'2262-04-11 00:00:00'"}},
	{"tz", "TIMESTAMPTZ", []string{"'2024-01-02 03:04:05.123456+00'", "'1999-12-31 23:00:00+05'", "'infinity'", "'-infinity'", "TIMESTAMPTZ '0001-01-01 10:00:00.5+00' - INTERVAL 400 DAY", "TIMESTAMPTZ '9999-12-31 23:59:59.999999+00' + INTERVAL 1 DAY"}},
	{"iv", "INTERVAL", []string{"INTERVAL '1 year 2 months 3 days 04:05:06.789'", "INTERVAL '0 seconds'", "INTERVAL '36 hours'"}},
	{"u", "UUID", []string{"'00000000-0000-0000-0000-000000000000'", "'ffffffff-ffff-ffff-ffff-ffffffffffff'", "'0102abcd-0506-0708-090a-0b0c0d0e0f10'"}},
	{"j", "JSON", []string{`'{"a":[1,"x"],"b":null}'`, `'"str"'`, "'[]'", "'3.5'"}},
	{"l", "BIGINT[]", []string{"[1, 2, NULL]", "[]", "[-9223372036854775808]"}},
	{"vl", "VARCHAR[]", []string{"['a', 'b c']", "[]"}},
}

// COPY TO STDOUT in every format and COPY FROM STDIN of what it sent,
// into a new table of the same columns, give back the rows: over
// generated tables of every type the server sends, with NULLs and the
// values whose text needs escaping or quoting.
func TestCopyToRoundTrip(t *testing.T) {
	f := newFixture(t, newConfig())
	ctx := context.Background()
	c := f.connect(t, pgx.QueryExecModeSimpleProtocol)
	var defs []string
	for _, col := range everyType {
		defs = append(defs, col.name+" "+col.typ)
	}
	table := "(" + strings.Join(defs, ", ") + ")"
	for seed, rows := range []int{1, 40, 300} {
		rnd := rand.New(rand.NewPCG(uint64(seed), 38))
		src := fmt.Sprintf("src%d", seed)
		if _, err := c.Exec(ctx, "CREATE TABLE "+src+" "+table); err != nil {
			t.Fatal(err)
		}
		var values []string
		for r := 0; r < rows; r++ {
			var row []string
			for _, col := range everyType {
				switch {
				case r == 0: // a row of NULLs
					row = append(row, "NULL")
				case rnd.IntN(6) == 0:
					row = append(row, "NULL")
				default:
					row = append(row, col.vals[rnd.IntN(len(col.vals))])
				}
			}
			values = append(values, "("+strings.Join(row, ", ")+")")
		}
		if _, err := c.Exec(ctx, "INSERT INTO "+src+" VALUES "+strings.Join(values, ", ")); err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		for _, format := range []string{"text", "csv", "binary"} {
			dst := src + "_" + format
			if _, err := c.Exec(ctx, "CREATE TABLE "+dst+" "+table); err != nil {
				t.Fatal(err)
			}
			data, tag, err := copyOut(t, c.PgConn(), "COPY (SELECT * FROM "+src+") TO STDOUT (FORMAT "+format+")")
			if err != nil || tag != fmt.Sprintf("COPY %d", rows) {
				t.Fatalf("%s out: %s %v", dst, tag, err)
			}
			in, err := c.PgConn().CopyFrom(ctx, strings.NewReader(data), "COPY "+dst+" FROM STDIN (FORMAT "+format+")")
			if err != nil || in.RowsAffected() != int64(rows) {
				t.Fatalf("%s in: %s %v\n%q", dst, in, err, data[:min(len(data), 2000)])
			}
			for _, q := range []string{
				"SELECT count(*) FROM (SELECT * FROM " + src + " EXCEPT ALL SELECT * FROM " + dst + ")",
				"SELECT count(*) FROM (SELECT * FROM " + dst + " EXCEPT ALL SELECT * FROM " + src + ")",
			} {
				if got := firstAnswer(t, c, q); got != "0" {
					t.Errorf("%s: %s rows differ after the round trip (%s)", dst, got, q)
				}
			}
			if t.Failed() {
				for i, col := range everyType {
					q := fmt.Sprintf("SELECT count(*) FROM (SELECT %[1]s FROM %[2]s EXCEPT ALL SELECT %[1]s FROM %[3]s)", col.name, src, dst)
					if got := firstAnswer(t, c, q); got != "0" {
						t.Errorf("%s: column %d %s (%s) differs", dst, i, col.name, col.typ)
					}
				}
				return
			}
		}
		// COPY's text is the query's answer as the simple protocol sends
		// it, field by field, once the text format's escapes are read.
		data, _, err := copyOut(t, c.PgConn(), "COPY (SELECT * FROM "+src+" ORDER BY ALL) TO STDOUT")
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.PgConn().Exec(ctx, "SELECT * FROM "+src+" ORDER BY ALL").ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(data, "\n"), "\n")
		if len(lines) != len(res[0].Rows) {
			t.Fatalf("%s: %d lines, %d rows", src, len(lines), len(res[0].Rows))
		}
		for i, line := range lines {
			fields := strings.Split(line, "\t")
			for j, v := range res[0].Rows[i] {
				want := `\N`
				if v != nil {
					want = escapeText(string(v))
				}
				if fields[j] != want {
					t.Errorf("%s row %d column %s: COPY gave %q, the query %q", src, i, everyType[j].name, fields[j], want)
				}
			}
		}
	}
}

// escapeText is PostgreSQL's text COPY form of a value.
func escapeText(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\t", `\t`, "\n", `\n`, "\r", `\r`, "\b", `\b`, "\f", `\f`, "\v", `\v`).Replace(s)
}

// psql, the reference client: COPY TO STDOUT in each format and \copy of
// a query and of a table to the client's files.
func TestPsqlCopyTo(t *testing.T) {
	psql := psqlPath(t)
	f := newFixture(t, newConfig())
	run := func(args ...string) (string, error) {
		cmd := exec.Command(psql, append([]string{"-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1", f.pgURL("me", "", "disable")}, args...)...)
		cmd.Env = append(cmd.Environ(), "PGCONNECT_TIMEOUT=10")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("-c", "COPY (SELECT id, name, amount FROM t WHERE id < 2 ORDER BY id) TO STDOUT WITH (FORMAT csv, HEADER)")
	if err != nil || out != "id,name,amount\n0,n0,\n1,n1,1.25\n" {
		t.Errorf("csv: %q %v", out, err)
	}
	out, err = run("-c", "COPY (SELECT id, name, amount FROM t WHERE id < 2 ORDER BY id) TO STDOUT")
	if err != nil || out != "0\tn0\t\\N\n1\tn1\t1.25\n" {
		t.Errorf("text: %q %v", out, err)
	}
	out, err = run("-c", "COPY (SELECT 7::BIGINT AS v) TO STDOUT (FORMAT binary)")
	if want := "PGCOPY\n\xff\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x08\x00\x00\x00\x00\x00\x00\x00\x07\xff\xff"; err != nil || out != want {
		t.Errorf("binary: %q %v", out, err)
	}
	dir := t.TempDir()
	q, tbl := filepath.Join(dir, "q.csv"), filepath.Join(dir, "t.txt")
	out, err = run("-c", `\copy (SELECT id, name FROM t WHERE id BETWEEN 10 AND 12 ORDER BY id) to '`+q+`' with csv header`, "-c", `\copy t to '`+tbl+`'`)
	if err != nil {
		t.Fatalf(`\copy: %q %v`, out, err)
	}
	if b, _ := os.ReadFile(q); string(b) != "id,name\n10,n10\n11,n11\n12,n12\n" {
		t.Errorf(`\copy (query): %q`, b)
	}
	if b, _ := os.ReadFile(tbl); strings.Count(string(b), "\n") != 300 || !strings.Contains(string(b), "\nn42\t") && !strings.Contains(string(b), "\tn42\t") {
		t.Errorf(`\copy t: %d lines`, strings.Count(string(b), "\n"))
	}
	// What \copy wrote comes back in through \copy.
	out, err = run("-c", "CREATE TABLE back (id BIGINT, name VARCHAR)", "-c", `\copy back from '`+q+`' csv header`, "-c", "SELECT string_agg(name, ',' ORDER BY id) FROM back")
	if err != nil || strings.TrimSpace(out) != "n10,n11,n12" {
		t.Errorf(`\copy back in: %q %v`, out, err)
	}
}

// A COPY TO STDOUT of an answer far larger than the session's buffers
// leaves the server's heap where it was: rows go as DuckDB hands them
// over. (DuckDB's own memory, outside Go's heap, is not measured here;
// see the bench.)
func TestCopyToMemoryBounded(t *testing.T) {
	_, c := bigAnswers(t)
	base := liveHeap()
	w := &heapWatch{every: 16 << 20}
	tag, err := c.CopyTo(context.Background(), w, "COPY ("+bigAnswer+") TO STDOUT")
	if err != nil || tag.String() != "COPY 1000000" {
		t.Fatalf("COPY: %s %v", tag, err)
	}
	if w.n < 300_000_000 {
		t.Fatalf("only %d bytes came", w.n)
	}
	if grew := int64(w.peak) - int64(base); grew > 64<<20 {
		t.Errorf("the live heap grew by %d MiB while %d MiB were copied out", grew>>20, w.n>>20)
	}
	t.Logf("copied %d MiB; live heap %d MiB before, at most %d MiB during", w.n>>20, base>>20, w.peak>>20)
}

// bigAnswer is a query whose answer (1,000,000 rows, 300 MB of text) is
// far larger than a session's buffers.
const bigAnswer = "SELECT i, repeat('x', 300) AS pad FROM range(1000000) r(i)"

// bigAnswers is a connection to a server whose limits let bigAnswer
// through.
func bigAnswers(t *testing.T) (context.Context, *pgconn.PgConn) {
	t.Helper()
	if testing.Short() {
		t.Skip("reads 300 MB through the protocol")
	}
	cfg := newConfig()
	cfg.MaxResultRows, cfg.MaxResultBytes = 10_000_000, 1<<40
	return newFixture(t, cfg).pgconn(t)
}

// liveHeap is the heap in use after a collection: what is held, not
// what waits to be collected.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// heapWatch takes what it is written and samples the live heap every
// so many bytes.
type heapWatch struct {
	every, n, next int
	peak           uint64
}

func (w *heapWatch) Write(p []byte) (int, error) {
	w.n += len(p)
	if w.n >= w.next {
		w.next = w.n + w.every
		w.peak = max(w.peak, liveHeap())
	}
	return len(p), nil
}
