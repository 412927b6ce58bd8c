package ingest

import (
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/internal/testkit"
)

// FuzzRegister feeds mutated Parquet files to the registration built from
// them (the decoder itself is pqmeta's FuzzInspect): a clear error or a
// registration, never a panic or a hang.
func FuzzRegister(f *testing.F) {
	testkit.FuzzParquet(f, fuzzOne)
}

func fuzzOne(p string) {
	fi, err := inspect(p)
	if err != nil {
		return
	}
	_ = fi.creatable()
	cols, err := catalog.PlanColumns(fi.columnDefs())
	if err != nil {
		return
	}
	_, _ = fi.newFile("t", cols, false)
}
