package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/rocklake/rocklake/bench/internal/bigevents"
	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/internal/s3test"
	"github.com/rocklake/rocklake/storage"
)

// bigLookup writes one object of rows rows in bench/partial's layout,
// registers it, and looks ids up in it: cold (an empty cache) by the
// partial scan, warm (its parts cached), and by the whole-file path (the
// object fetched whole into an empty cache). Figures are medians of runs.
func bigLookup(ctx context.Context, srv *s3test.Server, work string, rows, runs int, delay time.Duration, jsonOut string) {
	path := filepath.Join(work, "big.parquet")
	if err := bigevents.Write(path, bigevents.File{Rows: rows, RowGroup: 1_000_000, PageBytes: 80_000, TSBase: 1_700_000_000_000_000, Seed: 7}); err != nil {
		fail(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		fail(err)
	}
	if err := put(srv, "s3://lake/big/big.parquet", data); err != nil {
		fail(err)
	}
	size := int64(len(data))
	log.Printf("wrote and uploaded one object of %d rows, %d bytes", rows, size)
	c, err := catalog.Create(filepath.Join(work, "biglake"), catalog.Options{})
	if err != nil {
		fail(err)
	}
	defer c.Close()
	st, err := storage.NewS3(ctx, storage.S3OptionsFromEnv())
	if err != nil {
		fail(err)
	}
	if _, err := ingest.Add(c, "big", []string{"s3://lake/big/big.parquet"}, ingest.Options{Create: true, Objects: st, NoAutoFilters: true}); err != nil {
		fail(err)
	}
	e, err := engine.New(c)
	if err != nil {
		fail(err)
	}
	defer e.Close()
	cacheDir := filepath.Join(work, "bigcache")
	e.UseObjects(st, &storage.Cache{Dir: cacheDir})

	type run struct {
		reads engine.ObjectReads
		d     time.Duration
		how   string
	}
	lookup := func(id int64, mode engine.PartialMode) run {
		t0 := time.Now()
		r, err := e.Query(ctx, fmt.Sprintf("SELECT * FROM big WHERE id = %d", id), engine.QueryOptions{Snapshot: catalog.Latest, Partial: mode})
		if err != nil {
			fail(err)
		}
		d := time.Since(t0)
		if len(r.Rows) != 1 || r.Rows[0][0] == nil || *r.Rows[0][0] != fmt.Sprint(id) {
			fail(fmt.Sprintf("id %d: %v rows, want one", id, r.Rows))
		}
		how := ""
		for _, rd := range r.Tables[0].Reads {
			how = rd.How
		}
		return run{r.Objects, d, how}
	}
	var cold, warm, whole []run
	var kept []int64
	for i := range runs {
		id := int64((i*7919 + 12345) % rows)
		lookup(id, engine.PartialAuto) // parses the text: not timed
		os.RemoveAll(cacheDir)
		cold = append(cold, lookup(id, engine.PartialAuto))
		warm = append(warm, lookup(id, engine.PartialAuto))
		os.RemoveAll(cacheDir)
		whole = append(whole, lookup(id, engine.PartialOff))
		k, err := pagesHolding(path, id)
		if err != nil {
			fail(err)
		}
		kept = append(kept, k)
	}
	med := func(rs []run) run {
		s := append([]run(nil), rs...)
		sort.Slice(s, func(i, j int) bool { return s[i].d < s[j].d })
		return s[len(s)/2]
	}
	c0, w0, h0 := med(cold), med(warm), med(whole)
	sort.Slice(kept, func(i, j int) bool { return kept[i] < kept[j] })
	k := kept[len(kept)/2]
	var maxRatio float64
	for i := range cold {
		maxRatio = max(maxRatio, float64(cold[i].reads.Bytes)/float64(kept[i]))
	}
	figs := []figure{
		{What: "point lookup, partial scan, cold", Requests: c0.reads.Requests, Bytes: c0.reads.Bytes, Millis: ms(c0.d),
			Note: fmt.Sprintf("%.2fx the pages holding the row (worst of %d: %.2fx); read %s", float64(c0.reads.Bytes)/float64(k), runs, maxRatio, c0.how)},
		{What: "point lookup, partial scan, parts cached", Requests: w0.reads.Requests, Bytes: w0.reads.Bytes, Millis: ms(w0.d), Note: "one HEAD checks the ETag"},
		{What: "point lookup, whole object fetched", Requests: h0.reads.Requests, Bytes: h0.reads.Bytes, Millis: ms(h0.d), Note: "partial scan off"},
		{What: "pages holding the row (every column)", Bytes: k},
		{What: "the object", Bytes: size},
	}
	fmt.Printf("one object of %d rows (%d bytes), delay %v per request; medians of %d lookups\n\n", rows, size, delay, runs)
	fmt.Printf("%-46s %10s %12s %10s  %s\n", "", "requests", "bytes", "ms", "")
	for _, f := range figs {
		fmt.Printf("%-46s %10d %12d %10.1f  %s\n", f.What, f.Requests, f.Bytes, f.Millis, f.Note)
	}
	fmt.Printf("\nfetched: %.2fx the pages holding the row, %.4f of the object (%.0fx fewer bytes than fetching it whole)\n",
		float64(c0.reads.Bytes)/float64(k), float64(c0.reads.Bytes)/float64(size), float64(h0.reads.Bytes)/float64(c0.reads.Bytes))
	if jsonOut != "" {
		b, _ := json.MarshalIndent(map[string]any{"rows": rows, "object_bytes": size, "delay_ms": ms(delay), "runs": runs,
			"kept_page_bytes": k, "fetched_over_kept": float64(c0.reads.Bytes) / float64(k), "worst_fetched_over_kept": maxRatio, "figures": figs}, "", "  ")
		if err := os.WriteFile(jsonOut, append(b, '\n'), 0o644); err != nil {
			fail(err)
		}
	}
}

// pagesHolding sums, over every column, the compressed sizes of the data
// pages (offset index) holding row (the id is the row number).
func pagesHolding(path string, row int64) (int64, error) {
	rdr, err := file.OpenParquetFile(path, false)
	if err != nil {
		return 0, err
	}
	defer rdr.Close()
	md := rdr.MetaData()
	first := int64(0)
	var total int64
	for g := range md.NumRowGroups() {
		n := md.RowGroup(g).NumRows()
		if row >= first && row < first+n {
			rg, err := rdr.GetPageIndexReader().RowGroup(g)
			if err != nil || rg == nil {
				return 0, fmt.Errorf("%s: no page index", path)
			}
			for c := range md.NumColumns() {
				oi, err := rg.GetOffsetIndex(c)
				if err != nil || oi == nil {
					return 0, fmt.Errorf("%s: no offset index", path)
				}
				locs := oi.GetPageLocations()
				p := sort.Search(len(locs), func(k int) bool { return first+locs[k].FirstRowIndex > row }) - 1
				total += int64(locs[p].CompressedPageSize)
			}
		}
		first += n
	}
	return total, nil
}
