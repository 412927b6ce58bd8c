package engine

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/prune"
)

var (
	hiveFuzzSeed = flag.Uint64("hivefuzz.seed", 1, "seed of the partitioned-table fuzzer's first dataset; dataset i uses seed+i")
	hiveFuzzSets = flag.Int("hivefuzz.sets", 6, "partitioned datasets the fuzzer writes")
	hiveFuzzN    = flag.Int("hivefuzz.n", 60, "predicates per dataset")
)

// hiveDomains are the values a partition key of each family takes:
// NULL (written __HIVE_DEFAULT_PARTITION__), the empty string, values
// DuckDB URL-encodes, negative integers, dates.
var hiveDomains = map[string][]string{
	"BIGINT":  {"NULL", "-3", "0", "7", "12", "100"},
	"VARCHAR": {"NULL", "''", "'a'", "'a b'", "'b'", "'Z/ü=%'", "'-1'", "'x'"},
	"DATE":    {"NULL", "DATE '2023-12-31'", "DATE '2024-01-01'", "DATE '2024-02-29'"},
}

// hiveLits are literals predicates compare with: the domain's and their
// neighbours.
var hiveLits = map[string][]string{
	"BIGINT":  {"-4", "-3", "0", "1", "7", "11", "12", "100", "101"},
	"VARCHAR": {"''", "'a'", "'a b'", "'a c'", "'b'", "'Z/ü=%'", "'Z'", "'-1'", "'x'", "'zz'"},
	"DATE":    {"DATE '2023-12-30'", "DATE '2023-12-31'", "DATE '2024-01-01'", "DATE '2024-02-29'", "DATE '2024-03-01'"},
	"INTEGER": {"-1", "0", "5", "10", "20"},
}

type hiveFuzzCol struct{ name, typ string }

// TestHivePartitionFuzz writes random datasets with DuckDB's COPY ...
// PARTITION_BY (one to three keys of integers, strings and dates, NULL and
// empty partitions), registers each, and for random predicates over
// partition and data columns checks that no skipped file holds a matching
// row, that every file planned to match in full does, and that rocklake's
// answers (rows, count/min/max, from metadata or not) equal DuckDB's over
// read_parquet(glob, hive_partitioning = true).
func TestHivePartitionFuzz(t *testing.T) {
	ctx := context.Background()
	var queries, skipped, allMatch, metadata int
	for set := range *hiveFuzzSets {
		seed := *hiveFuzzSeed + uint64(set)
		r := rand.New(rand.NewPCG(seed, 7))
		families := []string{"BIGINT", "VARCHAR", "DATE"}
		r.Shuffle(len(families), func(i, j int) { families[i], families[j] = families[j], families[i] })
		keys := make([]hiveFuzzCol, 1+r.IntN(3))
		for i := range keys {
			keys[i] = hiveFuzzCol{name: fmt.Sprintf("k%d", i), typ: families[i]}
		}
		var rows []string
		for i := range 120 + r.IntN(200) {
			vals := []string{fmt.Sprint(i)}
			if r.IntN(8) == 0 {
				vals = append(vals, "NULL")
			} else {
				vals = append(vals, fmt.Sprint(r.IntN(21)))
			}
			for _, k := range keys {
				dom := hiveDomains[k.typ]
				vals = append(vals, dom[r.IntN(len(dom))])
			}
			rows = append(rows, "("+strings.Join(vals, ", ")+")")
		}
		names := []string{"id", "v"}
		var keyNames []string
		for _, k := range keys {
			names = append(names, k.name)
			keyNames = append(keyNames, k.name)
		}
		dir := filepath.Join(t.TempDir(), "out")
		src := fmt.Sprintf("SELECT * FROM (VALUES %s) t(%s)", strings.Join(rows, ", "), strings.Join(names, ", "))
		copySQL := fmt.Sprintf("COPY (%s) TO '%s' (FORMAT parquet, PARTITION_BY (%s))", src, dir, strings.Join(keyNames, ", "))
		if r.IntN(2) == 0 {
			// Two files per partition: the even rows, then the odd ones
			// appended beside them.
			copySQL = fmt.Sprintf(`COPY (%[1]s WHERE id %% 2 = 0) TO '%[2]s' (FORMAT parquet, PARTITION_BY (%[3]s), FILENAME_PATTERN 'even_{uuid}');
				COPY (%[1]s WHERE id %% 2 = 1) TO '%[2]s' (FORMAT parquet, PARTITION_BY (%[3]s), FILENAME_PATTERN 'odd_{uuid}', APPEND)`,
				src, dir, strings.Join(keyNames, ", "))
		}
		base, err := Open("")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := base.Exec(copySQL); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		glob := dir + "/**/*.parquet"
		if _, err := base.Exec(fmt.Sprintf(`CREATE VIEW t AS SELECT * FROM read_parquet('%s', hive_partitioning = true);
			CREATE VIEW tf AS SELECT *, filename FROM read_parquet('%s', hive_partitioning = true, filename = true)`, glob, glob)); err != nil {
			t.Fatal(err)
		}
		c, _ := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
		if _, err := ingest.Add(c, "t", []string{dir}, ingest.Options{Create: true}); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		e, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		var files []string
		if err := queryCol(base, fmt.Sprintf("SELECT DISTINCT filename FROM read_parquet('%s', filename = true)", glob), &files); err != nil {
			t.Fatal(err)
		}
		cols := append([]hiveFuzzCol{{name: "v", typ: "INTEGER"}}, keys...)
		for range *hiveFuzzN {
			pred := hivePred(r, cols, 2)
			queries++
			q := "SELECT * FROM t WHERE " + pred
			res, err := e.Query(ctx, q, QueryOptions{Snapshot: catalog.Latest})
			want, werr := baseline(t, base, q)
			if err != nil || werr != nil {
				if (err == nil) != (werr == nil) {
					t.Errorf("seed %d: %s: rocklake's error %v, DuckDB's %v", seed, q, err, werr)
				}
				continue
			}
			var got []string
			for _, row := range res.Rows {
				got = append(got, rowText(row))
			}
			if !sameRows(got, want, false) {
				t.Errorf("seed %d: %s: %d rows, DuckDB %d", seed, q, len(got), len(want))
			}
			sk, am := checkFileDecisions(t, base, "tf", pred, res.Tables[0].Plan, files, fmt.Sprintf("seed %d", seed))
			skipped, allMatch = skipped+sk, allMatch+am
			k := cols[r.IntN(len(cols))].name
			agg := fmt.Sprintf("SELECT count(*), min(%s), max(%s) FROM t WHERE %s", k, k, pred)
			ares, err := e.Query(ctx, agg, QueryOptions{Snapshot: catalog.Latest})
			awant, werr := baseline(t, base, agg)
			if err != nil || werr != nil {
				if (err == nil) != (werr == nil) {
					t.Errorf("seed %d: %s: rocklake's error %v, DuckDB's %v", seed, agg, err, werr)
				}
				continue
			}
			if ares.Metadata {
				metadata++
			}
			if len(ares.Rows) != 1 || len(awant) != 1 || rowText(ares.Rows[0]) != awant[0] {
				t.Errorf("seed %d: %s: %v (metadata %v), DuckDB %v", seed, agg, ares.Rows, ares.Metadata, awant)
			}
		}
		e.Close()
		base.Close()
	}
	t.Logf("%d predicates, %d file skips checked, %d all-match files checked, %d metadata answers", queries, skipped, allMatch, metadata)
	if skipped == 0 || allMatch == 0 || metadata == 0 {
		t.Errorf("the fuzzer exercised too little: %d skips, %d all-match files, %d metadata answers", skipped, allMatch, metadata)
	}
}

func queryCol(db *sql.DB, q string, out *[]string) error {
	rows, err := db.Query(q)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return err
		}
		*out = append(*out, s)
	}
	slices.Sort(*out)
	return rows.Err()
}

// hivePred is a random predicate over cols: comparisons, IN, BETWEEN,
// IS [NOT] NULL, LIKE on strings, NOT, AND, OR.
func hivePred(r *rand.Rand, cols []hiveFuzzCol, depth int) string {
	if depth > 0 && r.IntN(3) == 0 {
		a, b := hivePred(r, cols, depth-1), hivePred(r, cols, depth-1)
		switch r.IntN(3) {
		case 0:
			return "(" + a + " AND " + b + ")"
		case 1:
			return "(" + a + " OR " + b + ")"
		default:
			return "NOT (" + a + ")"
		}
	}
	c := cols[r.IntN(len(cols))]
	lits := hiveLits[c.typ]
	lit := func() string { return lits[r.IntN(len(lits))] }
	switch r.IntN(8) {
	case 0:
		return c.name + " IS NULL"
	case 1:
		return c.name + " IS NOT NULL"
	case 2:
		n := r.IntN(4)
		var in []string
		for range n {
			in = append(in, lit())
		}
		if n == 0 {
			return c.name + " IN (" + lit() + ")"
		}
		return c.name + " IN (" + strings.Join(in, ", ") + ")"
	case 3:
		a, b := lit(), lit()
		return c.name + " BETWEEN " + a + " AND " + b
	case 4:
		if c.typ == "VARCHAR" {
			return c.name + " LIKE " + []string{"'a%'", "'%b'", "'Z/%'", "'_'", "''"}[r.IntN(5)]
		}
		fallthrough
	default:
		return c.name + " " + []string{"=", "<>", "<", "<=", ">", ">="}[r.IntN(6)] + " " + lit()
	}
}

// checkFileDecisions checks a plan's file decisions against DuckDB reading
// view (the table's files, with a filename column): no file skipped holds a
// row that matches pred, and every file planned to match in full matches
// in every row. It returns the skips and the all-match files it checked.
func checkFileDecisions(t *testing.T, base *sql.DB, view, pred string, plan *prune.Plan, files []string, where string) (skipped, allMatch int) {
	t.Helper()
	// Per file, the rows that match and the rows that do not, in one read.
	match, miss := map[string]int{}, map[string]int{}
	rws, err := base.Query(fmt.Sprintf("SELECT filename, count(*) FILTER (WHERE %[1]s), count(*) FILTER (WHERE (%[1]s) IS NOT TRUE) FROM %[2]s GROUP BY filename", pred, view))
	if err != nil {
		t.Fatal(err)
	}
	for rws.Next() {
		var f string
		var m, n int
		if err := rws.Scan(&f, &m, &n); err != nil {
			t.Fatal(err)
		}
		match[f], miss[f] = m, n
	}
	rws.Close()
	kept := map[string]bool{}
	for _, kf := range plan.KeptFiles {
		kept[kf.Path] = true
		if kf.AllMatch {
			allMatch++
			if miss[kf.Path] != 0 {
				t.Errorf("%s: %s: %s planned to match in full, %d rows do not", where, pred, kf.Path, miss[kf.Path])
			}
		}
	}
	for _, f := range files {
		if kept[f] {
			continue
		}
		skipped++
		if match[f] != 0 {
			t.Errorf("%s: UNSOUND SKIP: %s: %s skipped, %d rows match", where, pred, f, match[f])
		}
	}
	return skipped, allMatch
}
