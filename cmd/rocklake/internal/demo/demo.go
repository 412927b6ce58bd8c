// Package demo builds the demo data set (an events table, one Parquet file
// per hour, written with arrow-go with page indexes and bloom filters),
// registers it, and runs a handful of queries with rocklake and with DuckDB
// over all files, side by side. It lives under the CLI, its one user,
// because it runs queries through engine: the root internal/ packages are
// helpers below every layer.
package demo

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/types"
)

// Options size the demo.
type Options struct {
	Dir         string // catalog in Dir/lake, data in Dir/data
	Files       int    // one file per hour
	RowsPerFile int
	Out         io.Writer
	Progress    func(done, total int) // footer-read progress during ingest
	Runs        int                   // timed runs per query (median)
}

var start = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// Run builds the data set, registers it and runs the queries.
func Run(ctx context.Context, o Options) error {
	if o.Files <= 0 {
		o.Files = 48
	}
	if o.RowsPerFile <= 0 {
		o.RowsPerFile = 20000
	}
	if o.Runs <= 0 {
		o.Runs = 3
	}
	out := o.Out
	dataDir := filepath.Join(o.Dir, "data")
	lakeDir := filepath.Join(o.Dir, "lake")
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return err
	}
	t0 := time.Now()
	probe, err := writeEvents(dataDir, o.Files, o.RowsPerFile)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "wrote %d Parquet files (%d rows each, one hour of events per file) to %s in %.1fs\n",
		o.Files, o.RowsPerFile, dataDir, time.Since(t0).Seconds())

	c, err := catalog.Create(lakeDir, catalog.Options{})
	if err != nil {
		return err
	}
	defer c.Close()
	res, err := ingest.Add(c, "events", []string{dataDir}, ingest.Options{Create: true, Progress: o.Progress})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "registered %d files, %d rows, %d bytes in catalog %s in %.2fs (snapshot %d)\n\n",
		res.Files, res.Rows, res.Bytes, lakeDir, res.Elapsed.Seconds(), res.Snapshot.ID)

	e, err := engine.New(c)
	if err != nil {
		return err
	}
	defer e.Close()
	last := start.Add(time.Duration(o.Files) * time.Hour)
	hour := start.Add(time.Duration(o.Files/2) * time.Hour)
	queries := []struct{ title, sql string }{
		{"one hour of events", fmt.Sprintf("SELECT count(*), round(avg(value), 3) FROM events WHERE ts >= '%s' AND ts < '%s'",
			ts(hour), ts(hour.Add(time.Hour)))},
		{"one user (high-cardinality column)", fmt.Sprintf("SELECT count(*), min(ts) FROM events WHERE user_id = %d", probe)},
		{"purchases in the last 1%", fmt.Sprintf("SELECT count(*), sum(amount) FROM events WHERE kind = 'buy' AND ts >= '%s'",
			ts(last.Add(-time.Duration(float64(o.Files)*float64(time.Hour)/100))))},
		{"NaN-aware filter", fmt.Sprintf("SELECT count(*) FROM events WHERE value > 99.5 AND ts < '%s'", ts(start.Add(3*time.Hour)))},
		{"whole table (from metadata)", "SELECT count(*), min(ts), max(ts) FROM events"},
	}
	glob := filepath.Join(dataDir, "*.parquet")
	db := e.DB()
	if _, err := db.ExecContext(ctx, fmt.Sprintf("CREATE OR REPLACE VIEW events_all AS SELECT * FROM read_parquet('%s')", glob)); err != nil {
		return err
	}
	for _, q := range queries {
		var res *engine.Result
		ours := make([]time.Duration, o.Runs)
		for i := range ours {
			t := time.Now()
			res, err = e.Query(ctx, q.sql, engine.QueryOptions{Snapshot: catalog.Latest})
			if err != nil {
				return fmt.Errorf("%s: %w", q.title, err)
			}
			ours[i] = time.Since(t)
		}
		base := make([]time.Duration, o.Runs)
		var want string
		for i := range base {
			t := time.Now()
			want, err = scalarRow(ctx, e, strings.ReplaceAll(q.sql, "FROM events", "FROM events_all"))
			if err != nil {
				return fmt.Errorf("%s (DuckDB): %w", q.title, err)
			}
			base[i] = time.Since(t)
		}
		got := "(no rows)"
		if len(res.Rows) > 0 {
			got = rowText(res.Rows[0])
		}
		check := "same answer as DuckDB"
		if got != want {
			check = "DIFFERENT from DuckDB: " + want
		}
		p := res.Tables[0].Plan
		how := fmt.Sprintf("read %d of %d files, %d of %d row groups", p.Files.Kept, p.Files.Total, p.RowGroups.Kept, p.RowGroups.Total)
		if res.Metadata {
			how = fmt.Sprintf("answered from catalog statistics, 0 of %d files opened", p.Files.Total)
		}
		fmt.Fprintf(out, "%s\n  %s\n  answer: %s (%s)\n  %s\n  rocklake %s   DuckDB over all files %s   (%.1fx, median of %d)\n\n",
			q.title, q.sql, got, check, how, ms(median(ours)), ms(median(base)),
			float64(median(base))/float64(max(median(ours), 1)), o.Runs)
	}
	return nil
}

func ts(t time.Time) string { return t.Format("2006-01-02 15:04:05+00") }

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func rowText(vals []*string) string {
	parts := make([]string, len(vals))
	for i, v := range vals {
		parts[i] = "NULL"
		if v != nil {
			parts[i] = *v
		}
	}
	return strings.Join(parts, " | ")
}

func scalarRow(ctx context.Context, e *engine.Engine, q string) (string, error) {
	rows, err := e.DB().QueryContext(ctx, "SELECT COLUMNS(*)::VARCHAR FROM ("+q+")")
	if err != nil {
		return "", err
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	if !rows.Next() {
		return "(no rows)", rows.Err()
	}
	vals := make([]*string, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return "", err
	}
	return rowText(vals), nil
}

// writeEvents writes one file per hour: ts sorted within the hour, a
// random high-cardinality user_id, a low-cardinality kind, a value with
// NaN and NULLs, an amount. It returns a user_id that occurs in the data.
func writeEvents(dir string, files, rows int) (int64, error) {
	r := rand.New(rand.NewPCG(2024, 1))
	kinds := []string{"view", "click", "scroll", "buy"}
	var probe int64
	for f := range files {
		tsV := make([]*types.Value, rows)
		uid := make([]*types.Value, rows)
		kind := make([]*types.Value, rows)
		val := make([]*types.Value, rows)
		amt := make([]*types.Value, rows)
		base := start.Add(time.Duration(f) * time.Hour).UnixMicro()
		step := int64(3_600_000_000) / int64(rows)
		for i := range rows {
			t := types.IntValue(base + int64(i)*step)
			u := types.IntValue(r.Int64N(1 << 40))
			k := types.StringValue(kinds[min(r.IntN(10), 3)])
			tsV[i], uid[i], kind[i] = &t, &u, &k
			switch {
			case r.IntN(200) == 0:
				v := types.FloatValue(math.NaN())
				val[i] = &v
			case r.IntN(20) == 0:
				// NULL
			default:
				v := types.FloatValue(math.Round(r.Float64()*10000) / 100)
				val[i] = &v
			}
			a := types.IntValue(r.Int64N(100000))
			amt[i] = &a
			if f == files/3 && i == rows/2 {
				probe = u.Int64()
			}
		}
		path := filepath.Join(dir, fmt.Sprintf("events-%s.parquet", start.Add(time.Duration(f)*time.Hour).Format("2006-01-02T15")))
		err := pqwrite.Write(path, []pqwrite.Column{
			{Name: "ts", Type: types.MustParseType("timestamptz"), Values: tsV},
			{Name: "user_id", Type: types.MustParseType("int64"), Values: uid},
			{Name: "kind", Type: types.MustParseType("varchar"), Values: kind},
			{Name: "value", Type: types.MustParseType("float64"), Values: val},
			{Name: "amount", Type: types.MustParseType("decimal(10,2)"), Values: amt},
		}, pqwrite.Options{RowGroupRows: 5000, PageIndex: true, BloomColumns: []string{"user_id"}, PageBytes: 16 << 10})
		if err != nil {
			return 0, err
		}
	}
	return probe, nil
}
