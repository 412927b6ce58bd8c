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
	"github.com/rocklake/rocklake/interop/ducklake"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

// specTables is DuckLake 1.0's catalog schema, typed out from the
// specification (duckdb/ducklake-web, docs/stable/specification/tables/*.md,
// one page per table), which agrees with the tables the ducklake extension
// creates (duckdb/ducklake, branch v1.5-variegata,
// src/storage/ducklake_metadata_manager.cpp, InitializeDuckLake). The
// extension inserts by position, so order and types are part of the format.
var specTables = map[string]string{
	"ducklake_metadata":                     "key VARCHAR, value VARCHAR, scope VARCHAR, scope_id BIGINT",
	"ducklake_snapshot":                     "snapshot_id BIGINT, snapshot_time TIMESTAMP WITH TIME ZONE, schema_version BIGINT, next_catalog_id BIGINT, next_file_id BIGINT",
	"ducklake_snapshot_changes":             "snapshot_id BIGINT, changes_made VARCHAR, author VARCHAR, commit_message VARCHAR, commit_extra_info VARCHAR",
	"ducklake_schema":                       "schema_id BIGINT, schema_uuid UUID, begin_snapshot BIGINT, end_snapshot BIGINT, schema_name VARCHAR, path VARCHAR, path_is_relative BOOLEAN",
	"ducklake_table":                        "table_id BIGINT, table_uuid UUID, begin_snapshot BIGINT, end_snapshot BIGINT, schema_id BIGINT, table_name VARCHAR, path VARCHAR, path_is_relative BOOLEAN",
	"ducklake_view":                         "view_id BIGINT, view_uuid UUID, begin_snapshot BIGINT, end_snapshot BIGINT, schema_id BIGINT, view_name VARCHAR, dialect VARCHAR, sql VARCHAR, column_aliases VARCHAR",
	"ducklake_tag":                          "object_id BIGINT, begin_snapshot BIGINT, end_snapshot BIGINT, key VARCHAR, value VARCHAR",
	"ducklake_column_tag":                   "table_id BIGINT, column_id BIGINT, begin_snapshot BIGINT, end_snapshot BIGINT, key VARCHAR, value VARCHAR",
	"ducklake_data_file":                    "data_file_id BIGINT, table_id BIGINT, begin_snapshot BIGINT, end_snapshot BIGINT, file_order BIGINT, path VARCHAR, path_is_relative BOOLEAN, file_format VARCHAR, record_count BIGINT, file_size_bytes BIGINT, footer_size BIGINT, row_id_start BIGINT, partition_id BIGINT, encryption_key VARCHAR, mapping_id BIGINT, partial_max BIGINT",
	"ducklake_file_column_stats":            "data_file_id BIGINT, table_id BIGINT, column_id BIGINT, column_size_bytes BIGINT, value_count BIGINT, null_count BIGINT, min_value VARCHAR, max_value VARCHAR, contains_nan BOOLEAN, extra_stats VARCHAR",
	"ducklake_file_variant_stats":           "data_file_id BIGINT, table_id BIGINT, column_id BIGINT, variant_path VARCHAR, shredded_type VARCHAR, column_size_bytes BIGINT, value_count BIGINT, null_count BIGINT, min_value VARCHAR, max_value VARCHAR, contains_nan BOOLEAN, extra_stats VARCHAR",
	"ducklake_delete_file":                  "delete_file_id BIGINT, table_id BIGINT, begin_snapshot BIGINT, end_snapshot BIGINT, data_file_id BIGINT, path VARCHAR, path_is_relative BOOLEAN, format VARCHAR, delete_count BIGINT, file_size_bytes BIGINT, footer_size BIGINT, encryption_key VARCHAR, partial_max BIGINT",
	"ducklake_column":                       "column_id BIGINT, begin_snapshot BIGINT, end_snapshot BIGINT, table_id BIGINT, column_order BIGINT, column_name VARCHAR, column_type VARCHAR, initial_default VARCHAR, default_value VARCHAR, nulls_allowed BOOLEAN, parent_column BIGINT, default_value_type VARCHAR, default_value_dialect VARCHAR",
	"ducklake_table_stats":                  "table_id BIGINT, record_count BIGINT, next_row_id BIGINT, file_size_bytes BIGINT",
	"ducklake_table_column_stats":           "table_id BIGINT, column_id BIGINT, contains_null BOOLEAN, contains_nan BOOLEAN, min_value VARCHAR, max_value VARCHAR, extra_stats VARCHAR",
	"ducklake_partition_info":               "partition_id BIGINT, table_id BIGINT, begin_snapshot BIGINT, end_snapshot BIGINT",
	"ducklake_partition_column":             "partition_id BIGINT, table_id BIGINT, partition_key_index BIGINT, column_id BIGINT, transform VARCHAR",
	"ducklake_file_partition_value":         "data_file_id BIGINT, table_id BIGINT, partition_key_index BIGINT, partition_value VARCHAR",
	"ducklake_files_scheduled_for_deletion": "data_file_id BIGINT, path VARCHAR, path_is_relative BOOLEAN, schedule_start TIMESTAMP WITH TIME ZONE",
	"ducklake_inlined_data_tables":          "table_id BIGINT, table_name VARCHAR, schema_version BIGINT",
	"ducklake_column_mapping":               "mapping_id BIGINT, table_id BIGINT, type VARCHAR",
	"ducklake_name_mapping":                 "mapping_id BIGINT, column_id BIGINT, source_name VARCHAR, target_field_id BIGINT, parent_column BIGINT, is_partition BOOLEAN",
	"ducklake_schema_versions":              "begin_snapshot BIGINT, schema_version BIGINT, table_id BIGINT",
	"ducklake_macro":                        "schema_id BIGINT, macro_id BIGINT, macro_name VARCHAR, begin_snapshot BIGINT, end_snapshot BIGINT",
	"ducklake_macro_impl":                   "macro_id BIGINT, impl_id BIGINT, dialect VARCHAR, sql VARCHAR, type VARCHAR",
	"ducklake_macro_parameters":             "macro_id BIGINT, impl_id BIGINT, column_id BIGINT, parameter_name VARCHAR, parameter_type VARCHAR, default_value VARCHAR, default_value_type VARCHAR",
	"ducklake_sort_info":                    "sort_id BIGINT, table_id BIGINT, begin_snapshot BIGINT, end_snapshot BIGINT",
	"ducklake_sort_expression":              "sort_id BIGINT, table_id BIGINT, sort_key_index BIGINT, expression VARCHAR, dialect VARCHAR, sort_direction VARCHAR, null_order VARCHAR",
}

func export(t *testing.T, c *catalog.Catalog, opts ducklake.ExportOptions) (string, ducklake.ExportResult) {
	t.Helper()
	dest := filepath.Join(t.TempDir(), "lake.ducklake")
	res, err := ducklake.Export(context.Background(), c, dest, opts)
	if err != nil {
		t.Fatal(err)
	}
	return dest, res
}

// TestExportMatchesSpecification: the exported database holds exactly the
// 28 tables of DuckLake 1.0, each with the specification's columns in its
// order and types, and nothing else.
func TestExportMatchesSpecification(t *testing.T) {
	f := newFixture(t)
	dest, _ := export(t, f.c, ducklake.ExportOptions{})
	db := openDuck(t, dest)
	got := map[string][]string{}
	for _, r := range queryStrings(t, db, `SELECT table_name, column_name, data_type FROM information_schema.columns ORDER BY table_name, ordinal_position`) {
		got[r[0]] = append(got[r[0]], r[1]+" "+r[2])
	}
	if len(specTables) != 28 {
		t.Fatalf("the specification lists 28 tables, this test %d", len(specTables))
	}
	for name, want := range specTables {
		if g := strings.Join(got[name], ", "); g != want {
			t.Errorf("%s:\n got  %s\n want %s", name, g, want)
		}
	}
	for name := range got {
		if _, ok := specTables[name]; !ok {
			t.Errorf("table %s is not in the specification", name)
		}
	}
	meta := join(queryStrings(t, db, `SELECT key, value FROM ducklake_metadata WHERE key IN ('version', 'data_path') ORDER BY key`))
	if want := fmt.Sprintf("data_path|%s.files/\nversion|1.0\n", dest); meta != want {
		t.Errorf("ducklake_metadata:\n%s\nwant\n%s", meta, want)
	}
	// The extension reads ids by position from these counters: a table id
	// must be below next_catalog_id of every snapshot that shows it.
	bad := queryStrings(t, db, `SELECT t.table_id, s.snapshot_id FROM ducklake_table t JOIN ducklake_snapshot s
		ON s.snapshot_id >= t.begin_snapshot AND (t.end_snapshot IS NULL OR s.snapshot_id < t.end_snapshot)
		WHERE t.table_id >= s.next_catalog_id`)
	if len(bad) > 0 {
		t.Errorf("table ids at or above next_catalog_id: %v", bad)
	}
	bad = queryStrings(t, db, `SELECT f.data_file_id, s.snapshot_id FROM ducklake_data_file f JOIN ducklake_snapshot s ON s.snapshot_id >= f.begin_snapshot
		AND (f.end_snapshot IS NULL OR s.snapshot_id < f.end_snapshot) WHERE f.data_file_id >= s.next_file_id OR f.mapping_id >= s.next_file_id`)
	if len(bad) > 0 {
		t.Errorf("file or mapping ids at or above next_file_id: %v", bad)
	}
}

// TestExportedContents pins what the export writes for the fixture: the
// snapshot changes in DuckLake's words, text statistics (booleans 0/1,
// blobs hex, timestamptz at +00, no bounds for int128 or interval, NaN in
// contains_nan only), nested columns as child rows, and the name mapping.
func TestExportedContents(t *testing.T) {
	f := newFixture(t)
	dest, res := export(t, f.c, ducklake.ExportOptions{})
	if res.Snapshots != 9 || res.Tables != 3 || res.Files != 6 {
		t.Errorf("result %+v, want 9 snapshots, 3 tables, 6 files", res)
	}
	left := strings.Join(res.LeftBehind, "\n")
	if !strings.Contains(left, `min/max of table "ev" columns iv (interval)`) || !strings.Contains(left, "row-group statistics") {
		t.Errorf("left behind:\n%s", left)
	}
	db := openDuck(t, dest)
	changes := join(queryStrings(t, db, `SELECT snapshot_id, changes_made FROM ducklake_snapshot_changes ORDER BY 1`))
	want := `0|created_schema:"main"
1|created_table:"main"."events",inserted_into_table:1
2|inserted_into_table:1
3|created_table:"main"."nested",inserted_into_table:2
4|altered_table:1
5|deleted_from_table:1
6|dropped_table:2
7|inserted_into_table:1
8|created_table:"main"."variants",inserted_into_table:3
`
	if changes != want {
		t.Errorf("snapshot changes:\n%s\nwant\n%s", changes, want)
	}
	tables := join(queryStrings(t, db, `SELECT table_id, begin_snapshot, end_snapshot, table_name, path, path_is_relative FROM ducklake_table ORDER BY 1, 2`))
	if want := "1|1|4|events|events/|true\n1|4|NULL|ev|events/|true\n2|3|6|nested|nested/|true\n3|8|NULL|variants|variants/|true\n"; tables != want {
		t.Errorf("tables:\n%s\nwant\n%s", tables, want)
	}
	// value_count counts NULLs too, as the extension reads it: d has 45
	// values of which 5 NULL, not 40 (null_count = value_count would say
	// "only NULLs" and let DuckLake skip the file for d = 1.5).
	if vc := join(queryStrings(t, db, `SELECT s.value_count, s.null_count FROM ducklake_file_column_stats s JOIN ducklake_column c
		ON c.table_id = s.table_id AND c.column_id = s.column_id WHERE s.data_file_id = 1 AND c.column_name = 'd'`)); vc != "45|5\n" {
		t.Errorf("value_count|null_count of d: %s, want 45|5", vc)
	}
	stats := join(queryStrings(t, db, `SELECT c.column_name, s.min_value, s.max_value, s.null_count, s.contains_nan
		FROM ducklake_file_column_stats s JOIN ducklake_column c ON c.table_id = s.table_id AND c.column_id = s.column_id
		WHERE s.data_file_id = 1 AND c.parent_column IS NULL ORDER BY c.column_order`))
	wantStats := `id|100|144|0|false
i8|-50|-6|0|false
u32|0|308|0|false
h|NULL|NULL|0|NULL
f|NULL|NULL|0|NULL
d|1.5|66.0|5|false
dec|0.00|55.00|0|false
dt|2024-04-10|2024-05-24|0|false
ts|2024-01-01 00:00:00|2024-01-01 00:44:44|0|false
tstz|2024-01-05 04:00:00+00|2024-01-07 00:00:00+00|0|false
b|0|1|0|false
s|name 100|name 144|0|false
bl|626C6F6230|626C6F6239|0|false
u|00000000-0000-4000-8000-000000000100|00000000-0000-4000-8000-000000000144|0|false
iv|NULL|NULL|NULL|false
`
	if stats != wantStats {
		t.Errorf("file 1 stats:\n%s\nwant\n%s", stats, wantStats)
	}
	cols := join(queryStrings(t, db, `SELECT c.column_id, c.column_name, c.column_type, c.parent_column FROM ducklake_column c WHERE table_id = 2 ORDER BY column_id`))
	if want := "1|id|int64|NULL\n2|deep|list|NULL\n3|element|struct|2\n4|x|int64|3\n5|y|list|3\n6|element|varchar|5\n"; cols != want {
		t.Errorf("nested columns:\n%s\nwant\n%s", cols, want)
	}
	mapping := join(queryStrings(t, db, `SELECT m.mapping_id, m.type, n.column_id, n.source_name, n.target_field_id, n.parent_column
		FROM ducklake_column_mapping m JOIN ducklake_name_mapping n USING (mapping_id) WHERE m.table_id = 2 ORDER BY n.column_id`))
	if want := "3|map_by_name|1|id|1|NULL\n3|map_by_name|2|deep|2|NULL\n3|map_by_name|3|list|3|2\n3|map_by_name|4|x|4|3\n3|map_by_name|5|y|5|3\n3|map_by_name|6|list|6|5\n"; mapping != want {
		t.Errorf("name mapping:\n%s\nwant\n%s", mapping, want)
	}
	// The extension hands footer_size and file_size_bytes to DuckDB's
	// Parquet reader: they must be what DuckDB itself measures.
	for _, r := range queryStrings(t, db, `SELECT path, footer_size, file_size_bytes, record_count FROM ducklake_data_file`) {
		m := queryStrings(t, db, `SELECT footer_size, file_size_bytes, num_rows FROM parquet_file_metadata(?)`, r[0])
		if got, want := strings.Join(r[1:], "|"), strings.Join(m[0], "|"); got != want {
			t.Errorf("%s: footer_size|file_size_bytes|record_count %s, DuckDB measures %s", r[0], got, want)
		}
	}
	files := queryStrings(t, db, `SELECT count(*) FROM ducklake_data_file WHERE mapping_id IS NULL OR path_is_relative`)
	if files[0][0] != "0" {
		t.Errorf("%s files without a mapping or with relative paths", files[0][0])
	}
	variants := join(queryStrings(t, db, `SELECT variant_path, shredded_type, value_count, min_value, max_value FROM ducklake_file_variant_stats ORDER BY 1`))
	if want := "\"a\"|int64|20|0|19\n\"b\"|varchar|20|v0|v9\n"; variants != want { // no NULLs: 20 either way
		t.Errorf("variant stats:\n%s\nwant\n%s", variants, want)
	}
	extras := queryStrings(t, db, `SELECT (SELECT extra_stats FROM ducklake_file_column_stats WHERE table_id = 3 AND column_id = 2),
		(SELECT extra_stats FROM ducklake_table_column_stats WHERE table_id = 3 AND column_id = 2)`)
	for _, e := range extras[0] {
		if !strings.Contains(e, `{"field_name":"\"a\"","shredded_type":"int64","null_count":0,"min":"0","max":"19","num_values":20,`) {
			t.Errorf("variant extra_stats: %s", e)
		}
	}
}

// duckLakeFiles lists the data files of a table visible at a snapshot of
// an exported catalog, resolving relative paths through table, schema and
// data_path as the specification says.
const duckLakeFiles = `SELECT CASE WHEN f.path_is_relative THEN
		(CASE WHEN t.path_is_relative THEN
			(CASE WHEN s.path_is_relative THEN m.value || s.path ELSE s.path END) || t.path ELSE t.path END) || f.path
		ELSE f.path END
	FROM ducklake_data_file f
	JOIN ducklake_table t ON t.table_id = f.table_id AND t.begin_snapshot <= $1 AND (t.end_snapshot IS NULL OR t.end_snapshot > $1)
	JOIN ducklake_schema s ON s.schema_id = t.schema_id
	JOIN ducklake_metadata m ON m.key = 'data_path'
	WHERE t.table_name = $2 AND f.begin_snapshot <= $1 AND (f.end_snapshot IS NULL OR f.end_snapshot > $1)
	ORDER BY f.data_file_id`

// TestDuckDBOverExportAnswersAsRocklake: at every snapshot, queries over
// the files the exported catalog lists (read with plain DuckDB: the
// ducklake extension cannot be installed here) give rocklake's answers,
// with files referenced in place and copied under the data path.
func TestDuckDBOverExportAnswersAsRocklake(t *testing.T) {
	f := newFixture(t)
	e, err := engine.New(f.c)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	snaps, err := f.c.Snapshots()
	if err != nil {
		t.Fatal(err)
	}
	for _, opts := range []ducklake.ExportOptions{{}, {CopyFiles: true}, {FromSnapshot: 5}} {
		dest, _ := export(t, f.c, opts)
		db := openDuck(t, dest)
		if first := queryStrings(t, db, `SELECT min(snapshot_id) FROM ducklake_snapshot`)[0][0]; first != fmt.Sprint(opts.FromSnapshot) {
			t.Errorf("%+v: first snapshot %s", opts, first)
		}
		for _, s := range snaps {
			if s.ID < opts.FromSnapshot {
				continue
			}
			r, err := f.c.Read(s.ID)
			if err != nil {
				t.Fatal(err)
			}
			tables, _ := r.Tables()
			r.Close()
			for _, tb := range tables {
				lists := queryStrings(t, db, duckLakeFiles, s.ID, tb.Name)
				queries := []string{
					`SELECT count(*), CAST(sum(hash(COLUMNS(*))) AS VARCHAR) FROM %s`,
					`SELECT count(*), CAST(sum(hash(COLUMNS(*))) AS VARCHAR) FROM %s WHERE id >= 120 AND id < 330`,
				}
				for _, q := range queries {
					res, err := e.Query(context.Background(), fmt.Sprintf(q, quote(tb.Name)), engine.QueryOptions{Snapshot: s.ID})
					if err != nil {
						t.Fatalf("rocklake at %d: %v", s.ID, err)
					}
					var got []string
					for _, v := range res.Rows[0] {
						got = append(got, deref(v))
					}
					if len(lists) == 0 {
						t.Fatalf("snapshot %d table %s: no files listed in the export", s.ID, tb.Name)
					}
					var paths []string
					for _, l := range lists {
						paths = append(paths, "'"+strings.ReplaceAll(l[0], "'", "''")+"'")
					}
					src := "read_parquet([" + strings.Join(paths, ", ") + "])"
					duck := queryStrings(t, db, fmt.Sprintf(q, src))
					if strings.Join(got, "|") != strings.Join(duck[0], "|") {
						t.Errorf("%+v snapshot %d %s: rocklake %v, DuckDB over the export %v", opts, s.ID, fmt.Sprintf(q, tb.Name), got, duck[0])
					}
				}
			}
		}
	}
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func deref(p *string) string {
	if p == nil {
		return "NULL"
	}
	return *p
}

// TestExportFromSnapshotImports: an export that starts at a later snapshot
// (as after DuckLake expired the earlier ones) imports as its first
// snapshot's state in one commit, then one commit per later snapshot,
// answering as the original did.
func TestExportFromSnapshotImports(t *testing.T) {
	f := newFixture(t)
	dest, _ := export(t, f.c, ducklake.ExportOptions{FromSnapshot: 5})
	c, err := catalog.Create(filepath.Join(t.TempDir(), "lake"), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := ducklake.Import(context.Background(), c, dest, ducklake.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(res.Snapshots) != "[{5 1} {6 2} {7 3} {8 4}]" {
		t.Fatalf("snapshots %v", res.Snapshots)
	}
	for _, p := range res.Snapshots {
		r, _ := c.Read(p.Rocklake)
		tables, _ := r.Tables()
		r.Close()
		for _, tb := range tables {
			q := fmt.Sprintf(`SELECT count(*), CAST(sum(hash(COLUMNS(*))) AS VARCHAR) FROM %s`, quote(tb.Name))
			if want, got := answer(t, f.c, p.DuckLake, q), answer(t, c, p.Rocklake, q); got != want {
				t.Errorf("snapshot %d (%d): %s %s, want %s", p.Rocklake, p.DuckLake, tb.Name, got, want)
			}
		}
	}
	if _, err := ducklake.Export(context.Background(), f.c, filepath.Join(t.TempDir(), "x"), ducklake.ExportOptions{FromSnapshot: 99}); !errors.Is(err, catalog.ErrNoSuchSnapshot) {
		t.Errorf("export from a snapshot that does not exist: %v", err)
	}
}

// TestExportLeavesOutWhatDuckLakeCannotHold: a table with an ENUM or a
// fixed-size ARRAY column, or a Hive partition column, is left out, named in the result, and absent
// from every row of the export; a failed export (a data file to copy is
// gone) leaves nothing at the destination, nor copies beside it.
func TestExportLeavesOutWhatDuckLakeCannotHold(t *testing.T) {
	s := newSmall(t, ducklake.ExportOptions{})
	commit(t, s.c, func(tx *catalog.Txn) {
		tx.CreateTable("moods", []catalog.ColumnDef{{Name: "m", Type: "enum('sad', 'happy')"}})
		tx.CreateTable("vecs", []catalog.ColumnDef{{Name: "v", Type: "float32[3]"}})
		tx.CreateTable("parts", []catalog.ColumnDef{{Name: "x", Type: "int64"}, {Name: "k", Type: "int64", Partition: catalog.PartitionHive}})
	})
	commit(t, s.c, func(tx *catalog.Txn) { tx.CreateTable("grown", []catalog.ColumnDef{{Name: "x", Type: "int64"}}) })
	commit(t, s.c, func(tx *catalog.Txn) {
		tx.AlterTable("grown", catalog.Alteration{Kind: catalog.AddColumn, Column: "y", Type: "int64"})
	})
	dest, res := export(t, s.c, ducklake.ExportOptions{})
	left := strings.Join(res.LeftBehind, "\n")
	for _, want := range []string{`table "moods" (id 2) left out: column "m" is ENUM`, `table "vecs" (id 3) left out: column "v" is fixed-size ARRAY`,
		`table "parts" (id 4) left out: column "k" is a partition column`, `table "grown" (id 5) left out: its columns were altered`} {
		if !strings.Contains(left, want) {
			t.Errorf("left behind:\n%s\nwant %s", left, want)
		}
	}
	db := openDuck(t, dest)
	if got := join(queryStrings(t, db, `SELECT DISTINCT table_id FROM ducklake_column ORDER BY 1`)); got != "1\n" {
		t.Errorf("columns of tables %s exported", got)
	}
	if got := join(queryStrings(t, db, `SELECT changes_made FROM ducklake_snapshot_changes WHERE snapshot_id = 3`)); got != "\n" {
		t.Errorf("snapshot 3 changes %q, want none of the tables left out", got)
	}

	if err := os.Remove(s.files[1]); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	dest = filepath.Join(dir, "broken.ducklake")
	_, err := ducklake.Export(context.Background(), s.c, dest, ducklake.ExportOptions{CopyFiles: true})
	if err == nil || !strings.Contains(err.Error(), "t1.parquet") {
		t.Fatalf("export with a data file gone: %v", err)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) > 0 {
		t.Errorf("a failed export left %v (%v)", entries, err)
	}
	if _, err := ducklake.Export(context.Background(), s.c, filepath.Join(dir, "x"), ducklake.ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := ducklake.Export(context.Background(), s.c, filepath.Join(dir, "x"), ducklake.ExportOptions{}); !errors.Is(err, ducklake.ErrExists) {
		t.Errorf("an export onto an existing file: %v", err)
	}
}

// TestExportedBoundsReadAsDuckDBValues: the extension casts min_value and
// max_value to the column's type to prune; every exported bound must cast
// (DuckDB's TRY_CAST) to a value that bounds the data the same way rocklake
// stored it: min <= max, and the text read back is the text written.
func TestExportedBoundsReadAsDuckDBValues(t *testing.T) {
	f := newFixture(t)
	dest, _ := export(t, f.c, ducklake.ExportOptions{})
	db := openDuck(t, dest)
	rows := queryStrings(t, db, `SELECT c.column_type, s.min_value, s.max_value FROM ducklake_file_column_stats s
		JOIN ducklake_column c ON c.table_id = s.table_id AND c.column_id = s.column_id
		WHERE s.min_value IS NOT NULL UNION ALL
		SELECT c.column_type, s.min_value, s.max_value FROM ducklake_table_column_stats s
		JOIN ducklake_column c ON c.table_id = s.table_id AND c.column_id = s.column_id WHERE s.min_value IS NOT NULL`)
	if len(rows) < 20 {
		t.Fatalf("only %d bounds exported", len(rows))
	}
	for _, r := range rows {
		typ, err := types.ParseType(r[0])
		if err != nil {
			t.Fatal(err)
		}
		if typ.Kind == types.KindBlob {
			continue // hex by the specification; the extension does not prune on blobs
		}
		name := types.DuckDBName(typ)
		got := queryStrings(t, db, fmt.Sprintf(`SELECT TRY_CAST(?::VARCHAR AS %[1]s) <= TRY_CAST(?::VARCHAR AS %[1]s),
			CAST(TRY_CAST(?::VARCHAR AS %[1]s) AS VARCHAR)`, name), r[1], r[2], r[1])
		want := r[1]
		if typ.Kind == types.KindBoolean {
			want = map[string]string{"0": "false", "1": "true"}[r[1]]
		}
		if got[0][0] != "true" || strings.TrimSuffix(got[0][1], "+00") != strings.TrimSuffix(want, "+00") {
			t.Errorf("%s bounds %q..%q read by DuckDB as %v", r[0], r[1], r[2], got[0])
		}
	}
}

// TestExportTruncatedTextBounds: a string bound a writer cut inside a
// UTF-8 character (bytes DuckDB's VARCHAR cannot hold) exports as its
// valid prefix when it is a minimum, which still bounds from below, and
// not at all when it is a maximum.
func TestExportTruncatedTextBounds(t *testing.T) {
	c, err := catalog.Create(filepath.Join(t.TempDir(), "lake"), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	commit(t, c, func(tx *catalog.Txn) {
		tx.CreateTable("t", []catalog.ColumnDef{{Name: "s", Type: "varchar"}})
		tx.AddFiles("t", catalog.NewFile{Path: "/nowhere/f.parquet", RecordCount: 2, RowGroupCount: 1, Columns: []catalog.FileColumn{{
			Path: []string{"s"}, Stats: stats.Column{RowCount: 2, Min: stats.Known([]byte("ab\xc3")), Max: stats.Known([]byte("z\xc3")),
				NullCount: stats.Known[int64](0), ValueCount: stats.Known[int64](2)},
		}}})
	})
	dest, _ := export(t, c, ducklake.ExportOptions{})
	got := join(queryStrings(t, openDuck(t, dest), `SELECT min_value, max_value FROM ducklake_file_column_stats`))
	if got != "ab|NULL\n" {
		t.Errorf("bounds %q, want ab|NULL", got)
	}
}
