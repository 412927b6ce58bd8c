package catalog

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rocklake/rocklake/catalog/catalogpb"
	"github.com/rocklake/rocklake/kv"
)

// OrphanOptions steer DeleteOrphans. The zero value is the default.
type OrphanOptions struct {
	// DryRun reports what would be deleted and changes nothing.
	DryRun bool
	// Grace: an orphan modified less than this long ago is kept (a rewrite
	// may be writing it, about to register it). 0 means DefaultGrace;
	// negative, none.
	Grace time.Duration
	// Context, when set, stops DeleteOrphans between two deletions.
	Context context.Context
	// Objects, when set, is the store of the catalog's objects: the
	// prefixes writes to objects upload under are looked at too (below
	// "_rocklake/" beside the object data root and every registered
	// object; see objectlease.go). Unset, only local files are.
	Objects ObjectStore
}

// OrphanResult says what DeleteOrphans did (or, in a dry run, would do).
type OrphanResult struct {
	// Deleted are the orphaned files removed.
	Deleted []string
	// Waiting are orphans modified within the grace period, left for a
	// later run.
	Waiting []OrphanFile
	// Dirs are rewrite directories the deletions left empty, removed.
	Dirs []string
	// InUse are rewrite directories and object prefixes a running write
	// holds (a live lease, see lease.go and objectlease.go): nothing in
	// them was deleted, whatever its age.
	InUse []string
	// Expired are the leases (files or objects) of writes that died or
	// stalled (not live), removed, so that their files could go.
	Expired []string
	// Aborted are the unfinished multipart uploads of object writes
	// that died or stalled (a large file's upload killed part-way),
	// aborted so that their parts stop taking space: "s3://bucket/key
	// (upload <id>)". Uploads started within the grace period wait.
	Aborted []string
	// Failed maps an orphan to why it could not be removed.
	Failed map[string]error
}

// OrphanFile is an orphan within its grace period.
type OrphanFile struct {
	Path     string
	Modified time.Time
}

// DeleteOrphans removes the files rewrites wrote that no snapshot ever
// registered: what an optimize or compact killed before its commit left
// behind (an interrupted one removes its files itself), as DuckLake's
// ducklake_delete_orphaned_files. It looks only in directories a rewrite
// created (under RewriteRoot, or holding RewriteMarker) and deletes only
// files named as rewrites name theirs (part-NNNNN.parquet, the .rows.tmp
// a write stages its rows in, and a change's delete-N.parquet delete
// files) that no data-file or delete-file row of any table at any kept
// snapshot names and that cleanup
// has not scheduled, and that were last modified at least the grace
// period ago. A directory left with nothing but its marker goes too.
// A directory whose lease is live (a write in progress, however long it
// has run) is left whole; see lease.go.
// Nothing else is ever deleted: not a file the user put in such a
// directory, not a file anywhere else.
func (c *Catalog) DeleteOrphans(o OrphanOptions) (*OrphanResult, error) {
	c.commitMu.Lock()
	defer c.commitMu.Unlock()
	// A rewrite in another process registers its files at its commit:
	// none may land between reading the known files and deleting.
	newBatch, release, err := c.writeLock()
	if err != nil {
		return nil, err
	}
	defer release()
	grace := o.Grace
	if grace == 0 {
		grace = DefaultGrace
	}
	known, rocklakeDirs, err := c.knownFiles()
	if err != nil {
		return nil, err
	}
	dirs := map[string]bool{}
	for d := range rocklakeDirs {
		if IsRewriteDir(d) {
			dirs[d] = true
		}
	}
	root := c.RewriteRoot()
	if root != "" {
		tables, err := os.ReadDir(root)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		for _, t := range tables {
			if !t.IsDir() {
				continue
			}
			rewrites, err := os.ReadDir(filepath.Join(root, t.Name()))
			if err != nil {
				return nil, err
			}
			for _, r := range rewrites {
				if r.IsDir() {
					dirs[filepath.Join(root, t.Name(), r.Name())] = true
				}
			}
		}
	}
	res := &OrphanResult{Failed: map[string]error{}}
	due := graceCutoff(c.now(), grace)
	var stopped error
	sorted := make([]string, 0, len(dirs))
	for d := range dirs {
		sorted = append(sorted, d)
	}
	sort.Strings(sorted)
	// A directory a running write holds is left whole. The leases of
	// writers that are gone go before any file does, and the fence moves
	// once they are gone: a commit that saw such a lease before it went
	// loses the fence, and one that reads after finds it gone (lease.go).
	inUse := map[string]bool{}
	for _, d := range sorted {
		live, present := leaseLive(d, c.now())
		switch {
		case live:
			inUse[d] = true
			res.InUse = append(res.InUse, d)
		case present:
			res.Expired = append(res.Expired, filepath.Join(d, LeaseFile))
		}
	}
	// Object prefixes: a write gone or stalled gets its tombstone before
	// the fence moves (objectlease.go).
	ctx := o.Context
	if ctx == nil {
		ctx = context.Background()
	}
	var groups []*objectGroup
	tombstoned := false
	if o.Objects != nil {
		var failed map[string]error
		recorded, err := c.recordedObjectRoots()
		if err != nil {
			return nil, err
		}
		groups, failed = objectGroups(ctx, o.Objects, c.objectRoots(known, recorded), known, grace)
		for root, err := range failed {
			res.Failed[root] = fmt.Errorf("listing: %w", err)
		}
		for _, g := range groups {
			if err := c.judge(ctx, o.Objects, g); err != nil {
				res.Failed[g.prefix] = fmt.Errorf("reading its lease: %w", err)
				g.skip = true
				continue
			}
			if !g.ours || g.inUse || len(g.due) == 0 || o.DryRun {
				continue
			}
			body := "rocklake cleanup --orphans is deleting the files of the write under this prefix\n" + catalogField + c.uuid + "\n"
			if err := o.Objects.PutBytes(ctx, g.prefix+LostFile, []byte(body)); err != nil {
				res.Failed[g.prefix+LostFile] = err
				g.skip = true
				continue
			}
			g.lost, tombstoned = true, true
		}
	}
	if (len(res.Expired) > 0 || tombstoned) && !o.DryRun {
		for _, p := range res.Expired {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("orphan cleanup: removing the expired lease %s: %w", p, err)
			}
		}
		if err := c.moveFence(newBatch); err != nil {
			return nil, fmt.Errorf("orphan cleanup: %w", err)
		}
	}
	for _, d := range sorted {
		if inUse[d] {
			continue
		}
		entries, err := rewriteDirFiles(d)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, err
		}
		for _, e := range entries {
			p := e.path
			if !e.Type().IsRegular() || !(partName.MatchString(e.Name()) || stageName.MatchString(e.Name()) || deleteName.MatchString(e.Name()) || leaseTmpName.MatchString(e.Name())) || known[p] {
				continue
			}
			if real, err := filepath.EvalSymlinks(p); err == nil && known[real] {
				continue
			}
			info, err := e.Info()
			if err != nil {
				continue
			}
			if info.ModTime().After(due) {
				res.Waiting = append(res.Waiting, OrphanFile{Path: p, Modified: info.ModTime()})
				continue
			}
			if o.Context != nil && o.Context.Err() != nil {
				stopped = context.Cause(o.Context)
				break
			}
			if !o.DryRun {
				if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
					res.Failed[p] = err
					continue
				}
			}
			res.Deleted = append(res.Deleted, p)
		}
		if stopped != nil {
			break
		}
	}
	deleted, touched := map[string]bool{}, map[string]bool{}
	for _, p := range append(slices.Clone(res.Deleted), res.Expired...) {
		deleted[p], touched[filepath.Dir(p)] = true, true
	}
	for sub := range touched {
		// A Hive layout's key=value directories emptied now go, and the
		// rewrite directory above them once they leave it empty.
		if !dirs[sub] && !o.DryRun {
			res.Dirs = append(res.Dirs, removeEmptied(sub, root)...)
		}
	}
	for _, d := range sorted {
		if inUse[d] {
			continue
		}
		// A directory emptied now goes; one found empty only once it is
		// older than the grace period (a rewrite may have just made it).
		if !touched[d] {
			if st, err := os.Stat(d); err != nil || st.ModTime().After(due) {
				continue
			}
		}
		if o.DryRun {
			if emptiedBy(d, deleted) {
				res.Dirs = append(res.Dirs, d)
			}
			continue
		}
		res.Dirs = append(res.Dirs, removeEmptied(d, root)...)
	}
	if stopped == nil {
		o.Grace = grace // the default resolved once, for the uploads' ages too
		stopped = deleteObjectOrphans(ctx, o, groups, res)
	}
	if stopped != nil {
		return res, fmt.Errorf("orphan cleanup stopped: %w", stopped)
	}
	return res, nil
}

// deleteObjectOrphans deletes the orphans of this catalog's object
// prefixes that no live lease keeps, past the tombstones and the fence
// moved: then, once nothing of the write is left to delete, its lease
// and last its tombstone (objectlease.go). A prefix with orphans still
// in their grace period keeps its lease, so that a later run finds it. It
// returns the cause when o.Context stopped it.
func deleteObjectOrphans(ctx context.Context, o OrphanOptions, groups []*objectGroup, res *OrphanResult) error {
	for _, g := range groups {
		switch {
		case !g.ours || g.skip:
			continue
		case g.inUse:
			res.InUse = append(res.InUse, g.prefix)
			continue
		}
		res.Waiting = append(res.Waiting, g.waiting...)
		aborted, young, err := abortUploads(ctx, o.Objects, g, o.Grace, o.DryRun)
		res.Aborted = append(res.Aborted, aborted...)
		if err != nil {
			res.Failed[g.prefix] = fmt.Errorf("aborting its unfinished uploads: %w", err)
		}
		if o.DryRun {
			res.Deleted = append(res.Deleted, g.due...)
			if g.lease != "" && len(g.waiting) == 0 && !young && err == nil {
				res.Expired = append(res.Expired, g.lease)
			}
			continue
		}
		failed := err != nil || young
		for _, loc := range g.due {
			if err := ctx.Err(); err != nil {
				return context.Cause(ctx)
			}
			if err := o.Objects.Delete(ctx, loc); err != nil {
				res.Failed[loc], failed = err, true
				continue
			}
			res.Deleted = append(res.Deleted, loc)
		}
		if failed || len(g.waiting) > 0 {
			// The lease and tombstone stay: a later run finds the
			// prefix by them, and a late commit of the write must not
			// register what may be half deleted.
			continue
		}
		if g.lease != "" {
			if err := o.Objects.Delete(ctx, g.lease); err != nil {
				res.Failed[g.lease] = err
				continue
			}
			res.Expired = append(res.Expired, g.lease)
		}
		if g.lost {
			if err := o.Objects.Delete(ctx, g.prefix+LostFile); err != nil {
				res.Failed[g.prefix+LostFile] = err
			}
		}
	}
	return nil
}

// graceCutoff is the time before which an orphan is old enough to go: a
// grace period before now, or with none (a negative grace) any time at
// all. With none nothing may wait on a clock: a store's clock (its Date
// header, which some servers cache and renew only every second or so)
// can lag the modification times it reports.
func graceCutoff(now time.Time, grace time.Duration) time.Time {
	if grace < 0 {
		return time.Unix(1<<62, 0)
	}
	return now.Add(-grace)
}

// abortUploads aborts the unfinished multipart uploads under a group's
// prefix started before the grace period (by the store's clock; a
// negative grace is none), where the store can (UploadAborter). young
// says some were left for being younger: the prefix's lease stays, so
// that a later run finds them.
func abortUploads(ctx context.Context, store ObjectStore, g *objectGroup, grace time.Duration, dryRun bool) (aborted []string, young bool, err error) {
	a, ok := store.(UploadAborter)
	if !ok {
		return nil, false, nil
	}
	aborted, younger, err := a.AbortUploads(ctx, g.prefix, graceCutoff(g.now, grace), dryRun)
	return aborted, younger > 0, err
}

// knownFiles is every location a data-file or delete-file row of any
// table (dropped ones included, any version) names or cleanup has scheduled, as recorded and
// with symbolic links resolved, and the directories holding rocklake's
// own files among them.
func (c *Catalog) knownFiles() (map[string]bool, map[string]bool, error) {
	kvs, err := c.store.NewSnapshot()
	if err != nil {
		return nil, nil, err
	}
	defer kvs.Close()
	tables, err := allTableRows(kvs)
	if err != nil {
		return nil, nil, err
	}
	known, dirs := map[string]bool{}, map[string]bool{}
	above := map[string]string{} // a file's directory: the rewrite directory it is or lies in
	note := func(loc string, owner Ownership) {
		known[loc] = true
		if abs, err := filepath.Abs(loc); err == nil {
			known[abs] = true
			if real, err := filepath.EvalSymlinks(abs); err == nil {
				known[real] = true
			}
			if owner == OwnerRocklake {
				// A Hive layout's files lie in key=value directories
				// below the rewrite directory (one at --dir has no other
				// way to be found).
				d := filepath.Dir(abs)
				top, seen := above[d]
				if !seen {
					top = rewriteDirAbove(d)
					above[d] = top
				}
				if top != "" {
					dirs[top] = true
				}
			}
		}
	}
	for _, t := range tables {
		tb := tableFromPB(t)
		var p catalogpb.DataFile
		err := scanRange(kvs, key(tagDataFile, t.Id), func(k, v []byte) error {
			p.Reset()
			if err := decodeValue(v, &p); err != nil {
				return fmt.Errorf("data file row %x: %w", k, err)
			}
			f := dataFileFromPB(&p)
			note(f.Location(tb), f.Owner)
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
		var d catalogpb.DeleteFile
		err = scanRange(kvs, key(tagDeleteFile, t.Id), func(k, v []byte) error {
			d.Reset()
			if err := decodeValue(v, &d); err != nil {
				return fmt.Errorf("delete file row %x: %w", k, err)
			}
			note(deleteFileFromPB(&d).Location(tb), OwnerRocklake)
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
	}
	sched, err := c.ScheduledFiles()
	if err != nil {
		return nil, nil, err
	}
	for _, s := range sched {
		note(s.Location, s.Owner)
	}
	return known, dirs, nil
}

// moveFence gives the fence a new value, in a batch from newBatch, without
// a snapshot: every commit that read the old value writes nothing and
// reads again.
func (c *Catalog) moveFence(newBatch func() kv.Batch) error {
	kvs, err := c.store.NewSnapshot()
	if err != nil {
		return err
	}
	defer kvs.Close()
	b := newBatch()
	defer b.Close()
	if err := fence(kvs, b); err != nil {
		return err
	}
	return b.Commit()
}

// rewriteFile is a file in a rewrite directory or in one of its Hive
// partition directories.
type rewriteFile struct {
	fs.DirEntry
	path string
}

// rewriteDirFiles lists the entries of rewrite directory d and, below it,
// of the key=value directories a write into a Hive-partitioned table
// makes (nothing else below d is looked into).
func rewriteDirFiles(d string) ([]rewriteFile, error) {
	entries, err := os.ReadDir(d)
	if err != nil {
		return nil, err
	}
	var out []rewriteFile
	for _, e := range entries {
		p := filepath.Join(d, e.Name())
		if e.IsDir() && strings.Contains(e.Name(), "=") {
			below, err := rewriteDirFiles(p)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, err
			}
			out = append(out, below...)
			continue
		}
		out = append(out, rewriteFile{DirEntry: e, path: p})
	}
	return out, nil
}
