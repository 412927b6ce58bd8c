package engine

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine/duckast"
	"github.com/rocklake/rocklake/internal/sqllex"
	"github.com/rocklake/rocklake/prune"
	"github.com/rocklake/rocklake/types"
)

// Which WHERE conjuncts may skip which table reference.
//
// A conjunct of a SELECT's WHERE may skip the files of a catalog table in
// that SELECT's FROM only where removing rows that fail it cannot change
// what the query returns: rows the WHERE would drop anyway. That holds for
// a table read on its own, for both sides of an inner (or cross, or
// natural) join, and for the preserved side of a LEFT, RIGHT, SEMI or ANTI
// join. It does not hold for the NULL-supplying side of an outer join (a
// removed row turns a match into a NULL-extended row that `t.id IS NULL`
// keeps), for either side of an ASOF or POSITIONAL join (which row pairs
// with which depends on every row), nor under TABLESAMPLE or USING SAMPLE
// (DuckDB samples before WHERE). A reference found anywhere else (a PIVOT
// source, a construct this walker does not know) is read whole.
//
// Every reference gets a view of its own, named in the query text in place
// of the table (see rewrite): two references to one table with different
// conjuncts never share a pruned view, and a table named where the walker
// cannot see it (query_table('t'), query('... t ...'), a statement DuckDB
// cannot serialise) reads the table's own name, bound to every file.

// Reasons a reference is read whole.
const (
	wholeNullSide    = "the NULL-supplying side of an outer join"
	wholeSemiRight   = "the right side of a SEMI or ANTI join"
	wholeASOF        = "a side of an ASOF join"
	wholePositional  = "a side of a POSITIONAL join"
	wholeSample      = "sampled (TABLESAMPLE / USING SAMPLE sample before WHERE)"
	wholeNotFrom     = "named outside a FROM clause (PIVOT, UNPIVOT or another construct)"
	wholeUnknownJoin = "a side of a join of a kind the planner does not prune"
)

// tableRef is one reference to a catalog table in a query, with the WHERE
// conjuncts (as parse-tree nodes) that name only its columns.
type tableRef struct {
	table            catalog.Table
	cols             []catalog.Column
	alias            string
	conjuncts        []map[string]any
	plan             *prune.Plan
	allConjunctsUsed bool
	// foreignConjuncts counts the WHERE conjuncts of its SELECT that were
	// not given to it (constants, subqueries, other tables): a metadata
	// answer must not ignore them.
	foreignConjuncts int
	// renamed is set when the query renames its columns (t AS s(a, b)):
	// names in the query then do not mean the table's columns.
	renamed bool
	// whole says why no conjunct may skip its files; "" when they may.
	whole string
	// r reads the table at the snapshot the reference sees: the query's,
	// or the one its AT clause names (traveled).
	r        *catalog.Reader
	traveled bool
	base     *duckast.TableRef // its BASE_TABLE node
	sel      *duckast.Select   // the SELECT whose FROM holds it; nil elsewhere
}

// qualifier is the name the query knows the reference by.
func (ref *tableRef) qualifier() string {
	if ref.alias != "" {
		return ref.alias
	}
	return ref.table.Name
}

// tableScan is what the walker found in a parse tree.
type tableScan struct {
	refs []*tableRef
	// tableFunctions is set when a table function appears: query_table()
	// and query() name tables in strings the walker cannot follow.
	tableFunctions bool
	// feeds are the change feed's calls, table_changes(...) (feed.go).
	feeds []*duckast.TableRef
	// readers are the snapshots AT clauses named, open until close.
	readers []*catalog.Reader
}

// close closes the readers of the snapshots AT clauses named.
func (s *tableScan) close() {
	for _, r := range s.readers {
		r.Close()
	}
	s.readers = nil
}

// findTables walks the parse tree for BASE_TABLE references, checks they
// name catalog tables (CTE names aside), and assigns WHERE conjuncts.
// A reference with an AT clause reads its table at the snapshot the clause
// names (travel opens it; the scan's readers close with the query).
func findTables(tree duckast.Tree, r *catalog.Reader, travel func(*duckast.Travel) (*catalog.Reader, error)) (*tableScan, error) {
	main, err := newSnapTables(r)
	if err != nil {
		return nil, err
	}
	root := tree.Root()
	w := &walker{snapTables: main, travel: travel, at: map[int64]*snapTables{}, seen: map[uintptr]bool{}, bindings: map[string]bool{}}
	w.collectBindings(root)
	w.visit(root, nil)
	scan := &tableScan{refs: w.refs, tableFunctions: w.tableFunctions, feeds: w.feeds}
	for _, st := range w.at {
		scan.readers = append(scan.readers, st.r)
	}
	if w.err != nil {
		scan.close()
		return nil, w.err
	}
	return scan, nil
}

// snapTables are one snapshot's tables, by folded name.
type snapTables struct {
	r      *catalog.Reader
	byName map[string]catalog.Table
	tables []catalog.Table
}

func newSnapTables(r *catalog.Reader) (*snapTables, error) {
	tables, err := r.Tables()
	if err != nil {
		return nil, err
	}
	byName := map[string]catalog.Table{}
	for _, t := range tables {
		byName[types.FoldIdent(t.Name)] = t
	}
	return &snapTables{r: r, byName: byName, tables: tables}, nil
}

type walker struct {
	*snapTables // the query's snapshot
	travel      func(*duckast.Travel) (*catalog.Reader, error)
	at          map[int64]*snapTables // snapshots AT clauses named, by id
	refs        []*tableRef
	err         error
	// seen holds the BASE_TABLE nodes already registered from a FROM.
	seen map[uintptr]bool
	// bindings holds every name any FROM item of the query is bound to
	// (aliases, table and CTE names, table functions): a.b whose a is one
	// of them is not taken for a struct field (DuckDB may bind a to that
	// item, here or in an enclosing query).
	bindings       map[string]bool
	tableFunctions bool
	feeds          []*duckast.TableRef // table_changes(...) calls
}

func nodeID(m map[string]any) uintptr { return reflect.ValueOf(m).Pointer() }

// collectBindings fills w.bindings from every table reference node.
func (w *walker) collectBindings(n any) {
	switch n := n.(type) {
	case []any:
		for _, x := range n {
			w.collectBindings(x)
		}
	case map[string]any:
		if tr, ok := duckast.TableRefOf(n); ok {
			for _, name := range []string{tr.Alias, tr.TableName, tr.FunctionName} {
				if name != "" {
					w.bindings[types.FoldIdent(name)] = true
				}
			}
			// DuckDB's names for FROM items written without an alias.
			w.bindings["unnamed_subquery"], w.bindings["valueslist"] = true, true
		}
		for _, c := range duckast.CTEs(n) {
			if c.Name != "" {
				w.bindings[types.FoldIdent(c.Name)] = true
			}
		}
		for _, v := range duckast.Children(n) {
			w.collectBindings(v)
		}
	}
}

// with returns scope plus names, leaving scope as it is.
func with(scope map[string]bool, names ...string) map[string]bool {
	out := make(map[string]bool, len(scope)+len(names))
	for k := range scope {
		out[k] = true
	}
	for _, n := range names {
		out[types.FoldIdent(n)] = true
	}
	return out
}

// visit walks the parse tree; scope holds the CTE names visible at n, which
// shadow catalog tables of the same name there and below, and nowhere else.
// A CTE's body sees the CTEs defined before it; a recursive one (DuckDB's
// RECURSIVE_CTE_NODE) sees itself in its recursive step only: a table of
// its own name in its seed, or in a body that is not recursive, is the
// catalog's.
func (w *walker) visit(n any, scope map[string]bool) {
	if w.err != nil {
		return
	}
	switch n := n.(type) {
	case []any:
		for _, x := range n {
			w.visit(x, scope)
		}
	case map[string]any:
		ctes := duckast.CTEs(n)
		var names []string
		for _, c := range ctes {
			w.visit(c.Body, with(scope, names...))
			names = append(names, c.Name)
		}
		scope = with(scope, names...)
		if name, ok := n["cte_name"].(string); ok && n["type"] == "RECURSIVE_CTE_NODE" {
			// The seed (left) names the catalog's table; the recursive
			// step (right) names the CTE being defined.
			for _, k := range slices.Sorted(maps.Keys(n)) {
				switch k {
				case "right":
					w.visit(n[k], with(scope, name))
				case "cte_map":
				default:
					w.visit(n[k], scope)
				}
			}
			return
		}
		if sel, ok := duckast.SelectOf(n); ok {
			w.selectNode(sel, scope)
		} else if tr, ok := duckast.TableRefOf(n); ok {
			switch {
			case tr.Type == "TABLE_FUNCTION" && isFeedCall(tr):
				w.feeds = append(w.feeds, tr)
			case tr.Type == "TABLE_FUNCTION":
				w.tableFunctions = true
			case tr.Type == "BASE_TABLE" && !w.seen[nodeID(n)]:
				w.register(tr, scope, nil, wholeNotFrom)
			}
		}
		for _, v := range duckast.Children(n) {
			w.visit(v, scope)
		}
	}
}

// register records a BASE_TABLE node naming a catalog table; nil for a CTE
// name in scope (or after an error).
func (w *walker) register(m *duckast.TableRef, ctes map[string]bool, sel *duckast.Select, whole string) *tableRef {
	w.seen[nodeID(m.Node)] = true
	name := m.TableName
	lname := types.FoldIdent(name)
	if m.SchemaName == "" && ctes[lname] {
		return nil
	}
	if types.FoldIdent(m.SchemaName) == "temp" {
		// DuckDB's temporary schema, never a catalog table: the tables a
		// change reads its rows from (QueryTarget's Target.Name).
		return nil
	}
	st := w.snapTables
	if m.Travel != nil {
		if st = w.travelTo(m.Travel); st == nil {
			return nil
		}
	}
	t, ok := st.byName[lname]
	if !ok {
		if w.err == nil {
			names := make([]string, len(st.tables))
			for i, t := range st.tables {
				names[i] = t.Name
			}
			have := "the catalog has no tables"
			if len(names) > 0 {
				have = "tables: " + strings.Join(names, ", ")
			}
			w.err = fmt.Errorf("%w %q at snapshot %d (%s)", catalog.ErrNoSuchTable, name, st.r.Snapshot().ID, have)
		}
		return nil
	}
	cols, err := st.r.Columns(t.ID)
	if err != nil {
		w.err = err
		return nil
	}
	ref := &tableRef{table: t, cols: cols, alias: m.Alias, base: m, sel: sel, whole: whole, renamed: m.RenamesColumns, r: st.r, traveled: m.Travel != nil}
	w.refs = append(w.refs, ref)
	return ref
}

// travelTo is the snapshot an AT clause names, opened once per query;
// nil after an error.
func (w *walker) travelTo(tr *duckast.Travel) *snapTables {
	if w.err != nil {
		return nil
	}
	r, err := w.travel(tr)
	if err != nil {
		w.err = err
		return nil
	}
	id := r.Snapshot().ID
	if st, ok := w.at[id]; ok {
		r.Close()
		return st
	}
	st, err := newSnapTables(r)
	if err != nil {
		r.Close()
		w.err = err
		return nil
	}
	w.at[id] = st
	return st
}

// joinSides says, for the two sides of a JOIN node, why each is read whole
// ("" where WHERE conjuncts may prune it), given why the join itself is.
func joinSides(m *duckast.TableRef, why string) (left, right string) {
	if why != "" {
		return why, why
	}
	switch m.RefType {
	case "REGULAR", "NATURAL", "CROSS":
	case "ASOF":
		return wholeASOF, wholeASOF
	case "POSITIONAL":
		return wholePositional, wholePositional
	default:
		return wholeUnknownJoin, wholeUnknownJoin
	}
	switch m.JoinType {
	case "INNER":
		return "", ""
	case "LEFT":
		return "", wholeNullSide
	case "RIGHT":
		return wholeNullSide, ""
	case "SEMI", "ANTI":
		return "", wholeSemiRight
	case "OUTER", "FULL":
		return wholeNullSide, wholeNullSide
	}
	return wholeUnknownJoin, wholeUnknownJoin
}

// selectNode registers the catalog tables in a SELECT's FROM clause and
// gives each prunable one the WHERE conjuncts that refer only to it.
func (w *walker) selectNode(n *duckast.Select, ctes map[string]bool) {
	var refs []*tableRef
	// opaque is set when the FROM holds something other than catalog
	// tables (a subquery, a CTE, a table function): its columns are not
	// known here, so a.b is never taken for a struct field.
	opaque := false
	var collect func(t map[string]any, why string)
	collect = func(t map[string]any, why string) {
		m, ok := duckast.TableRefOf(t)
		if !ok {
			return
		}
		switch m.Type {
		case "BASE_TABLE":
			if why == "" && m.Sampled {
				why = wholeSample
			}
			if ref := w.register(m, ctes, n, why); ref != nil {
				refs = append(refs, ref)
			} else {
				opaque = true
			}
		case "JOIN":
			l, r := joinSides(m, why)
			collect(m.Left, l)
			collect(m.Right, r)
		default:
			opaque = true
		}
	}
	why := ""
	if n.Sampled {
		why = wholeSample
	}
	collect(n.FromTable, why)
	if n.Where == nil || len(refs) == 0 {
		return
	}
	all := duckast.Conjuncts(n.Where)
	for _, c := range all {
		if ref := w.owner(c, refs, opaque); ref != nil && ref.whole == "" {
			ref.conjuncts = append(ref.conjuncts, c)
		}
	}
	for _, ref := range refs {
		ref.foreignConjuncts = len(all) - len(ref.conjuncts)
	}
}

// owner is the one table reference all column references of an expression
// belong to, or nil (several tables, a subquery, an unknown column).
func (w *walker) owner(e map[string]any, refs []*tableRef, opaque bool) *tableRef {
	var found *tableRef
	ok := true
	var walk func(x any)
	walk = func(x any) {
		if !ok {
			return
		}
		switch x := x.(type) {
		case []any:
			for _, y := range x {
				walk(y)
			}
		case map[string]any:
			if duckast.Class(x) == "SUBQUERY" {
				ok = false
				return
			}
			if duckast.Class(x) == "COLUMN_REF" {
				ref := w.resolveRef(x, refs, opaque)
				if ref == nil || ref.renamed || (found != nil && found != ref) {
					ok = false
					return
				}
				found = ref
			}
			for _, v := range x {
				walk(v)
			}
		}
	}
	walk(e)
	if !ok {
		return nil
	}
	return found
}

func hasColumn(ref *tableRef, name string) bool {
	for _, c := range ref.cols {
		if !c.Parent.Known && types.SameIdent(c.Name, name) {
			return true
		}
	}
	return false
}

// resolveRef finds the table a column reference belongs to, as DuckDB
// binds it: a.b is column b of the FROM item named a when there is one,
// else field b of a struct column a; a name no local table has belongs to
// an enclosing query. Where that cannot be decided here, nil.
func (w *walker) resolveRef(x map[string]any, refs []*tableRef, opaque bool) *tableRef {
	names := duckast.ColumnNames(x)
	if len(names) == 0 {
		return nil
	}
	if len(names) >= 2 {
		for _, ref := range refs {
			if types.SameIdent(ref.qualifier(), names[0]) {
				if hasColumn(ref, names[1]) {
					return ref
				}
				return nil
			}
		}
		if opaque || w.bindings[types.FoldIdent(names[0])] {
			return nil
		}
	}
	var match *tableRef
	for _, ref := range refs {
		if hasColumn(ref, names[0]) {
			if match != nil {
				return nil // ambiguous
			}
			match = ref
		}
	}
	return match
}

// stripQualifier drops the reference's own qualifier from a column
// reference's names (t.x is column x of t), so the binder sees plain
// column paths; other dotted names are struct fields.
func (ref *tableRef) stripQualifier(names []string) []string {
	if len(names) >= 2 && types.SameIdent(names[0], ref.qualifier()) && hasColumn(ref, names[1]) {
		return names[1:]
	}
	return names
}

// nameSpan finds a reference's table name in the query text: the byte
// offset DuckDB gives, and the end of the identifier written there (quoted
// or not). ok is false where the text there is not exactly the name (a
// qualified name, an offset DuckDB did not give), and the reference then
// reads the table by its own name.
func nameSpan(query string, ref *tableRef) (at, end int, ok bool) {
	if ref.base.SchemaName != "" || ref.base.CatalogName != "" || !ref.base.HasAt || ref.base.At >= len(query) {
		return 0, 0, false
	}
	at = ref.base.At
	name := ref.base.TableName
	var ident string
	end = at
	if query[at] == '"' {
		var ok bool
		if ident, end, ok = sqllex.Quoted(query, at); !ok {
			return 0, 0, false
		}
	} else {
		for end < len(query) && isNameByte(query[end]) {
			end++
		}
		ident = query[at:end]
	}
	if ident != name && !types.SameIdent(ident, name) {
		return 0, 0, false
	}
	rest := strings.TrimLeft(query[end:], " \t\r\n")
	if strings.HasPrefix(rest, ".") {
		return 0, 0, false
	}
	return at, end, true
}

// textEdit replaces query[at:end] with text.
type textEdit struct {
	at, end int
	text    string
}

// applyEdits applies non-overlapping edits to a query text.
func applyEdits(query string, edits []textEdit) string {
	sort.Slice(edits, func(i, j int) bool { return edits[i].at < edits[j].at })
	var b strings.Builder
	last := 0
	for _, e := range edits {
		b.WriteString(query[last:e.at])
		b.WriteString(e.text)
		last = e.end
	}
	b.WriteString(query[last:])
	return b.String()
}

// namedIn lists the catalog tables whose names appear in a query text as a
// word (any case): the tables a construct the walker cannot follow may
// name. A table named only through a computed string is not found, and
// DuckDB then says it does not exist.
func namedIn(query string, tables []catalog.Table) []catalog.Table {
	var out []catalog.Table
	lq := types.FoldIdent(query)
	for _, t := range tables {
		if wordIn(lq, t.Name) {
			out = append(out, t)
		}
	}
	return out
}

// wordIn reports whether name appears in folded (a text folded by
// types.FoldIdent) as a word, in any case.
func wordIn(folded, name string) bool {
	name = types.FoldIdent(name)
	for from := 0; ; {
		i := strings.Index(folded[from:], name)
		if i < 0 {
			return false
		}
		i += from
		j := i + len(name)
		if (i == 0 || !isNameByte(folded[i-1])) && (j == len(folded) || !isNameByte(folded[j])) {
			return true
		}
		from = i + 1
	}
}

// isNameByte reports whether c may continue an unquoted name in DuckDB's
// SQL ('$' included, as in a$b).
func isNameByte(c byte) bool { return sqllex.IsNamePart(c) || c == '$' }
