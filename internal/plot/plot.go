// Package plot draws the CLI's SVG charts. It takes plain numbers and
// labels, so that it stays a helper below every layer of rocklake.
package plot

import (
	"fmt"
	"html"
	"io"
	"math"
)

// Bar is one row of a range chart: [Lo, Hi] on the x axis, LoText and
// HiText the bounds as shown. A bar that is not Known has no bounds.
type Bar struct {
	Label          string
	Known          bool
	Lo, Hi         float64
	LoText, HiText string
}

// Ranges draws each bar as a horizontal bar, one row per bar in order, so
// that overlaps show at a glance; a bar without bounds spans the whole
// width in red, as every query reads its unit. title heads the chart, and
// the x axis, named axis, is labelled with the lowest and highest bounds.
func Ranges(w io.Writer, title, axis string, bars []Bar) error {
	lo, hi := math.Inf(1), math.Inf(-1)
	var loText, hiText string
	for _, b := range bars {
		if b.Known {
			if b.Lo < lo {
				lo, loText = b.Lo, b.LoText
			}
			if b.Hi > hi {
				hi, hiText = b.Hi, b.HiText
			}
		}
	}
	bounded := !math.IsInf(lo, 0)
	if !bounded || hi <= lo {
		lo, hi = 0, 1
	}
	const width, left, barH = 900.0, 10.0, 6.0
	height := 60 + float64(len(bars))*(barH+2)
	x := func(v float64) float64 { return left + (v-lo)/(hi-lo)*(width-2*left) }
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="12">`+"\n", width, height)
	fmt.Fprintf(w, `<text x="%.0f" y="16">%s</text>`+"\n", left, html.EscapeString(title))
	for i, b := range bars {
		y := 30 + float64(i)*(barH+2)
		if !b.Known {
			fmt.Fprintf(w, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#d62728"><title>%s: no bounds</title></rect>`+"\n",
				left, y, width-2*left, barH, html.EscapeString(b.Label))
			continue
		}
		x0, x1 := x(b.Lo), x(b.Hi)
		fmt.Fprintf(w, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#1f77b4"><title>%s: [%s, %s]</title></rect>`+"\n",
			x0, y, math.Max(x1-x0, 1), barH, html.EscapeString(b.Label), html.EscapeString(b.LoText), html.EscapeString(b.HiText))
	}
	if bounded {
		fmt.Fprintf(w, `<text x="%.0f" y="%.0f">x axis (%s): %s … %s</text>`+"\n", left, height-10, html.EscapeString(axis),
			html.EscapeString(loText), html.EscapeString(hiText))
	}
	_, err := fmt.Fprintln(w, "</svg>")
	return err
}
