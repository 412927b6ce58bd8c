package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rocklake/internal/curve"
	"rocklake/internal/pqwrite"
	"rocklake/types"
	"rocklake/types/typestest"
)

// Column names a rewrite must not confuse with its own: DuckDB's row id
// and virtual columns, names earlier rewrites used, the names the rewrite
// uses now, SQL keywords, quotes and spaces.
var hostileNames = []string{
	"rowid", "__rn", "rn", "file_row_number", "filename", "file_index", "__rocklake_curve", "__rocklake_k0",
	"__rocklake_k1", "curve", "k0", "k1", "c0", "c1", "c2", "src", "select", "order", "from", "count", "hash",
	`a "quoted" name`, "it's", "has space", "Group By", "NULL",
}

var flatTypes = []string{"int64", "int32", "varchar", "float64", "date", "boolean", "decimal(18,3)", "timestamp", "blob"}

// contentOf is every row of t at a snapshot, sorted: equal at two
// snapshots only when they hold the same rows.
func contentOf(t *testing.T, e *Engine, snap int64, names []string) string {
	t.Helper()
	sel := make([]string, len(names))
	for i, n := range names {
		sel[i] = quoteIdent(n) + "::VARCHAR"
	}
	return answerOf(t, e, snap, "SELECT "+strings.Join(sel, ", ")+" FROM t ORDER BY ALL")
}

// hashOf is the row count and the per-column hash sums of t at a snapshot.
func hashOf(t *testing.T, e *Engine, snap int64, names []string) string {
	t.Helper()
	sel := []string{"count(*)"}
	for _, n := range names {
		sel = append(sel, fmt.Sprintf("sum(hash(%s))::VARCHAR", quoteIdent(n)))
	}
	return answerOf(t, e, snap, "SELECT "+strings.Join(sel, ", ")+" FROM t")
}

// Tables whose columns carry hostile names, in random order and of random
// types, go through compact, a sort and both curves (sorting by the
// hostile columns too); every rewrite keeps every row and value.
func TestRewritesIgnoreColumnNames(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 77))
			names := append([]string{"rowid", "__rn"}, hostileNames[2:]...)
			r.Shuffle(len(names)-2, func(i, j int) { names[i+2], names[j+2] = names[j+2], names[i+2] })
			names = names[:2+2+r.IntN(6)]
			r.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
			typs := make([]types.Type, len(names))
			for i := range typs {
				typs[i] = types.MustParseType(flatTypes[r.IntN(len(flatTypes))])
			}
			dir := t.TempDir()
			var paths []string
			for f := range 4 {
				cols := make([]pqwrite.Column, len(names))
				for i, n := range names {
					vals := make([]*types.Value, 40)
					for j := range vals {
						if r.IntN(8) > 0 {
							v := typestest.Random(r, typs[i])
							vals[j] = &v
						}
					}
					cols[i] = pqwrite.Column{Name: n, Type: typs[i], Values: vals}
				}
				p := filepath.Join(dir, fmt.Sprintf("f%d.parquet", f))
				if err := pqwrite.Write(p, cols, pqwrite.Options{RowGroupRows: 16}); err != nil {
					t.Fatal(err)
				}
				paths = append(paths, p)
			}
			_, before, e := lakeOf(t, paths)
			ctx := context.Background()
			want, wantHash := contentOf(t, e, before.Snapshot.ID, names), hashOf(t, e, before.Snapshot.ID, names)
			check := func(what string, res *OptimizeResult, err error) {
				t.Helper()
				if err != nil {
					t.Fatalf("%s over columns %q: %v", what, names, err)
				}
				if res == nil || res.Rows != 160 {
					t.Fatalf("%s over columns %q: %+v", what, names, res)
				}
				if got := contentOf(t, e, res.Snapshot.ID, names); got != want {
					t.Fatalf("%s over columns %q changed the rows:\n got %s\nwant %s", what, names, got, want)
				}
				if got := hashOf(t, e, res.Snapshot.ID, names); got != wantHash {
					t.Fatalf("%s over columns %q: content hash %s, was %s", what, names, got, wantHash)
				}
			}
			res, err := e.Compact(ctx, "t", CompactOptions{RowsPerFile: 100, Dir: filepath.Join(dir, "compact")})
			check("compact", res, err)
			// Sort by rowid or __rn (the names that lost every row), and one
			// more column.
			sortBy := []string{names[r.IntN(len(names))]}
			for _, n := range names {
				if n == "rowid" || n == "__rn" {
					sortBy = append([]string{n}, sortBy...)
					break
				}
			}
			res, err = e.Optimize(ctx, "t", OptimizeOptions{SortBy: sortBy, RowsPerFile: 50, Dir: filepath.Join(dir, "sorted")})
			check(fmt.Sprintf("optimize --sort-by %q", sortBy), res, err)
			res, err = e.Compact(ctx, "t", CompactOptions{RowsPerFile: 1000, Dir: filepath.Join(dir, "compact2")})
			check("compact after a sort", res, err)
			for _, k := range []curve.Kind{ZOrder, Hilbert} {
				two := []string{names[0], names[1]}
				res, err = e.Optimize(ctx, "t", OptimizeOptions{SortBy: two, Curve: k, RowsPerFile: 70, Dir: filepath.Join(dir, string(k))})
				check(fmt.Sprintf("optimize --curve %s --sort-by %q", k, two), res, err)
			}
		})
	}
}

// Nested columns go through DuckDB's own writer rather than arrow-go: the
// same names must not fool that path either.
func TestRewriteNamesThroughCopyWriter(t *testing.T) {
	db, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	dir := t.TempDir()
	var paths []string
	for f := range 3 {
		p := filepath.Join(dir, fmt.Sprintf("n%d.parquet", f))
		q := fmt.Sprintf(`COPY (SELECT (i * 7 + %[1]d) %% 23 AS rowid, 'v' || i AS __rn, [i, i + %[1]d] AS file_row_number,
			{'a': i, 'b': 'x' || i} AS "__rocklake_curve", i %% 3 AS "select", 'f%[1]d' AS filename
			FROM range(30) r(i)) TO '%[2]s' (FORMAT parquet)`, f, p)
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	names := []string{"rowid", "__rn", "file_row_number", "__rocklake_curve", "select", "filename"}
	_, before, e := lakeOf(t, paths)
	want, wantHash := contentOf(t, e, before.Snapshot.ID, names), hashOf(t, e, before.Snapshot.ID, names)
	ctx := context.Background()
	for _, step := range []func() (*OptimizeResult, error){
		func() (*OptimizeResult, error) { return e.Compact(ctx, "t", CompactOptions{RowsPerFile: 50}) },
		func() (*OptimizeResult, error) {
			return e.Optimize(ctx, "t", OptimizeOptions{SortBy: []string{"rowid"}, RowsPerFile: 20})
		},
		func() (*OptimizeResult, error) {
			return e.Optimize(ctx, "t", OptimizeOptions{SortBy: []string{"select", "rowid"}, Curve: Hilbert, RowsPerFile: 40})
		},
	} {
		res, err := step()
		if err != nil {
			t.Fatal(err)
		}
		if res.Rows != 90 {
			t.Fatalf("rewrote %d rows, want 90", res.Rows)
		}
		if got := contentOf(t, e, res.Snapshot.ID, names); got != want {
			t.Fatalf("rows changed:\n got %s\nwant %s", got, want)
		}
		if got := hashOf(t, e, res.Snapshot.ID, names); got != wantHash {
			t.Fatalf("content hash %s, was %s", got, wantHash)
		}
	}
}

// Files that do not hold the rows read are never committed: a row lost or
// a value altered after the write aborts the rewrite, leaves the catalog as
// it was and removes the written files.
func TestRewriteVerifiesBeforeCommit(t *testing.T) {
	db, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	dir := t.TempDir()
	var paths []string
	for f := range 3 {
		p := filepath.Join(dir, fmt.Sprintf("v%d.parquet", f))
		q := fmt.Sprintf(`COPY (SELECT i + %[1]d * 100 AS x, 'name ' || i AS "has space" FROM range(40) r(i)) TO '%[2]s' (FORMAT parquet)`, f, p)
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	c, _, e := lakeOf(t, paths)
	ctx := context.Background()
	damage := map[string]string{
		"a row lost":       `SELECT * FROM read_parquet('%s') LIMIT 39`,
		"a value altered":  `SELECT * REPLACE (upper("has space") AS "has space") FROM read_parquet('%s')`,
		"two rows swapped": `SELECT x, CASE "has space" WHEN 'name 1' THEN 'name 2' WHEN 'name 2' THEN 'name 1' ELSE "has space" END AS "has space" FROM read_parquet('%s')`,
	}
	wantIn := map[string]string{"a row lost": "read 120 rows, the files hold", "a value altered": `column "has space"`,
		"two rows swapped": "pair them differently"}
	defer func() { afterWrite = nil }()
	for what, q := range damage {
		afterWrite = func(written []string) {
			p := written[0]
			tmp := p + ".tmp"
			if _, err := db.Exec(fmt.Sprintf("COPY (%s) TO '%s' (FORMAT parquet)", fmt.Sprintf(q, p), tmp)); err != nil {
				t.Error(err)
				return
			}
			if err := os.Rename(tmp, p); err != nil {
				t.Error(err)
			}
		}
		snaps, _ := c.Snapshots()
		out := filepath.Join(dir, "out")
		for _, run := range []func() (*OptimizeResult, error){
			func() (*OptimizeResult, error) {
				return e.Optimize(ctx, "t", OptimizeOptions{SortBy: []string{"has space"}, RowsPerFile: 50, Dir: out})
			},
			func() (*OptimizeResult, error) {
				return e.Compact(ctx, "t", CompactOptions{RowsPerFile: 1000, Dir: out})
			},
		} {
			_, err := run()
			if !errors.Is(err, ErrRewriteMismatch) || !strings.Contains(err.Error(), wantIn[what]) || !strings.Contains(err.Error(), "nothing committed") {
				t.Fatalf("%s: %v", what, err)
			}
			if now, _ := c.Snapshots(); len(now) != len(snaps) {
				t.Fatalf("%s: a snapshot was committed", what)
			}
			if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("%s: the written files were left in %s: %v", what, out, err)
			}
		}
	}
}

// The check before commit must not stop a rewrite of any type a table can
// hold: every column's digest is computed, and every row survives.
func TestRewriteCheckCoversNestedAndOddTypes(t *testing.T) {
	db, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	dir := t.TempDir()
	var paths []string
	for f := range 3 {
		p := filepath.Join(dir, fmt.Sprintf("o%d.parquet", f))
		q := fmt.Sprintf(`COPY (SELECT i + %[1]d * 100 AS id,
			INTERVAL (i) DAY + INTERVAL (i * 7) MICROSECOND AS iv,
			MAP {'k' || i: i, 'z': NULL} AS m,
			[[i, NULL], NULL, []] AS ll,
			{'a': {'b': [i::VARCHAR, NULL]}, 'c': NULL} AS s,
			CASE WHEN i %% 3 = 0 THEN NULL ELSE (i %% 5)::UTINYINT END AS small,
			CASE WHEN i %% 5 = 0 THEN NULL ELSE i %% 2 = 0 END AS b,
			CASE i %% 4 WHEN 0 THEN (i * 1.5)::DOUBLE::VARIANT WHEN 1 THEN ('s' || i)::VARIANT WHEN 2 THEN NULL ELSE {'x': i}::VARIANT END AS v,
			-0.0::DOUBLE * (i %% 2) AS d
			FROM range(25) r(i)) TO '%[2]s' (FORMAT parquet)`, f, p)
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	names := []string{"id", "iv", "m", "ll", "s", "small", "b", "v", "d"}
	_, before, e := lakeOf(t, paths)
	want := hashOf(t, e, before.Snapshot.ID, names)
	ctx := context.Background()
	res, err := e.Compact(ctx, "t", CompactOptions{RowsPerFile: 40})
	if err != nil {
		t.Fatal(err)
	}
	if got := hashOf(t, e, res.Snapshot.ID, names); got != want || res.Rows != 75 {
		t.Fatalf("compact: %d rows, content hash %s, was %s", res.Rows, got, want)
	}
	res, err = e.Optimize(ctx, "t", OptimizeOptions{SortBy: []string{"iv", "id"}, Curve: ZOrder, RowsPerFile: 30})
	if err != nil {
		t.Fatal(err)
	}
	if got := hashOf(t, e, res.Snapshot.ID, names); got != want || res.Rows != 75 {
		t.Fatalf("optimize: %d rows, content hash %s, was %s", res.Rows, got, want)
	}
}
