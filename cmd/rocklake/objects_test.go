package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/internal/s3test"
	"github.com/rocklake/rocklake/types"
)

// objectLake is a lakeCase whose table's files live in a real
// S3-compatible server, behind a proxy that records every request; the
// oracle reads local copies of the same files.
type objectLake struct {
	*lakeCase
	srv   *s3test.Server
	proxy *s3test.Proxy
	mu    sync.Mutex
	gets  []string // object keys of every GET
	fault func(r *http.Request) s3test.Fault
}

func newObjectLake(t *testing.T) *objectLake {
	t.Helper()
	l := &objectLake{lakeCase: newLakeCase(t), srv: s3test.Start(t)}
	l.srv.Bucket(t, "lake")
	l.proxy = l.srv.Proxy(t, func(r *http.Request, _ int64) s3test.Fault {
		l.mu.Lock()
		defer l.mu.Unlock()
		if r.Method == http.MethodGet && r.URL.Query().Get("list-type") == "" {
			l.gets = append(l.gets, strings.TrimPrefix(r.URL.Path, "/lake/"))
		}
		if l.fault != nil {
			return l.fault(r)
		}
		return s3test.Pass
	})
	for k, v := range l.srv.Env(l.proxy.Endpoint) {
		t.Setenv(k, v)
	}
	t.Setenv("ROCKLAKE_CACHE_DIR", filepath.Join(t.TempDir(), "cache"))
	return l
}

// upload writes a DuckDB query's rows to a local file and the same bytes
// to s3://lake/KEY, returning both locations.
func (l *objectLake) upload(key, query string) (local, object string) {
	l.t.Helper()
	local = l.write(strings.ReplaceAll(key, "/", "_"), query)
	data, err := os.ReadFile(local)
	if err != nil {
		l.t.Fatal(err)
	}
	l.srv.Put(l.t, "s3://lake/"+key, data)
	return local, "s3://lake/" + key
}

func (l *objectLake) takeGets() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.gets
	l.gets = nil
	sort.Strings(out)
	return out
}

type queryJSON struct {
	Rows    []map[string]any   `json:"rows"`
	Objects engine.ObjectReads `json:"object_storage"`
}

// first is the value of column n of the first row, as text.
func (q queryJSON) first() string {
	if len(q.Rows) == 0 {
		return "no rows"
	}
	return fmt.Sprint(q.Rows[0]["n"])
}

func (l *objectLake) query(q string, extra ...string) queryJSON {
	l.t.Helper()
	out := mustRun(l.t, append([]string{"--catalog", l.cat, "--format", "json", "query", q}, extra...)...)
	var res queryJSON
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		l.t.Fatalf("%s: %v\n%s", q, err, out)
	}
	return res
}

// Queries over objects answer as DuckDB over local copies of the same
// files; only the objects a plan keeps are fetched, once, and the cache
// serves them after that with one HEAD each.
func TestQueryObjects(t *testing.T) {
	l := newObjectLake(t)
	var locals, objects []string
	for h := range 8 {
		lo, ob := l.upload(fmt.Sprintf("ev/h%02d.parquet", h), fmt.Sprintf(
			"SELECT %d * 1000 + i AS id, TIMESTAMP '2024-01-01' + INTERVAL (%d) HOUR + INTERVAL (i) SECOND AS ts, "+
				"['click', 'view', 'buy'][1 + i %% 3] AS kind, CASE WHEN i %% 17 = 0 THEN NULL ELSE i / 7.0 END AS v "+
				"FROM range(500) t(i)", h, h))
		locals, objects = append(locals, lo), append(objects, ob)
	}
	l.tableFrom("ev", []string{"s3://lake/ev/"}, locals)
	if got := l.takeGets(); len(got) != len(objects) {
		t.Fatalf("add made %d GETs (%v), want one footer read per object", len(got), got)
	}
	for _, q := range []string{
		"SELECT count(*), sum(id), min(v), max(v), min(ts), max(ts) FROM ev",
		"SELECT kind, count(*), count(v), max(v) FROM ev WHERE ts >= TIMESTAMP '2024-01-01 03:00:00' AND ts < TIMESTAMP '2024-01-01 05:00:00' GROUP BY kind", // no float sums: their last digit follows the order DuckDB adds in
		"SELECT id, v FROM ev WHERE id BETWEEN 6490 AND 6510 ORDER BY id",
		"SELECT count(*) FROM ev WHERE v IS NULL AND kind = 'view'",
		"SELECT a.id, b.id FROM ev a JOIN ev b ON a.id = b.id + 1000 WHERE a.id < 1003",
	} {
		l.same(q)
	}
	l.takeGets()

	// A selective query fetches exactly the object it keeps, nothing else.
	cache := os.Getenv("ROCKLAKE_CACHE_DIR")
	os.RemoveAll(cache)
	res := l.query("SELECT count(*), min(id) FROM ev WHERE id BETWEEN 5100 AND 5200 AND v > 0")
	if got := l.takeGets(); strings.Join(got, " ") != "ev/h05.parquet" {
		t.Errorf("a query keeping one object fetched %v", got)
	}
	if o := res.Objects; o.Objects != 1 || o.Fetched != 1 || o.Requests != 1 || o.Bytes <= 0 {
		t.Errorf("first run: %+v, want 1 object fetched with 1 request", o)
	}
	res = l.query("SELECT count(*), min(id) FROM ev WHERE id BETWEEN 5100 AND 5200 AND v > 0")
	if o := res.Objects; o.Objects != 1 || o.Hits != 1 || o.Fetched != 0 || o.Requests != 1 || o.Bytes != 0 {
		t.Errorf("second run: %+v, want a cache hit checked with one HEAD", o)
	}
	if got := l.takeGets(); len(got) != 0 {
		t.Errorf("a cached object was fetched again: %v", got)
	}

	// plan reads the catalog only.
	out := mustRun(t, "--catalog", l.cat, "--format", "json", "plan", "ev", "id BETWEEN 5100 AND 5200")
	var p struct {
		Objects struct {
			Kept      int   `json:"kept"`
			KeptBytes int64 `json:"kept_bytes"`
			Requests  int64 `json:"request_count"`
		} `json:"object_storage"`
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatal(err)
	}
	if p.Objects.Kept != 1 || p.Objects.KeptBytes <= 0 || p.Objects.Requests != 0 || l.proxy.Requests.Load() == 0 {
		t.Errorf("plan: %+v", p.Objects)
	}
	if got := l.takeGets(); len(got) != 0 {
		t.Errorf("plan fetched %v", got)
	}

	// Time travel: a later add does not change what snapshot N reads.
	_, extra := l.upload("ev/h08.parquet", "SELECT 8000 + i AS id, TIMESTAMP '2024-01-01 08:00:00' + INTERVAL (i) SECOND AS ts, 'buy' AS kind, 1.0::DOUBLE AS v FROM range(10) t(i)")
	before := l.query("SELECT count(*) AS n FROM ev WHERE id >= 0")
	mustRun(t, "--catalog", l.cat, "add", "ev", extra)
	after := l.query("SELECT count(*) AS n FROM ev WHERE id >= 0")
	old := l.query("SELECT count(*) AS n FROM ev WHERE id >= 0", "--snapshot", "1")
	if before.first() != "4000" || after.first() != "4010" || old.first() != "4000" {
		t.Errorf("counts before %s, after %s, at snapshot 1 %s", before.first(), after.first(), old.first())
	}
	// verify --deep reads every object (through the cache) and checks every
	// stored bound against its values.
	out = mustRun(t, "--catalog", l.cat, "verify", "ev", "--deep")
	if !strings.Contains(out, "0 problems") {
		t.Errorf("verify --deep: %s", out)
	}
}

// An object that changed or vanished since it was registered fails the
// query, naming it, whether or not the cache holds the old bytes.
func TestQueryChangedObjects(t *testing.T) {
	l := newObjectLake(t)
	var locals []string
	for h := range 3 {
		lo, _ := l.upload(fmt.Sprintf("ev/h%d.parquet", h), fmt.Sprintf("SELECT %d * 100 + i AS id FROM range(100) t(i)", h))
		locals = append(locals, lo)
	}
	l.tableFrom("ev", []string{"s3://lake/ev/"}, locals)
	l.same("SELECT sum(id) FROM ev") // every object now cached
	// h1 rewritten (the same values in another order), h2 deleted.
	l.upload("ev/h1.parquet", "SELECT 100 + i AS id FROM range(99, -1, -1) t(i)")
	for _, q := range []string{"SELECT sum(id) FROM ev WHERE id BETWEEN 150 AND 160", "SELECT count(*) FROM ev WHERE id < 200 AND id % 2 = 0"} {
		out, err := run(t, "--catalog", l.cat, "query", q)
		if !errors.Is(err, engine.ErrDataFileChanged) || !strings.Contains(err.Error(), "s3://lake/ev/h1.parquet") {
			t.Errorf("%s over a rewritten object: %v\n%s", q, err, out)
		}
	}
	os.RemoveAll(os.Getenv("ROCKLAKE_CACHE_DIR"))
	if _, err := run(t, "--catalog", l.cat, "query", "SELECT sum(id) FROM ev WHERE id BETWEEN 150 AND 160"); !errors.Is(err, engine.ErrDataFileChanged) {
		t.Errorf("rewritten object, nothing cached: %v", err)
	}
	l.srv.Delete(t, "s3://lake/ev/h2.parquet")
	if _, err := run(t, "--catalog", l.cat, "query", "SELECT count(*) FROM ev WHERE id >= 250 AND id % 2 = 0"); !errors.Is(err, engine.ErrDataFileChanged) || !strings.Contains(err.Error(), "h2.parquet") {
		t.Errorf("deleted object: %v", err)
	}
	// Skipped objects are not looked at: h0 alone still answers.
	l.same("SELECT count(*) FROM ev WHERE id < 100 AND id % 2 = 0")
	// verify checks every object's size and ETag.
	out, err := run(t, "--catalog", l.cat, "--format", "json", "verify", "ev")
	if err == nil {
		t.Fatalf("verify found nothing wrong:\n%s", out)
	}
	var rep struct {
		Problems []struct{ Path, What string } `json:"problems"`
	}
	if jerr := json.Unmarshal([]byte(out[:strings.LastIndex(out, "}")+1]), &rep); jerr != nil {
		t.Fatalf("verify output: %v\n%s", jerr, out)
	}
	got := map[string]string{}
	for _, p := range rep.Problems {
		got[p.Path] = p.What
	}
	if len(got) != 2 || !strings.Contains(got["s3://lake/ev/h1.parquet"], "ETag is") || !strings.Contains(got["s3://lake/ev/h2.parquet"], "missing") {
		t.Errorf("verify reported %v, want h1's ETag and h2 missing", got)
	}
}

// An s3:// data root: adds outside the prefix are refused and leave the
// catalog as it was.
func TestObjectDataRoot(t *testing.T) {
	l := newObjectLake(t)
	cat := filepath.Join(t.TempDir(), "lake")
	mustRun(t, "--catalog", cat, "init", "--data-root", "s3://lake/in")
	_, in := l.upload("in/a.parquet", "SELECT 1 AS x")
	_, out := l.upload("in2/b.parquet", "SELECT 2 AS x")
	_, in2 := l.upload("in/a2.parquet", "SELECT 4 AS x")
	mustRun(t, "--catalog", cat, "add", "t", in, in2, "--create")
	before := mustRun(t, "--catalog", cat, "--format", "json", "snapshots")
	for _, arg := range []string{out, "s3://lake/in2/", l.write("c.parquet", "SELECT 3 AS x")} {
		if _, err := run(t, "--catalog", cat, "add", "t", arg); err == nil || !strings.Contains(err.Error(), "outside the catalog's data root") {
			t.Errorf("add %s under root s3://lake/in/: %v", arg, err)
		}
	}
	if after := mustRun(t, "--catalog", cat, "--format", "json", "snapshots"); after != before {
		t.Error("refused adds changed the catalog")
	}
	// A rewrite under an object root writes under the root's _rocklake/.
	out2 := mustRun(t, "--catalog", cat, "compact", "t")
	if !strings.Contains(out2, "s3://lake/in/_rocklake/table-1/compact-1-") {
		t.Errorf("compact under root s3://lake/in/: %s", out2)
	}
	if _, err := run(t, "--catalog", filepath.Join(t.TempDir(), "x"), "init", "--data-root", "s3://lake/a/../b/"); err == nil {
		t.Error("a root with .. was accepted")
	}
}

// Throttling and dropped connections are retried; when they persist, the
// command fails naming the object, and an add leaves the catalog as it
// was.
func TestObjectFaults(t *testing.T) {
	l := newObjectLake(t)
	t.Setenv("AWS_MAX_ATTEMPTS", "3")
	var locals []string
	for h := range 4 {
		lo, _ := l.upload(fmt.Sprintf("ev/h%d.parquet", h), fmt.Sprintf("SELECT %d * 100 + i AS id FROM range(100) t(i)", h))
		locals = append(locals, lo)
	}
	// Every object's first two requests fail, alternately throttled and
	// dropped: each is retried and the answers are right.
	var mu sync.Mutex
	tries := map[string]int{}
	l.fault = func(r *http.Request) s3test.Fault {
		mu.Lock()
		defer mu.Unlock()
		k := r.Method + r.URL.Path
		tries[k]++
		switch tries[k] {
		case 1:
			return s3test.SlowDown
		case 2:
			return s3test.Drop
		}
		return s3test.Pass
	}
	l.tableFrom("ev", []string{"s3://lake/ev/"}, locals)
	l.same("SELECT count(*), sum(id) FROM ev WHERE id % 3 = 0")
	l.same("SELECT id FROM ev WHERE id BETWEEN 250 AND 260 ORDER BY id")
	if l.proxy.Faults.Load() < 8 {
		t.Errorf("only %d faults injected", l.proxy.Faults.Load())
	}
	// Now one object answers 503 SlowDown for good.
	_, extra := l.upload("ev/h9.parquet", "SELECT 900 + i AS id FROM range(100) t(i)")
	l.fault = func(r *http.Request) s3test.Fault {
		if strings.HasSuffix(r.URL.Path, "/h9.parquet") {
			return s3test.SlowDown
		}
		return s3test.Pass
	}
	before := mustRun(t, "--catalog", l.cat, "--format", "json", "snapshots")
	_, err := run(t, "--catalog", l.cat, "add", "ev", extra)
	if err == nil || !strings.Contains(err.Error(), "s3://lake/ev/h9.parquet") || !strings.Contains(err.Error(), "503") { // a HEAD answer has no body to say SlowDown in
		t.Errorf("add under persistent throttling: %v", err)
	}
	if after := mustRun(t, "--catalog", l.cat, "--format", "json", "snapshots"); after != before {
		t.Error("a failed add changed the catalog")
	}
	// The same for a query that must fetch a throttled object.
	os.RemoveAll(os.Getenv("ROCKLAKE_CACHE_DIR"))
	l.fault = func(r *http.Request) s3test.Fault {
		if strings.HasSuffix(r.URL.Path, "/h2.parquet") {
			return s3test.Drop
		}
		return s3test.Pass
	}
	if _, err := run(t, "--catalog", l.cat, "query", "SELECT count(*) FROM ev WHERE id BETWEEN 200 AND 299 AND id % 2 = 0"); err == nil || !strings.Contains(err.Error(), "s3://lake/ev/h2.parquet") {
		t.Errorf("query over an object whose connections drop: %v", err)
	}
	l.same("SELECT count(*) FROM ev WHERE id < 100 AND id % 2 = 0") // h0 alone: unaffected
}

// The secret key appears nowhere: not in the output or error of a refused
// request, not in the catalog after a successful add.
func TestObjectSecretsStayOut(t *testing.T) {
	l := newObjectLake(t)
	lo, ob := l.upload("ev/a.parquet", "SELECT 1 AS x")
	l.tableFrom("ev", []string{ob}, []string{lo})
	secret := l.srv.SecretKey
	wrong := "WRONG" + secret[5:]
	t.Setenv("AWS_SECRET_ACCESS_KEY", wrong)
	_, ob2 := l.upload("ev/b.parquet", "SELECT 2 AS x")
	os.RemoveAll(os.Getenv("ROCKLAKE_CACHE_DIR"))
	for _, args := range [][]string{{"add", "ev", ob2}, {"query", "SELECT * FROM ev"}, {"verify", "ev"}} {
		out, err := run(t, append([]string{"--catalog", l.cat}, args...)...)
		if err == nil {
			t.Errorf("%s with a wrong secret succeeded", args[0])
			continue
		}
		all := out + err.Error()
		if strings.Contains(all, secret) || strings.Contains(all, wrong) {
			t.Errorf("%s shows a secret: %s", args[0], all)
		}
		if !strings.Contains(all, "AWS_SECRET_ACCESS_KEY") {
			t.Errorf("%s: %q does not say what to check", args[0], all)
		}
	}
	c, err := catalog.Open(l.cat, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	it, err := c.Store().NewIter(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		for _, s := range []string{secret, wrong, l.srv.AccessKey} {
			if strings.Contains(string(it.Key())+string(it.Value()), s) {
				t.Fatalf("the catalog holds a credential under key %x", it.Key())
			}
		}
	}
}

func objectExists(t *testing.T, srv *s3test.Server, loc string) bool {
	t.Helper()
	bucket, key, _ := strings.Cut(strings.TrimPrefix(loc, "s3://"), "/")
	_, err := srv.Client().HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: &bucket, Key: &key})
	return err == nil
}

func liveFiles(t *testing.T, cat, table string) []string {
	t.Helper()
	var files []struct {
		Path string `json:"path"`
	}
	out := mustRun(t, "--catalog", cat, "--format", "json", "files", table)
	if err := json.Unmarshal([]byte(out), &files); err != nil {
		var wrapped struct {
			Files []struct {
				Path string `json:"path"`
			} `json:"files"`
		}
		if err2 := json.Unmarshal([]byte(out), &wrapped); err2 != nil {
			t.Fatalf("files output: %v\n%s", err, out)
		}
		files = wrapped.Files
	}
	var paths []string
	for _, f := range files {
		paths = append(paths, f.Path)
	}
	sort.Strings(paths)
	return paths
}

// optimize and compact rewrite a table of objects into new objects,
// uploaded before the commit; answers stay DuckDB's over the original
// files; time travel reads the old objects; expire and cleanup delete
// rocklake's objects and never the user's; a rewrite that fails part-way
// leaves neither objects nor a snapshot behind.
func TestRewriteObjects(t *testing.T) {
	l := newObjectLake(t)
	var locals, objects []string
	for h := range 4 {
		// ids scattered over every file: only a sort separates them.
		lo, ob := l.upload(fmt.Sprintf("ev/h%d.parquet", h), fmt.Sprintf(
			"SELECT (i * 7919 + %d) %% 1000 AS id, i %% 10 AS k, i / 3.0 AS v FROM range(%d, 1000, 4) t(i)", h, h))
		locals, objects = append(locals, lo), append(objects, ob)
	}
	l.tableFrom("ev", []string{"s3://lake/ev/"}, locals)
	queries := []string{
		"SELECT count(*), sum(id), min(v), max(v) FROM ev",
		"SELECT k, count(*), max(id) FROM ev WHERE id BETWEEN 100 AND 180 GROUP BY k",
		"SELECT id, k FROM ev WHERE id >= 990 ORDER BY id",
	}
	for _, q := range queries {
		l.same(q)
	}

	// A failed upload: nothing committed, nothing left in the bucket.
	l.fault = func(r *http.Request) s3test.Fault {
		if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "part-00002.parquet") {
			return s3test.ServerError
		}
		return s3test.Pass
	}
	t.Setenv("AWS_MAX_ATTEMPTS", "2")
	before := mustRun(t, "--catalog", l.cat, "--format", "json", "snapshots")
	if _, err := run(t, "--catalog", l.cat, "optimize", "ev", "--sort-by", "id", "--rows-per-file", "250"); err == nil || !strings.Contains(err.Error(), "part-00002.parquet") || !strings.Contains(err.Error(), "nothing committed") {
		t.Fatalf("optimize with a failing upload: %v", err)
	}
	if after := mustRun(t, "--catalog", l.cat, "--format", "json", "snapshots"); after != before {
		t.Error("a failed optimize changed the catalog")
	}
	if left := l.srv.Keys(t, "lake", "ev/_rocklake/"); len(left) > 0 {
		t.Errorf("a failed optimize left %v behind", left)
	}
	l.fault = nil

	out := mustRun(t, "--catalog", l.cat, "optimize", "ev", "--sort-by", "id", "--rows-per-file", "250")
	if !strings.Contains(out, "s3://lake/ev/_rocklake/table-1/optimize-1-") {
		t.Errorf("optimize output: %s", out)
	}
	files := liveFiles(t, l.cat, "ev")
	if len(files) != 4 || !strings.HasPrefix(files[0], "s3://lake/ev/_rocklake/table-1/optimize-1-") {
		t.Fatalf("after optimize: %v", files)
	}
	for _, q := range queries {
		l.same(q)
	}
	if res := l.query("SELECT count(*) FROM ev WHERE id BETWEEN 100 AND 180"); res.Objects.Objects != 1 {
		t.Errorf("after a sort by id a narrow range read %d objects, want 1", res.Objects.Objects)
	}
	if res := l.query("SELECT count(*) AS n, sum(id) FROM ev", "--snapshot", "1"); res.first() != "1000" {
		t.Errorf("time travel to the objects before optimize: %v", res.first())
	}
	// A growing prefix: add leaves rocklake's objects out.
	if out, err := run(t, "--catalog", l.cat, "add", "ev", "s3://lake/ev/", "--skip-existing"); err != nil || !strings.Contains(out, "nothing new") {
		t.Errorf("add of the prefix after optimize: %v\n%s", err, out)
	}
	if _, err := run(t, "--catalog", l.cat, "add", "ev", files[0]); err == nil || !strings.Contains(err.Error(), "rocklake's") {
		t.Errorf("add of a rewritten object: %v", err)
	}

	mustRun(t, "--catalog", l.cat, "compact", "ev", "--rows-per-file", "1000")
	files = liveFiles(t, l.cat, "ev")
	if len(files) != 1 || !strings.HasPrefix(files[0], "s3://lake/ev/_rocklake/table-1/compact-2-") {
		t.Fatalf("after compact: %v", files)
	}
	for _, q := range queries {
		l.same(q)
	}
	mustRun(t, "--catalog", l.cat, "expire", "--older-than", "0s", "--allow-short-retention")
	mustRun(t, "--catalog", l.cat, "cleanup", "--grace", "0s")
	if left := l.srv.Keys(t, "lake", "ev/_rocklake/table-1/optimize-1-"); len(left) > 0 {
		t.Errorf("cleanup left rocklake's %v", left)
	}
	for _, ob := range objects {
		if !objectExists(t, l.srv, ob) {
			t.Errorf("cleanup deleted the user's %s", ob)
		}
	}
	if !objectExists(t, l.srv, files[0]) {
		t.Errorf("cleanup deleted the live %s", files[0])
	}
	// Objects handed over with --take-ownership go once retired.
	_, taken := l.upload("ev/taken.parquet", "SELECT 5000 AS id, 0::BIGINT AS k, 1.0::DOUBLE AS v")
	mustRun(t, "--catalog", l.cat, "add", "ev", taken, "--take-ownership")
	mustRun(t, "--catalog", l.cat, "rm", "ev", taken)
	mustRun(t, "--catalog", l.cat, "expire", "--older-than", "0s", "--allow-short-retention")
	mustRun(t, "--catalog", l.cat, "cleanup", "--grace", "0s")
	if objectExists(t, l.srv, taken) {
		t.Errorf("cleanup kept %s, handed over with --take-ownership", taken)
	}
	for _, q := range queries {
		l.same(q)
	}
	// What a writer killed after its uploads leaves: its lease (naming a
	// process that is gone) and its files. cleanup --orphans deletes both,
	// and nothing registered.
	killed := "s3://lake/ev/_rocklake/table-1/optimize-9-0123456789ab/"
	c, err := catalog.Open(l.cat, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ours := "\ncatalog=" + c.UUID() + "\n"
	c.Close()
	l.srv.Put(t, killed+".rocklake-in-use", []byte("host=elsewhere.example pid=7"+ours))
	l.srv.Put(t, killed+"part-00000.parquet", []byte("PAR1"))
	out = mustRun(t, "--catalog", l.cat, "cleanup", "--orphans", "--grace", "0s")
	if !strings.Contains(out, "in use") || !objectExists(t, l.srv, killed+"part-00000.parquet") {
		t.Errorf("a fresh lease of another host's: %s", out)
	}
	l.srv.Put(t, killed+".rocklake-in-use", []byte(fmt.Sprintf("host=%s pid=%d", hostname(t), deadPID(t))+ours))
	out = mustRun(t, "--catalog", l.cat, "cleanup", "--orphans", "--grace", "0s")
	if !strings.Contains(out, "deleted orphan "+killed+"part-00000.parquet") {
		t.Errorf("cleanup --orphans of a killed write's objects: %s", out)
	}
	if left := l.srv.Keys(t, "lake", strings.TrimPrefix(killed, "s3://lake/")); len(left) > 0 {
		t.Errorf("cleanup --orphans left %v", left)
	}
	for _, f := range liveFiles(t, l.cat, "ev") {
		if !objectExists(t, l.srv, f) {
			t.Errorf("cleanup --orphans deleted the live %s", f)
		}
	}
	for _, q := range queries {
		l.same(q)
	}
}

// Plans read objects' page indexes and bloom filters through ranged
// requests and decide exactly as over local copies of the same files.
func TestPlanObjectIndexes(t *testing.T) {
	l := newObjectLake(t)
	local := newCatalogDir(t)
	var locals, objects []string
	for f := range 3 {
		const rows = 6000
		ids := make([]*types.Value, rows)
		us := make([]*types.Value, rows)
		for i := range rows {
			id := types.IntValue(int64(f*rows + i))
			u := types.IntValue(int64((f*rows+i)*7919%100003) * 13)
			ids[i], us[i] = &id, &u
		}
		p := filepath.Join(l.dir, fmt.Sprintf("p%d.parquet", f))
		if err := pqwrite.Write(p, []pqwrite.Column{
			{Name: "id", Type: types.MustParseType("int64"), Values: ids},
			{Name: "u", Type: types.MustParseType("int64"), Values: us},
		}, pqwrite.Options{RowGroupRows: 2000, PageBytes: 1024, PageIndex: true, BloomFilters: true, BloomColumns: []string{"u"}}); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		ob := fmt.Sprintf("s3://lake/ix/p%d.parquet", f)
		l.srv.Put(t, ob, data)
		locals, objects = append(locals, p), append(objects, ob)
	}
	l.tableFrom("ix", []string{"s3://lake/ix/"}, locals)
	mustRun(t, append([]string{"--catalog", local, "add", "ix", "--create", "--no-auto-filters"}, locals...)...)
	type planJSON struct {
		RowGroups struct{ Kept int } `json:"row_groups"`
		Pages     struct {
			Total, Kept int
			Evaluated   bool
		} `json:"pages"`
		Bloom   struct{ Probed, Skipped int } `json:"bloom"`
		Objects struct {
			Requests int64 `json:"request_count"`
		} `json:"object_storage"`
		KeptFiles []struct {
			RowGroups []int `json:"row_groups"`
			Ranges    []struct {
				First    int64 `json:"first_row"`
				Rows     int64 `json:"rows"`
				RowGroup int   `json:"row_group"`
			} `json:"row_ranges"`
		} `json:"kept_files"`
	}
	plan := func(cat string, args ...string) planJSON {
		out := mustRun(t, append([]string{"--catalog", cat, "--format", "json", "plan", "ix"}, args...)...)
		var p planJSON
		if err := json.Unmarshal([]byte(out), &p); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return p
	}
	for _, args := range [][]string{
		{"id BETWEEN 7000 AND 7100", "--pages"},
		{"u = 13"},
		{"u IN (26, 39, 1300000)"},
		{"id >= 17990 OR u = 13", "--pages"},
	} {
		ob, lo := plan(l.cat, args...), plan(local, args...)
		gotReqs := ob.Objects.Requests
		ob.Objects.Requests = 0
		a, _ := json.Marshal(ob)
		b, _ := json.Marshal(lo)
		if string(a) != string(b) {
			t.Errorf("plan %v over objects differs from over local files:\n%s\n%s", args, a, b)
		}
		if ob.Pages.Evaluated || ob.Bloom.Probed > 0 {
			if gotReqs == 0 || gotReqs > int64(2*len(objects)) {
				t.Errorf("plan %v read indexes with %d requests (want 1 or 2 per object read)", args, gotReqs)
			}
		}
		l.same("SELECT count(*), sum(id) FROM ix WHERE " + args[0])
	}
	if p := plan(l.cat, "u = 13"); p.Bloom.Skipped == 0 {
		t.Errorf("bloom filters over objects skipped nothing: %+v", p.Bloom)
	}
}

// A point lookup in a big object with a page index reads the object in
// part (its tail and the pages holding the row, by ranged requests)
// rather than fetching it whole, answers as DuckDB over the local copy,
// and says so on its last line.
func TestQueryObjectInPart(t *testing.T) {
	l := newObjectLake(t)
	const rows = 300_000
	ids := make([]*types.Value, rows)
	vs := make([]*types.Value, rows)
	for i := range rows {
		id := types.IntValue(int64(i))
		v := types.FloatValue(float64(i*7919%100003) / 7)
		ids[i], vs[i] = &id, &v
	}
	p := filepath.Join(l.dir, "big.parquet")
	if err := pqwrite.Write(p, []pqwrite.Column{
		{Name: "id", Type: types.MustParseType("int64"), Values: ids},
		{Name: "v", Type: types.MustParseType("double"), Values: vs},
	}, pqwrite.Options{PageBytes: 80_000, PageIndex: true}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	l.srv.Put(t, "s3://lake/big/big.parquet", data)
	l.tableFrom("big", []string{"s3://lake/big/big.parquet", "--no-auto-filters"}, []string{p})
	q := "SELECT id, v FROM big WHERE id = 123457"
	l.same(q)
	if err := os.RemoveAll(os.Getenv("ROCKLAKE_CACHE_DIR")); err != nil {
		t.Fatal(err)
	}
	res := l.query(q)
	if o := res.Objects; o.InPart != 1 || o.Fetched != 0 || o.Bytes == 0 || o.Bytes*10 > int64(len(data)) {
		t.Errorf("objects %+v: want the %d-byte object read in part, a small share of it fetched", o, len(data))
	}
	out := mustRun(t, "--catalog", l.cat, "query", q)
	if !strings.Contains(out, "1 read in part (kept pages only)") {
		t.Errorf("last line does not say the object was read in part:\n%s", out)
	}
}

// hostname is this host's name, as a lease names it.
func hostname(t *testing.T) string {
	t.Helper()
	h, err := os.Hostname()
	if err != nil {
		t.Skip("no host name")
	}
	return h
}

// deadPID is the id of a process that ran on this host and has ended.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skipf("cannot run a process to get a dead one's id: %v", err)
	}
	return cmd.Process.Pid
}
