package prune

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/expr"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/stats"
	"github.com/rocklake/rocklake/types"
	"github.com/rocklake/rocklake/types/typestest"
)

var (
	longRun = flag.Int("prune.checks", 0, "run the soundness suite until this many (unit, predicate) checks")
	seedArg = flag.Uint64("prune.seed", 0, "seed for the soundness suite (0: the fixed default)")
)

// prunableTypes are the column types the suite draws (pqwrite writes them).
var prunableTypes = []string{
	"boolean", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
	"float32", "float64", "decimal(9,2)", "decimal(18,3)", "decimal(38,10)", "date",
	"timestamp_ms", "timestamp", "timestamp_ns", "timestamptz", "varchar", "blob", "uuid",
}

// tri is SQL's three-valued truth.
type tri uint8

const (
	tFalse tri = iota
	tTrue
	tNull
)

func tnot(a tri) tri {
	switch a {
	case tTrue:
		return tFalse
	case tFalse:
		return tTrue
	}
	return tNull
}

func tand(a, b tri) tri {
	if a == tFalse || b == tFalse {
		return tFalse
	}
	if a == tNull || b == tNull {
		return tNull
	}
	return tTrue
}

func tor(a, b tri) tri {
	if a == tTrue || b == tTrue {
		return tTrue
	}
	if a == tNull || b == tNull {
		return tNull
	}
	return tFalse
}

// rcol is a generated column with its data.
type rcol struct {
	name  string
	typ   types.Type
	codec *types.Codec
	vals  []*types.Value
}

// lit is a reference literal: a value of the column's type, or (numeric
// columns) an exact rational between values.
type lit struct {
	v    *types.Value
	rat  *big.Rat
	sql  string
	null bool
}

// refPred is a predicate the reference evaluates row by row, independently
// of expr and prune, and renders as SQL for them.
type refPred interface {
	eval(row int) tri
	sql() string
}

type (
	rCmp struct {
		c  *rcol
		op string
		l  lit
		// litLeft renders the literal on the left (5 < x).
		litLeft bool
	}
	rBetween struct {
		c      *rcol
		lo, hi lit
		not    bool
	}
	rIn struct {
		c    *rcol
		list []lit
		not  bool
	}
	rIsNull struct {
		c   *rcol
		not bool
	}
	rPrefix struct {
		c    *rcol
		p    string
		not  bool
		form int // LIKE, starts_with
	}
	rIsNaN struct{ c *rcol }
	rNot   struct{ x refPred }
	rAnd   struct{ a, b refPred }
	rOr    struct{ a, b refPred }
	rConst struct{ v tri }
)

func isNaNValue(c *rcol, v *types.Value) bool {
	return (c.typ.Kind == types.KindFloat || c.typ.Kind == types.KindDouble) && math.IsNaN(v.F)
}

// compare orders two values as DuckDB does: NaN above everything and equal
// to itself; otherwise by the verified encodings.
func compare(c *rcol, a, b *types.Value) int {
	an, bn := isNaNValue(c, a), isNaNValue(c, b)
	switch {
	case an && bn:
		return 0
	case an:
		return 1
	case bn:
		return -1
	}
	ea, _ := c.codec.Encode(*a)
	eb, _ := c.codec.Encode(*b)
	return bytes.Compare(ea, eb)
}

// ratOf is a numeric value as an exact rational (nil for NaN/inf).
func ratOf(c *rcol, v *types.Value) *big.Rat {
	switch k := c.typ.Kind; {
	case k == types.KindDecimal:
		r := new(big.Rat).SetInt(v.I.Big())
		return r.Quo(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(c.typ.Scale)), nil)))
	case k == types.KindUTinyInt || k == types.KindUSmallInt || k == types.KindUInteger || k == types.KindUBigInt:
		return new(big.Rat).SetInt(v.U.Big())
	case k == types.KindFloat || k == types.KindDouble:
		if math.IsNaN(v.F) || math.IsInf(v.F, 0) {
			return nil
		}
		return new(big.Rat).SetFloat64(v.F)
	}
	return new(big.Rat).SetInt(v.I.Big())
}

func cmpLit(c *rcol, v *types.Value, l lit) int {
	if l.rat != nil {
		return ratOf(c, v).Cmp(l.rat)
	}
	return compare(c, v, l.v)
}

func applyOp(op string, c int) tri {
	ok := map[string]bool{"=": c == 0, "<>": c != 0, "<": c < 0, "<=": c <= 0, ">": c > 0, ">=": c >= 0}[op]
	if ok {
		return tTrue
	}
	return tFalse
}

func (p rCmp) eval(row int) tri {
	v := p.c.vals[row]
	if v == nil || p.l.null {
		return tNull
	}
	return applyOp(p.op, cmpLit(p.c, v, p.l))
}

func flipOp(op string) string {
	return map[string]string{"=": "=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}[op]
}

func (p rCmp) sql() string {
	if p.litLeft {
		return fmt.Sprintf("%s %s %s", p.l.sql, flipOp(p.op), quote(p.c.name))
	}
	return fmt.Sprintf("%s %s %s", quote(p.c.name), p.op, p.l.sql)
}

func (p rBetween) eval(row int) tri {
	r := tand(rCmp{c: p.c, op: ">=", l: p.lo}.eval(row), rCmp{c: p.c, op: "<=", l: p.hi}.eval(row))
	if p.not {
		return tnot(r)
	}
	return r
}

func (p rBetween) sql() string {
	not := ""
	if p.not {
		not = "NOT "
	}
	return fmt.Sprintf("%s %sBETWEEN %s AND %s", quote(p.c.name), not, p.lo.sql, p.hi.sql)
}

func (p rIn) eval(row int) tri {
	r := tFalse
	for _, l := range p.list {
		r = tor(r, rCmp{c: p.c, op: "=", l: l}.eval(row))
	}
	if p.not {
		return tnot(r)
	}
	return r
}

func (p rIn) sql() string {
	parts := make([]string, len(p.list))
	for i, l := range p.list {
		parts[i] = l.sql
	}
	not := ""
	if p.not {
		not = "NOT "
	}
	return fmt.Sprintf("%s %sIN (%s)", quote(p.c.name), not, strings.Join(parts, ", "))
}

func (p rIsNull) eval(row int) tri {
	if (p.c.vals[row] == nil) != p.not {
		return tTrue
	}
	return tFalse
}

func (p rIsNull) sql() string {
	if p.not {
		return quote(p.c.name) + " IS NOT NULL"
	}
	return quote(p.c.name) + " IS NULL"
}

func (p rPrefix) eval(row int) tri {
	v := p.c.vals[row]
	if v == nil {
		return tNull
	}
	if bytes.HasPrefix(v.B, []byte(p.p)) != p.not {
		return tTrue
	}
	return tFalse
}

func (p rPrefix) sql() string {
	if p.form == 1 {
		s := fmt.Sprintf("starts_with(%s, %s)", quote(p.c.name), sqlString(p.p))
		if p.not {
			return "NOT " + s
		}
		return s
	}
	// Escape the LIKE wildcards in the prefix with '\'.
	esc := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(p.p)
	not := ""
	if p.not {
		not = "NOT "
	}
	return fmt.Sprintf(`%s %sLIKE %s ESCAPE '\'`, quote(p.c.name), not, sqlString(esc+"%"))
}

func (p rIsNaN) eval(row int) tri {
	v := p.c.vals[row]
	if v == nil {
		return tNull
	}
	if math.IsNaN(v.F) {
		return tTrue
	}
	return tFalse
}

func (p rIsNaN) sql() string   { return "isnan(" + quote(p.c.name) + ")" }
func (p rNot) eval(r int) tri  { return tnot(p.x.eval(r)) }
func (p rNot) sql() string     { return "NOT (" + p.x.sql() + ")" }
func (p rAnd) eval(r int) tri  { return tand(p.a.eval(r), p.b.eval(r)) }
func (p rAnd) sql() string     { return "(" + p.a.sql() + " AND " + p.b.sql() + ")" }
func (p rOr) eval(r int) tri   { return tor(p.a.eval(r), p.b.eval(r)) }
func (p rOr) sql() string      { return "(" + p.a.sql() + " OR " + p.b.sql() + ")" }
func (p rConst) eval(int) tri  { return p.v }
func (p rConst) sql() string   { return [...]string{"false", "true", "NULL"}[p.v] }
func quote(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }
func sqlString(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// genLit draws a literal for a column: a value present in the data (on a
// bound), a random value, a neighbour, a NaN or a rational between values.
func genLit(r *rand.Rand, c *rcol) lit {
	if r.IntN(40) == 0 {
		return lit{null: true, sql: "NULL"}
	}
	var v types.Value
	switch r.IntN(4) {
	case 0, 1:
		var present []*types.Value
		for _, x := range c.vals {
			if x != nil {
				present = append(present, x)
			}
		}
		if len(present) > 0 {
			v = *present[r.IntN(len(present))]
			break
		}
		fallthrough
	default:
		v = typestest.Random(r, c.typ)
	}
	isF := c.typ.Kind == types.KindFloat || c.typ.Kind == types.KindDouble
	if isF && r.IntN(8) == 0 {
		v = types.FloatValue([]float64{math.NaN(), 0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1)}[r.IntN(5)])
	}
	exactNumeric := isIntKind(c.typ.Kind) || c.typ.Kind == types.KindDecimal
	if exactNumeric && r.IntN(5) == 0 {
		// A rational strictly between two values of the type.
		base := ratOf(c, &v)
		step := new(big.Rat).SetFrac64(1, 3)
		if c.typ.Kind == types.KindDecimal {
			step.Quo(step, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(c.typ.Scale)), nil)))
		}
		if r.IntN(2) == 0 {
			step.Neg(step)
		}
		q := new(big.Rat).Add(base, step)
		return lit{rat: q, sql: q.FloatString(int(c.typ.Scale) + 12)}
	}
	if math.IsNaN(v.F) && isF {
		return lit{v: &v, sql: fmt.Sprintf("'NaN'::%s", types.DuckDBName(c.typ))}
	}
	text := c.codec.Format(v)
	switch r.IntN(3) {
	case 0:
		return lit{v: &v, sql: sqlString(text)} // cast to the column's type
	case 1:
		return lit{v: &v, sql: fmt.Sprintf("CAST(%s AS %s)", sqlString(text), types.DuckDBName(c.typ))}
	}
	return lit{v: &v, sql: fmt.Sprintf("%s::%s", sqlString(text), types.DuckDBName(c.typ))}
}

func isIntKind(k types.Kind) bool {
	switch k {
	case types.KindTinyInt, types.KindSmallInt, types.KindInteger, types.KindBigInt,
		types.KindUTinyInt, types.KindUSmallInt, types.KindUInteger, types.KindUBigInt:
		return true
	}
	return false
}

func genPred(r *rand.Rand, cols []*rcol, depth int) refPred {
	if depth > 0 && r.IntN(3) == 0 {
		switch r.IntN(3) {
		case 0:
			return rAnd{genPred(r, cols, depth-1), genPred(r, cols, depth-1)}
		case 1:
			return rOr{genPred(r, cols, depth-1), genPred(r, cols, depth-1)}
		}
		return rNot{genPred(r, cols, depth-1)}
	}
	c := cols[r.IntN(len(cols))]
	isF := c.typ.Kind == types.KindFloat || c.typ.Kind == types.KindDouble
	switch n := r.IntN(20); {
	case n < 10:
		ops := []string{"=", "<>", "<", "<=", ">", ">="}
		return rCmp{c: c, op: ops[r.IntN(len(ops))], l: genLit(r, c), litLeft: r.IntN(4) == 0}
	case n < 12:
		return rBetween{c: c, lo: genLit(r, c), hi: genLit(r, c), not: r.IntN(3) == 0}
	case n < 15:
		size := []int{1, 2, 20, 21, 201}[r.IntN(5)]
		list := make([]lit, size)
		for i := range list {
			list[i] = genLit(r, c)
		}
		return rIn{c: c, list: list, not: r.IntN(3) == 0}
	case n < 17:
		return rIsNull{c: c, not: r.IntN(2) == 0}
	case n < 19 && c.typ.Kind == types.KindVarchar:
		p := ""
		var v *types.Value
		if len(c.vals) > 0 {
			v = c.vals[r.IntN(len(c.vals))]
		}
		if v != nil && len(v.B) > 0 {
			p = string(v.B[:r.IntN(len(v.B)+1)])
		} else {
			p = string(typestest.Random(r, c.typ).B)
		}
		return rPrefix{c: c, p: p, not: r.IntN(3) == 0, form: r.IntN(2)}
	case n < 19 && isF:
		return rIsNaN{c: c}
	}
	return rCmp{c: c, op: "<", l: genLit(r, c)}
}

// genTable writes a table of files with random shapes and registers it.
//
// holdBack registers the files without their last column, which the table
// lacks (add --ignore-extra-columns), for evolveTable to map in.
func genTable(t *testing.T, r *rand.Rand, dir string, round int, holdBack bool) (*catalog.Catalog, [][]*rcol) {
	ncols := 2 + r.IntN(4)
	var colTypes []types.Type
	for _, i := range r.Perm(len(prunableTypes))[:ncols] {
		colTypes = append(colTypes, types.MustParseType(prunableTypes[i]))
	}
	c, err := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var files [][]*rcol
	var paths []string
	// Files registered one commit each are as many blocks, each with its
	// summary (blocks.go).
	split := r.IntN(2) == 0
	nfiles := 1 + r.IntN(3)
	if split {
		nfiles = 1 + r.IntN(5)
	}
	for f := range nfiles {
		n := []int{0, 1, 7, 64, 300}[r.IntN(5)]
		var cols []*rcol
		var pcols []pqwrite.Column
		for i, typ := range colTypes {
			codec, _ := types.CodecFor(typ)
			rc := &rcol{name: fmt.Sprintf("c%d", i), typ: typ, codec: codec, vals: make([]*types.Value, n)}
			nullShare := []float64{0, 0, 1, 0.5, r.Float64()}[r.IntN(5)]
			for j := range rc.vals {
				if r.Float64() < nullShare {
					continue
				}
				v := typestest.Random(r, typ)
				if (typ.Kind == types.KindFloat || typ.Kind == types.KindDouble) && r.IntN(12) == 0 {
					v = types.FloatValue(math.NaN())
				}
				if typ.Kind == types.KindVarchar && r.IntN(10) == 0 {
					v = types.StringValue(strings.Repeat("z", 70+r.IntN(60)) + string(rune(0x10FFFF)))
				}
				rc.vals[j] = &v
			}
			if r.IntN(2) == 0 { // sorted data clusters the bounds
				sort.SliceStable(rc.vals, func(a, b int) bool {
					if rc.vals[a] == nil || rc.vals[b] == nil {
						return rc.vals[b] == nil && rc.vals[a] != nil
					}
					return compare(rc, rc.vals[a], rc.vals[b]) < 0
				})
			}
			cols = append(cols, rc)
			pcols = append(pcols, pqwrite.Column{Name: rc.name, Type: typ, Values: rc.vals})
		}
		opts := pqwrite.Options{RowGroupRows: int64(1 + r.IntN(max(n, 1))), PageIndex: r.IntN(2) == 0,
			BloomFilters: r.IntN(3) == 0, Dictionary: r.IntN(2) == 0}
		if r.IntN(3) == 0 {
			opts.PageBytes = 128
		}
		path := filepath.Join(dir, fmt.Sprintf("t%d-f%d.parquet", round, f))
		if err := pqwrite.Write(path, pcols, opts); err != nil {
			t.Fatal(err)
		}
		files = append(files, cols)
		paths = append(paths, path)
	}
	if holdBack {
		var defs []catalog.ColumnDef
		for i, typ := range colTypes[:len(colTypes)-1] {
			defs = append(defs, catalog.ColumnDef{Name: fmt.Sprintf("c%d", i), Type: typ.DuckLakeName()})
		}
		tx, _ := c.Begin()
		tx.CreateTable("t", defs)
		if _, err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	batches := [][]string{paths}
	if split {
		batches = nil
		for _, p := range paths {
			batches = append(batches, []string{p})
		}
	}
	for i, batch := range batches {
		if _, err := ingest.Add(c, "t", batch, ingest.Options{Create: !holdBack && i == 0, IgnoreExtraColumns: holdBack}); err != nil {
			t.Fatal(err)
		}
	}
	return c, files
}

// TestPruningIsSound is the differential suite on real files: every unit
// the planner's Statistics present at every level, evaluated by the one
// evaluator (with its fast paths and without: they must agree), is checked
// against the reference row by row: a Skip holds no row for which the
// predicate is TRUE, an AllMatch no row for which it is not. The levels:
// files (the catalog's column-major stats, with its membership filters and
// without), row groups, row groups with their bloom filters, and the pieces
// of every row group with a page index; and every third predicate the whole
// planner, with bloom filters and page indexes read everywhere.
func TestPruningIsSound(t *testing.T) {
	pruningIsSound(t, 20261129, 25000, false)
}

// TestPruningIsSoundAfterSchemaChanges is the same suite over tables whose
// columns changed after their files were registered (evolveTable): the
// files' statistics, page indexes and bloom filters are read through the
// table's column mapping, and the reference evaluates each file's rows as
// the table reads them (an added column's default, a renamed column's
// values under its new name, a widened one's in the new type).
func TestPruningIsSoundAfterSchemaChanges(t *testing.T) {
	pruningIsSound(t, 20261130, 12000, true)
}

func pruningIsSound(t *testing.T, seed uint64, target int, evolve bool) {
	if *seedArg != 0 {
		seed = *seedArg
	}
	if *longRun > 0 {
		target = *longRun
	}
	t.Logf("seed %d, target %d file and row-group checks (rerun: go test ./prune -run TestPruningIsSound -prune.seed %d)", seed, target, seed)
	// Plans evaluate files in parallel chunks here, as on large tables.
	defer func(n int) { parallelFiles = n }(parallelFiles)
	parallelFiles = 2
	defer func(share int) { subsetShare = share }(subsetShare)
	subsetBefore := subsetPlans.Load()
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	dir := t.TempDir()
	var ck evalChecks
	byLevel := map[string]int{}
	for round := 0; byLevel["file"]+byLevel["row_group"]+byLevel["plan"] < target; round++ {
		holdBack := evolve && r.IntN(2) == 0
		// Plans take either path after the blocks: only the kept blocks'
		// files, or every file less the skipped blocks'.
		subsetShare = []int{1, 1 << 20}[round%2]
		c, files := genTable(t, r, dir, round, holdBack)
		if evolve {
			files = evolveTable(t, r, c, files, holdBack)
		}
		rd, _ := c.Read(catalog.Latest)
		tb, _ := rd.Table("t")
		cols, _ := rd.Columns(tb.ID)
		fs, err := rd.FileSet(tb.ID)
		if err != nil {
			t.Fatal(err)
		}
		dfiles := make([]catalog.DataFile, fs.Len())
		for i := range dfiles {
			if dfiles[i], err = rd.FileAt(fs, i); err != nil {
				t.Fatal(err)
			}
		}
		fxs := make([]*fileIndex, len(dfiles))
		for fi, df := range dfiles {
			if fxs[fi], err = openIndex(df.Location(tb)); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		rgr := &rowGroupReader{r: rd, tableID: tb.ID}
		for pi := range 60 {
			p := genPred(r, files[0], 2)
			text := p.sql()
			b, err := expr.Compile(text, cols)
			if err != nil {
				t.Fatalf("seed %d round %d: %s: %v", seed, round, text, err)
			}
			// The reference on each file's data.
			fps := make([]refPred, len(dfiles))
			for fi := range dfiles {
				fps[fi] = rebind(p, files[0], files[fi])
			}
			where := func(level string) string { return fmt.Sprintf("seed %d round %d %s", seed, round, level) }
			for level, o := range map[string]Options{"file": {}, "file_no_filters": {NoFilters: true}} {
				s, err := fileStatistics(rd, tb.ID, fs, b, o)
				if err != nil {
					t.Fatal(err)
				}
				checkUnits(t, &ck, b, s, func(i int) (refPred, int, int) { return fps[i], 0, int(dfiles[i].RecordCount) }, text, where(level))
				byLevel[level] += s.n
			}
			byLevel["block skip"] += checkBlocks(t, rd, fs, b, dfiles, fps, text, where("block"))
			byLevel["block"] += fs.Blocks()
			rgr.eqCols = equalityColumns(b.Pred)
			for fi, df := range dfiles {
				rgs, err := rgr.read(df, b)
				if err != nil {
					t.Fatal(err)
				}
				if !rgs.haveRows {
					continue // no row-group stats: nothing places the units' rows
				}
				rowsOf := func(i int) (refPred, int, int) {
					return fps[fi], int(rgs.firsts[i]), int(rgs.firsts[i] + rgs.rows[i])
				}
				checkUnits(t, &ck, b, rgs, rowsOf, text, where("row group"))
				byLevel["row_group"] += rgs.n
				// The file's own structures, by the names it holds the
				// columns under.
				fb, err := rgr.fileBound(df, b)
				if err != nil {
					t.Fatal(err)
				}
				if slices.Contains(rgs.bloom, true) {
					checkUnits(t, &ck, b, &withBloom{Statistics: rgs, fx: fxs[fi], b: fb, rg: -1}, rowsOf, text, where("bloom"))
					byLevel["bloom"] += rgs.n
				}
				for i := range rgs.n {
					ps, cuts := pieces(fxs[fi], i, rgs.rows[i], fb, rgs.unitStats)
					if ps == nil {
						continue
					}
					var s Statistics = ps
					if rgs.bloom[i] {
						s = &withBloom{Statistics: ps, fx: fxs[fi], b: fb, rg: i}
					}
					first := int(rgs.firsts[i])
					checkUnits(t, &ck, b, s, func(k int) (refPred, int, int) {
						return fps[fi], first + int(cuts[k]), first + int(cuts[k+1])
					}, text, where(fmt.Sprintf("row group %d piece", i)))
					byLevel["page"] += ps.n
				}
			}
			// The whole planner: no row it leaves out may match. (Every
			// third predicate: it repeats the levels above, through the
			// cost rules.)
			if pi%3 != 0 {
				continue
			}
			plan, err := PlanTable(rd, "t", text, Options{Pages: true, IndexMinRows: -1})
			if err != nil {
				t.Fatalf("seed %d round %d: plan %s: %v", seed, round, text, err)
			}
			byLevel["plan"] += plan.Pages.Total + len(dfiles)
			// The same plan again, at the same state, from what the first
			// left in the plan cache (stats blocks, row-group statistics):
			// it keeps exactly the same rows.
			again, err := PlanTable(rd, "t", text, Options{Pages: true, IndexMinRows: -1})
			if err != nil {
				t.Fatalf("seed %d round %d: plan %s again: %v", seed, round, text, err)
			}
			if !reflect.DeepEqual(plan.KeptFiles, again.KeptFiles) {
				t.Fatalf("WARM PLAN DIFFERS (seed %d round %d)\n  predicate: %s\n  first: %+v\n  again: %+v", seed, round, text, plan.KeptFiles, again.KeptFiles)
			}
			checkDeferred(t, rd, tb, b, plan, Options{Pages: true, IndexMinRows: -1}, where("deferred"))
			for fi, df := range dfiles {
				kept := make([]bool, df.RecordCount)
				allMatch := false
				for _, kf := range plan.KeptFiles {
					if kf.FileID != df.ID {
						continue
					}
					allMatch = kf.AllMatch
					if len(kf.Ranges) == 0 {
						for i := range kept {
							kept[i] = true
						}
					}
					for _, rr := range kf.Ranges {
						for row := rr.First; row < rr.First+rr.Count; row++ {
							kept[row] = true
							if rr.AllMatch && fps[fi].eval(int(row)) != tTrue {
								t.Fatalf("WRONG ALL-MATCH RANGE (seed %d round %d) file %d row %d in %+v\n  predicate: %s\n  bound: %s",
									seed, round, fi, row, rr, text, b.Pred)
							}
						}
						if rr.AllMatch {
							byLevel["all-match range"]++
						}
					}
				}
				for row, k := range kept {
					got := fps[fi].eval(row)
					if !k && got == tTrue {
						t.Fatalf("UNSOUND PLAN (seed %d round %d) file %d row %d matches but is not read\n  predicate: %s\n  bound: %s\n  plan: %s",
							seed, round, fi, row, text, b.Pred, plan)
					}
					if k && allMatch && got != tTrue {
						t.Fatalf("WRONG ALL-MATCH PLAN (seed %d round %d) file %d row %d\n  predicate: %s", seed, round, fi, row, text)
					}
				}
			}
		}
		rgr.close()
		for _, fx := range fxs {
			fx.Close()
		}
		rd.Close()
	}
	checks := ck.agree + ck.oneUnit + ck.reference + byLevel["plan"]
	byLevel["plans of kept blocks' files"] = int(subsetPlans.Load() - subsetBefore)
	t.Logf("%d checks: %d units x predicates %v, each a word/bytes/scalar agreement, a one-unit agreement and a reference check (%d skipped, %d all-match; comparisons decided: %d from words, %d from bytes), and %d plan checks",
		checks, ck.units, byLevel, ck.skips, ck.allMatch, ck.wordUnits, ck.byteUnits, byLevel["plan"])
	if ck.wordUnits == 0 || ck.byteUnits == 0 || byLevel["bloom"] == 0 || byLevel["page"] == 0 || byLevel["all-match range"] == 0 ||
		byLevel["block skip"] == 0 || byLevel["plans of kept blocks' files"] == 0 {
		t.Errorf("a level or path went unchecked: %v, comparisons from words %d, from bytes %d", byLevel, ck.wordUnits, ck.byteUnits)
	}
}

// checkBlocks checks the block level: a block the summaries skip holds
// no row of its files for which the predicate is TRUE, and one they find
// all-matching no row for which it is not.
func checkBlocks(t *testing.T, rd *catalog.Reader, fs *catalog.FileSet, b *expr.Bound, dfiles []catalog.DataFile, fps []refPred, text, where string) (skips int) {
	t.Helper()
	if fs.Blocks() == 0 {
		return 0
	}
	bs, err := blockStatistics(rd, fs, b)
	if err != nil {
		t.Fatal(err)
	}
	for i, res := range evalFiles(compile(b.Pred), bs, nil) {
		if res == Maybe {
			continue
		}
		if res == Skip {
			skips++
		}
		start, end := fs.BlockFiles(i)
		for p := start; p < end; p++ {
			for row := range int(dfiles[p].RecordCount) {
				got := fps[p].eval(row)
				if res == Skip && got == tTrue {
					t.Fatalf("UNSOUND BLOCK SKIP (%s) block %d file %d row %d matches\n  predicate: %s\n  bound: %s", where, i, p, row, text, b.Pred)
				}
				if res == AllMatch && got != tTrue {
					t.Fatalf("WRONG BLOCK ALL-MATCH (%s) block %d file %d row %d\n  predicate: %s\n  bound: %s", where, i, p, row, text, b.Pred)
				}
			}
		}
	}
	return skips
}

// rebind points a reference predicate built on one file's columns at
// another file's columns (same names and types, other data).
func rebind(p refPred, from, to []*rcol) refPred {
	m := map[*rcol]*rcol{}
	for i := range from {
		m[from[i]] = to[i]
	}
	var rb func(p refPred) refPred
	rb = func(p refPred) refPred {
		switch p := p.(type) {
		case rCmp:
			p.c = m[p.c]
			return p
		case rBetween:
			p.c = m[p.c]
			return p
		case rIn:
			p.c = m[p.c]
			return p
		case rIsNull:
			p.c = m[p.c]
			return p
		case rPrefix:
			p.c = m[p.c]
			return p
		case rIsNaN:
			p.c = m[p.c]
			return p
		case rNot:
			return rNot{rb(p.x)}
		case rAnd:
			return rAnd{rb(p.a), rb(p.b)}
		case rOr:
			return rOr{rb(p.a), rb(p.b)}
		}
		return p
	}
	return rb(p)
}

// evolveTable changes a registered table's columns one to three times —
// renames, drops, columns added with a default or NULL (sometimes under
// the name of a column dropped before, which the files still hold, with
// other values), widenings — and returns each file's columns as the table
// now reads them.
func evolveTable(t *testing.T, r *rand.Rand, c *catalog.Catalog, files [][]*rcol, heldBack bool) [][]*rcol {
	t.Helper()
	cur := make([][]*rcol, len(files))
	for i := range files {
		cur[i] = slices.Clone(files[i])
	}
	var dropped []*rcol
	wider := map[string]string{
		"int8": "int64", "int16": "int32", "int32": "int64", "uint8": "uint64", "uint16": "uint32", "uint32": "uint64",
		"float32": "float64", "decimal(9,2)": "decimal(18,2)",
	}
	if heldBack {
		// The files' last column, left out when they were registered, added
		// as their type or a widening of it: the files read their own
		// values, with the statistics of their footers.
		last := len(cur[0]) - 1
		mapIn := func(typ string) catalog.Alteration {
			a, err := ingest.MapIn(context.Background(), c, "t", catalog.Alteration{Kind: catalog.AddColumn, Column: cur[0][last].name, Type: typ}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(a.MappedIn) != len(cur) {
				t.Fatalf("%s: %d files to map in, want %d", a, len(a.MappedIn), len(cur))
			}
			return a
		}
		// The files' type as their footers give it (timestamp_ms is
		// written as a TIMESTAMP(MILLIS), which reads as timestamp), as
		// add --create would make the column, or a widening of it.
		a := mapIn(cur[0][last].typ.DuckLakeName())
		typ := cur[0][last].typ
		if ft := a.MappedIn[0].Type; ft.DuckLakeName() != typ.DuckLakeName() {
			a = mapIn(ft.DuckLakeName())
		}
		if to, ok := wider[a.MappedIn[0].Type.DuckLakeName()]; ok && r.IntN(2) == 0 {
			typ = types.MustParseType(to)
			a = mapIn(to)
		}
		codec, _ := types.CodecFor(typ)
		tx, _ := c.Begin()
		tx.AlterTable("t", a)
		if _, err := tx.Commit(); err != nil {
			t.Fatalf("%s: %v", a, err)
		}
		for fi := range cur {
			cp := *cur[fi][last]
			cp.typ, cp.codec = typ, codec
			cur[fi][last] = &cp
		}
	}
	for step := range 1 + r.IntN(3) {
		k := r.IntN(len(cur[0]))
		var a catalog.Alteration
		switch r.IntN(4) {
		case 0:
			n := fmt.Sprintf("r%d", step)
			a = catalog.Alteration{Kind: catalog.RenameColumn, Column: cur[0][k].name, NewName: n}
			for fi := range cur {
				cp := *cur[fi][k]
				cp.name = n
				cur[fi][k] = &cp
			}
		case 1:
			if len(cur[0]) == 1 {
				continue
			}
			a = catalog.Alteration{Kind: catalog.DropColumn, Column: cur[0][k].name}
			dropped = append(dropped, cur[0][k])
			for fi := range cur {
				cur[fi] = slices.Delete(cur[fi], k, k+1)
			}
		case 2:
			typ := types.MustParseType(prunableTypes[r.IntN(len(prunableTypes))])
			name := fmt.Sprintf("n%d", step)
			if len(dropped) > 0 && r.IntN(2) == 0 {
				// The files hold a column of this name, often of this type,
				// whose statistics must not stand for the new column's.
				k := r.IntN(len(dropped))
				d := dropped[k]
				dropped = slices.Delete(dropped, k, k+1)
				name = d.name
				if r.IntN(2) == 0 {
					typ = d.typ
				}
			}
			codec, _ := types.CodecFor(typ)
			a = catalog.Alteration{Kind: catalog.AddColumn, Column: name, Type: typ.DuckLakeName()}
			var v *types.Value
			if r.IntN(3) > 0 {
				x := typestest.Random(r, typ)
				if (typ.Kind == types.KindFloat || typ.Kind == types.KindDouble) && r.IntN(4) == 0 {
					x = types.FloatValue(math.NaN())
				}
				text := codec.Format(x)
				back, err := codec.Parse(text)
				if err != nil {
					t.Fatalf("%s %q: %v", typ, text, err)
				}
				a.Default, v = stats.Known(text), &back
			}
			for fi := range cur {
				n := 0
				if len(files[fi]) > 0 {
					n = len(files[fi][0].vals)
				}
				rc := &rcol{name: name, typ: typ, codec: codec, vals: make([]*types.Value, n)}
				for j := range rc.vals {
					rc.vals[j] = v
				}
				cur[fi] = append(cur[fi], rc)
			}
		default:
			to, ok := wider[cur[0][k].typ.DuckLakeName()]
			if !ok {
				continue
			}
			typ := types.MustParseType(to)
			codec, _ := types.CodecFor(typ)
			a = catalog.Alteration{Kind: catalog.SetColumnType, Column: cur[0][k].name, Type: to}
			for fi := range cur {
				cp := *cur[fi][k]
				cp.typ, cp.codec = typ, codec
				cur[fi][k] = &cp
			}
		}
		tx, _ := c.Begin()
		tx.AlterTable("t", a)
		if _, err := tx.Commit(); err != nil {
			t.Fatalf("%s: %v", a, err)
		}
	}
	return cur
}

// checkDeferred plans b again with Options.DeferWhole: before Resolve the
// counts must be the full plan's and every deferred file one the full plan
// keeps whole with every row matching (what a metadata answer counts on);
// after it, the plan must be the full plan exactly.
func checkDeferred(t *testing.T, rd *catalog.Reader, tb catalog.Table, b *expr.Bound, want *Plan, o Options, where string) {
	t.Helper()
	o.DeferWhole = true
	got, err := PlanBound(rd, tb, b, o)
	if err != nil {
		t.Fatalf("%s: deferred plan: %v", where, err)
	}
	if got.Files != want.Files || got.RowGroups != want.RowGroups {
		t.Fatalf("%s: deferred plan counts files %+v row groups %+v, want %+v %+v", where, got.Files, got.RowGroups, want.Files, want.RowGroups)
	}
	fs, err := rd.FileSet(tb.ID)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[int64]KeptFile{}
	for _, kf := range want.KeptFiles {
		byID[kf.FileID] = kf
	}
	for _, i := range got.Deferred() {
		kf, ok := byID[fs.IDs[i]]
		if !ok || !kf.AllMatch || int32(len(kf.RowGroups)) != fs.RowGroupCount[i] || kf.Ranges != nil && len(kf.Ranges) != len(kf.RowGroups) {
			t.Fatalf("%s: deferred file %d, but the full plan keeps it as %+v (kept %v)", where, fs.IDs[i], kf, ok)
		}
	}
	if len(got.KeptFiles)+len(got.Deferred()) != len(want.KeptFiles) {
		t.Fatalf("%s: %d listed + %d deferred files, want %d", where, len(got.KeptFiles), len(got.Deferred()), len(want.KeptFiles))
	}
	if err := got.Resolve(rd); err != nil {
		t.Fatalf("%s: resolve: %v", where, err)
	}
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if !bytes.Equal(g, w) {
		t.Fatalf("%s: resolved deferred plan\n %s\nwant\n %s", where, g, w)
	}
}
