package plot

import (
	"bytes"
	"strings"
	"testing"
)

func TestRanges(t *testing.T) {
	var bars []Bar
	for i := range 9 {
		bars = append(bars, Bar{Label: "f<" + string(rune('0'+i)) + ">", Known: true, Lo: float64(10 * i), Hi: float64(10*i + 15),
			LoText: "lo", HiText: "hi"})
	}
	bars = append(bars, Bar{Label: "unbounded"})
	bars[0].LoText, bars[8].HiText = "first & least", "last"
	var buf bytes.Buffer
	if err := Ranges(&buf, "t.x (int64): <10 files>", "value", bars); err != nil {
		t.Fatal(err)
	}
	svg := buf.String()
	for _, want := range []string{"<svg", "</svg>", "t.x (int64): &lt;10 files&gt;", "f&lt;3&gt;: [lo, hi]",
		`fill="#d62728"><title>unbounded: no bounds`, "x axis (value): first &amp; least … last"} {
		if !strings.Contains(svg, want) {
			t.Errorf("no %q in\n%s", want, svg)
		}
	}
	if n := strings.Count(svg, "<rect"); n != 10 {
		t.Errorf("%d bars drawn, want 10", n)
	}
	// The axis spans the bounds, 0 to 95, over the 880 units between the
	// margins: the first bar starts at the left one (10), the last known
	// one ends at the right one (751.1 + 138.9 = 890).
	if !strings.Contains(svg, `<rect x="10.0" y="30.0" width="138.9"`) || !strings.Contains(svg, `<rect x="751.1" y="94.0" width="138.9"`) {
		t.Errorf("bars not scaled to the bounds:\n%s", svg)
	}

	// No bar with bounds: no axis labels, every bar across the width.
	buf.Reset()
	if err := Ranges(&buf, "empty", "value", []Bar{{Label: "a"}}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "x axis") || strings.Count(buf.String(), "<rect") != 1 {
		t.Errorf("unbounded only:\n%s", buf.String())
	}
}
