package ducklake_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/ingest"
)

// lakeFixture is a rocklake catalog with history: several tables, nested
// and VARIANT columns, NULLs and NaN, renames, removed files and a drop.
type lakeFixture struct {
	dir, data string
	c         *catalog.Catalog
	events    []string // the files of table events (renamed ev at snapshot 4)
}

// eventsSQL is one file of table events: every scalar type DuckLake has,
// nested ones, NULLs and a NaN; k shifts the values so files differ.
func eventsSQL(k int) string {
	return fmt.Sprintf(`SELECT i + %[1]d*100 AS id,
		(i %% 100 - 50)::TINYINT AS i8, (i * 7)::UINTEGER AS u32, (i::HUGEINT * 1000000000000) AS h,
		CASE WHEN i = 3 THEN 'nan'::FLOAT ELSE i / 4 END::FLOAT AS f,
		CASE WHEN i %% 10 = 0 THEN NULL ELSE i * 1.5 END AS d,
		(i * 1.25)::DECIMAL(10,2) AS dec, DATE '2024-01-01' + (i + %[1]d*100)::INTEGER AS dt,
		TIMESTAMP '2024-01-01 00:00:00' + INTERVAL (i * 61) SECOND AS ts,
		TIMESTAMPTZ '2024-01-01 00:00:00+00' + INTERVAL (i + %[1]d*100) HOUR AS tstz,
		i %% 2 = 0 AS b, 'name ' || (i + %[1]d*100) AS s, ('blob' || i)::BLOB AS bl,
		('00000000-0000-4000-8000-' || lpad((i + %[1]d*100)::VARCHAR, 12, '0'))::UUID AS u,
		INTERVAL (i) DAY AS iv,
		{'a': i, 'b': 'x' || i} AS st, [i, i + 1] AS l, MAP {'k' || (i %% 3): i} AS m
		FROM range(%[2]d) r(i)`, k, 40+k*5)
}

func newFixture(t *testing.T) *lakeFixture {
	t.Helper()
	base := t.TempDir()
	f := &lakeFixture{dir: filepath.Join(base, "lake"), data: filepath.Join(base, "data")}
	if err := os.MkdirAll(f.data, 0o755); err != nil {
		t.Fatal(err)
	}
	db, err := engine.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	write := func(name, query string) string {
		p := filepath.Join(f.data, name)
		if _, err := db.Exec(fmt.Sprintf(`COPY (%s) TO '%s' (FORMAT parquet)`, query, p)); err != nil {
			t.Fatalf("write %s: %v", name, err)
		}
		return p
	}
	for k := range 4 {
		f.events = append(f.events, write(fmt.Sprintf("events-%d.parquet", k), eventsSQL(k)))
	}
	nested := write("nested.parquet", `SELECT i AS id, [{'x': i, 'y': [i::VARCHAR]}] AS deep FROM range(10) r(i)`)
	variant := write("variant.parquet", `SELECT i AS id, {'a': i, 'b': 'v' || i}::VARIANT AS v FROM range(20) r(i)`)

	c, err := catalog.Create(f.dir, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
	t.Cleanup(func() { c.Close() })
	add := func(table string, create bool, paths ...string) {
		t.Helper()
		if _, err := ingest.Add(c, table, paths, ingest.Options{Create: create}); err != nil {
			t.Fatalf("add %v to %s: %v", paths, table, err)
		}
	}
	add("events", true, f.events[0], f.events[1])                          // 1
	add("events", false, f.events[2])                                      // 2
	add("nested", true, nested)                                            // 3
	commit(t, c, func(tx *catalog.Txn) { tx.RenameTable("events", "ev") }) // 4
	r, err := c.Read(catalog.Latest)
	if err != nil {
		t.Fatal(err)
	}
	ev, _ := r.Table("ev")
	files, _ := r.Files(ev.ID)
	r.Close()
	commit(t, c, func(tx *catalog.Txn) { tx.RemoveFiles("ev", files[0].ID) }) // 5
	commit(t, c, func(tx *catalog.Txn) { tx.DropTable("nested") })            // 6
	add("ev", false, f.events[3])                                             // 7
	add("variants", true, variant)                                            // 8
	return f
}

func commit(t *testing.T, c *catalog.Catalog, fn func(*catalog.Txn)) {
	t.Helper()
	tx, err := c.Begin()
	if err != nil {
		t.Fatal(err)
	}
	fn(tx)
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// openDuck opens a DuckDB database file.
func openDuck(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := engine.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func queryStrings(t *testing.T, db *sql.DB, q string, args ...any) [][]string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out [][]string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		row := make([]string, len(cols))
		for i, v := range vals {
			row[i] = "NULL"
			if v.Valid {
				row[i] = v.String
			}
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func join(rows [][]string) string {
	var sb strings.Builder
	for _, r := range rows {
		sb.WriteString(strings.Join(r, "|"))
		sb.WriteByte('\n')
	}
	return sb.String()
}
