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
			t.Fatalf("import from %s: %v", src, err)
		}
		if res.Version != "1.0" || len(res.Snapshots) != len(snaps)-1 {
			t.Errorf("import from %s: %+v", src, res)
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
					t.Errorf("from %s, snapshot %d, %s: %s, want %s", src, s.ID, tb.Name, got, want)
				}
			}
		}
		res, err = ducklake.Sync(context.Background(), c, src, ducklake.ImportOptions{})
		if err != nil || len(res.Snapshots) != 0 || res.From != res.Last {
			t.Errorf("sync after import from %s: %+v %v", src, res, err)
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
