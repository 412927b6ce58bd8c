package iceberg

import (
	"bytes"
	"math"
	"strings"
	"testing"

	ig "github.com/apache/iceberg-go"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

func col(id int64, name, typ string, parent int64) catalog.Column {
	t, err := types.ParseType(typ)
	if err != nil {
		panic(err)
	}
	c := catalog.Column{ID: id, Name: name, Type: t, Nullable: true}
	if parent > 0 {
		c.Parent = stats.Known(parent)
	}
	return c
}

// TestTableSchema: every registry type is shown or left out with a
// reason, nested field ids are rocklake's, and a name two columns share
// in the files is refused.
func TestTableSchema(t *testing.T) {
	cols := []catalog.Column{
		col(1, "a", "BIGINT", 0),
		col(2, "s", "STRUCT(x INTEGER, y VARCHAR)", 0), col(3, "x", "INTEGER", 2), col(4, "y", "VARCHAR", 2),
		col(5, "l", "INTEGER[]", 0), col(6, "element", "INTEGER", 5),
		col(7, "i", "INTERVAL", 0),
		col(8, "u", "UBIGINT", 0),
		col(9, "ts", "TIMESTAMP_MS", 0),
		col(10, "li", "INTERVAL[]", 0), col(11, "element", "INTERVAL", 10),
	}
	s, err := TableSchema(cols, 3, map[int64][]string{1: {"old_a"}})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, l := range s.Left {
		left = append(left, l.Name)
	}
	if strings.Join(left, ",") != "i,u,li" {
		t.Errorf("left out %v, want i,u,li", left)
	}
	for id, want := range map[int]string{1: "long", 3: "int", 4: "string", 6: "int", 9: "timestamp"} {
		f, ok := s.Iceberg.FindFieldByID(id)
		if !ok || f.Type.String() != want {
			t.Errorf("field %d: %v %v, want %s", id, f, ok, want)
		}
	}
	// Every column is in the name mapping, shown or not, with the names
	// older files hold it under.
	if got := s.Mapping[0].Names; strings.Join(got, ",") != "a,old_a" {
		t.Errorf("mapping of a: %v", got)
	}
	if len(s.Mapping) != 7 {
		t.Errorf("mapping has %d top-level fields, want 7", len(s.Mapping))
	}
	if _, err := TableSchema(cols, 3, map[int64][]string{1: {"ts"}}); err == nil || !strings.Contains(err.Error(), `"ts"`) {
		t.Errorf("a name two columns share: %v", err)
	}
}

// TestBounds: bounds in Iceberg's single-value serialization, widened
// where the two systems order values differently.
func TestBounds(t *testing.T) {
	enc := func(typ string, v types.Value) ([]byte, *types.Codec, types.Type) {
		tt, _ := types.ParseType(typ)
		c, _ := types.CodecFor(tt)
		b, err := c.Encode(v)
		if err != nil {
			t.Fatal(err)
		}
		return b, c, tt
	}
	b, c, tt := enc("DOUBLE", types.FloatValue(0))
	lo, _ := bound(c, tt, ig.PrimitiveTypes.Float64, b, true)
	hi, _ := bound(c, tt, ig.PrimitiveTypes.Float64, b, false)
	want, _ := ig.Float64Literal(math.Copysign(0, -1)).MarshalBinary()
	if !bytes.Equal(lo, want) {
		t.Errorf("lower bound of 0.0: %x, want -0.0 %x", lo, want)
	}
	if want, _ := ig.Float64Literal(0).MarshalBinary(); !bytes.Equal(hi, want) {
		t.Errorf("upper bound of 0.0: %x, want %x", hi, want)
	}
	b, c, tt = enc("TIMESTAMP_MS", types.IntValue(1500))
	got, _ := bound(c, tt, ig.PrimitiveTypes.Timestamp, b, true)
	if want, _ := ig.TimestampLiteral(1_500_000).MarshalBinary(); !bytes.Equal(got, want) {
		t.Errorf("timestamp_ms 1500: %x, want micros %x", got, want)
	}
	for _, c := range []struct {
		unscaled int64
		want     []byte
	}{{0, []byte{0}}, {127, []byte{0x7f}}, {128, []byte{0, 0x80}}, {-1, []byte{0xff}}, {-129, []byte{0xff, 0x7f}}} {
		b, codec, tt := enc("DECIMAL(10,2)", types.IntValue(c.unscaled))
		got, _ := bound(codec, tt, ig.DecimalTypeOf(10, 2), b, true)
		if !bytes.Equal(got, c.want) {
			t.Errorf("decimal %d: %x, want %x", c.unscaled, got, c.want)
		}
	}
}

// TestFilterText: what the translation writes, for the rules that keep
// it sound.
func TestFilterText(t *testing.T) {
	s, err := TableSchema([]catalog.Column{col(1, "id", "BIGINT", 0), col(2, "f", "FLOAT", 0), col(3, "u", "UUID", 0), col(4, "n", "VARCHAR", 0), col(5, "l", "INTEGER[]", 0), col(6, "element", "INTEGER", 5)}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		e    ig.BooleanExpression
		want string
	}{
		{ig.NewNot(ig.GreaterThan(ig.Reference("id"), int64(5))), `"id" <= 5`},
		{ig.NotEqualTo(ig.Reference("id"), int64(5)), `("id" IS NULL OR "id" <> 5)`},
		{ig.NewNot(ig.IsIn(ig.Reference("id"), int64(1), int64(2))), `("id" IS NULL OR "id" NOT IN (`},
		{ig.LessThan(ig.Reference("f"), float32(0)), `"f" <= CAST('0' AS FLOAT)`},
		{ig.LessThan(ig.Reference("f"), 0.1), `"f" < CAST('0.1' AS FLOAT)`},
		{ig.GreaterThan(ig.Reference("u"), "00000000-0000-0000-0000-000000000001"), `true`},
		{ig.NotStartsWith(ig.Reference("n"), "a'b"), `("n" IS NULL OR NOT starts_with("n", 'a''b'))`},
		{ig.NewAnd(ig.EqualTo(ig.Reference("n"), "x"), ig.NewNot(ig.StartsWith(ig.Reference("n"), "y"))), `("n" = 'x' AND ("n" IS NULL OR NOT starts_with("n", 'y')))`},
	} {
		f, err := translate(s, c.e, true)
		if err != nil {
			t.Fatalf("%s: %v", c.e, err)
		}
		if !strings.HasPrefix(f.Predicate, c.want) {
			t.Errorf("%s: %s, want %s", c.e, f.Predicate, c.want)
		}
	}
}
