package server_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/rocklake/rocklake"
	"github.com/rocklake/rocklake/internal/pgtest"
)

// systemRelations are the relations pgcatalog.tsv names, qualified.
func systemRelations(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("pgcatalog.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Split(sc.Text(), "\t"); fields[0] == "rel" {
			out = append(out, fields[1]+"."+fields[2])
		}
	}
	return out
}

// Every system relation answers, qualified and (pg_catalog's) not, with
// PostgreSQL's columns in PostgreSQL's order.
func TestSystemCatalogsEveryRelation(t *testing.T) {
	f := newFixture(t, newConfig())
	c := f.connect(t, pgx.QueryExecModeSimpleProtocol)
	ctx := context.Background()
	rels := systemRelations(t)
	if len(rels) < 150 {
		t.Fatalf("pgcatalog.tsv names %d relations", len(rels))
	}
	for _, rel := range rels {
		names := []string{rel}
		if nsp, name, _ := strings.Cut(rel, "."); nsp == "pg_catalog" {
			names = append(names, name, `"`+name+`"`)
		}
		for _, n := range names {
			rows, err := c.Query(ctx, "SELECT * FROM "+n+" LIMIT 1")
			if err != nil {
				t.Fatalf("%s: %v", n, err)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				t.Fatalf("%s: %v", n, err)
			}
		}
	}
	// The table is in every catalog that lists tables.
	for q, want := range map[string]string{
		"SELECT relname FROM pg_catalog.pg_class WHERE relnamespace = 2200":                                                    "t",
		"SELECT tablename FROM pg_tables WHERE schemaname = 'main'":                                                            "t",
		"SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'":                                         "t",
		"SELECT string_agg(column_name, ',' ORDER BY ordinal_position) FROM information_schema.columns WHERE table_name = 't'": "id,ts,name,amount,score,uid,raw,pair,even,day,big,span",
		"SELECT 't'::regclass = (SELECT oid FROM pg_class WHERE relname = 't')":                                                "true",
		"SELECT 'pg_catalog.pg_class'::pg_catalog.regclass::oid":                                                               "1259",
		"SELECT c.oid::regclass::text FROM pg_class c WHERE c.oid = 1259":                                                      "pg_class",
		"SELECT 'int8'::regtype::oid":                                                                                          "20",
		"SELECT count(*) FROM pg_class WHERE relname OPERATOR(pg_catalog.~) '^(t)$' COLLATE pg_catalog.default":                "1",
		"SELECT format_type(1700, 655366)":                                                                                     "numeric(10,2)",
		"SELECT pg_catalog.format_type(1043, 14)":                                                                              "character varying(10)",
		"SELECT format_type(1231, 655366)":                                                                                     "numeric(10,2)[]",
		"SELECT format_type(1184, NULL)":                                                                                       "timestamp with time zone",
		"SELECT count(*) FROM pg_am, generate_series(1, 3) s WHERE s > 1":                                                      "14",
		"SELECT count(*) FROM pg_attribute a WHERE a.attnum = ANY (ARRAY[1, 2]) AND a.attrelid = 't'::regclass":                "2",
		"SELECT pg_catalog.version() LIKE 'PostgreSQL 15.0 (rocklake%'":                                                        "true",
		"SELECT current_database() = (SELECT datname FROM pg_database)":                                                        "true",
	} {
		var got string
		if err := c.QueryRow(ctx, "SELECT ("+q+")::VARCHAR").Scan(&got); err != nil {
			t.Errorf("%s: %v", q, err)
		} else if got != want {
			t.Errorf("%s: %q, want %q", q, got, want)
		}
	}
	// A query that mixes the catalogs with rocklake's tables says why it
	// cannot be answered, and changes nothing.
	_, err := c.Exec(ctx, "SELECT * FROM pg_class, t")
	if pe := (*pgconn.PgError)(nil); !errors.As(err, &pe) || pe.Code != "42P01" || !strings.Contains(pe.Hint, "reads only them") {
		t.Fatalf("mixed query: %v", err)
	}
	// What a hostile client sends: files, settings, databases, a second
	// statement smuggled past the subquery the text is run in. Each
	// fails, and the catalogs answer as before.
	ext := f.connect(t, pgx.QueryExecModeExec)
	for _, q := range []string{
		"SELECT * FROM pg_class; DROP TABLE pgs.pg_class",
		"CREATE TABLE pg_catalog.x AS SELECT 1",
		"SELECT 1 FROM pg_am) x; ROLLBACK; DROP SCHEMA pgs CASCADE; SELECT * FROM (SELECT 1",
		"SELECT 1 FROM pg_am) x; COMMIT; SET lock_configuration = false; SELECT * FROM (SELECT 1",
		"SELECT pg_catalog.read_text('/etc/passwd')",
		"SELECT * FROM pg_am, read_csv('/etc/passwd')",
		"SELECT * FROM pg_am, query('DROP SCHEMA pgs CASCADE')",
		"SELECT pg_catalog.getenv('HOME')",
	} {
		for _, conn := range []*pgx.Conn{c, ext} {
			rows, err := conn.Query(ctx, q)
			if err == nil {
				for rows.Next() {
				}
				err = rows.Err()
				rows.Close()
			}
			if err == nil && !strings.HasPrefix(q, "SELECT * FROM pg_class;") {
				t.Errorf("%s: no error", q)
			}
		}
	}
	if got := firstAnswer(t, c, "SELECT count(*) FROM pg_class WHERE relname IN ('t', 'pg_class')"); got != "2" {
		t.Fatalf("after the hostile queries: %s", got)
	}
	// A rocklake table named like a system relation is what its bare name
	// reads; qualified, the name is the catalogs'.
	if _, err := f.lake.Add(ctx, "pg_stats", []string{filepath.Join(f.data, "part0.parquet")}, rocklake.AddOptions{Create: true}); err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]string{
		"SELECT count(*) FROM pg_stats":                            "100",
		"SELECT count(*) FROM \"pg_stats\" WHERE id < 10":          "10",
		"SELECT count(*) FROM pg_catalog.pg_stats":                 "0",
		"SELECT count(*) FROM pg_class WHERE relname = 'pg_stats'": "2",
	} {
		if got := firstAnswer(t, c, q); got != want {
			t.Errorf("%s: %s, want %s", q, got, want)
		}
	}
}

// psql's describing commands, read through the catalogs.
func TestSystemCatalogsPsql(t *testing.T) {
	psql := psqlPath(t)
	f := newFixture(t, newConfig())
	for cmd, wants := range map[string][]string{
		`\dt`:        {"main   | t    | table | rocklake", "(1 row)"},
		`\d`:         {"main   | t    | table | rocklake"},
		`\d t`:       {`Table "main.t"`, "id     | bigint", "ts     | timestamp with time zone", "amount | numeric(10,2)", "uid    | uuid", "span   | interval"},
		`\d+ t`:      {"Access method: heap", "Storage"},
		`\dn`:        {"main | rocklake"},
		`\l`:         {"lake | rocklake | UTF8"},
		`\dS pg_am`:  {`Table "pg_catalog.pg_am"`, "amname    | name    |           | not null"},
		`\d nothere`: {`Did not find any relation named "nothere".`},
	} {
		out, err := exec.Command(psql, f.pgURL("tester", "", "disable"), "-X", "-c", cmd).CombinedOutput()
		if err != nil && !strings.Contains(cmd, "nothere") {
			t.Errorf("%s: %v\n%s", cmd, err, out)
			continue
		}
		for _, w := range wants {
			if !strings.Contains(string(out), w) {
				t.Errorf("%s: no %q in\n%s", cmd, w, out)
			}
		}
	}
	out, err := exec.Command(psql, f.pgURL("tester", "", "disable"), "-X", "-c", `\x`, "-c", "SELECT relname, relkind FROM pg_class WHERE oid = 1259").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "relname | pg_class") {
		t.Errorf(`\x then a query: %v\n%s`, err, out)
	}
}

// SQLAlchemy connects, inspects and reads through pandas.
func TestSystemCatalogsPython(t *testing.T) { // and psycopg2's named cursors, copy_expert and errors
	const py = "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import psycopg2, sqlalchemy, pandas").Run(); err != nil {
		if os.Getenv("ROCKLAKE_REQUIRE_POSTGRES") != "" {
			t.Fatal("python3 with psycopg2, sqlalchemy and pandas is not installed (Debian: python3-psycopg2 python3-sqlalchemy python3-pandas)")
		}
		t.Skip("python3 with psycopg2, sqlalchemy and pandas is not installed (Debian: python3-psycopg2 python3-sqlalchemy python3-pandas)")
	}
	f := newFixture(t, newConfig())
	script := `
import sys, sqlalchemy, pandas, psycopg2
url = sys.argv[1]
e = sqlalchemy.create_engine(url.replace("postgres://", "postgresql+psycopg2://"))
with e.connect() as c:
    i = sqlalchemy.inspect(c)
    print("schemas", i.get_schema_names())
    print("tables", i.get_table_names(schema="main"))
    print("columns", [(x["name"], str(x["type"])) for x in i.get_columns("t", schema="main")][:4])
    print("has", i.has_table("t", schema="main"), i.has_table("nothere", schema="main"))
    print("pk", i.get_pk_constraint("t", schema="main")["constrained_columns"], i.get_indexes("t", schema="main"))
    df = pandas.read_sql(sqlalchemy.text("SELECT id, name FROM t WHERE id < :n ORDER BY id"), c, params={"n": 3})
    print("frame", list(df["name"]))
    print("shape", pandas.read_sql_table("t", c, schema="main").shape)
raw = psycopg2.connect(url)
with raw.cursor() as cur:
    cur.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = %s", ("main",))
    print("psycopg2", cur.fetchall())
# A named cursor is a server-side cursor (DECLARE ... FETCH 50 at a time).
with raw.cursor(name="big") as cur:
    cur.itersize = 50
    cur.execute("SELECT id FROM t WHERE id >= %s ORDER BY id", (100,))
    ids = [r[0] for r in cur]
    print("named", len(ids), ids[0], ids[-1])
raw.commit()
import io
buf = io.StringIO()
with raw.cursor() as cur:
    cur.copy_expert("COPY (SELECT id, name FROM t WHERE id < 3 ORDER BY id) TO STDOUT WITH (FORMAT csv, HEADER)", buf)
print("copy", repr(buf.getvalue()))
with raw.cursor() as cur:
    try:
        cur.execute("SELECT id FROM t WHERE id = 'abc'")
    except psycopg2.Error as e:
        print("error", e.pgcode, e.diag.statement_position, "LINE 1:" in str(e))
`
	out, err := exec.Command(py, "-c", script, f.pgURL("tester", "", "disable")).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, w := range []string{
		"schemas ['information_schema', 'main']", "tables ['t']",
		"columns [('id', 'BIGINT'), ('ts', 'TIMESTAMP'), ('name', 'TEXT'), ('amount', 'NUMERIC(10, 2)')]",
		"has True False", "pk [] []", "frame ['n0', 'n1', 'n2']", "shape (300, 12)", "psycopg2 [('t',)]",
		"named 200 100 299", `copy 'id,name\n0,n0\n1,n1\n2,n2\n'`,
		"error 22P02 29 True", // psycopg2 shows psql's LINE 1 quote, from the position
	} {
		if !strings.Contains(string(out), w) {
			t.Errorf("no %q in\n%s", w, out)
		}
	}
}

// The catalogs describe a table of every type the server sends as a real
// PostgreSQL 15 describes the same table created natively: the same
// format_type, type name, attnum order, nullability and
// information_schema.columns.
func TestSystemCatalogsMatchPostgres(t *testing.T) {
	ctx := context.Background()
	pg, err := pgx.Connect(ctx, pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close(ctx)
	cols := []struct{ duck, pg string }{
		{"BOOLEAN", "boolean"}, {"SMALLINT", "smallint"}, {"INTEGER", "integer"}, {"BIGINT", "bigint"},
		{"FLOAT", "real"}, {"DOUBLE", "double precision"}, {"DECIMAL(10,2)", "numeric(10,2)"}, {"DECIMAL(38,9)", "numeric(38,9)"},
		{"VARCHAR", "text"}, {"BLOB", "bytea"}, {"DATE", "date"}, {"TIME", "time"}, {"TIMESTAMP", "timestamp"},
		{"TIMESTAMPTZ", "timestamptz"}, {"INTERVAL", "interval"}, {"UUID", "uuid"}, {"JSON", "json"},
		{"TINYINT", "smallint"}, {"USMALLINT", "integer"}, {"UINTEGER", "bigint"},
	}
	var duckCols, pgCols []string
	for i, c := range cols {
		n := "c" + itoa(i)
		duckCols = append(duckCols, "NULL::"+c.duck+" AS "+n)
		pgCols = append(pgCols, n+" "+c.pg)
	}
	if _, err := pg.Exec(ctx, "CREATE TABLE typed ("+strings.Join(pgCols, ", ")+")"); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, newConfig())
	db := openDuck(t)
	p := filepath.Join(f.data, "typed.parquet")
	if _, err := db.Exec("COPY (SELECT " + strings.Join(duckCols, ", ") + ") TO '" + p + "' (FORMAT parquet)"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.lake.Add(ctx, "typed", []string{p}, rocklake.AddOptions{Create: true}); err != nil {
		t.Fatal(err)
	}
	ours := f.connect(t, pgx.QueryExecModeExec)
	for _, q := range []string{
		`SELECT a.attnum, a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod), t.typname, a.attnotnull, a.attlen, t.typcategory::text
		 FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_type t ON t.oid = a.atttypid
		 WHERE a.attrelid = 'typed'::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`,
		`SELECT ordinal_position, column_name, data_type, is_nullable, udt_name, numeric_precision, numeric_scale, datetime_precision
		 FROM information_schema.columns WHERE table_name = $1 ORDER BY ordinal_position`,
		`SELECT relname, relkind::text FROM pg_class WHERE relname ~ 'class' AND relkind IN ('r', 'v') ORDER BY 1`,
		`SELECT count(*) FROM pg_class WHERE relname OPERATOR(pg_catalog.~) '^(pg_.*)$' COLLATE pg_catalog.default AND relkind IN ('r', 'v') AND relnamespace = 11`,
		`SELECT typname FROM pg_type WHERE typname ~* 'INT8' AND oid < 10000 ORDER BY 1`,
		`SELECT typname FROM pg_type WHERE typname !~ '^_' AND typname ~ 'time' AND oid < 10000 ORDER BY 1`,
		`SELECT format_type(oid, NULL), format_type(oid, -1) FROM pg_type WHERE oid < 10000 AND typnamespace = 11 ORDER BY oid`,
		`SELECT t, m, pg_catalog.format_type(t, m) FROM (VALUES (1700), (1231), (1043), (1015), (1042), (1083), (1114), (1184), (1266), (1560), (1562), (23)) v(t),
		   (VALUES (-1), (0), (3), (14), (655366)) w(m) ORDER BY t, m`,
		`SELECT 'pg_class'::regclass::oid, 'pg_catalog.pg_type'::regclass::oid, 'int4'::regtype::oid, 'pg_catalog'::regnamespace::oid, 1259::regclass::text`,
		`SELECT c.relname, c.relkind::text, c.relnatts, pg_catalog.pg_table_is_visible(c.oid), t.typname = c.relname
		 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_type t ON t.oid = c.reltype WHERE c.relname = $1`,
	} {
		want := textRows(t, pg, q, "typed")
		got := textRows(t, ours, q, "typed")
		if len(want) != len(got) {
			t.Fatalf("%s:\n rocklake %v\n postgres %v", q, got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s: row %d:\n rocklake %s\n postgres %s", strings.Fields(q)[1], i, got[i], want[i])
			}
		}
	}
}

func textRows(t *testing.T, c *pgx.Conn, q string, arg string) []string {
	t.Helper()
	var args []any
	if strings.Contains(q, "$1") {
		args = append(args, arg)
	}
	return strings.Split(firstAnswer(t, c, q, args...), "\n")
}

// PostgreSQL's JDBC driver browses the schema tree and reads through a
// prepared statement with a fetch size.
func TestSystemCatalogsJDBC(t *testing.T) {
	const jar = "/usr/share/java/postgresql.jar"
	java, err := exec.LookPath("java")
	if _, jerr := os.Stat(jar); err != nil || jerr != nil {
		if os.Getenv("ROCKLAKE_REQUIRE_POSTGRES") != "" {
			t.Fatal("a JDK and PostgreSQL's JDBC driver are not installed (Debian: default-jdk-headless libpostgresql-jdbc-java)")
		}
		t.Skip("a JDK and PostgreSQL's JDBC driver are not installed (Debian: default-jdk-headless libpostgresql-jdbc-java)")
	}
	f := newFixture(t, newConfig())
	u := strings.Replace(f.pgURL("tester", "", "disable"), "postgres://tester@", "jdbc:postgresql://", 1) + "&user=tester"
	out, err := exec.Command(java, "-cp", jar, filepath.Join("testdata", "jdbc", "Main.java"), u).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, w := range []string{"product PostgreSQL 15.0 (rocklake", "schema information_schema\nschema main\nschema pg_catalog\n", "table main.t\n",
		"column id int8 -5\ncolumn ts timestamptz 93\ncolumn name text 12\ncolumns 12\n", "pks 0\n", "prepared rows 25\n",
		"copyOut 3 0,n0|1,n1|2,n2|\n", "error 22P02 29\n"} {
		if !strings.Contains(string(out), w) {
			t.Errorf("no %q in\n%s", w, out)
		}
	}
	if strings.Contains(string(out), "FAIL") {
		t.Errorf("a call failed:\n%s", out)
	}
}
