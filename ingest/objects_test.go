package ingest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/internal/s3test"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/pqmeta"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/storage"
	"github.com/rocklake/rocklake/types"
)

// writeEvents writes a file of n rows (id from base, a name, a double with
// NULLs and a NaN) in row groups of rg rows.
func writeEvents(t *testing.T, p string, base, n, rg int64) []byte {
	t.Helper()
	ids := make([]*types.Value, n)
	names := make([]*types.Value, n)
	vs := make([]*types.Value, n)
	for i := range n {
		id := types.IntValue(base + i)
		name := types.StringValue(fmt.Sprintf("user-%05d", (base+i)*7%1000))
		ids[i], names[i] = &id, &name
		switch {
		case i%11 == 3:
		case i == n/2:
			v := types.FloatValue(math.NaN())
			vs[i] = &v
		default:
			v := types.FloatValue(float64(base+i) / 3)
			vs[i] = &v
		}
	}
	cols := []pqwrite.Column{
		{Name: "id", Type: types.MustParseType("int64"), Values: ids},
		{Name: "name", Type: types.MustParseType("varchar"), Values: names},
		{Name: "v", Type: types.MustParseType("float64"), Values: vs},
	}
	if err := pqwrite.Write(p, cols, pqwrite.Options{RowGroupRows: rg, PageIndex: true}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// describe is everything a table's registration holds but the files'
// locations: counts, sizes, and every file and row-group statistic.
func describe(t *testing.T, c *catalog.Catalog, table string) string {
	t.Helper()
	r, err := c.Read(catalog.Latest)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tb, err := r.Table(table)
	if err != nil {
		t.Fatal(err)
	}
	cols, _ := r.Columns(tb.ID)
	files, _ := r.Files(tb.ID)
	var b strings.Builder
	for _, col := range cols {
		fmt.Fprintf(&b, "column %s %s\n", col.Name, col.Type)
	}
	for _, f := range files {
		fmt.Fprintf(&b, "file %d: %s rows %d bytes %d footer %d rgs %d match %v\n", f.ID, filepath.Base(f.Path), f.RecordCount,
			f.FileSizeBytes, f.FooterSize, f.RowGroupCount, f.ColumnsMatchTable)
		for _, col := range cols {
			rgs, err := r.RowGroupStats(tb.ID, col.ID, f.ID)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "  %s row groups %+v\n", col.Name, rgs)
		}
	}
	for _, col := range cols {
		_ = r.FileColumnStats(tb.ID, col.ID, func(id int64, st *stats.Column) error {
			fmt.Fprintf(&b, "file %d %s %+v\n", id, col.Name, *st)
			return nil
		})
	}
	return b.String()
}

func objectStore(t *testing.T, srv *s3test.Server) *storage.S3 {
	t.Helper()
	srv.SetEnv(t)
	st, err := storage.NewS3(context.Background(), storage.S3OptionsFromEnv())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// Registering objects gives exactly the registration of the same files on
// disk, reads each footer with one ranged request (after one listing), and
// records each object's ETag.
func TestAddObjects(t *testing.T) {
	srv := s3test.Start(t)
	srv.Bucket(t, "lake")
	dir := t.TempDir()
	local := filepath.Join(dir, "ev")
	if err := os.Mkdir(local, 0o755); err != nil {
		t.Fatal(err)
	}
	const files = 12
	for i := range int64(files) {
		name := fmt.Sprintf("part-%02d.parquet", i)
		data := writeEvents(t, filepath.Join(local, name), i*1000, 700+i*13, 250)
		srv.Put(t, "s3://lake/data/ev/"+name, data)
	}
	st := objectStore(t, srv)

	onDisk := memCatalog(t)
	if _, err := Add(onDisk, "ev", []string{local}, Options{Create: true, NoAutoFilters: true}); err != nil {
		t.Fatal(err)
	}
	inStore := memCatalog(t)
	res, err := Add(inStore, "ev", []string{"s3://lake/data/ev/"}, Options{Create: true, Objects: st})
	if err != nil {
		t.Fatal(err)
	}
	if res.Files != files {
		t.Fatalf("added %d objects, want %d", res.Files, files)
	}
	if a, b := describe(t, onDisk, "ev"), describe(t, inStore, "ev"); a != b {
		t.Fatalf("objects registered differently from the same files on disk:\n--- disk\n%s\n--- objects\n%s", a, b)
	}
	// One LIST and one footer request per object (each footer is under
	// 64 KiB), and nothing else.
	if want := int64(1 + files); res.Fetched.Requests != want {
		t.Errorf("registration made %d requests, want %d (1 LIST + 1 per object)", res.Fetched.Requests, want)
	}
	r, _ := inStore.Read(catalog.Latest)
	tb, _ := r.Table("ev")
	fs, _ := r.Files(tb.ID)
	r.Close()
	for _, f := range fs {
		o, err := st.Stat(context.Background(), f.Path)
		if err != nil {
			t.Fatal(err)
		}
		if f.ETag == "" || f.ETag != o.ETag || f.FileSizeBytes != o.Size || !strings.HasPrefix(f.Path, "s3://lake/data/ev/part-") {
			t.Errorf("registered %s with ETag %q, %d bytes; the store says %q, %d", f.Path, f.ETag, f.FileSizeBytes, o.ETag, o.Size)
		}
	}

	// A glob and a single key; the same object twice is refused.
	c := memCatalog(t)
	if res, err := Add(c, "ev", []string{"s3://lake/data/ev/part-0[12].parquet", "s3://lake/data/ev/part-05.parquet"}, Options{Create: true, Objects: st}); err != nil || res.Files != 3 {
		t.Fatalf("glob and key: %d files, %v", res.Files, err)
	}
	before := kvtest.Digest(t, c.Store())
	for _, bad := range []struct {
		args []string
		opts Options
		want string
	}{
		{[]string{"s3://lake/data/ev/part-07.parquet", "s3://lake/data/ev/part-0[7].parquet"}, Options{}, "named twice"},
		{[]string{"s3://lake/data/ev/part-02.parquet"}, Options{}, "already"},
		{[]string{"s3://lake/data/ev/nope.parquet"}, Options{}, "no such object"},
	} {
		bad.opts.Objects = st
		_, err := Add(c, "ev", bad.args, bad.opts)
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("add %v: %v, want an error saying %q", bad.args, err, bad.want)
		}
		if kvtest.Digest(t, c.Store()) != before {
			t.Fatalf("add %v failed but changed the catalog", bad.args)
		}
	}
	// --skip-existing leaves out registered objects without reading them.
	res, err = Add(c, "ev", []string{"s3://lake/data/ev/"}, Options{Objects: st, SkipExisting: true})
	if err != nil || res.Files != files-3 || res.Skipped != 3 {
		t.Fatalf("skip existing: %+v, %v", res, err)
	}
}

// A footer larger than the first request's 64 KiB costs exactly one more
// request.
func TestAddObjectLargeFooter(t *testing.T) {
	srv := s3test.Start(t)
	srv.Bucket(t, "lake")
	p := filepath.Join(t.TempDir(), "wide.parquet")
	data := writeEvents(t, p, 0, 40_000, 50) // 800 row groups
	fm, err := pqmeta.Read(p, pqmeta.FileIdentity{})
	if err != nil {
		t.Fatal(err)
	}
	if fm.FooterSize <= storage.FooterPrefetch {
		t.Fatalf("footer of %d bytes: the test needs one above %d", fm.FooterSize, storage.FooterPrefetch)
	}
	srv.Put(t, "s3://lake/wide.parquet", data)
	st := objectStore(t, srv)
	c := memCatalog(t)
	res, err := Add(c, "t", []string{"s3://lake/wide.parquet"}, Options{Create: true, Objects: st})
	if err != nil {
		t.Fatal(err)
	}
	// HEAD for the named key, the tail, the rest of the footer.
	if res.Fetched.Requests != 3 {
		t.Errorf("%d requests, want 3 (HEAD, tail, rest of the footer)", res.Fetched.Requests)
	}
	disk := memCatalog(t)
	if _, err := Add(disk, "t", []string{p}, Options{Create: true, NoAutoFilters: true}); err != nil {
		t.Fatal(err)
	}
	if a, b := describe(t, disk, "t"), describe(t, c, "t"); a != b {
		t.Fatal("a large footer read from the store differs from the file's")
	}
}

// An object that is not Parquet, or is cut short, is refused naming it;
// nothing is registered.
func TestAddBadObjects(t *testing.T) {
	srv := s3test.Start(t)
	srv.Bucket(t, "lake")
	p := filepath.Join(t.TempDir(), "a.parquet")
	data := writeEvents(t, p, 0, 100, 100)
	srv.Put(t, "s3://lake/ok.parquet", data)
	srv.Put(t, "s3://lake/junk.parquet", []byte("this is not parquet, though long enough to look"))
	srv.Put(t, "s3://lake/cut.parquet", data[:len(data)-5])
	st := objectStore(t, srv)
	c := memCatalog(t)
	before := kvtest.Digest(t, c.Store())
	_, err := Add(c, "t", []string{"s3://lake/"}, Options{Create: true, Objects: st})
	if err == nil || !strings.Contains(err.Error(), "s3://lake/junk.parquet") || !strings.Contains(err.Error(), "s3://lake/cut.parquet") {
		t.Fatalf("bad objects: %v", err)
	}
	if !errors.Is(err, pqmeta.ErrNotParquet) || !errors.Is(err, pqmeta.ErrTruncated) {
		t.Fatalf("bad objects: %v", err)
	}
	if kvtest.Digest(t, c.Store()) != before {
		t.Fatal("a refused add changed the catalog")
	}
}

// --filter-columns on objects fetches each object once more, whole, and
// builds the filters a local copy would get.
func TestAddObjectsWithFilters(t *testing.T) {
	srv := s3test.Start(t)
	srv.Bucket(t, "lake")
	dir := t.TempDir()
	const files = 5
	for i := range int64(files) {
		name := fmt.Sprintf("part-%02d.parquet", i)
		srv.Put(t, "s3://lake/ev/"+name, writeEvents(t, filepath.Join(dir, name), i*1000, 300+i*50, 200))
	}
	st := objectStore(t, srv)
	objs, local := memCatalog(t), memCatalog(t)
	res, err := Add(objs, "ev", []string{"s3://lake/ev/"}, Options{Create: true, Objects: st, FilterColumns: []string{"name"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(1 + 2*files); res.Fetched.Requests != want {
		t.Errorf("%d requests, want %d (LIST, then a footer and a whole object each)", res.Fetched.Requests, want)
	}
	if _, err := Add(local, "ev", []string{dir}, Options{Create: true, FilterColumns: []string{"name"}, NoAutoFilters: true}); err != nil {
		t.Fatal(err)
	}
	probe := func(c *catalog.Catalog) string {
		r, err := c.Read(catalog.Latest)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		tb, _ := r.Table("ev")
		cols, _ := r.Columns(tb.ID)
		var b strings.Builder
		for _, col := range cols {
			if col.Name != "name" {
				continue
			}
			fs, err := r.Filters(tb.ID, col.ID)
			if err != nil {
				t.Fatal(err)
			}
			for i := range files {
				fmt.Fprintf(&b, "file %d has %v:", i, fs.Has(i))
				for v := 0; v < 1000; v += 7 {
					if fs.MayContain(i, []byte(fmt.Sprintf("user-%05d", v))) {
						fmt.Fprintf(&b, " %d", v)
					}
				}
				b.WriteString("\n")
			}
		}
		return b.String()
	}
	a, b := probe(objs), probe(local)
	if a != b || !strings.Contains(a, "has true") || strings.Contains(a, "has false") {
		t.Errorf("filters of objects differ from those of the same files:\n%s\n%s", a, b)
	}
}

// Objects under key=value prefixes are partitioned as files under such
// directories are: the keys of s3://bucket/prefix/k=v/... become partition
// columns with each object's values.
func TestAddPartitionedObjects(t *testing.T) {
	srv := s3test.Start(t)
	srv.Bucket(t, "lake")
	dir := t.TempDir()
	for i, p := range []string{"region=eu", "region=__HIVE_DEFAULT_PARTITION__"} {
		local := filepath.Join(dir, fmt.Sprintf("f%d.parquet", i))
		srv.Put(t, "s3://lake/sales/"+p+"/part-0.parquet", writeEvents(t, local, int64(i)*100, 50, 25))
	}
	st := objectStore(t, srv)
	c := memCatalog(t)
	if _, err := Add(c, "sales", []string{"s3://lake/sales/"}, Options{Create: true, Objects: st}); err != nil {
		t.Fatal(err)
	}
	cols, fs := tableFiles(t, c, "sales")
	region := cols[len(cols)-1]
	if region.Name != "region" || region.Partition != catalog.PartitionHive || len(fs) != 2 {
		t.Fatalf("columns %+v, %d files", cols, len(fs))
	}
	for _, f := range fs {
		v, ok := f.PartitionValue(region.ID)
		switch {
		case strings.Contains(f.Path, "/region=eu/"):
			if !ok || v != stats.Known("eu") {
				t.Errorf("%s: %+v", f.Path, v)
			}
		case !ok || v.Known:
			t.Errorf("%s: %+v, want NULL", f.Path, v)
		}
	}
}

// fastStore is a store of the server at endpoint that gives up on an
// unreachable endpoint after MaxAttempts attempts a few milliseconds apart.
func fastStore(t *testing.T, srv *s3test.Server, endpoint string) *storage.S3 {
	t.Helper()
	for k, v := range srv.Env(endpoint) {
		t.Setenv(k, v)
	}
	o := storage.S3OptionsFromEnv()
	o.MaxAttempts, o.MaxBackoff, o.DownAfter = 3, 20*time.Millisecond, time.Minute
	st, err := storage.NewS3(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// An add from a store that goes away fails once, naming the store and how
// many objects it did not reach, after one request's attempts, not each
// object's; nothing is registered.
func TestAddObjectsStoreDown(t *testing.T) {
	srv := s3test.Start(t)
	srv.Bucket(t, "lake")
	data := writeEvents(t, filepath.Join(t.TempDir(), "a.parquet"), 0, 100, 50)
	const files = 200
	for i := range files {
		srv.Put(t, fmt.Sprintf("s3://lake/ev/part-%03d.parquet", i), data)
	}
	c := memCatalog(t)
	before := kvtest.Digest(t, c.Store())
	check := func(what string, err error, endpoint, count string) {
		t.Helper()
		if !errors.Is(err, storage.ErrUnreachable) {
			t.Fatalf("%s: %v, want ErrUnreachable", what, err)
		}
		msg := err.Error()
		host := strings.TrimPrefix(endpoint, "http://")
		if !strings.Contains(msg, host) || !strings.Contains(msg, count) || strings.Contains(msg, "\n") || len(msg) > 400 {
			t.Errorf("%s: error %q, want one line naming %s and %q", what, msg, host, count)
		}
		if strings.Contains(msg, srv.SecretKey) {
			t.Fatal("the error shows the secret")
		}
		if kvtest.Digest(t, c.Store()) != before {
			t.Fatalf("%s: the failed add changed the catalog", what)
		}
	}

	// Listed, then gone: the proxy closes at the first footer read.
	var proxy *s3test.Proxy
	var closing sync.Once
	proxy = srv.Proxy(t, func(r *http.Request, _ int64) s3test.Fault {
		if r.URL.Query().Get("list-type") != "" {
			return s3test.Pass
		}
		closing.Do(func() { go proxy.Close() })
		return s3test.Drop
	})
	st := fastStore(t, srv, proxy.Endpoint)
	_, err := Add(c, "ev", []string{"s3://lake/ev/"}, Options{Create: true, Objects: st})
	t.Logf("%d attempts: %v", st.Counts().Requests, err)
	check("store gone after the listing", err, proxy.Endpoint, fmt.Sprintf("%d objects not reached", files))
	// The listing, the footer reads in flight (as many as the store keeps
	// connections: dropped, then refused once each), the probes.
	if n := st.Counts().Requests; n > int64(1+2*st.Connections()+3) {
		t.Errorf("%d attempts for %d objects", n, files)
	}

	// Down from the start: the listing fails after MaxAttempts attempts.
	st = fastStore(t, srv, srv.Endpoint)
	srv.Stop()
	_, err = Add(c, "ev", []string{"s3://lake/ev/"}, Options{Create: true, Objects: st})
	check("store down", err, srv.Endpoint, "LIST")
	if n := st.Counts().Requests; n != 3 {
		t.Errorf("a listing with the store down made %d attempts, want MaxAttempts = 3", n)
	}
}

// An object its store lists or describes without an ETag is refused,
// naming it: registered, it would be read unchecked, and a same-size
// object written over it would be taken for it.
func TestAddObjectsWithoutETag(t *testing.T) {
	srv := s3test.Start(t)
	srv.Bucket(t, "lake")
	dir := t.TempDir()
	for i := range 3 {
		name := fmt.Sprintf("part-%02d.parquet", i)
		srv.Put(t, "s3://lake/ev/"+name, writeEvents(t, filepath.Join(dir, name), int64(i)*100, 100, 50))
	}
	proxy := srv.Proxy(t, func(*http.Request, int64) s3test.Fault { return s3test.Pass })
	proxy.StripETags.Store(true)
	for k, v := range srv.Env(proxy.Endpoint) {
		t.Setenv(k, v)
	}
	st, err := storage.NewS3(context.Background(), storage.S3OptionsFromEnv())
	if err != nil {
		t.Fatal(err)
	}
	objs, err := st.List(context.Background(), "s3://lake/ev/")
	if err != nil || len(objs) != 3 || objs[0].ETag != "" {
		t.Fatalf("listing through the proxy: %+v, %v; want 3 objects without ETags", objs, err)
	}
	c := memCatalog(t)
	before := kvtest.Digest(t, c.Store())
	for _, c2 := range []struct{ arg, want string }{
		{"s3://lake/ev/", "s3://lake/ev/part-00.parquet and 2 more objects listed by s3://lake/ev/"},
		{"s3://lake/ev/part-01.parquet", "s3://lake/ev/part-01.parquet: "},
	} {
		_, err := Add(c, "ev", []string{c2.arg}, Options{Create: true, Objects: st})
		if !errors.Is(err, storage.ErrNoETag) || !strings.HasPrefix(err.Error(), c2.want) {
			t.Errorf("add %s without ETags: %v, want ErrNoETag naming %q", c2.arg, err, c2.want)
		}
		if kvtest.Digest(t, c.Store()) != before {
			t.Fatalf("add %s without ETags changed the catalog", c2.arg)
		}
	}
	// With the ETags, the same objects register.
	proxy.StripETags.Store(false)
	if res, err := Add(c, "ev", []string{"s3://lake/ev/"}, Options{Create: true, Objects: st}); err != nil || res.Files != 3 {
		t.Fatalf("add with ETags: %+v, %v", res, err)
	}
}

// slowStore holds every footer read a moment, counting how many are in
// flight at once, and says how many connections it keeps.
type slowStore struct {
	storage.Store
	conns          int
	mu             sync.Mutex
	inFlight, most int
}

func (s *slowStore) Connections() int { return s.conns }

func (s *slowStore) ReadRange(ctx context.Context, obj storage.Object, off, n int64) ([]byte, error) {
	s.mu.Lock()
	s.inFlight++
	s.most = max(s.most, s.inFlight)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inFlight--
		s.mu.Unlock()
	}()
	time.Sleep(30 * time.Millisecond)
	return s.Store.ReadRange(ctx, obj, off, n)
}

// Footers of objects are read as many at a time as the store keeps
// connections (a request mostly waits out a round trip), never more.
func TestAddObjectsUsesTheStoresConnections(t *testing.T) {
	srv := s3test.Start(t)
	srv.Bucket(t, "lake")
	dir := t.TempDir()
	const files = 90
	for i := range int64(files) {
		name := fmt.Sprintf("part-%02d.parquet", i)
		srv.Put(t, "s3://lake/ev/"+name, writeEvents(t, filepath.Join(dir, name), i*100, 50, 50))
	}
	for _, conns := range []int{3, 40} {
		st := &slowStore{Store: objectStore(t, srv), conns: conns}
		res, err := Add(memCatalog(t), "ev", []string{"s3://lake/ev/"}, Options{Create: true, Objects: st})
		if err != nil {
			t.Fatal(err)
		}
		if res.Files != files {
			t.Fatalf("added %d objects, want %d", res.Files, files)
		}
		// 3 is below the floor of 2 per CPU: that many run.
		want := max(conns, min(2*runtime.GOMAXPROCS(0), files))
		if st.most > want || (conns > 16 && st.most <= 16) {
			t.Errorf("store of %d connections: %d footer reads in flight at most, want %d", conns, st.most, want)
		}
	}
}
