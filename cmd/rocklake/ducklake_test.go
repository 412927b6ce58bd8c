package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/types"
)

// writeDuckFiles writes Parquet files with DuckDB: name -> query.
func writeDuckFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	db, err := engine.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for name, q := range files {
		if _, err := db.Exec(fmt.Sprintf(`COPY (%s) TO '%s' (FORMAT parquet)`, q, filepath.Join(dir, name))); err != nil {
			t.Fatalf("write %s: %v", name, err)
		}
	}
}

// lakeEvents is a file of many types, NULLs and a NaN; k makes it differ.
func lakeEvents(k int) string {
	return fmt.Sprintf(`SELECT i + %[1]d*100 AS id, (i %% 100 - 50)::TINYINT AS i8, (i::HUGEINT * 1000000000000) AS h,
		CASE WHEN i = 3 THEN 'nan'::FLOAT ELSE i / 4 END::FLOAT AS f, CASE WHEN i %% 10 = 0 THEN NULL ELSE i * 1.5 END AS d,
		(i * 1.25)::DECIMAL(10,2) AS dec, DATE '2024-01-01' + (i + %[1]d*100)::INTEGER AS dt,
		TIMESTAMPTZ '2024-01-01 00:00:00+00' + INTERVAL (i + %[1]d*100) HOUR AS tstz, i %% 2 = 0 AS b,
		'name ' || (i + %[1]d*100) AS s, ('blob' || i)::BLOB AS bl, INTERVAL (i) DAY AS iv,
		{'a': i, 'b': 'x' || i} AS st, [i, i + 1] AS l, MAP {'k' || (i %% 3): i} AS m
		FROM range(%[2]d) r(i)`, k, 40+k*5)
}

// statsAt is every stats document of every table visible at snapshot s:
// the table's, and each top-level column's with its files.
func statsAt(t *testing.T, dir string, s int64) map[string]string {
	t.Helper()
	out := map[string]string{}
	snap := fmt.Sprint(s)
	var list struct {
		Tables []struct{ Name string } `json:"tables"`
	}
	if err := json.Unmarshal([]byte(mustRun(t, "--catalog", dir, "--format", "json", "table", "list", "--snapshot", snap)), &list); err != nil {
		t.Fatal(err)
	}
	for _, tb := range list.Tables {
		out[tb.Name] = mustRun(t, "--catalog", dir, "--format", "json", "stats", tb.Name, "--snapshot", snap)
		var desc struct {
			Columns []struct{ Name string } `json:"columns"`
		}
		if err := json.Unmarshal([]byte(mustRun(t, "--catalog", dir, "--format", "json", "table", "describe", tb.Name, "--snapshot", snap)), &desc); err != nil {
			t.Fatal(err)
		}
		// describe shows the table's uuid and each column's membership
		// filters, which an import keeps and builds again.
		out[tb.Name+" describe"] = mustRun(t, "--catalog", dir, "--format", "json", "table", "describe", tb.Name, "--snapshot", snap)
		for _, c := range desc.Columns {
			out[tb.Name+"."+c.Name] = mustRun(t, "--catalog", dir, "--format", "json", "stats", tb.Name, "--snapshot", snap, "--column", c.Name)
		}
	}
	return out
}

func snapshotIDs(t *testing.T, dir string) []int64 {
	t.Helper()
	var doc struct {
		Snapshots []struct {
			ID int64 `json:"snapshot_id"`
		} `json:"snapshots"`
	}
	if err := json.Unmarshal([]byte(mustRun(t, "--catalog", dir, "--format", "json", "snapshots")), &doc); err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, s := range doc.Snapshots {
		ids = append(ids, s.ID)
	}
	return ids
}

// sameStats fails unless two catalogs have the same snapshots and, at each,
// the same `stats --format json` for every table and column.
func sameStats(t *testing.T, a, b string) {
	t.Helper()
	ids, other := snapshotIDs(t, a), snapshotIDs(t, b)
	if fmt.Sprint(ids) != fmt.Sprint(other) {
		t.Fatalf("snapshots %v, after the round trip %v", ids, other)
	}
	for _, s := range ids {
		want, got := statsAt(t, a, s), statsAt(t, b, s)
		if len(want) != len(got) {
			t.Errorf("snapshot %d: %d stats documents, after the round trip %d", s, len(want), len(got))
		}
		for k, w := range want {
			if got[k] != w {
				t.Errorf("snapshot %d, stats %s:\n%s\nafter the round trip:\n%s", s, k, w, got[k])
			}
		}
	}
}

// TestDuckLakeRoundTrip: rocklake -> DuckLake -> rocklake keeps every
// snapshot, table and statistic: `stats --format json` is the same at
// every snapshot, for every table and column. Then sync follows the
// DuckLake catalog as it grows, and --latest imports the newest state.
func TestDuckLakeRoundTrip(t *testing.T) {
	check := outputSchemas(t)
	base := t.TempDir()
	data := filepath.Join(base, "data")
	writeDuckFiles(t, data, map[string]string{
		"e0.parquet": lakeEvents(0), "e1.parquet": lakeEvents(1), "e2.parquet": lakeEvents(2), "e3.parquet": lakeEvents(3),
		"nested.parquet":  `SELECT i AS id, [{'x': i, 'y': [i::VARCHAR]}] AS deep FROM range(10) r(i)`,
		"variant.parquet": `SELECT i AS id, {'a': i, 'b': 'v' || i}::VARIANT AS v FROM range(20) r(i)`,
		"ids.parquet":     `SELECT i AS id, hash(i) AS user_id FROM range(3000) r(i)`,
	})
	p := func(n string) string { return filepath.Join(data, n) }
	src := newCatalogDir(t)
	l := func(args ...string) string { return mustRun(t, append([]string{"--catalog", src}, args...)...) }
	l("add", "events", p("e0.parquet"), p("e1.parquet"), "--create")
	l("add", "events", p("e2.parquet"))
	l("add", "nested", p("nested.parquet"), "--create")
	l("add", "ids", p("ids.parquet"), "--create") // membership filters chosen by themselves
	dl1 := filepath.Join(base, "early.ducklake")
	out := mustRun(t, "--catalog", src, "--format", "json", "export", "ducklake", dl1)
	check("ducklake_export", out, "export ducklake")

	l("table", "rename", "events", "ev")
	l("rm", "ev", p("e0.parquet"))
	l("table", "drop", "nested")
	l("add", "ev", p("e3.parquet"))
	l("add", "variants", p("variant.parquet"), "--create")
	dl := filepath.Join(base, "lake.ducklake")
	l("export", "ducklake", dl)

	back := newCatalogDir(t)
	out = mustRun(t, "--catalog", back, "--format", "json", "import", "ducklake", dl)
	imp := check("ducklake_import", out, "import ducklake")
	if imp["snapshot_id"] != float64(9) || imp["ducklake_snapshot_id"] != float64(9) {
		t.Errorf("import: %s", out)
	}
	sameStats(t, src, back)
	if d := mustRun(t, "--catalog", back, "--format", "json", "table", "describe", "ids"); !strings.Contains(d, `"membership_filters"`) {
		t.Errorf("the import built no membership filters for ids.user_id:\n%s", d)
	}

	// sync: a catalog imported from the early export follows the later one.
	follower := newCatalogDir(t)
	mustRun(t, "--catalog", follower, "import", "ducklake", dl1)
	out = mustRun(t, "--catalog", follower, "--format", "json", "sync", "ducklake", dl)
	syn := check("ducklake_import", out, "sync ducklake")
	if syn["followed_snapshot_id"] != float64(4) || syn["snapshot_id"] != float64(9) {
		t.Errorf("sync: %s", out)
	}
	sameStats(t, src, follower)
	if out := mustRun(t, "--catalog", follower, "sync", "ducklake", dl); !strings.Contains(out, "nothing to import") {
		t.Errorf("a second sync: %s", out)
	}
	// A catalog changed by something else follows no DuckLake snapshot.
	mustRun(t, "--catalog", follower, "table", "drop", "ids")
	if _, err := run(t, "--catalog", follower, "sync", "ducklake", dl); err == nil || !strings.Contains(err.Error(), "matches no snapshot") {
		t.Errorf("sync of a changed catalog: %v", err)
	}

	// --latest: the newest state as one snapshot.
	latest := newCatalogDir(t)
	if out := mustRun(t, "--catalog", latest, "import", "ducklake", dl, "--latest"); !strings.Contains(out, "imported 1 snapshot of DuckLake 1.0 catalog "+dl+" (its snapshots 9 to 9) as rocklake snapshots 1 to 1: 5 files registered") {
		t.Errorf("import --latest said:\n%s", out)
	}
	if ids := snapshotIDs(t, latest); fmt.Sprint(ids) != "[0 1]" {
		t.Fatalf("--latest made snapshots %v", ids)
	}
	// Table documents compare without the snapshot id, and without
	// next_row_id: a table the import made in one snapshot numbers its
	// rows from 0 (its files, registered anew, also get new ids).
	norm := func(doc string) string {
		var m map[string]any
		if err := json.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "snapshot_id")
		delete(m, "next_row_id")
		b, _ := json.Marshal(m)
		return string(b)
	}
	want, got := statsAt(t, src, 9), statsAt(t, latest, 1)
	if len(got) != len(want) {
		t.Errorf("--latest: %d stats documents, want %d", len(got), len(want))
	}
	for k, w := range want {
		if strings.Contains(k, ".") || strings.HasSuffix(k, " describe") {
			continue
		}
		if norm(got[k]) != norm(w) {
			t.Errorf("--latest stats %s:\n%s\nwant\n%s", k, got[k], w)
		}
	}
}

// TestDuckLakeImportErrors: a refused import exits 1 with code invalid in
// JSON, the message naming what was found, and the catalog unchanged; a
// missing source is not_found; an export onto an existing file, exists.
func TestDuckLakeImportErrors(t *testing.T) {
	dir := newCatalogDir(t)
	data := filepath.Join(t.TempDir(), "data")
	writeDuckFiles(t, data, map[string]string{"a.parquet": `SELECT 1 AS id`})
	mustRun(t, "--catalog", dir, "add", "a", filepath.Join(data, "a.parquet"), "--create")
	dl := filepath.Join(t.TempDir(), "old.ducklake")
	mustRun(t, "--catalog", dir, "export", "ducklake", dl)
	db, err := engine.Open(dl)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE ducklake_metadata SET value = '0.4' WHERE key = 'version'`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	other := newCatalogDir(t)
	for _, tc := range []struct {
		args       []string
		code, text string
	}{
		{[]string{"--catalog", other, "import", "ducklake", dl}, "invalid", "found version 0.4"},
		{[]string{"--catalog", other, "sync", "ducklake", dl}, "invalid", "found version 0.4"},
		{[]string{"--catalog", other, "import", "ducklake", dl + ".none"}, "not_found", "no such file"},
		{[]string{"--catalog", dir, "export", "ducklake", dl}, "exists", "already exists"},
	} {
		stdout, _, err := runSplit(t, append([]string{"--format", "json"}, tc.args...)...)
		if err == nil || stdout != "" || errorCode(err) != tc.code || !strings.Contains(err.Error(), tc.text) || exitCode(err) != 1 {
			t.Errorf("%v: err %v (code %s), stdout %q; want code %s naming %q", tc.args, err, errorCode(err), stdout, tc.code, tc.text)
		}
	}
	if ids := snapshotIDs(t, other); fmt.Sprint(ids) != "[0]" {
		t.Errorf("refused imports left snapshots %v", ids)
	}
}

// TestDuckLakeRandomHistory: a random history of creates, adds, removals,
// renames and drops; after every step the catalog is exported and a
// follower syncs from the export, and at the end the follower and a fresh
// import of the last export have the same stats --format json as the
// original at every snapshot.
func TestDuckLakeRandomHistory(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 1))
	base := t.TempDir()
	data := filepath.Join(base, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	nfile := 0
	newFile := func() string {
		nfile++
		p := filepath.Join(data, fmt.Sprintf("f%03d.parquet", nfile))
		n := 5 + rng.IntN(20)
		ids, vs := make([]*types.Value, n), make([]*types.Value, n)
		for i := range n {
			id := types.IntValue(int64(rng.IntN(1000)))
			ids[i] = &id
			if rng.IntN(5) > 0 {
				v := types.StringValue(fmt.Sprintf("v%d", rng.IntN(100)))
				vs[i] = &v
			}
		}
		if err := pqwrite.Write(p, []pqwrite.Column{{Name: "id", Type: types.MustParseType("int64"), Values: ids},
			{Name: "s", Type: types.MustParseType("varchar"), Values: vs}}, pqwrite.Options{}); err != nil {
			t.Fatal(err)
		}
		return p
	}
	src, follower := newCatalogDir(t), newCatalogDir(t)
	l := func(args ...string) { mustRun(t, append([]string{"--catalog", src}, args...)...) }
	live := map[string][]string{} // table -> its files
	ntable := 0
	last := ""
	done := map[string]int{}
	for step := range 30 {
		var names []string
		for n := range live {
			names = append(names, n)
		}
		sort.Strings(names)
		pick := func() string { return names[rng.IntN(len(names))] }
		switch op := rng.IntN(10); {
		case len(names) == 0 || op == 0:
			ntable++
			n, f := fmt.Sprintf("t%d", ntable), newFile()
			l("add", n, f, "--create")
			live[n] = []string{f}
			done["create"]++
		case op <= 4:
			n, f := pick(), newFile()
			l("add", n, f)
			live[n] = append(live[n], f)
			done["add"]++
		case op <= 6 && len(live[names[step%len(names)]]) > 0:
			n := names[step%len(names)]
			i := rng.IntN(len(live[n]))
			l("rm", n, live[n][i])
			live[n] = append(live[n][:i], live[n][i+1:]...)
			done["rm"]++
		case op <= 7:
			n := pick()
			ntable++
			to := fmt.Sprintf("t%d", ntable)
			l("table", "rename", n, to)
			live[to] = live[n]
			delete(live, n)
			done["rename"]++
		default:
			n := pick()
			l("table", "drop", n)
			delete(live, n)
			done["drop"]++
		}
		last = filepath.Join(base, fmt.Sprintf("step%02d.ducklake", step))
		l("export", "ducklake", last)
		mustRun(t, "--catalog", follower, "sync", "ducklake", last)
	}
	if len(done) != 5 {
		t.Fatalf("the history did %v: every kind of step should happen", done)
	}
	sameStats(t, src, follower)
	fresh := newCatalogDir(t)
	mustRun(t, "--catalog", fresh, "import", "ducklake", last)
	sameStats(t, src, fresh)
}
