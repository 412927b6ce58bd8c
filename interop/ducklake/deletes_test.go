package ducklake_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/interop/ducklake"
	"github.com/rocklake/rocklake/maintain"
)

// withDeletes is a rocklake catalog of two tables, exported: t (id, s),
// two files of 10 rows, and u (id, d DOUBLE with NULLs, ts, s), one file
// of 15 rows.
type withDeletes struct {
	*small
	u string // u's data file
}

func newWithDeletes(t *testing.T) *withDeletes {
	t.Helper()
	s := newSmall(t, ducklake.ExportOptions{})
	u := filepath.Join(t.TempDir(), "u0.parquet")
	db, err := engine.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(fmt.Sprintf(`COPY (SELECT i AS id, CASE WHEN i %% 4 = 1 THEN NULL ELSE i * 1.5 END AS d,
		TIMESTAMP '2024-01-01' + INTERVAL (i) HOUR AS ts, 'u' || i AS s FROM range(15) r(i)) TO '%s' (FORMAT parquet)`, u)); err != nil {
		t.Fatal(err)
	}
	if _, err := ingest.Add(s.c, "u", []string{u}, ingest.Options{Create: true}); err != nil {
		t.Fatal(err)
	}
	s.dest = filepath.Join(t.TempDir(), "deletes.ducklake")
	if _, err := ducklake.Export(context.Background(), s.c, s.dest, ducklake.ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	return &withDeletes{small: s, u: u}
}

// deleteRows writes a delete file of (file_path, pos) rows for the data
// file at data, as the ducklake extension does, and registers it in a new
// snapshot: its id from next_file_id, current from that snapshot on,
// ending the data file's current one (whose positions pos must hold).
// others are more data file paths the file names (rows of other files).
// count is the delete_count recorded (-1: the positions' number).
func (s *withDeletes) deleteRows(t *testing.T, data string, pos []int, count int, format string, others ...string) string {
	t.Helper()
	del := strings.TrimSuffix(data, ".parquet") + fmt.Sprintf("-deletes-%d.parquet", len(pos))
	db, err := engine.Open(s.dest)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var vals []string
	for _, p := range pos {
		vals = append(vals, fmt.Sprintf("('%s', %d)", data, p))
	}
	for i, o := range others {
		vals = append(vals, fmt.Sprintf("('%s', %d)", o, i))
	}
	if _, err := db.Exec(fmt.Sprintf(`COPY (SELECT file_path, pos::BIGINT AS pos FROM (VALUES %s) v(file_path, pos) ORDER BY file_path, pos) TO '%s' (FORMAT parquet)`,
		strings.Join(vals, ", "), del)); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(del)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(del)
	footer := binary.LittleEndian.Uint32(b[len(b)-8:])
	var fileID, tableID int64
	if err := db.QueryRow(`SELECT data_file_id, table_id FROM ducklake_data_file WHERE path = ? OR ends_with(?, '/' || path)`, data, data).Scan(&fileID, &tableID); err != nil {
		t.Fatalf("data file %s: %v", data, err)
	}
	if count < 0 {
		count = len(pos)
	}
	for _, q := range []string{
		`INSERT INTO ducklake_snapshot SELECT snapshot_id + 1, now(), schema_version, next_catalog_id, next_file_id + 1 FROM ducklake_snapshot ORDER BY snapshot_id DESC LIMIT 1`,
		fmt.Sprintf(`INSERT INTO ducklake_snapshot_changes SELECT max(snapshot_id), 'deleted_from_table:%d', NULL, NULL, NULL FROM ducklake_snapshot`, tableID),
		fmt.Sprintf(`UPDATE ducklake_delete_file SET end_snapshot = (SELECT max(snapshot_id) FROM ducklake_snapshot) WHERE data_file_id = %d AND end_snapshot IS NULL`, fileID),
		fmt.Sprintf(`INSERT INTO ducklake_delete_file SELECT next_file_id - 1, %d, snapshot_id, NULL, %d, '%s', false, '%s', %d, %d, %d, NULL, NULL
			FROM ducklake_snapshot ORDER BY snapshot_id DESC LIMIT 1`, tableID, fileID, del, format, count, st.Size(), footer),
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return del
}

// duckAnswer is DuckDB's answer to q, one row, its values joined by "|".
func duckAnswer(t *testing.T, q string) string {
	t.Helper()
	db, err := engine.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	return strings.TrimSuffix(join(queryStrings(t, db, q)), "\n")
}

// query is a catalog's answer to q at its snapshot 1, and whether
// statistics gave it.
func query(t *testing.T, c *catalog.Catalog, q string, opts engine.QueryOptions) (string, bool) {
	t.Helper()
	opts.Snapshot = 1
	e, err := engine.New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	res, err := e.Query(context.Background(), q, opts)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	var rows []string
	for _, r := range res.Rows {
		var vals []string
		for _, v := range r {
			vals = append(vals, deref(v))
		}
		rows = append(rows, strings.Join(vals, "|"))
	}
	return strings.Join(rows, "\n"), res.Metadata
}

// kept is the rows of a data file but those at positions pos, as DuckDB
// reads them.
func kept(path string, pos []int) string {
	var ps []string
	for _, p := range pos {
		ps = append(ps, fmt.Sprint(p))
	}
	return fmt.Sprintf(`(SELECT * EXCLUDE (file_row_number) FROM read_parquet('%s', file_row_number = true) WHERE file_row_number NOT IN (%s))`,
		path, strings.Join(ps, ", "))
}

// TestImportLatestFoldsDeleteFiles: with --latest, each data file with a
// current delete file is imported as a file of rocklake's own holding its
// other rows (a delete file naming several data files included), answering
// as DuckDB does over the data files without the deleted positions, from
// statistics as from the rows.
func TestImportLatestFoldsDeleteFiles(t *testing.T) {
	s := newWithDeletes(t)
	tPos, uPos := []int{0, 3, 4, 9}, []int{0, 7, 14}
	s.deleteRows(t, s.files[0], tPos, -1, "parquet")
	s.deleteRows(t, s.u, uPos, -1, "parquet", "/elsewhere/other.parquet", s.files[1])
	c, res, err := importInto(t, s.dest, ducklake.ImportOptions{Latest: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.FoldedFiles != 2 || res.Files != 3 || len(res.Snapshots) != 1 {
		t.Errorf("result %+v", res)
	}

	tRows := fmt.Sprintf(`(SELECT * FROM %s UNION ALL SELECT * FROM read_parquet('%s'))`, kept(s.files[0], tPos), s.files[1])
	uRows := kept(s.u, uPos)
	for _, tc := range []struct{ table, from, cols string }{
		{"t", tRows, `concat_ws('/', id, s)`},
		{"u", uRows, `concat_ws('/', id, coalesce(d::VARCHAR, 'NULL'), ts, s)`},
	} {
		rowsQ := `SELECT count(*), string_agg(` + tc.cols + `, ';' ORDER BY id) FROM `
		want := duckAnswer(t, rowsQ+tc.from+" x")
		if got, _ := query(t, c, rowsQ+tc.table, engine.QueryOptions{}); got != want {
			t.Errorf("table %s rows:\n%s\nwant\n%s", tc.table, got, want)
		}
		statsQ := `SELECT count(*), min(id), max(id), min(s), max(s) FROM `
		want = duckAnswer(t, statsQ+tc.from+" x")
		got, fromStats := query(t, c, statsQ+tc.table, engine.QueryOptions{})
		if got != want || !fromStats {
			t.Errorf("table %s from statistics (%v): %s, want %s", tc.table, fromStats, got, want)
		}
		if got, _ := query(t, c, statsQ+tc.table, engine.QueryOptions{NoMetadataAnswers: true}); got != want {
			t.Errorf("table %s read: %s, want %s", tc.table, got, want)
		}
	}

	r, err := c.Read(catalog.Latest)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var dir string
	for name, orig := range map[string]string{"t": s.files[0], "u": s.u} {
		tb, err := r.Table(name)
		if err != nil {
			t.Fatal(err)
		}
		files, _ := r.Files(tb.ID)
		folded := 0
		for _, f := range files {
			loc := f.Location(tb)
			if loc == orig {
				t.Errorf("table %s still reads data file %s", name, orig)
			}
			if !strings.HasPrefix(filepath.Base(loc), "ducklake-folded-") {
				continue
			}
			folded++
			dir = filepath.Dir(loc)
			if f.Owner != catalog.OwnerRocklake || !c.WrittenByRocklake(loc) {
				t.Errorf("table %s folded file %s: owner %v, written by rocklake %v", name, loc, f.Owner, c.WrittenByRocklake(loc))
			}
		}
		if folded != 1 {
			t.Errorf("table %s: %d folded files, want 1: %+v", name, folded, files)
		}
	}
	if res.InlinedDir != dir || !strings.HasPrefix(dir, c.RewriteRoot()+"/") {
		t.Errorf("folded files in %s, result says %s, rewrite root %s", dir, res.InlinedDir, c.RewriteRoot())
	}
}

// TestImportDeleteFileRefusals: a delete_count the delete file does not
// bear out, and a delete file not in Parquet, are refused with nothing
// committed and no folded file left, by import --latest, a history import
// and sync alike.
func TestImportDeleteFileRefusals(t *testing.T) {
	s := newWithDeletes(t)
	del := s.deleteRows(t, s.files[0], []int{0, 9}, 3, "parquet")
	c, _, err := importInto(t, s.dest, ducklake.ImportOptions{Latest: true})
	if !errors.Is(err, ducklake.ErrUnsupported) || !strings.Contains(err.Error(), "delete_count") ||
		!strings.Contains(err.Error(), del) || !strings.Contains(err.Error(), s.files[0]) {
		t.Fatalf("a delete_count that disagrees: %v", err)
	}
	unchanged(t, c)
	if left, _ := filepath.Glob(filepath.Join(c.RewriteRoot(), "ducklake-*")); len(left) > 0 {
		t.Errorf("the refused import left %v", left)
	}

	for _, tc := range []struct {
		name string
		run  func(c *catalog.Catalog) error
	}{
		{"history", func(c *catalog.Catalog) error {
			_, err := ducklake.Import(context.Background(), c, s.dest, ducklake.ImportOptions{})
			return err
		}},
		{"sync", func(c *catalog.Catalog) error {
			_, err := ducklake.Sync(context.Background(), c, s.dest, ducklake.ImportOptions{})
			return err
		}},
	} {
		c, err := catalog.Create(filepath.Join(t.TempDir(), "lake"), catalog.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		err = tc.run(c)
		if !errors.Is(err, ducklake.ErrUnsupported) || !strings.Contains(err.Error(), "delete_count") || !strings.Contains(err.Error(), del) {
			t.Errorf("%s: %v", tc.name, err)
		}
		unchanged(t, c)
		if left, _ := filepath.Glob(filepath.Join(c.RewriteRoot(), "ducklake-*")); len(left) > 0 {
			t.Errorf("%s: the refused import left %v", tc.name, left)
		}
	}

	s = newWithDeletes(t)
	s.deleteRows(t, s.u, []int{1}, -1, "puffin")
	c, _, err = importInto(t, s.dest, ducklake.ImportOptions{Latest: true})
	if !errors.Is(err, ducklake.ErrUnsupported) || !strings.Contains(err.Error(), "is puffin, not parquet") {
		t.Fatalf("a deletion vector: %v", err)
	}
	unchanged(t, c)
}

// TestImportLatestEveryRowDeleted: a data file whose delete file names
// every row leaves the table with no successor, as a DELETE of all its
// rows retires it.
func TestImportLatestEveryRowDeleted(t *testing.T) {
	s := newWithDeletes(t)
	s.deleteRows(t, s.files[0], []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, -1, "parquet")
	c, res, err := importInto(t, s.dest, ducklake.ImportOptions{Latest: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.FoldedFiles != 0 || res.Files != 2 {
		t.Errorf("result %+v", res)
	}
	want := duckAnswer(t, fmt.Sprintf(`SELECT count(*), sum(id)::VARCHAR, min(s), max(s) FROM read_parquet('%s')`, s.files[1]))
	if got, _ := query(t, c, tSummary, engine.QueryOptions{}); got != want {
		t.Errorf("%s, want %s", got, want)
	}
	if left, _ := filepath.Glob(filepath.Join(res.InlinedDir, "*.parquet")); len(left) > 0 {
		t.Errorf("files left in %s: %v", res.InlinedDir, left)
	}
}

// TestImportHistoryWithDeleteFiles: a history import replays each delete
// file at the snapshot that made it current (a second delete of a file
// replacing the first, a delete file naming other files' rows too), so
// that every DuckLake snapshot reads in rocklake as DuckDB reads its data
// files less the positions then deleted; the delete files are rocklake's
// own copies. Sync of a catalog imported before the deletes replays them
// too, and finds the catalog up to date after; a delete file that ends
// while its data file stays (its rows would come back) is refused.
func TestImportHistoryWithDeleteFiles(t *testing.T) {
	s := newWithDeletes(t)
	early, _, err := importInto(t, s.dest, ducklake.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first, second, uPos := []int{1, 4}, []int{1, 4, 7}, []int{0, 3, 14}
	var states []int64 // DuckLake snapshots, after each delete
	last := func() int64 {
		db, err := engine.Open(s.dest)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var n int64
		if err := db.QueryRow(`SELECT max(snapshot_id) FROM ducklake_snapshot`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := last()
	s.deleteRows(t, s.files[0], first, -1, "parquet")
	states = append(states, last())
	s.deleteRows(t, s.u, uPos, -1, "parquet", "/elsewhere/other.parquet", s.files[1])
	states = append(states, last())
	s.deleteRows(t, s.files[0], second, -1, "parquet")
	states = append(states, last())
	// What each table holds at each state.
	rowsAt := func(i int) map[string]string {
		tPos, u := first, s.u
		if i < 0 {
			tPos = nil
		}
		if i >= 2 {
			tPos = second
		}
		if i >= 1 {
			u = kept(s.u, uPos)
		} else {
			u = "read_parquet('" + s.u + "')"
		}
		t0 := "read_parquet('" + s.files[0] + "')"
		if tPos != nil {
			t0 = kept(s.files[0], tPos)
		}
		return map[string]string{
			"t": fmt.Sprintf(`(SELECT * FROM %s UNION ALL SELECT * FROM read_parquet('%s'))`, t0, s.files[1]),
			"u": u,
		}
	}
	cols := map[string]string{"t": `concat_ws('/', id, s)`, "u": `concat_ws('/', id, coalesce(d::VARCHAR, 'NULL'), ts, s)`}
	check := func(c *catalog.Catalog, snap int64, i int) {
		t.Helper()
		for table, from := range rowsAt(i) {
			q := `SELECT count(*), string_agg(` + cols[table] + `, ';' ORDER BY id), min(id), max(id) FROM `
			want := duckAnswer(t, q+from+" x")
			if got := answer(t, c, snap, q+table); got != want {
				t.Errorf("snapshot %d (state %d), table %s:\n%s\nwant\n%s", snap, i, table, got, want)
			}
			count := `SELECT count(*) FROM `
			if got, want := answer(t, c, snap, count+table), duckAnswer(t, count+from+" x"); got != want {
				t.Errorf("snapshot %d (state %d), count(*) of %s: %s, want %s", snap, i, table, got, want)
			}
		}
	}

	c, res, err := importInto(t, s.dest, ducklake.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.DeleteFiles != 3 {
		t.Errorf("result %+v: want 3 delete files", res)
	}
	bySrc := map[int64]int64{}
	for _, sp := range res.Snapshots {
		bySrc[sp.DuckLake] = sp.Rocklake
	}
	check(c, bySrc[before], -1)
	for i, src := range states {
		snap, ok := bySrc[src]
		if !ok {
			t.Fatalf("DuckLake snapshot %d (a delete) became no rocklake snapshot: %+v", src, res.Snapshots)
		}
		check(c, snap, i)
	}
	r, err := c.Read(catalog.Latest)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"t", "u"} {
		tb, _ := r.Table(name)
		dels, _ := r.DeleteFiles(tb.ID)
		if len(dels) != 1 {
			t.Errorf("table %s: %d current delete files, want 1", name, len(dels))
		}
		for _, d := range dels {
			if d.Owner != catalog.OwnerRocklake || !strings.HasPrefix(d.Location(tb), res.InlinedDir+"/") {
				t.Errorf("table %s delete file %s (owner %v) is not rocklake's own copy in %s", name, d.Location(tb), d.Owner, res.InlinedDir)
			}
		}
	}
	r.Close()

	// Sync of the catalog imported before the deletes.
	sres, err := ducklake.Sync(context.Background(), early, s.dest, ducklake.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sres.From != before || len(sres.Snapshots) != 3 || sres.DeleteFiles != 3 {
		t.Errorf("sync: %+v", sres)
	}
	check(early, catalog.Latest, 2)
	if again, err := ducklake.Sync(context.Background(), early, s.dest, ducklake.ImportOptions{}); err != nil || len(again.Snapshots) != 0 || again.From != states[2] {
		t.Errorf("sync again: %+v, %v", again, err)
	}

	// A delete of rocklake's own, then one in DuckLake of as many rows of
	// the same file: the states differ, and sync says so.
	e, err := engine.New(early)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := maintain.Write(context.Background(), e, "DELETE FROM t WHERE id = 2", maintain.WriteOptions{}); err != nil || r.DeleteFiles != 1 {
		t.Fatalf("a delete in rocklake: %+v, %v", r, err)
	}
	e.Close()
	s.deleteRows(t, s.files[0], append(slices.Clone(second), 8), -1, "parquet")
	if res, err := ducklake.Sync(context.Background(), early, s.dest, ducklake.ImportOptions{}); !errors.Is(err, ducklake.ErrUnsupported) || !strings.Contains(err.Error(), "matches no snapshot") {
		t.Errorf("sync after different deletes of as many rows: %+v, %v", res, err)
	}

	// A delete file ended with nothing in its place.
	s.edit(t, `INSERT INTO ducklake_snapshot SELECT snapshot_id + 1, now(), schema_version, next_catalog_id, next_file_id FROM ducklake_snapshot ORDER BY snapshot_id DESC LIMIT 1`,
		`UPDATE ducklake_delete_file SET end_snapshot = (SELECT max(snapshot_id) FROM ducklake_snapshot) WHERE end_snapshot IS NULL AND data_file_id = (SELECT min(data_file_id) FROM ducklake_delete_file)`)
	c, _, err = importInto(t, s.dest, ducklake.ImportOptions{})
	if !errors.Is(err, ducklake.ErrUnsupported) || !strings.Contains(err.Error(), "would come back") {
		t.Fatalf("a delete file ended alone: %v", err)
	}
	unchanged(t, c)
}
