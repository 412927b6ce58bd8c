package pqwrite

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/rocklake/rocklake/types"
)

// With Dictionary set, a column whose values repeat is dictionary-encoded
// and a column of distinct values is not, whatever its type; the values
// read back either way.
func TestDictionaryOnlyWhereValuesRepeat(t *testing.T) {
	const n = 50_000
	for _, typ := range []string{"int64", "varchar", "uuid"} {
		ty := types.MustParseType(typ)
		codec, _ := types.CodecFor(ty)
		col := func(distinct int) []*types.Value {
			out := make([]*types.Value, n)
			for i := range out {
				text := fmt.Sprint(i % distinct)
				if ty.Kind == types.KindUUID {
					text = fmt.Sprintf("00000000-0000-0000-0000-%012d", i%distinct)
				}
				v, err := codec.Parse(text)
				if err != nil {
					t.Fatal(err)
				}
				out[i] = &v
			}
			return out
		}
		p := filepath.Join(t.TempDir(), "f.parquet")
		if err := Write(p, []Column{{Name: "few", Type: ty, Values: col(100)}, {Name: "all", Type: ty, Values: col(n)}},
			Options{Dictionary: true, RowGroupRows: 20_000}); err != nil {
			t.Fatal(err)
		}
		r, err := file.OpenParquetFile(p, false)
		if err != nil {
			t.Fatal(err)
		}
		for c, want := range []bool{true, false} {
			cc, err := r.MetaData().RowGroup(0).ColumnChunk(c)
			if err != nil {
				t.Fatal(err)
			}
			dict := slices.Contains(cc.Encodings(), parquet.Encodings.RLEDict) || slices.Contains(cc.Encodings(), parquet.Encodings.PlainDict)
			if dict != want || cc.HasDictionaryPage() != want {
				t.Errorf("%s column %d: dictionary %v (encodings %v), want %v", typ, c, dict, cc.Encodings(), want)
			}
		}
		if got := r.NumRows(); got != n {
			t.Errorf("%s: %d rows", typ, got)
		}
		r.Close()
	}
}
