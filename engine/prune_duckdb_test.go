package engine

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/expr"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/prune"
	"github.com/rocklake/rocklake/stats"
)

// literalsFor are literal spellings to compare a column of each kind with,
// including the ones whose meaning depends on DuckDB's casting rules:
// fractions against integers, DOUBLE literals, FLOAT columns against
// decimals, dates against timestamps, time-zone-less timestamptz text.
var literalsFor = map[string][]string{
	"i8":   {"0", "-128", "127", "1.5", "-0.5", "200", "-1000", "'7'", "3e1", "'1.5'"},
	"i16":  {"0", "100", "-32768", "0.001", "40000", "'-7'", "1e3"},
	"i32":  {"0", "2147483647", "-2147483648", "5.5", "3000000000", "'12'", "2.5e9"},
	"i64":  {"0", "-9223372036854775807", "9.5", "1e19", "-1e19", "'42'", "4611686018427387904"},
	"u8":   {"0", "255", "-1", "254.5", "'3'"},
	"u32":  {"0", "4294967295", "2147483648", "-5", "1e10"},
	"u64":  {"0", "9223372036854775808", "18446744073709551615", "-1", "1.5"},
	"f32":  {"0", "0.1", "-0.0", "'-0.0'", "'inf'", "'-inf'", "'nan'", "'NaN'::FLOAT", "1e38", "3.4e39", "0.1::DOUBLE", "-71.42857"},
	"f64":  {"0", "0.1", "-0.0", "'nan'", "'inf'::DOUBLE", "1e308", "3333.333", "-10000", "1e-320"},
	"d1":   {"0", "1.5", "1.555", "-99.995", "1e2", "'3.14'", "100000000"},
	"d2":   {"0", "-0.0005", "999.9999", "'-1.25'", "1e3"},
	"d3":   {"0", "1.00000000001", "-12345678901.5", "1e20"},
	"dt":   {"DATE '1990-06-01'", "'2000-01-01'", "TIMESTAMP '1990-06-01 12:00:00'", "'infinity'::DATE"},
	"tm":   {"TIME '12:00:00'", "'00:00:00.000001'", "'23:59:59.9999999'"},
	"ts":   {"TIMESTAMP '1990-06-01 00:00:00'", "'2000-01-01'", "DATE '1980-01-01'", "'1970-01-01 00:00:00.0000005'", "TIMESTAMPTZ '1990-06-01 00:00:00+05'"},
	"tms":  {"TIMESTAMP '1950-01-01 00:00:00.0015'", "'1990-06-01'", "TIMESTAMP_MS '1960-01-01 00:00:00.001'"},
	"tns":  {"TIMESTAMP '1990-06-01'", "'1990-06-01 00:00:00.000000001'", "TIMESTAMP_NS '1970-01-01'"},
	"tz":   {"TIMESTAMPTZ '1990-06-01 00:00:00+00'", "'1990-06-01 12:00:00'", "TIMESTAMP '1990-06-01 12:00:00'", "DATE '1990-06-01'", "'2000-01-01 00:00:00-08'"},
	"s":    {"''", "'k5'", "'k500'", "'A'", "'é'", "'zzz'"},
	"b":    {"'\\x80'::BLOB", "'x1'::BLOB", "'\\xFF\\x00'::BLOB"},
	"u":    {"'00000000-0000-0000-0000-000000000000'", "'ffffffff-ffff-ffff-ffff-ffffffffffff'::UUID"},
	"bo":   {"true", "false"},
	"lowc": {"'v1'", "'v9'", "'v10'"},
}

// TestPlannerAgreesWithDuckDB checks file- and row-group-level decisions on
// DuckDB-written files against DuckDB itself: a skipped unit has no row
// DuckDB returns for the predicate, an all-match unit returns all its rows.
// The literals exercise DuckDB's casting rules, which the reference in
// package prune does not model.
func TestPlannerAgreesWithDuckDB(t *testing.T) {
	db, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	dir := t.TempDir()
	var names []string
	for n := range duckColumns {
		names = append(names, n)
	}
	sort.Strings(names)
	var sel []string
	for _, n := range names {
		sel = append(sel, fmt.Sprintf("CASE WHEN hash(i * 31) %% 13 = 0 THEN NULL ELSE %s END AS %s", duckColumns[n], n))
	}
	var paths []string
	for f := range 4 {
		path := filepath.Join(dir, fmt.Sprintf("p%d.parquet", f))
		order := []string{"i64", "s", "ts", "f64"}[f]
		q := fmt.Sprintf("COPY (SELECT %s FROM range(%d, %d) r(i) ORDER BY %s) TO '%s' (FORMAT parquet, ROW_GROUP_SIZE 2048)",
			strings.Join(sel, ", "), f*5000, f*5000+6000, order, path)
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, path)
	}
	c, _ := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	if _, err := ingest.Add(c, "t", paths, ingest.Options{Create: true}); err != nil {
		t.Fatal(err)
	}
	r, _ := c.Read(catalog.Latest)
	defer r.Close()
	tb, _ := r.Table("t")
	cols, _ := r.Columns(tb.ID)
	files, _ := r.Files(tb.ID)

	rnd := rand.New(rand.NewPCG(11, 13))
	ops := []string{"=", "<>", "<", "<=", ">", ">="}
	var preds []string
	for _, n := range names {
		for _, l := range literalsFor[n] {
			for _, op := range ops {
				preds = append(preds, fmt.Sprintf("%s %s %s", n, op, l))
			}
			preds = append(preds, fmt.Sprintf("NOT (%s < %s)", n, l), fmt.Sprintf("%s IN (%s, %s)", n, l, l))
		}
		preds = append(preds, n+" IS NULL", n+" IS NOT NULL")
	}
	preds = append(preds, "starts_with(s, 'k1')", "s LIKE 'k5%'", "s NOT LIKE 'k%'", "isnan(f64)", "NOT isnan(f32)",
		"f64 > 0 OR isnan(f64)", "i64 BETWEEN 0 AND 1000000000000")
	for range 100 { // random conjunctions and disjunctions
		a, b := preds[rnd.IntN(len(preds))], preds[rnd.IntN(len(preds))]
		preds = append(preds, fmt.Sprintf("(%s) %s (%s)", a, []string{"AND", "OR"}[rnd.IntN(2)], b))
	}
	// Row-group boundaries of each file, for checking whole plans.
	rgBounds := map[int64][][2]int64{}
	for _, f := range files {
		rgs, _ := r.RowGroupStats(tb.ID, cols[0].ID, f.ID)
		for _, rg := range rgs {
			rgBounds[f.ID] = append(rgBounds[f.ID], [2]int64{rg.FirstRow, rg.FirstRow + rg.Stats.RowCount})
		}
	}
	var checks, skips, disagreeErr, planChecks int
	for pi, p := range preds {
		b, bindErr := expr.Compile(p, cols)
		if bindErr == nil && pi%4 == 0 {
			// The whole planner, bloom filters (DuckDB writes them for
			// dictionary-encoded chunks) consulted for every row group.
			plan, err := prune.PlanTable(r, "t", p, prune.Options{IndexMinRows: -1})
			if err != nil {
				t.Fatalf("plan %q: %v", p, err)
			}
			for _, f := range files {
				keptRG := map[int32]bool{}
				for _, kf := range plan.KeptFiles {
					if kf.FileID == f.ID {
						for _, g := range kf.RowGroups {
							keptRG[g] = true
						}
					}
				}
				for g, bd := range rgBounds[f.ID] {
					if keptRG[int32(g)] {
						continue
					}
					var got int64
					q := fmt.Sprintf("SELECT count(*) FROM read_parquet(?, file_row_number = true) WHERE file_row_number >= %d AND file_row_number < %d AND (%s)", bd[0], bd[1], p)
					if err := db.QueryRow(q, f.Path).Scan(&got); err != nil {
						t.Fatal(err)
					}
					planChecks++
					if got != 0 {
						t.Fatalf("UNSOUND PLAN: row group %d of %s dropped for %q, DuckDB returns %d rows", g, filepath.Base(f.Path), p, got)
					}
				}
			}
		}
		for _, f := range files {
			var n int64
			duckErr := db.QueryRow(fmt.Sprintf("SELECT count(*) FROM read_parquet(?) WHERE %s", p), f.Path).Scan(&n)
			if (bindErr != nil) != (duckErr != nil) {
				disagreeErr++
				t.Logf("error disagreement on %q: rocklake %v; DuckDB %v", p, bindErr, duckErr)
				continue
			}
			if bindErr != nil {
				continue
			}
			eval := prune.Compile(b.Pred)
			checks++
			res := eval(prune.StatsOnly(func(colID int64) *stats.Column {
				var st *stats.Column
				_ = r.FileColumnStats(tb.ID, colID, func(id int64, s *stats.Column) error {
					if id == f.ID {
						st = s
					}
					return nil
				})
				return st
			}))
			switch {
			case res == prune.Skip && n != 0:
				t.Fatalf("UNSOUND SKIP of %s for %q: DuckDB returns %d rows (bound: %s)", filepath.Base(f.Path), p, n, b.Pred)
			case res == prune.AllMatch && n != f.RecordCount:
				t.Fatalf("WRONG ALL-MATCH of %s for %q: DuckDB returns %d of %d rows (bound: %s)", filepath.Base(f.Path), p, n, f.RecordCount, b.Pred)
			case res == prune.Skip:
				skips++
			}
			checks += checkRowGroups(t, db, r, tb.ID, f, b, eval, p)
		}
	}
	t.Logf("%d predicates, %d unit checks against DuckDB, %d file skips, %d dropped row groups of whole plans checked, %d error disagreements",
		len(preds), checks, skips, planChecks, disagreeErr)
	if disagreeErr > len(preds)/20 {
		t.Fatalf("rocklake and DuckDB disagree on whether %d predicates are valid", disagreeErr)
	}
}

// checkRowGroups compares each row group's decision with DuckDB's count over
// its rows (file_row_number within the row group's range).
func checkRowGroups(t *testing.T, db *sql.DB, r *catalog.Reader, tableID int64, f catalog.DataFile, b *expr.Bound, eval prune.Evaluator, p string) int {
	t.Helper()
	per := map[int32]map[int64]*stats.Column{}
	bounds := map[int32][2]int64{}
	for _, c := range b.Columns {
		rgs, _ := r.RowGroupStats(tableID, c.ID, f.ID)
		for _, rg := range rgs {
			if per[rg.Index] == nil {
				per[rg.Index] = map[int64]*stats.Column{}
			}
			s := rg.Stats
			per[rg.Index][c.ID] = &s
			bounds[rg.Index] = [2]int64{rg.FirstRow, rg.FirstRow + rg.Stats.RowCount}
		}
	}
	n := 0
	for idx, m := range per {
		res := eval(prune.StatsOnly(func(colID int64) *stats.Column { return m[colID] }))
		if res == prune.Maybe {
			continue
		}
		lo, hi := bounds[idx][0], bounds[idx][1]
		var got int64
		q := fmt.Sprintf("SELECT count(*) FROM read_parquet(?, file_row_number = true) WHERE file_row_number >= %d AND file_row_number < %d AND (%s)", lo, hi, p)
		if err := db.QueryRow(q, f.Path).Scan(&got); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		n++
		if res == prune.Skip && got != 0 {
			t.Fatalf("UNSOUND SKIP of row group %d of %s for %q: DuckDB returns %d rows (bound: %s)", idx, filepath.Base(f.Path), p, got, b.Pred)
		}
		if res == prune.AllMatch && got != hi-lo {
			t.Fatalf("WRONG ALL-MATCH of row group %d of %s for %q: DuckDB returns %d of %d (bound: %s)", idx, filepath.Base(f.Path), p, got, hi-lo, b.Pred)
		}
	}
	return n
}
