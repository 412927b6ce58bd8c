package engine

import (
	"bytes"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/rocklake/rocklake/types"
	"github.com/rocklake/rocklake/types/typestest"
)

// crossTypes pairs each rocklake type text with DuckDB's spelling.
var crossTypes = []struct{ ours, duck string }{
	{"boolean", "BOOLEAN"},
	{"int8", "TINYINT"}, {"int16", "SMALLINT"}, {"int32", "INTEGER"}, {"int64", "BIGINT"},
	{"int128", "HUGEINT"},
	{"uint8", "UTINYINT"}, {"uint16", "USMALLINT"}, {"uint32", "UINTEGER"}, {"uint64", "UBIGINT"},
	{"uint128", "UHUGEINT"},
	{"float32", "FLOAT"}, {"float64", "DOUBLE"},
	{"decimal(4,2)", "DECIMAL(4,2)"}, {"decimal(18,3)", "DECIMAL(18,3)"},
	{"decimal(38,10)", "DECIMAL(38,10)"}, {"decimal(38,0)", "DECIMAL(38,0)"},
	{"date", "DATE"}, {"time", "TIME"}, {"time_ns", "TIME_NS"}, {"timetz", "TIMETZ"},
	{"timestamp", "TIMESTAMP"}, {"timestamp_s", "TIMESTAMP_S"}, {"timestamp_ms", "TIMESTAMP_MS"},
	{"timestamp_ns", "TIMESTAMP_NS"}, {"timestamptz", "TIMESTAMPTZ"},
	{"interval", "INTERVAL"}, {"uuid", "UUID"}, {"varchar", "VARCHAR"}, {"blob", "BLOB"},
	{"enum('b', 'a', 'c')", "ENUM('b', 'a', 'c')"},
}

// types.DuckDBName spells every type as DuckDB does.
func TestDuckDBNames(t *testing.T) {
	for _, c := range crossTypes {
		if got := types.DuckDBName(types.MustParseType(c.ours)); got != c.duck {
			t.Errorf("DuckDBName(%s) = %q, want %q", c.ours, got, c.duck)
		}
	}
	for ours, duck := range map[string]string{
		"int64[]": "BIGINT[]", "struct(a int32, \"b c\" varchar)": `STRUCT("a" INTEGER, "b c" VARCHAR)`,
		"map(varchar, float64)": "MAP(VARCHAR, DOUBLE)", "int16[3]": "SMALLINT[3]",
	} {
		if got := types.DuckDBName(types.MustParseType(ours)); got != duck {
			t.Errorf("DuckDBName(%s) = %q, want %q", ours, got, duck)
		}
	}
}

// TestTypesAgainstDuckDB checks the types package against DuckDB itself, for
// every type with a codec, on extremes and random values:
//   - DuckDB reads our text form of each value (TRY_CAST is not NULL);
//   - our parser reads DuckDB's CAST(v AS VARCHAR) back to the same value,
//     and our text form is exactly DuckDB's;
//   - byte order of our encodings is DuckDB's ORDER BY (dense ranks agree,
//     ties included).
func TestTypesAgainstDuckDB(t *testing.T) {
	db, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r := rand.New(rand.NewPCG(7, 11))
	for _, ct := range crossTypes {
		typ := types.MustParseType(ct.ours)
		c, ok := types.CodecFor(typ)
		if !ok {
			t.Fatalf("%s: no codec", ct.ours)
		}
		samples := typestest.Extremes(typ)
		for range 300 {
			samples = append(samples, typestest.Random(r, typ))
		}
		texts := make([]string, len(samples))
		for i, v := range samples {
			texts[i] = c.Format(v)
		}
		rows, err := db.Query(`
			SELECT i, CAST(x AS VARCHAR), dense_rank() OVER (ORDER BY x)
			FROM (SELECT i, TRY_CAST(s AS `+ct.duck+`) AS x
			      FROM (SELECT unnest($1::VARCHAR[]) AS s, unnest(range($2)) AS i))`,
			texts, len(texts))
		if err != nil {
			t.Fatalf("%s: %v", ct.ours, err)
		}
		duckText := make([]*string, len(samples))
		rank := make([]int64, len(samples))
		for rows.Next() {
			var i, rk int64
			var text *string
			if err := rows.Scan(&i, &text, &rk); err != nil {
				t.Fatal(err)
			}
			duckText[i], rank[i] = text, rk
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("%s: %v", ct.ours, err)
		}
		rows.Close()

		encs := make([][]byte, len(samples))
		for i, v := range samples {
			if duckText[i] == nil {
				t.Errorf("%s: DuckDB cannot read our text %q", ct.ours, texts[i])
				continue
			}
			back, err := c.Parse(*duckText[i])
			if err != nil {
				t.Errorf("%s: we cannot read DuckDB's text %q: %v", ct.ours, *duckText[i], err)
				continue
			}
			enc, _ := c.Encode(v)
			benc, _ := c.Encode(back)
			if !bytes.Equal(enc, benc) || !back.Same(normalizeZero(v)) {
				t.Errorf("%s: DuckDB's text %q of %q reads back as %q", ct.ours, *duckText[i], texts[i], c.Format(back))
			}
			// DuckDB's FLOAT text is sometimes longer than the shortest
			// that reads back (see types.formatFloat); the value check
			// above covers it.
			if *duckText[i] != texts[i] && typ.Kind != types.KindFloat {
				t.Errorf("%s: our text %q, DuckDB's %q", ct.ours, texts[i], *duckText[i])
			}
			encs[i] = enc
		}
		if !c.Ordered() {
			continue
		}
		idx := make([]int, len(samples))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool { return bytes.Compare(encs[idx[a]], encs[idx[b]]) < 0 })
		for k := 1; k < len(idx); k++ {
			a, b := idx[k-1], idx[k]
			if duckText[a] == nil || duckText[b] == nil {
				continue
			}
			cmp := bytes.Compare(encs[a], encs[b])
			switch {
			case cmp == 0 && rank[a] != rank[b]:
				t.Errorf("%s: %q and %q encode equal, DuckDB ranks them %d and %d", ct.ours, texts[a], texts[b], rank[a], rank[b])
			case cmp < 0 && rank[a] >= rank[b]:
				t.Errorf("%s: %q encodes below %q, DuckDB ranks them %d and %d", ct.ours, texts[a], texts[b], rank[a], rank[b])
			}
		}
	}
}

// normalizeZero maps -0.0 to +0.0, which is what decoding a zero gives.
func normalizeZero(v types.Value) types.Value {
	if v.F == 0 {
		v.F = 0
	}
	return v
}

// TestDuckDBFloatSemantics pins the DuckDB behaviour the float codecs and the
// planner rely on: NaN sorts above +inf and equals itself; -0.0 = +0.0.
func TestDuckDBFloatSemantics(t *testing.T) {
	db, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var last string
	var nanEq, zeroEq, nanGtInf bool
	err = db.QueryRow(`
		SELECT (SELECT CAST(x AS VARCHAR) FROM (VALUES ('nan'::DOUBLE), ('inf'::DOUBLE), (1.0::DOUBLE)) v(x)
		        ORDER BY x DESC LIMIT 1),
		       'nan'::DOUBLE = 'nan'::DOUBLE, '-0.0'::DOUBLE = '0.0'::DOUBLE, 'nan'::DOUBLE > 'inf'::DOUBLE`).
		Scan(&last, &nanEq, &zeroEq, &nanGtInf)
	if err != nil {
		t.Fatal(err)
	}
	if last != "nan" || !nanEq || !zeroEq || !nanGtInf {
		t.Fatalf("DuckDB float semantics changed: max=%s nan=nan:%v -0=0:%v nan>inf:%v", last, nanEq, zeroEq, nanGtInf)
	}
}
