package engine

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/internal/s3test"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/storage"
	"github.com/rocklake/rocklake/types"
)

// objectTable uploads local Parquet files to a real S3-compatible server
// (s3test) under s3://lake/<prefix>/ and registers the objects as table t
// of a new catalog, read by an engine through st (wrapped by wrap when
// set) and a cache in a temporary directory.
type objectTable struct {
	srv   *s3test.Server
	st    *storage.S3
	eng   *Engine
	cache *storage.Cache
	locs  []string
}

func newObjectTable(t *testing.T, files []string, wrap func(storage.Store) storage.Store) *objectTable {
	t.Helper()
	srv := s3test.StartWithEnv(t, "lake")
	st, err := storage.NewS3(context.Background(), storage.S3OptionsFromEnv())
	if err != nil {
		t.Fatal(err)
	}
	var locs []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		loc := "s3://lake/t/" + filepath.Base(f)
		srv.Put(t, loc, data)
		locs = append(locs, loc)
	}
	c, err := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ingest.Add(c, "t", locs, ingest.Options{Create: true, Objects: st}); err != nil {
		t.Fatal(err)
	}
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	cache := &storage.Cache{Dir: t.TempDir()}
	var use storage.Store = st
	if wrap != nil {
		use = wrap(st)
	}
	if use != nil {
		e.UseObjects(use, cache)
	}
	return &objectTable{srv: srv, st: st, eng: e, cache: cache, locs: locs}
}

// TestPartialObjectsAgree runs the partial scan's differential queries
// over the same files as objects in a real S3-compatible server: every
// answer equals DuckDB's over the local files, objects the page path
// reads are read by ranges (not fetched whole), and the answers are the
// same again from the cache's parts.
func TestPartialObjectsAgree(t *testing.T) {
	fx := newPartialFixture(t, 1)
	ot := newObjectTable(t, fx.files, nil)
	ctx := context.Background()
	oracle := fx.oracle(t)
	preds := []string{
		"id = 1234", "id = 0", "id BETWEEN 2000 AND 2100", "id IN (5, 3001, 7777, 12000)", "id >= 14000",
		"ts >= '1970-01-12 13:46:40' AND ts < '1970-01-12 13:50:00'", "d < -99.5", "d = -0.0", "isnan(d)",
		"d IS NULL AND id < 3000", "s = 'k00100'", "s IS NULL", "n = 2147483647", "u = 18446744073709551615",
		"isnan(f) AND id < 5000", "dt < DATE '0001-01-02'", "tz >= TIMESTAMPTZ '9999-12-31 23:59:59+00'",
		"ms < TIMESTAMP '0001-01-01 00:00:01'", "sm = 32767 AND id BETWEEN 100 AND 900",
		"id BETWEEN 1000 AND 9000", "id >= 2345 AND n > -400",
	}
	shapes := []string{
		"SELECT count(*), sum(id), min(ts), max(s), count(d), sum(n) FROM t WHERE %s",
		"SELECT * FROM t WHERE %s ORDER BY id",
		"SELECT id, 'x' || CAST(d AS VARCHAR), 'x' || CAST(f AS VARCHAR), 'x' || CAST(ms AS VARCHAR) FROM t WHERE %s ORDER BY id",
		// Answered from statistics where they prove it, in part (split.go)
		// or whole.
		"SELECT count(*), min(id), max(ts) FROM t WHERE %s",
	}
	var inPart, fetched, queries, split int
	for pass := range 2 { // the second pass reads parts from the cache
		for _, p := range preds {
			for _, sh := range shapes {
				q := fmt.Sprintf(sh, p)
				want := runOracle(ctx, oracle, q)
				if want.err != nil {
					t.Fatalf("%s: oracle: %v", q, want.err)
				}
				for _, mode := range []PartialMode{PartialForce, PartialAuto} {
					stats := strings.Contains(q, "max(ts)")
					got, res := runEngine(ctx, ot.eng, q, QueryOptions{Snapshot: catalog.Latest, Partial: mode, NoMetadataAnswers: !stats})
					queries++
					if got.err != nil {
						t.Fatalf("%s (mode %d, pass %d): %v", q, mode, pass, got.err)
					}
					if !sameAnswer(got, want, strings.Contains(q, "ORDER BY")) {
						t.Errorf("%s (mode %d, pass %d):\n  rocklake %s\n  DuckDB   %s\n  reads %+v", q, mode, pass, got, want, res.Tables[0].Reads)
					}
					var pages int
					for _, rd := range res.Tables[0].Reads {
						if rd.How == ReadPages {
							pages++
						}
					}
					if res.Objects.InPart != pages || res.Objects.Fetched+res.Objects.Hits+res.Objects.InPart != res.Objects.Objects {
						t.Errorf("%s: %d files read by pages, objects %+v", q, pages, res.Objects)
					}
					inPart += res.Objects.InPart
					fetched += res.Objects.Fetched
					if res.StatsRows > 0 {
						split++
					}
				}
			}
		}
	}
	if inPart == 0 || split == 0 {
		t.Fatalf("no object was read in part (%d), or no answer was split (%d)", inPart, split)
	}
	t.Logf("%d queries: %d objects read by their pages, %d fetched whole; %d answers split between statistics and DuckDB", queries, inPart, fetched, split)
}

// bigEvents writes one file of n rows in one row group, pages of about
// 10,000 rows of an 8-byte column and the page index: a sorted id, a
// clustered ts, a random user_id, an amount, a kind of few values.
func bigEvents(t *testing.T, path string, n int64, seed int64) {
	t.Helper()
	ids := make([]*types.Value, n)
	ts := make([]*types.Value, n)
	users := make([]*types.Value, n)
	amounts := make([]*types.Value, n)
	kinds := make([]*types.Value, n)
	x := uint64(seed*7919 + 1)
	for i := range n {
		x = x*6364136223846793005 + 1442695040888963407
		id := types.IntValue(i)
		tv := types.IntValue(1_700_000_000_000_000 + i*1_000_000 + int64(x>>54))
		u := types.IntValue(int64(x >> 44))
		a := types.FloatValue(float64(x>>40) / 100)
		k := types.StringValue([]string{"view", "click", "buy", "refund"}[x>>62])
		ids[i], ts[i], users[i], kinds[i] = &id, &tv, &u, &k
		if i%97 != 5 {
			amounts[i] = &a
		}
	}
	cols := []pqwrite.Column{
		{Name: "id", Type: types.MustParseType("bigint"), Values: ids},
		{Name: "ts", Type: types.MustParseType("timestamp"), Values: ts},
		{Name: "user_id", Type: types.MustParseType("bigint"), Values: users},
		{Name: "amount", Type: types.MustParseType("double"), Values: amounts},
		{Name: "kind", Type: types.MustParseType("varchar"), Values: kinds},
	}
	if err := pqwrite.Write(path, cols, pqwrite.Options{PageBytes: 80_000, PageIndex: true}); err != nil {
		t.Fatal(err)
	}
}

// pagesHolding sums, over every column, the compressed sizes of the data
// pages (offset index) of row group 0 that hold the given rows.
func pagesHolding(t *testing.T, path string, rows ...int64) int64 {
	t.Helper()
	r, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rg, err := r.GetPageIndexReader().RowGroup(0)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for c := range r.MetaData().Schema.NumColumns() {
		oi, err := rg.GetOffsetIndex(c)
		if err != nil || oi == nil {
			t.Fatalf("column %d: no offset index (%v)", c, err)
		}
		locs := oi.GetPageLocations()
		seen := map[int]bool{}
		for _, row := range rows {
			p := sort.Search(len(locs), func(k int) bool { return locs[k].FirstRowIndex > row }) - 1
			if !seen[p] {
				seen[p] = true
				total += int64(locs[p].CompressedPageSize)
			}
		}
	}
	return total
}

// TestPartialObjectPointLookup looks one id up in a big object with a
// page index: the page path fetches its tail and the pages holding the
// row, within twice their bytes plus the tail's request, in a handful of
// requests, where the whole-file path fetches the whole object; both
// answer as DuckDB over the local file. From the cache's parts, the same
// lookup costs one HEAD.
func TestPartialObjectPointLookup(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "big.parquet")
	bigEvents(t, path, 400_000, 1)
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	ot := newObjectTable(t, []string{path}, nil)
	ctx := context.Background()
	oracle, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer oracle.Close()
	if _, err := oracle.Exec("CREATE VIEW t AS SELECT * FROM read_parquet('" + path + "')"); err != nil {
		t.Fatal(err)
	}
	const id = 234_567
	kept := pagesHolding(t, path, id)
	q := fmt.Sprintf("SELECT * FROM t WHERE id = %d", id)
	want := runOracle(ctx, oracle, q)
	if want.err != nil || len(want.rows) != 1 {
		t.Fatalf("oracle: %v %v", want.rows, want.err)
	}

	got, res := runEngine(ctx, ot.eng, q, QueryOptions{Snapshot: catalog.Latest})
	if got.err != nil {
		t.Fatal(got.err)
	}
	if !sameAnswer(got, want, false) {
		t.Errorf("page path over the object: %s, DuckDB %s", got, want)
	}
	rds := res.Tables[0].Reads
	if len(rds) != 1 || rds[0].How != ReadPages {
		t.Fatalf("reads %+v, want the page path", rds)
	}
	o := res.Objects
	t.Logf("object %d bytes; pages holding the row %d bytes; fetched %d requests, %d bytes (%.2fx the pages; planning's %d requests included)",
		info.Size(), kept, o.Requests, o.Bytes, float64(o.Bytes)/float64(kept), res.Tables[0].Plan.Objects.Requests)
	if o.InPart != 1 || o.Fetched != 0 {
		t.Errorf("objects %+v: want one read in part, none fetched", o)
	}
	// Everything, the tail (footer and page index) included, within twice
	// the pages holding the row (the goal).
	if o.Bytes > 2*kept {
		t.Errorf("fetched %d bytes, more than twice the %d bytes of the pages holding the row", o.Bytes, kept)
	}
	if o.Bytes*10 > info.Size() {
		t.Errorf("fetched %d bytes of a %d-byte object", o.Bytes, info.Size())
	}
	// The tail (planning reads it and keeps it as a part), one HEAD when
	// the page path finds it cached, and at most one request per column:
	// its pages around the row.
	if cols := int64(5); o.Requests > 2+cols {
		t.Errorf("%d requests, more than 2 + one per column (%d)", o.Requests, cols)
	}

	// The same lookup again: the tail and pages are parts in the cache;
	// one HEAD checks the object is unchanged.
	got, res = runEngine(ctx, ot.eng, q, QueryOptions{Snapshot: catalog.Latest})
	if got.err != nil || !sameAnswer(got, want, false) {
		t.Errorf("from the cache's parts: %s (%v), DuckDB %s", got, got.err, want)
	}
	if o := res.Objects; o.Requests != 1 || o.Bytes != 0 || o.InPart != 1 {
		t.Errorf("from the cache's parts: objects %+v, want one HEAD", o)
	}

	// The whole-file path fetches the object whole, with the same answer.
	got, res = runEngine(ctx, ot.eng, q, QueryOptions{Snapshot: catalog.Latest, Partial: PartialOff})
	if got.err != nil || !sameAnswer(got, want, false) {
		t.Errorf("whole object: %s (%v), DuckDB %s", got, got.err, want)
	}
	if o := res.Objects; o.Fetched != 1 || o.Bytes < info.Size() {
		t.Errorf("whole object: objects %+v, want it fetched whole (%d bytes)", o, info.Size())
	}
}

// changingStore replaces an object with other bytes after the n-th range
// read of it: an object changed while a query reads it.
type changingStore struct {
	storage.Store
	after  int64
	reads  atomic.Int64
	change func()
}

func (s *changingStore) ReadRange(ctx context.Context, obj storage.Object, off, n int64) ([]byte, error) {
	if s.reads.Add(1) == s.after+1 {
		s.change()
	}
	return s.Store.ReadRange(ctx, obj, off, n)
}

// TestPartialObjectChanged: an object rewritten after registration fails
// a query that reads it in part, naming it — whether the cache holds parts
// of the old object or not, and when it changes between the tail and the
// pages — and never answers from a mix of old and new bytes.
func TestPartialObjectChanged(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "big.parquet"), filepath.Join(dir, "other.parquet")
	bigEvents(t, a, 200_000, 1)
	bigEvents(t, b, 200_000, 2) // same shape, other values: another ETag
	other, err := os.ReadFile(b)
	if err != nil {
		t.Fatal(err)
	}
	var ot *objectTable
	var cs *changingStore
	ot = newObjectTable(t, []string{a}, func(st storage.Store) storage.Store {
		cs = &changingStore{Store: st, after: -1}
		return cs
	})
	loc := ot.locs[0]
	ctx := context.Background()
	q := "SELECT * FROM t WHERE id = 123456"
	check := func(what string) {
		t.Helper()
		_, err := ot.eng.Query(ctx, q, QueryOptions{Snapshot: catalog.Latest})
		if !errors.Is(err, ErrDataFileChanged) || !errors.Is(err, storage.ErrChanged) || !strings.Contains(err.Error(), loc) {
			t.Errorf("%s: %v, want ErrDataFileChanged naming %s", what, err, loc)
		}
	}

	orig, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	// Planning reads the object's tail (its page index) once, the page
	// path its tail again, then its pages: changed after the plan, and
	// after the page path's tail.
	for _, after := range []int64{1, 2} {
		ot.srv.Put(t, loc, orig)
		if err := os.RemoveAll(ot.cache.Dir); err != nil {
			t.Fatal(err)
		}
		cs.reads.Store(0)
		cs.after, cs.change = after, func() { ot.srv.Put(t, loc, other) }
		check(fmt.Sprintf("changed after %d range reads", after))
		if n := cs.reads.Load(); n <= after {
			t.Errorf("changed after %d range reads, but only %d made", after, n)
		}
	}

	// Back as registered: the lookup reads it, leaving parts in the cache.
	ot.srv.Put(t, loc, orig)
	o, err := ot.st.Stat(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	// versitygw's ETag is the content's MD5: the same bytes, the same ETag.
	cs.after = -1
	res, err := ot.eng.Query(ctx, q, QueryOptions{Snapshot: catalog.Latest})
	if err != nil {
		t.Fatalf("object restored (ETag %s): %v", o.ETag, err)
	}
	if res.Objects.InPart != 1 || len(res.Rows) != 1 {
		t.Fatalf("objects %+v, %d rows", res.Objects, len(res.Rows))
	}

	// Changed with the old parts cached, and with none.
	ot.srv.Put(t, loc, other)
	check("changed, old parts cached")
	if err := os.RemoveAll(ot.cache.Dir); err != nil {
		t.Fatal(err)
	}
	check("changed, nothing cached")
}

// TestPartialObjectFaults: ranged reads of the page path go through the
// store's retries (dropped connections, bodies cut off, 503s) and answer
// right; a store that keeps failing fails the query with an error naming
// the object and no credentials, not a fallback.
func TestPartialObjectFaults(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "big.parquet")
	bigEvents(t, path, 200_000, 1)
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	size := info.Size()
	var fault atomic.Int64 // 0 pass, 1 a fault on every other GET, 2 every GET fails
	var proxy *s3test.Proxy
	ot := newObjectTable(t, []string{path}, func(storage.Store) storage.Store { return nil })
	proxy = ot.srv.Proxy(t, func(r *http.Request, n int64) s3test.Fault {
		if r.Method != http.MethodGet || r.Header.Get("Range") == "" {
			return s3test.Pass
		}
		switch fault.Load() {
		case 1:
			return []s3test.Fault{s3test.Drop, s3test.Pass, s3test.Truncate, s3test.Pass, s3test.SlowDown, s3test.Pass}[n%6]
		case 2:
			// Every GET but the tail's: planning and the footer succeed,
			// the pages fail.
			if !strings.HasSuffix(r.Header.Get("Range"), fmt.Sprintf("-%d", size-1)) {
				return s3test.ServerError
			}
		}
		return s3test.Pass
	})
	for k, v := range ot.srv.Env(proxy.Endpoint) {
		t.Setenv(k, v)
	}
	opts := storage.S3OptionsFromEnv()
	opts.MaxAttempts, opts.MaxBackoff = 4, 20*time.Millisecond
	pst, err := storage.NewS3(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	ot.eng.UseObjects(pst, ot.cache)
	ctx := context.Background()
	oracle, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer oracle.Close()
	if _, err := oracle.Exec("CREATE VIEW t AS SELECT * FROM read_parquet('" + path + "')"); err != nil {
		t.Fatal(err)
	}

	fault.Store(1)
	for _, id := range []int{17, 99_999, 150_001} {
		q := fmt.Sprintf("SELECT * FROM t WHERE id = %d", id)
		got, res := runEngine(ctx, ot.eng, q, QueryOptions{Snapshot: catalog.Latest})
		want := runOracle(ctx, oracle, q)
		if got.err != nil || !sameAnswer(got, want, false) {
			t.Fatalf("%s through faults: %s (%v), DuckDB %s", q, got, got.err, want)
		}
		if res.Objects.InPart != 1 {
			t.Errorf("%s: objects %+v, want it read in part", q, res.Objects)
		}
	}
	if proxy.Faults.Load() == 0 {
		t.Fatal("no fault injected")
	}

	fault.Store(2)
	if err := os.RemoveAll(ot.cache.Dir); err != nil {
		t.Fatal(err)
	}
	_, err = ot.eng.Query(ctx, "SELECT * FROM t WHERE id = 4242", QueryOptions{Snapshot: catalog.Latest})
	if err == nil || !strings.Contains(err.Error(), ot.locs[0]) || !strings.Contains(err.Error(), "GET bytes") || errors.Is(err, ErrDataFileChanged) {
		t.Errorf("every GET of pages failing: %v, want an error naming %s and the request", err, ot.locs[0])
	}
	if err != nil && (strings.Contains(err.Error(), ot.srv.SecretKey) || strings.Contains(err.Error(), ot.srv.AccessKey)) {
		t.Errorf("the error shows a credential: %v", err)
	}
	t.Logf("every GET of pages failing: %v", err)
}
