package ingest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/pqmeta"
	"github.com/rocklake/rocklake/stats"
)

// sharedFixtures lists ../shared/testdata/parquet-testing, skipping the test
// where that directory is absent (a user's clone has none).
func sharedFixtures(t *testing.T) []string {
	t.Helper()
	root := filepath.Join("..", "..", "shared", "testdata", "parquet-testing")
	if _, err := os.Stat(root); err != nil {
		t.Skipf("parquet-testing fixtures not found at %s (they live beside the repository in CI): %v", root, err)
	}
	var out []string
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".parquet") {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// fixtureFailures are the fixtures that must be refused, with why.
var fixtureFailures = map[string]error{
	"PARQUET-1481.parquet": pqmeta.ErrCorruptFooter, // a physical type of -7 in the schema
}

// TestFixtures registers every parquet-testing file (or sees it refused
// with the expected error) and checks the facts each was made to test. The
// engine package checks every stored bound against the data as DuckDB reads
// it.
func TestFixtures(t *testing.T) {
	fileStats := map[string]map[string]stats.Column{} // file → column path → file stats
	for _, p := range sharedFixtures(t) {
		name := filepath.Base(p)
		c := memCatalog(t)
		_, err := Add(c, "t", []string{p}, Options{Create: true})
		if want, bad := fixtureFailures[name]; bad {
			if !errors.Is(err, want) || !strings.Contains(err.Error(), name) {
				t.Errorf("%s: want %v naming the file, got %v", name, want, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		r, _ := c.Read(catalog.Latest)
		tb, _ := r.Table("t")
		cols, _ := r.Columns(tb.ID)
		fileStats[name] = map[string]stats.Column{}
		for _, col := range cols {
			_ = r.FileColumnStats(tb.ID, col.ID, func(_ int64, st *stats.Column) error {
				fileStats[name][strings.Join(col.Path, ".")] = *st
				return nil
			})
		}
		r.Close()
	}
	get := func(file, col string) stats.Column {
		st, ok := fileStats[file][col]
		if !ok {
			t.Fatalf("%s: no stats for %s (have %v)", file, col, fileStats[file])
		}
		return st
	}
	// Legacy NaN max from old parquet-cpp: no NaN bound survives.
	if st := get("nan_in_stats.parquet", "x"); st.Max.Known {
		t.Errorf("nan_in_stats: a max survived: %x", st.Max.V)
	}
	// Truncated string bounds are inexact; untruncated ones exact.
	for col, exact := range map[string]bool{"utf8_full_truncation": false, "binary_full_truncation": false, "utf8_no_truncation": true} {
		st := get("binary_truncated_min_max.parquet", col)
		if !st.Min.Known || !st.Max.Known || st.MinIsExact != exact || st.MaxIsExact != exact {
			t.Errorf("binary_truncated_min_max %s: known %v/%v exact %v/%v, want exact %v", col, st.Min.Known, st.Max.Known, st.MinIsExact, st.MaxIsExact, exact)
		}
	}
	// nan_count, where written, decides contains_nan.
	for _, col := range []string{"float_ieee754", "double_typedef", "float16_typedef"} {
		if st := get("floating_orders_nan_count.parquet", col); !st.ContainsNaN.Known || !st.ContainsNaN.V {
			t.Errorf("floating_orders_nan_count %s: contains_nan %+v, want known true", col, st.ContainsNaN)
		}
	}
	// min_value/max_value without column_orders are not trusted.
	if st := get("concatenated_gzip_members.parquet", "long_col"); st.Min.Known || st.Max.Known {
		t.Errorf("concatenated_gzip_members: bounds kept without column orders")
	}
	// Legacy min/max of a signed INT32 decimal are used.
	if st := get("int32_decimal.parquet", "value"); !st.Min.Known || !st.Max.Known {
		t.Errorf("int32_decimal: legacy bounds dropped")
	}
	// INT96 bounds are never trusted.
	if st := get("int96_from_spark.parquet", "a"); st.Min.Known || st.Max.Known {
		t.Errorf("int96_from_spark: INT96 bounds kept")
	}
	// An unknown logical type registers without bounds.
	if st := get("unknown-logical-type.parquet", "column with unknown type"); st.Min.Known || st.Max.Known {
		t.Errorf("unknown-logical-type: bounds kept")
	}
}
