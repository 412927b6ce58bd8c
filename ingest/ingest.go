// Package ingest registers Parquet files in a catalog table: all of them
// in one snapshot, or, when any cannot be read or does not fit, none.
//
// Add runs the registration:
//
//   - the arguments become files (paths.go): files, directories searched
//     for *.parquet, globs, resolved as the operating system resolves
//     them; each file once, by path and by device and inode; anything but
//     a regular file refused before it is opened. An s3:// argument is
//     listed in its store (package storage): a key, a prefix, a glob;
//   - every footer is read in parallel by package pqmeta: a local file's
//     from the file, an object's through ranged requests
//     (storage.RangeReader: one for the last 64 KiB, one more only for a
//     larger footer), and the object's size and ETag are registered (an
//     object listed without an ETag is refused: nothing could check it);
//     pqmeta also maps the file's types to DuckDB's and translates its
//     statistics;
//   - each file is checked against the table (build.go): columns matched
//     by name as DuckDB binds names (names.go), with file types that fit
//     the table's and casts that cannot fail on the file's values; a file
//     column the table lacks is refused unless Options.IgnoreExtraColumns;
//   - a partition column's value comes from the file's key=value
//     directories (hive.go), read and typed as DuckDB's hive_partitioning
//     reads them, and is stored as exact statistics;
//   - its statistics per row group and per file, in the table's column
//     types, with page-index and bloom-filter locations and VARIANT
//     sub-field stats, and membership filters where chosen (filter.go),
//     become its catalog registration;
//   - one transaction commits them, retiring the files a rewrite replaces
//     (Options.Replace), retried when another writer changed the table
//     meanwhile.
//
// PrepareFiles (prepare.go) builds registrations without committing them,
// for an import; PrepareAgain (again.go) builds new ones for registered
// files whose content changed in place, for a refresh of their statistics.
// Registration records what stat says of a local file (size, modification
// and status change times, device and inode) and a fingerprint of its
// footer, which readers check before they read it.
//
// A table Add creates (Options.Create) takes the first file's schema.
// Errors about a file name it; those about its kind or content wrap
// pqmeta's ErrNotRegular, ErrNotParquet, ErrTruncated or ErrCorruptFooter,
// and those about a file that does not fit the table ErrSchemaMismatch.
package ingest

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/internal/pathgate"
	"github.com/rocklake/rocklake/storage"
	"github.com/rocklake/rocklake/types"
)

// ErrSchemaMismatch reports a file whose columns do not fit the table.
var ErrSchemaMismatch = errors.New("schema does not fit")

// FileError names the file an error is about.
type FileError struct {
	Path string
	Err  error
}

func (e *FileError) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *FileError) Unwrap() error { return e.Err }

// Options tune Add. The zero value is the default.
type Options struct {
	// Create makes the table from the first file's schema when it does not
	// exist.
	Create bool
	// CreateColumns, when set, are the columns of the table Create makes,
	// instead of the first file's (CREATE TABLE AS: the query's). Every
	// file is checked against them as against an existing table's.
	CreateColumns []catalog.ColumnDef
	// Workers read footers in parallel; 0 means 2 × GOMAXPROCS (footer
	// reads wait on I/O more than on the CPU).
	Workers int
	// Progress, when set, is called after each footer is read.
	Progress func(done, total int)
	// Replace retires these live files of the table in the same snapshot
	// that registers the new ones (a rewrite). When any of them is no
	// longer live, nothing is committed: their rows would otherwise be
	// registered twice or resurrected.
	Replace []int64
	// ReplaceDeletes, for a rewrite, is the delete file (id; 0: none)
	// each replaced file had when its rows were read: when another became
	// current since, nothing is committed (catalog.Txn.ExpectDeletes).
	ReplaceDeletes map[int64]int64
	// Deletes are delete files to record in the same snapshot (an UPDATE
	// or MERGE under merge-on-read: the rows it took out).
	Deletes []catalog.NewDeleteFile
	// AutoFilters chooses membership filter columns from the first file
	// (as for a table Create makes) when the table has none yet: the
	// first write into a table made by CREATE TABLE.
	AutoFilters bool
	// TableID, when not zero, is the table the files were written for:
	// a table of the name with another id (dropped and made again since)
	// refuses them with catalog.ErrConflict.
	TableID int64
	// Written says the files are what a write (INSERT, COPY, CREATE TABLE
	// AS) made in a directory of rocklake's: registered as they are,
	// where an add of the user's would refuse them.
	Written bool
	// FilterColumns names top-level columns to build membership filters
	// for (see filter.go for the columns that get them anyway).
	FilterColumns []string
	// NoAutoFilters stops a table created by Add from choosing filter
	// columns by itself.
	NoAutoFilters bool
	// Owner is recorded for every file registered (zero: the user's, whom
	// cleanup never deletes from). catalog.OwnerTaken hands the files to
	// rocklake; a rewrite registers its own output as catalog.OwnerRocklake.
	Owner catalog.Ownership
	// Objects reads s3:// locations; nil makes an S3 store from the
	// environment (storage.S3OptionsFromEnv) when an argument needs one.
	Objects storage.Store
	// SkipExisting leaves out files the table has registered, live or
	// retired by a rewrite or a removal (the same resolved path, or the
	// same device and inode), instead of refusing the whole add: the way
	// to register what is new in a directory that keeps growing. Their
	// footers are not read. Once expire has forgotten a retired file, it
	// is new again.
	SkipExisting bool
	// IgnoreExtraColumns registers files that hold columns the table lacks,
	// recording those columns' names with each file (queries do not see
	// them); without it such a file is refused.
	IgnoreExtraColumns bool
	// Leases are those the writer of the files (and of Deletes) holds on
	// their directories: the commit fails, writing nothing, when orphan
	// cleanup took one (catalog.Txn.Hold).
	Leases []*catalog.Lease
	// LayoutValues, when set, gives each file's values of the table's
	// declared layout fields (catalog.NewFile.LayoutValues), by its
	// resolved path: a rewrite knows them for the files it wrote.
	LayoutValues func(path string) []catalog.LayoutValue
	// Hive reads each file's partition values from its key=value
	// directories (as DuckDB's hive_partitioning does, hive.go): a table
	// Create makes gets a partition column per key. Create detects that
	// layout by itself when every file's path has the same keys; a table
	// that has partition columns reads them from every file added.
	Hive bool
	// ReadDirs, when set, are the only directories whose files may be
	// registered: those the reading side may read (a server's sandbox).
	// A local file is checked after symbolic links and ".." are resolved,
	// before it is opened; one outside refuses the add
	// (pathgate.ErrOutside) and nothing is committed.
	ReadDirs []string
}

// Result summarises a successful Add.
type Result struct {
	Snapshot     catalog.Snapshot
	Files        int
	Rows         int64
	Bytes        int64
	CreatedTable bool
	// Skipped counts the files left out by SkipExisting; when every file
	// was, nothing is committed and Snapshot is the zero value.
	Skipped int
	// SkippedDirs are directories a rewrite made that a directory walk
	// left out (rocklake's files, not the user's).
	SkippedDirs []string
	Elapsed     time.Duration
	// Steps splits Elapsed by step.
	Steps Steps
	// Fetched counts the requests and bytes of object storage the add
	// made (listing and footers), when the store counts them.
	Fetched storage.Counts
}

// Steps are the wall times of an add's steps; a commit tried again after
// a conflict adds its filters and commit times again.
type Steps struct {
	List    time.Duration // finding the files (directory walks, globs, listings)
	Footers time.Duration // reading every footer
	Filters time.Duration // building membership filters (reading their columns)
	Commit  time.Duration // checking the files against the table and committing
}

// counter is a store that counts its requests (storage.S3 does).
type counter interface{ Counts() storage.Counts }

// Add registers Parquet files in a table in one snapshot: all of them, or,
// when any file cannot be read or does not fit, none. paths may name files,
// directories (searched for *.parquet) and globs.
func Add(c *catalog.Catalog, table string, paths []string, opts Options) (Result, error) {
	return AddContext(context.Background(), c, table, paths, opts)
}

// AddContext is Add stopped by ctx: no footer is read once ctx is done,
// and nothing is committed. ctx is checked before each footer read and
// before the commit, not within one read or the commit itself, so a
// cancel that comes during the commit still leaves the files registered.
func AddContext(ctx context.Context, c *catalog.Catalog, table string, paths []string, opts Options) (res Result, err error) {
	start := time.Now()
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	// Files orphan cleanup took are gone: say so, not that one is missing.
	for _, l := range opts.Leases {
		if err := l.Check(); err != nil {
			return Result{}, err
		}
	}
	objects := func() (storage.Store, error) {
		if opts.Objects == nil {
			s3, err := storage.NewS3(ctx, storage.S3OptionsFromEnv())
			if err != nil {
				return nil, err
			}
			opts.Objects = s3
		}
		return opts.Objects, nil
	}
	var before storage.Counts
	if ct, ok := opts.Objects.(counter); ok {
		before = ct.Counts()
	}
	defer func() {
		if ct, ok := opts.Objects.(counter); ok {
			res.Fetched = ct.Counts().Sub(before)
		}
	}()
	files, skippedDirs, err := targets(c, paths, objects, opts)
	if err != nil {
		return Result{}, err
	}
	var steps Steps
	steps.List = time.Since(start)
	skipped := 0
	if opts.SkipExisting {
		if files, skipped, err = leaveOutRegistered(c, table, files); err != nil {
			return Result{}, err
		}
		if len(files) == 0 {
			return Result{Skipped: skipped, SkippedDirs: skippedDirs, Elapsed: time.Since(start)}, nil
		}
	}
	t0 := time.Now()
	infos, err := inspectAll(ctx, files, opts)
	if err != nil {
		return Result{}, err
	}
	steps.Footers = time.Since(t0)
	for attempt := 0; ; attempt++ {
		res, err = commitFiles(ctx, c, table, infos, opts, &steps)
		if errors.Is(err, catalog.ErrConflict) && attempt < 3 {
			continue // another writer changed the table: check again on the new state
		}
		break
	}
	if err != nil {
		return Result{}, err
	}
	res.Skipped = skipped
	res.SkippedDirs = skippedDirs
	res.Elapsed = time.Since(start)
	res.Steps = steps
	return res, nil
}

// leaveOutRegistered drops the files a table has registered, live or
// retired (a file optimize rewrote is still on disk, and its rows are in
// the table already), by resolved path or by device and inode. A table
// that does not exist yet has none.
func leaveOutRegistered(c *catalog.Catalog, table string, files []target) ([]target, int, error) {
	r, err := c.Read(catalog.Latest)
	if err != nil {
		return nil, 0, err
	}
	defer r.Close()
	t, err := r.Table(table)
	if errors.Is(err, catalog.ErrNoSuchTable) {
		return files, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	known, err := r.FilesEver(t.ID)
	if err != nil {
		return nil, 0, err
	}
	retired, err := r.RetiredFiles(t)
	if err != nil {
		return nil, 0, err
	}
	paths := make(map[string]bool, len(known))
	ids := make(map[catalog.FileIdentity]bool, len(known))
	for _, f := range known {
		paths[f.Location(t)] = true
		if f.Identity.Known() {
			ids[f.Identity] = true
		}
	}
	for _, f := range retired {
		if f.Forgotten { // the others are in known already
			paths[f.Location] = true
			if f.Identity.Known() {
				ids[f.Identity] = true
			}
		}
	}
	out := files[:0:0]
	for _, f := range files {
		if paths[f.path] || (f.id.Known() && ids[f.id]) {
			continue
		}
		out = append(out, f)
	}
	return out, len(files) - len(out), nil
}

// refuseRewritten refuses files whose rows table t holds already because
// a rewrite took them in (the file, unchanged, at the same path or the
// same device and inode), whether the catalog still keeps their rows or
// expire forgot them: adding them would count every row twice. A file
// retired by a removal may come back; one rewritten in place since is new.
func refuseRewritten(r *catalog.Reader, t catalog.Table, infos []*fileInfo) error {
	retired, err := r.RetiredFiles(t)
	if err != nil || len(retired) == 0 {
		return err
	}
	for _, fi := range infos {
		etag := ""
		if fi.obj != nil {
			etag = fi.obj.ETag
		}
		for _, f := range retired {
			// Inode numbers are reused once a file is deleted: an
			// identity names the retired file only while its path still
			// reaches it.
			same := f.Location == fi.path || (f.Identity.Known() && f.Identity == fi.id && catalog.SameFile(fi.path, f.Location))
			if !same || !f.Rewritten || !f.Unchanged(fi.meta.Size, fi.meta.Modified, etag) {
				continue
			}
			return &FileError{Path: fi.path, Err: rewrittenError(fmt.Sprintf("its rows are in table %q already: a rewrite (optimize or compact) took them in at snapshot %d, when it was file %d; adding it would count them twice (--skip-existing leaves such files out)",
				t.Name, f.EndSnapshot, f.FileID))}
		}
	}
	return nil
}

// rewrittenError is refuseRewritten's refusal: a catalog.ErrDuplicate.
type rewrittenError string

func (e rewrittenError) Error() string { return string(e) }
func (e rewrittenError) Unwrap() error { return catalog.ErrDuplicate }

func commitFiles(ctx context.Context, c *catalog.Catalog, table string, infos []*fileInfo, opts Options, steps *Steps) (Result, error) {
	t0 := time.Now()
	var filters time.Duration
	defer func() {
		steps.Filters += filters
		steps.Commit += time.Since(t0) - filters
	}()
	tx, err := c.Begin()
	if err != nil {
		return Result{}, err
	}
	r, err := c.Read(tx.Base())
	if err != nil {
		return Result{}, err
	}
	defer r.Close()
	res, err := stageFiles(tx, r, table, infos, opts, &filters)
	if err != nil {
		return Result{}, err
	}
	// The last point where a cancel can still leave the catalog as it was.
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	snap, err := tx.Commit()
	if err != nil {
		return Result{}, namedBy(err, infos)
	}
	res.Snapshot = snap
	return res, nil
}

// targets are the files paths name, each checked to be one the add may
// register.
func targets(c *catalog.Catalog, paths []string, objects func() (storage.Store, error), opts Options) ([]target, []string, error) {
	own := len(opts.Replace) > 0 || opts.Written
	files, skippedDirs, err := expand(paths, objects, own, pathgate.New(opts.ReadDirs))
	if err != nil {
		return nil, nil, err
	}
	// A rewrite registers its own output through Replace, a write with
	// Written; any other add of a file a rewrite wrote would hand
	// rocklake's file to the user.
	if !own {
		written := c.WrittenByRocklakeFunc()
		for _, f := range files {
			if written(f.path) {
				return nil, nil, fmt.Errorf("%s: written by rocklake's optimize or compact (%s); it is rocklake's, not a file to register", f.path, filepath.Dir(f.path))
			}
		}
	}
	return files, skippedDirs, nil
}

// prepare reads the footers of the files paths name, for AddAll.
func prepare(ctx context.Context, c *catalog.Catalog, paths []string, opts *Options) ([]*fileInfo, error) {
	objects := func() (storage.Store, error) {
		if opts.Objects == nil {
			s3, err := storage.NewS3(ctx, storage.S3OptionsFromEnv())
			if err != nil {
				return nil, err
			}
			opts.Objects = s3
		}
		return opts.Objects, nil
	}
	files, _, err := targets(c, paths, objects, *opts)
	if err != nil {
		return nil, err
	}
	return inspectAll(ctx, files, *opts)
}

// Batch is one table's files for AddAll.
type Batch struct {
	Table   string
	Paths   []string
	Options Options
}

// AddAll registers several batches of files in one snapshot, in order
// (a transaction's writes): all of them or, when any file of any batch
// cannot be read or does not fit, none. A batch may not create its
// table. A batch with no paths only retires files (Options.Replace: a
// change that took every row out of the files it read).
func AddAll(ctx context.Context, c *catalog.Catalog, batches []Batch) (catalog.Snapshot, []Result, error) {
	infos := make([][]*fileInfo, len(batches))
	for _, b := range batches {
		for _, l := range b.Options.Leases {
			if err := l.Check(); err != nil {
				return catalog.Snapshot{}, nil, err
			}
		}
	}
	for i, b := range batches {
		if b.Options.Create || b.Options.SkipExisting {
			return catalog.Snapshot{}, nil, fmt.Errorf("AddAll: table %q: a batch neither creates its table nor skips files", b.Table)
		}
		if len(b.Paths) == 0 {
			if len(b.Options.Replace) == 0 {
				return catalog.Snapshot{}, nil, fmt.Errorf("AddAll: table %q: a batch with no files retires none", b.Table)
			}
			continue
		}
		var err error
		if infos[i], err = prepare(ctx, c, b.Paths, &batches[i].Options); err != nil {
			return catalog.Snapshot{}, nil, err
		}
	}
	for attempt := 0; ; attempt++ {
		snap, res, err := addAllOnce(ctx, c, batches, infos)
		if errors.Is(err, catalog.ErrConflict) && attempt < 3 {
			continue // another writer changed a table: check again on the new state
		}
		return snap, res, err
	}
}

func addAllOnce(ctx context.Context, c *catalog.Catalog, batches []Batch, infos [][]*fileInfo) (catalog.Snapshot, []Result, error) {
	tx, err := c.Begin()
	if err != nil {
		return catalog.Snapshot{}, nil, err
	}
	r, err := c.Read(tx.Base())
	if err != nil {
		return catalog.Snapshot{}, nil, err
	}
	defer r.Close()
	out := make([]Result, len(batches))
	var all []*fileInfo
	for i, b := range batches {
		if out[i], err = stageFiles(tx, r, b.Table, infos[i], b.Options, nil); err != nil {
			return catalog.Snapshot{}, nil, err
		}
		all = append(all, infos[i]...)
	}
	if err := ctx.Err(); err != nil {
		return catalog.Snapshot{}, nil, err
	}
	snap, err := tx.Commit()
	if err != nil {
		return catalog.Snapshot{}, nil, namedBy(err, all)
	}
	for i := range out {
		out[i].Snapshot = snap
	}
	return snap, out, nil
}

// stageFiles puts the registration of infos in table into tx, read at r
// (tx's base), without committing it.
// filtersTook, when set, gets the time the membership filters took.
func stageFiles(tx *catalog.Txn, r *catalog.Reader, table string, infos []*fileInfo, opts Options, filtersTook *time.Duration) (Result, error) {
	var res Result
	tx.Hold(opts.Leases...)
	var cols []catalog.Column
	t, err := r.Table(table)
	switch {
	case err == nil && opts.TableID != 0 && t.ID != opts.TableID:
		return Result{}, fmt.Errorf("%w: table %q is another table (id %d) than the files were written for (id %d)", catalog.ErrConflict, table, t.ID, opts.TableID)
	case err == nil:
		if cols, err = r.Columns(t.ID); err != nil {
			return Result{}, err
		}
	case errors.Is(err, catalog.ErrNoSuchTable) && opts.Create:
		defs := opts.CreateColumns
		if defs == nil {
			if err := infos[0].creatable(); err != nil {
				return Result{}, &FileError{Path: infos[0].path, Err: err}
			}
			defs = infos[0].columnDefs()
		}
		if _, layout := hiveLayout(infos); opts.CreateColumns == nil && (opts.Hive || layout) {
			parts, err := hiveDefs(infos)
			if err != nil {
				return Result{}, err
			}
			for _, p := range parts {
				if fc, ok := infos[0].columns[types.FoldIdent(p.Name)]; ok {
					return Result{}, &FileError{Path: infos[0].path, Err: fmt.Errorf("%w: the file has a column %q and its path a partition key %q: a table cannot have both", ErrSchemaMismatch, fc.Name, p.Name)}
				}
			}
			defs = append(defs, parts...)
		}
		tx.CreateTable(table, defs)
		res.CreatedTable = true
		// The columns CreateTable will make in this commit, computed without
		// writing: every file is checked against them as against an
		// existing table's.
		if cols, err = catalog.PlanColumns(defs); err != nil {
			return Result{}, &FileError{Path: infos[0].path, Err: err}
		}
	case errors.Is(err, catalog.ErrNoSuchTable):
		return Result{}, fmt.Errorf("%w (use --create to create it from the first file's schema)", err)
	default:
		return Result{}, err
	}
	if len(infos) == 0 {
		// Files retired, none added (AddAll).
		retire(tx, table, opts)
		return res, nil
	}
	// A write's files are new, in a directory made for them: none can be
	// a file a rewrite retired (and the check reads every retired file).
	if !res.CreatedTable && len(opts.Replace) == 0 && !opts.Written {
		if err := refuseRewritten(r, t, infos); err != nil {
			return Result{}, err
		}
	}
	if opts.Hive && !res.CreatedTable && !slices.ContainsFunc(cols, func(c catalog.Column) bool { return c.Partition != "" }) {
		return Result{}, fmt.Errorf("%w: table %q has no partition columns to read from the files' key=value directories (--hive applies to a table --create makes)", ErrSchemaMismatch, table)
	}
	chosen, explicit, err := filterColumns(r, t, cols, infos[0], res.CreatedTable, opts)
	if err != nil {
		return Result{}, err
	}
	t0 := time.Now()
	filters, err := buildFilters(infos, cols, chosen, explicit, opts.Workers, opts.Objects)
	if filtersTook != nil {
		*filtersTook = time.Since(t0)
	}
	if err != nil {
		return Result{}, err
	}
	var nfs []catalog.NewFile
	var errs []error
	for i, fi := range infos {
		nf, err := fi.newFile(table, cols, opts.IgnoreExtraColumns)
		if err != nil {
			errs = append(errs, &FileError{Path: fi.path, Err: err})
			continue
		}
		if opts.Owner != catalog.OwnerUnrecorded {
			nf.Owner = opts.Owner
		}
		if opts.LayoutValues != nil {
			nf.LayoutValues = opts.LayoutValues(fi.path)
		}
		attachFilters(&nf, cols, filters[i])
		nfs = append(nfs, nf)
		res.Rows += nf.RecordCount
		res.Bytes += nf.FileSizeBytes
	}
	if len(errs) > 0 {
		return Result{}, joinErrors(errs, len(infos))
	}
	retire(tx, table, opts)
	tx.AddFiles(table, nfs...)
	res.Files = len(nfs)
	return res, nil
}

// retire puts into tx what opts retire with the files registered: the
// files replaced, on condition that their delete files are those read,
// and the delete files set.
func retire(tx *catalog.Txn, table string, opts Options) {
	if len(opts.ReplaceDeletes) > 0 {
		tx.ExpectDeletes(table, opts.ReplaceDeletes)
	}
	if len(opts.Replace) > 0 {
		tx.RemoveFiles(table, opts.Replace...)
	}
	if len(opts.Deletes) > 0 {
		tx.SetDeletes(table, opts.Deletes...)
	}
}

// joinErrors reports the files that failed; nothing was registered.
func joinErrors(errs []error, total int) error {
	const show = 10
	msg := fmt.Sprintf("%d of %d files cannot be added, so none was", len(errs), total)
	if len(errs) == 1 {
		return errors.Join(errs[0], errors.New("no file was added"))
	}
	shown := errs
	if len(shown) > show {
		shown = shown[:show]
	}
	var parts []string
	for _, e := range shown {
		parts = append(parts, "  "+e.Error())
	}
	if len(errs) > show {
		parts = append(parts, fmt.Sprintf("  ... and %d more", len(errs)-show))
	}
	return &fileErrors{msg: msg + ":\n" + strings.Join(parts, "\n"), errs: errs}
}

// fileErrors is the list of files an add refused: its message shows the
// first few, and every failure stays reachable by errors.Is and errors.As.
// (Wrapping errors.Join with %w would print the whole list a second time.)
type fileErrors struct {
	msg  string
	errs []error
}

func (e *fileErrors) Error() string   { return e.msg }
func (e *fileErrors) Unwrap() []error { return e.errs }

// keptFootersBudget bounds the footers an add keeps parsed between reading
// them and building filters, in bytes of footer (their parse takes a few
// times that).
const keptFootersBudget = 32 << 20

// storeConnections is the requests a store keeps in flight, where it says
// (storage.S3 does), else 16.
func storeConnections(st storage.Store) int {
	if c, ok := st.(interface{ Connections() int }); ok && c.Connections() > 0 {
		return c.Connections()
	}
	return 16
}

// inspectAll reads every footer with a pool of workers, which stop taking
// files once ctx is done.
func inspectAll(ctx context.Context, files []target, opts Options) ([]*fileInfo, error) {
	workers := opts.Workers
	if workers <= 0 {
		workers = 2 * runtime.GOMAXPROCS(0)
		if len(files) > 0 && files[0].obj != nil {
			// An object's footer is a request's latency, not CPU: as many
			// in flight as the store keeps connections.
			workers = max(workers, storeConnections(opts.Objects))
		}
	}
	workers = min(workers, len(files))
	infos := make([]*fileInfo, len(files))
	errs := make([]error, len(files))
	var next, done int
	var kept int64 // bytes of footers kept parsed
	down := false  // a store cannot be reached: every file after would wait it out again
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				stop := down
				mu.Unlock()
				if i >= len(files) || ctx.Err() != nil || stop {
					return
				}
				infos[i], errs[i] = inspectTarget(files[i], opts.Objects)
				if errs[i] != nil {
					errs[i] = &FileError{Path: files[i].path, Err: errs[i]}
				}
				mu.Lock()
				if infos[i] != nil {
					// Parsed footers are kept for the filters (fileFilters)
					// up to a budget; past it the filters parse them again.
					if kept += infos[i].meta.FooterSize; kept > keptFootersBudget {
						infos[i].meta.Forget()
					}
				}
				down = down || errors.Is(errs[i], storage.ErrUnreachable)
				done++
				d := done
				mu.Unlock()
				if opts.Progress != nil {
					opts.Progress(d, len(files))
				}
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err // files left unread have no info: nothing may go on
	}
	if down {
		// One failure of the store, not one per object: how many it left
		// unread (failed on it, or never tried).
		var first error
		n := 0
		for i, e := range errs {
			if infos[i] == nil && (e == nil || errors.Is(e, storage.ErrUnreachable)) {
				n++
			}
			if first == nil && errors.Is(e, storage.ErrUnreachable) {
				first = e
			}
		}
		return nil, fmt.Errorf("%w; no file was added", storage.NotReached(first, n))
	}
	var failed []error
	for _, e := range errs {
		if e != nil {
			failed = append(failed, e)
		}
	}
	if len(failed) > 0 {
		return nil, joinErrors(failed, len(files))
	}
	return infos, nil
}

// namedBy adds to a commit's refusal of a file already registered the
// argument that named it, when that is not the resolved path the catalog
// names (a link the user may not know leads there).
func namedBy(err error, infos []*fileInfo) error {
	if !errors.Is(err, catalog.ErrDuplicate) {
		return err
	}
	msg := err.Error()
	for _, fi := range infos {
		if fi.from != "" && fi.from != fi.path && strings.HasPrefix(msg, "file "+fi.path+":") {
			return fmt.Errorf("%w (given as %q; links and \"..\" resolved)", err, fi.from)
		}
	}
	return err
}
