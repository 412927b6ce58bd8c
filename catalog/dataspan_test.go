package catalog

import (
	"math/rand/v2"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/rocklake/rocklake/catalog/catalogpb"
)

// dataFileSpan reads the snapshots the full decode reads, for random
// rows and for random damage to them: where the decode succeeds, the span
// parses and agrees (a row the quick read skips is one the decode would
// have found invisible); where it does not parse, Files decodes.
func TestDataFileSpanAgreesWithDecode(t *testing.T) {
	fields := (&catalogpb.DataFile{}).ProtoReflect().Descriptor().Fields()
	if fields.ByName("begin_snapshot").Number() != dataFileBegin || fields.ByName("end_snapshot").Number() != dataFileEnd {
		t.Fatal("dataFileBegin and dataFileEnd are not DataFile's field numbers")
	}
	r := rand.New(rand.NewPCG(3, 4))
	num := func() int64 {
		switch r.IntN(4) {
		case 0:
			return 0
		case 1:
			return -r.Int64N(1 << 40)
		}
		return r.Int64N(1 << uint(r.IntN(63)))
	}
	parsed := 0
	for i := range 20000 {
		p := &catalogpb.DataFile{Id: num(), TableId: num(), Path: "f.parquet", RecordCount: num(), BeginSnapshot: num(), RowIdStart: num()}
		if r.IntN(2) == 0 {
			p.EndSnapshot = proto.Int64(num())
		}
		if r.IntN(3) == 0 {
			p.PartitionValues = []*catalogpb.PartitionValue{{}}
			p.IgnoredColumns = []string{"x"}
		}
		v, err := encodeValue(p)
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 {
			// Damage: a byte changed, or the value cut short.
			if r.IntN(2) == 0 {
				v[3+r.IntN(len(v)-3)] = byte(r.Uint32())
			} else {
				v = v[:3+r.IntN(len(v)-3)]
			}
		}
		var d catalogpb.DataFile
		decErr := decodeValue(v, &d)
		begin, end, ok := dataFileSpan(v)
		if decErr != nil {
			continue
		}
		if !ok {
			continue // the decode reads it; Files then does too
		}
		parsed++
		if begin != d.BeginSnapshot || (end == nil) != (d.EndSnapshot == nil) || (end != nil && *end != *d.EndSnapshot) {
			t.Fatalf("row %x: span %d %v, decode %d %v", v, begin, end, d.BeginSnapshot, d.EndSnapshot)
		}
	}
	if parsed < 10000 {
		t.Fatalf("only %d rows parsed", parsed)
	}
}
