package catalog

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
)

// Leases on object prefixes.
//
// A write to an object store uploads its files under a prefix of its own
// before the commit that registers them (ObjectRewritePrefix):
//
//	s3://bucket/root/_rocklake/table-<id>/<what>-<snapshot>-<random>/
//	    .rocklake-in-use     the lease: "host=<name> pid=<n> …", put
//	                         again every LeaseRefresh
//	    .rocklake-lost       the tombstone: orphan cleanup gave up on the
//	                         write (present only while its files go)
//	    part-00000.parquet
//	    year=2024/part-00001.parquet
//
// The lease keeps the prefix from orphan cleanup as a rewrite directory's
// does (lease.go): while it was put within LeaseExpiry and its holder, if
// it runs on this host, is alive. A bucket cannot do what lease.go does
// with a file: renewing is a PUT, which puts back a lease that cleanup
// deleted, and no conditional write is kept by every S3-compatible store.
// So cleanup never takes a write's files by deleting its lease. It puts
// the tombstone, then moves the fence, then deletes the files, then the
// lease and last the tombstone. A commit holding the lease reads the head,
// then looks for the tombstone, then for each file it uploaded (in that
// order), and fails (ErrLeaseLost) on a tombstone or a missing file:
//
//   - a commit that read the head before the fence moved loses the fence;
//   - one that read it after finds the tombstone, or, if cleanup deleted
//     the tombstone since, finds the files it deleted before it gone.
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
	// with the time it was last written.
	Walk(ctx context.Context, prefix string, fn func(loc string, modified time.Time) error) error
}

// objectLease is a Lease on an object prefix.
type objectLease struct {
	store  ObjectStore
	ctx    context.Context
	prefix string
	mu     sync.Mutex
	// covered are the objects the holder uploaded, each checked by a
	// commit (Cover).
	covered []string
}

// leaseBody is what a lease says: who holds it, for a person reading it
// and for cleanup's liveness check.
func leaseBody() []byte {
	return []byte("rocklake is writing under this prefix; cleanup --orphans leaves it alone while this object is renewed\n" + self().String() + "\n")
}

// objectTimeout bounds one request of a lease's.
const objectTimeout = time.Minute

// TakeObjectLease puts the lease of the object prefix (ending in "/") a
// write uploads under, before any upload, and renews it until Release.
// ctx's values are kept for every request the lease makes; its end is not
// (a lease handed to a transaction outlives the statement that took it).
func TakeObjectLease(ctx context.Context, store ObjectStore, prefix string) (*Lease, error) {
	if !strings.HasSuffix(prefix, "/") {
		return nil, fmt.Errorf("lease on %s: not a prefix ending in /", prefix)
	}
	o := &objectLease{store: store, ctx: context.WithoutCancel(ctx), prefix: prefix}
	if err := o.put(); err != nil {
		return nil, fmt.Errorf("lease on %s: %w", prefix, err)
	}
	l := &Lease{path: prefix + LeaseFile, obj: o, stop: make(chan struct{}), done: make(chan struct{})}
	go l.renew(LeaseRefresh)
	return l, nil
}

func (o *objectLease) put() error {
	ctx, cancel := context.WithTimeout(o.ctx, objectTimeout)
	defer cancel()
	return o.store.PutBytes(ctx, o.prefix+LeaseFile, leaseBody())
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

// check looks for the tombstone, then for every object covered: in this
// order, see the top of the file.
func (o *objectLease) check() error {
	ctx, cancel := context.WithTimeout(o.ctx, objectTimeout)
	defer cancel()
	lost, err := o.store.Exists(ctx, o.prefix+LostFile)
	if err != nil {
		return fmt.Errorf("%w: looking for %s: %v", ErrLeaseLost, o.prefix+LostFile, err)
	}
	if lost {
		return fmt.Errorf("%w: cleanup --orphans gave up on the write under %s (its lease was not renewed for %s): nothing was committed, run the write again", ErrLeaseLost, o.prefix, LeaseExpiry)
	}
	o.mu.Lock()
	locs := append([]string(nil), o.covered...)
	o.mu.Unlock()
	missing := make([]string, len(locs))
	errs := make([]error, len(locs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(8, len(locs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				ok, err := o.store.Exists(ctx, locs[i])
				if err != nil {
					errs[i] = err
				} else if !ok {
					missing[i] = locs[i]
				}
			}
		}()
	}
	for i := range locs {
		next <- i
	}
	close(next)
	wg.Wait()
	for i := range locs {
		if errs[i] != nil {
			return fmt.Errorf("%w: looking for %s: %v", ErrLeaseLost, locs[i], errs[i])
		}
		if missing[i] != "" {
			return fmt.Errorf("%w: %s was deleted (cleanup --orphans found its lease older than %s): nothing was committed, run the write again", ErrLeaseLost, missing[i], LeaseExpiry)
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
	lease         string    // the lease's location, "" when there is none
	leaseModified time.Time // when it was last put
	lost          bool      // the tombstone is there
	inUse         bool      // a live lease keeps it
	orphans       []OrphanFile
	due           []string // orphans past the grace period
}

// objectRoots are the prefixes whose "_rocklake/" holds the prefixes of
// object writes: the catalog's data root when it is one, and beside every
// registered object (above its key=value segments, above an earlier
// write's prefix), which is where ObjectRewritePrefix puts a write's
// output without an object data root.
func (c *Catalog) objectRoots(known map[string]bool) []string {
	roots := map[string]bool{}
	if IsObject(c.dataRoot) {
		roots[c.dataRoot] = true
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
// theirs that no kept snapshot registers.
func objectGroups(ctx context.Context, store ObjectStore, roots []string, known map[string]bool, due time.Time) ([]*objectGroup, error) {
	groups := map[string]*objectGroup{}
	for _, root := range roots {
		base := root + "_rocklake/"
		err := store.Walk(ctx, base, func(loc string, modified time.Time) error {
			m := objectGroupName.FindString(loc[len(base):])
			if m == "" {
				return nil
			}
			prefix := base + m
			g := groups[prefix]
			if g == nil {
				g = &objectGroup{prefix: prefix}
				groups[prefix] = g
			}
			rest := loc[len(prefix):]
			switch {
			case rest == LeaseFile:
				g.lease, g.leaseModified = loc, modified
			case rest == LostFile:
				g.lost = true
			case known[loc] || !orphanObjectName(rest):
			case modified.After(due):
				g.orphans = append(g.orphans, OrphanFile{Path: loc, Modified: modified})
			default:
				g.due = append(g.due, loc)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("orphan cleanup: listing %s: %w", base, err)
		}
	}
	out := make([]*objectGroup, 0, len(groups))
	for _, g := range groups {
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].prefix < out[j].prefix })
	return out, nil
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

// liveObjectLease reports whether a group's lease keeps it: put within
// LeaseExpiry (by this machine's clock against the store's), and, when it
// names a process of this host, that process is alive.
func liveObjectLease(ctx context.Context, store ObjectStore, g *objectGroup, now time.Time) bool {
	if g.lease == "" || g.lost || now.Sub(g.leaseModified) > LeaseExpiry {
		return false
	}
	body, err := store.ReadSmall(ctx, g.lease, 4096)
	if err != nil {
		// Not readable (gone since the listing, or too large to be
		// ours): it lasts until its expiry.
		return true
	}
	h, ok := parseHolder(string(body))
	if !ok || !self().sameProcessSpace(h) {
		return true
	}
	return processAlive(h.pid, h.start)
}
