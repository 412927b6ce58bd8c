package engine

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/stats"
)

// An add column whose name files registered with --ignore-extra-columns
// hold reads those files' own values (cast where the added type widens
// theirs), with their footers' statistics, while the other files read the
// default; answers are DuckDB's over the files mapped by hand, snapshots
// before the add have no such column, and a type that does not widen the
// files' is refused, naming a file, the catalog unchanged.
func TestAddColumnMapsIgnoredColumns(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	base, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer base.Close()
	write := func(name, sel string, rowGroup int) string {
		p := filepath.Join(dir, name)
		if _, err := base.Exec(fmt.Sprintf("COPY (%s) TO '%s' (FORMAT parquet, ROW_GROUP_SIZE %d)", sel, p, rowGroup)); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// f1 lacks note; f2 holds it as INTEGER 1..5 and a NULL; f3 as NOTE
	// 100..119 in two row groups; f4 holds w, a VARCHAR, instead.
	f1 := write("f1.parquet", "SELECT i::BIGINT AS id, (i * 2)::INTEGER AS a FROM range(0, 10) r(i)", 100)
	f2 := write("f2.parquet", "SELECT i::BIGINT AS id, i::INTEGER AS a, CASE WHEN i = 15 THEN NULL ELSE (i - 9)::INTEGER END AS note FROM range(10, 16) r(i)", 100)
	f3 := write("f3.parquet", "SELECT i::BIGINT AS id, i::INTEGER AS a, (i + 80)::INTEGER AS \"NOTE\" FROM range(20, 40) r(i)", 10)
	f4 := write("f4.parquet", "SELECT i::BIGINT AS id, i::INTEGER AS a, 'w' || i AS w FROM range(40, 45) r(i)", 100)
	c, _ := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	cd, _ := catalog.ParseColumnDefs("id BIGINT, a INTEGER")
	tx, _ := c.Begin()
	tx.CreateTable("t", cd)
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := ingest.Add(c, "t", []string{f1}, ingest.Options{}); err != nil {
		t.Fatal(err)
	}
	res, err := ingest.Add(c, "t", []string{f2, f3, f4}, ingest.Options{IgnoreExtraColumns: true})
	if err != nil {
		t.Fatal(err)
	}
	beforeAdd := res.Snapshot.ID
	alter := func(a catalog.Alteration) (catalog.Snapshot, error) {
		a, err := ingest.MapIn(ctx, c, "t", a, nil)
		if err != nil {
			return catalog.Snapshot{}, err
		}
		tx, _ := c.Begin()
		tx.AlterTable("t", a)
		return tx.Commit()
	}
	refused := func(a catalog.Alteration, mapIn bool, want ...string) {
		t.Helper()
		digest := kvtest.Digest(t, c.Store())
		var err error
		if mapIn {
			_, err = alter(a)
		} else {
			tx, _ := c.Begin()
			tx.AlterTable("t", a)
			_, err = tx.Commit()
		}
		for _, w := range want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v, want an error naming %q", a, err, w)
			}
		}
		if kvtest.Digest(t, c.Store()) != digest {
			t.Errorf("%s: refused, but the catalog changed", a)
		}
	}

	// Refused: a type that does not widen the files' INTEGER, and an add
	// that does not read the files' footers (the catalog cannot).
	refused(catalog.Alteration{Kind: catalog.AddColumn, Column: "note", Type: "SMALLINT"}, true, f2, "INTEGER", "narrower")
	refused(catalog.Alteration{Kind: catalog.AddColumn, Column: "note", Type: "VARCHAR"}, true, f2, "INTEGER")
	refused(catalog.Alteration{Kind: catalog.AddColumn, Column: "note", Type: "BIGINT"}, false, f2, "ignore-extra-columns", "footer")
	refused(catalog.Alteration{Kind: catalog.AddColumn, Column: "w", Type: "INTEGER"}, true, f4, "VARCHAR")

	added, err := alter(catalog.Alteration{Kind: catalog.AddColumn, Column: "note", Type: "BIGINT", Default: stats.Known("7")})
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	view := func(notes map[string]string) {
		t.Helper()
		var parts []string
		for _, f := range []string{f1, f2, f3, f4} {
			parts = append(parts, fmt.Sprintf("SELECT id, a, %s AS note, filename FROM read_parquet('%s', filename = true)", notes[f], f))
		}
		if _, err := base.Exec("CREATE OR REPLACE VIEW o AS " + strings.Join(parts, " UNION ALL ") + "; CREATE OR REPLACE VIEW ot AS SELECT * EXCLUDE (filename) FROM o"); err != nil {
			t.Fatal(err)
		}
	}
	view(map[string]string{f1: "CAST(7 AS BIGINT)", f2: "CAST(note AS BIGINT)", f3: `CAST("NOTE" AS BIGINT)`, f4: "CAST(7 AS BIGINT)"})
	files := []string{f1, f2, f3, f4}
	check := func(snap int64, pred string, wantKept []string, wantAllMatch []string) {
		t.Helper()
		q := "SELECT * FROM t WHERE " + pred
		got, err := e.Query(ctx, q, QueryOptions{Snapshot: snap})
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		want, err := baseline(t, base, "SELECT * FROM ot WHERE "+pred)
		if err != nil {
			t.Fatal(err)
		}
		var rows []string
		for _, r := range got.Rows {
			rows = append(rows, rowText(r))
		}
		if !sameRows(rows, want, false) {
			t.Errorf("%s: %v, DuckDB %v", q, rows, want)
		}
		checkFileDecisions(t, base, "o", pred, got.Tables[0].Plan, files, q)
		var kept, all []string
		for _, kf := range got.Tables[0].Plan.KeptFiles {
			kept = append(kept, kf.Path)
			if kf.AllMatch {
				all = append(all, kf.Path)
			}
		}
		if wantKept != nil && (!slices.Equal(kept, wantKept) || !slices.Equal(all, wantAllMatch)) {
			t.Errorf("%s: kept %v (all match %v), want %v (%v)", q, kept, all, wantKept, wantAllMatch)
		}
		agg := "SELECT count(*), min(note), max(note), sum(note) FROM t WHERE " + pred
		ares, err := e.Query(ctx, agg, QueryOptions{Snapshot: snap})
		awant, werr := baseline(t, base, strings.Replace(agg, "FROM t ", "FROM ot ", 1))
		if err != nil || werr != nil || len(ares.Rows) != 1 || rowText(ares.Rows[0]) != awant[0] {
			t.Errorf("%s: %v %v, DuckDB %v %v", agg, ares, err, awant, werr)
		}
	}
	// The footers' bounds: f2 holds 1..5 (and a NULL), f3 100..119, the
	// others the default 7 only.
	check(added.ID, "note = 3", []string{f2}, nil)
	check(added.ID, "note >= 100", []string{f3}, []string{f3})
	check(added.ID, "note = 7", []string{f1, f4}, []string{f1, f4})
	check(added.ID, "note IS NULL", []string{f2}, nil)
	check(added.ID, "note > 110", []string{f3}, nil)
	check(added.ID, "note < 6 OR a > 42", []string{f2, f4}, nil)
	if got, err := e.Query(ctx, "SELECT count(*), min(note), max(note) FROM t WHERE note >= 100", QueryOptions{Snapshot: added.ID}); err != nil || !got.Metadata || rowText(got.Rows[0]) != "20|100|119" {
		t.Errorf("a metadata answer over f3's footer: %v %v", got, err)
	}
	// Other engines read the mapping from the plan.
	got, err := e.Query(ctx, "SELECT id FROM t WHERE note >= 100", QueryOptions{Snapshot: added.ID})
	if err != nil {
		t.Fatal(err)
	}
	if kf := got.Tables[0].Plan.KeptFiles; len(kf) != 1 || fmt.Sprint(kf[0].Columns) != "[{note NOTE INTEGER <nil>}]" {
		t.Errorf("column_mapping of f3: %+v", kf)
	}
	// Before the add, the table has no such column.
	if _, err := e.Query(ctx, "SELECT note FROM t", QueryOptions{Snapshot: beforeAdd}); err == nil {
		t.Error("the snapshot before the add reads note")
	}
	if r, err := e.Query(ctx, "SELECT * FROM t LIMIT 0", QueryOptions{Snapshot: beforeAdd}); err != nil || strings.Join(r.Columns, ",") != "id,a" {
		t.Errorf("columns before the add: %v %v", r, err)
	}

	// Widening a mapped-in column keeps reading the files' values.
	widened, err := alter(catalog.Alteration{Kind: catalog.SetColumnType, Column: "note", Type: "HUGEINT"})
	if err != nil {
		t.Fatal(err)
	}
	view(map[string]string{f1: "CAST(7 AS HUGEINT)", f2: "CAST(note AS HUGEINT)", f3: `CAST("NOTE" AS HUGEINT)`, f4: "CAST(7 AS HUGEINT)"})
	check(widened.ID, "note = 3", []string{f2}, nil)
	check(widened.ID, "note >= 100", []string{f3}, []string{f3})

	// A second column from the same files: w, as its own VARCHAR.
	ws, err := alter(catalog.Alteration{Kind: catalog.AddColumn, Column: "w", Type: "VARCHAR"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := e.Query(ctx, "SELECT string_agg(w, ',' ORDER BY id), count(*) FILTER (WHERE w IS NULL) FROM t", QueryOptions{Snapshot: ws.ID}); err != nil || rowText(got.Rows[0]) != "w40,w41,w42,w43,w44|36" {
		t.Errorf("w: %v %v", got, err)
	}

	// Dropped and added again, note is another column: the files hold the
	// dropped one, and read the new one's default, as files that held a
	// dropped column from the start do.
	if _, err := alter(catalog.Alteration{Kind: catalog.DropColumn, Column: "note"}); err != nil {
		t.Fatal(err)
	}
	again, err := alter(catalog.Alteration{Kind: catalog.AddColumn, Column: "note", Type: "VARCHAR"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := e.Query(ctx, "SELECT count(*), count(note) FROM t", QueryOptions{Snapshot: again.ID}); err != nil || rowText(got.Rows[0]) != "41|0" {
		t.Errorf("note added again: %v %v", got, err)
	}
}
