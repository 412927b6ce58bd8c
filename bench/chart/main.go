// Command chart draws the README's performance chart from the JSON that
// bench/plan and bench/query write: plan time against files (warm and
// cold, one-column range), and query time against files for rocklake,
// DuckDB over the glob and DuckDB over exactly the matching files.
//
//	go run ./bench/chart -plan bench/results/plan.json -query bench/results/query.json -out bench/results/performance.svg
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

type planResult struct {
	Files     int     `json:"files"`
	Predicate string  `json:"predicate"`
	ColdMS    float64 `json:"cold_ms"`
	WarmMS    float64 `json:"warm_ms"`
}

type queryResult struct {
	Files      int     `json:"files"`
	Query      string  `json:"query"`
	RocklakeMS float64 `json:"rocklake_ms"`
	GlobMS     float64 `json:"glob_ms"`
	OracleMS   float64 `json:"oracle_ms"`
}

func load(path string, v any) {
	b, err := os.ReadFile(path)
	if err != nil {
		log.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		log.Fatalf("%s: %v", path, err)
	}
}

// series keeps the points of one line, sorted by x.
func series(pts map[float64]float64) plotter.XYs {
	var xs []float64
	for x := range pts {
		xs = append(xs, x)
	}
	sort.Float64s(xs)
	out := make(plotter.XYs, len(xs))
	for i, x := range xs {
		out[i] = plotter.XY{X: x, Y: pts[x]}
	}
	return out
}

func logPlot(title, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "files in the table"
	p.Y.Label.Text = y
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	return p
}

func main() {
	planPath := flag.String("plan", "bench/results/plan.json", "bench/plan results")
	queryPath := flag.String("query", "bench/results/query.json", "bench/query results")
	out := flag.String("out", "bench/results/performance.svg", "the SVG to write")
	flag.Parse()
	var plans []planResult
	var queries []queryResult
	load(*planPath, &plans)
	load(*queryPath, &queries)

	pp := logPlot("Planning (file level)", "milliseconds")
	var lines []any
	for _, pred := range []string{"one column (ts range)", "two columns (ts AND user_id)"} {
		warm, cold := map[float64]float64{}, map[float64]float64{}
		for _, r := range plans {
			if r.Predicate == pred {
				warm[float64(r.Files)], cold[float64(r.Files)] = r.WarmMS, r.ColdMS
			}
		}
		lines = append(lines, pred+", warm", series(warm), pred+", cold", series(cold))
	}
	if err := plotutil.AddLinePoints(pp, lines...); err != nil {
		log.Fatal(err)
	}

	var panels []*plot.Plot
	panels = append(panels, pp)
	for _, q := range []string{"one hour", "user_id = v", "full scan sum"} {
		p := logPlot(fmt.Sprintf("Query: %s", q), "milliseconds (median)")
		rl, gl, or := map[float64]float64{}, map[float64]float64{}, map[float64]float64{}
		for _, r := range queries {
			if r.Query == q {
				x := float64(r.Files)
				rl[x], gl[x], or[x] = r.RocklakeMS, r.GlobMS, r.OracleMS
			}
		}
		if err := plotutil.AddLinePoints(p, "rocklake", series(rl), "DuckDB, glob", series(gl), "DuckDB, matching files only", series(or)); err != nil {
			log.Fatal(err)
		}
		panels = append(panels, p)
	}

	const w, h = 13 * vg.Inch, 9 * vg.Inch
	canvas := vgsvg.New(w, h)
	dc := draw.New(canvas)
	tiles := draw.Tiles{Rows: 2, Cols: 2, PadX: vg.Millimeter * 6, PadY: vg.Millimeter * 6,
		PadTop: vg.Millimeter * 3, PadBottom: vg.Millimeter * 3, PadLeft: vg.Millimeter * 3, PadRight: vg.Millimeter * 3}
	cells := plot.Align([][]*plot.Plot{{panels[0], panels[1]}, {panels[2], panels[3]}}, tiles, dc)
	for i, row := range cells {
		for j, c := range row {
			[][]*plot.Plot{{panels[0], panels[1]}, {panels[2], panels[3]}}[i][j].Draw(c)
		}
	}
	f, err := os.Create(*out)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := canvas.WriteTo(f); err != nil {
		log.Fatal(err)
	}
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}
	fmt.Println("wrote", *out)
}
