package engine

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/expr"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/prune"
)

// variantPredsPerRound is the predicates planned over each round's files.
const variantPredsPerRound = 600

var (
	variantChecks = flag.Int("variant.checks", 20000, "run the VARIANT sub-field soundness suite until this many (unit, predicate) checks")
	variantSeed   = flag.Uint64("variant.seed", 0, "seed of the VARIANT sub-field soundness suite (0: the fixed default)")
)

// TestVariantPruningAgreesWithDuckDB is the differential soundness suite of
// sub-field pruning. Each round DuckDB writes files of random VARIANT
// payloads — objects whose fields vary by file and by row, fields of mixed
// types across rows (an integer here, a string or a double there), nested
// objects that are sometimes strings, arrays, variant NULLs, SQL NULL rows,
// rows that are not objects, missing fields, NaN, a field named "we.ird"
// and one named "A" — registers them, and plans random predicates on
// sub-fields (casts to integers of every width, DOUBLE, FLOAT, DECIMAL,
// VARCHAR, dates and timestamps; = <> < <= > >= BETWEEN IN IS [NOT] NULL,
// NOT, AND, OR). Every unit (row group of every file) is then checked
// against DuckDB's own evaluation over the same files:
//
//   - a dropped unit holds no row DuckDB returns (counted with TRY_CAST,
//     which is CAST wherever the cast succeeds, so a unit where DuckDB would
//     fail still counts its matching rows);
//   - for a predicate on one sub-field that the binder does not fold to a
//     constant, a dropped unit holds no value the cast fails on: the
//     statistics never hide a conversion error DuckDB would raise;
//   - an all-match file returns every row.
//
// Every 40th predicate also runs as a whole query through the engine and
// must give DuckDB's answer over all files whenever DuckDB gives one.
func TestVariantPruningAgreesWithDuckDB(t *testing.T) {
	db, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	seed := *variantSeed
	if seed == 0 {
		seed = 24
	}
	start := time.Now()
	var tDuck, tPlan, tQuery, tWrite time.Duration
	var checks, dropped, allMatch, preds, rejected, duckRejected, queries int
	for round := uint64(0); checks < *variantChecks; round++ {
		rnd := rand.New(rand.NewPCG(seed, round))
		dir, err := os.MkdirTemp(t.TempDir(), "round")
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		paths := make([]string, 8)
		for f := range paths {
			paths[f] = filepath.Join(dir, fmt.Sprintf("v%d.parquet", f))
			q := variantFileSQL(rnd, f, paths[f])
			if _, err := db.Exec(q); err != nil {
				t.Fatalf("seed %d round %d: writing file %d: %v\n%s", seed, round, f, err, q)
			}
		}
		c, _ := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
		if _, err := ingest.Add(c, "t", paths, ingest.Options{Create: true}); err != nil {
			t.Fatal(err)
		}
		r, _ := c.Read(catalog.Latest)
		tb, _ := r.Table("t")
		cols, _ := r.Columns(tb.ID)
		iCol, _ := r.Column(tb.ID, "i")
		files, _ := r.Files(tb.ID)
		type unit struct {
			file int64
			g    int32
		}
		var units []unit
		var values []string
		for _, f := range files {
			rgs, _ := r.RowGroupStats(tb.ID, iCol.ID, f.ID)
			for _, g := range rgs {
				units = append(units, unit{f.ID, g.Index})
				values = append(values, fmt.Sprintf("(%d, %d, %d, %d)", f.ID, g.Index, g.FirstRow, g.FirstRow+g.Stats.RowCount))
			}
		}
		byPath := map[string]int64{}
		var list []string
		for _, f := range files {
			byPath[f.Path] = f.ID
			list = append(list, "'"+f.Path+"'")
		}
		pathCase := "CASE filename"
		for p, id := range byPath {
			pathCase += fmt.Sprintf(" WHEN '%s' THEN %d", p, id)
		}
		pathCase += " END"
		// The oracle's table: each row's file and row group, and every
		// term (sub-field and cast) computed once (DuckDB takes about a
		// microsecond per row to extract a VARIANT field).
		terms := map[string]vterm{}
		for _, field := range variantFieldNames {
			for _, typ := range variantCasts(field) {
				tm := vterm{field: field, canon: variantCanon[field], typ: typ}
				terms[tm.key()] = tm
			}
		}
		// Each field is extracted once (x_F), then cast per term.
		sel := []string{"fid", "g"}
		extract := []string{"u.f AS fid", "u.g AS g"}
		nullOf := map[string]bool{}
		for k, tm := range terms {
			fk := vterm{field: tm.field}.key()
			if !nullOf[tm.field] {
				nullOf[tm.field] = true
				extract = append(extract, fmt.Sprintf("%s AS x_%s", tm.canon, fk))
				sel = append(sel, fmt.Sprintf("x_%s IS NULL AS nf_%s", fk, fk))
			}
			if tm.typ != "" {
				sel = append(sel, fmt.Sprintf("TRY_CAST(x_%s AS %s) AS c_%s", fk, tm.typ, k))
			}
		}
		table := fmt.Sprintf("__variant_oracle_%d", round)
		if _, err := db.Exec(fmt.Sprintf(`CREATE TABLE %s AS SELECT %s FROM (SELECT %s
			FROM (SELECT *, %s AS fid FROM read_parquet([%s], filename = true, file_row_number = true, can_have_nan = true)) d
			JOIN (VALUES %s) u(f, g, lo, hi) ON d.fid = u.f AND d.file_row_number >= u.lo AND d.file_row_number < u.hi)`,
			table, strings.Join(sel, ", "), strings.Join(extract, ", "), pathCase, strings.Join(list, ", "), strings.Join(values, ", "))); err != nil {
			t.Fatal(err)
		}
		// Literals at the edges: each term's smallest and largest value in
		// each file, where a bound rounded the wrong way would show.
		var keys, aggs []string
		for k, tm := range terms {
			if tm.typ != "" {
				keys = append(keys, k)
				aggs = append(aggs, fmt.Sprintf("min(c_%s)::VARCHAR, max(c_%s)::VARCHAR", k, k))
			}
		}
		pools := map[string][]string{}
		prow, err := db.Query(fmt.Sprintf("SELECT %s FROM %s GROUP BY fid", strings.Join(aggs, ", "), table))
		if err != nil {
			t.Fatal(err)
		}
		for prow.Next() {
			vals := make([]sql.NullString, 2*len(keys))
			ptrs := make([]any, len(vals))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := prow.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			for i, k := range keys {
				for _, v := range vals[2*i : 2*i+2] {
					if v.Valid {
						pools[k] = append(pools[k], v.String)
					}
				}
			}
		}
		prow.Close()
		var batch []vpred
		for range variantPredsPerRound {
			batch = append(batch, randomVariantPred(rnd, 0, pools))
		}
		tWrite += time.Since(t0)
		eng, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		for k, p := range batch {
			if checks >= *variantChecks {
				break
			}
			preds++
			b, err := expr.Compile(p.sql, cols)
			if err != nil {
				rejected++
				t.Logf("rocklake rejects %q: %v", p.sql, err)
				continue
			}
			fail := "false"
			// A predicate the binder folds to a constant (a literal out of
			// the cast type's range) is decided without statistics, and
			// DuckDB's cast errors are not its concern.
			if _, folded := b.Pred.(*expr.Const); p.single != "" && !folded {
				tm := terms[p.single]
				fail = fmt.Sprintf("(c_%s IS NULL AND NOT nf_%s)", p.single, vterm{field: tm.field}.key())
			}
			q := fmt.Sprintf(`SELECT fid, g, count(*) FILTER (WHERE %s), count(*) FILTER (WHERE %s), count(*) FROM %s GROUP BY ALL`,
				p.pre, fail, table)
			t0 := time.Now()
			rows, err := db.Query(q)
			if err != nil {
				duckRejected++
				t.Logf("DuckDB rejects %q: %v", p.sql, err)
				continue
			}
			type counts struct{ match, fail, n int64 }
			got := map[[2]int64]counts{}
			for rows.Next() {
				var f, g int64
				var cn counts
				if err := rows.Scan(&f, &g, &cn.match, &cn.fail, &cn.n); err != nil {
					t.Fatal(err)
				}
				got[[2]int64{f, g}] = cn
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			rows.Close()
			tDuck += time.Since(t0)
			t0 = time.Now()
			plan, err := prune.PlanBound(r, tb, b, prune.Options{})
			if err != nil {
				t.Fatalf("plan %q: %v", p.sql, err)
			}
			tPlan += time.Since(t0)
			kept := map[[2]int64]bool{}
			fileAll := map[int64]bool{}
			for _, kf := range plan.KeptFiles {
				for _, g := range kf.RowGroups {
					kept[[2]int64{kf.FileID, int64(g)}] = true
				}
				fileAll[kf.FileID] = kf.AllMatch
			}
			for _, u := range units {
				cn := got[[2]int64{u.file, int64(u.g)}]
				checks++
				key := [2]int64{u.file, int64(u.g)}
				switch {
				case !kept[key] && cn.match != 0:
					t.Fatalf("UNSOUND SKIP (seed %d round %d): row group %d of file %d dropped for %q, DuckDB returns %d rows (bound: %s)",
						seed, round, u.g, u.file, p.sql, cn.match, b.Pred)
				case !kept[key] && cn.fail != 0:
					t.Fatalf("HIDDEN ERROR (seed %d round %d): row group %d of file %d dropped for %q, where DuckDB's cast fails on %d values (bound: %s)",
						seed, round, u.g, u.file, p.sql, cn.fail, b.Pred)
				case kept[key] && fileAll[u.file] && cn.match != cn.n:
					t.Fatalf("WRONG ALL-MATCH (seed %d round %d): row group %d of file %d for %q: DuckDB returns %d of %d rows (bound: %s)",
						seed, round, u.g, u.file, p.sql, cn.match, cn.n, b.Pred)
				case !kept[key]:
					dropped++
				case fileAll[u.file]:
					allMatch++
				}
			}
			if k%40 == 0 {
				queries++
				t0 = time.Now()
				checkVariantQuery(t, db, eng, p.sql, list)
				tQuery += time.Since(t0)
			}
		}
		eng.Close()
		r.Close()
		os.RemoveAll(dir)
		if _, err := db.Exec("DROP TABLE " + table); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("seed %d: %d predicates (%d rejected by rocklake, %d by DuckDB), %d unit checks against DuckDB: %d dropped, %d all-match, 0 unsound; %d whole queries; %v",
		seed, preds, rejected, duckRejected, checks, dropped, allMatch, queries, time.Since(start).Round(time.Millisecond))
	t.Logf("time: writing and adding files %v, DuckDB counts %v, plans %v, whole queries %v", tWrite, tDuck, tPlan, tQuery)
	if dropped == 0 {
		t.Fatal("no unit was ever dropped: the suite checks nothing")
	}
	if rejected > preds/20 {
		t.Fatalf("rocklake rejected %d of %d predicates", rejected, preds)
	}
}

// checkVariantQuery runs count(*) under a predicate through the engine and
// over every file on DuckDB: when DuckDB answers, the engine must give the
// same answer. (When DuckDB fails — a cast error in a file the planner
// skipped for another conjunct — the engine may answer.)
func checkVariantQuery(t *testing.T, db *sql.DB, eng *Engine, p string, files []string) {
	t.Helper()
	var want int64
	err := db.QueryRow(fmt.Sprintf("SELECT count(*) FROM read_parquet([%s], can_have_nan = true) WHERE %s", strings.Join(files, ", "), p)).Scan(&want)
	res, qerr := eng.Query(context.Background(), "SELECT count(*) FROM t WHERE "+p, QueryOptions{Snapshot: catalog.Latest})
	if err != nil {
		return
	}
	if qerr != nil {
		t.Fatalf("query %q: DuckDB answers %d, the engine fails: %v", p, want, qerr)
	}
	if len(res.Rows) != 1 || res.Rows[0][0] == nil || *res.Rows[0][0] != fmt.Sprint(want) {
		t.Fatalf("WRONG ANSWER for %q: engine %v, DuckDB over every file %d", p, res.Rows, want)
	}
}

// variantFileSQL writes one file of random VARIANT payloads: every field's
// main type, range and clustering is the file's, and CASE branches give
// some rows another shape.
func variantFileSQL(rnd *rand.Rand, f int, path string) string {
	n := 2100 + rnd.IntN(3000)
	base := rnd.IntN(12) * 1000
	h := fmt.Sprintf("((i * 2654435761 + %d) %% 1000003)", rnd.IntN(100000))
	x := "i"
	if rnd.IntN(4) == 0 {
		x = h + " % 3000" // not clustered
	}
	val := fmt.Sprintf("(%d + %s)", base, x)
	var a string
	switch rnd.IntN(10) {
	case 0:
		a = val + " / 2.0" // halves: DuckDB rounds DOUBLE to integers half to even
	case 1:
		a = val + "::VARCHAR" // numbers as strings: castable, but not in order
	case 2:
		a = "(" + val + " / 7)::DECIMAL(9,2)"
	case 3:
		a = "(" + x + " % 400 - 200)::SMALLINT" // around TINYINT's range
	case 4:
		a = val + "::BIGINT * 1000000000" // beyond INTEGER's range
	case 5:
		a = val + "::INTEGER"
	default:
		a = val + "::BIGINT"
	}
	var ts string
	switch rnd.IntN(7) {
	case 0:
		ts = fmt.Sprintf("(DATE '2024-01-01' + (%s // 500)::INTEGER)", val)
	case 1:
		ts = fmt.Sprintf("('2024-01-01 00:00:00+00'::TIMESTAMPTZ + to_microseconds(%s * 17000000 + 300000))", val)
	default:
		ts = fmt.Sprintf("('2024-01-01'::TIMESTAMP + to_microseconds(%s * 17000000 + %d))", val, rnd.IntN(2)*700000)
	}
	fields := []string{"a", "b", "t", "n", "we.ird", "f", "arr"}
	if rnd.IntN(5) == 0 {
		fields[0] = "A"
	}
	def := map[string]string{
		"a": a, "A": a,
		"b":      fmt.Sprintf("'k' || lpad(%s::VARCHAR, 6, '0')", val),
		"t":      ts,
		"n":      fmt.Sprintf("{'x': (%d + %s %% 500)::INTEGER, 'y': 'w' || (%s %% 50)::VARCHAR}", rnd.IntN(20)*100, x, x),
		"we.ird": fmt.Sprintf("(%s %% 50 + %d)::INTEGER", x, rnd.IntN(4)*50),
		"f":      fmt.Sprintf("(%s * 0.25)::DOUBLE", val),
		"arr":    "[i, i + 1]",
	}
	obj := func(over map[string]string) string {
		var parts []string
		for _, k := range fields {
			v, ok := over[k]
			if !ok {
				v = def[k]
			}
			if v == "-" {
				continue // missing
			}
			parts = append(parts, fmt.Sprintf("'%s': %s", k, v))
		}
		return "{" + strings.Join(parts, ", ") + "}::VARIANT"
	}
	var branches []string
	add := func(p int, mod int, then string) {
		if rnd.IntN(100) < p {
			branches = append(branches, fmt.Sprintf("WHEN %s %% %d = %d THEN %s", h, mod, len(branches), then))
		}
	}
	add(30, 23, "NULL")
	add(12, 31, "(i)::VARIANT")                  // not an object: the root's value holds it
	add(50, 7, obj(map[string]string{"a": "-"})) // a missing
	add(20, 11, obj(map[string]string{"a": "NULL::INTEGER"}))
	add(25, 13, obj(map[string]string{"a": []string{"'str'", "1.5::DOUBLE", "'77'", "(i * 1000000000000)::BIGINT"}[rnd.IntN(4)]}))
	add(20, 17, obj(map[string]string{"n": "'str'"}))
	add(20, 19, obj(map[string]string{"n": "-"}))
	add(15, 29, obj(map[string]string{"f": "'nan'::DOUBLE"}))
	add(15, 37, obj(map[string]string{"t": "'2024-01-02 00:00:00'"}))
	add(15, 41, obj(map[string]string{"b": "5"}))
	add(10, 43, obj(map[string]string{"we.ird": "{'z': 1}"}))
	v := obj(nil)
	if len(branches) > 0 {
		v = "CASE " + strings.Join(branches, " ") + " ELSE " + v + " END"
	}
	return fmt.Sprintf("COPY (SELECT i, %s AS v FROM range(%d) r(i)) TO '%s' (FORMAT parquet, ROW_GROUP_SIZE 2048)", v, n, path)
}

// vpred is a predicate as rocklake reads it (sql) and as the oracle
// evaluates it (pre: over the round's table of precomputed terms, where
// column c_K is TRY_CAST(field AS type) — CAST wherever the cast succeeds
// — and nf_F says the field is NULL), with the terms it uses and, when it
// has one leaf, that leaf's term.
type vpred struct {
	sql, pre string
	terms    map[string]vterm
	single   string
}

// vterm is one sub-field and cast, in the oracle's own spelling.
type vterm struct{ field, canon, typ string }

func (t vterm) key() string {
	k := strings.NewReplacer(".", "_", "(", "_", ")", "", ",", "_").Replace(t.field + "_" + t.typ)
	if t.field == "A" {
		k = "upper" + k // DuckDB's column names ignore case
	}
	return k
}

// variantCanon spells each field with variant_extract only, so the
// oracle's evaluation does not depend on the spellings under test.
var variantCanon = map[string]string{
	"a": "variant_extract(v, 'a')", "A": "variant_extract(v, 'A')", "b": "variant_extract(v, 'b')",
	"t": "variant_extract(v, 't')", "n.x": "variant_extract(variant_extract(v, 'n'), 'x')",
	"n.y": "variant_extract(variant_extract(v, 'n'), 'y')", "we.ird": "variant_extract(v, 'we.ird')",
	"f": "variant_extract(v, 'f')", "n": "variant_extract(v, 'n')", "arr": "variant_extract(v, 'arr')",
	"zz": "variant_extract(v, 'zz')",
}

var variantSpellings = map[string][]string{
	"a":      {"v.a", "variant_extract(v, 'a')", `v."a"`},
	"A":      {"v.A", `v."A"`, "variant_extract(v, 'A')"},
	"b":      {"v.b"},
	"t":      {"v.t", "variant_extract(v, 't')"},
	"n.x":    {"v.n.x", "variant_extract(variant_extract(v, 'n'), 'x')", `v."n".x`, "variant_extract(v.n, 'x')"},
	"n.y":    {"v.n.y"},
	"we.ird": {`v."we.ird"`, "variant_extract(v, 'we.ird')"},
	"f":      {"v.f"},
	"n":      {"v.n"},
	"arr":    {"v.arr"},
	"zz":     {"v.zz"},
}

var variantFieldNames = []string{"a", "a", "a", "A", "b", "t", "t", "n.x", "n.x", "n.y", "we.ird", "f", "n", "arr", "zz"}

func variantCasts(field string) []string {
	switch field {
	case "b", "n.y":
		return []string{"VARCHAR", "VARCHAR", "INTEGER", ""}
	case "t":
		return []string{"TIMESTAMP", "TIMESTAMP", "DATE", "TIMESTAMP_S", "TIMESTAMP_MS", "TIMESTAMP_NS", "TIMESTAMPTZ", "VARCHAR", ""}
	}
	return []string{"INTEGER", "INTEGER", "BIGINT", "BIGINT", "TINYINT", "SMALLINT", "UINTEGER", "HUGEINT", "DOUBLE", "FLOAT",
		"DECIMAL(18,3)", "DECIMAL(4,1)", "VARCHAR", ""}
}

// edgeLiteral spells a value DuckDB printed (a file's bound) as a
// literal of the cast's type, or a neighbour of it.
func edgeLiteral(rnd *rand.Rand, typ, v string) string {
	quoted := "'" + strings.ReplaceAll(v, "'", "''") + "'"
	switch typ {
	case "VARCHAR":
		if rnd.IntN(3) == 0 {
			return quoted[:len(quoted)-1] + "0'"
		}
		return quoted
	case "TIMESTAMP", "DATE", "TIMESTAMP_S", "TIMESTAMP_MS", "TIMESTAMP_NS", "TIMESTAMPTZ":
		if rnd.IntN(2) == 0 {
			return typ + " " + quoted
		}
		return quoted
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && rnd.IntN(2) == 0 {
		return fmt.Sprint(n + int64(rnd.IntN(3)) - 1)
	}
	if rnd.IntN(4) == 0 {
		return quoted
	}
	return v
}

func variantLiteral(rnd *rand.Rand, typ string) string {
	num := rnd.IntN(13500) - 300
	switch typ {
	case "VARCHAR":
		switch rnd.IntN(3) {
		case 0:
			return fmt.Sprintf("'k%06d'", num)
		case 1:
			return fmt.Sprintf("'%d'", num)
		}
		return fmt.Sprintf("'w%d'", rnd.IntN(60))
	case "TIMESTAMP", "DATE", "TIMESTAMP_S", "TIMESTAMP_MS", "TIMESTAMP_NS", "TIMESTAMPTZ":
		at := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(num)*17*time.Second + time.Duration(rnd.IntN(3))*350*time.Millisecond)
		text := at.Format("2006-01-02 15:04:05.000")
		switch rnd.IntN(4) {
		case 0:
			return "DATE '" + at.Format("2006-01-02") + "'"
		case 1:
			return "'" + text + "'"
		case 2:
			return "TIMESTAMPTZ '" + text + "+00'"
		}
		return "TIMESTAMP '" + text + "'"
	}
	switch rnd.IntN(8) {
	case 0:
		return fmt.Sprintf("%d.5", num)
	case 1:
		return fmt.Sprintf("'%d'", num)
	case 2:
		return fmt.Sprintf("%d.25", num/2)
	case 3:
		return fmt.Sprintf("%d", rnd.IntN(400)-200)
	case 4:
		return fmt.Sprintf("%d000000000", num)
	}
	return fmt.Sprint(num)
}

func randomVariantPred(rnd *rand.Rand, depth int, pools map[string][]string) vpred {
	if depth < 2 {
		switch rnd.IntN(7) {
		case 0, 1:
			l, r := randomVariantPred(rnd, depth+1, pools), randomVariantPred(rnd, depth+1, pools)
			op := []string{" AND ", " OR "}[rnd.IntN(2)]
			for k, t := range r.terms {
				l.terms[k] = t
			}
			return vpred{sql: "(" + l.sql + op + r.sql + ")", pre: "(" + l.pre + op + r.pre + ")", terms: l.terms}
		case 2:
			p := randomVariantPred(rnd, depth+1, pools)
			return vpred{sql: "NOT (" + p.sql + ")", pre: "NOT (" + p.pre + ")", terms: p.terms, single: p.single}
		}
	}
	field := variantFieldNames[rnd.IntN(len(variantFieldNames))]
	sp := variantSpellings[field]
	x := sp[rnd.IntN(len(sp))]
	casts := variantCasts(field)
	typ := casts[rnd.IntN(len(casts))]
	tm := vterm{field: field, canon: variantCanon[field], typ: typ}
	terms := map[string]vterm{tm.key(): tm}
	if typ == "" {
		not := []string{"", " NOT"}[rnd.IntN(2)]
		return vpred{sql: x + " IS" + not + " NULL", pre: "nf_" + tm.key() + " IS" + not + " TRUE", terms: terms}
	}
	term := x + "::" + typ
	if rnd.IntN(2) == 0 {
		term = "CAST(" + x + " AS " + typ + ")"
	}
	pre := "c_" + tm.key()
	lit := func() string {
		if pool := pools[tm.key()]; len(pool) > 0 && rnd.IntN(2) == 0 {
			return edgeLiteral(rnd, typ, pool[rnd.IntN(len(pool))])
		}
		return variantLiteral(rnd, typ)
	}
	var tail string
	switch rnd.IntN(9) {
	case 0:
		tail = " BETWEEN " + lit() + " AND " + lit()
	case 1:
		tail = " IN (" + lit() + ", " + lit() + ", " + lit() + ")"
	case 2:
		tail = " IS" + []string{"", " NOT"}[rnd.IntN(2)] + " NULL"
	case 3:
		l := lit()
		op := []string{"=", "<>", "<", "<=", ">", ">="}[rnd.IntN(6)]
		return vpred{sql: l + " " + op + " " + term, pre: l + " " + op + " " + pre, terms: terms, single: tm.key()}
	default:
		tail = " " + []string{"=", "<>", "<", "<=", ">", ">="}[rnd.IntN(6)] + " " + lit()
	}
	return vpred{sql: term + tail, pre: pre + tail, terms: terms, single: tm.key()}
}
