package maintain

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/internal/s3test"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/storage"
)

var (
	writeSeed  = flag.Uint64("write.seed", 1, "seed of the write fuzzer's first table; table i uses seed+i")
	writeTabls = flag.Int("write.tables", 10, "tables the write fuzzer makes")
	writeStmts = flag.Int("write.stmts", 10, "write statements per table")
	writeObjs  = flag.Int("write.objects", 3, "tables of objects (in a catalog whose data root is a bucket prefix) the write fuzzer makes after the others")
)

// wcol is a column type the write fuzzer generates: its DuckDB type, an
// expression of its values over i (a BIGINT) and s (the statement's
// seed), and literals at its edges.
type wcol struct {
	typ   string
	expr  string
	edges []string
	// scalar columns get predicates checked against a full scan.
	scalar bool
}

var wcols = []wcol{
	{"BOOLEAN", "(hash(i, s) % 2 = 0)", []string{"true", "false"}, true},
	{"TINYINT", "((hash(i, s) % 256)::SMALLINT - 128)::TINYINT", []string{"-128", "127", "0"}, true},
	{"INTEGER", "((hash(i, s) % 4294967296)::BIGINT - 2147483648)::INTEGER", []string{"-2147483648", "2147483647", "0"}, true},
	{"BIGINT", "((hash(i, s) >> 1)::BIGINT * CASE WHEN hash(i, s + 1) % 2 = 0 THEN 1 ELSE -1 END)", []string{"-9223372036854775808", "9223372036854775807", "0"}, true},
	{"UBIGINT", "hash(i, s)", []string{"0", "18446744073709551615"}, true},
	{"HUGEINT", "((hash(i, s) >> 1)::HUGEINT - 4611686018427387904)", []string{"'-170141183460469231731687303715884105728'::HUGEINT", "'170141183460469231731687303715884105727'::HUGEINT"}, true},
	{"DOUBLE", "((hash(i, s) % 2000001)::DOUBLE / 1000 - 1000)", []string{"'NaN'::DOUBLE", "'-0.0'::DOUBLE", "0.0", "'inf'::DOUBLE", "'-inf'::DOUBLE", "1e308", "5e-324"}, true},
	{"FLOAT", "((hash(i, s) % 20001)::FLOAT / 10 - 1000)", []string{"'NaN'::FLOAT", "'-0.0'::FLOAT", "0.0", "'inf'::FLOAT"}, true},
	{"DECIMAL(9,2)", "(((hash(i, s) % 199999999)::BIGINT - 99999999) / 100)::DECIMAL(9,2)", []string{"9999999.99", "-9999999.99", "0.00"}, true},
	{"DECIMAL(38,10)", "((hash(i, s)::HUGEINT - 9223372036854775807) * 1000 + (hash(i, s + 3) % 1000))::DECIMAL(38,10)", []string{"0", "-1.5"}, true},
	{"VARCHAR", "repeat(chr(97 + (hash(i, s) % 26)::INTEGER), (hash(i, s + 1) % 4)::INTEGER) || (hash(i, s) % 1000)::VARCHAR",
		[]string{"''", "repeat('z', 300)", "'é中'", "'ÿ'", "'a''b'", "'\x7f'"}, true},
	{"BLOB", "encode((hash(i, s) % 100000)::VARCHAR)", []string{"''::BLOB", "'\\x00\\xFF'::BLOB", "'\\xFF\\xFF'::BLOB"}, true},
	{"DATE", "(DATE '2000-01-01' + (hash(i, s) % 20000)::INTEGER)", []string{"DATE '0001-01-01'", "DATE '9999-12-31'"}, true},
	{"TIMESTAMP", "(TIMESTAMP '2000-01-01' + to_microseconds((hash(i, s) % 1000000000000000)::BIGINT))", []string{"TIMESTAMP '1970-01-01'", "TIMESTAMP '2262-04-11 23:47:16'"}, true},
	{"TIMESTAMPTZ", "(TIMESTAMP '2000-01-01' + to_microseconds((hash(i, s) % 1000000000000)::BIGINT))::TIMESTAMPTZ", []string{"'1999-12-31 23:00:00-05'::TIMESTAMPTZ"}, true},
	{"TIME", "(TIME '00:00:00' + to_microseconds((hash(i, s) % 86400000000)::BIGINT))", []string{"TIME '23:59:59.999999'", "TIME '00:00:00'"}, true},
	{"UUID", "md5(i::VARCHAR || s::VARCHAR)::UUID", []string{"'00000000-0000-0000-0000-000000000000'::UUID", "'ffffffff-ffff-ffff-ffff-ffffffffffff'::UUID"}, true},
	{"INTEGER[]", "list_transform(range((hash(i, s) % 4)::BIGINT), x -> (x * i % 1000)::INTEGER)", []string{"[]", "[NULL]::INTEGER[]"}, false},
	{"STRUCT(a INTEGER, s VARCHAR)", "{'a': (hash(i, s) % 100)::INTEGER, 's': (hash(i, s) % 7)::VARCHAR}", []string{"{'a': NULL, 's': NULL}"}, false},
	{"MAP(VARCHAR, BIGINT)", "MAP {'k' || (i % 3)::VARCHAR: i}", []string{"MAP {}::MAP(VARCHAR, BIGINT)"}, false},
}

// hiveCols are the types a Hive partition column p of the fuzzer's tables
// takes: few values each (every value is a directory), and the values a
// directory must spell with care.
var hiveCols = []wcol{
	{"INTEGER", "(hash(i, s) % 3)::INTEGER", []string{"-2147483648", "0"}, true},
	{"BIGINT", "(hash(i, s) % 3)::BIGINT - 1", []string{"-9223372036854775808", "9223372036854775807"}, true},
	{"VARCHAR", "'k' || (hash(i, s) % 3)::VARCHAR", []string{"''", "'NULL'", "'null'", "'__HIVE_DEFAULT_PARTITION__'", "'a/b'", "'x=y'", "'%41'", "' '", "'é'", "'..'", "'.'", "'a\\b'", "'?#'"}, true},
	{"DATE", "(DATE '2024-01-01' + (hash(i, s) % 3)::INTEGER)", []string{"DATE '0001-01-01'", "DATE '9999-12-31'"}, true},
	{"TIMESTAMP", "(TIMESTAMP '2024-01-01 10:00:00.5' + to_hours((hash(i, s) % 3)::BIGINT))", []string{"TIMESTAMP '1970-01-01'", "TIMESTAMP '2024-01-01 10:00:00.000001'"}, true},
	{"DOUBLE", "((hash(i, s) % 3)::DOUBLE / 4)", []string{"'NaN'::DOUBLE", "'-0.0'::DOUBLE", "'inf'::DOUBLE", "'-inf'::DOUBLE", "0.1", "5e-324"}, true},
	{"FLOAT", "((hash(i, s) % 3)::FLOAT / 3)", []string{"'-0.0'::FLOAT", "0.1::FLOAT", "3.4028235e38::FLOAT"}, true},
	{"DECIMAL(9,2)", "((hash(i, s) % 3)::DECIMAL(9,2) / 4)", []string{"-9999999.99", "0.10"}, true},
	{"BOOLEAN", "(hash(i, s) % 2 = 0)", []string{"true"}, true},
}

// value is the SQL of one row's value of c: mostly the expression, at
// times NULL or an edge.
func (c wcol) value(r *rand.Rand) string {
	switch n := r.IntN(10); {
	case n == 0:
		return "NULL"
	case n <= 2:
		return c.edges[r.IntN(len(c.edges))]
	}
	return c.expr
}

// An oracle: the same statements on a plain DuckDB table. After every
// statement rocklake's table holds the oracle's rows; a statement fails on
// one exactly when it fails on the other, and a failed one leaves the
// catalog and the data directory as they were; the files written hold
// statistics that agree with their data (Verify, deep) and prune as a full
// scan answers.
func TestWriteDifferential(t *testing.T) {
	ctx := context.Background()
	oracle, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer oracle.Close()
	oracle.SetMaxOpenConns(1)
	if _, err := oracle.Exec("SET TimeZone = 'UTC'"); err != nil {
		t.Fatal(err)
	}
	stats := map[string]int{}
	var srv *s3test.Server
	for n := range *writeTabls + *writeObjs {
		seed := *writeSeed + uint64(n)
		// A table of objects: every file and delete file the writes make
		// is uploaded under the catalog's bucket prefix and read back
		// through the object cache.
		objects := n >= *writeTabls
		name := fmt.Sprintf("seed%d", seed)
		if objects {
			name = "objects-" + name
			if srv == nil {
				srv = s3test.Start(t)
				srv.Bucket(t, "lake")
				srv.SetEnv(t)
			}
		}
		t.Run(name, func(t *testing.T) {
			var root string
			var c *catalog.Catalog
			var e *engine.Engine
			stored := func() []string { return parquetFiles(t, root) }
			if !objects {
				root, c, e = writeLake(t)
			} else {
				prefix := name + "/"
				c, e = objectLake(t, "s3://lake/"+prefix)
				stored = func() []string {
					keys := keysUnder(t, srv, "lake", prefix)
					slices.Sort(keys)
					return keys
				}
			}
			r := rand.New(rand.NewPCG(seed, 99))
			tmp := t.TempDir()
			var cols []wcol
			var names []string
			for i, k := range r.Perm(len(wcols))[:2+r.IntN(5)] {
				cols = append(cols, wcols[k])
				names = append(names, fmt.Sprintf("c%d", i))
			}
			var defs []string
			notNull := -1
			if r.IntN(3) == 0 {
				notNull = r.IntN(len(cols))
			}
			for i, col := range cols {
				d := names[i] + " " + col.typ
				if i == notNull {
					d += " NOT NULL"
				}
				defs = append(defs, d)
			}
			hive := r.IntN(4) == 0
			if hive {
				// A Hive partition column, last: its values are the files'
				// key=value directories.
				hc := hiveCols[r.IntN(len(hiveCols))]
				cols, names = append(cols, hc), append(names, "p") // kept out of sort keys and layouts
				defs = append(defs, "p "+hc.typ)
			}
			create := "CREATE TABLE t (" + strings.Join(defs, ", ") + ")"
			t.Logf("table: %s (hive %t)", create, hive)
			if _, err := oracle.Exec("DROP TABLE IF EXISTS t; DROP TABLE IF EXISTS u; " + create); err != nil {
				t.Fatal(err)
			}
			if hive {
				hiveTable(t, c, "t", strings.Join(defs, ", "), "p")
				stats["hive tables"]++
			} else {
				mustWrite(t, e, create)
			}
			if r.IntN(3) == 0 {
				// A declared layout: every insert is cut into a file per value.
				for i, col := range cols {
					if col.scalar && col.typ != "BOOLEAN" && names[i] != "p" {
						alterTable(t, c, "t", "set", "partitioned", "by", fmt.Sprintf("bucket(3, %s)", names[i]))
						break
					}
				}
			}
			sortCol := -1
			if r.IntN(2) == 0 {
				// A declared sort key: every write's files hold its rows in
				// that order; sometimes along a curve, sometimes turned off.
				var scal []int
				for i, col := range cols {
					if col.scalar && names[i] != "p" {
						scal = append(scal, i)
					}
				}
				switch {
				case len(scal) >= 2 && r.IntN(3) == 0:
					alterTable(t, c, "t", "set", "sorted", "by", fmt.Sprintf("zorder(%s, %s)", names[scal[0]], names[scal[1]]))
				case len(scal) >= 1:
					sortCol = scal[r.IntN(len(scal))]
					alterTable(t, c, "t", "set", "sorted", "by", names[sortCol])
					if r.IntN(4) == 0 {
						alterTable(t, c, "t", "set", "option", "sorted", "=", "false")
						sortCol = -1
					}
				}
			}
			if r.IntN(3) == 0 {
				alterTable(t, c, "t", "set", "option", "target_file_rows", "=", fmt.Sprint(20+r.IntN(100)))
			}
			mor := r.IntN(2) == 0
			if mor {
				// Changes write delete files; reads apply them (the
				// default, asked for by name on half of these).
				if r.IntN(2) == 0 {
					alterTable(t, c, "t", "set", "option", "delete_mode", "=", "merge-on-read")
				}
				stats["merge-on-read tables"]++
			} else {
				// Changes rewrite the files they touch.
				alterTable(t, c, "t", "set", "option", "delete_mode", "=", "copy-on-write")
			}
			diverged := false
			run := func(q string) {
				t.Helper()
				if diverged {
					return
				}
				before := latestID(t, c)
				files := stored()
				countBefore := answerOf(t, e, before, "SELECT count(*) FROM t")
				t.Logf("statement: %s", q)
				otx, err := oracle.Begin()
				if err != nil {
					t.Fatal(err)
				}
				_, oerr := otx.Exec(q)
				wres, rerr := Write(ctx, e, q, WriteOptions{Query: engine.QueryOptions{Snapshot: catalog.Latest}})
				if rerr == nil && wres.Merged > 0 {
					stats["small files merged"] += wres.Merged
				}
				if rerr == nil && wres.MergeError != "" {
					t.Fatalf("%s: the merge after it failed: %s", q, wres.MergeError)
				}
				if oerr == nil && rerr != nil && hive && strings.Contains(rerr.Error(), "a NaN partition value is not supported") {
					stats["NaN partition value refused"]++
					otx.Rollback()
					return
				}
				if oerr == nil && rerr != nil && hive && strings.Contains(rerr.Error(), catalog.NegativeZeroPartition) {
					stats["-0.0 partition value refused"]++
					otx.Rollback()
					return
				}
				if oerr == nil && rerr != nil && strings.Contains(rerr.Error(), "holds values no 64-bit Parquet integer type holds together") {
					// A known limit: Parquet has no exact 128-bit integer,
					// and rocklake writes a HUGEINT as BIGINT or UBIGINT.
					stats["HUGEINT beyond 64 bits refused"]++
					otx.Rollback()
					return
				}
				if oerr == nil {
					if err := otx.Commit(); err != nil {
						t.Fatal(err)
					}
				} else {
					otx.Rollback()
				}
				switch {
				case oerr != nil && rerr == nil:
					t.Fatalf("%s\nDuckDB refuses it (%v), rocklake wrote it", q, oerr)
				case oerr == nil && rerr != nil:
					t.Fatalf("%s\nDuckDB runs it, rocklake fails: %v", q, rerr)
				case rerr != nil:
					stats["refused"]++
					if after := latestID(t, c); after != before {
						t.Fatalf("%s failed (%v) but made snapshot %d", q, rerr, after)
					}
					if now := stored(); !slices.Equal(now, files) {
						t.Fatalf("%s failed (%v) but left files: %v", q, rerr, now)
					}
					return
				}
				stats["written"]++
				if got := answerOf(t, e, before, "SELECT count(*) FROM t"); got != countBefore {
					t.Fatalf("%s: snapshot %d, before it, now counts %s rows; it counted %s", q, before, got, countBefore)
				}
				if v := wres.Statement; v == "DELETE" || v == "UPDATE" || v == "MERGE" {
					stats[v+" statements"]++
					stats[v+" rows"] += int(wres.Rows)
					stats[v+" files rewritten"] += wres.FilesRemoved
					stats[v+" delete files"] += wres.DeleteFiles
					if mor && wres.FilesRemoved > 0 {
						t.Fatalf("%s: merge-on-read rewrote %d files", q, wres.FilesRemoved)
					}
					if objects && wres.DeleteFiles > 0 {
						stats["delete files of objects"] += wres.DeleteFiles
						objectDeletes(t, c, "t")
					}
					if !sameRowsBut(t, oracle, e, "t", true) {
						// DuckDB 1.5.6's UPDATE (and MERGE's) leaves a zero
						// it overwrites with the other zero as it was (it
						// skips values = the old one, and -0.0 = 0.0);
						// rocklake stores the value assigned. The oracle has
						// diverged: this table's run ends here.
						stats["DuckDB's UPDATE kept a zero's sign"]++
						diverged = true
					}
					return
				}
				sameRows(t, oracle, e, "t")
			}
			for range *writeStmts {
				s := r.IntN(1000)
				k := r.IntN(1000)
				switch r.IntN(13) {
				case 12: // fold the delete files: the same rows, none applied
					if diverged {
						break
					}
					res, err := FoldDeletes(ctx, e, "t")
					if err != nil {
						t.Fatalf("fold: %v", err)
					}
					stats["files folded"] += res.FilesBefore
					rd, _ := c.Read(catalog.Latest)
					tb, _ := rd.Table("t")
					left, _ := rd.DeleteFiles(tb.ID)
					rd.Close()
					if len(left) > 0 {
						t.Fatalf("fold left %d delete files", len(left))
					}
					sameRows(t, oracle, e, "t")
				case 0, 1: // VALUES
					var rows []string
					for range 1 + r.IntN(4) {
						var vals []string
						for _, col := range cols {
							v := col.value(r)
							if v == col.expr {
								v = fmt.Sprintf("(SELECT %s FROM (SELECT %d::BIGINT AS i, %d AS s))", col.expr, r.IntN(100000), s)
							}
							vals = append(vals, v)
						}
						rows = append(rows, "("+strings.Join(vals, ", ")+")")
					}
					run("INSERT INTO t VALUES " + strings.Join(rows, ", "))
				case 2: // a query, all columns
					run(fmt.Sprintf("INSERT INTO t SELECT %s FROM (SELECT i, %d AS s FROM range(%d, %d) r(i))", selectList(r, cols, names, false), s, k, k+1+r.IntN(300)))
				case 3: // some columns, named or BY NAME
					sub := r.Perm(len(cols))[:1+r.IntN(len(cols))]
					var list, exprs []string
					for _, i := range sub {
						list, exprs = append(list, names[i]), append(exprs, cols[i].value(r)+" AS "+names[i])
					}
					from := fmt.Sprintf("FROM (SELECT i, %d AS s FROM range(%d, %d) r(i))", s, k, k+1+r.IntN(50))
					if r.IntN(2) == 0 {
						run(fmt.Sprintf("INSERT INTO t (%s) SELECT %s %s", strings.Join(list, ", "), strings.Join(exprs, ", "), from))
					} else {
						run(fmt.Sprintf("INSERT INTO t BY NAME SELECT %s %s", strings.Join(exprs, ", "), from))
					}
				case 4: // from the table itself, pruned by a predicate
					run(fmt.Sprintf("INSERT INTO t SELECT * FROM t WHERE %s", predicate(r, oracle, cols, names)))
				case 5: // COPY from a file DuckDB wrote
					format := []string{"csv", "parquet", "json"}[r.IntN(3)]
					p := filepath.Join(tmp, fmt.Sprintf("in-%d.%s", k, format))
					q := fmt.Sprintf("COPY (SELECT %s FROM (SELECT i, %d AS s FROM range(%d, %d) r(i))) TO '%s' (FORMAT %s)", selectList(r, cols, names, true), s, k, k+1+r.IntN(100), p, format)
					if _, err := oracle.Exec(q); err != nil {
						stats["copy source refused"]++
						continue
					}
					opts := "FORMAT " + format
					if format == "csv" {
						opts += ", HEADER"
					}
					run(fmt.Sprintf("COPY t FROM '%s' (%s)", p, opts))
				case 7: // DELETE, by a predicate, a compound one, a self-reference or a USING list
					switch pred := predicate(r, oracle, cols, names); r.IntN(4) {
					case 0:
						run("DELETE FROM t WHERE " + pred)
					case 1:
						run(fmt.Sprintf("DELETE FROM t AS x WHERE (%s) %s (%s)", pred, []string{"AND", "OR"}[r.IntN(2)], predicate(r, oracle, cols, names)))
					case 2:
						i := r.IntN(len(cols))
						run(fmt.Sprintf("DELETE FROM t WHERE %[1]s IN (SELECT %[1]s FROM t WHERE %[2]s)", names[i], pred))
					default:
						i := r.IntN(len(cols))
						run(fmt.Sprintf("DELETE FROM t USING (SELECT %[1]s AS k FROM t WHERE %[2]s ORDER BY k LIMIT 3) AS v WHERE t.%[1]s = v.k", names[i], pred))
					}
				case 8, 9: // UPDATE: new values, the column itself, NULL; sometimes FROM a one-row list
					var sets []string
					for _, i := range r.Perm(len(cols))[:1+r.IntN(len(cols))] {
						v := cols[i].value(r)
						switch {
						case r.IntN(4) == 0:
							v = names[i]
						case v == cols[i].expr:
							v = fmt.Sprintf("(SELECT %s FROM (SELECT %d::BIGINT AS i, %d AS s))", cols[i].expr, r.IntN(100000), s)
						}
						sets = append(sets, names[i]+" = "+v)
					}
					where := ""
					if r.IntN(8) > 0 {
						where = " WHERE " + predicate(r, oracle, cols, names)
					}
					if r.IntN(4) == 0 {
						i := r.IntN(len(cols))
						x := cols[i].value(r)
						if x == cols[i].expr {
							x = fmt.Sprintf("(SELECT %s FROM (SELECT %d::BIGINT AS i, %d AS s))", x, r.IntN(100000), s)
						}
						run(fmt.Sprintf("UPDATE t SET %s = v.x FROM (SELECT %s AS x) AS v%s", names[i], x, where))
						break
					}
					run("UPDATE t SET " + strings.Join(sets, ", ") + where)
				case 10, 11: // MERGE: a source of distinct keys from the table and new ones, clauses of every kind
					k := -1
					for _, i := range r.Perm(len(cols)) {
						if cols[i].scalar {
							k = i
							break
						}
					}
					if k < 0 {
						break
					}
					key := names[k]
					newKey := cols[k].value(r)
					if newKey == cols[k].expr {
						newKey = fmt.Sprintf("(SELECT %s FROM (SELECT %d::BIGINT AS i, %d AS s))", cols[k].expr, r.IntN(100000), s)
					}
					src := fmt.Sprintf("(SELECT DISTINCT %[1]s AS k FROM t WHERE %[2]s UNION SELECT CAST(%[3]s AS %[4]s)) AS s", key, predicate(r, oracle, cols, names), newKey, cols[k].typ)
					var clauses []string
					for range 1 + r.IntN(3) {
						cond := ""
						if r.IntN(2) == 0 {
							cond = " AND " + predicate(r, oracle, cols, names)
						}
						switch r.IntN(5) {
						case 0:
							clauses = append(clauses, "WHEN MATCHED"+cond+" THEN DELETE")
						case 1:
							i := r.IntN(len(cols))
							v := cols[i].value(r)
							if v == cols[i].expr {
								v = fmt.Sprintf("(SELECT %s FROM (SELECT %d::BIGINT AS i, %d AS s))", cols[i].expr, r.IntN(100000), s)
							}
							clauses = append(clauses, fmt.Sprintf("WHEN MATCHED%s THEN UPDATE SET %s = %s", cond, names[i], v))
						case 2:
							var vals []string
							for i, col := range cols {
								v := col.value(r)
								switch {
								case i == k:
									v = "s.k"
								case v == col.expr:
									v = fmt.Sprintf("(SELECT %s FROM (SELECT %d::BIGINT AS i, %d AS s))", col.expr, r.IntN(100000), s)
								}
								vals = append(vals, v)
							}
							clauses = append(clauses, "WHEN NOT MATCHED THEN INSERT VALUES ("+strings.Join(vals, ", ")+")")
						case 3:
							clauses = append(clauses, fmt.Sprintf("WHEN NOT MATCHED THEN INSERT (%s) VALUES (s.k)", key))
						default:
							clauses = append(clauses, "WHEN NOT MATCHED BY SOURCE"+cond+" THEN DELETE")
						}
					}
					run(fmt.Sprintf("MERGE INTO t USING %s ON t.%s = s.k %s", src, key, strings.Join(clauses, " ")))
				case 6: // CREATE TABLE AS, then compared and dropped
					q := fmt.Sprintf("CREATE TABLE u AS SELECT * FROM t WHERE %s", predicate(r, oracle, cols, names))
					_, oerr := oracle.Exec(q)
					_, rerr := Write(ctx, e, q, WriteOptions{Query: engine.QueryOptions{Snapshot: catalog.Latest}})
					if (oerr == nil) != (rerr == nil) {
						t.Fatalf("%s\nDuckDB: %v\nrocklake: %v", q, oerr, rerr)
					}
					if rerr == nil {
						stats["created"]++
						sameRows(t, oracle, e, "u")
						oracle.Exec("DROP TABLE u")
						tx, _ := c.Begin()
						tx.DropTable("u")
						if _, err := tx.Commit(); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			stats["change feed rows"] += checkFeed(t, c, e, "t")
			if sortCol >= 0 {
				checkSorted(t, c, e, names[sortCol])
				stats["sorted tables"]++
			}
			rep, err := Verify(ctx, e, "t", catalog.Latest, true)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Problems) > 0 {
				t.Fatalf("the written files' statistics disagree with their data: %+v", rep.Problems)
			}
			if !objects {
				noLeaseLeft(t, root)
			}
			for i, col := range cols {
				if !col.scalar {
					continue
				}
				for _, lit := range literals(t, oracle, names[i]) {
					for _, pred := range []string{"C = V", "C < V", "C >= V", "C > V OR C IS NULL", "NOT (C <= V)", "C IS NULL"} {
						q := "SELECT count(*) FROM t WHERE " + strings.NewReplacer("C", names[i], "V", lit).Replace(pred)
						var want string
						if err := oracle.QueryRow(q).Scan(&want); err != nil {
							t.Fatalf("%s: %v", q, err)
						}
						if got := answerOf(t, e, catalog.Latest, q); got != want {
							t.Fatalf("%s (%s): rocklake %s, DuckDB %s", q, col.typ, got, want)
						}
						if pred == "C = V" || pred == "C < V" {
							// The row-range and page paths, deletes applied.
							for _, mode := range []engine.PartialMode{engine.PartialForceRows, engine.PartialForce} {
								res, err := e.Query(ctx, q, engine.QueryOptions{Snapshot: catalog.Latest, Partial: mode, NoMetadataAnswers: true})
								if err != nil {
									t.Fatalf("%s: %v", q, err)
								}
								if got := rowString(res.Rows[0]); got != want {
									t.Fatalf("%s (%s, partial mode %d): rocklake %s, DuckDB %s", q, col.typ, mode, got, want)
								}
							}
						}
						stats["predicates"]++
					}
				}
			}
		})
	}
	t.Logf("write fuzzer: %v", stats)
}

// selectList is one value of each column per row, named when named.
func selectList(r *rand.Rand, cols []wcol, names []string, named bool) string {
	var out []string
	for i, col := range cols {
		v := col.value(r)
		if named {
			v += " AS " + names[i]
		}
		out = append(out, v)
	}
	return strings.Join(out, ", ")
}

// predicate is a condition on one scalar column, with a literal taken
// from the oracle's rows.
func predicate(r *rand.Rand, oracle *sql.DB, cols []wcol, names []string) string {
	for _, i := range r.Perm(len(cols)) {
		if !cols[i].scalar {
			continue
		}
		var v sql.NullString
		oracle.QueryRow(fmt.Sprintf("SELECT %s::VARCHAR FROM t WHERE %s IS NOT NULL ORDER BY hash(rowid, %d) LIMIT 1", names[i], names[i], r.IntN(100))).Scan(&v)
		if v.Valid && !strings.ContainsRune(v.String, 0) {
			op := []string{"=", "<", ">=", "<>"}[r.IntN(4)]
			return fmt.Sprintf("%s %s '%s'", names[i], op, strings.ReplaceAll(v.String, "'", "''"))
		}
	}
	return "true"
}

// literals are a few of a column's values, as SQL string literals.
func literals(t *testing.T, oracle *sql.DB, col string) []string {
	t.Helper()
	rows, err := oracle.Query(fmt.Sprintf("SELECT DISTINCT %[1]s::VARCHAR FROM t WHERE %[1]s IS NOT NULL ORDER BY hash(%[1]s) LIMIT 4", col))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		if !strings.ContainsRune(v, 0) {
			out = append(out, "'"+strings.ReplaceAll(v, "'", "''")+"'")
		}
	}
	return out
}

// sameRows fails unless rocklake's table holds the oracle's rows, each
// value compared in DuckDB's text.
func sameRows(t *testing.T, oracle *sql.DB, e *engine.Engine, table string) {
	t.Helper()
	sameRowsBut(t, oracle, e, table, false)
}

// sameRowsBut is sameRows; with zeroSign, rows that differ only in the
// sign of a float zero (a value -0.0 on one side, 0.0 on the other) do
// not fail the test: it returns false instead.
func sameRowsBut(t *testing.T, oracle *sql.DB, e *engine.Engine, table string, zeroSign bool) bool {
	t.Helper()
	q := "SELECT COLUMNS(*)::VARCHAR FROM " + table
	rows, err := oracle.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	cols, _ := rows.Columns()
	var want []string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		var parts []string
		for _, v := range vals {
			if v.Valid {
				parts = append(parts, v.String)
			} else {
				parts = append(parts, "NULL")
			}
		}
		want = append(want, strings.Join(parts, "|"))
	}
	rows.Close()
	res, err := e.Query(context.Background(), "SELECT * FROM "+table, engine.QueryOptions{Snapshot: catalog.Latest, NoMetadataAnswers: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, row := range res.Rows {
		got = append(got, rowString(row))
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) && zeroSign {
		unsign := func(rows []string) []string {
			out := make([]string, len(rows))
			for i, r := range rows {
				fields := strings.Split(r, "|")
				for j, f := range fields {
					if f == "-0.0" {
						fields[j] = "0.0"
					}
				}
				out[i] = strings.Join(fields, "|")
			}
			slices.Sort(out)
			return out
		}
		if slices.Equal(unsign(got), unsign(want)) {
			return false
		}
	}
	if !slices.Equal(got, want) {
		for i := range max(len(got), len(want)) {
			g, w := "", ""
			if i < len(got) {
				g = got[i]
			}
			if i < len(want) {
				w = want[i]
			}
			if g != w {
				t.Fatalf("table %s: %d rows, DuckDB's %d; first difference at %d:\n rocklake %s\n DuckDB   %s", table, len(got), len(want), i, g, w)
			}
		}
	}
	return true
}

func latestID(t *testing.T, c *catalog.Catalog) int64 {
	t.Helper()
	r, err := c.Read(catalog.Latest)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	return r.Snapshot().ID
}

// parquetFiles lists the Parquet files under dir.
func parquetFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, p)
		}
		return nil
	})
	slices.Sort(out)
	return out
}

func alterTable(t *testing.T, c *catalog.Catalog, table string, words ...string) {
	t.Helper()
	t.Logf("alter %s: %s", table, strings.Join(words, " "))
	a, err := catalog.ParseAlteration(words)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := c.Begin()
	if err != nil {
		t.Fatal(err)
	}
	tx.AlterTable(table, a)
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// checkSorted fails unless every live file of t holds its rows in the
// order of col, ascending, NULLs last.
func checkSorted(t *testing.T, c *catalog.Catalog, e *engine.Engine, col string) {
	t.Helper()
	r, err := c.Read(catalog.Latest)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tb, err := r.Table("t")
	if err != nil {
		t.Fatal(err)
	}
	files, err := r.Files(tb.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		path := f.Location(tb)
		if catalog.IsObject(path) {
			local, release, err := e.ObjectCopy(context.Background(), path, f.FileSizeBytes, f.ETag)
			if err != nil {
				t.Fatal(err)
			}
			defer release()
			path = local
		}
		q := fmt.Sprintf(`SELECT count(*) FROM (SELECT %[1]s AS v, lag(%[1]s) OVER (ORDER BY file_row_number) AS p, file_row_number AS n
			FROM read_parquet('%[2]s', file_row_number = true)) WHERE p > v OR (p IS NULL AND v IS NOT NULL AND n > 0)`, col, path)
		var bad int
		if err := e.DB().QueryRow(q).Scan(&bad); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if bad > 0 {
			t.Fatalf("file %s (%d rows) is not sorted by %s: %d rows out of order", f.Location(tb), f.RecordCount, col, bad)
		}
	}
}

// checkFeed fails unless the change feed of table, from its first
// snapshot to the latest, holds for each snapshot exactly what a diff of
// the whole table before and after it gives (as multisets; a float zero's
// sign is no change, as EXCEPT ALL compares); it returns the feed's rows.
func checkFeed(t *testing.T, c *catalog.Catalog, e *engine.Engine, table string) int {
	t.Helper()
	ctx := context.Background()
	last := latestID(t, c)
	rowsAt := func(s int64) map[string]int {
		res, err := e.Query(ctx, "SELECT * FROM "+table, engine.QueryOptions{Snapshot: s, NoMetadataAnswers: true})
		out := map[string]int{}
		if err != nil {
			if errors.Is(err, catalog.ErrNoSuchTable) {
				return out
			}
			t.Fatal(err)
		}
		for _, row := range res.Rows {
			out[unsignZeros(rowString(row))]++
		}
		return out
	}
	q, release, err := e.ChangesSQL(ctx, table, 0, catalog.Latest)
	if err != nil {
		t.Fatal(err)
	}
	feed, err := e.Query(ctx, q, engine.QueryOptions{Snapshot: catalog.Latest})
	release()
	if err != nil {
		t.Fatalf("the change feed: %v", err)
	}
	got := map[string]int{}
	for _, row := range feed.Rows {
		got[*row[0]+"|"+*row[1]+"|"+unsignZeros(rowString(row[2:]))]++
	}
	want := map[string]int{}
	prev := rowsAt(0)
	for s := int64(1); s <= last; s++ {
		now := rowsAt(s)
		for k, n := range prev {
			if d := n - now[k]; d > 0 {
				want[fmt.Sprintf("%d|delete|%s", s, k)] += d
			}
		}
		for k, n := range now {
			if d := n - prev[k]; d > 0 {
				want[fmt.Sprintf("%d|insert|%s", s, k)] += d
			}
		}
		prev = now
	}
	if !maps.Equal(got, want) {
		for k, n := range want {
			if got[k] != n {
				t.Fatalf("change feed: %q %d times, the table's diff %d times", k, got[k], n)
			}
		}
		for k, n := range got {
			if want[k] != n {
				t.Fatalf("change feed: %q %d times, the table's diff %d times", k, n, want[k])
			}
		}
	}
	return len(feed.Rows)
}

// unsignZeros reads -0.0 as 0.0 in a row's fields.
func unsignZeros(row string) string {
	fields := strings.Split(row, "|")
	for i, f := range fields {
		if f == "-0.0" {
			fields[i] = "0.0"
		}
	}
	return strings.Join(fields, "|")
}

// objectLake is a catalog in a memory store whose data root is the bucket
// prefix root, and an engine reading its objects through a cache.
func objectLake(t *testing.T, root string) (*catalog.Catalog, *engine.Engine) {
	t.Helper()
	st, err := storage.NewS3(context.Background(), storage.S3OptionsFromEnv())
	if err != nil {
		t.Fatal(err)
	}
	c, err := catalog.CreateInStore(kvtest.Store(t), catalog.Options{DataRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	e.UseObjects(st, &storage.Cache{Dir: t.TempDir()})
	return c, e
}

// objectDeletes fails unless every current delete file of table is an
// object recorded with its ETag.
func objectDeletes(t *testing.T, c *catalog.Catalog, table string) {
	t.Helper()
	for _, d := range deletesOf(t, c, table) {
		if !catalog.IsObject(d.Path) || d.ETag == "" {
			t.Fatalf("delete file %s (ETag %q) of a table of objects is not an object with its ETag", d.Path, d.ETag)
		}
	}
}
