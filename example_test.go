package rocklake_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"rocklake"
	"rocklake/catalog"
	"rocklake/internal/pqwrite"
	"rocklake/maintain"
	"rocklake/types"
)

// writeHours writes three files of readings, one per hour of 2024-01-01.
func writeHours(dir string) {
	for h := range 3 {
		var ts, temp []*types.Value
		for m := range 60 {
			t := types.IntValue(int64(1704067200+h*3600+m*60) * 1_000_000)
			c := types.IntValue(int64(200 + 10*h + m%7))
			ts, temp = append(ts, &t), append(temp, &c)
		}
		err := pqwrite.Write(filepath.Join(dir, fmt.Sprintf("h%d.parquet", h)), []pqwrite.Column{
			{Name: "ts", Type: types.MustParseType("timestamptz"), Values: ts},
			{Name: "temp", Type: types.MustParseType("decimal(5,1)"), Values: temp},
		}, pqwrite.Options{})
		if err != nil {
			panic(err)
		}
	}
}

// Register files, see which ones a predicate needs, and query them.
func Example() {
	dir, _ := os.MkdirTemp("", "rocklake-example-")
	defer os.RemoveAll(dir)
	writeHours(dir)

	lake, err := rocklake.Create(filepath.Join(dir, "lake"))
	if err != nil {
		panic(err)
	}
	defer lake.Close()
	res, err := lake.Add("readings", true, dir)
	if err != nil {
		panic(err)
	}
	fmt.Println("files:", res.Files, "rows:", res.Rows)

	plan, err := lake.Plan("readings", "ts >= '2024-01-01 01:00:00+00' AND ts < '2024-01-01 02:00:00+00'")
	if err != nil {
		panic(err)
	}
	fmt.Printf("keeps %d of %d files\n", plan.Files.Kept, plan.Files.Total)

	out, err := lake.Query(context.Background(),
		"SELECT count(*), max(temp) FROM readings WHERE ts >= '2024-01-01 01:00:00+00' AND ts < '2024-01-01 02:00:00+00'")
	if err != nil {
		panic(err)
	}
	fmt.Println(*out.Rows[0][0], *out.Rows[0][1])
	// Output:
	// files: 3 rows: 180
	// keeps 1 of 3 files
	// 60 21.6
}

// A count over whole files is answered from the catalog alone.
func ExampleLake_Query() {
	dir, _ := os.MkdirTemp("", "rocklake-example-")
	defer os.RemoveAll(dir)
	writeHours(dir)
	lake, _ := rocklake.Create(filepath.Join(dir, "lake"))
	defer lake.Close()
	if _, err := lake.Add("readings", true, dir); err != nil {
		panic(err)
	}
	out, err := lake.Query(context.Background(), "SELECT count(*), min(temp) FROM readings")
	if err != nil {
		panic(err)
	}
	fmt.Println(*out.Rows[0][0], *out.Rows[0][1], out.Metadata)
	// Output: 180 20.0 true
}

// Rows come typed as DuckDB produces them; a NULL is nil, never a
// pointer to dereference.
func ExampleLake_QueryRows() {
	dir, _ := os.MkdirTemp("", "rocklake-example-")
	defer os.RemoveAll(dir)
	writeHours(dir)
	lake, _ := rocklake.Create(filepath.Join(dir, "lake"))
	defer lake.Close()
	if _, err := lake.Add("readings", true, dir); err != nil {
		panic(err)
	}
	rows, err := lake.QueryRows(context.Background(),
		"SELECT hour(ts) AS h, count(*) AS n, max(temp) AS t, NULL AS nothing FROM readings GROUP BY h ORDER BY h")
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

// Rewrite a table sorted by a column so that its bounds separate files.
func ExampleLake_Optimize() {
	dir, _ := os.MkdirTemp("", "rocklake-example-")
	defer os.RemoveAll(dir)
	writeHours(dir)
	lake, _ := rocklake.Create(filepath.Join(dir, "lake"))
	defer lake.Close()
	if _, err := lake.Add("readings", true, dir); err != nil {
		panic(err)
	}
	res, err := lake.Optimize(context.Background(), "readings", maintain.OptimizeOptions{SortBy: []string{"temp"}, RowsPerFile: 90})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%d files -> %d files\n", res.FilesBefore, res.FilesAfter)
	plan, _ := lake.Plan("readings", "temp >= 22")
	fmt.Printf("keeps %d of %d files\n", plan.Files.Kept, plan.Files.Total)
	out, _ := lake.Query(context.Background(), "SELECT count(*) FROM readings WHERE temp >= 22")
	fmt.Println(*out.Rows[0][0], "rows")

	// Forget the snapshots before now (under the 7-day floor, so say so):
	// the original files were registered in place, so cleanup forgets them
	// and leaves them on disk.
	exp, _ := lake.Expire(time.Now(), catalog.ExpireOptions{MinRetention: -1})
	cl, _ := lake.Cleanup(catalog.CleanupOptions{Grace: -1})
	fmt.Printf("%d snapshots expired, %d files deleted, %d forgotten\n", len(exp.Expired), len(cl.Deleted), len(cl.Forgotten))
	// Output:
	// 3 files -> 2 files
	// keeps 1 of 2 files
	// 60 rows
	// 2 snapshots expired, 0 files deleted, 3 forgotten
}

// A catalog with a data root refuses files outside it.
func ExampleWithDataRoot() {
	dir, _ := os.MkdirTemp("", "rocklake-example-")
	defer os.RemoveAll(dir)
	inside, outside := filepath.Join(dir, "lake-data"), filepath.Join(dir, "elsewhere")
	_ = os.Mkdir(inside, 0o755)
	_ = os.Mkdir(outside, 0o755)
	writeHours(outside)
	lake, _ := rocklake.Create(filepath.Join(dir, "lake"), rocklake.WithDataRoot(inside))
	defer lake.Close()
	_, err := lake.Add("readings", true, outside)
	fmt.Println(errors.Is(err, catalog.ErrOutsideRoot))
	// Output:
	// true
}
