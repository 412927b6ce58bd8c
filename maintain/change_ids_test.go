package maintain

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/catalog"
)

// A change numbers each file's rows id << 32 + position: every id below
// maxChangeFileID gives rids no other file's rows get, and an id at or
// past it (whose rids would wrap onto another file's) is refused, naming
// the file, never numbered.
func TestChangeRowIDsStayDistinct(t *testing.T) {
	read := func(catalog.DataFile) (string, error) { return "SELECT 1", nil }
	for _, id := range []int64{0, 1, 2, 1<<31 - 1} {
		part, err := targetPart(catalog.DataFile{ID: id, Path: "f.parquet", RecordCount: 1<<32 - 1}, 1, "SELECT 1", "src.*", "n", read)
		if err != nil {
			t.Fatalf("id %d: %v", id, err)
		}
		lo := id << 32
		if lo < 0 || (lo+(1<<32-1))>>32 != id || !strings.Contains(part, fmt.Sprintf("%d + n", lo)) {
			t.Fatalf("id %d: rids from %d do not map back to it (%s)", id, lo, part)
		}
	}
	for _, id := range []int64{1 << 31, 1<<32 + 5, -1} {
		_, err := targetPart(catalog.DataFile{ID: id, Path: "big.parquet", RecordCount: 10}, 1, "SELECT 1", "src.*", "n", read)
		if err == nil || !strings.Contains(err.Error(), "big.parquet") {
			t.Fatalf("id %d: %v, want a refusal naming the file", id, err)
		}
	}
}
