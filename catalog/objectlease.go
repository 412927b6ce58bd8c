package catalog

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rocklake/rocklake/catalog/catalogpb"
	"github.com/rocklake/rocklake/kv"
)

// Leases on object prefixes.
//
// A write to an object store uploads its files under a prefix of its own
// before the commit that registers them (ObjectRewritePrefix):
//
//	s3://bucket/root/_rocklake/table-<id>/<what>-<snapshot>-<random>/
//	    .rocklake-in-use     the lease: "host=<name> pid=<n> …" and
//	                         "catalog=<uuid>", put again every LeaseRefresh
//	    .rocklake-lost       the tombstone: orphan cleanup gave up on the
//	                         write ("catalog=<uuid>"; there only while its
//	                         files go)
//	    part-00000.parquet
//	    year=2024/part-00001.parquet
//
// The lease keeps the prefix from orphan cleanup as a rewrite directory's
// does (lease.go): while it was put within LeaseExpiry, by the store's
// clock (the time its listing answered with), and its holder, if it runs
// on this host, is alive. A prefix is a catalog's to clean only while its
// lease (or, once the lease is gone, its tombstone) names that catalog:
// writes of every catalog that registers objects in a directory put their
// prefixes beside them, and a write that committed lets its lease go, so
// a prefix without either holds registered files, never orphans.
//
// A bucket cannot do what lease.go does with a file: renewing is a PUT,
// which puts back a lease that cleanup deleted, and no conditional write
// is kept by every S3-compatible store. So cleanup never takes a write's
// files by deleting its lease. It puts the tombstone, then moves the
// fence, then deletes the files, then the lease and last the tombstone. A
// commit holding the lease reads the head, then looks for the tombstone
// (HEAD), then, once that answered, lists the prefix for each file it
// uploaded, and fails (ErrLeaseLost) on a tombstone or a missing file:
//
//   - a commit that read the head before the fence moved loses the fence;
//   - one that read it after finds the tombstone, or, if cleanup deleted
//     the tombstone since, finds gone the files it deleted before.
//
// Cleanup holds the catalog's write lock throughout, so no commit lands
// between its reading which files are registered and its deletions.

// LostFile is the name of an object prefix's tombstone.
const LostFile = ".rocklake-lost"

// ObjectStore is what a lease on an object prefix and orphan cleanup of
// objects need of the store: storage.S3 has these methods.
type ObjectStore interface {
	// PutBytes writes body as the object at loc.
	PutBytes(ctx context.Context, loc string, body []byte) error
	// Exists reports whether the object at loc exists now.
	Exists(ctx context.Context, loc string) (bool, error)
	// ReadSmall returns the object at loc when it holds at most max bytes.
	ReadSmall(ctx context.Context, loc string, max int64) ([]byte, error)
	// Delete removes the object at loc; a missing one is no error.
	Delete(ctx context.Context, loc string) error
	// Walk calls fn for every object whose location starts with prefix,
	// with the time it was last written, and returns the store's own time
	// at the listing (zero when it does not say).
	Walk(ctx context.Context, prefix string, fn func(loc string, modified time.Time) error) (time.Time, error)
}

// UploadAborter is an ObjectStore that can list and abort unfinished
// multipart uploads (storage.S3 can): orphan cleanup aborts those of the
// writes it gives up on. AbortUploads aborts (with dryRun, lists) the
// uploads under the prefix started before the time given, and counts
// the younger ones it left.
type UploadAborter interface {
	AbortUploads(ctx context.Context, prefix string, before time.Time, dryRun bool) (aborted []string, younger int, err error)
}

// objectLease is a Lease on an object prefix.
type objectLease struct {
	store  ObjectStore
	ctx    context.Context
	prefix string
	body   []byte
	mu     sync.Mutex
	// covered are the objects the holder uploaded, each checked by a
	// commit (Cover).
	covered []string
	// renewErr is why the last renewal failed ("" once one succeeds): a
	// lease that cleanup took for want of renewals says so.
	renewErr string
}

// objectTimeout bounds one request of a lease's.
const objectTimeout = time.Minute

// TakeObjectLease puts the lease of the object prefix (ending in "/") a
// write of this catalog uploads under, before any upload, and renews it
// until Release. The lease names the catalog: orphan cleanup of another
// catalog whose files lie beside the same objects leaves the prefix alone.
// ctx's values are kept for every request the lease makes; its end is not
// (a lease handed to a transaction outlives the statement that took it).
func (c *Catalog) TakeObjectLease(ctx context.Context, store ObjectStore, prefix string) (*Lease, error) {
	if !strings.HasSuffix(prefix, "/") {
		return nil, fmt.Errorf("lease on %s: not a prefix ending in /", prefix)
	}
	if err := c.recordObjectRoot(prefix); err != nil {
		return nil, fmt.Errorf("lease on %s: recording its root in the catalog: %w", prefix, err)
	}
	body := "rocklake is writing under this prefix; cleanup --orphans leaves it alone while this object is renewed\n" +
		self().String() + "\n" + catalogField + c.uuid + "\n"
	o := &objectLease{store: store, ctx: context.WithoutCancel(ctx), prefix: prefix, body: []byte(body)}
	if err := o.put(); err != nil {
		return nil, fmt.Errorf("lease on %s: %w", prefix, err)
	}
	l := &Lease{path: prefix + LeaseFile, obj: o, stop: make(chan struct{}), done: make(chan struct{})}
	go l.renew(LeaseRefresh)
	return l, nil
}

// recordObjectRoot records the prefix above a write prefix's "_rocklake/"
// in the catalog (row 1B), before the write's first upload, so that
// orphan cleanup lists it whatever happens to the objects beside it. The
// object data root is always listed and is not recorded; nor is a root
// already there. Records are never removed: a catalog has a few, one per
// directory its tables' objects lie in.
func (c *Catalog) recordObjectRoot(prefix string) error {
	i := strings.Index(prefix, RewriteObjectSegment)
	if i < 0 {
		return nil
	}
	root := prefix[:i+1]
	if root == c.dataRoot {
		return nil
	}
	k := keyWithString(tagObjectRoot, root)
	switch _, err := c.store.Get(k); {
	case err == nil:
		return nil
	case !errors.Is(err, kv.ErrNotFound):
		return err
	}
	v, err := encodeValue(&catalogpb.ObjectRoot{RecordedUnixNanos: c.now().UnixNano()})
	if err != nil {
		return err
	}
	// A batch of its own, not under the write lock: the key is no other
	// writer's, and a cleanup that listed the roots before it finds the
	// write's lease live anyway.
	b := c.store.NewBatch()
	defer b.Close()
	if err := b.Set(k, v); err != nil {
		return err
	}
	return b.Commit()
}

// recordedObjectRoots are the roots recordObjectRoot recorded.
func (c *Catalog) recordedObjectRoots() ([]string, error) {
	kvs, err := c.store.NewSnapshot()
	if err != nil {
		return nil, err
	}
	defer kvs.Close()
	var roots []string
	err = scanRange(kvs, []byte{tagObjectRoot}, func(k, v []byte) error {
		var r catalogpb.ObjectRoot
		if err := decodeValue(v, &r); err != nil {
			return fmt.Errorf("object root row %q: %w", k[1:], err)
		}
		roots = append(roots, string(k[1:]))
		return nil
	})
	return roots, err
}

// catalogField starts the line of a lease or tombstone object that names
// the catalog it belongs to (by its UUID).
const catalogField = "catalog="

// catalogOf is the catalog a lease's or tombstone's text names ("" none).
func catalogOf(text string) string {
	for _, line := range strings.Split(text, "\n") {
		if id, ok := strings.CutPrefix(strings.TrimSpace(line), catalogField); ok {
			return id
		}
	}
	return ""
}

func (o *objectLease) put() error {
	ctx, cancel := context.WithTimeout(o.ctx, objectTimeout)
	defer cancel()
	return o.store.PutBytes(ctx, o.prefix+LeaseFile, o.body)
}

// renewed records how the last renewal went.
func (o *objectLease) renewed(err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.renewErr = ""
	if err != nil {
		o.renewErr = err.Error()
	}
}

// Cover adds objects the holder uploaded under the lease's prefix: a
// commit holding the lease fails unless each still exists. A no-op on a
// lease of a directory (whose files orphan cleanup deletes only after the
// lease) and on nil.
func (l *Lease) Cover(locs ...string) {
	if l == nil || l.obj == nil {
		return
	}
	l.obj.mu.Lock()
	l.obj.covered = append(l.obj.covered, locs...)
	l.obj.mu.Unlock()
}

// check looks for the tombstone, then, once that answer is in, lists the
// prefix for every object covered: in this order (see the top of the
// file). A request that fails is an error of its own, not a lost lease:
// the commit fails, as it cannot know.
func (o *objectLease) check() error {
	o.mu.Lock()
	covered := append([]string(nil), o.covered...)
	renewErr := o.renewErr
	o.mu.Unlock()
	lostHow := func() string {
		if renewErr != "" {
			return fmt.Sprintf(" (its renewal failed: %s)", renewErr)
		}
		return fmt.Sprintf(" (its lease was not renewed for %s)", LeaseExpiry)
	}
	ctx, cancel := context.WithTimeout(o.ctx, objectTimeout)
	lost, err := o.store.Exists(ctx, o.prefix+LostFile)
	cancel()
	if err != nil {
		return fmt.Errorf("checking the lease on %s: %w", o.prefix, err)
	}
	if lost {
		return fmt.Errorf("%w: cleanup --orphans gave up on the write under %s%s: nothing was committed, run the write again", ErrLeaseLost, o.prefix, lostHow())
	}
	if len(covered) == 0 {
		return nil
	}
	present := map[string]bool{}
	ctx, cancel = context.WithTimeout(o.ctx, objectTimeout+time.Duration(len(covered)/1000)*objectTimeout)
	defer cancel()
	if _, err := o.store.Walk(ctx, o.prefix, func(loc string, _ time.Time) error {
		present[loc] = true
		return nil
	}); err != nil {
		return fmt.Errorf("checking the lease on %s: %w", o.prefix, err)
	}
	for _, loc := range covered {
		if !present[loc] {
			return fmt.Errorf("%w: %s was deleted: cleanup --orphans took the write's objects%s; nothing was committed, run the write again", ErrLeaseLost, loc, lostHow())
		}
	}
	return nil
}

// objectGroupName is the part of a key below "_rocklake/" that names one
// write's prefix: table-<id>/<what>-<snapshot>-<random>/ (ObjectRewritePrefix
// with the suffix maintain's objectOutput gives).
var objectGroupName = regexp.MustCompile(`^table-[0-9]+/[a-z]+-[0-9]+-[0-9a-f]{12}/`)

// objectGroup is one write's prefix as orphan cleanup finds it.
type objectGroup struct {
	prefix        string
	now           time.Time // the store's time when it was listed
	lease         string    // the lease's location, "" when there is none
	leaseModified time.Time // when it was last put
	lost          bool      // the tombstone is there (or was put by this run)
	// waiting are the orphans (objects named as a write names its files
	// that no snapshot names) modified within the grace period; due, the
	// others.
	waiting []OrphanFile
	due     []string
	ours    bool // its lease or tombstone names this catalog
	inUse   bool // a live lease keeps it
	skip    bool // it could not be judged or marked: left alone
}

// objectRoots are the prefixes whose "_rocklake/" holds the prefixes of
// object writes: the catalog's data root when it is one, and beside every
// registered object (above its key=value segments, above an earlier
// write's prefix), which is where ObjectRewritePrefix puts a write's
// output without an object data root, and the roots writes recorded
// (recordObjectRoot), where no registered object may be left.
func (c *Catalog) objectRoots(known map[string]bool, recorded []string) []string {
	roots := map[string]bool{}
	if IsObject(c.dataRoot) {
		roots[c.dataRoot] = true
	}
	for _, r := range recorded {
		roots[r] = true
	}
	for loc := range known {
		if !IsObject(loc) {
			continue
		}
		dir := loc[:strings.LastIndexByte(loc, '/')+1]
		if i := strings.Index(dir, RewriteObjectSegment); i >= 0 {
			dir = dir[:i+1]
		}
		roots[dir] = true
		for {
			trimmed := strings.TrimSuffix(dir, "/")
			i := strings.LastIndexByte(trimmed, '/')
			if i < len("s3://") || !strings.Contains(trimmed[i+1:], "=") {
				break
			}
			dir = trimmed[:i+1]
			roots[dir] = true
		}
	}
	out := make([]string, 0, len(roots))
	for r := range roots {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

// objectGroups lists the write prefixes under each root's "_rocklake/",
// with their leases, tombstones and orphans: objects named as writes name
// theirs that no kept snapshot registers. A root that cannot be listed is
// returned in failed, and the others are listed still.
func objectGroups(ctx context.Context, store ObjectStore, roots []string, known map[string]bool, grace time.Duration) ([]*objectGroup, map[string]error) {
	groups := map[string]*objectGroup{}
	failed := map[string]error{}
	for _, root := range roots {
		base := root + "_rocklake/"
		var here []*objectGroup
		now, err := store.Walk(ctx, base, func(loc string, modified time.Time) error {
			m := objectGroupName.FindString(loc[len(base):])
			if m == "" {
				return nil
			}
			prefix := base + m
			g := groups[prefix]
			if g == nil {
				g = &objectGroup{prefix: prefix}
				groups[prefix] = g
				here = append(here, g)
			}
			rest := loc[len(prefix):]
			switch {
			case rest == LeaseFile:
				g.lease, g.leaseModified = loc, modified
			case rest == LostFile:
				g.lost = true
			case known[loc] || !orphanObjectName(rest):
				// Registered, or not a file a write makes: never deleted.
			default:
				g.waiting = append(g.waiting, OrphanFile{Path: loc, Modified: modified})
			}
			return nil
		})
		if err != nil {
			failed[base] = err
			for _, g := range here {
				delete(groups, g.prefix)
			}
			continue
		}
		if now.IsZero() {
			now = time.Now()
		} else {
			// An HTTP date counts whole seconds; modification times may
			// not. The end of its second: an object written just before
			// the listing is never younger than it.
			now = now.Add(time.Second)
		}
		for _, g := range here {
			g.now = now
			// Aged by the store's clock, as the modification times are.
			kept := g.waiting[:0]
			for _, f := range g.waiting {
				if f.Modified.After(graceCutoff(now, grace)) {
					kept = append(kept, f)
				} else {
					g.due = append(g.due, f.Path)
				}
			}
			g.waiting = kept
		}
	}
	out := make([]*objectGroup, 0, len(groups))
	for _, g := range groups {
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].prefix < out[j].prefix })
	return out, failed
}

// orphanObjectName reports whether rest, a key below a write's prefix, is
// named as writes name their files: a part or delete file, below
// key=value segments or none.
func orphanObjectName(rest string) bool {
	segs := strings.Split(rest, "/")
	for _, s := range segs[:len(segs)-1] {
		if !strings.Contains(s, "=") {
			return false
		}
	}
	name := segs[len(segs)-1]
	return partName.MatchString(name) || deleteName.MatchString(name)
}

// judge decides whether a group is this catalog's (its lease, or without
// one its tombstone, names the catalog: a prefix without either is a write
// that committed and let go, or another catalog's) and whether a live
// lease keeps it: put within LeaseExpiry by the store's clock, and, when
// it names a process of this host, that process is alive. It returns an
// error when the lease or tombstone cannot be read (the group is then
// left alone).
func (c *Catalog) judge(ctx context.Context, store ObjectStore, g *objectGroup) error {
	loc := g.lease
	if loc == "" {
		if !g.lost {
			return nil
		}
		loc = g.prefix + LostFile
	}
	body, err := store.ReadSmall(ctx, loc, 4096)
	if err != nil {
		return err
	}
	if g.ours = catalogOf(string(body)) == c.uuid; !g.ours || g.lease == "" || g.lost {
		return nil
	}
	if g.now.Sub(g.leaseModified) > LeaseExpiry {
		return nil
	}
	h, ok := parseHolder(string(body))
	g.inUse = !ok || !self().sameProcessSpace(h) || processAlive(h.pid, h.start)
	return nil
}
