package engine

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/expr"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/prune"
	"github.com/rocklake/rocklake/types"
)

var geometryChecks = flag.Int("geometry.checks", 20000, "run the GEOMETRY extent soundness suite until this many (unit, predicate) checks")

// TestGeometryPruningAgreesWithDuckDB is the differential soundness suite
// of extent pruning. Each round DuckDB writes files of random GEOMETRY
// values clustered in space — points, lines, polygons, collections, empty
// geometries of every kind, NULLs, Z coordinates, and now and then a NaN
// coordinate — registers them (extents computed from the WKB), and plans
// random && and st_intersects_extent predicates against literal points,
// boxes, lines and empty geometries, many placed on the files' own extent
// edges, alone and under AND, OR and NOT. Every row group of every file is
// then checked against DuckDB's evaluation: a dropped unit holds no row
// DuckDB returns. Every 25th predicate also runs as a whole query through
// the engine (DuckDB's parse tree read by duckast) and must give DuckDB's
// answer over all files.
func TestGeometryPruningAgreesWithDuckDB(t *testing.T) {
	db, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	start := time.Now()
	var checks, dropped, preds, rejected, queries int
	for round := uint64(0); checks < *geometryChecks; round++ {
		rnd := rand.New(rand.NewPCG(99, round))
		dir, err := os.MkdirTemp(t.TempDir(), "round")
		if err != nil {
			t.Fatal(err)
		}
		paths := make([]string, 10)
		for f := range paths {
			paths[f] = filepath.Join(dir, fmt.Sprintf("g%d.parquet", f))
			if _, err := db.Exec(geometryFileSQL(rnd, paths[f])); err != nil {
				t.Fatalf("round %d: writing file %d: %v", round, f, err)
			}
		}
		c, _ := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
		if _, err := ingest.Add(c, "t", paths, ingest.Options{Create: true, NoAutoFilters: true}); err != nil {
			t.Fatal(err)
		}
		r, _ := c.Read(catalog.Latest)
		tb, _ := r.Table("t")
		cols, _ := r.Columns(tb.ID)
		gCol, _ := r.Column(tb.ID, "g")
		files, _ := r.Files(tb.ID)
		// Edge literals: the corners of the extents the catalog stored.
		var edges []types.Box
		var units [][2]int64
		var values, list []string
		pathCase := "CASE filename"
		known := 0
		for _, f := range files {
			rgs, _ := r.RowGroupStats(tb.ID, gCol.ID, f.ID)
			for _, g := range rgs {
				units = append(units, [2]int64{f.ID, int64(g.Index)})
				values = append(values, fmt.Sprintf("(%d, %d, %d, %d)", f.ID, g.Index, g.FirstRow, g.FirstRow+g.Stats.RowCount))
				if e, ok := types.ParseExtentStats(g.Stats.ExtraStats); ok {
					known++
					if !e.Empty {
						edges = append(edges, e.Box)
					}
				}
			}
			list = append(list, "'"+f.Path+"'")
			pathCase += fmt.Sprintf(" WHEN '%s' THEN %d", f.Path, f.ID)
		}
		pathCase += " END"
		if known == 0 {
			t.Fatalf("round %d: no row group has an extent", round)
		}
		table := fmt.Sprintf("__geometry_oracle_%d", round)
		if _, err := db.Exec(fmt.Sprintf(`CREATE TABLE %s AS SELECT u.f AS fid, u.g AS gid, d.i, d.g
			FROM (SELECT *, %s AS fid FROM read_parquet([%s], filename = true, file_row_number = true)) d
			JOIN (VALUES %s) u(f, g, lo, hi) ON d.fid = u.f AND d.file_row_number >= u.lo AND d.file_row_number < u.hi`,
			table, pathCase, strings.Join(list, ", "), strings.Join(values, ", "))); err != nil {
			t.Fatal(err)
		}
		eng, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		for k := range 500 {
			if checks >= *geometryChecks {
				break
			}
			p := randomGeometryPred(rnd, 0, edges)
			preds++
			b, err := expr.Compile(p, cols)
			if err != nil {
				rejected++
				t.Logf("rocklake rejects %q: %v", p, err)
				continue
			}
			rows, err := db.Query(fmt.Sprintf("SELECT fid, gid, count(*) FILTER (WHERE %s), count(*) FROM %s GROUP BY ALL", p, table))
			if err != nil {
				t.Fatalf("DuckDB rejects %q: %v", p, err)
			}
			match := map[[2]int64]int64{}
			for rows.Next() {
				var f, g, m, n int64
				if err := rows.Scan(&f, &g, &m, &n); err != nil {
					t.Fatal(err)
				}
				match[[2]int64{f, g}] = m
			}
			rows.Close()
			plan, err := prune.PlanBound(r, tb, b, prune.Options{})
			if err != nil {
				t.Fatal(err)
			}
			kept := map[[2]int64]bool{}
			for _, kf := range plan.KeptFiles {
				for _, g := range kf.RowGroups {
					kept[[2]int64{kf.FileID, int64(g)}] = true
				}
			}
			for _, u := range units {
				checks++
				if kept[u] {
					continue
				}
				dropped++
				if match[u] != 0 {
					t.Fatalf("UNSOUND SKIP (round %d): row group %d of file %d dropped for %q, DuckDB returns %d rows (bound: %s)",
						round, u[1], u[0], p, match[u], b.Pred)
				}
			}
			if k%25 == 0 { // the query path: DuckDB's parse tree, not expr.Parse
				queries++
				checkVariantQuery(t, db, eng, p, list)
			}
		}
		eng.Close()
		r.Close()
		os.RemoveAll(dir)
		if _, err := db.Exec("DROP TABLE " + table); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d predicates (%d rejected by rocklake), %d unit checks against DuckDB: %d dropped, 0 unsound; %d whole queries; %v",
		preds, rejected, checks, dropped, queries, time.Since(start).Round(time.Millisecond))
	if dropped == 0 || rejected > preds/20 {
		t.Fatalf("dropped %d, rejected %d of %d predicates", dropped, rejected, preds)
	}
}

// geometryFileSQL writes one file of geometries around a center of its
// own, in row groups of 2048 rows.
func geometryFileSQL(rnd *rand.Rand, path string) string {
	n := 2100 + rnd.IntN(5000)
	cx, cy := rnd.IntN(1000), rnd.IntN(1000)
	spread := 1 + rnd.IntN(200)
	h := fmt.Sprintf("((i * 2654435761 + %d) %% 1000003)", rnd.IntN(100000))
	x := fmt.Sprintf("(%d + (%s %% %d) * 0.5 + i * 0.01)", cx, h, spread)
	y := fmt.Sprintf("(%d + ((%s // 7) %% %d) * 0.25)", cy, h, spread)
	pt := func(dx, dy string) string {
		return fmt.Sprintf("(%s + %s)::VARCHAR || ' ' || (%s + %s)::VARCHAR", x, dx, y, dy)
	}
	shapes := []string{
		"'POINT(' || " + pt("0", "0") + " || ')'",
		"'LINESTRING(' || " + pt("0", "0") + " || ', ' || " + pt("3", "-2") + " || ')'",
		"'POLYGON((' || " + pt("0", "0") + " || ', ' || " + pt("4", "0") + " || ', ' || " + pt("4", "4") + " || ', ' || " + pt("0", "0") + " || '))'",
		"'MULTIPOINT((' || " + pt("0", "0") + " || '), (' || " + pt("-5", "6") + " || '))'",
		"'GEOMETRYCOLLECTION(POINT EMPTY, POINT(' || " + pt("1", "1") + " || '))'",
		"'POINT Z(' || " + pt("0", "0") + " || ' 7)'",
	}
	var branches []string
	add := func(p int, mod int, then string) {
		if rnd.IntN(100) < p {
			branches = append(branches, fmt.Sprintf("WHEN %s %% %d = %d THEN %s", h, mod, len(branches), then))
		}
	}
	add(40, 13, "NULL")
	add(40, 17, []string{"'POINT EMPTY'", "'LINESTRING EMPTY'", "'POLYGON EMPTY'", "'GEOMETRYCOLLECTION EMPTY'", "'MULTIPOINT EMPTY'"}[rnd.IntN(5)])
	add(6, 997, "'POINT(' || "+x+"::VARCHAR || ' NaN)'")
	main := shapes[rnd.IntN(len(shapes))]
	for range rnd.IntN(3) {
		add(30, 5+rnd.IntN(7), shapes[rnd.IntN(len(shapes))])
	}
	g := main
	if len(branches) > 0 {
		g = "CASE " + strings.Join(branches, " ") + " ELSE " + main + " END"
	}
	if rnd.IntN(10) == 0 {
		g = "'POINT EMPTY'" // a file of nothing but empty geometries
	}
	return fmt.Sprintf("COPY (SELECT i, (%s)::GEOMETRY AS g FROM range(%d) r(i)) TO '%s' (FORMAT parquet, ROW_GROUP_SIZE 2048)", g, n, path)
}

func geometryLiteral(rnd *rand.Rand, edges []types.Box) string {
	num := func() float64 { return float64(rnd.IntN(12000))/10 - 50 }
	ptx, pty := num(), num()
	if len(edges) > 0 && rnd.IntN(2) == 0 {
		e := edges[rnd.IntN(len(edges))]
		ptx = []float64{e.XMin, e.XMax, math.Nextafter(e.XMin, -1e9), math.Nextafter(e.XMax, 1e9)}[rnd.IntN(4)]
		pty = []float64{e.YMin, e.YMax, math.Nextafter(e.YMin, -1e9), math.Nextafter(e.YMax, 1e9)}[rnd.IntN(4)]
	}
	f := func(v float64) string { return fmt.Sprint(v) }
	w := float64(rnd.IntN(300))
	switch rnd.IntN(6) {
	case 0:
		return "POLYGON((" + f(ptx) + " " + f(pty) + ", " + f(ptx+w) + " " + f(pty) + ", " + f(ptx+w) + " " + f(pty+w) + ", " + f(ptx) + " " + f(pty+w) + ", " + f(ptx) + " " + f(pty) + "))"
	case 1:
		return "LINESTRING(" + f(ptx) + " " + f(pty) + ", " + f(ptx-w) + " " + f(pty+w/2) + ")"
	case 2:
		return []string{"POINT EMPTY", "POLYGON EMPTY", "GEOMETRYCOLLECTION EMPTY"}[rnd.IntN(3)]
	case 3:
		return "MULTIPOINT((" + f(ptx) + " " + f(pty) + "), (" + f(num()) + " " + f(num()) + "))"
	}
	return "POINT(" + f(ptx) + " " + f(pty) + ")"
}

func randomGeometryPred(rnd *rand.Rand, depth int, edges []types.Box) string {
	if depth < 2 {
		switch rnd.IntN(8) {
		case 0, 1:
			op := []string{" AND ", " OR "}[rnd.IntN(2)]
			return "(" + randomGeometryPred(rnd, depth+1, edges) + op + randomGeometryPred(rnd, depth+1, edges) + ")"
		case 2:
			return "NOT (" + randomGeometryPred(rnd, depth+1, edges) + ")"
		case 3:
			return fmt.Sprintf("i %s %d", []string{"<", ">=", "="}[rnd.IntN(3)], rnd.IntN(7000))
		}
	}
	lit := "'" + geometryLiteral(rnd, edges) + "'"
	switch rnd.IntN(4) {
	case 0:
		return "st_intersects_extent(g, " + lit + ")"
	case 1:
		return lit + "::GEOMETRY && g"
	case 2:
		return "st_intersects_extent(" + lit + "::GEOMETRY, g)"
	}
	return "g && " + lit + "::GEOMETRY"
}
