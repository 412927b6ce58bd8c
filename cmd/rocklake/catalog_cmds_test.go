package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake"
	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

func newCatalogDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "lake")
	if _, err := run(t, "--catalog", dir, "init"); err != nil {
		t.Fatal(err)
	}
	return dir
}

func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, err := run(t, args...)
	if err != nil {
		t.Fatalf("rocklake %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func TestInitTwiceFails(t *testing.T) {
	dir := newCatalogDir(t)
	if _, err := run(t, "--catalog", dir, "init"); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("second init: %v", err)
	}
}

func TestTableCommands(t *testing.T) {
	dir := newCatalogDir(t)
	out := mustRun(t, "--catalog", dir, "table", "create", "events", "ts TIMESTAMPTZ, id BIGINT, tags STRUCT(a INT, b VARCHAR[])")
	if !strings.Contains(out, "created table events (3 columns) at snapshot 1") {
		t.Fatalf("create: %q", out)
	}
	out = mustRun(t, "--catalog", dir, "table", "list")
	if !strings.Contains(out, "events") {
		t.Fatalf("list: %q", out)
	}
	out = mustRun(t, "--catalog", dir, "--format", "json", "table", "describe", "EVENTS")
	var desc struct {
		Table   string                       `json:"table"`
		Columns []rocklake.ColumnDescription `json:"columns"`
	}
	if err := json.Unmarshal([]byte(out), &desc); err != nil {
		t.Fatal(err)
	}
	if desc.Table != "events" || len(desc.Columns) != 3 || types.DisplayName(desc.Columns[2].Type) != "STRUCT(a INTEGER, b VARCHAR[])" ||
		len(desc.Columns[2].Children) != 2 || desc.Columns[2].Children[1].Children[0].Name != "element" {
		t.Fatalf("describe: %+v", desc)
	}
	// Time travel: at snapshot 0 the table does not exist yet.
	if _, err := run(t, "--catalog", dir, "table", "describe", "events", "--snapshot", "0"); err == nil {
		t.Fatal("describe at snapshot 0 must fail")
	}
	out = mustRun(t, "--catalog", dir, "--format", "json", "snapshots")
	var snaps struct {
		Snapshots []snapshotInfo `json:"snapshots"`
	}
	if err := json.Unmarshal([]byte(out), &snaps); err != nil || len(snaps.Snapshots) != 2 || snaps.Snapshots[1].SchemaVersion != 1 {
		t.Fatalf("snapshots: %v %+v", err, snaps)
	}
}

func TestTableCreateErrors(t *testing.T) {
	dir := newCatalogDir(t)
	mustRun(t, "--catalog", dir, "table", "create", "t", "x INT")
	for _, args := range [][]string{
		{"table", "create", "t", "x INT"},           // duplicate
		{"table", "create", "u", "x DECIMAL(50,2)"}, // bad type
		{"table", "create", "u", "x INT, x BIGINT"}, // duplicate column
		{"table", "create", "u", ""},                // no columns
		{"table", "describe", "nope"},               // unknown
		{"stats", "t", "--snapshot", "42"},          // no such snapshot
		{"stats", "t", "--column", "nope"},          // unknown column
		{"table", "create", "u"},                    // missing argument
	} {
		before := mustRun(t, "--catalog", dir, "--format", "json", "snapshots")
		if out, err := run(t, append([]string{"--catalog", dir}, args...)...); err == nil {
			t.Errorf("rocklake %s: want an error, got %q", strings.Join(args, " "), out)
		}
		if after := mustRun(t, "--catalog", dir, "--format", "json", "snapshots"); after != before {
			t.Errorf("rocklake %s changed the catalog", strings.Join(args, " "))
		}
	}
	// A column list that ends early says so, and names no ")" the user
	// did not write.
	for spec, want := range map[string]string{
		"id INT,":  `invalid column list "id INT," at offset 7: expected a column name, found the end of the list`,
		"id INT, ": `invalid column list "id INT, " at offset 8: expected a column name, found the end of the list`,
		"":         `invalid column list "" at offset 0: expected a column name, found the end of the list`,
	} {
		_, err := run(t, "--catalog", dir, "table", "create", "u", spec)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("table create u %q: %v, want %q", spec, err, want)
		}
	}
}

func TestNotACatalogAndLocked(t *testing.T) {
	if _, err := run(t, "--catalog", t.TempDir(), "table", "list"); err == nil || !strings.Contains(err.Error(), "not a rocklake catalog") {
		t.Fatalf("empty dir: %v", err)
	}
	dir := newCatalogDir(t)
	c, err := catalog.Open(dir, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := run(t, "--catalog", dir, "table", "list"); err == nil || !strings.Contains(err.Error(), "in use by another process") {
		t.Fatalf("held catalog: %v", err)
	}
}

func TestStatsShowsDuckLakeText(t *testing.T) {
	dir := newCatalogDir(t)
	mustRun(t, "--catalog", dir, "table", "create", "t", "ts TIMESTAMPTZ, price DECIMAL(10,2)")
	c, err := catalog.Open(dir, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	encode := func(typ, text string) stats.Maybe[[]byte] {
		codec, _ := types.CodecFor(types.MustParseType(typ))
		v, err := codec.Parse(text)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := codec.Encode(v)
		return stats.Known(b)
	}
	tx, _ := c.Begin()
	tx.AddFiles("t", catalog.NewFile{Path: "/data/a.parquet", RecordCount: 3, RowGroupCount: 1, Columns: []catalog.FileColumn{
		{Path: []string{"ts"}, Stats: stats.Column{
			Min: encode("timestamptz", "2024-01-01 00:00:00+00"), Max: encode("timestamptz", "2024-01-02 12:30:00+02"),
			NullCount: stats.Known[int64](1), RowCount: 3, MinIsExact: true, MaxIsExact: true}},
		{Path: []string{"price"}, Stats: stats.Column{
			Min: encode("decimal(10,2)", "-1.5"), Max: encode("decimal(10,2)", "99.99"), RowCount: 3}},
	}})
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	out := mustRun(t, "--catalog", dir, "--format", "json", "stats", "t", "--column", "ts")
	var st rocklake.TableStats
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	if st.Rows != 3 || len(st.Columns) != 1 || *st.Columns[0].Min != "2024-01-01 00:00:00+00" ||
		*st.Columns[0].Max != "2024-01-02 10:30:00+00" || st.Columns[0].ContainsNull == nil || !*st.Columns[0].ContainsNull {
		t.Fatalf("stats json: %s", out)
	}
	if len(st.FileStats) != 1 || st.FileStats[0].Path != "/data/a.parquet" || *st.FileStats[0].NullCount != 1 || st.FileStats[0].ValueCount != nil {
		t.Fatalf("per-file stats: %s", out)
	}
	text := mustRun(t, "--catalog", dir, "stats", "t")
	if !strings.Contains(text, "-1.50") || !strings.Contains(text, "99.99") {
		t.Fatalf("text stats: %s", text)
	}
}

func TestAddCommand(t *testing.T) {
	dir := newCatalogDir(t)
	data := t.TempDir()
	mk := func(name string, typ string, n int) string {
		p := filepath.Join(data, name)
		codec, _ := types.CodecFor(types.MustParseType(typ))
		vals := make([]*types.Value, n)
		for i := range vals {
			v, err := codec.Parse(fmt.Sprint(i * 3))
			if err != nil {
				t.Fatal(err)
			}
			vals[i] = &v
		}
		if err := pqwrite.Write(p, []pqwrite.Column{{Name: "x", Type: types.MustParseType(typ), Values: vals}}, pqwrite.Options{}); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := mk("a.parquet", "int32", 10)
	b := mk("b.parquet", "int64", 5)
	if _, err := run(t, "--catalog", dir, "add", "t", a, b, "--create"); err == nil || !strings.Contains(err.Error(), "does not fit") {
		t.Fatalf("an int64 file into the int32 table made from a.parquet: %v", err)
	}
	b = mk("b2.parquet", "int16", 5)
	out := mustRun(t, "--catalog", dir, "--format", "json", "add", "t", a, b, "--create")
	var res struct {
		Files    int  `json:"file_count"`
		Rows     int  `json:"rows"`
		Snapshot int  `json:"snapshot_id"`
		Created  bool `json:"created_table"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Files != 2 || res.Rows != 15 || !res.Created {
		t.Fatalf("add: %v %s", err, out)
	}
	// The table takes the first file's schema (a.parquet: int32); b's
	// int64 column would not fit it, so b is named first on purpose below.
	st := mustRun(t, "--catalog", dir, "--format", "json", "stats", "t", "--column", "x")
	var so rocklake.TableStats
	_ = json.Unmarshal([]byte(st), &so)
	if len(so.FileStats) != 2 || *so.Columns[0].Max != "27" || *so.Columns[0].Min != "0" {
		t.Fatalf("stats after add: %s", st)
	}
	before := mustRun(t, "--catalog", dir, "--format", "json", "snapshots")
	bad := filepath.Join(data, "bad.parquet")
	_ = os.WriteFile(bad, []byte("not parquet"), 0o644)
	c := mk("c.parquet", "int32", 3)
	if _, err := run(t, "--catalog", dir, "add", "t", c, bad); err == nil || !strings.Contains(err.Error(), "bad.parquet") {
		t.Fatalf("a bad file among good ones: %v", err)
	}
	if _, err := run(t, "--catalog", dir, "add", "t", a); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("adding a file twice: %v", err)
	}
	if _, err := run(t, "--catalog", dir, "add", "nope", c); err == nil || !strings.Contains(err.Error(), "--create") {
		t.Fatalf("missing table: %v", err)
	}
	if after := mustRun(t, "--catalog", dir, "--format", "json", "snapshots"); after != before {
		t.Fatal("failed adds changed the catalog")
	}
	text := mustRun(t, "--catalog", dir, "add", "t", filepath.Join(data, "c*.parquet"))
	if !strings.Contains(text, "added 1 file, 3 rows") {
		t.Fatalf("glob add: %q", text)
	}
}

func TestPlanCommand(t *testing.T) {
	dir := newCatalogDir(t)
	data := t.TempDir()
	var paths []string
	for f := range 3 {
		vals := make([]*types.Value, 10)
		for i := range vals {
			v := types.IntValue(int64(f*100 + i))
			vals[i] = &v
		}
		p := filepath.Join(data, fmt.Sprintf("p%d.parquet", f))
		if err := pqwrite.Write(p, []pqwrite.Column{{Name: "x", Type: types.MustParseType("int64"), Values: vals}}, pqwrite.Options{RowGroupRows: 5}); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	mustRun(t, append([]string{"--catalog", dir, "add", "t", "--create"}, paths...)...)
	out := mustRun(t, "--catalog", dir, "--format", "json", "plan", "t", "x >= 105 AND x < 200")
	var p map[string]any
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"table", "snapshot_id", "predicate", "files", "row_groups", "pages", "bytes", "kept_files"} {
		if _, ok := p[k]; !ok {
			t.Errorf("plan JSON lacks %q: %s", k, out)
		}
	}
	files := p["files"].(map[string]any)
	rgs := p["row_groups"].(map[string]any)
	kept := p["kept_files"].([]any)
	if files["total"].(float64) != 3 || files["kept"].(float64) != 1 || rgs["kept"].(float64) != 1 || len(kept) != 1 {
		t.Fatalf("plan: %s", out)
	}
	kf := kept[0].(map[string]any)
	if kf["path"] != paths[1] || fmt.Sprint(kf["row_groups"]) != "[1]" || kf["all_match"] != true {
		t.Fatalf("kept file: %v", kf)
	}
	if _, err := run(t, "--catalog", dir, "plan", "t", "y = 1"); err == nil || !strings.Contains(err.Error(), "no such column") || errorCode(err) != codeNotFound {
		t.Fatalf("unknown column: %v (code %q), want code %q", err, errorCode(err), codeNotFound)
	}
	if _, err := run(t, "--catalog", dir, "plan", "t", "x = 'abc'"); err == nil || !strings.Contains(err.Error(), "offset 4") {
		t.Fatalf("uncastable literal: %v", err)
	}
}

func TestQueryAndDemoCommands(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	out := mustRun(t, "demo", "--dir", dir, "--files", "4", "--rows", "2000")
	for _, want := range []string{"registered 4 files, 8000 rows", "one hour of events", "answered from catalog statistics", "same answer as DuckDB"} {
		if !strings.Contains(out, want) {
			t.Fatalf("demo output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "DIFFERENT") {
		t.Fatalf("demo answers differ from DuckDB:\n%s", out)
	}
	lake := filepath.Join(dir, "lake")
	csvOut := mustRun(t, "--catalog", lake, "--format", "csv", "query", "SELECT kind, count(*) AS n FROM events WHERE ts < '2024-01-01 01:00:00+00' GROUP BY kind ORDER BY kind")
	if !strings.HasPrefix(csvOut, "kind,n\n") || strings.Count(csvOut, "\n") != 5 {
		t.Fatalf("csv query output:\n%s", csvOut)
	}
	js := mustRun(t, "--catalog", lake, "--format", "json", "query", "SELECT count(*) FROM events")
	var res struct {
		Columns  []struct{ Name, Type string } `json:"columns"`
		Rows     []map[string]any              `json:"rows"`
		RowCount int                           `json:"row_count"`
		Metadata bool                          `json:"answered_from_metadata"`
	}
	if err := json.Unmarshal([]byte(js), &res); err != nil || len(res.Rows) != 1 || res.Rows[0]["count_star()"] != float64(8000) ||
		res.RowCount != 1 || !res.Metadata || res.Columns[0].Type != "BIGINT" {
		t.Fatalf("json query: %v %s", err, js)
	}
	if _, err := run(t, "--catalog", lake, "query", "SELECT * FROM nosuch"); err == nil || !strings.Contains(err.Error(), "tables: events") {
		t.Fatalf("unknown table: %v", err)
	}
	if _, err := run(t, "demo", "--dir", dir); err == nil {
		t.Fatal("demo into a non-empty directory must fail")
	}
}

func TestVerifyCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	mustRun(t, "demo", "--dir", dir, "--files", "2", "--rows", "500")
	lake := filepath.Join(dir, "lake")
	out := mustRun(t, "--catalog", lake, "verify", "events", "--deep")
	if !strings.Contains(out, "2 files checked") || !strings.Contains(out, "0 problems") {
		t.Fatalf("verify: %s", out)
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "data", "*.parquet"))
	_ = os.Remove(matches[0])
	out, err := run(t, "--catalog", lake, "verify", "events")
	if err == nil || !strings.Contains(out, "PROBLEM") || !strings.Contains(out, "missing") {
		t.Fatalf("verify with a missing file: %v\n%s", err, out)
	}
}

func TestInitDataRoot(t *testing.T) {
	base := t.TempDir()
	if _, err := run(t, "--catalog", filepath.Join(base, "c0"), "init", "--data-root", filepath.Join(base, "missing")); err == nil ||
		!strings.Contains(err.Error(), "data root") {
		t.Fatalf("a missing data root: %v", err)
	}
	if _, err := os.Stat(filepath.Join(base, "c0")); !os.IsNotExist(err) {
		t.Fatal("a refused init left a catalog directory behind")
	}
	lake, other := filepath.Join(base, "lake"), filepath.Join(base, "other")
	for _, d := range []string{lake, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p string) string {
		v := types.IntValue(1)
		if err := pqwrite.Write(p, []pqwrite.Column{{Name: "x", Type: types.MustParseType("int64"), Values: []*types.Value{&v}}}, pqwrite.Options{}); err != nil {
			t.Fatal(err)
		}
		return p
	}
	dir := filepath.Join(base, "cat")
	mustRun(t, "--catalog", dir, "init", "--data-root", lake)
	mustRun(t, "--catalog", dir, "add", "t", write(filepath.Join(lake, "in.parquet")), "--create")
	before := mustRun(t, "--catalog", dir, "--format", "json", "snapshots")
	out := write(filepath.Join(other, "out.parquet"))
	if _, err := run(t, "--catalog", dir, "add", "t", out); err == nil || !strings.Contains(err.Error(), "data root") {
		t.Fatalf("a file outside the data root: %v", err)
	}
	if after := mustRun(t, "--catalog", dir, "--format", "json", "snapshots"); after != before {
		t.Fatal("a refused add changed the catalog")
	}
}

func TestOptimizeCommand(t *testing.T) {
	dir := newCatalogDir(t)
	data := t.TempDir()
	var paths []string
	// Three files, each spanning the whole range of x: nothing prunes.
	for f := range 3 {
		vals := make([]*types.Value, 30)
		for i := range vals {
			v := types.IntValue(int64(i*3 + f))
			vals[i] = &v
		}
		p := filepath.Join(data, fmt.Sprintf("o%d.parquet", f))
		if err := pqwrite.Write(p, []pqwrite.Column{{Name: "x", Type: types.MustParseType("int64"), Values: vals}}, pqwrite.Options{}); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	mustRun(t, append([]string{"--catalog", dir, "add", "t", "--create"}, paths...)...)
	keptFiles := func() float64 {
		var p map[string]any
		_ = json.Unmarshal([]byte(mustRun(t, "--catalog", dir, "--format", "json", "plan", "t", "x < 10")), &p)
		return p["files"].(map[string]any)["kept"].(float64)
	}
	if k := keptFiles(); k != 3 {
		t.Fatalf("before: %v files kept", k)
	}
	if _, err := run(t, "--catalog", dir, "optimize", "t"); err == nil || !strings.Contains(err.Error(), "--sort-by") {
		t.Fatalf("optimize without --sort-by: %v", err)
	}
	for _, bad := range [][]string{
		{"--curve", "peano"},
		{"--target-file-size", "big"},
		{"--target-file-size", "1MB", "--rows-per-file", "10"},
	} {
		args := append([]string{"--catalog", dir, "optimize", "t", "--sort-by", "x"}, bad...)
		if _, err := run(t, args...); err == nil || !strings.Contains(err.Error(), bad[len(bad)-1]) && !strings.Contains(err.Error(), "not both") {
			t.Fatalf("optimize %v: %v", bad, err)
		}
	}
	out := mustRun(t, "--catalog", dir, "optimize", "t", "--sort-by", "x", "--rows-per-file", "30", "--dir", filepath.Join(data, "sorted"))
	if !strings.Contains(out, "3 files -> 3 files (90 rows, ") {
		t.Fatalf("optimize: %q", out)
	}
	if k := keptFiles(); k != 1 {
		t.Fatalf("after sorting by x: %v files kept for x < 10, want 1", k)
	}
	q := mustRun(t, "--catalog", dir, "--format", "csv", "query", "SELECT count(*), sum(x) FROM t WHERE x < 10")
	if !strings.Contains(q, "10,45") {
		t.Fatalf("query after optimize: %q", q)
	}
	// The three 30-row files merge into one of 90 rows; then nothing is small.
	out = mustRun(t, "--catalog", dir, "compact", "t", "--rows-per-file", "100")
	if !strings.Contains(out, "3 small files -> 1 file (90 rows, ") {
		t.Fatalf("compact: %q", out)
	}
	out = mustRun(t, "--catalog", dir, "compact", "t", "--rows-per-file", "100")
	if !strings.Contains(out, "nothing to compact") {
		t.Fatalf("second compact: %q", out)
	}
	q = mustRun(t, "--catalog", dir, "--format", "csv", "query", "SELECT count(*), sum(x) FROM t")
	if !strings.Contains(q, "90,4005") {
		t.Fatalf("query after compact: %q", q)
	}

	// Expire everything but the newest snapshot: the three original and the
	// three sorted files are read by no kept snapshot.
	if _, err := run(t, "--catalog", dir, "expire"); err == nil || !strings.Contains(err.Error(), "--older-than") {
		t.Fatalf("expire without --older-than: %v", err)
	}
	if _, err := run(t, "--catalog", dir, "expire", "--older-than", "soon"); err == nil || !strings.Contains(err.Error(), `"soon"`) {
		t.Fatalf("expire --older-than soon: %v", err)
	}
	out = mustRun(t, "--catalog", dir, "expire", "--older-than", "0s", "--allow-short-retention", "--dry-run")
	if !strings.Contains(out, "would expire") || !strings.Contains(out, "6 files would be scheduled") {
		t.Fatalf("expire --dry-run: %q", out)
	}
	out = mustRun(t, "--catalog", dir, "expire", "--older-than", "0s", "--allow-short-retention")
	if !strings.Contains(out, "forgot 6 files and 0 dropped tables; 6 files scheduled") {
		t.Fatalf("expire: %q", out)
	}
	if _, err := run(t, "--catalog", dir, "query", "--snapshot", "1", "SELECT count(*) FROM t"); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("time travel to an expired snapshot: %v", err)
	}
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("expire deleted a file: %v", err)
		}
	}
	// The sorted files are rocklake's and go; the originals were
	// registered in place and stay on disk.
	out = mustRun(t, "--catalog", dir, "cleanup", "--grace", "0s")
	if !strings.Contains(out, "deleted 3 files, forgot 3 (left on disk), kept 0; 0 waiting") {
		t.Fatalf("cleanup: %q", out)
	}
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("cleanup deleted the user's file %s: %v", p, err)
		}
	}
	// The compacted file went under the rewrite root beside the catalog,
	// so the directory made for the sorted files is empty and goes.
	sorted := filepath.Join(data, "sorted")
	if _, err := os.Stat(sorted); !errors.Is(err, os.ErrNotExist) || !strings.Contains(out, "removed empty directory "+sorted) {
		t.Fatalf("sorted/ after cleanup: %v; %q", err, out)
	}
	compactDirs, _ := filepath.Glob(filepath.Join(dir+".files", "table-*", "compact-*"))
	if len(compactDirs) != 1 {
		t.Fatalf("compact wrote into %v", compactDirs)
	}
	q = mustRun(t, "--catalog", dir, "--format", "csv", "query", "SELECT count(*), sum(x) FROM t")
	if !strings.Contains(q, "90,4005") {
		t.Fatalf("query after cleanup: %q", q)
	}
	if out := mustRun(t, "--catalog", dir, "cleanup", "--grace", "0s"); !strings.Contains(out, "deleted 0 files") {
		t.Fatalf("second cleanup: %q", out)
	}
	// One more rewrite; once its input is expired and cleaned, the
	// compacted file's directory is empty and goes with it.
	compacted := compactDirs[0]
	mustRun(t, "--catalog", dir, "optimize", "t", "--sort-by", "x", "--dir", filepath.Join(data, "final"))
	mustRun(t, "--catalog", dir, "expire", "--older-than", "0s", "--allow-short-retention")
	out = mustRun(t, "--catalog", dir, "cleanup", "--grace", "0s")
	if _, err := os.Stat(compacted); !errors.Is(err, os.ErrNotExist) || !strings.Contains(out, "removed empty directory "+compacted) {
		t.Fatalf("emptied directory %s: %v; %q", compacted, err, out)
	}
	if q := mustRun(t, "--catalog", dir, "--format", "csv", "query", "SELECT count(*), sum(x) FROM t"); !strings.Contains(q, "90,4005") {
		t.Fatalf("query after the last cleanup: %q", q)
	}
}

func TestParseCutoff(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"7d":                   now.AddDate(0, 0, -7),
		"1.5d":                 now.Add(-36 * time.Hour),
		"90m":                  now.Add(-90 * time.Minute),
		"0s":                   now,
		"2026-01-02T03:04:05Z": time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	} {
		got, err := parseCutoff(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("parseCutoff(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "x", "-3h", "-1d", "d", "7 days"} {
		if _, err := parseCutoff(bad, now); err == nil {
			t.Errorf("parseCutoff(%q) accepted", bad)
		}
	}
}

// add --create gives a mostly-distinct column membership filters; describe
// shows them; --filter-columns names others; a type without filters is
// refused by name.
func TestAddMembershipFilters(t *testing.T) {
	dir := newCatalogDir(t)
	data := t.TempDir()
	var ids, ks []*types.Value
	for i := range 1500 {
		id, k := types.IntValue(int64(i*7919)), types.IntValue(int64(i%3))
		ids, ks = append(ids, &id), append(ks, &k)
	}
	p := filepath.Join(data, "a.parquet")
	if err := pqwrite.Write(p, []pqwrite.Column{{Name: "id", Type: types.MustParseType("int64"), Values: ids},
		{Name: "k", Type: types.MustParseType("int64"), Values: ks}}, pqwrite.Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, "--catalog", dir, "add", "t", "--create", "--filter-columns", "nope", p); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("--filter-columns nope: %v", err)
	}
	mustRun(t, "--catalog", dir, "add", "t", "--create", p)
	out := mustRun(t, "--catalog", dir, "table", "describe", "t")
	var idLine, kLine string
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) > 1 && f[1] == "id" {
			idLine = l
		}
		if len(f) > 1 && f[1] == "k" {
			kLine = l
		}
	}
	if !strings.Contains(idLine, "1 file,") || !strings.HasSuffix(strings.TrimSpace(kLine), "-") {
		t.Fatalf("describe:\n%s", out)
	}
	if q := mustRun(t, "--catalog", dir, "--format", "csv", "query", "SELECT count(*) FROM t WHERE id = 7919"); !strings.Contains(q, "1") {
		t.Fatalf("query: %q", q)
	}
}
