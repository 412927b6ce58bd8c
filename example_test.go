package rocklake_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "github.com/duckdb/duckdb-go/v2" // the "duckdb" database/sql driver, to write the example's files

	"github.com/rocklake/rocklake"
)

// writeHours writes three Parquet files of readings, one per hour of
// 2024-01-01, a temperature a minute, with DuckDB's COPY: any writer of
// Parquet will do.
func writeHours(dir string) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		panic(err)
	}
	defer db.Close()
	for h := range 3 {
		path := filepath.Join(dir, fmt.Sprintf("h%d.parquet", h))
		_, err := db.Exec(fmt.Sprintf(`COPY (
			SELECT TIMESTAMPTZ '2024-01-01 00:00:00+00' + to_minutes(%d * 60 + m) AS ts,
			       CAST((200 + 10 * %d + m %% 7) / 10.0 AS DECIMAL(5,1)) AS temp
			FROM range(60) AS r(m) ORDER BY m
		) TO '%s' (FORMAT parquet)`, h, h, strings.ReplaceAll(path, "'", "''")))
		if err != nil {
			panic(err)
		}
	}
}

// newLake writes the readings into dir and registers them as the table
// readings of a new catalog in dir/lake.
func newLake(ctx context.Context, dir string) *rocklake.Lake {
	writeHours(dir)
	lake, err := rocklake.Create(ctx, filepath.Join(dir, "lake"), rocklake.OpenOptions{})
	if err != nil {
		panic(err)
	}
	if _, err := lake.Add(ctx, "readings", []string{dir}, rocklake.AddOptions{Create: true}); err != nil {
		panic(err)
	}
	return lake
}

// Register files, see which ones a predicate needs, and query them.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "rocklake-example-")
	defer os.RemoveAll(dir)
	writeHours(dir)

	lake, err := rocklake.Create(ctx, filepath.Join(dir, "lake"), rocklake.OpenOptions{})
	if err != nil {
		panic(err)
	}
	defer lake.Close()
	res, err := lake.Add(ctx, "readings", []string{dir}, rocklake.AddOptions{Create: true})
	if err != nil {
		panic(err)
	}
	fmt.Println("files:", res.Files, "rows:", res.Rows)

	const hour1 = "ts >= '2024-01-01 01:00:00+00' AND ts < '2024-01-01 02:00:00+00'"
	plan, err := lake.Plan(ctx, "readings", hour1, rocklake.PlanOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Printf("keeps %d of %d files\n", plan.Files.Kept, plan.Files.Total)

	rows, err := lake.QueryRows(ctx, "SELECT count(*), max(temp) FROM readings WHERE "+hour1, rocklake.QueryOptions{})
	if err != nil {
		panic(err)
	}
	defer rows.Close()
	for rows.Next() {
		fmt.Println(rows.Values()...)
	}
	if err := rows.Err(); err != nil {
		panic(err)
	}
	// Output:
	// files: 3 rows: 180
	// keeps 1 of 3 files
	// 60 21.6
}

// A count over whole files is answered from the catalog alone.
func ExampleLake_Query() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "rocklake-example-")
	defer os.RemoveAll(dir)
	lake := newLake(ctx, dir)
	defer lake.Close()

	out, err := lake.Query(ctx, "SELECT count(*), min(temp) FROM readings", rocklake.QueryOptions{})
	if err != nil {
		panic(err)
	}
	// Values are DuckDB's text, nil for NULL.
	fmt.Println(*out.Rows[0][0], *out.Rows[0][1], out.Metadata)
	// Output: 180 20.0 true
}

// Rows come typed as DuckDB produces them; a NULL is nil, never a
// pointer to dereference.
func ExampleLake_QueryRows() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "rocklake-example-")
	defer os.RemoveAll(dir)
	lake := newLake(ctx, dir)
	defer lake.Close()

	rows, err := lake.QueryRows(ctx,
		"SELECT hour(ts) AS h, count(*) AS n, max(temp) AS t, NULL AS nothing FROM readings GROUP BY h ORDER BY h",
		rocklake.QueryOptions{})
	if err != nil {
		panic(err)
	}
	defer rows.Close()
	for rows.Next() {
		v := rows.Values()
		fmt.Printf("%v %v %v %v\n", v[0], v[1], v[2], v[3])
	}
	if err := rows.Err(); err != nil {
		panic(err)
	}
	// Output:
	// 0 60 20.6 <nil>
	// 1 60 21.6 <nil>
	// 2 60 22.6 <nil>
}

// Every read can name an earlier snapshot; the zero value of the options
// reads the latest.
func ExampleAtSnapshot() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "rocklake-example-")
	defer os.RemoveAll(dir)
	lake := newLake(ctx, dir)
	defer lake.Close()

	before, err := lake.Snapshots(ctx)
	if err != nil {
		panic(err)
	}
	then := before[len(before)-1].ID
	if _, err := lake.CreateTable(ctx, "notes", "at TIMESTAMPTZ, text VARCHAR"); err != nil {
		panic(err)
	}

	for _, at := range []rocklake.SnapshotRef{rocklake.AtSnapshot(then), rocklake.LatestSnapshot} {
		tables, err := lake.Tables(ctx, rocklake.ReadOptions{Snapshot: at})
		if err != nil {
			panic(err)
		}
		var names []string
		for _, t := range tables {
			names = append(names, t.Name)
		}
		fmt.Printf("%s: %s\n", at, strings.Join(names, ", "))
	}
	_, err = lake.Query(ctx, "SELECT count(*) FROM readings", rocklake.QueryOptions{Snapshot: rocklake.AtSnapshot(0)})
	fmt.Println(errors.Is(err, rocklake.ErrNoSuchTable))
	// Output:
	// snapshot 1: readings
	// latest: notes, readings
	// true
}

// Describe and Stats read a table's definition and statistics from the
// catalog; Files lists its data files.
func ExampleLake_Stats() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "rocklake-example-")
	defer os.RemoveAll(dir)
	lake := newLake(ctx, dir)
	defer lake.Close()

	info, err := lake.Describe(ctx, "readings", rocklake.ReadOptions{})
	if err != nil {
		panic(err)
	}
	for _, c := range info.Columns {
		fmt.Println(c.Name, c.Type)
	}
	st, err := lake.Stats(ctx, "readings", rocklake.ReadOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Println(st.Rows, "rows in", st.Files, "files")
	for _, c := range st.Columns {
		// Min, Max and ContainsNull are nil when the files do not say;
		// DuckDB's writer records them.
		fmt.Printf("%s: %s .. %s, nulls: %v\n", c.Column, *c.Min, *c.Max, *c.ContainsNull)
	}
	files, err := lake.Files(ctx, "readings", rocklake.ReadOptions{})
	if err != nil {
		panic(err)
	}
	for _, f := range files {
		fmt.Println(filepath.Base(f.Path), f.Rows, f.Owner)
	}
	// Output:
	// ts TIMESTAMP WITH TIME ZONE
	// temp DECIMAL(5,1)
	// 180 rows in 3 files
	// ts: 2024-01-01 00:00:00+00 .. 2024-01-01 02:59:00+00, nulls: false
	// temp: 20.0 .. 22.6, nulls: false
	// h0.parquet 60 user
	// h1.parquet 60 user
	// h2.parquet 60 user
}

// Verify reports problems in its report; the error is for a check that
// could not run.
func ExampleLake_Verify() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "rocklake-example-")
	defer os.RemoveAll(dir)
	lake := newLake(ctx, dir)
	defer lake.Close()

	rep, err := lake.Verify(ctx, "readings", rocklake.VerifyOptions{Deep: true})
	if err != nil {
		panic(err)
	}
	fmt.Println(rep.Files, "files,", len(rep.Problems), "problems")

	_ = os.Remove(filepath.Join(dir, "h1.parquet"))
	rep, err = lake.Verify(ctx, "readings", rocklake.VerifyOptions{})
	if err != nil {
		panic(err)
	}
	for _, p := range rep.Problems {
		fmt.Println(filepath.Base(p.Path), strings.SplitN(p.What, ":", 2)[0])
	}
	// Output:
	// 3 files, 0 problems
	// h1.parquet missing
}

// Rewrite a table sorted by a column so that its bounds separate files.
func ExampleLake_Optimize() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "rocklake-example-")
	defer os.RemoveAll(dir)
	lake := newLake(ctx, dir)
	defer lake.Close()

	res, err := lake.Optimize(ctx, "readings", rocklake.OptimizeOptions{SortBy: []string{"temp"}, RowsPerFile: 90})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%d files -> %d files\n", res.FilesBefore, res.FilesAfter)
	plan, _ := lake.Plan(ctx, "readings", "temp >= 22", rocklake.PlanOptions{})
	fmt.Printf("keeps %d of %d files\n", plan.Files.Kept, plan.Files.Total)
	out, _ := lake.Query(ctx, "SELECT count(*) FROM readings WHERE temp >= 22", rocklake.QueryOptions{})
	fmt.Println(*out.Rows[0][0], "rows")

	// Forget the snapshots before now (under the 7-day floor, so say so):
	// the original files were registered in place, so cleanup forgets them
	// and leaves them on disk.
	exp, _ := lake.Expire(ctx, time.Now(), rocklake.ExpireOptions{MinRetention: -1})
	cl, _ := lake.Cleanup(ctx, rocklake.CleanupOptions{Grace: -1})
	fmt.Printf("%d snapshots expired, %d files deleted, %d forgotten\n", len(exp.Expired), len(cl.Deleted), len(cl.Forgotten))
	// Output:
	// 3 files -> 2 files
	// keeps 1 of 2 files
	// 60 rows
	// 2 snapshots expired, 0 files deleted, 3 forgotten
}

// A catalog with a data root refuses files outside it.
func ExampleOpenOptions() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "rocklake-example-")
	defer os.RemoveAll(dir)
	inside, outside := filepath.Join(dir, "lake-data"), filepath.Join(dir, "elsewhere")
	_ = os.Mkdir(inside, 0o755)
	_ = os.Mkdir(outside, 0o755)
	writeHours(outside)
	lake, err := rocklake.Create(ctx, filepath.Join(dir, "lake"), rocklake.OpenOptions{DataRoot: inside})
	if err != nil {
		panic(err)
	}
	_, err = lake.Add(ctx, "readings", []string{outside}, rocklake.AddOptions{Create: true})
	fmt.Println(errors.Is(err, rocklake.ErrOutsideRoot))
	lake.Close()

	// Opened read-only, the lake refuses every write.
	lake, err = rocklake.Open(ctx, filepath.Join(dir, "lake"), rocklake.OpenOptions{ReadOnly: true})
	if err != nil {
		panic(err)
	}
	defer lake.Close()
	_, err = lake.CreateTable(ctx, "t", "id BIGINT")
	fmt.Println(errors.Is(err, rocklake.ErrReadOnly))
	// Output:
	// true
	// true
}
