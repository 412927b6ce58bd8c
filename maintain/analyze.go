package maintain

import (
	"bytes"
	"fmt"
	"math/big"
	"sort"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
)

// Range is one unit's [Min, Max] on a column, as encodings; Known is false
// when the unit has no usable bounds (it is read by every query).
type Range struct {
	Label    string
	Min, Max []byte
	Known    bool
}

// Clustering says how well a column's bounds separate a table's units.
type Clustering struct {
	Table, Column string
	Type          string
	Snapshot      int64
	Files         LevelClustering
	RowGroups     LevelClustering
	FileRanges    []Range `json:"-"`
	codec         *types.Codec
}

// LevelClustering summarises one level (files or row groups).
type LevelClustering struct {
	Units int `json:"units"`
	// Unbounded units have no usable min/max: every query reads them.
	Unbounded int `json:"unbounded"`
	// AvgDepth and MaxDepth: over every unit, how many units' ranges
	// overlap its own (itself included). 1 is perfect clustering.
	AvgDepth float64 `json:"avg_overlap_depth"`
	MaxDepth int     `json:"max_overlap_depth"`
	// PointRead and RangeRead are the average fraction of units a point
	// query (x = v) and a 1% range query read, over 100 probes spread
	// evenly over the column's range (numbers and times) or at quantiles of
	// the units' bounds (other types).
	PointRead float64 `json:"point_query_fraction"`
	RangeRead float64 `json:"range_1pct_query_fraction"`
}

// Analyze measures the clustering of a column at the reader's snapshot.
func Analyze(r *catalog.Reader, table, column string) (*Clustering, error) {
	t, err := r.Table(table)
	if err != nil {
		return nil, err
	}
	col, err := r.Column(t.ID, column)
	if err != nil {
		return nil, err
	}
	codec, ok := types.CodecFor(col.Type)
	if !ok || !codec.Ordered() {
		return nil, fmt.Errorf("column %q is %s, which keeps no ordered statistics", col.Name, col.Type)
	}
	files, err := r.Files(t.ID)
	if err != nil {
		return nil, err
	}
	sts, err := r.ColumnStatsOf(t.ID, col.ID, files)
	if err != nil {
		return nil, err
	}
	cl := &Clustering{Table: t.Name, Column: col.Name, Type: types.DisplayName(col.Type), Snapshot: r.Snapshot().ID, codec: codec}
	var rgRanges []Range
	for i, f := range files {
		cl.FileRanges = append(cl.FileRanges, rangeOf(f.Path, sts[i]))
		rgs, err := r.RowGroupStats(t.ID, col.ID, f.ID)
		if err != nil {
			return nil, err
		}
		for _, rg := range rgs {
			st := rg.Stats
			rgRanges = append(rgRanges, rangeOf(fmt.Sprintf("%s#%d", f.Path, rg.Index), &st))
		}
	}
	var num func([]byte) float64
	if pos, numeric := cl.Positions(); numeric {
		num = pos
	}
	cl.Files = measure(cl.FileRanges, num)
	cl.RowGroups = measure(rgRanges, num)
	return cl, nil
}

func rangeOf(label string, st *stats.Column) Range {
	if st == nil || !st.Min.Known || !st.Max.Known {
		return Range{Label: label}
	}
	return Range{Label: label, Min: st.Min.V, Max: st.Max.V, Known: true}
}

func overlaps(a, b Range) bool {
	if !a.Known || !b.Known {
		return true
	}
	return bytes.Compare(a.Min, b.Max) <= 0 && bytes.Compare(b.Min, a.Max) <= 0
}

// measure computes depth and read fractions. Depth counts, per unit, the
// units overlapping it; a sweep over sorted starts keeps it O(n log n + k).
// num maps bounds of numbers and times to values, so that probes can be
// spread evenly over the data's range; without it probes are quantiles of
// the bounds.
func measure(rs []Range, num func([]byte) float64) LevelClustering {
	lc := LevelClustering{Units: len(rs)}
	if len(rs) == 0 {
		return lc
	}
	var known []Range
	for _, r := range rs {
		if r.Known {
			known = append(known, r)
		} else {
			lc.Unbounded++
		}
	}
	sort.Slice(known, func(i, j int) bool { return bytes.Compare(known[i].Min, known[j].Min) < 0 })
	// Depth of unit i: unbounded units, plus known units whose range
	// overlaps it. Units starting after its max cannot overlap; scan
	// from the start while they might.
	total := 0
	for i := range known {
		d := lc.Unbounded
		for j := range known {
			if bytes.Compare(known[j].Min, known[i].Max) > 0 {
				break
			}
			if bytes.Compare(known[j].Max, known[i].Min) >= 0 {
				d++
			}
		}
		total += d
		lc.MaxDepth = max(lc.MaxDepth, d)
	}
	if lc.Unbounded > 0 {
		total += lc.Unbounded * len(rs)
		lc.MaxDepth = max(lc.MaxDepth, len(rs))
	}
	lc.AvgDepth = float64(total) / float64(len(rs))
	if len(known) == 0 {
		lc.PointRead, lc.RangeRead = 1, 1
		return lc
	}
	// Probes: 100 quantiles of all bounds (minima and maxima together), so
	// that they fall inside ranges where the data is, whatever its order. A
	// 1% range query spans from one quantile to the next.
	var ends [][]byte
	for _, r := range known {
		ends = append(ends, r.Min, r.Max)
	}
	sort.Slice(ends, func(i, j int) bool { return bytes.Compare(ends[i], ends[j]) < 0 })
	const nProbes = 100
	probes := make([][]byte, nProbes+1)
	for i := range probes {
		probes[i] = ends[min(int(float64(i)/nProbes*float64(len(ends))), len(ends)-1)]
	}
	if num != nil {
		lo, hi := num(ends[0]), num(ends[len(ends)-1])
		var point, rng float64
		for i := range nProbes {
			p := lo + (hi-lo)*(float64(i)+0.5)/nProbes
			q := p + (hi-lo)/100
			var np, nr int
			for _, r := range rs {
				if !r.Known {
					np++
					nr++
					continue
				}
				a, b := num(r.Min), num(r.Max)
				if a <= p && p <= b {
					np++
				}
				if a <= q && p <= b {
					nr++
				}
			}
			point += float64(np) / float64(len(rs))
			rng += float64(nr) / float64(len(rs))
		}
		lc.PointRead, lc.RangeRead = point/nProbes, rng/nProbes
		return lc
	}
	var point, rng float64
	for i := range nProbes {
		p, hi := probes[i], probes[i+1]
		var np, nr int
		for _, r := range rs {
			if !r.Known || (bytes.Compare(r.Min, p) <= 0 && bytes.Compare(p, r.Max) <= 0) {
				np++
			}
			if overlaps(r, Range{Min: p, Max: hi, Known: true}) {
				nr++
			}
		}
		point += float64(np) / float64(len(rs))
		rng += float64(nr) / float64(len(rs))
	}
	lc.PointRead = point / nProbes
	lc.RangeRead = rng / nProbes
	return lc
}

// Text renders a bound for display.
func (c *Clustering) Text(b []byte) string {
	v, err := c.codec.Decode(b)
	if err != nil {
		return fmt.Sprintf("%x", b)
	}
	return c.codec.Format(v)
}

// Positions maps a bound to a number, to measure distances and to plot
// bounds on an axis: the value itself for numbers and times (numeric),
// else its rank among the files' bounds.
func (c *Clustering) Positions() (pos func([]byte) float64, numeric bool) {
	k := c.codec.Type().Kind
	numeric = k != types.KindVarchar && k != types.KindBlob && k != types.KindUUID && k != types.KindEnum && k != types.KindBoolean
	if numeric {
		return func(b []byte) float64 {
			v, err := c.codec.Decode(b)
			if err != nil {
				return 0
			}
			switch k {
			case types.KindFloat, types.KindDouble:
				return v.F
			case types.KindUTinyInt, types.KindUSmallInt, types.KindUInteger, types.KindUBigInt, types.KindUHugeInt:
				f, _ := new(big.Float).SetInt(v.U.Big()).Float64()
				return f
			}
			f, _ := new(big.Float).SetInt(v.I.Big()).Float64()
			return f
		}, true
	}
	var all [][]byte
	for _, r := range c.FileRanges {
		if r.Known {
			all = append(all, r.Min, r.Max)
		}
	}
	sort.Slice(all, func(i, j int) bool { return bytes.Compare(all[i], all[j]) < 0 })
	return func(b []byte) float64 {
		return float64(sort.Search(len(all), func(i int) bool { return bytes.Compare(all[i], b) >= 0 }))
	}, false
}
