package maintain

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/internal/sqllex"
	"github.com/rocklake/rocklake/membership"
	"github.com/rocklake/rocklake/pqmeta"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/storage"
	"github.com/rocklake/rocklake/types"
)

// Problem is one thing verify found wrong.
type Problem struct {
	Path   string `json:"path"`
	FileID int64  `json:"file_id"`
	What   string `json:"what"`
}

// VerifyReport lists what Verify checked and found.
type VerifyReport struct {
	Table    string    `json:"table"`
	Snapshot int64     `json:"snapshot_id"`
	Files    int       `json:"file_count"`
	Units    int       `json:"units_checked"` // (file or row group, column) pairs with --deep
	Problems []Problem `json:"problems"`
}

// Verify checks a table's files against the catalog: each must exist
// with its registered size; a local file also with its modification and
// status change times, device and inode, and its footer's fingerprint (a
// stat and one small read each), an object with its ETag (one HEAD each).
// Each file that differs is one problem that says how. With deep, it
// also reads every column of every row
// group through DuckDB and reports each stored bound that excludes a value
// present in the data, each NULL count that is wrong, each
// contains_nan=false over a NaN, and each value a membership filter or
// the membership index's signature rules out; and the same of every VARIANT
// sub-field's stats and GEOMETRY extent (verify_variant.go). Either way it
// checks that what plans read (file and stats blocks, the table's stats)
// agrees with the catalog's rows (catalog.Reader.CheckDerived).
func Verify(ctx context.Context, e *engine.Engine, table string, snapshot int64, deep bool) (*VerifyReport, error) {
	st, err := openTable(e.Catalog(), snapshot, table)
	if err != nil {
		return nil, err
	}
	defer st.r.Close()
	r, t, files, cols := st.r, st.t, st.files, st.cols
	rep := &VerifyReport{Table: t.Name, Snapshot: r.Snapshot().ID, Files: len(files), Problems: []Problem{}}
	sigs := map[int64]*catalog.SignatureReader{}
	for _, f := range files {
		path := f.Location(t)
		bad := func(format string, args ...any) {
			rep.Problems = append(rep.Problems, Problem{Path: path, FileID: f.ID, What: fmt.Sprintf(format, args...)})
		}
		readFrom := path // what DuckDB reads: the file, or an object's local copy
		release := func() {}
		if catalog.IsObject(path) {
			if !verifyObject(ctx, e, f, path, bad) || !deep {
				continue
			}
			if readFrom, release, err = e.ObjectCopy(ctx, path, f.FileSizeBytes, f.ETag); err != nil {
				bad("unreadable: %v", err)
				continue
			}
		} else if !verifyLocal(t, f, path, bad) || !deep {
			continue
		}
		n, err := verifyData(ctx, e, r, sigs, t, f, readFrom, cols, bad)
		release() // the local copy may be evicted once read
		if err != nil {
			return nil, err
		}
		rep.Units += n
	}
	// What plans read is derived from the rows checked above; a
	// divergence would skip files without any file being wrong.
	derived, err := r.CheckDerived(t.ID)
	if err != nil {
		return nil, fmt.Errorf("checking what plans read against the catalog's rows: %w", err)
	}
	if len(derived) > 0 {
		locs := make(map[int64]string, len(files))
		for _, f := range files {
			locs[f.ID] = f.Location(t)
		}
		for _, p := range derived {
			path, ok := locs[p.FileID]
			switch {
			case p.FileID == 0:
				path = "table " + t.Name
			case !ok:
				path = "(no live file row)"
			}
			rep.Problems = append(rep.Problems, Problem{Path: path, FileID: p.FileID, What: "catalog: " + p.What})
		}
	}
	return rep, nil
}

// verifyData checks a file's row count and statistics against the data
// DuckDB reads from readFrom.
func verifyData(ctx context.Context, e *engine.Engine, r *catalog.Reader, sigs map[int64]*catalog.SignatureReader, t catalog.Table,
	f catalog.DataFile, readFrom string, cols []catalog.Column, bad func(string, ...any)) (int, error) {
	var rows int64
	if err := e.DB().QueryRowContext(ctx, "SELECT count(*) FROM read_parquet(?)", e.DuckPath(readFrom)).Scan(&rows); err != nil {
		bad("unreadable: %v", err)
		return 0, nil
	}
	if rows != f.RecordCount {
		bad("holds %d rows, registered as %d", rows, f.RecordCount)
	}
	return verifyFile(ctx, e, r, sigs, t, f, readFrom, cols, bad)
}

// verifyObject checks that an object still has its registered size and
// ETag (one HEAD), reporting what differs; it says whether it does.
func verifyObject(ctx context.Context, e *engine.Engine, f catalog.DataFile, path string, bad func(string, ...any)) bool {
	st, _, err := e.Objects()
	if err != nil {
		bad("cannot be checked: %v", err)
		return false
	}
	o, err := st.Stat(ctx, path)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		bad("missing: the object no longer exists")
	case err != nil:
		bad("cannot be checked: %v", err)
	case o.Size != f.FileSizeBytes:
		bad("size is %d bytes, registered as %d: the object was replaced or changed", o.Size, f.FileSizeBytes)
	case f.ETag == "":
		// Registered before add refused objects without one: reads check
		// only its size, so an overwrite of the same size goes unseen.
		bad("registered without an ETag, so a change of the same size cannot be seen: remove it and add it again from a store that gives ETags")
	case o.ETag != f.ETag:
		bad("ETag is %s, registered as %s: the object was replaced or changed", o.ETag, f.ETag)
	default:
		return true
	}
	return false
}

// verifyLocal checks that a local file is still the file registered: its
// stat (size, modification and status change times, device and inode)
// and its footer against the fingerprint recorded, one small read. It
// reports everything that differs in one problem, and says whether the
// file's data may still be checked (--deep): it is there, of its
// registered size, with a footer that reads; a file whose identity
// changed is checked too, since that is what tells a touched file from
// a rewritten one.
func verifyLocal(t catalog.Table, f catalog.DataFile, path string, bad func(string, ...any)) bool {
	st, err := os.Stat(path)
	switch {
	case err != nil:
		bad("missing: %v", err)
		return false
	case !st.Mode().IsRegular():
		bad("no longer a regular file (%s)", st.Mode().Type())
		return false
	}
	now := pqmeta.StampOf(st)
	m, err := pqmeta.Read(path, pqmeta.FileIdentity{})
	if err == nil {
		now = m.Stamp() // of the file whose footer was read
	}
	what := engine.RegisteredStamp(f).Differences(now)
	if err != nil {
		what = append(what, fmt.Sprintf("its footer cannot be read: %v", err))
	} else if d := m.FooterDifference(f.FooterFingerprint, f.FooterSize); d != "" {
		what = append(what, d)
	}
	if len(what) > 0 {
		bad("%s; `rocklake refresh %s %s` compares its footer with the one registered and takes it back",
			strings.Join(what, "; "), t.Name, path)
	}
	return err == nil && now.Size == f.FileSizeBytes
}

// verifyChunk is how many columns one verify query aggregates at least:
// every query binds the whole file's schema (about 45 ms for 10,000
// columns), so one query per column would make verify quadratic in
// columns. Wide files get wider chunks (verifyChunkFor): measured on a
// 10,000-column file, 1.1 ms per column at 64 a query, 0.32 at 1,024.
const verifyChunk = 64

func verifyChunkFor(cols int) int { return max(verifyChunk, min(1024, cols/8)) }

// verifyUnit is a file or a row group and, per checked column, its stored
// stats.
type verifyUnit struct {
	name       string
	first, end int64
	stats      []*stats.Column // per checked column; nil when none is stored
}

// verifyFile checks one file's file and row-group stats, for every column
// with ordered values, against the values DuckDB reads (cast to the
// table's types, as queries read them), and its membership filters.
func verifyFile(ctx context.Context, e *engine.Engine, r *catalog.Reader, sigs map[int64]*catalog.SignatureReader, t catalog.Table,
	f catalog.DataFile, path string, all []catalog.Column, bad func(string, ...any)) (int, error) {
	fs, err := r.FileSet(t.ID)
	if err != nil {
		return 0, err
	}
	pos, found := slices.BinarySearch(fs.IDs, f.ID)
	if !found {
		return 0, fmt.Errorf("verify: file %d is not in the table's file set", f.ID)
	}
	// A file registered before the table's columns changed holds them
	// under their names then; a column added since is not in it (its
	// stored stats are its default's).
	m, err := r.ColumnMapping(t.ID)
	if err != nil {
		return 0, err
	}
	all = m.Held(f, all)
	var cols []catalog.Column
	var codecs []*types.Codec
	for _, col := range all {
		// A partition column's values are not in the file: its stats come
		// from the path registered, which cannot change under it.
		if col.Parent.Known || col.Partition != "" {
			continue
		}
		if codec, ok := types.CodecFor(col.Type); ok && codec.Ordered() {
			cols, codecs = append(cols, col), append(codecs, codec)
		}
	}
	checked := 0
	for i, col := range cols {
		sr := sigs[col.ID]
		if sr == nil {
			sr = r.Signatures(t.ID, col.ID)
			sigs[col.ID] = sr
		}
		n, err := verifyFilter(ctx, e, r, sr, t, pos, f.ID, path, col, codecs[i], bad)
		if err != nil {
			return 0, err
		}
		checked += n
	}
	n, err := verifyVariants(ctx, e, r, t, f, path, all, bad)
	if err != nil {
		return 0, err
	}
	checked += n
	if n, err = verifyExtents(ctx, e, r, t, f, path, all, bad); err != nil {
		return 0, err
	}
	checked += n
	if len(cols) == 0 {
		return checked, nil
	}
	// The file as a whole, then its row groups; each unit holds, per
	// column, the stored stats to check.
	fileUnit := verifyUnit{name: "file", first: 0, end: f.RecordCount, stats: make([]*stats.Column, len(cols))}
	rgUnits := map[int32]*verifyUnit{}
	var order []int32
	for i, col := range cols {
		cb, err := r.ColumnBounds(t.ID, col.ID)
		if err != nil {
			return 0, err
		}
		var st stats.Column
		if cb.Fill(pos, &st) {
			fileUnit.stats[i] = &st
		}
		rgs, err := r.RowGroupStats(t.ID, col.ID, f.ID)
		if err != nil {
			return 0, err
		}
		for _, rg := range rgs {
			u := rgUnits[rg.Index]
			if u == nil {
				u = &verifyUnit{name: fmt.Sprintf("row group %d", rg.Index), first: rg.FirstRow,
					end: rg.FirstRow + rg.Stats.RowCount, stats: make([]*stats.Column, len(cols))}
				rgUnits[rg.Index] = u
				order = append(order, rg.Index)
			}
			st := rg.Stats
			u.stats[i] = &st
		}
	}
	slices.Sort(order)
	// A column with no stats stored for this file (one the file lacks) is
	// not read: naming it would fail the query for every column.
	keep := 0
	for i := range cols {
		stored := fileUnit.stats[i] != nil
		for _, u := range rgUnits {
			stored = stored || u.stats[i] != nil
		}
		if !stored {
			continue
		}
		cols[keep], codecs[keep], fileUnit.stats[keep] = cols[i], codecs[i], fileUnit.stats[i]
		for _, u := range rgUnits {
			u.stats[keep] = u.stats[i]
		}
		keep++
	}
	cols, codecs, fileUnit.stats = cols[:keep], codecs[:keep], fileUnit.stats[:keep]
	// DuckDB cannot number a file's rows when the file has a column named
	// file_row_number: then only the file's stats are checked.
	numbered := true
	for _, col := range all {
		if strings.EqualFold(col.Name, "file_row_number") {
			numbered = false
		}
	}
	chunk := verifyChunkFor(len(cols))
	for lo := 0; lo < len(cols); lo += chunk {
		hi := min(lo+chunk, len(cols))
		n, err := verifyUnits(ctx, e, path, cols[lo:hi], codecs[lo:hi], []*verifyUnit{sliceUnit(&fileUnit, lo, hi)}, false, bad)
		if err != nil {
			return 0, err
		}
		checked += n
		if !numbered || len(order) == 0 {
			continue
		}
		units := make([]*verifyUnit, len(order))
		for j, idx := range order {
			units[j] = sliceUnit(rgUnits[idx], lo, hi)
		}
		if n, err = verifyUnits(ctx, e, path, cols[lo:hi], codecs[lo:hi], units, true, bad); err != nil {
			return 0, err
		}
		checked += n
	}
	return checked, nil
}

func sliceUnit(u *verifyUnit, lo, hi int) *verifyUnit {
	cp := *u
	cp.stats = u.stats[lo:hi]
	return &cp
}

// verifyUnits reads, in one query, min, max (NaN aside), NULL and NaN
// counts of every column for every unit, and reports each stored stat the
// data contradicts. Row groups are told apart by row number: each row
// belongs to the last unit starting at or before it (an ASOF join).
func verifyUnits(ctx context.Context, e *engine.Engine, path string, cols []catalog.Column, codecs []*types.Codec,
	units []*verifyUnit, byRowGroup bool, bad func(string, ...any)) (int, error) {
	// FILTER clauses cost DuckDB several times the plain aggregate, so
	// only float columns (NaN aside) have them.
	aggs := []string{"count(*)"}
	for _, col := range cols {
		c := "d." + sqllex.QuoteName(col.Name)
		if dt := types.DuckDBName(col.Type); dt != "" {
			c = fmt.Sprintf("CAST(%s AS %s)", c, dt)
		}
		if col.Type.Kind == types.KindFloat || col.Type.Kind == types.KindDouble {
			aggs = append(aggs, fmt.Sprintf("CAST(min(%[1]s) FILTER (WHERE NOT isnan(%[1]s)) AS VARCHAR), CAST(max(%[1]s) FILTER (WHERE NOT isnan(%[1]s)) AS VARCHAR), count(%[1]s), count(*) FILTER (WHERE isnan(%[1]s))", c))
		} else {
			aggs = append(aggs, fmt.Sprintf("CAST(min(%[1]s) AS VARCHAR), CAST(max(%[1]s) AS VARCHAR), count(%[1]s), 0", c))
		}
	}
	var q string
	if byRowGroup {
		var starts []string
		for i, u := range units {
			starts = append(starts, fmt.Sprintf("(%d, %d)", i, u.first))
		}
		// can_have_nan: DuckDB must not take the file's own min/max (which
		// leave NaN out) as proof that no NaN is there, or it folds the very
		// checks verify makes (engine's viewSQL says more).
		q = fmt.Sprintf(`SELECT u.unit, %s FROM read_parquet(?, file_row_number = true, can_have_nan = true) d
			ASOF JOIN (VALUES %s) u(unit, start_row) ON d.file_row_number >= u.start_row GROUP BY u.unit`,
			strings.Join(aggs, ", "), strings.Join(starts, ", "))
	} else {
		q = fmt.Sprintf("SELECT 0, %s FROM read_parquet(?, can_have_nan = true) d", strings.Join(aggs, ", "))
	}
	rows, err := e.DB().QueryContext(ctx, q, e.DuckPath(path))
	if err != nil {
		for _, col := range cols {
			bad("column %s: unreadable: %v", col.Name, err)
		}
		return 0, nil
	}
	defer rows.Close()
	checked := 0
	for rows.Next() {
		var unit int
		var total int64
		lo, hi := make([]*string, len(cols)), make([]*string, len(cols))
		nulls, nans := make([]int64, len(cols)), make([]int64, len(cols))
		dst := []any{&unit, &total}
		for i := range cols {
			dst = append(dst, &lo[i], &hi[i], &nulls[i], &nans[i])
		}
		if err := rows.Scan(dst...); err != nil {
			return 0, err
		}
		for i := range nulls {
			nulls[i] = total - nulls[i] // count(x) was read
		}
		if unit < 0 || unit >= len(units) {
			continue
		}
		u := units[unit]
		for i, col := range cols {
			st := u.stats[i]
			if st == nil {
				continue
			}
			checked++
			codec := codecs[i]
			check := func(text *string, b stats.Maybe[[]byte], isMin bool, which string) {
				if stored, ok := boundExcludes(codec, text, b, isMin); ok {
					bad("column %s %s: stored %s %s excludes the value %s present in the data", col.Name, u.name, which, stored, *text)
				}
			}
			check(lo[i], st.Min, true, "min")
			check(hi[i], st.Max, false, "max")
			if st.NullCount.Known && st.NullCount.V != nulls[i] {
				bad("column %s %s: stored null_count %d, the data has %d", col.Name, u.name, st.NullCount.V, nulls[i])
			}
			if st.ContainsNaN.Known && !st.ContainsNaN.V && nans[i] > 0 {
				bad("column %s %s: stored contains_nan=false, the data has %d NaN", col.Name, u.name, nans[i])
			}
		}
	}
	return checked, rows.Err()
}

// verifyFilter checks a file's membership filter for a column against the
// distinct values DuckDB reads: a value the filter rules out would make
// plans skip a file that holds it. It counts one unit when it checked.
func verifyFilter(ctx context.Context, e *engine.Engine, r *catalog.Reader, sigs *catalog.SignatureReader, t catalog.Table, pos int, fileID int64, path string, col catalog.Column,
	codec *types.Codec, bad func(string, ...any)) (int, error) {
	fl, err := r.Filters(t.ID, col.ID)
	if err != nil || fl == nil || !fl.Has(pos) {
		return 0, err
	}
	sig, hasSig, err := sigs.Of(fileID)
	if err != nil {
		return 0, err
	}
	c := "d." + sqllex.QuoteName(col.Name)
	rows, err := e.DB().QueryContext(ctx, fmt.Sprintf("SELECT DISTINCT CAST(%s AS VARCHAR) FROM read_parquet(?, can_have_nan = true) d WHERE %s IS NOT NULL", c, c), e.DuckPath(path))
	if err != nil {
		bad("column %s: unreadable: %v", col.Name, err)
		return 1, nil
	}
	defer rows.Close()
	missing, first := 0, ""
	sigMissing, sigFirst := 0, ""
	for rows.Next() {
		var text string
		if err := rows.Scan(&text); err != nil {
			return 1, err
		}
		v, err := codec.Parse(text)
		if err != nil {
			continue
		}
		enc, err := codec.Encode(v)
		if err != nil {
			continue
		}
		if !fl.MayContain(pos, enc) {
			if missing == 0 {
				first = text
			}
			missing++
		}
		if hasSig && !membership.SignatureMayContain(sig, membership.Hash(enc)) {
			if sigMissing == 0 {
				sigFirst = text
			}
			sigMissing++
		}
	}
	if err := rows.Err(); err != nil {
		return 1, err
	}
	if missing > 0 {
		bad("column %s: the membership filter rules out %d values the file holds (first: %s)", col.Name, missing, first)
	}
	if sigMissing > 0 {
		bad("column %s: the membership index's signature rules out %d values the file holds (first: %s)", col.Name, sigMissing, sigFirst)
	}
	return 1, nil
}

// boundExcludes says whether a stored bound leaves out a value the data
// holds (text, DuckDB's text of the unit's least or greatest value): a
// min above it, or a max below it. stored is the bound's text, for the
// message. A value that does not parse or encode proves nothing.
func boundExcludes(codec *types.Codec, text *string, b stats.Maybe[[]byte], isMin bool) (stored string, excludes bool) {
	if text == nil || !b.Known {
		return "", false
	}
	v, err := codec.Parse(*text)
	if err != nil {
		return "", false
	}
	enc, err := codec.Encode(v)
	if err != nil {
		return "", false
	}
	if cmp := codec.Compare(b.V, enc); isMin && cmp <= 0 || !isMin && cmp >= 0 {
		return "", false
	}
	stored = "?"
	if sv, err := codec.Decode(b.V); err == nil {
		stored = codec.Format(sv)
	}
	return stored, true
}
