package catalog

import (
	"fmt"
	"testing"
)

// BenchmarkAppendAfterOtherTable: one file appended to a table of 20,000
// files right after a commit to another table, as loads of several tables
// in turn commit. The append widens the table's stored stats; a commit
// that took them for another state's would fold every file again.
func BenchmarkAppendAfterOtherTable(b *testing.B) {
	c := newMemCatalog(b)
	commit(b, c, func(tx *Txn) {
		tx.CreateTable("big", []ColumnDef{{Name: "x", Type: "BIGINT"}})
		tx.CreateTable("other", []ColumnDef{{Name: "x", Type: "BIGINT"}})
	})
	n := 0
	for range 4 {
		files := make([]NewFile, 5000)
		for i := range files {
			n++
			files[i] = intFile(b, fmt.Sprintf("/d/big/%d.parquet", n), int64(n), int64(n+10), 0)
		}
		commit(b, c, func(tx *Txn) { tx.AddFiles("big", files...) })
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		n++
		commit(b, c, func(tx *Txn) { tx.AddFiles("other", intFile(b, fmt.Sprintf("/d/other/%d.parquet", n), 1, 2, 0)) })
		b.StartTimer()
		commit(b, c, func(tx *Txn) { tx.AddFiles("big", intFile(b, fmt.Sprintf("/d/big/x%d.parquet", n), 1, 2, 0)) })
	}
}

// BenchmarkCommitManyFiles: one commit of 10,000 files to a new table,
// with reads kept for a retry (as on PostgreSQL) and without (Pebble and
// the memory store; reread.go): what keeping them costs a commit that
// never retries.
func BenchmarkCommitManyFiles(b *testing.B) {
	// As outside tests: the check of served builds keeps every write.
	defer func(r, v bool) { recordAllStores, verifyRereads = r, v }(recordAllStores, verifyRereads)
	verifyRereads = false
	files := make([]NewFile, 10000)
	for i := range files {
		files[i] = intFile(b, fmt.Sprintf("/d/big/%d.parquet", i), int64(i), int64(i+10), 0)
	}
	for _, keep := range []bool{false, true} {
		b.Run(fmt.Sprintf("keep-reads=%v", keep), func(b *testing.B) {
			recordAllStores = keep
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				c := newMemCatalog(b)
				commit(b, c, func(tx *Txn) { tx.CreateTable("big", []ColumnDef{{Name: "x", Type: "BIGINT"}}) })
				b.StartTimer()
				commit(b, c, func(tx *Txn) { tx.AddFiles("big", files...) })
			}
		})
	}
}
