package catalog

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/rocklake/rocklake/catalog/catalogpb"
	"github.com/rocklake/rocklake/kv"
	"github.com/rocklake/rocklake/kv/pgkv"
)

// formatVersion is the layout version written in the Meta row.
const formatVersion = 1

// Latest names the newest snapshot in Read.
const Latest int64 = -1

var (
	// ErrNotCatalog is returned when a directory holds no rocklake catalog.
	ErrNotCatalog = errors.New("not a rocklake catalog")
	// ErrExists is returned by Create for a directory that already holds one.
	ErrExists = errors.New("a rocklake catalog already exists")
	// ErrLocked is returned when another process holds the catalog.
	ErrLocked = errors.New("catalog is in use by another process")
	// ErrBusy is returned by Speculate when as many speculations are open
	// as the store allows (kv.SnapshotLimiter).
	ErrBusy = errors.New("too many transactions of writes are open")
	// ErrConflict is returned by Commit when a concurrent commit changed
	// what the transaction changes; retrying on the new state may succeed.
	ErrConflict = errors.New("commit conflict")
	// ErrNoSuchSnapshot, ErrNoSuchTable, ErrNoSuchColumn and ErrNoSuchFile
	// report names and ids that do not exist at the snapshot read.
	ErrNoSuchSnapshot = errors.New("no such snapshot")
	ErrNoSuchTable    = errors.New("no such table")
	ErrNoSuchColumn   = errors.New("no such column")
	ErrNoSuchFile     = errors.New("no such data file")
	// ErrDuplicate reports a name or path that is already taken.
	ErrDuplicate = errors.New("already exists")
	// ErrInvalid reports a malformed definition or statistics row.
	ErrInvalid = errors.New("invalid")
	// ErrUnchanged is returned by Commit when every change it was given
	// leaves the catalog as it is (a table property set to the value it
	// has): no snapshot is made, and the snapshot returned with it is the
	// newest, in which the table is as asked already. Not a failure.
	ErrUnchanged = errors.New("unchanged")
)

// Catalog is an open catalog. It is safe for concurrent use: commits are
// serialised, reads run against consistent snapshots.
type Catalog struct {
	store    kv.Store
	dir      string
	now      func() time.Time
	dataRoot string
	// uuid is the catalog's own, made when it was created.
	uuid string

	// location names a catalog in a database, without credentials.
	location string

	// speculative marks a catalog Speculate made, over its base snapshot
	// of another catalog.
	speculative bool
	specBase    int64
	specOpen    atomic.Int64 // open speculations of this catalog
	onClose     func()       // a speculation's: gives its place back

	commitMu sync.Mutex
	stats    statsCache
	plan     planCache
	defs     defCache
}

// Options tune Create and Open. The zero value is the default.
type Options struct {
	// Now supplies commit times (tests pin it).
	Now func() time.Time
	// DataRoot, given to Create, confines data files to one directory
	// tree: AddFiles refuses a path outside it. Open reads it back.
	DataRoot string
	// CacheBytes bounds the memory of decoded file lists and column stats
	// kept for planning (Reader.FileSet, Reader.ColumnBounds); 0 means
	// DefaultCacheBytes, negative disables the cache.
	CacheBytes int64
	// Pebble tunes the embedded store Create and Open open: ReadOnly, or
	// the file system (tests inject faults through it). Create is theirs.
	Pebble kv.PebbleOptions
	// Postgres tunes the store of a catalog in PostgreSQL.
	Postgres pgkv.Options
}

func (o Options) cacheBytes() int64 {
	if o.CacheBytes == 0 {
		return DefaultCacheBytes
	}
	return o.CacheBytes
}

func (o Options) now() func() time.Time {
	if o.Now != nil {
		return o.Now
	}
	return time.Now
}

// Create makes a new catalog in dir (created if missing, which must
// otherwise be empty) with snapshot 0 holding the schema "main". A
// PostgreSQL location (pgkv.IsLocation) makes it in that database instead,
// in the schema its search_path names first (public by default), which
// must hold nothing else.
func Create(dir string, opts Options) (*Catalog, error) {
	if pgkv.IsLocation(dir) {
		return createPostgres(dir, opts)
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		if c, err := Open(dir, opts); err == nil {
			c.Close()
			return nil, fmt.Errorf("%s: %w", dir, ErrExists)
		} else if errors.Is(err, ErrLocked) {
			return nil, err
		}
		return nil, fmt.Errorf("%s: directory is not empty and is not a catalog; choose an empty or new directory", dir)
	}
	store, err := newDirStore(dir, opts)
	if err != nil {
		return nil, err
	}
	c, err := CreateInStore(store, opts)
	if err != nil {
		store.Close()
		return nil, storeError(dir, err)
	}
	// The batch's commit records snapshot 0 but cannot report a failure
	// to; here, before anything depends on the catalog, one is an error.
	if err := store.h.advance(0); err != nil {
		store.Close()
		return nil, storeError(dir, fmt.Errorf("create catalog %s: %w", dir, err))
	}
	c.dir = dir
	return c, nil
}

// newDirStore makes a new, empty store in dir (created if missing) with
// its head record, as every catalog directory starts: Create writes a new
// catalog into it, Copy an existing one.
func newDirStore(dir string, opts Options) (*recordingStore, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create catalog: %w", err)
	}
	po := opts.Pebble
	po.Create, po.ReadOnly = true, false
	store, err := kv.OpenPebble(dir, po)
	if err != nil {
		return nil, storeError(dir, fmt.Errorf("create catalog %s: %w", dir, err))
	}
	h, err := openHeadRecord(dir, false)
	if err != nil {
		store.Close()
		return nil, storeError(dir, fmt.Errorf("create catalog %s: %w", dir, err))
	}
	return &recordingStore{Store: store, h: h}, nil
}

// Open opens the catalog in dir, or in the PostgreSQL database a
// location names (pgkv.IsLocation).
func Open(dir string, opts Options) (*Catalog, error) {
	if pgkv.IsLocation(dir) {
		return openPostgres(dir, opts)
	}
	po := opts.Pebble
	po.Create = false
	store, err := kv.OpenPebble(dir, po)
	switch {
	case errors.Is(err, kv.ErrLocked):
		return nil, fmt.Errorf("%s: %w (close the other rocklake first)", dir, ErrLocked)
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%s: %w (create one with `rocklake init`)", dir, ErrNotCatalog)
	case err != nil:
		return nil, storeError(dir, err)
	}
	c, err := OpenStore(store, opts)
	if err != nil {
		store.Close()
		return nil, storeError(dir, fmt.Errorf("%s: %w", dir, err))
	}
	h, err := openHeadRecord(dir, po.ReadOnly)
	if err != nil {
		store.Close()
		return nil, storeError(dir, err)
	}
	if err := checkHead(dir, store, h); err != nil {
		h.close()
		store.Close()
		return nil, storeError(dir, err)
	}
	c.store = &recordingStore{Store: store, h: h}
	c.dir = dir
	return c, nil
}

// storeError says what a failure of the catalog's store means for the
// user: a full disk leaves the catalog as of its last commit; damage is
// corruption of the catalog (matching ErrCorrupt), never "not a catalog".
func storeError(dir string, err error) error {
	switch {
	case errors.Is(err, kv.ErrNoSpace):
		return fmt.Errorf("catalog %s: %w; free space there and retry (the catalog is as of its last acknowledged commit)", dir, err)
	case errors.Is(err, kv.ErrCorrupt), errors.Is(err, ErrLostSnapshot):
		return &corruptError{msg: fmt.Sprintf("catalog %s is corrupt: %v", dir, err), err: err}
	}
	return err
}

// corruptError matches ErrCorrupt and the error it reports.
type corruptError struct {
	msg string
	err error
}

func (e *corruptError) Error() string   { return e.msg }
func (e *corruptError) Unwrap() []error { return []error{ErrCorrupt, e.err} }

// notCatalogError matches ErrNotCatalog and the error it reports.
type notCatalogError struct {
	msg string
	err error
}

func (e *notCatalogError) Error() string   { return e.msg }
func (e *notCatalogError) Unwrap() []error { return []error{ErrNotCatalog, e.err} }

// CreateInStore writes a new catalog into an empty store.
func CreateInStore(store kv.Store, opts Options) (*Catalog, error) {
	if _, err := store.Get(key(tagMeta)); err == nil {
		return nil, ErrExists
	}
	c := &Catalog{store: store, now: opts.now(), plan: planCache{budget: opts.cacheBytes()}}
	now := c.now().UnixMicro()
	b := store.NewBatch()
	defer b.Close()
	root := ""
	if IsObject(opts.DataRoot) {
		// A prefix of keys: it ends with "/" so that s3://b/data does not
		// take in s3://b/data2/.
		root = strings.TrimSuffix(opts.DataRoot, "/") + "/"
		if rest := root[len("s3://"):]; strings.HasPrefix(rest, "/") || strings.Contains(rest, "//") ||
			strings.Contains(rest, "/./") || strings.Contains(rest, "/../") {
			return nil, fmt.Errorf("data root %s: not an s3://bucket/prefix/ location", opts.DataRoot)
		}
	} else if opts.DataRoot != "" {
		abs, err := filepath.Abs(opts.DataRoot)
		if err != nil {
			return nil, err
		}
		if resolved, err := filepath.EvalSymlinks(abs); err == nil {
			abs = resolved
		}
		root = abs
	}
	c.dataRoot, c.uuid = root, uuid.NewString()
	meta, err := encodeValue(&catalogpb.Meta{FormatVersion: formatVersion, CatalogUuid: c.uuid, CreatedUnixMicros: now, DataRoot: root})
	if err != nil {
		return nil, err
	}
	schema, _ := encodeValue(&catalogpb.Schema{Id: 0, Uuid: uuid.NewString(), Name: "main", BeginSnapshot: 0})
	snap, _ := encodeValue(&catalogpb.Snapshot{
		Id: 0, TimeUnixMicros: now, SchemaVersion: 0, NextCatalogId: 1, NextFileId: 0,
		Changes: &catalogpb.Changes{CreatedSchemas: []int64{0}, CreatedNames: []string{"main"}},
	})
	_ = b.Set(key(tagMeta), meta)
	_ = b.Set(key(tagSchema, 0, 0), schema)
	_ = b.Set(key(tagSnapshot, 0), snap)
	if err := b.Commit(); err != nil {
		return nil, fmt.Errorf("create catalog: %w", err)
	}
	return c, nil
}

// OpenStore opens the catalog held in store.
func OpenStore(store kv.Store, opts Options) (*Catalog, error) {
	raw, err := store.Get(key(tagMeta))
	if errors.Is(err, kv.ErrNotFound) {
		return nil, fmt.Errorf("%w (the store has no catalog metadata)", ErrNotCatalog)
	}
	if err != nil {
		return nil, err
	}
	var meta catalogpb.Meta
	if err := decodeValue(raw, &meta); err != nil {
		return nil, fmt.Errorf("%w: metadata: %v", ErrNotCatalog, err)
	}
	if meta.FormatVersion > formatVersion {
		return nil, fmt.Errorf("catalog format %d is newer than this rocklake reads (%d)", meta.FormatVersion, formatVersion)
	}
	return &Catalog{store: store, now: opts.now(), dataRoot: meta.DataRoot, uuid: meta.CatalogUuid, plan: planCache{budget: opts.cacheBytes()}}, nil
}

// UUID is the catalog's identity, made when it was created: what tells
// two catalogs whose snapshots and tables share ids.
func (c *Catalog) UUID() string { return c.uuid }

// DataRoot is the directory data files must lie under ("" for none).
func (c *Catalog) DataRoot() string { return c.dataRoot }

// Close closes the catalog and its store.
func (c *Catalog) Close() error {
	if c.onClose != nil {
		c.onClose()
		c.onClose = nil
	}
	return c.store.Close()
}

// Dir is the catalog's directory ("" for a catalog in a database or in a
// memory store).
func (c *Catalog) Dir() string { return c.dir }

// Location names the catalog for messages: its directory, or its database
// without credentials.
func (c *Catalog) Location() string {
	if c.location != "" {
		return c.location
	}
	return c.dir
}

// Store exposes the key-value store, for tools that measure it.
func (c *Catalog) Store() kv.Store { return c.store }

// Snapshots lists every snapshot, oldest first.
func (c *Catalog) Snapshots() ([]Snapshot, error) {
	it, err := c.store.NewIter(key(tagSnapshot), key(tagSnapshot+1))
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []Snapshot
	for ok := it.First(); ok; ok = it.Next() {
		var p catalogpb.Snapshot
		if err := decodeValue(it.Value(), &p); err != nil {
			return nil, fmt.Errorf("snapshot %x: %w", it.Key(), err)
		}
		out = append(out, snapshotFromPB(&p))
	}
	return out, it.Error()
}

// TableName is one name a table had: from snapshot Begin up to, not
// including, End (0: it still has it).
type TableName struct {
	ID         int64
	Name       string
	Begin, End int64
}

// TableNames lists every name of every table the catalog still holds a
// row for, dropped ones included, for messages that name tables by id.
func (c *Catalog) TableNames() ([]TableName, error) {
	kvs, err := c.store.NewSnapshot()
	if err != nil {
		return nil, err
	}
	defer kvs.Close()
	rows, err := allTableRows(kvs)
	if err != nil {
		return nil, err
	}
	out := make([]TableName, len(rows))
	for i, t := range rows {
		out[i] = TableName{ID: t.Id, Name: t.Name, Begin: t.BeginSnapshot, End: t.GetEndSnapshot()}
	}
	return out, nil
}

// latestSnapshot reads the newest snapshot row through r.
func latestSnapshot(r kv.Reader) (Snapshot, error) {
	it, err := r.NewIter(key(tagSnapshot), key(tagSnapshot+1))
	if err != nil {
		return Snapshot{}, err
	}
	defer it.Close()
	if !it.Last() {
		if err := it.Error(); err != nil {
			return Snapshot{}, err
		}
		return Snapshot{}, fmt.Errorf("%w: the catalog has no snapshot", ErrCorrupt)
	}
	var p catalogpb.Snapshot
	if err := decodeValue(it.Value(), &p); err != nil {
		return Snapshot{}, fmt.Errorf("latest snapshot: %w", err)
	}
	return snapshotFromPB(&p), nil
}

func readSnapshot(r kv.Reader, id int64) (Snapshot, error) {
	raw, err := r.Get(key(tagSnapshot, id))
	if errors.Is(err, kv.ErrNotFound) {
		if first, ferr := firstSnapshotID(r); ferr == nil && id >= 0 && id < first {
			return Snapshot{}, fmt.Errorf("%w %d: expired (the oldest kept is %d)", ErrNoSuchSnapshot, id, first)
		}
		return Snapshot{}, fmt.Errorf("%w %d", ErrNoSuchSnapshot, id)
	}
	if err != nil {
		return Snapshot{}, err
	}
	var p catalogpb.Snapshot
	if err := decodeValue(raw, &p); err != nil {
		return Snapshot{}, fmt.Errorf("snapshot %d: %w", id, err)
	}
	return snapshotFromPB(&p), nil
}

func firstSnapshotID(r kv.Reader) (int64, error) {
	it, err := r.NewIter(key(tagSnapshot), key(tagSnapshot+1))
	if err != nil {
		return 0, err
	}
	defer it.Close()
	if !it.First() {
		return 0, fmt.Errorf("%w: the catalog has no snapshot", ErrCorrupt)
	}
	return idAt(it.Key(), 0)
}

// CompactStore compacts the whole key-value store (when it supports it,
// see kv.Compacter), so that sizes measured afterwards are of live data.
// Tables' data files are not touched: merging those is the rocklake
// compact command's.
func (c *Catalog) CompactStore() error {
	if cp, ok := c.store.(kv.Compacter); ok {
		return cp.Compact(nil, nil)
	}
	return nil
}

// SpaceUsage estimates the bytes on disk held by each kind of row (named as
// in the tag table), and "total" for the whole store. It is empty for a
// store that cannot measure itself.
func (c *Catalog) SpaceUsage() (map[string]int64, error) {
	sz, ok := c.store.(kv.Sizer)
	if !ok {
		return map[string]int64{}, nil
	}
	out := map[string]int64{}
	for name, tag := range allTags {
		n, err := sz.RangeDiskSize([]byte{tag}, []byte{tag + 1})
		if err != nil {
			return nil, err
		}
		out[name] = n
	}
	total, err := sz.DiskSize()
	if err != nil {
		return nil, err
	}
	out["total"] = total
	return out, nil
}

func createPostgres(loc string, opts Options) (*Catalog, error) {
	store, err := pgkv.Init(context.Background(), loc, opts.Postgres)
	if err != nil {
		return nil, fmt.Errorf("create catalog: %w", err)
	}
	c, err := CreateInStore(store, opts)
	if err != nil {
		store.Close()
		if errors.Is(err, ErrExists) {
			return nil, fmt.Errorf("%s: %w", store, ErrExists)
		}
		return nil, fmt.Errorf("create catalog %s: %w", store, err)
	}
	c.location = store.String()
	return c, nil
}

func openPostgres(loc string, opts Options) (*Catalog, error) {
	store, err := pgkv.Open(context.Background(), loc, opts.Postgres)
	if errors.Is(err, pgkv.ErrNoStore) {
		// pgkv's text already says there is no catalog; ErrNotCatalog is
		// for callers that test for it.
		return nil, &notCatalogError{msg: err.Error() + " (create one with `rocklake init`)", err: err}
	}
	if err != nil {
		return nil, err
	}
	c, err := OpenStore(store, opts)
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("%s: %w", store, err)
	}
	c.location = store.String()
	return c, nil
}
