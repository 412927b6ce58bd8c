package engine

import (
	"context"
	"flag"
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

var rowOrderN = flag.Int("roworder.n", 96, "POSITIONAL JOINs TestPositionalJoinKeepsFileOrder draws")

// A POSITIONAL JOIN pairs rows by their place in each side, so a table
// must give its rows in its files' order however its view is built: files
// in several schemas (runs of their own), Hive partitions (a run per
// partition value), files with delete files, files read in part. Each
// table here is built of such runs, interleaved, with files of several
// DuckDB vectors and row groups; random POSITIONAL JOINs over them (sides
// direct, filtered in subqueries, named in query_table) are compared with
// DuckDB over tables filled file by file in the catalog's order, as rows
// and as aggregates of the pairs (a sink that does not keep order, the case
// DuckDB gets wrong over a union). Without the sort, 17 of 48 such joins
// answered wrong; with the sort for unions only, 1 to 3 of 96 (a single
// scan of files with delete files).
func TestPositionalJoinKeepsFileOrder(t *testing.T) {
	dir := t.TempDir()
	db, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c, err := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 11))
	// oracle holds, per table, the SELECT of each file's rows as the
	// table reads them, in the catalog's order.
	oracle := map[string][]string{}
	next := int64(0) // ids run on across files and tables
	first := map[string]int64{}
	write := func(p, sel string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(fmt.Sprintf("COPY (%s) TO '%s' (FORMAT parquet, ROW_GROUP_SIZE %d)", sel, p, []int{3000, 122880}[r.IntN(2)])); err != nil {
			t.Fatal(err)
		}
	}
	add := func(table, p string, opts ingest.Options) {
		t.Helper()
		opts.Create = true
		if _, err := ingest.Add(c, table, []string{p}, opts); err != nil {
			t.Fatal(err)
		}
	}
	first["e"] = next
	// e: v stored as BIGINT (the table's type) or INTEGER (a run of its
	// own), interleaved.
	for k := range 6 {
		n := int64(3000 + r.IntN(20000))
		vt := []string{"BIGINT", "INTEGER"}[k%2]
		p := filepath.Join(dir, "e", fmt.Sprintf("f%d.parquet", k))
		write(p, fmt.Sprintf("SELECT i AS id, (i * 7 %% 100)::%s AS v FROM range(%d, %d) r(i)", vt, next, next+n))
		add("e", p, ingest.Options{})
		oracle["e"] = append(oracle["e"], fmt.Sprintf("SELECT id, v::BIGINT AS v FROM read_parquet('%s')", p))
		next += n
	}
	first["h"] = next
	// h: Hive partitions p=0 and p=1, interleaved.
	for k := range 6 {
		n := int64(3000 + r.IntN(20000))
		p := filepath.Join(dir, "h", fmt.Sprintf("p=%d", k%2), fmt.Sprintf("f%d.parquet", k))
		write(p, fmt.Sprintf("SELECT i AS id, (i * 13 %% 100) AS v FROM range(%d, %d) r(i)", next, next+n))
		add("h", p, ingest.Options{Hive: true})
		oracle["h"] = append(oracle["h"], fmt.Sprintf("SELECT id, v, %d::BIGINT AS p FROM read_parquet('%s')", k%2, p))
		next += n
	}
	first["d"] = next
	// d: one schema, some files with delete files.
	for k := range 5 {
		n := int64(3000 + r.IntN(20000))
		p := filepath.Join(dir, "d", fmt.Sprintf("f%d.parquet", k))
		write(p, fmt.Sprintf("SELECT i AS id, (i * 3 %% 100) AS v FROM range(%d, %d) r(i)", next, next+n))
		add("d", p, ingest.Options{})
		oracle["d"] = append(oracle["d"], fmt.Sprintf("SELECT id, v FROM read_parquet('%s')", p))
		next += n
	}
	rd, _ := c.Read(catalog.Latest)
	dt, _ := rd.Table("d")
	dfiles, _ := rd.Files(dt.ID)
	rd.Close()
	tx, _ := c.Begin()
	for k, f := range dfiles {
		if k%2 == 1 {
			continue
		}
		p := filepath.Join(dir, fmt.Sprintf("del%d.parquet", k))
		where := fmt.Sprintf("i %% %d = 0", 2+k)
		write(p, fmt.Sprintf("SELECT '%s' AS file_path, i AS pos FROM range(%d) r(i) WHERE %s", f.Path, f.RecordCount, where))
		var cnt int64
		db.QueryRow(fmt.Sprintf("SELECT count(*) FROM read_parquet('%s')", p)).Scan(&cnt)
		fi, _ := os.Stat(p)
		tx.SetDeletes("d", catalog.NewDeleteFile{DataFileID: f.ID, Path: p, DeleteCount: cnt, FileSizeBytes: fi.Size(), ModifiedUnixNanos: fi.ModTime().UnixNano()})
		oracle["d"][k] = fmt.Sprintf("SELECT id, v FROM read_parquet('%s', file_row_number = true) WHERE NOT (file_row_number %% %d = 0)", f.Path, 2+k)
	}
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	ref, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	for name, sels := range oracle {
		if _, err := ref.Exec(fmt.Sprintf("CREATE TABLE %s AS SELECT * FROM (%s) WHERE false", name, sels[0])); err != nil {
			t.Fatal(err)
		}
		for _, s := range sels {
			if _, err := ref.Exec(fmt.Sprintf("INSERT INTO %s %s", name, s)); err != nil {
				t.Fatal(err)
			}
		}
	}
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()

	tables := []string{"e", "h", "d"}
	side := func(alias string) string {
		tb := tables[r.IntN(len(tables))]
		switch r.IntN(4) {
		case 0:
			return fmt.Sprintf("%s %s", tb, alias)
		case 1:
			return fmt.Sprintf("(SELECT id, v FROM %s WHERE v %% %d <> 0) %s", tb, 2+r.IntN(5), alias)
		case 2:
			// A range of ids keeps few files: pruned, and (forced) read in part.
			lo := first[tb] + r.Int64N(100000)
			return fmt.Sprintf("(SELECT id, v FROM %s WHERE id BETWEEN %d AND %d) %s", tb, lo, lo+r.Int64N(60000), alias)
		default:
			return fmt.Sprintf("(SELECT id, v FROM query_table('%s')) %s", tb, alias)
		}
	}
	ctx := context.Background()
	modes := []PartialMode{PartialAuto, PartialForce, PartialForceRows, PartialOff}
	mismatched, answered := 0, 0
	for i := range *rowOrderN {
		from := fmt.Sprintf("%s POSITIONAL JOIN %s", side("a"), side("b"))
		if i < len(tables) {
			// Each table against its rows in order, whole.
			from = fmt.Sprintf("%s a POSITIONAL JOIN (SELECT id FROM %[1]s ORDER BY id) b", tables[i])
		}
		if i%3 == 0 {
			from += fmt.Sprintf(" WHERE a.v < %d", 10+r.IntN(80))
		}
		// The rows, or aggregates of the pairs: DuckDB runs the branches
		// of a union one after another into a sink that keeps order (the
		// rows), at once into one that does not (an aggregate).
		var q string
		switch r.IntN(3) {
		case 0:
			q = "SELECT a.id, a.v, b.id AS bid FROM " + from
		case 1:
			q = "SELECT count(*) AS n, sum(hash(a.id, b.id)) AS h, count(*) FILTER (WHERE a.id <> b.id) AS apart FROM " + from
		default:
			q = "SELECT a.v % 7 AS g, count(*) AS n, sum(hash(a.id, b.id)) AS h FROM " + from + " GROUP BY ALL"
		}
		opts := QueryOptions{Snapshot: catalog.Latest, Partial: modes[i%len(modes)]}
		got, _ := runEngine(ctx, e, q, opts)
		want := runOracle(ctx, ref, q)
		if got.err != nil || want.err != nil {
			t.Fatalf("%s\nrocklake: %v\nDuckDB: %v", q, got.err, want.err)
		}
		if len(want.rows) > 0 && want.rows[0] != `"0"|NULL|"0"` {
			answered++
		}
		if !sameAnswer(got, want, false) {
			mismatched++
			t.Errorf("%d: %s (partial mode %d): rocklake answers %d rows, DuckDB over tables in file order %d, not the same pairs",
				i, q, opts.Partial, len(got.rows), len(want.rows))
		}
	}
	if answered < *rowOrderN*3/4 {
		t.Errorf("only %d of %d joins answered rows: the test checks little", answered, *rowOrderN)
	}
	if mismatched > 0 {
		t.Logf("%d of %d joins paired rows out of the files' order", mismatched, *rowOrderN)
	}
}

// orderedReads errs towards a sort: any mention of POSITIONAL counts.
func TestOrderedReadsSeesEveryPositional(t *testing.T) {
	for q, want := range map[string]bool{
		"SELECT * FROM a POSITIONAL JOIN b":                        true,
		"select * from a positional join b":                        true,
		"SELECT * FROM query('SELECT * FROM a Positional JOIN b')": true,
		"SELECT * FROM a JOIN b USING (id)":                        false,
		"SELECT * FROM a ASOF JOIN b ON a.t >= b.t":                false,
	} {
		if got := orderedReads(q); got != want {
			t.Errorf("orderedReads(%q) = %v, want %v", q, got, want)
		}
	}
	if unionAll([]string{"SELECT 1"}, false) != "SELECT 1" {
		t.Error("an unordered part is sorted")
	}
	if !strings.Contains(unionAll([]string{"SELECT 1"}, true), "ORDER BY") {
		t.Error("an ordered part (a scan of files with delete files, say) is not sorted")
	}
	if strings.Contains(unionAll([]string{"SELECT 1", "SELECT 2"}, false), "ORDER BY") {
		t.Error("an unordered union sorts")
	}
}
