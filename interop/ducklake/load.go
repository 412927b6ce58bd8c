package ducklake

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// The rows of a DuckLake catalog rocklake reads, as the specification
// names them. An end snapshot that is not set is end.Valid == false.

type dlSnapshot struct {
	id, schemaVersion, nextCatalogID, nextFileID int64
	time                                         string
	changes                                      string
}

type dlSchema struct {
	id         int64
	begin      int64
	end        sql.NullInt64
	name, path string
	relative   bool
}

type dlTable struct {
	id, begin, schemaID int64
	end                 sql.NullInt64
	uuid, name, path    string
	relative            bool
}

type dlColumn struct {
	id, begin, tableID, order int64
	end, parent               sql.NullInt64
	name, typ                 string
	nullsAllowed              bool
	initialDefault, dflt      sql.NullString
}

type dlFile struct {
	id, tableID, begin           int64
	end, mappingID, partitionID  sql.NullInt64
	order, partialMax            sql.NullInt64
	path, format                 string
	relative                     bool
	records, size, footer, rowID int64
	encryption                   sql.NullString
	// inlined names the inlined rows this file materialises ("" for a
	// data file of the catalog's own).
	inlined string
}

// dlDelete is a row of ducklake_delete_file: the positions of a data
// file's rows deleted, in a file of their own.
type dlDelete struct {
	id, tableID, begin, dataFileID int64
	end, count, size               sql.NullInt64
	path, format                   string
	relative                       bool
	encryption                     sql.NullString
}

type dlStats struct {
	fileID, tableID, columnID int64
	size, values, nulls       sql.NullInt64
	min, max, extra           sql.NullString
	nan                       sql.NullBool
}

type dlNameMap struct {
	mappingID, columnID, targetFieldID int64
	parent                             sql.NullInt64
	source                             string
	partition                          bool
}

type lake struct {
	version   string
	dataPath  string
	snapshots []dlSnapshot
	schemas   []dlSchema
	tables    []dlTable
	columns   []dlColumn
	files     []dlFile
	stats     map[int64][]dlStats // by file
	mapType   map[int64]string    // mapping id -> type
	nameMaps  map[int64][]dlNameMap
	deletes   []dlDelete
	// inlinedDeletes counts, by table id, the rows deleted in
	// ducklake_inlined_delete_<table> (positions kept in the catalog).
	inlinedDeletes map[int64]int
	inlined        []inlinedTable
	// notes are what the catalog holds that rocklake leaves behind.
	notes []string
}

type inlinedTable struct {
	tableID, schemaVersion int64
	name                   string
}

// load reads a DuckLake catalog's metadata, refusing versions other than
// 1.0 before reading anything else.
func load(ctx context.Context, s *source) (*lake, error) {
	l := &lake{stats: map[int64][]dlStats{}, mapType: map[int64]string{}, nameMaps: map[int64][]dlNameMap{}, inlinedDeletes: map[int64]int{}}
	have, err := s.tableNames(ctx, "ducklake_metadata")
	if err != nil {
		return nil, err
	}
	if len(have) == 0 || have[0] != "ducklake_metadata" {
		return nil, fmt.Errorf("%s: %w (no table ducklake_metadata)", s.loc, ErrNotDuckLake)
	}
	err = s.query(ctx, `SELECT key, value FROM ducklake_metadata WHERE scope IS NULL`, func(scan func(...any) error) error {
		var k, v string
		if err := scan(&k, &v); err != nil {
			return err
		}
		switch k {
		case "version":
			l.version = v
		case "data_path":
			l.dataPath = v
		case "encrypted":
			if v == "true" {
				l.notes = append(l.notes, "the catalog is marked encrypted")
			}
		}
		return nil
	})
	if err != nil {
		// DuckLake 0.1 had no scope column.
		if err2 := s.query(ctx, `SELECT value FROM ducklake_metadata WHERE key = 'version'`, func(scan func(...any) error) error {
			return scan(&l.version)
		}); err2 != nil {
			return nil, fmt.Errorf("%s: ducklake_metadata: %w", s.loc, err)
		}
	}
	if l.version != Version {
		found := l.version
		if found == "" {
			found = "none recorded"
		}
		return nil, fmt.Errorf("%s: %w: found version %s; rocklake reads DuckLake %s only (attach the catalog once with DuckDB 1.5's ducklake extension, which migrates it to %s)",
			s.loc, ErrVersion, found, Version, Version)
	}
	// Everything below is read as of one moment.
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	if have, err = s.tableNames(ctx, "ducklake_"); err != nil {
		return nil, err
	}
	present := map[string]bool{}
	for _, n := range have {
		present[n] = true
	}
	for _, t := range []string{"ducklake_snapshot", "ducklake_snapshot_changes", "ducklake_schema", "ducklake_table", "ducklake_column",
		"ducklake_data_file", "ducklake_file_column_stats", "ducklake_delete_file", "ducklake_column_mapping", "ducklake_name_mapping",
		"ducklake_inlined_data_tables"} {
		if !present[t] {
			return nil, fmt.Errorf("%s: %w: DuckLake %s table %s is missing", s.loc, ErrNotDuckLake, Version, t)
		}
	}
	q := func(sql string, fn func(scan func(...any) error) error) {
		if err != nil {
			return
		}
		if e := s.query(ctx, sql, fn); e != nil {
			err = fmt.Errorf("%s: reading %s: %w", s.loc, strings.Fields(sql)[len(strings.Fields(sql))-1], e)
		}
	}
	q(`SELECT s.snapshot_id, CAST(s.snapshot_time AS VARCHAR), s.schema_version, s.next_catalog_id, s.next_file_id, COALESCE(c.changes_made, '')
		FROM ducklake_snapshot s LEFT JOIN ducklake_snapshot_changes c USING (snapshot_id) ORDER BY s.snapshot_id`, func(scan func(...any) error) error {
		var x dlSnapshot
		var t sql.NullString
		if err := scan(&x.id, &t, &x.schemaVersion, &x.nextCatalogID, &x.nextFileID, &x.changes); err != nil {
			return err
		}
		x.time = t.String
		l.snapshots = append(l.snapshots, x)
		return nil
	})
	q(`SELECT schema_id, begin_snapshot, end_snapshot, schema_name, COALESCE(path, ''), COALESCE(path_is_relative, true) FROM ducklake_schema ORDER BY schema_id, begin_snapshot`, func(scan func(...any) error) error {
		var x dlSchema
		if err := scan(&x.id, &x.begin, &x.end, &x.name, &x.path, &x.relative); err != nil {
			return err
		}
		l.schemas = append(l.schemas, x)
		return nil
	})
	q(`SELECT table_id, CAST(table_uuid AS VARCHAR), begin_snapshot, end_snapshot, schema_id, table_name, COALESCE(path, ''), COALESCE(path_is_relative, true) FROM ducklake_table ORDER BY table_id, begin_snapshot`, func(scan func(...any) error) error {
		var x dlTable
		if err := scan(&x.id, &x.uuid, &x.begin, &x.end, &x.schemaID, &x.name, &x.path, &x.relative); err != nil {
			return err
		}
		l.tables = append(l.tables, x)
		return nil
	})
	q(`SELECT column_id, begin_snapshot, end_snapshot, table_id, column_order, column_name, column_type, initial_default, default_value, COALESCE(nulls_allowed, true), parent_column
		FROM ducklake_column ORDER BY table_id, begin_snapshot, column_order`, func(scan func(...any) error) error {
		var x dlColumn
		if err := scan(&x.id, &x.begin, &x.end, &x.tableID, &x.order, &x.name, &x.typ, &x.initialDefault, &x.dflt, &x.nullsAllowed, &x.parent); err != nil {
			return err
		}
		l.columns = append(l.columns, x)
		return nil
	})
	q(`SELECT data_file_id, table_id, begin_snapshot, end_snapshot, file_order, path, COALESCE(path_is_relative, true), COALESCE(file_format, 'parquet'),
		record_count, COALESCE(file_size_bytes, 0), COALESCE(footer_size, 0), COALESCE(row_id_start, 0), partition_id, encryption_key, mapping_id,
		partial_max FROM ducklake_data_file ORDER BY begin_snapshot, table_id, file_order NULLS LAST, data_file_id`, func(scan func(...any) error) error {
		var x dlFile
		if err := scan(&x.id, &x.tableID, &x.begin, &x.end, &x.order, &x.path, &x.relative, &x.format, &x.records, &x.size, &x.footer, &x.rowID,
			&x.partitionID, &x.encryption, &x.mappingID, &x.partialMax); err != nil {
			return err
		}
		l.files = append(l.files, x)
		return nil
	})
	q(`SELECT data_file_id, table_id, column_id, column_size_bytes, value_count, null_count, min_value, max_value, contains_nan, extra_stats FROM ducklake_file_column_stats`, func(scan func(...any) error) error {
		var x dlStats
		if err := scan(&x.fileID, &x.tableID, &x.columnID, &x.size, &x.values, &x.nulls, &x.min, &x.max, &x.nan, &x.extra); err != nil {
			return err
		}
		l.stats[x.fileID] = append(l.stats[x.fileID], x)
		return nil
	})
	q(`SELECT delete_file_id, table_id, begin_snapshot, end_snapshot, data_file_id, path, COALESCE(path_is_relative, true), COALESCE(format, 'parquet'),
		delete_count, encryption_key, file_size_bytes FROM ducklake_delete_file ORDER BY delete_file_id`, func(scan func(...any) error) error {
		var x dlDelete
		if err := scan(&x.id, &x.tableID, &x.begin, &x.end, &x.dataFileID, &x.path, &x.relative, &x.format, &x.count, &x.encryption, &x.size); err != nil {
			return err
		}
		l.deletes = append(l.deletes, x)
		return nil
	})
	q(`SELECT mapping_id, type FROM ducklake_column_mapping`, func(scan func(...any) error) error {
		var id int64
		var typ string
		if err := scan(&id, &typ); err != nil {
			return err
		}
		l.mapType[id] = typ
		return nil
	})
	q(`SELECT mapping_id, column_id, source_name, target_field_id, parent_column, COALESCE(is_partition, false) FROM ducklake_name_mapping ORDER BY mapping_id, column_id`, func(scan func(...any) error) error {
		var x dlNameMap
		if err := scan(&x.mappingID, &x.columnID, &x.source, &x.targetFieldID, &x.parent, &x.partition); err != nil {
			return err
		}
		l.nameMaps[x.mappingID] = append(l.nameMaps[x.mappingID], x)
		return nil
	})
	q(`SELECT table_id, table_name, schema_version FROM ducklake_inlined_data_tables ORDER BY table_id, schema_version`, func(scan func(...any) error) error {
		var x inlinedTable
		if err := scan(&x.tableID, &x.name, &x.schemaVersion); err != nil {
			return err
		}
		l.inlined = append(l.inlined, x)
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Inlined deletions are positional deletes kept in the catalog.
	for _, n := range have {
		if !strings.HasPrefix(n, "ducklake_inlined_delete_") {
			continue
		}
		var tid, cnt int64
		if _, e := fmt.Sscanf(strings.TrimPrefix(n, "ducklake_inlined_delete_"), "%d", &tid); e != nil {
			continue
		}
		if e := s.query(ctx, `SELECT count(*) FROM `+quoteIdent(n), func(scan func(...any) error) error { return scan(&cnt) }); e != nil {
			return nil, fmt.Errorf("%s: reading %s: %w", s.loc, n, e)
		}
		l.inlinedDeletes[tid] += int(cnt)
	}
	for _, t := range []struct{ table, what string }{
		{"ducklake_view", "views"}, {"ducklake_macro", "macros"}, {"ducklake_tag", "tags"}, {"ducklake_column_tag", "column tags"},
		{"ducklake_partition_info", "partitioning (files are imported; the partition layout is not)"},
		{"ducklake_sort_info", "sort orders"},
	} {
		if !present[t.table] {
			continue
		}
		var n int64
		if e := s.query(ctx, `SELECT count(*) FROM `+t.table, func(scan func(...any) error) error { return scan(&n) }); e != nil {
			return nil, fmt.Errorf("%s: reading %s: %w", s.loc, t.table, e)
		}
		if n > 0 {
			l.notes = append(l.notes, fmt.Sprintf("%d rows of %s left behind: %s", n, t.table, t.what))
		}
	}
	if len(l.snapshots) == 0 {
		return nil, fmt.Errorf("%s: %w: it has no snapshot", s.loc, ErrNotDuckLake)
	}
	return l, nil
}
