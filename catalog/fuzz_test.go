package catalog

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/rocklake/rocklake/catalog/catalogpb"
	"github.com/rocklake/rocklake/stats"
)

// FuzzDecodeValue: any bytes either fail to decode as a stored value, with
// ErrCorrupt, or decode; never a panic.
func FuzzDecodeValue(f *testing.F) {
	for _, m := range []proto.Message{
		&catalogpb.Snapshot{Id: 3, NextFileId: 9, Changes: &catalogpb.Changes{CreatedTables: []int64{1}}},
		&catalogpb.ColumnStats{Min: []byte{1}, Max: []byte{2}, RowCount: 10},
		&catalogpb.DataFile{Id: 1, Path: "/x.parquet"},
	} {
		b, _ := encodeValue(m)
		f.Add(b)
	}
	f.Add([]byte{1, 'R', 'L', 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, m := range []proto.Message{&catalogpb.Snapshot{}, &catalogpb.ColumnStats{}, &catalogpb.DataFile{},
			&catalogpb.Table{}, &catalogpb.Column{}, &catalogpb.RowGroupStats{}, &catalogpb.VariantStats{},
			&catalogpb.TableStats{}, &catalogpb.TableColumnStats{}, &catalogpb.Meta{}} {
			if err := decodeValue(b, m); err == nil {
				continue
			}
		}
		var s catalogpb.ColumnStats
		if decodeValue(b, &s) == nil {
			_ = columnStatsFromPB(&s)
		}
	})
}

// FuzzViewBlocks: any stored bytes either fail to read as a file or stats
// block, or read as one whose every value can be asked for; never a panic
// (a damaged catalog must give an error, not crash a plan).
func FuzzViewBlocks(f *testing.F) {
	fb := &fileBlock{begin: 2, ids: []int64{5, 6, 9}, rows: []int64{10, 10, 0}, rgs: []int64{1, 1, 1}, sizes: []int64{100, 2000, 7}}
	b, _ := encodeValue(fb.encode())
	f.Add(b)
	sb := &statsBlock{}
	sb.add(nil)
	sb.add(&stats.Column{Min: stats.Known([]byte{1, 2}), Max: stats.Known([]byte{3}), NullCount: stats.Known(int64(4)), RowCount: 10})
	b, _ = encodeValue(sb.encode())
	f.Add(b)
	f.Add(appendFOR(nil, []int64{1, 300, 70000}))
	f.Fuzz(func(t *testing.T, b []byte) {
		var p catalogpb.FileBlock
		if decodeValue(b, &p) == nil {
			if v, err := viewFileBlock(&p); err == nil {
				for j := range v.n {
					_, _, _, _ = v.ids.at(j), v.rows.at(j), v.rgs.at(j), v.sizes.at(j)
				}
			}
		}
		var s, in catalogpb.StatsBlock
		err := decodeValue(b, &s)
		// Read in place, a block is what protobuf reads, or both refuse it.
		inErr := decodeStatsBlockInPlace(b, &in)
		if (err == nil) != (inErr == nil) {
			t.Fatalf("protobuf: %v; in place: %v", err, inErr)
		}
		if err == nil {
			s.ProtoReflect().SetUnknown(nil)
			if !proto.Equal(&s, &in) {
				t.Fatalf("protobuf read %v, in place %v", &s, &in)
			}
		}
		if err == nil {
			if v, err := viewStats(&s); err == nil {
				for j := range v.n {
					_, _, _, _, _ = v.flag(j), v.nulls.at(j), v.values.at(j), v.min(j), v.max(j)
				}
			}
		}
		for n := range 4 {
			if v, err := viewFOR(b, n); err == nil {
				for j := range n {
					_ = v.at(j)
				}
			}
		}
	})
}
