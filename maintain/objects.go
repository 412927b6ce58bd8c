package maintain

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/storage"
)

// objectStore is what a rewrite of objects needs of the store: to list,
// upload and delete (storage.S3).
type objectStore interface {
	storage.Store
	Put(ctx context.Context, loc, path string) (storage.Object, error)
	Delete(ctx context.Context, loc string) error
	Any(ctx context.Context, loc string) (bool, error)
	// The lease on the prefix uploaded under (catalog.TakeObjectLease).
	catalog.ObjectStore
}

// objectOutput is where a rewrite of a table's objects puts its files:
// written to a local staging directory as for local files, checked there,
// then uploaded under a new prefix (catalog.ObjectRewritePrefix) before the
// commit that registers them, each at its path below the staging directory
// (a Hive-partitioned table's key=value directories become the same
// prefixes, from which registration reads the partition values). Unless that commit happens, close deletes
// what was uploaded; the staging directory goes either way.
type objectOutput struct {
	store    objectStore
	staging  string
	prefix   string
	uploaded []string
	// put is each file uploaded, by the local path it was uploaded from.
	put       map[string]storage.Object
	committed bool
	// lease keeps the prefix from orphan cleanup until close, unless
	// handed to a transaction (set to nil then); each upload is covered
	// by it, so that a commit fails if cleanup took the prefix.
	lease *catalog.Lease
}

// uploadWorkers bounds the files uploaded at once.
const uploadWorkers = 8

func newObjectOutput(ctx context.Context, e *engine.Engine, st *tableState, object, what, dir string) (*objectOutput, error) {
	if dir != "" {
		return nil, fmt.Errorf("%s: the table's files are objects, and so is the output: --dir names a local directory", what)
	}
	s, _, err := e.Objects()
	if err != nil {
		return nil, err
	}
	store, ok := s.(objectStore)
	if !ok {
		return nil, fmt.Errorf("%s: the object store cannot upload", what)
	}
	// Each writer's prefix is its own: writers that read the same snapshot
	// (in this process or another) would otherwise put the same keys, and
	// the one whose commit loses would delete, with its uploads, the
	// objects the winner committed. A bucket has no exclusive create
	// that every S3-compatible store keeps, so the suffix is random; a
	// prefix that holds objects anyway is passed over.
	var prefix string
	for n := 1; ; n++ {
		var b [6]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, err
		}
		prefix = e.Catalog().ObjectRewritePrefix(object, st.t.ID, st.r.Snapshot().ID, what, "-"+hex.EncodeToString(b[:]))
		taken, err := store.Any(ctx, prefix)
		if err != nil {
			return nil, fmt.Errorf("%s: output prefix %s: %w", what, prefix, err)
		}
		if !taken {
			break
		}
		if n == 100 {
			return nil, fmt.Errorf("%s: 100 output prefixes like %s are taken", what, prefix)
		}
	}
	// Taken before the first upload: a write killed at any point after
	// leaves a prefix orphan cleanup finds and judges by its lease.
	lease, err := e.Catalog().TakeObjectLease(ctx, store, prefix)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	// DuckDB reads the staged files back for the check: under a sandbox,
	// from the one directory of its own it may read.
	staging, err := os.MkdirTemp(e.StagingDir(), "rocklake-rewrite-")
	if err != nil {
		lease.Release()
		return nil, err
	}
	return &objectOutput{store: store, staging: staging, prefix: prefix, lease: lease}, nil
}

// upload puts every written file under the prefix, a few at a time.
func (o *objectOutput) upload(ctx context.Context, files []string) error {
	var mu sync.Mutex
	errs := make([]error, len(files))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(uploadWorkers, len(files)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				rel, err := filepath.Rel(o.staging, files[i])
				if err != nil || !filepath.IsLocal(rel) {
					errs[i] = fmt.Errorf("uploading %s: not a file of the staging directory %s", files[i], o.staging)
					continue
				}
				obj, err := o.store.Put(ctx, o.prefix+filepath.ToSlash(rel), files[i])
				if err != nil {
					errs[i] = fmt.Errorf("uploading: %w", err) // err names the object
					continue
				}
				o.lease.Cover(obj.Location)
				mu.Lock()
				o.uploaded = append(o.uploaded, obj.Location)
				if o.put == nil {
					o.put = map[string]storage.Object{}
				}
				o.put[files[i]] = obj
				mu.Unlock()
			}
		}()
	}
	for i := range files {
		next <- i
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}

// close deletes the uploads of a rewrite that committed nothing, and the
// staging directory.
func (o *objectOutput) close() {
	if !o.committed {
		for _, loc := range o.uploaded {
			_ = o.store.Delete(context.Background(), loc)
		}
	}
	// After the deletions: a prefix whose lease went first would be
	// cleanup's to judge while they run.
	o.lease.Release()
	os.RemoveAll(o.staging)
}

// aboveKeyValues moves an object location above the key=value prefixes
// its name ends in (a Hive-partitioned file's), as a local rewrite goes
// above a partitioned file's key=value directories: a write's prefix made
// beside it must not sit inside one partition's, or registration would
// read that partition's value for every file written.
func aboveKeyValues(loc string) string {
	slash := strings.LastIndexByte(loc, '/')
	if slash < 0 {
		return loc
	}
	dir, name := loc[:slash], loc[slash:]
	for {
		i := strings.LastIndexByte(dir, '/')
		if i < 0 {
			break
		}
		if !isKeyValue(dir[i+1:]) {
			break
		}
		dir = dir[:i]
	}
	return dir + name
}

// noKeyValuePrefix refuses an output prefix that registration would read
// as a partition (a data root such as s3://lake/year=2024/).
func noKeyValuePrefix(prefix string) error {
	for _, seg := range strings.Split(strings.TrimPrefix(prefix, "s3://"), "/") {
		if isKeyValue(seg) {
			return fmt.Errorf("the output prefix %s is below %q, which registration would read as a partition: choose a data root without '=' in its path", prefix, seg)
		}
	}
	return nil
}

// The stores a write to objects uploads with keep its lease.
var (
	_ catalog.ObjectStore = (*storage.S3)(nil)
	_ catalog.ObjectStore = (*storage.LazyStore)(nil)
	// Orphan cleanup aborts the unfinished uploads of dead writes.
	_ catalog.UploadAborter = (*storage.S3)(nil)
	_ catalog.UploadAborter = (*storage.LazyStore)(nil)
)
