package catalog

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"rocklake/catalog/catalogpb"
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
