package sqllex

import "testing"

func TestQuoted(t *testing.T) {
	cases := []struct {
		in, text string
		end      int
		ok       bool
	}{
		{`''`, "", 2, true},
		{`'a'b`, "a", 3, true},
		{`'it''s' x`, "it's", 7, true},
		{`''''`, "'", 4, true},
		{`"a""b" = 1`, `a"b`, 6, true},
		{`"it's"`, "it's", 6, true},
		{`'ü—'`, "ü—", 7, true},
		{`'open`, "", 5, false},
		{`'ends in a doubled quote''`, "", 26, false},
		{`"`, "", 1, false},
	}
	for _, c := range cases {
		text, end, ok := Quoted(c.in, 0)
		if text != c.text || end != c.end || ok != c.ok {
			t.Errorf("Quoted(%q) = %q, %d, %v; want %q, %d, %v", c.in, text, end, ok, c.text, c.end, c.ok)
		}
	}
	if text, end, ok := Quoted(`x = 'a''b' AND`, 4); text != "a'b" || end != 10 || !ok {
		t.Errorf("from an offset: %q, %d, %v", text, end, ok)
	}
}

func TestSkipSpace(t *testing.T) {
	for in, want := range map[string]int{"": 0, "x": 0, " \t\r\n x": 5, "   ": 3, "\u00a0": 0} {
		if got := SkipSpace(in, 0); got != want {
			t.Errorf("SkipSpace(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestNameBytes(t *testing.T) {
	for _, c := range []byte("_azAZ\x80\xff") {
		if !IsNameStart(c) || !IsNamePart(c) {
			t.Errorf("%q: want a name byte", c)
		}
	}
	for _, c := range []byte("09") {
		if IsNameStart(c) || !IsNamePart(c) {
			t.Errorf("%q: want a name byte only after the start", c)
		}
	}
	for _, c := range []byte(" $.'\"()-\x00\x7f") {
		if IsNameStart(c) || IsNamePart(c) {
			t.Errorf("%q: want no name byte", c)
		}
	}
}
