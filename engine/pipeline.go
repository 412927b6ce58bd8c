package engine

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine/duckast"
	"github.com/rocklake/rocklake/expr"
	"github.com/rocklake/rocklake/internal/sqllex"
	"github.com/rocklake/rocklake/prune"
	"github.com/rocklake/rocklake/storage"
	"github.com/rocklake/rocklake/types"
)

// queryRun carries one query through the stages the package doc draws,
// one method each, called in this order by runQuery:
//
//	parse     DuckDB's parse tree, the sandbox's function check, and the
//	          references to catalog tables (refs.go)
//	plan      a prune.Plan per distinct (table, snapshot, predicate), the
//	          views DuckDB will read, and the query's text with each
//	          reference's name replaced by its view
//	metadata  the whole answer from statistics, when they prove it: the
//	          run ends there
//	split     an aggregate answered in part from statistics (split.go)
//	list      the files each plan DuckDB reads keeps, as registered
//	fetch     kept objects read by pages or put in the local cache
//	check     kept local files still the files registered (identity.go)
//	bind      each view's SQL (partial.go), page loads, variables
//	execute   the views and the query in one round trip: a Result, Rows,
//	          or the caller's own statement
//
// Each stage reads what the stages before it left in the fields below its
// name and adds its own; close gives back what the run holds, whatever
// stage it stopped at.
type queryRun struct {
	e      *Engine
	ctx    context.Context
	query  string // as written, without trailing semicolons
	opts   QueryOptions
	stream *RowsOptions // nil: the answer is read into res
	qt     *queryText

	r             *catalog.Reader // the query's snapshot
	conn          *sql.Conn
	cleanup       []string // drops what the run made on conn, run when it is released
	unpin         func()   // lets the local copies of objects go (fetch)
	unpins        []func() // the same, for the change feed's files (planFeeds)
	handed        bool     // streamed Rows own conn and release it when closed
	readersClosed bool     // closeReaders ran
	res           *Result
	start         time.Time
	mark          time.Time // the end of the last phase timed

	// parse
	tree duckast.Tree // nil: DuckDB could not hand the statement's tree over
	scan *tableScan

	// plan
	plans      map[string]*prune.Plan // by table, snapshot and predicate
	readerOf   map[*prune.Plan]*catalog.Reader
	bounds     map[*prune.Plan]*expr.Bound // the predicate each plan was made with
	views      []*queryView
	viewByPlan map[*prune.Plan]*queryView
	rewritten  string

	// split
	split *splitAnswer

	// list
	stamps map[string]fileStamp // each kept file as registered

	// fetch
	paged map[int]map[int]*objectPage // by view and file: objects read by pages

	// bind
	prefix string // the statements that create the views
	reads  map[*prune.Plan][]FileRead
}

// queryView is one view DuckDB reads: references whose plans are the same
// share it; a table read whole under its own name has one too.
type queryView struct {
	name  string
	t     catalog.Table
	cols  []catalog.Column
	plan  *prune.Plan
	files []string        // filled by list, once DuckDB is sure to read the view
	odd   map[string]bool // files whose columns are not exactly the table's
	parts partConsts      // partition columns' values, per file
	r     *catalog.Reader // the snapshot its plan read; nil: the query's
}

// runQuery is queryOnce's work, stage by stage; qt learns how the text
// DuckDB runs was made from query.
func (e *Engine) runQuery(ctx context.Context, query string, opts QueryOptions, stream *RowsOptions, qt *queryText) (*Result, *Rows, error) {
	q, err := e.newRun(ctx, query, opts, stream, qt)
	if err != nil {
		return nil, nil, err
	}
	defer q.close()
	if err := q.parse(); err != nil {
		return nil, nil, err
	}
	if err := q.plan(); err != nil {
		return nil, nil, err
	}
	if answered, rows, err := q.metadata(); err != nil {
		return nil, nil, err
	} else if answered {
		return q.res, rows, nil
	}
	for _, stage := range []func() error{q.planSplit, q.list, q.fetch, q.check, q.bind} {
		if err := stage(); err != nil {
			return nil, nil, err
		}
	}
	q.closeReaders()
	return q.execute()
}

// newRun opens the query's snapshot and a DuckDB connection.
func (e *Engine) newRun(ctx context.Context, query string, opts QueryOptions, stream *RowsOptions, qt *queryText) (*queryRun, error) {
	start := time.Now()
	if opts.Prune.Objects == nil {
		// Plans read objects' page indexes and bloom filters through the
		// engine's store, made only if one is needed.
		opts.Prune.Objects = func() (storage.Store, error) {
			st, cache, err := e.objectStore()
			// What planning reads of an object is kept as parts of it: the
			// page path reads the same tail again (storage.CachedRanges).
			return storage.CachedRanges(st, cache), err
		}
	}
	partialPlanOptions(&opts)
	snap := opts.Snapshot
	if snap < 0 {
		snap = catalog.Latest
	}
	r, err := e.cat.Read(snap)
	if err != nil {
		return nil, err
	}
	conn, err := e.db.Conn(ctx)
	if err != nil {
		r.Close()
		return nil, err
	}
	return &queryRun{e: e, ctx: ctx, query: query, opts: opts, stream: stream, qt: qt,
		r: r, conn: conn, res: &Result{}, start: start, mark: start}, nil
}

// phase ends the phase timed since the last one, naming it.
func (q *queryRun) phase(name string) {
	now := time.Now()
	q.res.Phases = append(q.res.Phases, Phase{Name: name, Time: now.Sub(q.mark)})
	q.mark = now
}

// release gives the connection back: the views and variables the query
// made are dropped off the caller's path first. The local copies of
// objects are let go after.
func (q *queryRun) release() {
	conn := q.conn
	if len(q.cleanup) == 0 {
		conn.Close()
	} else {
		stmts := strings.Join(q.cleanup, "\n")
		q.e.cleanups.Add(1)
		go func() {
			defer q.e.cleanups.Done()
			_, _ = conn.ExecContext(context.Background(), stmts)
			conn.Close()
		}()
	}
	if q.unpin != nil {
		q.unpin()
	}
	for _, u := range q.unpins {
		u()
	}
}

// close ends the run: the connection is released unless streamed Rows
// hold it.
func (q *queryRun) close() {
	if !q.handed {
		q.release()
	}
	q.closeReaders()
}

// closeReaders lets the catalog's snapshots go: the query's and those its
// AT clauses opened. Once bind has run, DuckDB needs nothing more of the
// catalog, so they close before it runs: on PostgreSQL a snapshot holds a
// connection, which a long query or a COPY to a slow client would
// otherwise keep from every other reader and writer. The Snapshot value
// stays readable.
func (q *queryRun) closeReaders() {
	if q.scan != nil {
		q.scan.close()
	}
	if !q.readersClosed {
		q.readersClosed = true
		q.r.Close()
	}
}

// parse reads the query's parse tree (cached per text), refuses what the
// sandbox forbids before DuckDB binds anything, and finds the references
// to catalog tables.
func (q *queryRun) parse() error {
	e, query := q.e, q.query
	tree, ok := e.trees.Get(query)
	if !ok || q.opts.NoParseCache {
		var err error
		if tree, err = e.serialize(q.ctx, query); err != nil && !errors.Is(err, duckast.ErrNotSerializable) {
			return err
		}
		if tree == nil {
			if kw := sqllex.LeadingKeyword(query); notQueries[kw] {
				return fmt.Errorf("%w: %s statements are not run; rocklake runs queries (SELECT, FROM, WITH, VALUES, TABLE, PIVOT, DESCRIBE, SHOW, SUMMARIZE) over catalog tables%s",
					ErrNotAQuery, kw, notQueryHints[kw])
			}
		}
		if tree != nil {
			e.trees.Add(query, tree)
		}
	}
	q.tree = tree
	if e.sandbox != nil {
		// Before DuckDB binds anything: binding a table function is
		// enough for some to act.
		var err error
		if tree != nil {
			err = e.checkFunctions(q.ctx, tree, 0)
		} else {
			err = checkFunctionWords(query)
		}
		if err != nil {
			return err
		}
	}
	if tree != nil {
		scan, err := findTables(tree, q.r, e.travel)
		if err != nil {
			return err
		}
		q.scan = scan
	} else {
		// DuckDB cannot hand over this statement's parse tree (a PIVOT
		// with USING, say): nothing is pruned, and every table it names
		// reads whole under its own name.
		q.scan = &tableScan{tableFunctions: true}
	}
	q.phase("parse")
	return nil
}

// plan plans each reference on its own; references whose plans are the
// same share a view. A view's files are listed once DuckDB is sure to
// read it (list). Tables the walker could not follow are read whole
// under their own names.
func (q *queryRun) plan() error {
	q.plans = map[string]*prune.Plan{}
	q.readerOf = map[*prune.Plan]*catalog.Reader{}
	q.bounds = map[*prune.Plan]*expr.Bound{}
	q.viewByPlan = map[*prune.Plan]*queryView{}
	var edits []textEdit
	whole := map[int64]bool{} // tables some reference reads under their own name
	for _, ref := range q.scan.refs {
		p, err := q.planRef(ref)
		if err != nil {
			return err
		}
		ok, err := q.replaceRef(ref, p, &edits)
		if err != nil {
			return err
		}
		if !ok {
			whole[ref.table.ID] = true
		}
	}
	if err := q.planWhole(whole); err != nil {
		return err
	}
	if err := q.planFeeds(&edits); err != nil {
		return err
	}
	q.rewritten = applyEdits(q.query, edits)
	q.qt.edits = edits // sorted by applyEdits
	q.phase("plan")
	return nil
}

// planRef plans one reference with the conjuncts it may use, once per
// table, snapshot and predicate, and records it in the Result.
func (q *queryRun) planRef(ref *tableRef) (*prune.Plan, error) {
	b, used := usableConjuncts(ref, q.opts)
	key := fmt.Sprintf("%d@%d", ref.table.ID, ref.r.Snapshot().ID)
	if b != nil {
		key += "\x00" + b.Pred.String()
	}
	p, ok := q.plans[key]
	if !ok {
		// Files kept whole are listed only if DuckDB reads them: a
		// metadata answer counts them from the catalog's columns.
		po := q.opts.Prune
		po.DeferWhole = true
		var err error
		if p, err = prune.PlanBound(ref.r, ref.table, b, po); err != nil {
			return nil, err
		}
		q.plans[key] = p
		q.bounds[p] = b
		q.readerOf[p] = ref.r
	}
	ref.plan, ref.allConjunctsUsed = p, used == len(ref.conjuncts)
	tp := &TablePlan{Table: ref.table.Name, Alias: ref.alias, ReadWhole: ref.whole, Plan: p, Predicates: []string{}}
	if b != nil {
		tp.Predicates = append(tp.Predicates, b.Text)
	}
	q.res.Tables = append(q.res.Tables, tp)
	return p, nil
}

// replaceRef adds to edits the edit that puts the reference's view (or
// the caller's target) where the query names the table, and the one that
// takes its AT clause out. ok is false where the name could not be found
// in the text: the table is then read whole under its own name.
func (q *queryRun) replaceRef(ref *tableRef, p *prune.Plan, edits *[]textEdit) (ok bool, _ error) {
	at, end, ok := nameSpan(q.query, ref)
	if ok && ref.traveled {
		// The view stands for the table at the clause's snapshot: the
		// clause goes (DuckDB's views do not travel).
		var from, to int
		if from, to, ok = travelSpan(q.query, end); ok {
			*edits = append(*edits, textEdit{from, to, ""})
		}
	}
	if !ok {
		if ref.traveled {
			return false, fmt.Errorf("table %s AT (...): the clause could not be read in the query's text; write it as t AT (VERSION => n) or t AT (TIMESTAMP => '...')", ref.table.Name)
		}
		return false, nil
	}
	if tg := q.opts.target; tg != nil && at == tg.At && tg.plan == nil {
		// The statement's target: read by the caller, under its name.
		text := tg.Name + " AS " + sqllex.QuoteName(ref.qualifier())
		if ref.alias != "" {
			text = tg.Name
		}
		tg.plan, tg.table = p, ref.table
		q.qt.names[tg.Name] = ref.table.Name
		*edits = append(*edits, textEdit{at, end, text})
		return true, nil
	}
	v := q.addView(ref.table, ref.cols, p)
	text := sqllex.QuoteName(v.name)
	if ref.alias == "" {
		text += " AS " + sqllex.QuoteName(ref.table.Name)
	}
	*edits = append(*edits, textEdit{at, end, text})
	return true, nil
}

// addView is the view of plan p, made on its first reference.
func (q *queryRun) addView(t catalog.Table, cols []catalog.Column, p *prune.Plan) *queryView {
	if v, ok := q.viewByPlan[p]; ok {
		return v
	}
	v := &queryView{name: fmt.Sprintf("__rocklake_v%d", len(q.views)), t: t, cols: cols, plan: p, r: q.readerOf[p]}
	q.qt.names[v.name] = t.Name
	q.views = append(q.views, v)
	q.viewByPlan[p] = v
	return v
}

// planWhole adds a view under its own name, of every file, for each table
// in whole and each table a table function's text names.
func (q *queryRun) planWhole(whole map[int64]bool) error {
	if !q.scan.tableFunctions && len(whole) == 0 {
		return nil
	}
	tables, err := q.r.Tables()
	if err != nil {
		return err
	}
	if q.scan.tableFunctions {
		for _, t := range namedIn(q.query, tables) {
			whole[t.ID] = true
		}
	}
	for _, t := range tables {
		if !whole[t.ID] {
			continue
		}
		cols, err := q.r.Columns(t.ID)
		if err != nil {
			return err
		}
		p, err := prune.PlanBound(q.r, t, nil, prune.Options{})
		if err != nil {
			return err
		}
		// Under the table's own name: whatever names it there reads it.
		q.views = append(q.views, &queryView{name: t.Name, t: t, cols: cols, plan: p})
	}
	return nil
}

// answersFromStatistics says whether the run may answer from statistics,
// wholly (metadata) or in part (planSplit).
func (q *queryRun) answersFromStatistics() bool {
	return q.tree != nil && !q.opts.NoMetadataAnswers && !q.opts.NoPruning && !q.opts.Explain
}

// metadata answers the query from statistics where they prove the whole
// answer; answered says the run ends here, with q.res (and, for a stream,
// the Rows of that answer).
func (q *queryRun) metadata() (answered bool, _ *Rows, _ error) {
	if !q.answersFromStatistics() {
		return false, nil, nil
	}
	ok, err := metadataAnswer(q.tree, q.scan.refs, q.res, q.r)
	if err != nil || !ok {
		return false, nil, err
	}
	// The answer comes from statistics, but DuckDB still decides whether
	// the query is valid (a literal it cannot cast is an error, not an
	// answer) and what its columns are called.
	key := fmt.Sprintf("%d\x00%s", q.r.Snapshot().SchemaVersion, q.query)
	cols, ok := q.e.bound.Get(key)
	if !ok || q.opts.NoParseCache {
		if cols, err = q.e.originalColumns(q.ctx, q.conn, q.query, q.scan, &q.cleanup); err != nil {
			return false, nil, err
		}
		q.e.bound.Add(key, cols)
	}
	if len(cols) == len(q.res.Columns) {
		q.res.Columns = columnNames(cols)
	}
	q.res.Metadata = true
	q.phase("metadata")
	q.res.Elapsed = time.Since(q.start)
	if q.stream == nil {
		return true, nil, nil
	}
	rows, err := metadataRows(q.res, cols, q.stream)
	return err == nil, rows, err
}

// planSplit splits an aggregate whose plan proves some rows match but not
// all of them: those rows' part comes from statistics, DuckDB's from the
// others (split.go). The split plan's view reads only the rest.
func (q *queryRun) planSplit() error {
	if !q.answersFromStatistics() || q.opts.noSplit {
		return nil
	}
	split, err := planSplit(q.tree, q.scan.refs, q.res, q.r)
	if err != nil || split == nil {
		return err
	}
	q.split = split
	return nil
}

// list lists the files of every plan DuckDB reads (a split plan's files
// kept whole are counted, not read) and each view's files as registered.
func (q *queryRun) list() error {
	for _, p := range q.plans {
		if q.split != nil && p == q.split.orig {
			continue
		}
		if err := p.Resolve(q.readerOf[p]); err != nil {
			return err
		}
	}
	if q.split != nil {
		v := q.viewByPlan[q.split.orig]
		v.plan = q.split.rest
		q.bounds[q.split.rest] = q.bounds[q.split.orig]
	}
	// DuckDB will read these files: each must still be the file whose
	// statistics planned the query.
	q.stamps = map[string]fileStamp{}
	for _, v := range q.views {
		vr := v.r
		if vr == nil {
			vr = q.r // a table read whole under its own name, at the query's snapshot
		}
		dels, err := vr.DeleteFiles(v.t.ID)
		if err != nil {
			return err
		}
		if len(dels) > 0 {
			ids := make([]int64, len(v.plan.KeptFiles))
			for i, kf := range v.plan.KeptFiles {
				ids[i] = kf.FileID
			}
			var release func()
			if dels, release, err = q.e.LocalDeleteFiles(q.ctx, v.t, dels, ids); err != nil {
				return err
			}
			q.unpins = append(q.unpins, release)
		}
		if v.files, v.odd, v.parts, err = viewFiles(vr, v.t, v.cols, v.plan, dels, q.stamps); err != nil {
			return err
		}
	}
	return nil
}

// fetch reads the kept objects the page path reads by ranges, fetches the
// others into the local cache, pinned until the connection is released,
// and points the views at the local copies.
func (q *queryRun) fetch() error {
	e := q.e
	var jobs []objectPageJob
	for i, v := range q.views {
		jobs = append(jobs, objectPageJobs(i, v.cols, v.files, v.plan.KeptFiles, v.odd, v.parts, q.opts.Partial, e.sandbox != nil, q.bounds[v.plan])...)
	}
	paged, err := e.objectPages(q.ctx, jobs, q.stamps, q.opts.Partial, q.res)
	if err != nil {
		return err
	}
	q.paged = paged
	var all []string
	for i, v := range q.views {
		for j, f := range v.files {
			if paged[i][j] == nil {
				all = append(all, f)
			}
		}
	}
	local, unpin, err := e.fetchObjects(q.ctx, all, q.stamps, q.res)
	if err != nil {
		return err
	}
	q.unpin = unpin
	for _, v := range q.views {
		// What planning read of objects (page indexes, bloom filters).
		q.res.Objects.Requests += v.plan.Objects.Requests
		q.res.Objects.Bytes += v.plan.Objects.Bytes
	}
	for _, v := range q.views {
		for i, f := range v.files {
			if l, ok := local[f]; ok {
				v.files[i] = l
				if v.odd[f] {
					v.odd[l] = true
				}
				if p, ok := v.parts[f]; ok {
					v.parts[l] = p
				}
			}
		}
	}
	return nil
}

// check fails the query, naming the file, where a kept local file is not
// the file registered. Objects left are read in part, checked by ETag.
func (q *queryRun) check() error {
	checked := map[string]bool{}
	for _, v := range q.views {
		for _, f := range v.files {
			if !checked[f] && !catalog.IsObject(f) {
				checked[f] = true
				if err := checkDataFile(v.t.Name, f, q.stamps[f]); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// bind writes each view's SQL (whole files, row ranges, loaded pages),
// moves the run to the database without Top-N where files of one column
// hold mixed types, loads the pages, and hands over the delete files and
// file lists as variables. The views themselves are made by execute, in
// the query's round trip.
func (q *queryRun) bind() error {
	ctx, e := q.ctx, q.e
	var viewParts []partConsts
	for _, v := range q.views {
		viewParts = append(viewParts, v.parts)
	}
	delVars := nameDeleteVariables(viewParts)
	// The delete files' positions, read (or kept from earlier queries)
	// before the views are written: a run of several files filters on one
	// bitstring of the run, made of its files' (runBits).
	delBits := make([][]string, len(delVars))
	bitsOf := map[string]string{} // by the delete file's literal
	for i, refs := range delVars {
		bits, err := e.delBits.bitstrings(ctx, q.conn, refs)
		if err != nil {
			return fmt.Errorf("applying delete files (%s, ...): %w", refs[0].lit, err)
		}
		delBits[i] = bits
		for k, r := range refs {
			bitsOf[r.lit] = bits[k]
		}
	}
	var runVars [][]byte
	runDeletes := func(files []string, consts partConsts) string {
		w, bits := runBits(files, consts, bitsOf, len(runVars))
		if w != "" {
			runVars = append(runVars, bits)
		}
		return w
	}
	// Files whose columns differ from the table's are read in groups of
	// the same schema, each cast to the table's types: DuckDB's
	// union_by_name first widens every file to one common type (a
	// TIMESTAMP file with a TIMESTAMP_NS one fails on far dates) and
	// pushes filters through that widening wrongly (over DECIMAL(9,4) and
	// DECIMAL(18,10) files, c <> 0.0000000422 drops the 0.0000 rows).
	var oddFiles []string
	for _, v := range q.views {
		for _, f := range v.files {
			if v.odd[f] {
				oddFiles = append(oddFiles, f)
			}
		}
	}
	schemas, err := e.fileSchemas(ctx, q.conn, oddFiles, q.stamps)
	if err != nil {
		return err
	}
	var lists [][]string // file lists handed over as variables
	source := fileSource{list: func(files []string) string {
		if len(files) <= listParamMin {
			return ""
		}
		lists = append(lists, files)
		return fmt.Sprintf("getvariable('__rocklake_files_%d')", len(lists)-1)
	}, runDeletes: runDeletes}
	sqls := make([]string, len(q.views))
	ordered := orderedReads(q.query)
	mixedTypes := false
	q.reads = map[*prune.Plan][]FileRead{}
	var loads pageLoads
	for i, v := range q.views {
		var mixed bool
		var rs []FileRead
		var ls pageLoads
		if sqls[i], mixed, rs, ls, err = partialView(ctx, v.t, v.cols, v.files, v.plan.KeptFiles, v.odd, v.parts, schemas, source, q.opts.Partial, e.sandbox != nil, q.bounds[v.plan], q.paged[i], q.stamps, ordered); err != nil {
			return err
		}
		q.reads[v.plan] = rs
		loads = append(loads, ls...)
		mixedTypes = mixedTypes || mixed
	}
	if q.split != nil {
		q.reads[q.split.orig] = q.reads[q.split.rest]
		delete(q.reads, q.split.rest)
	}
	for _, tp := range q.res.Tables {
		tp.Reads = q.reads[tp.Plan]
	}
	if mixedTypes {
		// Nothing was made on this connection yet (cleanup is empty): the
		// query moves to the database without Top-N, whole.
		db, err := e.mixedDB()
		if err != nil {
			return err
		}
		q.conn.Close()
		conn, err := db.Conn(ctx)
		if err != nil {
			return err // release closes the closed connection again: a no-op
		}
		q.conn = conn
	}
	for _, ld := range loads {
		if err := ld.load(ctx, q.conn, &q.cleanup); err != nil {
			return err
		}
	}
	// A variable of delete files only runs read (runBits) is not set:
	// each costs DuckDB a parse of one character per row.
	used := func(name string) bool {
		return slices.ContainsFunc(sqls, func(s string) bool { return strings.Contains(s, "'"+name+"'") })
	}
	for i, refs := range delVars {
		if !used(deleteVariable(i)) {
			continue
		}
		q.cleanup = append(q.cleanup, fmt.Sprintf("RESET VARIABLE %s;", deleteVariable(i)))
		if _, err := q.conn.ExecContext(ctx, fmt.Sprintf("SET VARIABLE %s = ?::VARCHAR[]::BIT[]", deleteVariable(i)), delBits[i]); err != nil {
			return fmt.Errorf("applying delete files (%s, ...): %w", refs[0].lit, err)
		}
	}
	// A run's bits of at most inlineRunBytes are set in the query's own
	// round trip (execute), as base64 text: a round trip of its own costs
	// more than DuckDB's decoding of that text, a longer one less.
	var inline []string
	for i, bits := range runVars {
		q.cleanup = append(q.cleanup, fmt.Sprintf("RESET VARIABLE %s;", runVariable(i)))
		if len(bits) <= inlineRunBytes {
			inline = append(inline, fmt.Sprintf("SET VARIABLE %s = from_base64('%s')::BIT;\n", runVariable(i), base64.StdEncoding.EncodeToString(bits)))
			continue
		}
		if _, err := q.conn.ExecContext(ctx, fmt.Sprintf("SET VARIABLE %s = ?::BLOB::BIT", runVariable(i)), bits); err != nil {
			return fmt.Errorf("applying delete files of a run of files: %w", err)
		}
	}
	for i, l := range lists {
		q.cleanup = append(q.cleanup, fmt.Sprintf("RESET VARIABLE __rocklake_files_%d;", i))
		if _, err := q.conn.ExecContext(ctx, fmt.Sprintf("SET VARIABLE __rocklake_files_%d = ?::VARCHAR[]", i), duckPaths(l)); err != nil {
			return fmt.Errorf("handing over the file list: %w", err)
		}
	}
	q.phase("bind")
	q.res.Phases[len(q.res.Phases)-1].Detail = partialSummary(q.reads)
	// The views are created in the same round trip as the query (DuckDB
	// runs a multi-statement text in order and returns the last result),
	// and dropped, with the variables, in one more.
	create := inline
	for i, v := range q.views {
		create = append(create, fmt.Sprintf("CREATE OR REPLACE TEMP VIEW %s AS %s;\n", sqllex.QuoteName(v.name), sqls[i]))
		q.cleanup = append(q.cleanup, "DROP VIEW IF EXISTS temp."+sqllex.QuoteName(v.name)+";")
	}
	q.prefix = strings.Join(create, "")
	return nil
}

// execute runs the views and the query in one round trip: the caller's
// statement over a target or the planned query, EXPLAIN, streamed Rows,
// or every value read as text into the Result (with a split's part from
// statistics added).
func (q *queryRun) execute() (*Result, *Rows, error) {
	if tg := q.opts.target; tg != nil {
		if tg.plan == nil {
			return nil, nil, fmt.Errorf("the statement's target table was not found at offset %d of %q", tg.At, q.query)
		}
		err := tg.run(q.ctx, q.conn, q.prefix, q.rewritten, tg.plan.KeptFiles)
		q.phase("execute")
		q.res.Elapsed = time.Since(q.start)
		return q.res, nil, err
	}
	if q.opts.into != nil {
		err := q.opts.into(q.ctx, q.conn, q.prefix, q.rewritten)
		q.phase("execute")
		q.res.Elapsed = time.Since(q.start)
		return q.res, nil, err
	}
	if q.opts.Explain {
		if err := q.explain(); err != nil {
			return nil, nil, err
		}
	}
	if q.stream != nil && q.split == nil {
		return q.streamed()
	}
	if err := q.readResult(); err != nil {
		return nil, nil, err
	}
	if q.split != nil {
		if err := q.split.combine(q.res, q.reads[q.split.orig]); err != nil {
			return nil, nil, err
		}
	}
	q.phase("execute")
	q.res.Elapsed = time.Since(q.start)
	if q.split != nil && q.stream != nil {
		cols := make([]Column, len(q.res.Columns))
		for i, name := range q.res.Columns {
			cols[i] = Column{Name: name, Type: "BIGINT"}
			if c := q.split.aggs[i].col; c != nil {
				cols[i].Type = types.DuckDBName(c.Type)
			}
		}
		rows, err := metadataRows(q.res, cols, q.stream)
		return q.res, rows, err
	}
	return q.res, nil, nil
}

// explain puts DuckDB's plan of the rewritten query in the Result.
func (q *queryRun) explain() error {
	var b strings.Builder
	rows, err := q.conn.QueryContext(q.ctx, q.prefix+"EXPLAIN "+q.rewritten+"\n")
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return err
		}
		b.WriteString(v)
		b.WriteString("\n")
	}
	q.res.Explain = b.String()
	return nil
}

// streamed hands the query's rows over as DuckDB produces them: the Rows
// own the connection from here and release it when closed.
func (q *queryRun) streamed() (*Result, *Rows, error) {
	key := fmt.Sprintf("%d\x00%t\x00%s", q.r.Snapshot().SchemaVersion, q.stream.NestedJSON, q.query)
	if q.opts.NoParseCache {
		q.e.streamed.Remove(key)
	}
	rows, err := q.e.streamRows(q.ctx, q.conn, q.prefix, q.rewritten, q.query, key, q.scan, &q.cleanup, q.stream)
	if err != nil {
		return nil, nil, err
	}
	rows.res, rows.release, rows.phase, rows.start = q.res, q.release, q.phase, q.start
	q.handed = true
	return q.res, rows, nil
}

// readResult reads every value in DuckDB's text form (COLUMNS(*)::VARCHAR)
// into the Result, under the names the query as written gives them.
func (q *queryRun) readResult() error {
	ctx, res := q.ctx, q.res
	stmt := "SELECT COLUMNS(*)::VARCHAR FROM (\n" + q.rewritten + "\n)"
	ran := time.Now()
	rows, err := q.conn.QueryContext(ctx, q.prefix+stmt)
	if err != nil {
		return withPosition(ctx, q.conn, q.prefix, stmt, err, time.Since(ran))
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	res.Columns = cols
	for rows.Next() {
		vals := make([]*string, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		res.Rows = append(res.Rows, vals)
	}
	if err := rows.Err(); err != nil {
		return withPosition(ctx, q.conn, q.prefix, stmt, err, time.Since(ran))
	}
	rows.Close()
	// DuckDB names a column it computes after the expression's text, and a
	// scalar subquery's text now names a view: the names come from the
	// query as written instead.
	if slices.ContainsFunc(res.Columns, func(c string) bool { return strings.Contains(c, "__rocklake_v") }) {
		if cols, err := q.e.originalColumns(ctx, q.conn, q.query, q.scan, &q.cleanup); err == nil && len(cols) == len(res.Columns) {
			res.Columns = columnNames(cols)
		}
	}
	return nil
}
