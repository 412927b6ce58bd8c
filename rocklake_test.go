package rocklake_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rocklake/rocklake"
	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/pqmeta"
)

// writeParquet writes the rows of a DuckDB SELECT to path.
func writeParquet(t *testing.T, path, query string) {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(fmt.Sprintf("COPY (%s) TO '%s' (FORMAT parquet)", query, strings.ReplaceAll(path, "'", "''"))); err != nil {
		t.Fatalf("writing %s: %v", path, err)
	}
}

// twoSnapshots makes a lake whose table t got 10 rows (ids 0-9) in one
// snapshot and 5 more (ids 10-14) in the next, and returns the first's id.
func twoSnapshots(t *testing.T) (*rocklake.Lake, string, int64) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	writeParquet(t, filepath.Join(dir, "a.parquet"), "SELECT range AS id FROM range(10)")
	writeParquet(t, filepath.Join(dir, "b.parquet"), "SELECT range + 10 AS id FROM range(5)")
	lake, err := rocklake.Create(ctx, filepath.Join(dir, "lake"), rocklake.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lake.Close() })
	first, err := lake.Add(ctx, "t", []string{filepath.Join(dir, "a.parquet")}, rocklake.AddOptions{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lake.Add(ctx, "t", []string{filepath.Join(dir, "b.parquet")}, rocklake.AddOptions{}); err != nil {
		t.Fatal(err)
	}
	return lake, dir, first.Snapshot.ID
}

func count(t *testing.T, lake *rocklake.Lake, o rocklake.QueryOptions) string {
	t.Helper()
	out, err := lake.Query(context.Background(), "SELECT count(*) FROM t WHERE id >= 0", o)
	if err != nil {
		t.Fatal(err)
	}
	return *out.Rows[0][0]
}

// The zero value of every options struct reads the latest snapshot, and
// AtSnapshot the one it names: engine.QueryOptions{} would read snapshot
// 0, where no table exists.
func TestZeroSnapshotRefReadsLatest(t *testing.T) {
	ctx := context.Background()
	lake, _, first := twoSnapshots(t)
	old := rocklake.AtSnapshot(first)

	if got := count(t, lake, rocklake.QueryOptions{}); got != "15" {
		t.Errorf("Query at the zero SnapshotRef counts %s rows, want the latest snapshot's 15", got)
	}
	if got := count(t, lake, rocklake.QueryOptions{Snapshot: old}); got != "10" {
		t.Errorf("Query at snapshot %d counts %s rows, want 10", first, got)
	}
	rows, err := lake.QueryRows(ctx, "SELECT max(id) FROM t", rocklake.QueryOptions{Snapshot: old})
	if err != nil {
		t.Fatal(err)
	}
	var got []any
	for rows.Next() {
		got = append(got, rows.Values()...)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	if len(got) != 1 || got[0] != int64(9) {
		t.Errorf("QueryRows max(id) at snapshot %d = %v, want [9]", first, got)
	}

	for _, c := range []struct {
		at         rocklake.SnapshotRef
		files      int
		rows       int64
		snapshotID int64
	}{{rocklake.LatestSnapshot, 2, 15, first + 1}, {old, 1, 10, first}} {
		plan, err := lake.Plan(ctx, "t", "id >= 0", rocklake.PlanOptions{Snapshot: c.at})
		if err != nil {
			t.Fatal(err)
		}
		if plan.Files.Total != c.files {
			t.Errorf("Plan at %s: %d files, want %d", c.at, plan.Files.Total, c.files)
		}
		files, err := lake.Files(ctx, "t", rocklake.ReadOptions{Snapshot: c.at})
		if err != nil {
			t.Fatal(err)
		}
		if len(files) != c.files {
			t.Errorf("Files at %s: %d, want %d", c.at, len(files), c.files)
		}
		st, err := lake.Stats(ctx, "t", rocklake.ReadOptions{Snapshot: c.at})
		if err != nil {
			t.Fatal(err)
		}
		if st.Rows != c.rows || st.Snapshot != c.snapshotID {
			t.Errorf("Stats at %s: %d rows at snapshot %d, want %d at %d", c.at, st.Rows, st.Snapshot, c.rows, c.snapshotID)
		}
		rep, err := lake.Verify(ctx, "t", rocklake.VerifyOptions{Snapshot: c.at})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Files != c.files || rep.Snapshot != c.snapshotID {
			t.Errorf("Verify at %s: %d files at snapshot %d, want %d at %d", c.at, rep.Files, rep.Snapshot, c.files, c.snapshotID)
		}
	}
}

// A negative id is an error, never a roundabout way to say "latest".
func TestAtSnapshotRefusesMissingSnapshots(t *testing.T) {
	ctx := context.Background()
	lake, _, _ := twoSnapshots(t)
	for _, id := range []int64{-1, -5, 99} {
		at := rocklake.AtSnapshot(id)
		checks := map[string]error{}
		_, checks["Query"] = lake.Query(ctx, "SELECT count(*) FROM t", rocklake.QueryOptions{Snapshot: at})
		_, checks["QueryRows"] = lake.QueryRows(ctx, "SELECT count(*) FROM t", rocklake.QueryOptions{Snapshot: at})
		_, checks["Plan"] = lake.Plan(ctx, "t", "id = 1", rocklake.PlanOptions{Snapshot: at})
		_, checks["Tables"] = lake.Tables(ctx, rocklake.ReadOptions{Snapshot: at})
		_, checks["Describe"] = lake.Describe(ctx, "t", rocklake.ReadOptions{Snapshot: at})
		_, checks["Stats"] = lake.Stats(ctx, "t", rocklake.ReadOptions{Snapshot: at})
		_, checks["Files"] = lake.Files(ctx, "t", rocklake.ReadOptions{Snapshot: at})
		_, checks["Verify"] = lake.Verify(ctx, "t", rocklake.VerifyOptions{Snapshot: at})
		for name, err := range checks {
			if !errors.Is(err, rocklake.ErrNoSuchSnapshot) {
				t.Errorf("%s at snapshot %d: err = %v, want ErrNoSuchSnapshot", name, id, err)
			}
		}
	}
}

// errors.Is works with the root package's sentinels for the failures a
// caller handles, whichever package raised them.
func TestSentinelErrors(t *testing.T) {
	ctx := context.Background()
	lake, dir, _ := twoSnapshots(t)
	writeParquet(t, filepath.Join(dir, "text.parquet"), "SELECT 'x' AS id, 1 AS extra")

	_, errQuery := lake.Query(ctx, "SELECT * FROM nope", rocklake.QueryOptions{})
	_, errDescribe := lake.Describe(ctx, "nope", rocklake.ReadOptions{})
	_, errPlan := lake.Plan(ctx, "nope", "id = 1", rocklake.PlanOptions{})
	_, errAdd := lake.Add(ctx, "nope", []string{filepath.Join(dir, "a.parquet")}, rocklake.AddOptions{})
	_, errColumn := lake.Plan(ctx, "t", "missing = 1", rocklake.PlanOptions{})
	_, errCreate := lake.CreateTable(ctx, "t", "id BIGINT")
	_, errMismatch := lake.Add(ctx, "t", []string{filepath.Join(dir, "text.parquet")}, rocklake.AddOptions{})
	_, errRetention := lake.Expire(ctx, time.Now(), rocklake.ExpireOptions{})
	_, errLocked := rocklake.Open(ctx, filepath.Join(dir, "lake"), rocklake.OpenOptions{})
	closed, err := rocklake.Create(ctx, filepath.Join(dir, "closed"), rocklake.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	_, errExists := rocklake.Create(ctx, filepath.Join(dir, "closed"), rocklake.OpenOptions{})
	_, errNotCatalog := rocklake.Open(ctx, t.TempDir(), rocklake.OpenOptions{})
	for _, c := range []struct {
		name     string
		err, is  error
		original error
	}{
		{"Describe of a missing table", errDescribe, rocklake.ErrNoSuchTable, catalog.ErrNoSuchTable},
		{"Plan of a missing table", errPlan, rocklake.ErrNoSuchTable, catalog.ErrNoSuchTable},
		{"Add to a missing table", errAdd, rocklake.ErrNoSuchTable, catalog.ErrNoSuchTable},
		{"Query of a missing table", errQuery, rocklake.ErrNoSuchTable, catalog.ErrNoSuchTable},
		{"Plan on a missing column", errColumn, rocklake.ErrNoSuchColumn, catalog.ErrNoSuchColumn},
		{"CreateTable of a taken name", errCreate, rocklake.ErrDuplicate, catalog.ErrDuplicate},
		{"Add of a file that does not fit", errMismatch, rocklake.ErrSchemaMismatch, ingest.ErrSchemaMismatch},
		{"Expire under the floor", errRetention, rocklake.ErrRetentionTooShort, catalog.ErrRetentionTooShort},
		{"Create over a catalog", errExists, rocklake.ErrExists, catalog.ErrExists},
		{"Open of an open catalog", errLocked, rocklake.ErrLocked, catalog.ErrLocked},
		{"Open of an empty directory", errNotCatalog, rocklake.ErrNotCatalog, catalog.ErrNotCatalog},
	} {
		if !errors.Is(c.err, c.is) {
			t.Errorf("%s: err = %v, want errors.Is %v", c.name, c.err, c.is)
		}
		if !errors.Is(c.err, c.original) {
			t.Errorf("%s: err = %v, want errors.Is the original package's %v too", c.name, c.err, c.original)
		}
	}
	if _, err := lake.Query(ctx, "CREATE TABLE x (i INT)", rocklake.QueryOptions{}); !errors.Is(err, rocklake.ErrNotAQuery) || !errors.Is(err, engine.ErrNotAQuery) {
		t.Errorf("Query of a CREATE: err = %v, want ErrNotAQuery", err)
	}
}

// A cancelled context stops every method before it changes anything.
func TestCancelledContextChangesNothing(t *testing.T) {
	lake, dir, _ := twoSnapshots(t)
	writeParquet(t, filepath.Join(dir, "c.parquet"), "SELECT 100 AS id")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	before, err := lake.Snapshots(context.Background())
	if err != nil {
		t.Fatal(err)
	}

	checks := map[string]error{}
	_, checks["Add"] = lake.Add(ctx, "t", []string{filepath.Join(dir, "c.parquet")}, rocklake.AddOptions{})
	_, checks["CreateTable"] = lake.CreateTable(ctx, "u", "id BIGINT")
	_, checks["AlterTable"] = lake.AlterTable(ctx, "t", rocklake.Alteration{Kind: rocklake.DropColumn, Column: "id"})
	_, checks["Optimize"] = lake.Optimize(ctx, "t", rocklake.OptimizeOptions{SortBy: []string{"id"}, Dir: filepath.Join(dir, "opt")})
	_, checks["MergeSmallFiles"] = lake.MergeSmallFiles(ctx, "t", 100)
	_, checks["Expire"] = lake.Expire(ctx, time.Now(), rocklake.ExpireOptions{MinRetention: -1})
	_, checks["Cleanup"] = lake.Cleanup(ctx, rocklake.CleanupOptions{Grace: -1})
	_, checks["DeleteOrphans"] = lake.DeleteOrphans(ctx, rocklake.OrphanOptions{Grace: -1})
	_, checks["Query"] = lake.Query(ctx, "SELECT count(*) FROM t WHERE id > 3", rocklake.QueryOptions{})
	_, checks["QueryRows"] = lake.QueryRows(ctx, "SELECT id FROM t", rocklake.QueryOptions{})
	_, checks["Plan"] = lake.Plan(ctx, "t", "id = 1", rocklake.PlanOptions{})
	_, checks["Snapshots"] = lake.Snapshots(ctx)
	_, checks["Tables"] = lake.Tables(ctx, rocklake.ReadOptions{})
	_, checks["Describe"] = lake.Describe(ctx, "t", rocklake.ReadOptions{})
	_, checks["Stats"] = lake.Stats(ctx, "t", rocklake.ReadOptions{})
	_, checks["Files"] = lake.Files(ctx, "t", rocklake.ReadOptions{})
	_, checks["Verify"] = lake.Verify(ctx, "t", rocklake.VerifyOptions{Deep: true})
	_, checks["Open"] = rocklake.Open(ctx, filepath.Join(dir, "other"), rocklake.OpenOptions{})
	_, checks["Create"] = rocklake.Create(ctx, filepath.Join(dir, "other"), rocklake.OpenOptions{})
	for name, err := range checks {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: err = %v, want context.Canceled", name, err)
		}
	}

	after, err := lake.Snapshots(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) || after[len(after)-1].ID != before[len(before)-1].ID {
		t.Errorf("snapshots went from %d (newest %d) to %d (newest %d): a cancelled call committed",
			len(before), before[len(before)-1].ID, len(after), after[len(after)-1].ID)
	}
	if _, err := os.Stat(filepath.Join(dir, "other")); !os.IsNotExist(err) {
		t.Errorf("Create with a cancelled context made %s (stat: %v)", filepath.Join(dir, "other"), err)
	}
}

// A lake opened read-only reads, and refuses every write before doing
// any of it.
func TestReadOnly(t *testing.T) {
	ctx := context.Background()
	lake, dir, _ := twoSnapshots(t)
	writeParquet(t, filepath.Join(dir, "c.parquet"), "SELECT 100 AS id")
	loc := filepath.Join(dir, "lake")
	if err := lake.Close(); err != nil {
		t.Fatal(err)
	}

	if _, err := rocklake.Create(ctx, filepath.Join(dir, "ro"), rocklake.OpenOptions{ReadOnly: true}); err == nil || !strings.Contains(err.Error(), "ReadOnly") {
		t.Errorf("Create with ReadOnly: err = %v, want a refusal naming ReadOnly", err)
	}
	if _, err := rocklake.Open(ctx, loc, rocklake.OpenOptions{DataRoot: dir}); err == nil || !strings.Contains(err.Error(), "DataRoot") {
		t.Errorf("Open with DataRoot: err = %v, want a refusal naming DataRoot", err)
	}

	ro, err := rocklake.Open(ctx, loc, rocklake.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if got := count(t, ro, rocklake.QueryOptions{}); got != "15" {
		t.Errorf("read-only Query counts %s rows, want 15", got)
	}
	checks := map[string]error{}
	_, checks["Add"] = ro.Add(ctx, "t", []string{filepath.Join(dir, "c.parquet")}, rocklake.AddOptions{})
	_, checks["CreateTable"] = ro.CreateTable(ctx, "u", "id BIGINT")
	_, checks["Optimize"] = ro.Optimize(ctx, "t", rocklake.OptimizeOptions{SortBy: []string{"id"}, Dir: filepath.Join(dir, "opt")})
	_, checks["MergeSmallFiles"] = ro.MergeSmallFiles(ctx, "t", 100)
	_, checks["Expire"] = ro.Expire(ctx, time.Now(), rocklake.ExpireOptions{MinRetention: -1})
	_, checks["Cleanup"] = ro.Cleanup(ctx, rocklake.CleanupOptions{Grace: -1})
	_, checks["DeleteOrphans"] = ro.DeleteOrphans(ctx, rocklake.OrphanOptions{Grace: -1})
	for name, err := range checks {
		if !errors.Is(err, rocklake.ErrReadOnly) {
			t.Errorf("read-only %s: err = %v, want ErrReadOnly", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "opt")); !os.IsNotExist(err) {
		t.Errorf("read-only Optimize wrote into %s (stat: %v)", filepath.Join(dir, "opt"), err)
	}
	snaps, err := ro.Snapshots(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(snaps); n != 3 {
		t.Errorf("%d snapshots after refused writes, want the 3 made before", n)
	}
	if _, err := ro.Expire(ctx, time.Now(), rocklake.ExpireOptions{MinRetention: -1, DryRun: true}); err != nil {
		t.Errorf("read-only Expire dry run: %v", err)
	}
}

// AddOptions reach the registration: ownership, skipping registered
// files, progress, workers and filter columns.
func TestAddOptions(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		writeParquet(t, filepath.Join(data, fmt.Sprintf("f%d.parquet", i)), fmt.Sprintf("SELECT range + %d AS id, 'k' AS kind FROM range(%d, %d)", 0, i*10, i*10+10))
	}
	lake, err := rocklake.Create(ctx, filepath.Join(dir, "lake"), rocklake.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer lake.Close()

	var calls, last atomic.Int64
	res, err := lake.Add(ctx, "t", []string{filepath.Join(data, "f0.parquet")}, rocklake.AddOptions{
		Create: true, TakeOwnership: true, Workers: 1, FilterColumns: []string{"kind"}, NoAutoFilters: true,
		Progress: func(done, total int) { calls.Add(1); last.Store(int64(done*100 + total)) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if !res.CreatedTable || res.Files != 1 || res.Rows != 10 {
		t.Errorf("Add: %+v, want the table created with 1 file of 10 rows", res)
	}
	if calls.Load() != 1 || last.Load() != 101 {
		t.Errorf("Progress called %d times, last with done*100+total = %d; want once with (1, 1)", calls.Load(), last.Load())
	}
	files, err := lake.Files(ctx, "t", rocklake.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 || files[0].Owner != rocklake.OwnerTaken || files[0].Rows != 10 || files[0].AddedAt != res.Snapshot.ID {
		t.Errorf("Files after a TakeOwnership add: %+v, want one file of 10 rows, owner taken, added at %d", files, res.Snapshot.ID)
	}

	res, err = lake.Add(ctx, "t", []string{data}, rocklake.AddOptions{SkipExisting: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Files != 2 || res.Skipped != 1 {
		t.Errorf("SkipExisting add: %d files, %d skipped; want 2 and 1", res.Files, res.Skipped)
	}
	files, err = lake.Files(ctx, "t", rocklake.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 3 || files[1].Owner != rocklake.OwnerUser || files[0].ID >= files[1].ID || files[1].ID >= files[2].ID {
		t.Errorf("Files: %+v, want 3 in file id order, the new ones the user's", files)
	}
}

// Describe lists nested fields after their parent with their paths, and
// Stats leaves unknown statistics nil.
func TestDescribeAndStats(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	writeParquet(t, filepath.Join(dir, "n.parquet"),
		"SELECT range AS id, {'a': range * 2, 'b': NULL::VARCHAR} AS s, CASE WHEN range = 3 THEN 'nan'::DOUBLE ELSE range END AS d FROM range(5)")
	lake, err := rocklake.Create(ctx, filepath.Join(dir, "lake"), rocklake.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer lake.Close()
	if _, err := lake.Add(ctx, "n", []string{filepath.Join(dir, "n.parquet")}, rocklake.AddOptions{Create: true}); err != nil {
		t.Fatal(err)
	}
	info, err := lake.Describe(ctx, "n", rocklake.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, c := range info.Columns {
		cols = append(cols, strings.Join(c.Path, ".")+" "+c.Type.DuckLakeName())
	}
	want := "id int64, s struct(a int64, b varchar), s.a int64, s.b varchar, d float64"
	if got := strings.Join(cols, ", "); got != want || info.Name != "n" {
		t.Errorf("Describe(n) = %q %q, want %q", info.Name, got, want)
	}

	st, err := lake.Stats(ctx, "n", rocklake.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]rocklake.ColumnStats{}
	for _, c := range st.Columns {
		byName[c.Column] = c
	}
	str := func(p *string) string {
		if p == nil {
			return "<nil>"
		}
		return *p
	}
	if c := byName["id"]; str(c.Min) != "0" || str(c.Max) != "4" || c.ContainsNull == nil || *c.ContainsNull {
		t.Errorf("id stats: min %s max %s contains_null %v, want 0, 4, false", str(c.Min), str(c.Max), c.ContainsNull)
	}
	if c := byName["s.b"]; c.Min != nil || c.Max != nil || c.ContainsNull == nil || !*c.ContainsNull {
		t.Errorf("s.b (all NULL) stats: min %s max %s contains_null %v, want no bounds and true", str(c.Min), str(c.Max), c.ContainsNull)
	}
	// DuckDB's writer records no NaN count, so unknown is right; false
	// would be a lie that skips the NaN.
	if c := byName["d"]; c.ContainsNaN != nil && !*c.ContainsNaN {
		t.Errorf("d stats: contains_nan false over a NaN")
	}
	if st.Rows != 5 || st.Files != 1 || st.Bytes <= 0 {
		t.Errorf("Stats totals: %d rows, %d files, %d bytes; want 5, 1, > 0", st.Rows, st.Files, st.Bytes)
	}
}

// An answer from statistics comes through QueryRows typed, and closes.
func TestQueryRowsFromMetadata(t *testing.T) {
	lake, _, _ := twoSnapshots(t)
	rows, err := lake.QueryRows(context.Background(), "SELECT count(*), min(id) FROM t", rocklake.QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got [][]any
	for rows.Next() {
		got = append(got, append([]any(nil), rows.Values()...))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0][0] != int64(15) || got[0][1] != int64(0) || !rows.Result().Metadata {
		t.Errorf("rows = %v (from metadata: %v), want [[15 0]] from metadata", got, rows.Result().Metadata)
	}
}

// The Go API page's synopsis (docs/go-api.md, its "go compile" block) is
// code: it must compile against the package as it is. The synopsis becomes
// the body of a function in a package that exists only in a go build
// overlay, so nothing is written into the module.
func TestGoAPISynopsisCompiles(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go build")
	}
	page, err := os.ReadFile(filepath.Join("docs", "go-api.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(page)
	start := strings.Index(text, "\n```go compile\n")
	if start < 0 {
		t.Fatal("docs/go-api.md has no \"```go compile\" block")
	}
	section := text[start+len("\n```go compile\n"):]
	end := strings.Index(section, "\n```")
	if end < 0 {
		t.Fatal("the go compile block of docs/go-api.md does not end")
	}
	var body []string
	names := map[string]bool{}
	for _, code := range strings.Split(section[:end], "\n") {
		body = append(body, "\t"+code)
		if lhs, _, ok := strings.Cut(code, "="); ok {
			for _, n := range strings.Split(strings.TrimSuffix(lhs, ":"), ",") {
				if n = strings.TrimSpace(n); n != "" && n != "_" && !strings.ContainsAny(n, " .(") {
					names[n] = true
				}
			}
		}
	}
	if len(body) == 0 {
		t.Fatal("the Go API synopsis is empty")
	}
	for n := range names {
		body = append(body, "\t_ = "+n)
	}
	src := "package readmesnippet\n\nimport (\n\t\"context\"\n\t\"time\"\n\n\t\"github.com/rocklake/rocklake\"\n)\n\nvar _ = time.Now\n\nfunc _() {\n" +
		strings.Join(body, "\n") + "\n}\n"
	dir := t.TempDir()
	file := filepath.Join(dir, "snippet.go")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	overlay := filepath.Join(dir, "overlay.json")
	target := filepath.Join(wd, "internal", "readmesnippet", "snippet.go")
	if err := os.WriteFile(overlay, []byte(fmt.Sprintf(`{"Replace":{%q:%q}}`, target, file)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-overlay", overlay, "./internal/readmesnippet")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the Go API synopsis of docs/go-api.md does not compile: %v\n%s\n--- as compiled:\n%s", err, out, src)
	}
}

// An Add cancelled while it reads footers commits nothing and reads no
// further footer.
func TestAddCancelledWhileReading(t *testing.T) {
	lake, dir, _ := twoSnapshots(t)
	var paths []string
	for i := range 4 {
		p := filepath.Join(dir, fmt.Sprintf("more%d.parquet", i))
		writeParquet(t, p, fmt.Sprintf("SELECT range + %d AS id FROM range(3)", 100+10*i))
		paths = append(paths, p)
	}
	before, err := lake.Snapshots(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var read atomic.Int64
	_, err = lake.Add(ctx, "t", paths, rocklake.AddOptions{Workers: 1, Progress: func(done, total int) {
		read.Store(int64(done))
		cancel()
	}})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Add cancelled after its first footer: err = %v, want context.Canceled", err)
	}
	if read.Load() != 1 {
		t.Errorf("%d footers read after a cancel at the first, want 1", read.Load())
	}
	after, err := lake.Snapshots(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Errorf("%d snapshots after a cancelled Add, want %d", len(after), len(before))
	}
}

// CreateTable with partition columns: their values come from the files'
// key=value directories, a partition predicate keeps that partition's
// files only, and a partition column the table lacks is refused.
func TestCreateTablePartitioned(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	lake, err := rocklake.Create(ctx, filepath.Join(dir, "lake"), rocklake.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer lake.Close()
	if _, err := lake.CreateTable(ctx, "bad", "id BIGINT", "region"); err == nil || !strings.Contains(err.Error(), "region") {
		t.Errorf("a partition column the table lacks: %v", err)
	}
	if _, err := lake.CreateTable(ctx, "sales", "id BIGINT, region VARCHAR", "region"); err != nil {
		t.Fatal(err)
	}
	for _, region := range []string{"eu", "us"} {
		p := filepath.Join(dir, "data", "region="+region, "part.parquet")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		writeParquet(t, p, "SELECT range AS id FROM range(10)")
	}
	if _, err := lake.Add(ctx, "sales", []string{filepath.Join(dir, "data")}, rocklake.AddOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err := lake.Query(ctx, "SELECT region, count(*) FROM sales GROUP BY region ORDER BY region", rocklake.QueryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(deref(res.Rows)); got != "[[eu 10] [us 10]]" {
		t.Errorf("rows by region: %s", got)
	}
	p, err := lake.Plan(ctx, "sales", "region = 'us'", rocklake.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Files.Kept != 1 || len(p.KeptFiles) != 1 || p.KeptFiles[0].Partition["region"] == nil || *p.KeptFiles[0].Partition["region"] != "us" {
		t.Errorf("plan region = 'us': %+v", p.KeptFiles)
	}
}

func deref(rows [][]*string) [][]string {
	out := make([][]string, len(rows))
	for i, r := range rows {
		for _, v := range r {
			s := "NULL"
			if v != nil {
				s = *v
			}
			out[i] = append(out[i], s)
		}
	}
	return out
}

// AlterTable through the Go API: each change is a snapshot, older
// snapshots read the columns they had, and a refused change (here a
// narrowing) commits nothing.
func TestAlterTable(t *testing.T) {
	lake, _, first := twoSnapshots(t)
	ctx := context.Background()
	for _, words := range []string{"add column note VARCHAR DEFAULT 'old'", "rename column id to k", "alter column note type INTEGER"} {
		a, err := rocklake.ParseAlteration(strings.Fields(words))
		if err != nil {
			t.Fatal(err)
		}
		_, err = lake.AlterTable(ctx, "t", a)
		if words == "alter column note type INTEGER" {
			if err == nil || !strings.Contains(err.Error(), "cannot change from VARCHAR to INTEGER") {
				t.Errorf("%s: %v", words, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", words, err)
		}
	}
	snaps, _ := lake.Snapshots(ctx)
	if n := len(snaps); n != 5 {
		t.Errorf("%d snapshots, want 5 (a refused change made one?)", n)
	}
	res, err := lake.Query(ctx, "SELECT count(*), min(k), max(note) FROM t WHERE note = 'old'", rocklake.QueryOptions{})
	if err != nil || *res.Rows[0][0] != "15" || *res.Rows[0][1] != "0" || *res.Rows[0][2] != "old" {
		t.Errorf("after the changes: %v %v", res, err)
	}
	old, err := lake.Query(ctx, "SELECT * FROM t", rocklake.QueryOptions{Snapshot: rocklake.AtSnapshot(first)})
	if err != nil || strings.Join(old.Columns, ",") != "id" || len(old.Rows) != 10 {
		t.Errorf("at snapshot %d: %v %v", first, old, err)
	}
}

// A file whose ctime moved (a chmod) fails every query that reads it,
// at every snapshot; Refresh takes it back in one snapshot, after which
// the latest and earlier snapshots read it again. A lake opened
// read-only refuses Refresh.
func TestRefresh(t *testing.T) {
	lake, dir, first := twoSnapshots(t)
	ctx := context.Background()
	a := filepath.Join(dir, "a.parquet")
	if real, err := filepath.EvalSymlinks(a); err == nil {
		a = real
	}
	st, err := os.Stat(a)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if err := os.Chmod(a, 0o600); err != nil {
			t.Fatal(err)
		}
		now, _ := os.Stat(a)
		if changed(now) != changed(st) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("ctime stays put")
		}
		time.Sleep(5 * time.Millisecond)
		os.Chmod(a, 0o644)
	}
	for _, o := range []rocklake.QueryOptions{{}, {Snapshot: rocklake.AtSnapshot(first)}} {
		if _, err := lake.Query(ctx, "SELECT sum(id) FROM t", o); !errors.Is(err, rocklake.ErrDataFileChanged) || !strings.Contains(err.Error(), a) {
			t.Fatalf("query at %v over a chmod-ed file: %v, want ErrDataFileChanged naming it", o.Snapshot, err)
		}
	}
	rep, err := lake.Refresh(ctx, "t", []string{a}, rocklake.RefreshOptions{})
	if err != nil || rep.Snapshot == 0 || len(rep.Files) != 1 || rep.Files[0].Outcome != "accepted" {
		t.Fatalf("refresh: %+v %v", rep, err)
	}
	for o, want := range map[rocklake.SnapshotRef]string{rocklake.LatestSnapshot: "105", rocklake.AtSnapshot(first): "45"} {
		res, err := lake.Query(ctx, "SELECT sum(id) FROM t", rocklake.QueryOptions{Snapshot: o})
		if err != nil || *res.Rows[0][0] != want {
			t.Fatalf("at %v after the refresh: %v, want %s", o, err, want)
		}
	}
	lake.Close()
	ro, err := rocklake.Open(ctx, filepath.Join(dir, "lake"), rocklake.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if _, err := ro.Refresh(ctx, "t", []string{a}, rocklake.RefreshOptions{}); !errors.Is(err, rocklake.ErrReadOnly) {
		t.Fatalf("refresh on a read-only lake: %v", err)
	}
}

// changed is a file's ctime as stat gives it.
func changed(st os.FileInfo) int64 { return pqmeta.StampOf(st).Changed }
