package prune

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/types"
)

// Catalog membership filters: chosen automatically for mostly-distinct
// columns, kept for later registrations, never drop a file holding the
// value (checked against the data written), and skip almost every file
// for absent values.
func TestMembershipFilters(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(11, 12))
	const files, rows = 24, 1200
	type row struct {
		uid  *int64
		name string
		k    int64
	}
	data := make([][]row, files)
	write := func(f int) string {
		var uids, names, ks []*types.Value
		for i := range rows {
			rw := row{name: fmt.Sprintf("user-%x", r.Uint64()), k: int64(r.IntN(5))}
			if i%50 != 7 { // some NULLs
				x := r.Int64()
				rw.uid = &x
				v := types.IntValue(x)
				uids = append(uids, &v)
			} else {
				uids = append(uids, nil)
			}
			n, k := types.StringValue(rw.name), types.IntValue(rw.k)
			names, ks = append(names, &n), append(ks, &k)
			data[f] = append(data[f], rw)
		}
		p := filepath.Join(dir, fmt.Sprintf("f%02d.parquet", f))
		err := pqwrite.Write(p, []pqwrite.Column{
			{Name: "uid", Type: types.MustParseType("int64"), Values: uids},
			{Name: "name", Type: types.MustParseType("varchar"), Values: names},
			{Name: "k", Type: types.MustParseType("int64"), Values: ks},
		}, pqwrite.Options{RowGroupRows: 400})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	var first, second []string
	for f := range files {
		p := write(f)
		if f < files/2 {
			first = append(first, p)
		} else {
			second = append(second, p)
		}
	}
	c, _ := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	if _, err := ingest.Add(c, "t", first, ingest.Options{Create: true}); err != nil {
		t.Fatal(err)
	}
	// The second registration names no column: uid and name keep getting
	// filters because they have them.
	if _, err := ingest.Add(c, "t", second, ingest.Options{}); err != nil {
		t.Fatal(err)
	}
	rd, _ := c.Read(catalog.Latest)
	defer rd.Close()
	tb, _ := rd.Table("t")
	for name, want := range map[string]int{"uid": files, "name": files, "k": 0} {
		col, _ := rd.Column(tb.ID, name)
		fl, err := rd.Filters(tb.ID, col.ID)
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		if fl != nil {
			got = fl.Count()
		}
		if got != want {
			t.Errorf("column %s: %d files with filters, want %d", name, got, want)
		}
	}

	keptFiles := func(pred string) map[string]bool {
		p, err := PlanTable(rd, "t", pred, Options{FilesOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, kf := range p.KeptFiles {
			out[filepath.Base(kf.Path)] = true
		}
		return out
	}
	// Present values: the file holding each is kept, alone or in an IN,
	// or ANDed with a column without filters.
	checks := 0
	for range 150 {
		f, i := r.IntN(files), r.IntN(rows)
		rw := data[f][i]
		name := fmt.Sprintf("f%02d.parquet", f)
		preds := []string{fmt.Sprintf("name = '%s'", rw.name), fmt.Sprintf("name IN ('%s', 'nobody') AND k = %d", rw.name, rw.k)}
		if rw.uid != nil {
			preds = append(preds, fmt.Sprintf("uid = %d", *rw.uid), fmt.Sprintf("uid IN (%d, 42) OR k = 99", *rw.uid))
		}
		for _, pred := range preds {
			if !keptFiles(pred)[name] {
				t.Fatalf("%s: %s holds a matching row but was skipped", pred, name)
			}
			checks++
		}
	}
	// Absent values: the share of files kept is the measured false-positive
	// rate. min/max keep every file (random data).
	var kept, total int
	for range 400 {
		preds := []string{fmt.Sprintf("uid = %d", r.Int64()), fmt.Sprintf("name = 'user-absent-%d'", r.Uint64())}
		for _, pred := range preds {
			kept += len(keptFiles(pred))
			total += files
		}
	}
	noFilter, _ := PlanTable(rd, "t", fmt.Sprintf("uid = %d", r.Int64()), Options{FilesOnly: true, NoFilters: true})
	t.Logf("%d present-value checks; absent values: %d of %d files kept (%.4f%%); without filters %d of %d",
		checks, kept, total, 100*float64(kept)/float64(total), noFilter.Files.Kept, files)
	if noFilter.Files.Kept != files {
		t.Errorf("without filters min/max should keep all %d files, kept %d", files, noFilter.Files.Kept)
	}
	if float64(kept) > 0.01*float64(total) {
		t.Errorf("filters kept %d of %d files for absent values", kept, total)
	}
}

// A column named for filters that cannot have them is an error naming it;
// a table created with NoAutoFilters has none.
func TestMembershipFilterOptions(t *testing.T) {
	dir := t.TempDir()
	var vals []*types.Value
	for i := range 3000 {
		v := types.FloatValue(float64(i))
		vals = append(vals, &v)
	}
	p := filepath.Join(dir, "d.parquet")
	if err := pqwrite.Write(p, []pqwrite.Column{{Name: "x", Type: types.MustParseType("float64"), Values: vals}}, pqwrite.Options{}); err != nil {
		t.Fatal(err)
	}
	c, _ := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	for _, cols := range [][]string{{"x"}, {"nope"}} {
		_, err := ingest.Add(c, "t", []string{p}, ingest.Options{Create: true, FilterColumns: cols})
		if err == nil || !strings.Contains(err.Error(), cols[0]) {
			t.Errorf("filter on %v: %v", cols, err)
		}
	}
	if snaps, _ := c.Snapshots(); len(snaps) != 1 {
		t.Errorf("a refused registration committed: %d snapshots", len(snaps))
	}
}
