package catalog

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/rocklake/rocklake/kv"
	"github.com/rocklake/rocklake/membership"
)

// BenchmarkColdMemberProbe: one `col = v` probe over 10,000 files of
// 2,000 distinct values each, from a catalog just opened (read-only, so
// Pebble's block cache is empty; the OS page cache is not), through the
// membership index (index) and by reading every file's filter as planning
// did before slabs (filters), the table's file list (which every plan
// builds first) read before the timer; fileset times that list alone.
// Reports the stored bytes each probe read.
//
//	go test ./catalog -run '^$' -bench ColdMemberProbe -benchtime 20x
func BenchmarkColdMemberProbe(b *testing.B) {
	const files, distinct = 10_000, 2_000
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("rocklake-bench-probe-%d-%d", files, distinct))
	if _, err := os.Stat(filepath.Join(dir, "done")); err != nil {
		os.RemoveAll(dir)
		c, err := Create(dir, Options{})
		if err != nil {
			b.Fatal(err)
		}
		tx, _ := c.Begin()
		tx.CreateTable("t", []ColumnDef{{Name: "user_id", Type: "bigint"}})
		if _, err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
		r := rand.New(rand.NewPCG(1, 2))
		// Ten commits of 1,000 files, as ten `rocklake add` runs would.
		for batch := range 10 {
			tx, _ := c.Begin()
			var nfs []NewFile
			for f := range files / 10 {
				hs := make([]uint64, distinct)
				for i := range hs {
					hs[i] = membership.Hash(enc64(int64(r.Uint64N(1 << 40))))
				}
				data, d, err := membership.Build(hs)
				if err != nil {
					b.Fatal(err)
				}
				fl := &Filter{Kind: membership.Kind, Data: data, Distinct: int64(d), Signature: membership.BuildSignature(hs, membership.SignatureBlocks(d))}
				nfs = append(nfs, NewFile{Path: fmt.Sprintf("/d/%d-%d.parquet", batch, f), RecordCount: distinct, RowGroupCount: 1,
					Columns: []FileColumn{{Path: []string{"user_id"}, Filter: fl}}})
			}
			tx.AddFiles("t", nfs...)
			if _, err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
		}
		if err := c.Close(); err != nil {
			b.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "done"), nil, 0o644)
	}
	open := func(b *testing.B) (*Catalog, *Reader, int64, int64) {
		c, err := Open(dir, Options{Pebble: kv.PebbleOptions{ReadOnly: true}})
		if err != nil {
			b.Fatal(err)
		}
		rd, err := c.Read(Latest)
		if err != nil {
			b.Fatal(err)
		}
		tb, err := rd.Table("t")
		if err != nil {
			b.Fatal(err)
		}
		cols, _ := rd.Columns(tb.ID)
		return c, rd, tb.ID, cols[0].ID
	}
	// The file list every plan reads first; built before the timer in the
	// two probes, so that they time the probe alone.
	b.Run("fileset", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			c, rd, table, _ := open(b)
			b.StartTimer()
			if _, err := rd.FileSet(table); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			rd.Close()
			c.Close()
			b.StartTimer()
		}
	})
	r := rand.New(rand.NewPCG(3, 4))
	b.Run("index", func(b *testing.B) {
		var bytes, reads, candidates int64
		for b.Loop() {
			b.StopTimer()
			c, rd, table, col := open(b)
			v := enc64(int64(r.Uint64N(1 << 40)))
			if _, err := rd.FileSet(table); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			mi, err := rd.MemberIndex(table, col)
			if err != nil {
				b.Fatal(err)
			}
			kept := 0
			for i := range files {
				if !mi.Absent(i, v) {
					kept++
				}
			}
			b.StopTimer()
			st := mi.Stats()
			bytes, reads, candidates = bytes+st.Bytes, reads+st.Reads, candidates+st.Confirmed
			rd.Close()
			c.Close()
			b.StartTimer()
		}
		b.ReportMetric(float64(bytes)/float64(b.N), "stored-B/op")
		b.ReportMetric(float64(reads)/float64(b.N), "reads/op")
		b.ReportMetric(float64(candidates)/float64(b.N), "confirmed/op")
	})
	b.Run("filters", func(b *testing.B) {
		var bytes int64
		for b.Loop() {
			b.StopTimer()
			c, rd, table, col := open(b)
			v := enc64(int64(r.Uint64N(1 << 40)))
			if _, err := rd.FileSet(table); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			fl, err := rd.Filters(table, col)
			if err != nil {
				b.Fatal(err)
			}
			kept := 0
			for i := range files {
				if fl.MayContain(i, v) {
					kept++
				}
			}
			b.StopTimer()
			bytes += fl.Bytes()
			rd.Close()
			c.Close()
			b.StartTimer()
		}
		b.ReportMetric(float64(bytes)/float64(b.N), "stored-B/op")
	})
}

func enc64(x int64) []byte {
	return []byte{byte(uint64(x) >> 56), byte(uint64(x) >> 48), byte(uint64(x) >> 40), byte(uint64(x) >> 32), byte(uint64(x) >> 24), byte(uint64(x) >> 16), byte(uint64(x) >> 8), byte(x) ^ 0}
}
