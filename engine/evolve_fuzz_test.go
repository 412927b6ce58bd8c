package engine

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/internal/cattest"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/stats"
)

var (
	evolveSeed = flag.Uint64("evolve.seed", 1, "seed of the schema evolution fuzzer's first history; history i uses seed+i")
	evolveSets = flag.Int("evolve.sets", 6, "table histories the schema evolution fuzzer makes")
	evolveN    = flag.Int("evolve.n", 25, "predicates per snapshot checked")
)

// evoCol is a column as the test tracks it, apart from the catalog: key
// stays the same across renames and widenings (as the catalog's id does
// not across a widening), so the test's mapping is its own.
type evoCol struct {
	key     int
	name    string
	typ     string // DuckDB type name
	def     string // SQL constant files registered before the column read as
	addedAt int    // the step that added it; files written before lack it
	part    bool   // a Hive partition column: its value is the file's directory's
}

type evoFile struct {
	path  string
	part  string // the partition value as an SQL constant (Hive histories)
	step  int
	names map[int]string // key → the name the file holds the column under
	// extra is a column the file holds that the table lacked when it was
	// registered (add --ignore-extra-columns), until an add column of its
	// name maps it in; nil when none or mapped.
	extra *evoExtra
}

type evoExtra struct{ name, typ string }

// evoWidens says DuckDB reads every value of type from as one of type to:
// the file's own column maps into an added column of type to.
func evoWidens(from, to string) bool {
	return from == to || slices.Contains(map[string][]string{
		"INTEGER": {"BIGINT"}, "FLOAT": {"DOUBLE"}, "DECIMAL(9,2)": {"DECIMAL(12,2)", "DECIMAL(14,4)"},
	}[from], to)
}

// evoFamily is the literal family of a DuckDB type.
func evoFamily(typ string) string {
	switch {
	case typ == "INTEGER" || typ == "BIGINT":
		return "int"
	case typ == "FLOAT" || typ == "DOUBLE":
		return "float"
	case strings.HasPrefix(typ, "DECIMAL"):
		return "decimal"
	}
	return "string"
}

var evoLits = map[string][]string{
	"int":     {"-6", "-1", "0", "3", "7", "10", "49", "50", "51"},
	"float":   {"-1.5", "0", "0.1", "0.1::FLOAT", "2.5", "3.3", "10", "'NaN'::DOUBLE", "1e3"},
	"decimal": {"-5.01", "-1.25", "0", "0.10", "1.5", "3.75", "99.99", "100.00"},
	"string":  {"''", "'a'", "'b'", "'hi'", "'n/a'", "'zz'"},
}

func evoValue(r *rand.Rand, typ string) string {
	if r.IntN(7) == 0 {
		return "NULL"
	}
	switch evoFamily(typ) {
	case "int":
		return fmt.Sprint(r.IntN(57) - 6)
	case "float":
		return []string{"'-1.5'", "'0'", "'0.1'", "'2.5'", "'3.3'", "'10'", "'NaN'", "'1000'"}[r.IntN(8)]
	case "decimal":
		return fmt.Sprintf("%d.%02d", r.IntN(100)-5, r.IntN(100))
	}
	return []string{"''", "'a'", "'b'", "'hi'", "'n/a'", "'zz'", "'q'"}[r.IntN(7)]
}

// TestSchemaEvolutionFuzz builds random table histories — files added
// between columns added (with and without defaults), renamed, dropped
// (and names reused), and widened (INTEGER → BIGINT, FLOAT → DOUBLE,
// DECIMAL to more digits) — and at every snapshot compares rocklake with
// DuckDB reading each file with the equivalent explicit SQL (the old name,
// the default, the cast), which the test derives from its own record of
// the history: rows and count/min/max of random predicates, no skipped
// file holding a matching row, every all-match file matching in full.
// Some files hold a column the table lacks (add --ignore-extra-columns);
// an add column of that name reads their values, cast where the added type
// widens theirs, and is refused, the catalog unchanged, where it does not.
func TestSchemaEvolutionFuzz(t *testing.T) {
	ctx := context.Background()
	var queries, skipped, allMatch, metadata, split, snapshots, mappedIn, refused int
	for set := range *evolveSets {
		seed := *evolveSeed + uint64(set)
		r := rand.New(rand.NewPCG(seed, 22))
		dir := t.TempDir()
		base, err := Open("")
		if err != nil {
			t.Fatal(err)
		}
		c, _ := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
		cols := []evoCol{
			{key: 0, name: "id", typ: "BIGINT", def: "NULL"},
			{key: 1, name: "a", typ: "INTEGER", def: "NULL"},
			{key: 2, name: "f", typ: "FLOAT", def: "NULL"},
			{key: 3, name: "d", typ: "DECIMAL(9,2)", def: "NULL"},
			{key: 4, name: "s", typ: "VARCHAR", def: "NULL"},
		}
		// Every other history is of a table partitioned Hive-style by k,
		// with NULL partitions (__HIVE_DEFAULT_PARTITION__).
		hive := set%2 == 1
		if hive {
			cols = append(cols, evoCol{key: 5, name: "k", typ: "BIGINT", def: "NULL", part: true})
		}
		var defs []string
		for _, col := range cols {
			defs = append(defs, col.name+" "+col.typ)
		}
		var parts []string
		if hive {
			parts = []string{"k"}
		}
		cattest.CreateTable(t, c, "t", defs, parts...)
		nextKey, nextID := len(cols), 0
		var files []evoFile
		type snap struct {
			id    int64
			cols  []evoCol
			files []evoFile
			what  string
		}
		var snaps []snap
		var history []string
		freeName := func() string {
			for {
				n := []string{"a", "b", "x", "y", "z", "note", "f", "d", "s"}[r.IntN(9)]
				if !slices.ContainsFunc(cols, func(c evoCol) bool { return strings.EqualFold(c.name, n) }) {
					return n
				}
			}
		}
		writeFile := func(step int) {
			path := filepath.Join(dir, fmt.Sprintf("f%02d.parquet", len(files)))
			ef := evoFile{step: step, names: map[int]string{}}
			var phys []evoCol
			for _, col := range cols {
				if !col.part {
					phys = append(phys, col)
					continue
				}
				v := []string{"__HIVE_DEFAULT_PARTITION__", "-3", "0", "7"}[r.IntN(4)]
				ef.part = v
				if v == "__HIVE_DEFAULT_PARTITION__" {
					ef.part = "NULL"
				}
				path = filepath.Join(dir, col.name+"="+v, fmt.Sprintf("f%02d.parquet", len(files)))
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			ef.path = path
			// A column the table lacks, left out at add (and mapped in by a
			// later add column of its name), in some files.
			if r.IntN(3) == 0 {
				ef.extra = &evoExtra{name: freeName(), typ: []string{"INTEGER", "FLOAT", "DECIMAL(9,2)", "VARCHAR"}[r.IntN(4)]}
				if r.IntN(3) == 0 {
					ef.extra.name = strings.ToUpper(ef.extra.name) // DuckDB binds names ignoring ASCII case
				}
				phys = append(phys, evoCol{key: -1, name: ef.extra.name, typ: ef.extra.typ})
			}
			n := 10 + r.IntN(40)
			var rows, sel []string
			for range n {
				vals := []string{fmt.Sprint(nextID)}
				nextID++
				for _, col := range phys[1:] {
					vals = append(vals, evoValue(r, col.typ))
				}
				rows = append(rows, "("+strings.Join(vals, ", ")+")")
			}
			for i, col := range phys {
				sel = append(sel, fmt.Sprintf("CAST(c%d AS %s) AS %q", i, col.typ, col.name))
				if col.key >= 0 {
					ef.names[col.key] = col.name
				}
			}
			var aliases []string
			for i := range phys {
				aliases = append(aliases, fmt.Sprintf("c%d", i))
			}
			q := fmt.Sprintf("COPY (SELECT %s FROM (VALUES %s) v(%s)) TO '%s' (FORMAT parquet, ROW_GROUP_SIZE %d)",
				strings.Join(sel, ", "), strings.Join(rows, ", "), strings.Join(aliases, ", "), path, 8+r.IntN(16))
			if _, err := base.Exec(q); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			res, err := ingest.Add(c, "t", []string{path}, ingest.Options{IgnoreExtraColumns: ef.extra != nil})
			if err != nil {
				t.Fatalf("seed %d: %s: add %s: %v", seed, strings.Join(history, "; "), path, err)
			}
			files = append(files, ef)
			history = append(history, "add "+filepath.Base(path))
			snaps = append(snaps, snap{res.Snapshot.ID, slices.Clone(cols), slices.Clone(files), "add"})
		}
		writeFile(0)
		for step := 1; step < 9; step++ {
			if r.IntN(5) < 2 {
				writeFile(step)
				continue
			}
			var a catalog.Alteration
			k := 1 + r.IntN(len(cols)-1) // never id
			col := &cols[k]
			kind := r.IntN(4)
			if slices.ContainsFunc(files, func(f evoFile) bool { return f.extra != nil }) && r.IntN(3) == 0 {
				kind = 0 // map a file's own column in
			}
			if col.part && (kind == 2 || kind == 3) {
				step-- // a partition column is renamed only
				continue
			}
			switch kind {
			case 0:
				typ := []string{"INTEGER", "FLOAT", "DECIMAL(9,2)", "VARCHAR"}[r.IntN(4)]
				nc := evoCol{key: nextKey, name: freeName(), typ: typ, def: "NULL", addedAt: step}
				// Mostly the name and a type (or a widening of it) some
				// file holds unmapped.
				var holders []int
				for i := range files {
					if files[i].extra != nil && r.IntN(4) > 0 {
						if ex := files[i].extra; !slices.ContainsFunc(cols, func(c evoCol) bool { return strings.EqualFold(c.name, ex.name) }) {
							nc.name = strings.ToLower(ex.name)
							// Mostly its type or a widening of it; now and
							// then one that is neither (refused).
							choices := append([]string{ex.typ, ex.typ, ex.typ}, map[string][]string{
								"INTEGER": {"BIGINT"}, "FLOAT": {"DOUBLE"}, "DECIMAL(9,2)": {"DECIMAL(12,2)", "DECIMAL(14,4)"},
							}[ex.typ]...)
							if r.IntN(4) == 0 {
								choices = []string{"VARCHAR", "INTEGER", "FLOAT"}
							}
							nc.typ = choices[r.IntN(len(choices))]
							typ = nc.typ
							break
						}
					}
				}
				fits := true
				for i := range files {
					if ex := files[i].extra; ex != nil && strings.EqualFold(ex.name, nc.name) {
						holders = append(holders, i)
						fits = fits && evoWidens(ex.typ, typ)
					}
				}
				nextKey++
				a = catalog.Alteration{Kind: catalog.AddColumn, Column: nc.name, Type: typ}
				var err error
				if a, err = ingest.MapIn(ctx, c, "t", a, nil); err != nil {
					t.Fatalf("seed %d: map in %s: %v", seed, nc.name, err)
				}
				if !fits {
					// Refused, naming a file whose type does not widen.
					before, _ := c.Read(catalog.Latest)
					tx, _ := c.Begin()
					tx.AlterTable("t", a)
					_, err := tx.Commit()
					after, _ := c.Read(catalog.Latest)
					named := slices.ContainsFunc(holders, func(i int) bool {
						return err != nil && strings.Contains(err.Error(), files[i].path) && !evoWidens(files[i].extra.typ, typ)
					})
					if !named || before.Snapshot().ID != after.Snapshot().ID {
						t.Errorf("seed %d: %s over files holding it in other types: %v (snapshot %d, then %d)", seed, a, err, before.Snapshot().ID, after.Snapshot().ID)
					}
					before.Close()
					after.Close()
					refused++
					step--
					continue
				}
				for _, i := range holders {
					files[i].names[nc.key] = files[i].extra.name
					files[i].extra = nil
					mappedIn++
				}
				if r.IntN(3) > 0 {
					v := evoValue(r, typ)
					if v != "NULL" {
						text := strings.Trim(v, "'")
						a.Default = stats.Known(text)
						nc.def = fmt.Sprintf("CAST('%s' AS %s)", text, typ)
					}
				}
				cols = append(cols, nc)
			case 1:
				n := freeName()
				a = catalog.Alteration{Kind: catalog.RenameColumn, Column: col.name, NewName: n}
				col.name = n
			case 2:
				if len(cols) <= 2 {
					step--
					continue
				}
				a = catalog.Alteration{Kind: catalog.DropColumn, Column: col.name}
				cols = slices.Delete(cols, k, k+1)
			default:
				wider := map[string][]string{
					"INTEGER": {"BIGINT"}, "FLOAT": {"DOUBLE"},
					"DECIMAL(9,2)": {"DECIMAL(12,2)", "DECIMAL(14,4)"}, "DECIMAL(12,2)": {"DECIMAL(14,4)"},
				}[col.typ]
				if len(wider) == 0 {
					step--
					continue
				}
				to := wider[r.IntN(len(wider))]
				a = catalog.Alteration{Kind: catalog.SetColumnType, Column: col.name, Type: to}
				if col.def != "NULL" {
					col.def = fmt.Sprintf("CAST(%s AS %s)", col.def, to)
				}
				col.typ = to
			}
			tx, _ := c.Begin()
			tx.AlterTable("t", a)
			s, err := tx.Commit()
			if err != nil {
				t.Fatalf("seed %d: %s: %s: %v", seed, strings.Join(history, "; "), a, err)
			}
			history = append(history, a.String())
			snaps = append(snaps, snap{s.ID, slices.Clone(cols), slices.Clone(files), a.String()})
		}
		e, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		for _, sn := range snaps {
			snapshots++
			// The oracle: each file read with explicit SQL, from the test's
			// own record of which name it holds each column under.
			var parts []string
			for _, f := range sn.files {
				var sel []string
				for _, col := range sn.cols {
					if col.part {
						sel = append(sel, fmt.Sprintf("CAST(%s AS %s) AS %q", f.part, col.typ, col.name))
					} else if name, ok := f.names[col.key]; ok {
						sel = append(sel, fmt.Sprintf("CAST(%q AS %s) AS %q", name, col.typ, col.name))
					} else {
						sel = append(sel, fmt.Sprintf("CAST(%s AS %s) AS %q", col.def, col.typ, col.name))
					}
				}
				parts = append(parts, fmt.Sprintf("SELECT %s, filename FROM read_parquet('%s', filename = true, can_have_nan = true)", strings.Join(sel, ", "), f.path))
			}
			if _, err := base.Exec(fmt.Sprintf("CREATE OR REPLACE VIEW o AS %s; CREATE OR REPLACE VIEW ot AS SELECT * EXCLUDE (filename) FROM o",
				strings.Join(parts, " UNION ALL "))); err != nil {
				t.Fatal(err)
			}
			where := fmt.Sprintf("seed %d, snapshot %d (%s)", seed, sn.id, strings.Join(history, "; "))
			opts := QueryOptions{Snapshot: sn.id}
			// The schema itself, as each snapshot had it.
			res, err := e.Query(ctx, "SELECT * FROM t LIMIT 0", opts)
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			var want []string
			for _, col := range sn.cols {
				want = append(want, col.name)
			}
			if got := strings.Join(res.Columns, ","); got != strings.Join(want, ",") {
				t.Errorf("%s: columns %s, want %s", where, got, strings.Join(want, ","))
			}
			for range *evolveN {
				pc := evoCols(sn.cols)
				pred := evoPred(r, pc, 2)
				queries++
				q := "SELECT * FROM t WHERE " + pred
				// Every other query reads the kept files in part, by
				// pages or by row ranges, wherever it can.
				qopts := opts
				qopts.Partial = []PartialMode{PartialAuto, PartialForce, PartialAuto, PartialForceRows}[queries%4]
				res, err := e.Query(ctx, q, qopts)
				want, werr := baseline(t, base, "SELECT * FROM ot WHERE "+pred)
				if err != nil || werr != nil {
					if (err == nil) != (werr == nil) {
						t.Errorf("%s: %s: rocklake's error %v, DuckDB's %v", where, q, err, werr)
					}
					continue
				}
				var got []string
				for _, row := range res.Rows {
					got = append(got, rowText(row))
				}
				if !sameRows(got, want, false) {
					t.Errorf("%s: %s (partial %v): %d rows, DuckDB %d", where, q, qopts.Partial, len(got), len(want))
				}
				var paths []string
				for _, f := range sn.files {
					paths = append(paths, f.path)
				}
				sk, am := checkFileDecisions(t, base, "o", pred, res.Tables[0].Plan, paths, where)
				skipped, allMatch = skipped+sk, allMatch+am
				k := pc[r.IntN(len(pc))].name
				agg := fmt.Sprintf("SELECT count(*), min(%s), max(%s) FROM t WHERE %s", k, k, pred)
				ares, err := e.Query(ctx, agg, opts)
				awant, werr := baseline(t, base, strings.Replace(agg, "FROM t ", "FROM ot ", 1))
				if err != nil || werr != nil {
					if (err == nil) != (werr == nil) {
						t.Errorf("%s: %s: rocklake's error %v, DuckDB's %v", where, agg, err, werr)
					}
					continue
				}
				if ares.Metadata {
					metadata++
				}
				if ares.StatsRows > 0 {
					split++
				}
				if len(ares.Rows) != 1 || len(awant) != 1 || rowText(ares.Rows[0]) != awant[0] {
					var got []string
					for _, row := range ares.Rows {
						got = append(got, rowText(row))
					}
					t.Errorf("%s: %s: %v (metadata %v), DuckDB %v", where, agg, got, ares.Metadata, awant)
				}
			}
			// Two references to the table, each planned and read through
			// the mapping on its own.
			p1 := evoPred(r, evoCols(sn.cols), 1)
			p2 := evoPred(r, evoCols(sn.cols), 1)
			j := fmt.Sprintf("SELECT count(*), count(b.id) FROM t a LEFT JOIN t b ON a.id = b.id AND %s WHERE %s",
				strings.ReplaceAll(qualify(p2, sn.cols, "b"), "\x00", ""), qualify(p1, sn.cols, "a"))
			jres, err := e.Query(ctx, j, opts)
			jwant, jerr := baseline(t, base, strings.ReplaceAll(j, "FROM t a LEFT JOIN t b", "FROM ot a LEFT JOIN ot b"))
			if (err == nil) != (jerr == nil) {
				t.Errorf("%s: %s: rocklake's error %v, DuckDB's %v", where, j, err, jerr)
			} else if err == nil && (len(jres.Rows) != 1 || len(jwant) != 1 || rowText(jres.Rows[0]) != jwant[0]) {
				t.Errorf("%s: %s: %v, DuckDB %v", where, j, jres.Rows, jwant)
			}
			// Sorted with a limit: files of other types under one column
			// must not lose rows to DuckDB's Top-N (see Engine.mixedDB).
			k := fmt.Sprintf("%q", sn.cols[1+r.IntN(len(sn.cols)-1)].name)
			q := fmt.Sprintf("SELECT %s, id FROM t ORDER BY %s NULLS LAST, id LIMIT 5", k, k)
			res, err = e.Query(ctx, q, opts)
			want, werr := baseline(t, base, strings.Replace(q, "FROM t ", "FROM ot ", 1))
			if err != nil || werr != nil {
				t.Errorf("%s: %s: %v / %v", where, q, err, werr)
			} else {
				var got []string
				for _, row := range res.Rows {
					got = append(got, rowText(row))
				}
				if !sameRows(got, want, true) {
					t.Errorf("%s: %s: %v, DuckDB %v", where, q, got, want)
				}
			}
		}
		e.Close()
		base.Close()
	}
	t.Logf("%d snapshots, %d predicates, %d file skips checked, %d all-match files checked, %d metadata answers, %d split between statistics and DuckDB; %d files' own columns mapped in, %d add columns refused",
		snapshots, queries, skipped, allMatch, metadata, split, mappedIn, refused)
	// Refusals are rarer: TestAddColumnMapsIgnoredColumns makes sure of one.
	if skipped == 0 || allMatch == 0 || metadata == 0 || split == 0 || mappedIn == 0 {
		t.Errorf("the fuzzer exercised too little: %d skips, %d all-match files, %d metadata answers, %d split answers, %d files mapped in, %d refusals", skipped, allMatch, metadata, split, mappedIn, refused)
	}
}

// evoPred is hivePred over the literal families of evoLits.
func evoPred(r *rand.Rand, cols []hiveFuzzCol, depth int) string {
	if depth > 0 && r.IntN(3) == 0 {
		a, b := evoPred(r, cols, depth-1), evoPred(r, cols, depth-1)
		switch r.IntN(3) {
		case 0:
			return "(" + a + " AND " + b + ")"
		case 1:
			return "(" + a + " OR " + b + ")"
		default:
			return "NOT (" + a + ")"
		}
	}
	c := cols[r.IntN(len(cols))]
	lits := evoLits[evoFamily(c.typ)]
	lit := func() string { return lits[r.IntN(len(lits))] }
	switch r.IntN(7) {
	case 0:
		return c.name + " IS NULL"
	case 1:
		return c.name + " IS NOT NULL"
	case 2:
		return c.name + " IN (" + lit() + ", " + lit() + ")"
	case 3:
		return c.name + " BETWEEN " + lit() + " AND " + lit()
	default:
		return c.name + " " + []string{"=", "<>", "<", "<=", ">", ">="}[r.IntN(6)] + " " + lit()
	}
}

func evoCols(cols []evoCol) []hiveFuzzCol {
	var pc []hiveFuzzCol
	for _, col := range cols {
		pc = append(pc, hiveFuzzCol{name: fmt.Sprintf("%q", col.name), typ: col.typ})
	}
	return pc
}

// qualify prefixes every column of pred (quoted as evoCols quotes them)
// with alias.
func qualify(pred string, cols []evoCol, alias string) string {
	for _, col := range cols {
		q := fmt.Sprintf("%q", col.name)
		pred = strings.ReplaceAll(pred, q, "\x00"+alias+"."+q)
	}
	return strings.ReplaceAll(pred, "\x00", "")
}
