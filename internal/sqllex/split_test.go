package sqllex

import (
	"reflect"
	"testing"
)

type textLine struct {
	text string
	line int
}

func TestSplit(t *testing.T) {
	for _, c := range []struct {
		script string
		want   []textLine
	}{
		{"", nil},
		{" ;; -- nothing\n/* at all */ ;", nil},
		{"SELECT 1", []textLine{{"SELECT 1", 1}}},
		{"SELECT 1;SELECT 2;", []textLine{{"SELECT 1", 1}, {"SELECT 2", 1}}},
		{"SELECT 1;\n\n  SELECT 2\n;\n", []textLine{{"SELECT 1", 1}, {"SELECT 2", 3}}},
		{"SELECT ';' AS a, 'it''s; fine';\nSELECT 2", []textLine{{"SELECT ';' AS a, 'it''s; fine'", 1}, {"SELECT 2", 2}}},
		{`SELECT 1 AS "a;b""c";SELECT 2`, []textLine{{`SELECT 1 AS "a;b""c"`, 1}, {"SELECT 2", 1}}},
		{"SELECT E'a\\';b';SELECT 2", []textLine{{"SELECT E'a\\';b'", 1}, {"SELECT 2", 1}}},
		{"SELECT 'a\\';SELECT 2", []textLine{{"SELECT 'a\\'", 1}, {"SELECT 2", 1}}}, // no escape outside E''
		{"SELECT $$a;b$$, $x$ $$; $x$;SELECT 2", []textLine{{"SELECT $$a;b$$, $x$ $$; $x$", 1}, {"SELECT 2", 1}}},
		{"SELECT $1;SELECT 2", []textLine{{"SELECT $1", 1}, {"SELECT 2", 1}}},
		{"SELECT 1 -- a; comment\n;SELECT 2", []textLine{{"SELECT 1 -- a; comment", 1}, {"SELECT 2", 2}}},
		{"SELECT /* a; /* nested; */ still; */ 1;SELECT 2", []textLine{{"SELECT /* a; /* nested; */ still; */ 1", 1}, {"SELECT 2", 1}}},
		{"-- header\n\n/* two\nlines */\nSELECT 1;\n-- trailer", []textLine{{"-- header\n\n/* two\nlines */\nSELECT 1", 5}}},
		{"SELECT 'open;\nSELECT 2", []textLine{{"SELECT 'open;\nSELECT 2", 1}}}, // DuckDB reports the open quote
		{"SELECT a$b;SELECT 2", []textLine{{"SELECT a$b", 1}, {"SELECT 2", 1}}},
	} {
		var got []textLine
		for _, st := range Split(c.script) {
			got = append(got, textLine{st.Text, st.Line})
			// Start is where Text is in the script: positions in a
			// statement's text map back to the script through it.
			if st.Start < 0 || st.Start+len(st.Text) > len(c.script) || c.script[st.Start:st.Start+len(st.Text)] != st.Text {
				t.Errorf("Split(%q): statement %q has Start %d", c.script, st.Text, st.Start)
			}
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("Split(%q) = %+v, want %+v", c.script, got, c.want)
		}
	}
}
