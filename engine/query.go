package engine

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"rocklake/catalog"
	"rocklake/expr"
	"rocklake/prune"
	"rocklake/types"
)

// Engine runs SQL over a catalog's tables on embedded DuckDB, reading only
// the files pruning keeps.
type Engine struct {
	cat *catalog.Catalog
	db  *sql.DB

	tmplMu sync.Mutex
	tmpl   string // see whereTemplate

	// DuckDB's parse of a query text, and its printing of a conjunct,
	// depend on the text alone: repeated queries reuse them (about 0.6 ms
	// of DuckDB round trips each time). Both are read-only once stored.
	trees *lru.Cache[string, map[string]any]
	texts *lru.Cache[string, string]

	cleanups sync.WaitGroup // views being dropped after queries returned
	udfs     sync.Map       // curve.Kind → *udfOnce: registered once per engine
}

// New opens an in-memory DuckDB for a catalog.
func New(cat *catalog.Catalog) (*Engine, error) {
	db, err := Open("")
	if err != nil {
		return nil, err
	}
	trees, _ := lru.New[string, map[string]any](256)
	texts, _ := lru.New[string, string](4096)
	return &Engine{cat: cat, db: db, trees: trees, texts: texts}, nil
}

// Close closes DuckDB (not the catalog), after the views of finished
// queries are dropped.
func (e *Engine) Close() error {
	e.cleanups.Wait()
	return e.db.Close()
}

// DB is the DuckDB handle, for callers that compare with DuckDB directly.
func (e *Engine) DB() *sql.DB { return e.db }

// QueryOptions tune Query. The zero value reads the latest snapshot.
type QueryOptions struct {
	Snapshot int64 // a snapshot id, or catalog.Latest (-1)
	// Explain adds DuckDB's plan to the result.
	Explain bool
	// NoPruning reads every file (the baseline rocklake is compared with).
	NoPruning bool
	// NoMetadataAnswers always runs DuckDB, even when the catalog alone
	// could answer.
	NoMetadataAnswers bool
	// Prune tunes the planner.
	Prune prune.Options
	// NoParseCache parses the query and prints its conjuncts through DuckDB
	// as if the text had never been seen (the cost of a new query).
	NoParseCache bool
}

// TablePlan is how one catalog table of a query was pruned.
type TablePlan struct {
	Table      string      `json:"table"`
	Predicates []string    `json:"predicates"`
	Plan       *prune.Plan `json:"plan"`
}

// Result is a query's answer: every value in DuckDB's text form (NULL as
// nil), so that answers from statistics and from DuckDB print alike.
type Result struct {
	Columns  []string     `json:"columns"`
	Rows     [][]*string  `json:"rows"`
	Tables   []*TablePlan `json:"tables"`
	Metadata bool         `json:"answered_from_metadata"`
	Explain  string       `json:"explain,omitempty"`
	Elapsed  time.Duration
	// Phases says where Elapsed went, in order.
	Phases []Phase `json:"phases"`
}

// Phase is one step of a query and its duration: "parse" (DuckDB parses
// the query; tables and conjuncts found), "plan" (conjuncts printed back by
// DuckDB, bound and pruned), "metadata" (the answer from statistics),
// "bind" (the kept files handed to DuckDB as views) and "execute" (DuckDB
// runs the query; rows read).
type Phase struct {
	Name string        `json:"name"`
	Time time.Duration `json:"ns"`
}

// Query runs a DuckDB SELECT that names catalog tables. DuckDB's own parser
// (json_serialize_sql) finds the tables and WHERE clauses; each table's
// conjuncts that name only its columns drive pruning; each table name is
// then bound, for this query only, to a view over the files that survive,
// cast to the table's column types. DuckDB evaluates the query as written.
func (e *Engine) Query(ctx context.Context, query string, opts QueryOptions) (*Result, error) {
	start := time.Now()
	// The query is wrapped below ("SELECT ... FROM (query)"): a trailing
	// semicolon would end it early, and a trailing -- comment is closed by
	// the newline put before the closing parenthesis.
	query = strings.TrimRight(query, "; \t\r\n")
	snap := opts.Snapshot
	if snap < 0 {
		snap = catalog.Latest
	}
	r, err := e.cat.Read(snap)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	conn, err := e.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	// The views and variables a query made are dropped after it returns,
	// off the caller's path; the connection goes back to the pool after.
	var cleanup []string
	defer func() {
		if len(cleanup) == 0 {
			conn.Close()
			return
		}
		stmts := strings.Join(cleanup, "\n")
		e.cleanups.Add(1)
		go func() {
			defer e.cleanups.Done()
			_, _ = conn.ExecContext(context.Background(), stmts)
			conn.Close()
		}()
	}()
	res := &Result{}
	mark := start
	phase := func(name string) {
		now := time.Now()
		res.Phases = append(res.Phases, Phase{name, now.Sub(mark)})
		mark = now
	}

	tree, ok := e.trees.Get(query)
	if !ok || opts.NoParseCache {
		if tree, err = serialize(ctx, conn, query); err != nil {
			return nil, err
		}
		e.trees.Add(query, tree)
	}
	refs, err := findTables(tree, r)
	if err != nil {
		return nil, err
	}
	phase("parse")
	byTable := map[string][]*tableRef{}
	var names []string
	for _, ref := range refs {
		key := strings.ToLower(ref.table.Name)
		if _, ok := byTable[key]; !ok {
			names = append(names, key)
		}
		byTable[key] = append(byTable[key], ref)
	}
	sort.Strings(names)
	views := map[string]string{}
	var lists [][]string // file lists handed over as variables
	for _, key := range names {
		trefs := byTable[key]
		tp, files, byName, err := e.planTable(ctx, conn, r, trefs, opts)
		if err != nil {
			return nil, err
		}
		res.Tables = append(res.Tables, tp)
		src := ""
		if len(files) > listParamMin {
			src = fmt.Sprintf("getvariable('__rocklake_files_%d')", len(lists))
			lists = append(lists, files)
		}
		views[key] = viewSQL(trefs[0].table, trefs[0].cols, files, src, byName)
	}
	phase("plan")
	if !opts.NoMetadataAnswers && !opts.NoPruning && !opts.Explain {
		if ok, err := metadataAnswer(tree, refs, res, r); err != nil {
			return nil, err
		} else if ok {
			res.Metadata = true
			phase("metadata")
			res.Elapsed = time.Since(start)
			return res, nil
		}
	}
	for i, l := range lists {
		cleanup = append(cleanup, fmt.Sprintf("RESET VARIABLE __rocklake_files_%d;", i))
		if _, err := conn.ExecContext(ctx, fmt.Sprintf("SET VARIABLE __rocklake_files_%d = ?::VARCHAR[]", i), l); err != nil {
			return nil, fmt.Errorf("handing over the file list: %w", err)
		}
	}
	phase("bind")
	// The views are created in the same round trip as the query (DuckDB
	// runs a multi-statement text in order and returns the last result),
	// and dropped, with the variables, in one more.
	var create, drop []string
	for _, key := range names {
		name := quoteIdent(byTable[key][0].table.Name)
		create = append(create, fmt.Sprintf("CREATE OR REPLACE TEMP VIEW %s AS %s;\n", name, views[key]))
		drop = append(drop, "DROP VIEW IF EXISTS temp."+name+";")
	}
	cleanup = append(cleanup, drop...)
	prefix := strings.Join(create, "")
	if opts.Explain {
		var b strings.Builder
		rows, err := conn.QueryContext(ctx, prefix+"EXPLAIN "+query+"\n")
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var k, v string
			if err := rows.Scan(&k, &v); err != nil {
				rows.Close()
				return nil, err
			}
			b.WriteString(v)
			b.WriteString("\n")
		}
		rows.Close()
		res.Explain = b.String()
	}
	// COLUMNS(*)::VARCHAR gives every value in DuckDB's text form.
	rows, err := conn.QueryContext(ctx, prefix+"SELECT COLUMNS(*)::VARCHAR FROM (\n"+query+"\n)")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	res.Columns = cols
	for rows.Next() {
		vals := make([]*string, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		res.Rows = append(res.Rows, vals)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	phase("execute")
	res.Elapsed = time.Since(start)
	return res, nil
}

// planTable prunes one catalog table for all its references in the query:
// the files to read are the union over references; byName says some of them
// need their columns matched by name.
func (e *Engine) planTable(ctx context.Context, conn *sql.Conn, r *catalog.Reader, refs []*tableRef, opts QueryOptions) (tp *TablePlan, files []string, byName bool, err error) {
	t := refs[0].table
	tp = &TablePlan{Table: t.Name}
	fs, err := r.FileSet(t.ID)
	if err != nil {
		return nil, nil, false, err
	}
	keep := map[string]bool{}
	var order []string
	var merged *prune.Plan
	for _, ref := range refs {
		var usable []string
		texts, err := e.deserializeWhere(ctx, conn, ref.conjuncts, opts.NoParseCache)
		if err != nil {
			return nil, nil, false, err
		}
		for _, text := range texts {
			if text == "" {
				continue
			}
			if _, err := expr.Compile(text, ref.cols); err != nil {
				continue // DuckDB reports real errors when it runs the query
			}
			usable = append(usable, text)
		}
		pred := strings.Join(usable, " AND ")
		if opts.NoPruning {
			pred = ""
		}
		if pred != "" {
			tp.Predicates = append(tp.Predicates, pred)
		}
		p, err := prune.PlanTable(r, t.Name, pred, opts.Prune)
		if err != nil {
			return nil, nil, false, err
		}
		ref.plan, ref.allConjunctsUsed = p, len(usable) == len(ref.conjuncts)
		if merged == nil {
			merged = p
		} else if len(refs) > 1 {
			merged = p // counts of the last reference; files are the union
		}
		for _, kf := range p.KeptFiles {
			if !keep[kf.Path] {
				keep[kf.Path] = true
				order = append(order, kf.Path)
				if i, ok := slices.BinarySearch(fs.IDs, kf.FileID); !ok || !fs.Files[i].ColumnsMatchTable {
					byName = true
				}
			}
		}
	}
	tp.Plan = merged
	return tp, order, byName, nil
}

// listParamMin is the file count above which a view's file list is handed
// to DuckDB as a prepared parameter rather than spelled in the SQL.
const listParamMin = 64

// viewSQL reads the kept files as the table: the table's columns, cast to
// its types, so that files whose physical types differ read alike.
//
// union_by_name matches each file's columns by name; it makes DuckDB read
// every footer before the scan (about 2x the time of a full scan of many
// small files), so it is left out when every file's columns are exactly
// the table's (catalog.DataFile.ColumnsMatchTable), where position and name
// agree.
//
// src, when set, is an expression giving the file list (a variable set
// from a prepared parameter); else the files are spelled as a literal list,
// whose parsing costs DuckDB about 5 µs per path.
func viewSQL(t catalog.Table, cols []catalog.Column, files []string, src string, byName bool) string {
	var sel []string
	for _, c := range cols {
		if c.Parent.Known {
			continue
		}
		dt := types.DuckDBName(c.Type)
		if dt == "" {
			sel = append(sel, quoteIdent(c.Name))
		} else {
			sel = append(sel, fmt.Sprintf("CAST(%s AS %s) AS %s", quoteIdent(c.Name), dt, quoteIdent(c.Name)))
		}
	}
	if len(files) == 0 {
		var nulls []string
		for _, c := range cols {
			if c.Parent.Known {
				continue
			}
			dt := types.DuckDBName(c.Type)
			if dt == "" {
				dt = "VARCHAR"
			}
			nulls = append(nulls, fmt.Sprintf("CAST(NULL AS %s) AS %s", dt, quoteIdent(c.Name)))
		}
		return "SELECT " + strings.Join(nulls, ", ") + " WHERE false"
	}
	if src == "" {
		quoted := make([]string, len(files))
		for i, f := range files {
			quoted[i] = "'" + strings.ReplaceAll(f, "'", "''") + "'"
		}
		src = "[" + strings.Join(quoted, ", ") + "]"
	}
	return fmt.Sprintf("SELECT %s FROM read_parquet(%s, union_by_name = %t, hive_partitioning = false)",
		strings.Join(sel, ", "), src, byName)
}

// serialize parses a query with DuckDB's parser.
func serialize(ctx context.Context, conn *sql.Conn, query string) (map[string]any, error) {
	var js string
	if err := conn.QueryRowContext(ctx, "SELECT json_serialize_sql(?::VARCHAR)::VARCHAR", query).Scan(&js); err != nil {
		return nil, err
	}
	tree, err := decodeJSON(js)
	if err != nil {
		return nil, err
	}
	if isErr, _ := tree["error"].(bool); isErr {
		msg, _ := tree["error_message"].(string)
		if msg == "" {
			msg = "DuckDB cannot parse the query"
		}
		return nil, errors.New(msg)
	}
	stmts, _ := tree["statements"].([]any)
	if len(stmts) != 1 {
		return nil, fmt.Errorf("expected one SELECT statement, found %d", len(stmts))
	}
	return tree, nil
}

func decodeJSON(s string) (map[string]any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber() // query locations are uint64: keep them exact
	var out map[string]any
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("reading DuckDB's parse tree: %w", err)
	}
	return out, nil
}

// whereTemplate is `SELECT 1 WHERE <expr>`, whose WHERE is replaced to turn
// one expression back into SQL text with DuckDB's own printer.
const whereTemplatePrefix = "SELECT 1 WHERE "

// whereTemplate is the parse tree of "SELECT 1 WHERE true", serialised by
// DuckDB once per engine: a conjunct is printed back by putting it in the
// WHERE of a copy.
func (e *Engine) whereTemplate(ctx context.Context, conn *sql.Conn) (string, error) {
	e.tmplMu.Lock()
	defer e.tmplMu.Unlock()
	if e.tmpl == "" {
		var js string
		if err := conn.QueryRowContext(ctx, "SELECT json_serialize_sql('SELECT 1 WHERE true')::VARCHAR").Scan(&js); err != nil {
			return "", err
		}
		e.tmpl = js
	}
	return e.tmpl, nil
}

// deserializeWhere prints conjuncts (parse-tree nodes) back as SQL text, in
// one DuckDB call; "" where DuckDB cannot print one.
func (e *Engine) deserializeWhere(ctx context.Context, conn *sql.Conn, conds []map[string]any, noCache bool) ([]string, error) {
	out := make([]string, len(conds))
	if len(conds) == 0 {
		return out, nil
	}
	// Conjuncts printed before are looked up by their parse tree's JSON.
	keys := make([]string, len(conds))
	var todo []int
	for i, c := range conds {
		b, err := json.Marshal(c)
		if err != nil {
			return nil, err
		}
		keys[i] = string(b)
		if text, ok := e.texts.Get(keys[i]); ok && !noCache {
			out[i] = text
		} else {
			todo = append(todo, i)
		}
	}
	if len(todo) == 0 {
		return out, nil
	}
	if len(todo) < len(conds) {
		sub := make([]map[string]any, len(todo))
		for j, i := range todo {
			sub[j] = conds[i]
		}
		texts, err := e.deserializeWhere(ctx, conn, sub, noCache)
		if err != nil {
			return nil, err
		}
		for j, i := range todo {
			out[i] = texts[j]
		}
		return out, nil
	}
	defer func() {
		for i, text := range out {
			if text != "" {
				e.texts.Add(keys[i], text)
			}
		}
	}()
	tmpl, err := e.whereTemplate(ctx, conn)
	if err != nil {
		return nil, err
	}
	args := make([]any, len(conds))
	calls := make([]string, len(conds))
	for i, cond := range conds {
		tree, err := decodeJSON(tmpl)
		if err != nil {
			return nil, err
		}
		tree["statements"].([]any)[0].(map[string]any)["node"].(map[string]any)["where_clause"] = cond
		var buf bytes.Buffer
		if err := json.NewEncoder(&buf).Encode(tree); err != nil {
			return nil, err
		}
		args[i], calls[i] = buf.String(), "json_deserialize_sql(?::JSON)"
	}
	texts := make([]any, len(conds))
	vals := make([]sql.NullString, len(conds))
	for i := range vals {
		texts[i] = &vals[i]
	}
	if err := conn.QueryRowContext(ctx, "SELECT "+strings.Join(calls, ", "), args...).Scan(texts...); err != nil {
		if len(conds) == 1 {
			return out, nil
		}
		// One of them cannot be printed: print them one at a time.
		for i := range conds {
			one, err := e.deserializeWhere(ctx, conn, conds[i:i+1], noCache)
			if err != nil {
				return nil, err
			}
			out[i] = one[0]
		}
		return out, nil
	}
	for i, v := range vals {
		if text, ok := strings.CutPrefix(v.String, whereTemplatePrefix); v.Valid && ok {
			out[i] = text
		}
	}
	return out, nil
}

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
	node    map[string]any // the SELECT node it appears in
}

// findTables walks the parse tree for BASE_TABLE references, checks they
// name catalog tables (CTE names aside), and assigns WHERE conjuncts.
func findTables(tree map[string]any, r *catalog.Reader) ([]*tableRef, error) {
	tables, err := r.Tables()
	if err != nil {
		return nil, err
	}
	byName := map[string]catalog.Table{}
	for _, t := range tables {
		byName[strings.ToLower(t.Name)] = t
	}
	w := &walker{r: r, byName: byName, tables: tables}
	w.visit(tree["statements"].([]any)[0].(map[string]any)["node"], nil)
	return w.refs, w.err
}

type walker struct {
	r      *catalog.Reader
	byName map[string]catalog.Table
	tables []catalog.Table
	refs   []*tableRef
	err    error
}

// with returns scope plus names, leaving scope as it is.
func with(scope map[string]bool, names ...string) map[string]bool {
	out := make(map[string]bool, len(scope)+len(names))
	for k := range scope {
		out[k] = true
	}
	for _, n := range names {
		out[strings.ToLower(n)] = true
	}
	return out
}

// visit walks the parse tree; scope holds the CTE names visible at n, which
// shadow catalog tables of the same name there and below, and nowhere else.
// A CTE's body sees the CTEs defined before it, not itself: a table of its
// own name inside it is the catalog's (a recursive CTE then just gets an
// unused view).
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
		var bodies []any
		var bodyScopes []map[string]bool
		if cm, ok := n["cte_map"].(map[string]any); ok {
			if entries, ok := cm["map"].([]any); ok {
				var names []string
				for _, e := range entries {
					em, ok := e.(map[string]any)
					if !ok {
						continue
					}
					k, _ := em["key"].(string)
					bodies, bodyScopes = append(bodies, em["value"]), append(bodyScopes, with(scope, names...))
					names = append(names, k)
				}
				scope = with(scope, names...)
			}
		}
		for i, b := range bodies {
			w.visit(b, bodyScopes[i])
		}
		if n["type"] == "SELECT_NODE" {
			w.selectNode(n, scope)
		}
		keys := make([]string, 0, len(n))
		for k := range n {
			if k != "cte_map" {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			w.visit(n[k], scope)
		}
	}
}

// selectNode registers the catalog tables in a SELECT's FROM clause and
// gives each the WHERE conjuncts that refer only to it.
func (w *walker) selectNode(n map[string]any, ctes map[string]bool) {
	var refs []*tableRef
	var collect func(t any)
	collect = func(t any) {
		m, ok := t.(map[string]any)
		if !ok {
			return
		}
		switch m["type"] {
		case "BASE_TABLE":
			name, _ := m["table_name"].(string)
			schema, _ := m["schema_name"].(string)
			lname := strings.ToLower(name)
			if schema == "" && ctes[lname] {
				return
			}
			t, ok := w.byName[lname]
			if !ok {
				if w.err == nil {
					names := make([]string, len(w.tables))
					for i, t := range w.tables {
						names[i] = t.Name
					}
					have := "the catalog has no tables"
					if len(names) > 0 {
						have = "tables: " + strings.Join(names, ", ")
					}
					w.err = fmt.Errorf("%w %q at snapshot %d (%s)", catalog.ErrNoSuchTable, name, w.r.Snapshot().ID, have)
				}
				return
			}
			cols, err := w.r.Columns(t.ID)
			if err != nil {
				w.err = err
				return
			}
			alias, _ := m["alias"].(string)
			ref := &tableRef{table: t, cols: cols, alias: alias, node: n, renamed: !emptyList(m["column_name_alias"])}
			refs = append(refs, ref)
			w.refs = append(w.refs, ref)
		case "JOIN":
			collect(m["left"])
			collect(m["right"])
		}
	}
	collect(n["from_table"])
	where, ok := n["where_clause"].(map[string]any)
	if !ok || len(refs) == 0 {
		return
	}
	all := conjuncts(where)
	for _, c := range all {
		if ref := owner(c, refs); ref != nil {
			ref.conjuncts = append(ref.conjuncts, stripQualifiers(c, ref))
		}
	}
	for _, ref := range refs {
		ref.foreignConjuncts = len(all) - len(ref.conjuncts)
	}
}

// conjuncts splits a WHERE clause at its top-level ANDs.
func conjuncts(e map[string]any) []map[string]any {
	if e["type"] == "CONJUNCTION_AND" {
		var out []map[string]any
		for _, c := range e["children"].([]any) {
			if m, ok := c.(map[string]any); ok {
				out = append(out, conjuncts(m)...)
			}
		}
		return out
	}
	return []map[string]any{e}
}

// owner is the one table reference all column references of an expression
// belong to, or nil (several tables, a subquery, an unknown column).
func owner(e map[string]any, refs []*tableRef) *tableRef {
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
			if x["class"] == "SUBQUERY" {
				ok = false
				return
			}
			if x["class"] == "COLUMN_REF" {
				ref := resolveRef(x, refs)
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

func columnNames(x map[string]any) []string {
	raw, _ := x["column_names"].([]any)
	out := make([]string, 0, len(raw))
	for _, n := range raw {
		s, _ := n.(string)
		out = append(out, s)
	}
	return out
}

func hasColumn(ref *tableRef, name string) bool {
	for _, c := range ref.cols {
		if !c.Parent.Known && strings.EqualFold(c.Name, name) {
			return true
		}
	}
	return false
}

// resolveRef finds the table a column reference belongs to.
func resolveRef(x map[string]any, refs []*tableRef) *tableRef {
	names := columnNames(x)
	if len(names) == 0 {
		return nil
	}
	if len(names) >= 2 {
		for _, ref := range refs {
			q := ref.alias
			if q == "" {
				q = ref.table.Name
			}
			if strings.EqualFold(q, names[0]) && hasColumn(ref, names[1]) {
				return ref
			}
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

// stripQualifiers copies an expression with table qualifiers removed from
// its column references, so the binder sees plain column paths.
func stripQualifiers(e map[string]any, ref *tableRef) map[string]any {
	var cp func(x any) any
	cp = func(x any) any {
		switch x := x.(type) {
		case []any:
			out := make([]any, len(x))
			for i, y := range x {
				out[i] = cp(y)
			}
			return out
		case map[string]any:
			out := make(map[string]any, len(x))
			for k, v := range x {
				out[k] = cp(v)
			}
			if x["class"] == "CONSTANT" {
				if d := doubleConstant(x); d != nil {
					return d
				}
			}
			if x["class"] == "COLUMN_REF" {
				names := columnNames(x)
				q := ref.alias
				if q == "" {
					q = ref.table.Name
				}
				if len(names) >= 2 && strings.EqualFold(names[0], q) && hasColumn(ref, names[1]) {
					rest := make([]any, 0, len(names)-1)
					for _, n := range names[1:] {
						rest = append(rest, n)
					}
					out["column_names"] = rest
				}
			}
			return out
		}
		return x
	}
	return cp(e).(map[string]any)
}

// doubleConstant rewrites a DOUBLE or FLOAT constant as CAST('text' AS
// DOUBLE): DuckDB prints a DOUBLE constant like a decimal (1e3 as 1000.0),
// and the binder must know it compares in DOUBLE, not exactly.
func doubleConstant(x map[string]any) map[string]any {
	v, _ := x["value"].(map[string]any)
	if v == nil || v["is_null"] == true {
		return nil
	}
	t, _ := v["type"].(map[string]any)
	id, _ := t["id"].(string)
	if id != "DOUBLE" && id != "FLOAT" {
		return nil
	}
	text := fmt.Sprint(v["value"])
	return map[string]any{
		"class": "CAST", "type": "OPERATOR_CAST", "alias": "", "query_location": x["query_location"],
		"child": map[string]any{
			"class": "CONSTANT", "type": "VALUE_CONSTANT", "alias": "", "query_location": x["query_location"],
			"value": map[string]any{"type": map[string]any{"id": "VARCHAR", "type_info": nil}, "is_null": false, "value": text},
		},
		"cast_type": map[string]any{"id": id, "type_info": nil}, "try_cast": false,
	}
}

// quoteIdent quotes an SQL identifier.
func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
