package engine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/kv/kvtest"
)

// A delete file applies in every way a file is read (whole, by row ranges,
// by the page path) and keeps the rows left in their file order; metadata counts subtract it and min/max stop being
// answered from statistics; a delete file changed on disk, or one naming a
// position beyond its data file, fails the query instead of bringing rows
// back or dropping others.
func TestDeleteFilesApplied(t *testing.T) {
	dir := t.TempDir()
	db, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	data := filepath.Join(dir, "data")
	os.MkdirAll(data, 0o755)
	for k := range 2 {
		p := filepath.Join(data, fmt.Sprintf("f%d.parquet", k))
		q := fmt.Sprintf("COPY (SELECT i AS id, i %% 10 AS g FROM range(%d, %d) r(i)) TO '%s' (FORMAT parquet, ROW_GROUP_SIZE 2048)", k*100000, (k+1)*100000, p)
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	c, err := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ingest.Add(c, "t", []string{data}, ingest.Options{Create: true}); err != nil {
		t.Fatal(err)
	}
	r, _ := c.Read(catalog.Latest)
	tb, _ := r.Table("t")
	files, _ := r.Files(tb.ID)
	r.Close()
	write := func(name, where string, f catalog.DataFile) catalog.NewDeleteFile {
		t.Helper()
		p := filepath.Join(dir, name)
		q := fmt.Sprintf("COPY (SELECT '%s' AS file_path, i AS pos FROM range(%d) r(i) WHERE %s ORDER BY pos) TO '%s' (FORMAT parquet)", f.Path, f.RecordCount, where, p)
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
		var n int64
		db.QueryRow(fmt.Sprintf("SELECT count(*) FROM read_parquet('%s')", p)).Scan(&n)
		fi, _ := os.Stat(p)
		return catalog.NewDeleteFile{DataFileID: f.ID, Path: p, DeleteCount: n, FileSizeBytes: fi.Size(), ModifiedUnixNanos: fi.ModTime().UnixNano()}
	}
	before := latestSnap(t, c)
	// Every third row of the first file; a run of the second.
	tx, _ := c.Begin()
	tx.SetDeletes("t", write("d0.parquet", "i % 3 = 0", files[0]), write("d1.parquet", "i BETWEEN 500 AND 99000", files[1]))
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	ask := func(q string, o QueryOptions) string {
		t.Helper()
		if o.Snapshot == 0 {
			o.Snapshot = catalog.Latest
		}
		res, err := e.Query(ctx, q, o)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		var out []string
		for _, row := range res.Rows {
			for _, v := range row {
				out = append(out, *v)
			}
		}
		return strings.Join(out, "|")
	}
	left := int64(100000 - 33334 + 100000 - 98501)
	for _, mode := range []PartialMode{PartialAuto, PartialForce, PartialForceRows} {
		o := QueryOptions{Partial: mode}
		for q, want := range map[string]string{
			"SELECT count(*) FROM t":                                     fmt.Sprint(left),
			"SELECT count(*), min(id), max(id) FROM t WHERE id >= 99000": "2165|99001|199999",
			"SELECT count(*) FROM t WHERE id % 3 = 0 AND id < 100000":    "0",
			"SELECT count(*) FROM t WHERE id BETWEEN 100500 AND 199000":  "0",
			"SELECT count(*) FROM t WHERE id = 100499 OR id = 199001":    "2",
			"SELECT min(id), max(id) FROM t":                             "1|199999",
			// The rows left, in order: a row whose id is less than the
			// row's before it would be out of order.
			"SELECT count(*) FROM (SELECT id < lag(id) OVER () AS back FROM t) WHERE back": "0",
		} {
			if got := ask(q, o); got != want {
				t.Errorf("mode %d: %s = %s, want %s", mode, q, got, want)
			}
		}
	}
	if got := ask("SELECT count(*) FROM t", QueryOptions{Snapshot: before}); got != "200000" {
		t.Errorf("before the delete: %s", got)
	}
	res, err := e.Query(ctx, "SELECT min(id) FROM t", QueryOptions{Snapshot: catalog.Latest})
	if err != nil || res.Metadata {
		t.Errorf("min over files with deleted rows answered from statistics (%v)", err)
	}

	// A delete file that lists a position its data file lacks fails.
	tx, _ = c.Begin()
	bad := write("d2.parquet", "i < 5", files[1])
	cur, _ := c.Read(catalog.Latest)
	ds, _ := cur.DeleteFiles(tb.ID)
	cur.Close()
	bad.Replaces = ds[files[1].ID].ID
	p := filepath.Join(dir, "d2.parquet")
	if _, err := db.Exec(fmt.Sprintf("COPY (SELECT 'x' AS file_path, (i * 1000)::BIGINT AS pos FROM range(99, 101) r(i)) TO '%s' (FORMAT parquet)", p)); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(p)
	bad.FileSizeBytes, bad.ModifiedUnixNanos, bad.DeleteCount = fi.Size(), fi.ModTime().UnixNano(), ds[files[1].ID].DeleteCount+1
	tx.SetDeletes("t", bad)
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Query(ctx, "SELECT count(*) FROM t WHERE g = 1", QueryOptions{Snapshot: catalog.Latest}); err == nil || !strings.Contains(err.Error(), "range") {
		t.Errorf("a position beyond the file: %v", err)
	}
	// A delete file changed on disk fails, naming it.
	os.WriteFile(filepath.Join(dir, "d0.parquet"), []byte("not parquet"), 0o644)
	if _, err := e.Query(ctx, "SELECT count(*) FROM t WHERE id < 100000 AND g = 1", QueryOptions{Snapshot: catalog.Latest}); !errors.Is(err, ErrDataFileChanged) || !strings.Contains(err.Error(), "d0.parquet") {
		t.Errorf("a delete file changed on disk: %v", err)
	}
}

func latestSnap(t *testing.T, c *catalog.Catalog) int64 {
	t.Helper()
	r, err := c.Read(catalog.Latest)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	return r.Snapshot().ID
}

// Files read by one scan (a run) filter their deleted rows on one
// bitstring of the run: every file's bits at a stride when all have
// deleted rows, at offsets when some have none. Random tables of files of
// random sizes, random positions deleted in a random subset of them (none,
// one, most, all but one), then whole-table and range queries in every
// read mode: the answers equal DuckDB's over the rows left. Odd seeds
// hand a run's bits over in a statement of their own, even ones in the
// query's text.
func TestDeletedRunsAgree(t *testing.T) {
	defer func(n int) { inlineRunBytes = n }(inlineRunBytes)
	db, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	for seed := range uint64(12) {
		r := rand.New(rand.NewPCG(seed, 41))
		inlineRunBytes = int(1-seed%2) << 20
		dir := t.TempDir()
		data := filepath.Join(dir, "data")
		os.MkdirAll(data, 0o755)
		n := 2 + r.IntN(10)
		next := 0
		var sizes []int
		for k := range n {
			size := 1 + r.IntN(5000)
			if r.IntN(4) == 0 {
				size = 1 + r.IntN(20)
			}
			p := filepath.Join(data, fmt.Sprintf("f%02d.parquet", k))
			q := fmt.Sprintf("COPY (SELECT i AS id, hash(i) %% 97 AS g FROM range(%d, %d) r(i)) TO '%s' (FORMAT parquet, ROW_GROUP_SIZE 1024)", next, next+size, p)
			if _, err := db.Exec(q); err != nil {
				t.Fatal(err)
			}
			next += size
			sizes = append(sizes, size)
		}
		c, err := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ingest.Add(c, "t", []string{data}, ingest.Options{Create: true}); err != nil {
			t.Fatal(err)
		}
		rd, _ := c.Read(catalog.Latest)
		tb, _ := rd.Table("t")
		files, _ := rd.Files(tb.ID)
		rd.Close()
		all := r.IntN(2) == 0 // every file has deleted rows (the stride)
		var nds []catalog.NewDeleteFile
		var left []string
		for k, f := range files {
			if !all && r.IntN(3) == 0 {
				left = append(left, fmt.Sprintf("SELECT * FROM read_parquet('%s')", f.Path))
				continue
			}
			var where string
			switch r.IntN(4) {
			case 0:
				where = fmt.Sprintf("i = %d", r.IntN(int(f.RecordCount)))
			case 1:
				where = fmt.Sprintf("i <> %d", r.IntN(int(f.RecordCount)))
			default:
				where = fmt.Sprintf("hash(i, %d) %% 10 < %d", k, 1+r.IntN(5))
			}
			p := filepath.Join(dir, fmt.Sprintf("d%02d.parquet", k))
			q := fmt.Sprintf("COPY (SELECT '%s' AS file_path, i AS pos FROM range(%d) r(i) WHERE %s ORDER BY pos) TO '%s' (FORMAT parquet)", f.Path, f.RecordCount, where, p)
			if _, err := db.Exec(q); err != nil {
				t.Fatal(err)
			}
			var cnt int64
			db.QueryRow(fmt.Sprintf("SELECT count(*) FROM read_parquet('%s')", p)).Scan(&cnt)
			if cnt == 0 {
				left = append(left, fmt.Sprintf("SELECT * FROM read_parquet('%s')", f.Path))
				continue
			}
			fi, _ := os.Stat(p)
			nds = append(nds, catalog.NewDeleteFile{DataFileID: f.ID, Path: p, DeleteCount: cnt, FileSizeBytes: fi.Size(), ModifiedUnixNanos: fi.ModTime().UnixNano()})
			left = append(left, fmt.Sprintf("SELECT * EXCLUDE (file_row_number) FROM read_parquet('%s', file_row_number = true) WHERE file_row_number NOT IN (SELECT pos FROM read_parquet('%s'))", f.Path, p))
		}
		if len(nds) > 0 {
			tx, _ := c.Begin()
			tx.SetDeletes("t", nds...)
			if _, err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
		}
		oracle := "(" + strings.Join(left, " UNION ALL ") + ")"
		e, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		var qs []string
		for range 6 {
			lo := r.IntN(next)
			hi := lo + r.IntN(next-lo+1)
			qs = append(qs, fmt.Sprintf("SELECT count(*), sum(id)::BIGINT, sum(g)::BIGINT, min(id), max(id) FROM T WHERE id BETWEEN %d AND %d", lo, hi))
		}
		qs = append(qs, "SELECT count(*), sum(id * g)::BIGINT, min(id), max(id) FROM T", "SELECT g, count(*) FROM T WHERE g < 5 GROUP BY g ORDER BY g")
		for _, q := range qs {
			var want []string
			rows, err := db.Query(strings.ReplaceAll(q, "FROM T", "FROM "+oracle+" x"))
			if err != nil {
				t.Fatal(err)
			}
			cols, _ := rows.Columns()
			for rows.Next() {
				vals := make([]sql.NullString, len(cols))
				ptrs := make([]any, len(cols))
				for i := range vals {
					ptrs[i] = &vals[i]
				}
				if err := rows.Scan(ptrs...); err != nil {
					t.Fatal(err)
				}
				for _, v := range vals {
					want = append(want, v.String)
				}
			}
			rows.Close()
			for _, mode := range []PartialMode{PartialAuto, PartialOff, PartialForce, PartialForceRows} {
				res, err := e.Query(ctx, strings.ReplaceAll(q, "FROM T", "FROM t"), QueryOptions{Snapshot: catalog.Latest, Partial: mode, NoMetadataAnswers: true})
				if err != nil {
					t.Fatalf("seed %d: %s: %v", seed, q, err)
				}
				var got []string
				for _, row := range res.Rows {
					for _, v := range row {
						if v == nil {
							got = append(got, "")
						} else {
							got = append(got, *v)
						}
					}
				}
				if strings.Join(got, "|") != strings.Join(want, "|") {
					t.Fatalf("seed %d (%d files of %v rows, %d with deletes, all %v), mode %d: %s = %v, DuckDB %v", seed, n, sizes, len(nds), all, mode, q, got, want)
				}
			}
		}
		e.Close()
	}
}
