package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/expr"
	"github.com/rocklake/rocklake/pqmeta"
	"github.com/rocklake/rocklake/prune"
	"github.com/rocklake/rocklake/storage"
	"github.com/rocklake/rocklake/types"
)

// A kept object that the cost rule would read by the page path is read
// from the store by byte ranges, before anything is fetched whole: its
// tail (the footer, usually the page index), then, per row group and
// column, the byte ranges of the pages holding the kept rows
// (pageByteRanges), coalesced and fetched a few at a time by a
// storage.PartReader, which also keeps them in the cache as parts of the
// object. Every other kept object — read whole or by the row-range SQL,
// both of which DuckDB reads from a local file — is fetched whole, as
// before (fetchObjects).

// objectPage is the page path's read of one kept object: its plan, the
// view's SQL for it and its rows.
type objectPage struct {
	fp  filePlan
	sql string
	ld  *pageLoad
}

// objectPageJob is one kept object of one view that the page path may
// read.
type objectPageJob struct {
	view, file int
	kf         prune.KeptFile
	cols       []catalog.Column
	odd        bool
	consts     fileConstants
	b          *expr.Bound
}

// objectPageJobs lists the kept objects of one view (view is its index)
// that the page path may read, by the conditions partialView applies.
func objectPageJobs(view int, cols []catalog.Column, files []string, kept []prune.KeptFile, odd map[string]bool, consts partConsts,
	mode PartialMode, noPages bool, b *expr.Bound) []objectPageJob {
	if mode == PartialOff || mode == PartialForceRows || noPages || len(kept) != len(files) {
		return nil
	}
	for _, c := range cols {
		if types.SameIdent(c.Name, "file_row_number") {
			return nil
		}
	}
	var jobs []objectPageJob
	for i, f := range files {
		if catalog.IsObject(f) && kept[i].Ranges != nil {
			jobs = append(jobs, objectPageJob{view: view, file: i, kf: kept[i], cols: cols, odd: odd[f], consts: consts[f], b: b})
		}
	}
	return jobs
}

// objectPages reads, by ranged requests, the kept pages of the objects
// among jobs that the cost rule sends to the page path, objectWorkers
// objects at a time; it returns them by view and file index. An object
// the page path does not read is left out (it is fetched whole). An
// object that changed or vanished since it was registered, or that the
// store fails to serve, fails the query, naming it: never a fallback that
// could pair bytes of two versions.
func (e *Engine) objectPages(ctx context.Context, jobs []objectPageJob, stamps map[string]fileStamp, mode PartialMode, res *Result) (map[int]map[int]*objectPage, error) {
	out := map[int]map[int]*objectPage{}
	if len(jobs) == 0 {
		return out, nil
	}
	st, cache, err := e.objectStore()
	if err != nil {
		return nil, err
	}
	pages := make([]*objectPage, len(jobs))
	stats := make([]storage.PartStats, len(jobs))
	// ForEach stops at a store that cannot be reached and reports it once.
	ferr := storage.ForEach(len(jobs), objectWorkers, func(i int) error {
		var err error
		pages[i], stats[i], err = readObjectPages(ctx, st, cache, jobs[i], stamps[jobs[i].kf.Path], mode)
		return err
	})
	var fetched int64
	for i, j := range jobs {
		res.Objects.Requests += stats[i].Requests
		res.Objects.Bytes += stats[i].Bytes
		fetched += stats[i].Bytes
		if pages[i] != nil {
			if out[j.view] == nil {
				out[j.view] = map[int]*objectPage{}
			}
			out[j.view][j.file] = pages[i]
			res.Objects.Objects++
			res.Objects.InPart++
		}
	}
	if fetched > 0 {
		// Parts grow the cache as fetches do; failing to trim costs space.
		_ = cache.Trim(nil)
	}
	if err := ferr; err != nil {
		if errors.Is(err, storage.ErrChanged) || errors.Is(err, storage.ErrNotFound) {
			return nil, fmt.Errorf("%w: %w; `rocklake verify TABLE` lists every file that changed", ErrDataFileChanged, err)
		}
		return nil, err
	}
	return out, nil
}

// readObjectPages is objectPages for one object: nil (and no error) when
// the page path does not read it.
func readObjectPages(ctx context.Context, st storage.Store, cache *storage.Cache, j objectPageJob, s fileStamp, mode PartialMode) (*objectPage, storage.PartStats, error) {
	obj := storage.Object{Location: j.kf.Path, Size: s.size, ETag: s.etag}
	var pr *storage.PartReader
	var openErr error
	fp := partialReadWith(j.kf, mode, func() (*pqmeta.File, error) {
		if pr, openErr = storage.OpenParts(ctx, st, cache, obj, storage.FooterPrefetch); openErr != nil {
			return nil, openErr
		}
		f, err := pqmeta.ReadAt(pr, obj.Size)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", obj.Location, err)
		}
		return f, nil
	})
	stats := func() storage.PartStats {
		if pr == nil {
			return storage.PartStats{}
		}
		return pr.Stats()
	}
	if openErr != nil {
		return nil, stats(), openErr
	}
	if pr != nil && pr.Err() != nil {
		return nil, stats(), pr.Err()
	}
	if fp.read.How != ReadRowRanges || pageWhy(&fp, j.cols, j.odd, j.consts, mode, false) != "" {
		return nil, stats(), nil
	}
	sql, ld, err := tryPages(ctx, &fp, j.cols, pr, pr.Prefetch, j.consts, mode, j.b)
	if perr := pr.Err(); perr != nil {
		// arrow-go may have wrapped or dropped the store's error.
		return nil, stats(), perr
	}
	if err != nil {
		// Not a store's error: a file the page path does not read; it is
		// fetched whole and read as any local file.
		return nil, stats(), nil
	}
	return &objectPage{fp: fp, sql: sql, ld: ld}, stats(), nil
}

// prefetchPages tells pf the byte ranges arrow-go reads to decode rows in
// (within row group g) of the columns which: the row group's page index,
// then for each column its dictionary page and, per range of rows, the
// data pages from the one holding the first row to the one holding the
// last (the offset index's page locations) — at least readAhead bytes from
// where each read starts, since arrow-go's buffered stream fills its
// buffer whole (within the column chunk) when a page is smaller. Without an offset index the column chunk is read whole. Bytes
// it misses are still read, on demand: a wrong guess costs requests,
// never answers.
func prefetchPages(rdr *file.Reader, pf func([]storage.Range) error, cols []pageColumn, which []int, g int, in []rowSpan, readAhead int64) error {
	md := rdr.MetaData().RowGroup(g)
	var idx []storage.Range
	for c := 0; c < md.NumColumns(); c++ {
		cc, err := md.ColumnChunk(c)
		if err != nil {
			return nil // arrow-go reports it when it reads
		}
		if l := cc.GetColumnIndexLocation(); l != nil {
			idx = append(idx, storage.Range{Off: l.Offset, Len: int64(l.Length)})
		}
		if l := cc.GetOffsetIndexLocation(); l != nil {
			idx = append(idx, storage.Range{Off: l.Offset, Len: int64(l.Length)})
		}
	}
	if err := pf(idx); err != nil {
		return err
	}
	var want []storage.Range
	var rgIdx *metadata.RowGroupPageIndexReader
	if r := rdr.GetPageIndexReader(); r != nil {
		if rg, err := r.RowGroup(g); err == nil {
			rgIdx = rg
		}
	}
	for _, i := range which {
		cc, err := md.ColumnChunk(cols[i].leaf)
		if err != nil {
			return nil
		}
		start := cc.DataPageOffset()
		if cc.HasDictionaryPage() && cc.DictionaryPageOffset() > 0 && cc.DictionaryPageOffset() < start {
			start = cc.DictionaryPageOffset()
		}
		end := start + cc.TotalCompressedSize()
		var locs []*metadata.PageLocation
		if rgIdx != nil {
			if oi, err := rgIdx.GetOffsetIndex(cols[i].leaf); err == nil && oi != nil {
				locs = oi.GetPageLocations()
			}
		}
		if len(locs) == 0 {
			want = append(want, storage.Range{Off: start, Len: end - start})
			continue
		}
		if locs[0].Offset > start {
			// The dictionary page.
			want = append(want, storage.Range{Off: start, Len: min(end, max(locs[0].Offset, start+readAhead)) - start})
		}
		for _, s := range in {
			p0 := sort.Search(len(locs), func(k int) bool { return locs[k].FirstRowIndex > s.lo }) - 1
			p1 := sort.Search(len(locs), func(k int) bool { return locs[k].FirstRowIndex >= s.hi }) - 1
			if p0 < 0 || p1 < p0 {
				want = append(want, storage.Range{Off: start, Len: end - start})
				continue
			}
			lo := locs[p0].Offset
			hi := min(end, max(locs[p1].Offset+int64(locs[p1].CompressedPageSize), lo+readAhead))
			if hi > lo {
				want = append(want, storage.Range{Off: lo, Len: hi - lo})
			}
		}
	}
	return pf(want)
}
