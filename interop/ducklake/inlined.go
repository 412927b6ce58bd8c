package ducklake

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/rocklake/rocklake/catalog"
)

// inlinedPrefix starts the name of every Parquet file an import writes
// for inlined rows.
const inlinedPrefix = "ducklake-inlined-"

// findInlined turns the inlined rows of each table into files: one per
// table, schema version and snapshot that inserted rows, live from that
// snapshot until the one that deleted them. Rows of one insert deleted at
// different snapshots are row deletes, which rocklake cannot express.
func (p *planner) findInlined(ctx context.Context) error {
	for _, it := range p.l.inlined {
		td := p.tables[it.tableID]
		if td == nil {
			continue
		}
		type batch struct {
			begin int64
			ends  []sql.NullInt64
			rows  int64
		}
		var batches []*batch
		err := p.src.query(ctx, `SELECT begin_snapshot, end_snapshot, count(*) FROM `+quoteIdent(it.name)+` GROUP BY begin_snapshot, end_snapshot ORDER BY begin_snapshot, end_snapshot`,
			func(scan func(...any) error) error {
				var b int64
				var e sql.NullInt64
				var n int64
				if err := scan(&b, &e, &n); err != nil {
					return err
				}
				if len(batches) == 0 || batches[len(batches)-1].begin != b {
					batches = append(batches, &batch{begin: b})
				}
				last := batches[len(batches)-1]
				last.ends = append(last.ends, e)
				last.rows += n
				return nil
			})
		if err != nil {
			return fmt.Errorf("%s: reading inlined rows %s: %w", p.src.loc, it.name, err)
		}
		for _, b := range batches {
			if len(b.ends) > 1 {
				return fmt.Errorf("%w: table %q: some of the rows inlined at snapshot %d were deleted (inlined rows in %s): rocklake has no row deletes yet",
					ErrUnsupported, p.tableName(it.tableID), b.begin, it.name)
			}
			f := dlFile{id: p.nextSynthetic, tableID: it.tableID, begin: b.begin, end: b.ends[0], format: "parquet", records: b.rows,
				path: fmt.Sprintf("%st%d-v%d-s%d.parquet", inlinedPrefix, it.tableID, it.schemaVersion, b.begin), inlined: it.name}
			p.nextSynthetic++
			p.loc[f.id] = f.path // its name until materialise writes it
			p.l.files = append(p.l.files, f)
			p.files[f.id] = &p.l.files[len(p.l.files)-1]
		}
	}
	// p.files points into p.l.files, which append may have moved.
	for i := range p.l.files {
		p.files[p.l.files[i].id] = &p.l.files[i]
	}
	return nil
}

func (p *planner) tableName(id int64) string {
	for _, t := range p.l.tables {
		if t.id == id {
			return t.name
		}
	}
	return fmt.Sprint(id)
}

// materialise writes the inlined rows the steps add as Parquet files, in
// a new directory of rocklake's own, and returns it ("" when none).
func (p *planner) materialise(ctx context.Context, c *catalog.Catalog, steps []*step, dir string) (string, error) {
	var need []int64
	for _, st := range steps {
		for _, id := range st.adds {
			if p.files[id].inlined != "" {
				need = append(need, id)
			}
		}
	}
	if len(need) == 0 {
		return "", nil
	}
	if p.src.kind != "duckdb" {
		// A SQLite or PostgreSQL catalog keeps inlined rows in encodings of
		// its own (the specification's "Type Encoding for Data Inlining"),
		// which this import does not decode yet.
		return "", fmt.Errorf("%w: table %q has rows inlined in the %s catalog: rocklake writes inlined rows from DuckDB catalogs only; flush them to Parquet with the ducklake extension first (ducklake_flush_inlined_data)",
			ErrUnsupported, p.tableName(p.files[need[0]].tableID), p.src.kind)
	}
	root := c.RewriteRoot()
	if dir == "" {
		if root == "" {
			return "", errNoRoot
		}
		dir = filepath.Join(root, fmt.Sprintf("ducklake-inlined-%d", time.Now().UnixNano()))
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if err := catalog.MakeRewriteDir(dir, root); err != nil {
		return "", fmt.Errorf("directory for inlined rows: %w", err)
	}
	for _, id := range need {
		f := p.files[id]
		path := filepath.Join(dir, f.path)
		q := fmt.Sprintf(`COPY (SELECT * EXCLUDE (row_id, begin_snapshot, end_snapshot) FROM %s WHERE begin_snapshot = %d ORDER BY row_id) TO '%s' (FORMAT parquet)`,
			quoteIdent(f.inlined), f.begin, strings.ReplaceAll(path, "'", "''"))
		if _, err := p.src.db.ExecContext(ctx, q); err != nil {
			return dir, fmt.Errorf("writing inlined rows of table %q to %s: %w", p.tableName(f.tableID), path, err)
		}
		p.loc[id] = path
		p.res.InlinedFiles++
	}
	return dir, nil
}
