package ducklake_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/interop/ducklake"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

// small is a rocklake catalog with table t (id BIGINT, s VARCHAR): two
// files of 10 rows, added at snapshots 1 and 2; dest is its export, which
// the tests then edit by hand into what the ducklake extension writes and
// rocklake does not.
type small struct {
	c     *catalog.Catalog
	files []string
	dest  string
}

func newSmall(t *testing.T, opts ducklake.ExportOptions) *small {
	t.Helper()
	base := t.TempDir()
	db, err := engine.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := &small{}
	for k := range 2 {
		p := filepath.Join(base, fmt.Sprintf("t%d.parquet", k))
		if _, err := db.Exec(fmt.Sprintf(`COPY (SELECT i + %d AS id, 's' || i AS s FROM range(10) r(i)) TO '%s' (FORMAT parquet)`, k*10, p)); err != nil {
			t.Fatal(err)
		}
		s.files = append(s.files, p)
	}
	c, err := catalog.Create(filepath.Join(base, "lake"), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s.c = c
	for k, p := range s.files {
		if _, err := ingest.Add(c, "t", []string{p}, ingest.Options{Create: k == 0}); err != nil {
			t.Fatal(err)
		}
	}
	s.dest = filepath.Join(base, "lake.ducklake")
	if _, err := ducklake.Export(context.Background(), c, s.dest, opts); err != nil {
		t.Fatal(err)
	}
	return s
}

// edit runs SQL on the exported catalog, as another writer would.
func (s *small) edit(t *testing.T, stmts ...string) {
	t.Helper()
	db, err := engine.Open(s.dest)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// importInto imports src into a new catalog and returns it.
func importInto(t *testing.T, src string, opts ducklake.ImportOptions) (*catalog.Catalog, ducklake.ImportResult, error) {
	t.Helper()
	c, err := catalog.Create(filepath.Join(t.TempDir(), "lake"), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	res, err := ducklake.Import(context.Background(), c, src, opts)
	return c, res, err
}

// answer runs a query on a catalog at a snapshot.
func answer(t *testing.T, c *catalog.Catalog, snap int64, q string) string {
	t.Helper()
	e, err := engine.New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	res, err := e.Query(context.Background(), q, engine.QueryOptions{Snapshot: snap})
	if err != nil {
		t.Fatalf("%s at %d: %v", q, snap, err)
	}
	var rows []string
	for _, r := range res.Rows {
		var vals []string
		for _, v := range r {
			vals = append(vals, deref(v))
		}
		rows = append(rows, strings.Join(vals, "|"))
	}
	return strings.Join(rows, "\n")
}

// unchanged fails unless the catalog still holds only snapshot 0.
func unchanged(t *testing.T, c *catalog.Catalog) {
	t.Helper()
	snaps, err := c.Snapshots()
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) != 1 {
		t.Errorf("a refused import left %d snapshots", len(snaps))
	}
}

const tSummary = `SELECT count(*), sum(id), min(s), max(s) FROM t`

// TestImportRelativeAndAbsolutePaths: files relative to their table, the
// table relative to its schema, the schema to data_path, and data_path
// relative to the catalog file, each resolved; then the same catalog with
// the table's path absolute.
func TestImportRelativeAndAbsolutePaths(t *testing.T) {
	s := newSmall(t, ducklake.ExportOptions{CopyFiles: true})
	want := answer(t, s.c, 2, tSummary)
	// Move the catalog and its copies elsewhere, with a relative data_path:
	// nothing may still point at the original files.
	moved := filepath.Join(t.TempDir(), "moved")
	if err := os.MkdirAll(moved, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(s.dest, filepath.Join(moved, "x.ducklake")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(s.dest+".files", filepath.Join(moved, "files")); err != nil {
		t.Fatal(err)
	}
	for _, f := range s.files {
		os.Remove(f)
	}
	s.dest = filepath.Join(moved, "x.ducklake")
	s.edit(t, `UPDATE ducklake_metadata SET value = 'files/' WHERE key = 'data_path'`)
	c, res, err := importInto(t, s.dest, ducklake.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := answer(t, c, 2, tSummary); got != want {
		t.Errorf("relative paths: %s, want %s", got, want)
	}
	if len(res.Snapshots) != 2 || res.Files != 2 {
		t.Errorf("result %+v", res)
	}
	r, _ := c.Read(catalog.Latest)
	tb, _ := r.Table("t")
	files, _ := r.Files(tb.ID)
	r.Close()
	for _, f := range files {
		if !strings.HasPrefix(f.Location(tb), filepath.Join(moved, "files", "main", "t")+"/") {
			t.Errorf("file registered at %s, not under the moved data path", f.Location(tb))
		}
	}

	// The table's path absolute (DuckLake's path_is_relative = false).
	s.edit(t, fmt.Sprintf(`UPDATE ducklake_table SET path = '%s/', path_is_relative = false`, filepath.Join(moved, "files", "main", "t")),
		`UPDATE ducklake_metadata SET value = '/nonexistent/' WHERE key = 'data_path'`)
	c, _, err = importInto(t, s.dest, ducklake.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := answer(t, c, 2, tSummary); got != want {
		t.Errorf("absolute table path: %s, want %s", got, want)
	}
}

// TestImportNameMapping: a name mapping that names the table's columns (in
// any ASCII case) and files without one (matched by field id, which for
// such files are the names) import; one that reads a column under another
// name is refused, naming both names.
func TestImportNameMapping(t *testing.T) {
	s := newSmall(t, ducklake.ExportOptions{})
	want := answer(t, s.c, 2, tSummary)
	s.edit(t, `UPDATE ducklake_name_mapping SET source_name = 'ID' WHERE source_name = 'id'`,
		`UPDATE ducklake_data_file SET mapping_id = NULL WHERE data_file_id = 1`)
	c, _, err := importInto(t, s.dest, ducklake.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := answer(t, c, 2, tSummary); got != want {
		t.Errorf("%s, want %s", got, want)
	}
	s.edit(t, `UPDATE ducklake_name_mapping SET source_name = 'other' WHERE source_name = 'ID'`)
	c, _, err = importInto(t, s.dest, ducklake.ImportOptions{})
	if !errors.Is(err, ducklake.ErrUnsupported) || !strings.Contains(err.Error(), `reads column "id" from the file's column "other"`) {
		t.Fatalf("a renaming name mapping: %v", err)
	}
	unchanged(t, c)
}

// TestImportInlinedRows: rows the extension kept in the catalog
// (ducklake_inlined_data_<table>_<version>) become a Parquet file of
// rocklake's at the snapshot that inserted them; a later flush into a data
// file retires it. Rows of one insert deleted apart are refused.
func TestImportInlinedRows(t *testing.T) {
	s := newSmall(t, ducklake.ExportOptions{})
	flushed := filepath.Join(filepath.Dir(s.dest), "flushed.parquet")
	db, _ := engine.Open("")
	if _, err := db.Exec(fmt.Sprintf(`COPY (SELECT 100 + i AS id, 'in' || i AS s FROM range(3) r(i)) TO '%s' (FORMAT parquet)`, flushed)); err != nil {
		t.Fatal(err)
	}
	db.Close()
	st, _ := os.Stat(flushed)
	s.edit(t,
		`INSERT INTO ducklake_snapshot VALUES (3, now(), 1, 2, 2), (4, now(), 1, 2, 3)`,
		`INSERT INTO ducklake_snapshot_changes VALUES (3, 'inlined_insert:1', NULL, NULL, NULL), (4, 'flushed_inlined:1', NULL, NULL, NULL)`,
		`CREATE TABLE ducklake_inlined_data_1_1(row_id BIGINT, begin_snapshot BIGINT, end_snapshot BIGINT, id BIGINT, s VARCHAR)`,
		`INSERT INTO ducklake_inlined_data_1_1 SELECT 20 + i, 3, 4, 100 + i, 'in' || i FROM range(3) r(i)`,
		`INSERT INTO ducklake_inlined_data_tables VALUES (1, 'ducklake_inlined_data_1_1', 1)`,
		fmt.Sprintf(`INSERT INTO ducklake_data_file VALUES (2, 1, 4, NULL, NULL, '%s', false, 'parquet', 3, %d, 0, 20, NULL, NULL, NULL, NULL)`, flushed, st.Size()),
	)
	c, res, err := importInto(t, s.dest, ducklake.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.InlinedFiles != 1 || len(res.Snapshots) != 4 {
		t.Errorf("result %+v", res)
	}
	for snap, want := range map[int64]string{2: "20|190|s0|s9", 3: "23|493|in0|s9", 4: "23|493|in0|s9"} {
		if got := answer(t, c, snap, tSummary); got != want {
			t.Errorf("snapshot %d: %s, want %s", snap, got, want)
		}
	}
	r, _ := c.Read(3)
	tb, _ := r.Table("t")
	files, _ := r.Files(tb.ID)
	r.Close()
	last := files[len(files)-1]
	if !strings.HasPrefix(filepath.Base(last.Path), "ducklake-inlined-") || last.Owner != catalog.OwnerRocklake || !c.WrittenByRocklake(last.Path) {
		t.Errorf("the inlined rows' file: %+v", last)
	}
	r, _ = c.Read(4)
	files, _ = r.Files(tb.ID)
	r.Close()
	if len(files) != 3 || files[2].Path != flushed {
		t.Errorf("after the flush: %+v", files)
	}

	// One of the rows deleted before the others: a row delete.
	s.edit(t, `UPDATE ducklake_inlined_data_1_1 SET end_snapshot = NULL WHERE row_id = 20`)
	c, _, err = importInto(t, s.dest, ducklake.ImportOptions{})
	if !errors.Is(err, ducklake.ErrUnsupported) || !strings.Contains(err.Error(), `table "t": some of the rows inlined at snapshot 3 were deleted`) {
		t.Fatalf("inlined rows deleted apart: %v", err)
	}
	unchanged(t, c)
}

// TestImportRefusals: what rocklake cannot hold is refused before anything
// is written, with an error naming it.
func TestImportRefusals(t *testing.T) {
	cases := []struct {
		name  string
		edit  []string
		is    error
		msg   string
		files func(s *small)
	}{
		{name: "missing delete file", is: ducklake.ErrUnsupported, msg: `main/t/del.parquet of data file`,
			edit: []string{`INSERT INTO ducklake_snapshot VALUES (3, now(), 1, 2, 3)`,
				`INSERT INTO ducklake_delete_file VALUES (2, 1, 3, NULL, 0, 'del.parquet', true, 'parquet', 1, 100, 10, NULL, NULL)`}},
		{name: "inlined delete", is: ducklake.ErrUnsupported, msg: `table "t" has rows deleted by position`,
			edit: []string{`CREATE TABLE ducklake_inlined_delete_1(file_id BIGINT, row_id BIGINT, begin_snapshot BIGINT)`,
				`INSERT INTO ducklake_inlined_delete_1 VALUES (0, 3, 2)`}},
		{name: "version 0.4", is: ducklake.ErrVersion, msg: "found version 0.4; rocklake reads DuckLake 1.0 only",
			edit: []string{`UPDATE ducklake_metadata SET value = '0.4' WHERE key = 'version'`}},
		{name: "version 0.3", is: ducklake.ErrVersion, msg: "found version 0.3;",
			edit: []string{`UPDATE ducklake_metadata SET value = '0.3' WHERE key = 'version'`}},
		{name: "version 0.1", is: ducklake.ErrVersion, msg: "found version 0.1;",
			edit: []string{`DROP TABLE ducklake_metadata`, `CREATE TABLE ducklake_metadata(key VARCHAR NOT NULL, value VARCHAR NOT NULL)`,
				`INSERT INTO ducklake_metadata VALUES ('version', '0.1')`}},
		{name: "unknown type", is: ducklake.ErrUnsupported, msg: `table "t" column "s" has type "varchar2", which is not a DuckLake 1.0 type`,
			edit: []string{`UPDATE ducklake_column SET column_type = 'varchar2' WHERE column_name = 's'`}},
		{name: "added column", is: ducklake.ErrUnsupported, msg: `table "t": column "n" was added (ALTER TABLE) at snapshot 2`,
			edit: []string{`INSERT INTO ducklake_column VALUES (3, 2, NULL, 1, 2, 'n', 'int32', NULL, NULL, true, NULL, 'literal', NULL)`}},
		{name: "other schema", is: ducklake.ErrUnsupported, msg: `table "t" is in schema "sales"`,
			edit: []string{`UPDATE ducklake_schema SET schema_name = 'sales'`}},
		{name: "partition column", is: ducklake.ErrUnsupported, msg: `column "s" comes from the file's partition path`,
			edit: []string{`UPDATE ducklake_name_mapping SET is_partition = true WHERE source_name = 's'`}},
		{name: "partial file", is: ducklake.ErrUnsupported, msg: `merges rows of snapshots up to 2 (partial_max) and is part of the table from snapshot 1`,
			edit: []string{`UPDATE ducklake_data_file SET partial_max = 2 WHERE data_file_id = 0`}},
		{name: "missing file", msg: "t1.parquet: file does not exist",
			files: func(s *small) { os.Remove(s.files[1]) }},
		{name: "not a ducklake", is: ducklake.ErrNotDuckLake, msg: "no table ducklake_metadata",
			edit: []string{`DROP TABLE ducklake_metadata`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newSmall(t, ducklake.ExportOptions{})
			s.edit(t, tc.edit...)
			if tc.files != nil {
				tc.files(s)
			}
			c, _, err := importInto(t, s.dest, ducklake.ImportOptions{})
			if err == nil || (tc.is != nil && !errors.Is(err, tc.is)) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got %v, want %v with %q", err, tc.is, tc.msg)
			}
			unchanged(t, c)
		})
	}
	c, _, err := importInto(t, filepath.Join(t.TempDir(), "none.ducklake"), ducklake.ImportOptions{})
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing catalog file: %v", err)
	}
	unchanged(t, c)
}

// TestImportPartialFileLatest: a merged file refused for history imports
// whole into the newest state, where all its rows are visible.
func TestImportPartialFileLatest(t *testing.T) {
	s := newSmall(t, ducklake.ExportOptions{})
	want := answer(t, s.c, 2, tSummary)
	s.edit(t, `UPDATE ducklake_data_file SET partial_max = 2 WHERE data_file_id = 0`)
	c, res, err := importInto(t, s.dest, ducklake.ImportOptions{Latest: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := answer(t, c, 1, tSummary); got != want || len(res.Snapshots) != 1 {
		t.Errorf("--latest: %s (%+v), want %s", got, res, want)
	}
}

// TestImportFillsWhatFootersLack: DuckDB writes no bounds for a float row
// group holding a NaN; bounds and a NaN flag the DuckLake catalog has for
// that file are taken (as inexact bounds), while bounds a footer has win
// over the catalog's.
func TestImportFillsWhatFootersLack(t *testing.T) {
	f := newFixture(t)
	dest, _ := export(t, f.c, ducklake.ExportOptions{})
	s := &small{dest: dest}
	s.edit(t, `UPDATE ducklake_file_column_stats SET min_value = '-1.5', max_value = '100', contains_nan = true
		WHERE data_file_id = 1 AND column_id = (SELECT column_id FROM ducklake_column WHERE table_id = 1 AND column_name = 'f')`,
		`UPDATE ducklake_file_column_stats SET min_value = '-999' WHERE data_file_id = 1
		AND column_id = (SELECT column_id FROM ducklake_column WHERE table_id = 1 AND column_name = 'id')`)
	c, _, err := importInto(t, dest, ducklake.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Read(catalog.Latest)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tb, _ := r.Table("ev")
	for col, want := range map[string]string{"f": "-1.5..100.0 exact=false nan=true", "id": "100..144 exact=true nan=false"} {
		cl, err := r.Column(tb.ID, col)
		if err != nil {
			t.Fatal(err)
		}
		codec, _ := types.CodecFor(cl.Type)
		var got string
		r.FileColumnStats(tb.ID, cl.ID, func(id int64, st *stats.Column) error {
			if id == 1 {
				lo, _ := codec.Decode(st.Min.V)
				hi, _ := codec.Decode(st.Max.V)
				got = fmt.Sprintf("%s..%s exact=%v nan=%v", codec.Format(lo), codec.Format(hi), st.MinIsExact, st.ContainsNaN.V)
			}
			return nil
		})
		if got != want {
			t.Errorf("file 1 column %s: %s, want %s", col, got, want)
		}
	}
}

// TestImportHonoursDataRoot: a catalog that takes files only from under
// its data root refuses an import of files elsewhere before any commit.
func TestImportHonoursDataRoot(t *testing.T) {
	s := newSmall(t, ducklake.ExportOptions{})
	root := t.TempDir()
	c, err := catalog.Create(filepath.Join(t.TempDir(), "lake"), catalog.Options{DataRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = ducklake.Import(context.Background(), c, s.dest, ducklake.ImportOptions{})
	if !errors.Is(err, catalog.ErrOutsideRoot) || !strings.Contains(err.Error(), "t0.parquet") {
		t.Fatalf("files outside the data root: %v", err)
	}
	unchanged(t, c)
}

// TestImportRefusesTakenNames: a table the import would create under a
// name the catalog uses, at any of its snapshots, is refused before the
// first commit.
func TestImportRefusesTakenNames(t *testing.T) {
	s := newSmall(t, ducklake.ExportOptions{})
	commit(t, s.c, func(tx *catalog.Txn) { tx.RenameTable("t", "later") })
	dest := filepath.Join(t.TempDir(), "x.ducklake")
	if _, err := ducklake.Export(context.Background(), s.c, dest, ducklake.ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	c, err := catalog.Create(filepath.Join(t.TempDir(), "lake"), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	commit(t, c, func(tx *catalog.Txn) { tx.CreateTable("later", []catalog.ColumnDef{{Name: "x", Type: "int32"}}) })
	_, err = ducklake.Import(context.Background(), c, dest, ducklake.ImportOptions{})
	if !errors.Is(err, catalog.ErrDuplicate) || !strings.Contains(err.Error(), `table "later"`) {
		t.Fatalf("a rename onto a taken name: %v", err)
	}
	if snaps, _ := c.Snapshots(); len(snaps) != 2 {
		t.Errorf("the refused import left %d snapshots, want 2", len(snaps))
	}
}

// TestImportRefusesATableTwice: importing into the catalog a table it
// already holds (the same uuid), though under another name, is refused.
func TestImportRefusesATableTwice(t *testing.T) {
	s := newSmall(t, ducklake.ExportOptions{})
	commit(t, s.c, func(tx *catalog.Txn) { tx.RenameTable("t", "renamed") })
	_, err := ducklake.Import(context.Background(), s.c, s.dest, ducklake.ImportOptions{Latest: true})
	if !errors.Is(err, catalog.ErrDuplicate) || !strings.Contains(err.Error(), `is table "renamed"'s in the catalog`) {
		t.Fatalf("the same table imported again: %v", err)
	}
	if snaps, _ := s.c.Snapshots(); len(snaps) != 4 {
		t.Errorf("%d snapshots after the refusal, want 4", len(snaps))
	}
}
