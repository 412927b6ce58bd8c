package ducklake_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/internal/pgtest"
	"github.com/rocklake/rocklake/interop/ducklake"
	"github.com/rocklake/rocklake/kv/pgkv"
)

// copyCatalog copies every table of an exported DuckLake catalog into a
// SQLite or PostgreSQL database, as the ducklake extension would keep the
// same catalog there: booleans as integers in SQLite, native types in
// PostgreSQL.
func copyCatalog(t *testing.T, from string, to *sql.DB, kind string) {
	t.Helper()
	src := openDuck(t, from)
	cols := map[string][][2]string{}
	var order []string
	for _, r := range queryStrings(t, src, `SELECT table_name, column_name, data_type FROM information_schema.columns ORDER BY table_name, ordinal_position`) {
		if _, ok := cols[r[0]]; !ok {
			order = append(order, r[0])
		}
		cols[r[0]] = append(cols[r[0]], [2]string{r[1], r[2]})
	}
	for _, table := range order {
		var defs, sel, params []string
		for i, c := range cols[table] {
			typ := c[1]
			if typ == "TIMESTAMP WITH TIME ZONE" {
				typ = "TIMESTAMPTZ"
			}
			defs = append(defs, c[0]+" "+typ)
			expr := "CAST(" + c[0] + " AS VARCHAR)"
			if kind == "sqlite" && typ == "BOOLEAN" {
				expr = "CAST(" + c[0] + " AS INTEGER)"
			}
			sel = append(sel, expr)
			if kind == "postgres" {
				params = append(params, fmt.Sprintf("$%d::%s", i+1, typ))
			} else {
				params = append(params, "?")
			}
		}
		if _, err := to.Exec(fmt.Sprintf("CREATE TABLE %s (%s)", table, strings.Join(defs, ", "))); err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		rows, err := src.Query(fmt.Sprintf("SELECT %s FROM %s", strings.Join(sel, ", "), table))
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			vals := make([]any, len(sel))
			ptrs := make([]any, len(sel))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			if _, err := to.Exec(fmt.Sprintf("INSERT INTO %s VALUES (%s)", table, strings.Join(params, ", ")), vals...); err != nil {
				t.Fatalf("insert into %s: %v", table, err)
			}
		}
		rows.Close()
	}
}

// TestImportFromSQLiteAndPostgres: the same DuckLake catalog kept in a
// SQLite file and in a PostgreSQL database imports as from the DuckDB
// file: at every snapshot, every table answers as in the original
// catalog; a sync afterwards finds nothing new.
func TestImportFromSQLiteAndPostgres(t *testing.T) {
	f := newFixture(t)
	dest, _ := export(t, f.c, ducklake.ExportOptions{})

	sqlitePath := filepath.Join(t.TempDir(), "lake.sqlite")
	lite, err := sql.Open("sqlite", sqlitePath)
	if err != nil {
		t.Fatal(err)
	}
	copyCatalog(t, dest, lite, "sqlite")
	lite.Close()

	pgURL := pgtest.URL(t)
	pg, err := sql.Open("pgx", pgURL)
	if err != nil {
		t.Fatal(err)
	}
	copyCatalog(t, dest, pg, "postgres")
	pg.Close()

	snaps, err := f.c.Snapshots()
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{sqlitePath, pgURL} {
		c, res, err := importInto(t, src, ducklake.ImportOptions{})
		if err != nil {
			t.Fatalf("import from %s: %v", pgkv.Redact(src), err)
		}
		if res.Version != "1.0" || len(res.Snapshots) != len(snaps)-1 {
			t.Errorf("import from %s: %+v", pgkv.Redact(src), res)
		}
		for _, s := range snaps {
			r, err := f.c.Read(s.ID)
			if err != nil {
				t.Fatal(err)
			}
			tables, _ := r.Tables()
			r.Close()
			for _, tb := range tables {
				q := fmt.Sprintf(`SELECT count(*), CAST(sum(hash(COLUMNS(*))) AS VARCHAR) FROM %s`, quote(tb.Name))
				if want, got := answer(t, f.c, s.ID, q), answer(t, c, s.ID, q); got != want {
					t.Errorf("from %s, snapshot %d, %s: %s, want %s", pgkv.Redact(src), s.ID, tb.Name, got, want)
				}
			}
		}
		res, err = ducklake.Sync(context.Background(), c, src, ducklake.ImportOptions{})
		if err != nil || len(res.Snapshots) != 0 || res.From != res.Last {
			t.Errorf("sync after import from %s: %+v %v", pgkv.Redact(src), res, err)
		}
	}
}

// TestSyncFollowsPostgres: a DuckLake catalog in PostgreSQL that grows
// after an import is followed by sync, one commit per new snapshot.
func TestSyncFollowsPostgres(t *testing.T) {
	s := newSmall(t, ducklake.ExportOptions{})
	pgURL := pgtest.URL(t)
	pg, err := sql.Open("pgx", pgURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	copyCatalog(t, s.dest, pg, "postgres")
	c, res, err := importInto(t, pgURL, ducklake.ImportOptions{})
	if err != nil || res.Last != 2 {
		t.Fatalf("import: %+v %v", res, err)
	}

	// Others write: a third file, then the table renamed.
	db, _ := engine.Open("")
	third := filepath.Join(t.TempDir(), "t2.parquet")
	if _, err := db.Exec(fmt.Sprintf(`COPY (SELECT 50 + i AS id, 'n' || i AS s FROM range(5) r(i)) TO '%s' (FORMAT parquet)`, third)); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := ingest.Add(s.c, "t", []string{third}, ingest.Options{}); err != nil {
		t.Fatal(err)
	}
	commit(t, s.c, func(tx *catalog.Txn) { tx.RenameTable("t", "u") })
	later := filepath.Join(t.TempDir(), "later.ducklake")
	if _, err := ducklake.Export(context.Background(), s.c, later, ducklake.ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pg.Exec(`DROP SCHEMA public CASCADE; CREATE SCHEMA public`); err != nil {
		t.Fatal(err)
	}
	copyCatalog(t, later, pg, "postgres")

	res, err = ducklake.Sync(context.Background(), c, pgURL, ducklake.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(res.Snapshots) != "[{3 3} {4 4}]" || res.From != 2 {
		t.Errorf("sync: %+v", res)
	}
	for snap, q := range map[int64]string{2: tSummary, 3: tSummary, 4: `SELECT count(*), sum(id), min(s), max(s) FROM u`} {
		if want, got := answer(t, s.c, snap, q), answer(t, c, snap, q); got != want {
			t.Errorf("snapshot %d: %s, want %s", snap, got, want)
		}
	}
}

// TestInlinedRowsFromSQLiteAndPostgres: rows inlined in a SQLite or
// PostgreSQL catalog, in the specification's encodings (SQLite: integers
// and text; PostgreSQL: VARCHAR as the text's bytes), become a Parquet
// file with the values DuckDB would have read.
func TestInlinedRowsFromSQLiteAndPostgres(t *testing.T) {
	s := newSmall(t, ducklake.ExportOptions{})
	sqlitePath := filepath.Join(t.TempDir(), "lake.sqlite")
	lite, err := sql.Open("sqlite", sqlitePath)
	if err != nil {
		t.Fatal(err)
	}
	pgURL := pgtest.URL(t)
	pg, err := sql.Open("pgx", pgURL)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		db      *sql.DB
		kind    string
		ddl     string
		insert  string
		payload func(i int) any
	}{
		{lite, "sqlite", `CREATE TABLE ducklake_inlined_data_1_1(row_id BIGINT, begin_snapshot BIGINT, end_snapshot BIGINT, id BIGINT, s VARCHAR)`,
			`INSERT INTO ducklake_inlined_data_1_1 VALUES (?, 3, NULL, ?, ?)`, func(i int) any { return fmt.Sprintf("in%d", i) }},
		{pg, "postgres", `CREATE TABLE ducklake_inlined_data_1_1(row_id BIGINT, begin_snapshot BIGINT, end_snapshot BIGINT, id BIGINT, s BYTEA)`,
			`INSERT INTO ducklake_inlined_data_1_1 VALUES ($1, 3, NULL, $2, $3)`, func(i int) any { return []byte(fmt.Sprintf("in%d", i)) }},
	} {
		copyCatalog(t, s.dest, tc.db, tc.kind)
		for _, q := range []string{tc.ddl, `INSERT INTO ducklake_snapshot VALUES (3, '2026-01-01 00:00:00+00', 1, 2, 2)`,
			`INSERT INTO ducklake_inlined_data_tables VALUES (1, 'ducklake_inlined_data_1_1', 1)`} {
			if _, err := tc.db.Exec(q); err != nil {
				t.Fatalf("%s: %s: %v", tc.kind, q, err)
			}
		}
		for i := range 3 {
			if _, err := tc.db.Exec(tc.insert, 20+i, 100+i, tc.payload(i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	lite.Close()
	pg.Close()
	for _, src := range []string{sqlitePath, pgURL} {
		c, res, err := importInto(t, src, ducklake.ImportOptions{})
		if err != nil {
			t.Fatalf("import from %s: %v", pgkv.Redact(src), err)
		}
		if res.InlinedFiles != 1 {
			t.Errorf("from %s: %+v", pgkv.Redact(src), res)
		}
		if got := answer(t, c, 3, tSummary); got != "23|493|in0|s9" {
			t.Errorf("from %s at snapshot 3: %s, want 23|493|in0|s9", pgkv.Redact(src), got)
		}
		if got := answer(t, c, 3, `SELECT string_agg(s, ',' ORDER BY id) FROM t WHERE id >= 100`); got != "in0,in1,in2" {
			t.Errorf("from %s: inlined values %s", pgkv.Redact(src), got)
		}
	}
}

// TestInlinedEncodingsOfEveryType: inlined rows of every scalar type and
// nested ones, encoded as the specification says for SQLite and for
// PostgreSQL, read back as the values DuckDB wrote.
func TestInlinedEncodingsOfEveryType(t *testing.T) {
	type col struct{ name, duck, pg string } // pg: the PostgreSQL type of the spec's table ("" = text)
	cols := []col{
		{"b", "BOOLEAN", "BOOLEAN"}, {"i8", "TINYINT", "SMALLINT"}, {"u32", "UINTEGER", "BIGINT"}, {"u64", "UBIGINT", ""},
		{"h", "HUGEINT", ""}, {"f", "FLOAT", "REAL"}, {"d", "DOUBLE", "DOUBLE PRECISION"}, {"dec", "DECIMAL(10,2)", "DECIMAL(10,2)"},
		{"dt", "DATE", ""}, {"ts", "TIMESTAMP", ""}, {"tz", "TIMESTAMPTZ", ""}, {"tns", "TIMESTAMP_NS", ""},
		{"tm", "TIME", "TIME"}, {"iv", "INTERVAL", "INTERVAL"}, {"u", "UUID", "UUID"}, {"s", "VARCHAR", "BYTEA"},
		{"bl", "BLOB", "BYTEA"}, {"l", "INTEGER[]", ""}, {"st", `STRUCT(a INTEGER, "b c" VARCHAR)`, ""},
	}
	values := `SELECT true, -7, 4000000000, 18446744073709551615, -9223372036854775808::HUGEINT, 1.5::FLOAT, -0.25,
		123.45, DATE '2024-02-29', TIMESTAMP '2024-01-15 12:30:00.123456', TIMESTAMPTZ '2024-01-15 12:30:00.5+00',
		TIMESTAMP_NS '2024-01-15 12:30:00.123456789', TIME '23:59:59.5', INTERVAL '1 year 2 months 3 days 04:05:06',
		'550e8400-e29b-41d4-a716-446655440000'::UUID, 'héllo ''q''', '\x00\xFFab'::BLOB, [1, NULL, 3], {'a': 5, 'b c': 'x'}
		UNION ALL SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL`

	base := t.TempDir()
	c, err := catalog.Create(filepath.Join(base, "lake"), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var defs []catalog.ColumnDef
	for _, cl := range cols {
		defs = append(defs, catalog.ColumnDef{Name: cl.name, Type: cl.duck})
	}
	commit(t, c, func(tx *catalog.Txn) { tx.CreateTable("w", defs) })
	dest := filepath.Join(base, "w.ducklake")
	if _, err := ducklake.Export(context.Background(), c, dest, ducklake.ExportOptions{}); err != nil {
		t.Fatal(err)
	}

	// The rows as DuckDB writes them: its text of each value (the
	// reference, and SQLite's and PostgreSQL's text encodings).
	duck, _ := engine.Open("")
	var names []string
	for _, cl := range cols {
		names = append(names, cl.name)
	}
	var textCols []string
	for i := range cols {
		textCols = append(textCols, fmt.Sprintf("CAST(col%d AS VARCHAR)", i))
	}
	ref := queryStrings(t, duck, fmt.Sprintf(`SELECT %s FROM (%s) v(%s)`, strings.Join(textCols, ", "), values, colList(len(cols))))
	duck.Close()

	sqlitePath := filepath.Join(base, "w.sqlite")
	lite, _ := sql.Open("sqlite", sqlitePath)
	pgURL := pgtest.URL(t)
	pg, _ := sql.Open("pgx", pgURL)
	for _, kind := range []string{"sqlite", "postgres"} {
		db := map[string]*sql.DB{"sqlite": lite, "postgres": pg}[kind]
		copyCatalog(t, dest, db, kind)
		var ddl, params []string
		for i, cl := range cols {
			typ := "VARCHAR"
			if kind == "postgres" && cl.pg != "" {
				typ = cl.pg
			}
			if kind == "sqlite" && (cl.duck == "BOOLEAN" || cl.duck == "TINYINT" || cl.duck == "UINTEGER") {
				typ = "BIGINT"
			}
			if kind == "sqlite" && cl.duck == "BLOB" {
				typ = "BLOB"
			}
			ddl = append(ddl, fmt.Sprintf("%q %s", cl.name, typ))
			if kind == "postgres" {
				params = append(params, fmt.Sprintf("$%d", i+2))
			} else {
				params = append(params, "?")
			}
		}
		mustExec(t, db, `CREATE TABLE ducklake_inlined_data_1_1(row_id BIGINT, begin_snapshot BIGINT, end_snapshot BIGINT, `+strings.Join(ddl, ", ")+`)`)
		mustExec(t, db, `INSERT INTO ducklake_snapshot VALUES (2, '2026-01-01 00:00:00+00', 1, 2, 0)`)
		mustExec(t, db, `INSERT INTO ducklake_inlined_data_tables VALUES (1, 'ducklake_inlined_data_1_1', 1)`)
		first := "?"
		if kind == "postgres" {
			first = "$1"
		}
		for r, row := range ref {
			args := []any{int64(r)}
			for i, v := range row {
				args = append(args, encodeInlined(kind, cols[i].duck, cols[i].pg, v))
			}
			mustExec(t, db, fmt.Sprintf(`INSERT INTO ducklake_inlined_data_1_1 VALUES (%s, 2, NULL, %s)`, first, strings.Join(params, ", ")), args...)
		}
	}
	lite.Close()
	pg.Close()

	for _, src := range []string{sqlitePath, pgURL} {
		back, _, err := importInto(t, src, ducklake.ImportOptions{})
		if err != nil {
			t.Fatalf("import from %s: %v", pgkv.Redact(src), err)
		}
		var sel []string
		for _, n := range names {
			sel = append(sel, fmt.Sprintf("CAST(%q AS VARCHAR)", n))
		}
		got := answer(t, back, catalog.Latest, fmt.Sprintf(`SELECT %s FROM w ORDER BY b NULLS LAST`, strings.Join(sel, ", ")))
		var want []string
		for _, r := range ref {
			want = append(want, strings.Join(r, "|"))
		}
		if got != strings.Join(want, "\n") {
			t.Errorf("from %s:\n%s\nwant\n%s", pgkv.Redact(src), got, strings.Join(want, "\n"))
		}
	}
}

func colList(n int) string {
	var cs []string
	for i := range n {
		cs = append(cs, fmt.Sprintf("col%d", i))
	}
	return strings.Join(cs, ", ")
}

func mustExec(t *testing.T, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// encodeInlined is a value's inlined form in a SQLite or PostgreSQL
// catalog, from DuckDB's text of it ("NULL" for NULL).
func encodeInlined(kind, duck, pg, text string) any {
	if text == "NULL" {
		return nil
	}
	switch {
	case duck == "BLOB":
		return blobBytes(text)
	case kind == "sqlite" && duck == "BOOLEAN":
		return map[string]int64{"true": 1, "false": 0}[text]
	case kind == "postgres" && pg == "BYTEA":
		return []byte(text)
	}
	return text
}

// blobBytes reads DuckDB's blob text (\xHH escapes).
func blobBytes(s string) []byte {
	var out []byte
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && s[i+1] == 'x' {
			var b byte
			fmt.Sscanf(s[i+2:i+4], "%02X", &b)
			out = append(out, b)
			i += 3
			continue
		}
		out = append(out, s[i])
	}
	return out
}
