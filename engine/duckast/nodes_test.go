package duckast

import (
	"encoding/json"
	"testing"
)

// A SELECT is plain only when every key it serialises holds the value of
// a plain SELECT: grouping sets without group expressions, GROUP BY ALL
// and keys this package does not know all make it not plain.
func TestPlainReadsEveryKey(t *testing.T) {
	const base = `{"type":"SELECT_NODE","modifiers":[],"cte_map":{"map":[]},"select_list":[],
		"from_table":null,"where_clause":null,"group_expressions":[],"group_sets":[],
		"aggregate_handling":"STANDARD_HANDLING","having":null,"sample":null,"qualify":null}`
	for _, tc := range []struct {
		key   string
		value string
		plain bool
	}{
		{"", "", true},
		{"group_sets", `[[],[]]`, false},
		{"group_sets", `[[]]`, false},
		{"group_sets", `[[0]]`, false},
		{"group_expressions", `[{"class":"COLUMN_REF"}]`, false},
		{"aggregate_handling", `"FORCE_AGGREGATES"`, false},
		{"having", `{"class":"CONSTANT"}`, false},
		{"qualify", `{"class":"CONSTANT"}`, false},
		{"sample", `{}`, false},
		{"modifiers", `[{"type":"LIMIT_MODIFIER"}]`, false},
		{"cte_map", `{"map":[{"key":"x","value":{}}]}`, false},
		{"a_later_key", `null`, false},
	} {
		var m map[string]any
		if err := json.Unmarshal([]byte(base), &m); err != nil {
			t.Fatal(err)
		}
		if tc.key != "" {
			var v any
			if err := json.Unmarshal([]byte(tc.value), &v); err != nil {
				t.Fatal(err)
			}
			m[tc.key] = v
		}
		s, ok := SelectOf(m)
		if !ok {
			t.Fatalf("%s: not read as a SELECT", tc.key)
		}
		if s.Plain != tc.plain {
			t.Errorf("%s = %s: plain %v, want %v", tc.key, tc.value, s.Plain, tc.plain)
		}
	}
}
