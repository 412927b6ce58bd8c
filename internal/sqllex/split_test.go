package sqllex

import (
	"reflect"
	"testing"
)

func TestSplit(t *testing.T) {
	for _, c := range []struct {
		script string
		want   []Statement
	}{
		{"", nil},
		{" ;; -- nothing\n/* at all */ ;", nil},
		{"SELECT 1", []Statement{{"SELECT 1", 1}}},
		{"SELECT 1;SELECT 2;", []Statement{{"SELECT 1", 1}, {"SELECT 2", 1}}},
		{"SELECT 1;\n\n  SELECT 2\n;\n", []Statement{{"SELECT 1", 1}, {"SELECT 2", 3}}},
		{"SELECT ';' AS a, 'it''s; fine';\nSELECT 2", []Statement{{"SELECT ';' AS a, 'it''s; fine'", 1}, {"SELECT 2", 2}}},
		{`SELECT 1 AS "a;b""c";SELECT 2`, []Statement{{`SELECT 1 AS "a;b""c"`, 1}, {"SELECT 2", 1}}},
		{"SELECT E'a\\';b';SELECT 2", []Statement{{"SELECT E'a\\';b'", 1}, {"SELECT 2", 1}}},
		{"SELECT 'a\\';SELECT 2", []Statement{{"SELECT 'a\\'", 1}, {"SELECT 2", 1}}}, // no escape outside E''
		{"SELECT $$a;b$$, $x$ $$; $x$;SELECT 2", []Statement{{"SELECT $$a;b$$, $x$ $$; $x$", 1}, {"SELECT 2", 1}}},
		{"SELECT $1;SELECT 2", []Statement{{"SELECT $1", 1}, {"SELECT 2", 1}}},
		{"SELECT 1 -- a; comment\n;SELECT 2", []Statement{{"SELECT 1 -- a; comment", 1}, {"SELECT 2", 2}}},
		{"SELECT /* a; /* nested; */ still; */ 1;SELECT 2", []Statement{{"SELECT /* a; /* nested; */ still; */ 1", 1}, {"SELECT 2", 1}}},
		{"-- header\n\n/* two\nlines */\nSELECT 1;\n-- trailer", []Statement{{"-- header\n\n/* two\nlines */\nSELECT 1", 5}}},
		{"SELECT 'open;\nSELECT 2", []Statement{{"SELECT 'open;\nSELECT 2", 1}}}, // DuckDB reports the open quote
		{"SELECT a$b;SELECT 2", []Statement{{"SELECT a$b", 1}, {"SELECT 2", 1}}},
	} {
		if got := Split(c.script); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Split(%q) = %+v, want %+v", c.script, got, c.want)
		}
	}
}
