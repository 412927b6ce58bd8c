package server_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/rocklake/rocklake"
	"github.com/rocklake/rocklake/engine"
)

// TestIcebergReadsEveryMappedType: iceberg-go reads a file of the types
// mapped to Iceberg with promotions (small and unsigned integers,
// timestamps in seconds and milliseconds, time, float, JSON, struct, map)
// through the metadata rocklake wrote, each value as DuckDB wrote it.
func TestIcebergReadsEveryMappedType(t *testing.T) {
	cfg := newConfig()
	cfg.IcebergDir = filepath.Join(t.TempDir(), "iceberg")
	f := newFixture(t, cfg)
	db, _ := engine.Open("")
	defer db.Close()
	p := filepath.Join(f.data, "types.parquet")
	q := `COPY (SELECT i::TINYINT AS ti, i::SMALLINT AS si, i::UTINYINT AS uti, i::USMALLINT AS usi, i::UINTEGER AS ui,
		TIMESTAMP '2024-01-01 00:00:00' + to_milliseconds(i*1001) AS tsx, (TIMESTAMP '2024-01-01 00:00:00' + to_seconds(i))::TIMESTAMP_MS AS tms,
		(TIMESTAMP '2024-01-01 00:00:00' + to_seconds(i))::TIMESTAMP_S AS tss, TIME '01:02:03' + to_microseconds(i) AS tm, i::FLOAT/3 AS fl,
		('{"a":' || i || '}')::JSON AS js, {'x': i, 'y': 'v' || i} AS st, MAP {'k': i} AS mp
		FROM range(0, 50) r(i)) TO '` + p + `' (FORMAT parquet)`
	if _, err := db.Exec(q); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := f.lake.Add(ctx, "ty", []string{p}, rocklake.AddOptions{Create: true}); err != nil {
		t.Fatal(err)
	}
	cat, err := rest.NewCatalog(ctx, "rocklake", "http://"+f.srv.HTTPAddr().String()+"/iceberg")
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.LoadTable(ctx, table.Identifier{"main", "ty"})
	if err != nil {
		t.Fatal(err)
	}
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	if at.NumRows() != 50 || at.NumCols() != 13 {
		t.Fatalf("%d rows, %d columns; want 50 and 13", at.NumRows(), at.NumCols())
	}
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	want := func(col string, i int) string {
		switch col {
		case "ti", "si", "uti", "usi", "ui":
			return strconv.Itoa(i)
		case "tsx":
			return base.Add(time.Duration(i*1001) * time.Millisecond).Format("2006-01-02T15:04:05.999")
		case "tms", "tss":
			return base.Add(time.Duration(i) * time.Second).Format("2006-01-02T15:04:05")
		case "tm":
			return fmt.Sprintf("01:02:03.%06d", i)
		case "fl":
			return strconv.FormatFloat(float64(float32(i)/3), 'g', -1, 32)
		case "js":
			return fmt.Sprintf(`{"a":%d}`, i)
		case "st":
			return fmt.Sprintf(`{"x":%d,"y":"v%d"}`, i, i)
		case "mp":
			return fmt.Sprintf(`[{"key":"k","value":%d}]`, i)
		}
		return "?"
	}
	for c := 0; c < int(at.NumCols()); c++ {
		name := at.Schema().Field(c).Name
		row := 0
		for _, ch := range at.Column(c).Data().Chunks() {
			for k := 0; k < ch.Len(); k++ {
				if got, w := ch.ValueStr(k), want(name, row); got != w && !(name == "tm" && row == 0 && got == "01:02:03") {
					t.Errorf("column %s, row %d: iceberg-go read %s, want %s", name, row, got, w)
				}
				row++
			}
		}
	}
}
