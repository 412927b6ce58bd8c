package maintain

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/internal/cattest"
	"github.com/rocklake/rocklake/kv/kvtest"
)

var (
	layoutSeed = flag.Uint64("layout.seed", 1, "seed of the layout fuzzer's first history; history i uses seed+i")
	layoutSets = flag.Int("layout.sets", 4, "table histories the layout fuzzer makes")
	layoutN    = flag.Int("layout.n", 12, "predicates per snapshot checked")
)

// The columns of the layout fuzzer's table; k, in every other history, is a
// Hive partition column (its values in the files' directories).
var layoutCols = []struct{ name, typ string }{
	{"id", "BIGINT"}, {"ts", "TIMESTAMP"}, {"d", "DATE"}, {"n", "INTEGER"}, {"s", "VARCHAR"},
}

// layoutFields are the declared layout fields the fuzzer chooses from:
// every transform, on a timestamp, a date, an integer and a string, each
// over a column as first named (the fuzzer renames them).
var layoutFields = []struct{ spec, col string }{
	{"year(%s)", "ts"}, {"month(%s)", "ts"}, {"day(%s)", "ts"}, {"hour(%s)", "ts"}, {"year(%s)", "d"}, {"month(%s)", "d"}, {"day(%s)", "d"},
	{"%s", "n"}, {"identity(%s)", "s"}, {"bucket(3, %s)", "id"}, {"bucket(5, %s)", "s"}, {"bucket(2, %s)", "ts"},
}

// layoutValueSQL is, independently of the rewrite's own expressions, the
// text a file's layout value of a field has (catalog.LayoutValue).
func layoutValueSQL(transform, col string) string {
	switch {
	case transform == "year":
		return fmt.Sprintf("year(%s)::VARCHAR", col)
	case transform == "month":
		return fmt.Sprintf("strftime(%s, '%%Y-%%m')", col)
	case transform == "day":
		return fmt.Sprintf("%s::DATE::VARCHAR", col)
	case transform == "hour":
		return fmt.Sprintf("strftime(%s, '%%Y-%%m-%%d %%H:00:00')", col)
	case strings.HasPrefix(transform, "bucket("):
		return fmt.Sprintf("(hash(%s) %% %s)::VARCHAR", col, strings.TrimSuffix(strings.TrimPrefix(transform, "bucket("), ")"))
	}
	return col + "::VARCHAR"
}

// TestRewriteLayoutFuzz builds random histories of files added (NULLs in
// every column; in every other history Hive-partitioned by k, NULL
// partitions spelled __HIVE_DEFAULT_PARTITION__), declared layouts of
// every transform set and reset, columns renamed (the layout's and the
// partition column too) and n widened, and optimize and compact runs, and
// after every step compares rocklake with DuckDB reading the files added,
// under the names and types of the time (a rewrite changes no row): all
// rows, and the rows and count/min/max of random predicates. After each rewrite, every file it wrote holds one
// value of each layout field and one Hive partition, its recorded layout
// values are those of its rows, and a Hive partition predicate keeps only
// that partition's files, in full.
func TestRewriteLayoutFuzz(t *testing.T) {
	ctx := context.Background()
	var snapshots, predicates, rewrites, written int
	for set := range *layoutSets {
		seed := *layoutSeed + uint64(set)
		r := rand.New(rand.NewPCG(seed, 2222))
		hive := set%2 == 1
		dir := t.TempDir()
		base, err := engine.Open("")
		if err != nil {
			t.Fatal(err)
		}
		c, _ := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
		var defs []string
		for _, col := range layoutCols {
			defs = append(defs, col.name+" "+col.typ)
		}
		if hive {
			defs = append(defs, "k BIGINT")
		}
		var parts []string
		if hive {
			parts = []string{"k"}
		}
		cattest.CreateTable(t, c, "t", defs, parts...)
		e, err := engine.New(c)
		if err != nil {
			t.Fatal(err)
		}
		// The oracle: every file added, read with its partition value,
		// each column under the name it had then (cur: the names now,
		// by the first; nType: n's type now).
		var oracle []string
		cur := map[string]string{"id": "id", "ts": "ts", "d": "d", "n": "n", "s": "s", "k": "k"}
		nType := "INTEGER"
		q := func(orig string) string { return fmt.Sprintf("%q", cur[orig]) }
		var history []string
		var held []map[string]string // per oracle file: the first name → the file's ("k": its value's SQL)
		nextID := 0
		// oracleSQL reads every file added as the table is now.
		oracleSQL := func() string {
			var parts []string
			for i, o := range oracle {
				sel := []string{}
				for _, col := range layoutCols {
					typ := col.typ
					if col.name == "n" {
						typ = nType
					}
					sel = append(sel, fmt.Sprintf("CAST(%q AS %s) AS %s", held[i][col.name], typ, q(col.name)))
				}
				if hive {
					sel = append(sel, held[i]["k"]+" AS "+q("k"))
				}
				parts = append(parts, fmt.Sprintf(o, strings.Join(sel, ", ")))
			}
			return strings.Join(parts, " UNION ALL ")
		}
		sel := func() string {
			out := fmt.Sprintf("%s::VARCHAR, %s::VARCHAR, %s::VARCHAR, %s::VARCHAR, %s::VARCHAR", q("id"), q("ts"), q("d"), q("n"), q("s"))
			if hive {
				out += ", " + q("k") + "::VARCHAR"
			}
			return out
		}
		rowsOf := func(db interface {
			QueryContext(context.Context, string, ...any) (*sql.Rows, error)
		}, q string) ([]string, error) {
			rs, err := db.QueryContext(ctx, q)
			if err != nil {
				return nil, err
			}
			defer rs.Close()
			cols, _ := rs.Columns()
			var out []string
			for rs.Next() {
				vals := make([]sql.NullString, len(cols))
				ptrs := make([]any, len(cols))
				for i := range vals {
					ptrs[i] = &vals[i]
				}
				if err := rs.Scan(ptrs...); err != nil {
					return nil, err
				}
				var parts []string
				for _, v := range vals {
					if v.Valid {
						parts = append(parts, v.String)
					} else {
						parts = append(parts, "NULL")
					}
				}
				out = append(out, strings.Join(parts, "|"))
			}
			slices.Sort(out)
			return out, rs.Err()
		}
		rocklake := func(q string) ([]string, error) {
			res, err := e.Query(ctx, q, engine.QueryOptions{Snapshot: catalog.Latest})
			if err != nil {
				return nil, err
			}
			var out []string
			for _, row := range res.Rows {
				var parts []string
				for _, v := range row {
					if v == nil {
						parts = append(parts, "NULL")
					} else {
						parts = append(parts, *v)
					}
				}
				out = append(out, strings.Join(parts, "|"))
			}
			slices.Sort(out)
			return out, nil
		}
		value := func(typ string) string {
			if r.IntN(6) == 0 {
				return "NULL"
			}
			switch typ {
			case "TIMESTAMP":
				at := time.Date(2023, 12, 31, 20, 0, 0, 0, time.UTC).Add(time.Duration(r.IntN(70*24*60)) * time.Minute)
				return "'" + at.Format("2006-01-02 15:04:05") + "'"
			case "DATE":
				return "'" + time.Date(2023, 12, 25, 0, 0, 0, 0, time.UTC).AddDate(0, 0, r.IntN(80)).Format("2006-01-02") + "'"
			case "INTEGER":
				return fmt.Sprint(r.IntN(9) - 2)
			}
			return []string{"''", "'a'", "'b'", "'hi'", "'zz'"}[r.IntN(5)]
		}
		lits := map[string][]string{
			"id":  {"0", "5", "40", "100"},
			"ts":  {"TIMESTAMP '2024-01-01 00:00:00'", "TIMESTAMP '2024-01-31 23:30:00'", "TIMESTAMP '2024-02-15 12:00:00'", "TIMESTAMP '2023-12-31 21:00:00'"},
			"d":   {"DATE '2024-01-01'", "DATE '2024-02-01'", "DATE '2023-12-31'", "DATE '2024-03-01'"},
			"n":   {"-1", "0", "3", "6"},
			"s":   {"''", "'a'", "'hi'", "'zz'"},
			"k":   {"-3", "0", "7", "1"},
			"pts": {"ts", "d", "n", "s", "id", "k"},
		}
		pred := func() string {
			var parts []string
			for range 1 + r.IntN(2) {
				names := lits["pts"][:5]
				if hive {
					names = lits["pts"]
				}
				orig := names[r.IntN(len(names))]
				l, col := lits[orig], q(orig)
				switch r.IntN(5) {
				case 0:
					parts = append(parts, col+" IS NULL")
				case 1:
					parts = append(parts, col+" BETWEEN "+l[r.IntN(len(l))]+" AND "+l[r.IntN(len(l))])
				default:
					parts = append(parts, col+" "+[]string{"=", "<>", "<", "<=", ">", ">="}[r.IntN(6)]+" "+l[r.IntN(len(l))])
				}
			}
			return strings.Join(parts, []string{" AND ", " OR "}[r.IntN(2)])
		}
		addFiles := func() {
			var paths []string
			for range 1 + r.IntN(3) {
				name := fmt.Sprintf("f%03d.parquet", len(oracle))
				path := filepath.Join(dir, name)
				kval := ""
				if hive {
					v := []string{"__HIVE_DEFAULT_PARTITION__", "-3", "0", "7"}[r.IntN(4)]
					path = filepath.Join(dir, cur["k"]+"="+v, name)
					kval = "CAST(" + map[bool]string{true: "NULL", false: v}[v == "__HIVE_DEFAULT_PARTITION__"] + " AS BIGINT)"
					if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
						t.Fatal(err)
					}
				}
				var rows []string
				for range 5 + r.IntN(30) {
					vals := []string{fmt.Sprint(nextID)}
					nextID++
					for _, col := range layoutCols[1:] {
						vals = append(vals, value(col.typ))
					}
					rows = append(rows, "("+strings.Join(vals, ", ")+")")
				}
				var cast []string
				for i, col := range layoutCols {
					typ := col.typ
					if col.name == "n" {
						typ = nType
					}
					cast = append(cast, fmt.Sprintf("CAST(c%d AS %s) AS %s", i, typ, q(col.name)))
				}
				q := fmt.Sprintf("COPY (SELECT %s FROM (VALUES %s) v(c0, c1, c2, c3, c4)) TO '%s' (FORMAT parquet, ROW_GROUP_SIZE %d)",
					strings.Join(cast, ", "), strings.Join(rows, ", "), path, 4+r.IntN(10))
				if _, err := base.Exec(q); err != nil {
					t.Fatal(err)
				}
				oracle = append(oracle, fmt.Sprintf("SELECT %%s FROM read_parquet('%s', hive_partitioning = false)", path))
				held = append(held, map[string]string{})
				for _, col := range layoutCols {
					held[len(held)-1][col.name] = cur[col.name]
				}
				held[len(held)-1]["k"] = kval
				paths = append(paths, path)
			}
			if _, err := ingest.Add(c, "t", paths, ingest.Options{}); err != nil {
				t.Fatalf("seed %d: %s: add: %v", seed, strings.Join(history, "; "), err)
			}
			history = append(history, fmt.Sprintf("add %d", len(paths)))
		}
		addFiles()
		for range 10 {
			var before map[int64]bool
			switch step := r.IntN(7); {
			case step < 2:
				addFiles()
				continue
			case step == 2:
				var fields []string
				for range 1 + r.IntN(2) {
					lf := layoutFields[r.IntN(len(layoutFields))]
					if f := fmt.Sprintf(lf.spec, cur[lf.col]); !slices.Contains(fields, f) {
						fields = append(fields, f)
					}
				}
				a := catalog.Alteration{Kind: catalog.SetPartitioning, Partitioning: fields}
				if r.IntN(6) == 0 {
					a.Partitioning = nil
				}
				tx, _ := c.Begin()
				tx.AlterTable("t", a)
				// The layout it has already makes no snapshot; the checks
				// run all the same.
				if _, err := tx.Commit(); err != nil && !errors.Is(err, catalog.ErrUnchanged) {
					t.Fatalf("seed %d: %s: %v", seed, a, err)
				}
				history = append(history, a.String())
			case step == 6:
				// A rename (of any column but id, the partition column and
				// the layout's included), or n widened.
				orig := []string{"ts", "d", "n", "s", "k", "n", "k"}[r.IntN(7)]
				if orig == "k" && !hive {
					orig = "s"
				}
				a := catalog.Alteration{Kind: catalog.RenameColumn, Column: cur[orig], NewName: fmt.Sprintf("%s_%d", orig, len(history))}
				if orig == "n" && nType == "INTEGER" && r.IntN(2) == 0 {
					a = catalog.Alteration{Kind: catalog.SetColumnType, Column: cur["n"], Type: "BIGINT"}
				}
				tx, _ := c.Begin()
				tx.AlterTable("t", a)
				if _, err := tx.Commit(); err != nil {
					t.Fatalf("seed %d: %s: %v", seed, a, err)
				}
				if a.Kind == catalog.RenameColumn {
					cur[orig] = a.NewName
				} else {
					nType = "BIGINT"
				}
				history = append(history, a.String())
			default:
				before = liveFiles(t, c)
				var err error
				if step == 3 || step == 4 {
					by := cur[[]string{"id", "ts", "d", "n", "s"}[r.IntN(5)]]
					_, err = Optimize(ctx, e, "t", OptimizeOptions{SortBy: []string{by}, RowsPerFile: int64(5 + r.IntN(40))})
					history = append(history, "optimize by "+by)
				} else {
					_, err = MergeSmallFiles(ctx, e, "t", MergeOptions{RowsPerFile: int64(20 + r.IntN(200))})
					history = append(history, "compact")
				}
				if err != nil {
					t.Fatalf("seed %d: %s: %v", seed, strings.Join(history, "; "), err)
				}
				rewrites++
			}
			snapshots++
			where := fmt.Sprintf("seed %d (%s)", seed, strings.Join(history, "; "))
			if _, err := base.Exec("CREATE OR REPLACE VIEW o AS " + oracleSQL()); err != nil {
				t.Fatal(err)
			}
			for i := range *layoutN + 1 {
				p := "true"
				if i > 0 {
					p = pred()
				}
				predicates++
				for _, q := range []string{
					fmt.Sprintf("SELECT %s FROM %%s WHERE %s", sel(), p),
					fmt.Sprintf("SELECT count(*)::VARCHAR, min(%s)::VARCHAR, max(%s)::VARCHAR, min(%s), max(%s)::VARCHAR, typeof(any_value(%s)) FROM %%s WHERE %s", q("ts"), q("d"), q("s"), q("n"), q("n"), p),
				} {
					got, err := rocklake(fmt.Sprintf(q, "t"))
					want, werr := rowsOf(base, fmt.Sprintf(q, "o"))
					if err != nil || werr != nil || !slices.Equal(got, want) {
						t.Fatalf("%s: %s: %d rows (%v), DuckDB %d (%v)\n%v\n%v", where, fmt.Sprintf(q, "t"), len(got), err, len(want), werr, got, want)
					}
				}
			}
			if before != nil {
				written += checkWritten(t, ctx, c, e, base, before, cur["k"], hive, where)
			}
		}
		e.Close()
		base.Close()
	}
	t.Logf("%d snapshots, %d predicates, %d rewrites writing %d files", snapshots, predicates, rewrites, written)
	if rewrites == 0 || written == 0 {
		t.Errorf("the fuzzer exercised too little: %d rewrites, %d files written", rewrites, written)
	}
}

func liveFiles(t *testing.T, c *catalog.Catalog) map[int64]bool {
	t.Helper()
	out := map[int64]bool{}
	for _, f := range liveFilesOf(t, c, "t") {
		out[f.ID] = true
	}
	return out
}

// checkWritten checks the files a rewrite wrote (those live now and not
// before): one value of each layout field, recorded as its rows have it,
// and, under Hive partitions, one partition whose predicate keeps its
// files only, in full. It returns how many it checked.
func checkWritten(t *testing.T, ctx context.Context, c *catalog.Catalog, e *engine.Engine, base *sql.DB, before map[int64]bool, k string, hive bool, where string) int {
	t.Helper()
	r, err := c.Read(catalog.Latest)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tb, _ := r.Table("t")
	files, _ := r.Files(tb.ID)
	cols, _ := r.Columns(tb.ID)
	name := map[int64]string{}
	for _, col := range cols {
		name[col.ID] = col.Name
	}
	n := 0
	for _, f := range files {
		if before[f.ID] {
			continue
		}
		n++
		if len(f.LayoutValues) != len(tb.PartitionedBy) {
			t.Errorf("%s: %s: layout values %v for layout %v", where, f.Path, f.LayoutValues, tb.PartitionedBy)
			continue
		}
		for _, lv := range f.LayoutValues {
			x := layoutValueSQL(lv.Transform, fmt.Sprintf("%q", name[lv.ColumnID]))
			var distinct int
			var v sql.NullString
			if err := base.QueryRowContext(ctx, fmt.Sprintf("SELECT count(DISTINCT coalesce(%[1]s, '~NULL~')), any_value(%[1]s) FROM read_parquet('%[2]s', hive_partitioning = false)", x, f.Path)).Scan(&distinct, &v); err != nil {
				t.Fatal(err)
			}
			if distinct != 1 || v.Valid != lv.Value.Known || v.String != lv.Value.V {
				t.Errorf("%s: %s: %s(%s): %d values in the file, the first %v; recorded %v", where, f.Path, lv.Transform, name[lv.ColumnID], distinct, v, lv.Value)
			}
		}
		if !hive {
			continue
		}
		pv := f.PartitionValues[0].Value
		p := fmt.Sprintf("%q IS NULL", k)
		if pv.Known {
			p = fmt.Sprintf("%q = %s", k, pv.V)
		}
		// Under its partition's directory, as the files added spelled it
		// (under the key's first name: a rename does not move files).
		if !strings.Contains(filepath.ToSlash(f.Path), map[bool]string{true: "=" + pv.V + "/", false: "=__HIVE_DEFAULT_PARTITION__/"}[pv.Known]) {
			t.Errorf("%s: %s is not under its partition's directory (%v)", where, f.Path, pv)
		}
		res, err := e.Query(ctx, "SELECT count(*) FROM t WHERE "+p, engine.QueryOptions{Snapshot: catalog.Latest})
		if err != nil {
			t.Fatal(err)
		}
		for _, kf := range res.Tables[0].Plan.KeptFiles {
			kv, ok := kf.Partition[k]
			if !ok || !kf.AllMatch || (kv == nil) == pv.Known || (kv != nil && *kv != pv.V) {
				t.Errorf("%s: %s keeps %s (partition %v, all match %v)", where, p, kf.Path, kf.Partition, kf.AllMatch)
			}
		}
	}
	return n
}
