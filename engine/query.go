package engine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine/duckast"
	"github.com/rocklake/rocklake/expr"
	"github.com/rocklake/rocklake/internal/sqllex"
	"github.com/rocklake/rocklake/prune"
	"github.com/rocklake/rocklake/storage"
	"github.com/rocklake/rocklake/types"
)

// Engine runs SQL over a catalog's tables on embedded DuckDB, reading only
// the files pruning keeps.
type Engine struct {
	cat *catalog.Catalog
	// bound holds the column names DuckDB gave a query answered from
	// metadata, per schema version and text: binding it again over empty
	// views could only give the same names (or the same error, which is
	// not kept). Per catalog: a speculation's versions are its own.
	bound *lru.Cache[string, []Column]
	// streamed holds the columns of queries QueryRows ran, per schema
	// version and text (see streamRows). Read-only once stored.
	streamed *lru.Cache[string, []Column]
	// view marks an engine made by On: it shares its parent's DuckDB and
	// closes nothing.
	view bool
	*duck
}

// duck is what an engine and the views On makes of it share: DuckDB and
// what depends on files and texts alone.
type duck struct {
	db    *sql.DB
	parse *sql.Stmt // json_serialize_sql of one query text

	// DuckDB's parse of a query text depends on the text alone: repeated
	// queries reuse it (a DuckDB round trip each time). Read-only once
	// stored.
	trees *lru.Cache[string, duckast.Tree]
	// schemas holds, per file path and size, the schema of a file whose
	// columns differ from its table's (see fileSchemas).
	schemas *lru.Cache[string, fileSchema]

	cleanups sync.WaitGroup // views being dropped after queries returned

	delBits *deleteBits // delete files' positions, read once

	sandbox *Sandbox // nil: DuckDB unrestricted

	// mixed runs queries over views that union files of different types
	// (see mixedDB); opened on first use.
	mixedOnce sync.Once
	mixed     *sql.DB
	mixedErr  error
	udfs      sync.Map // function name → *udfOnce: registered once per engine (RegisterScalarUDF)
	// clientFuncs are the functions (lower-case names) registered for
	// clients (RegisterClientFunction, DefineClientMacro): callable in a
	// sandboxed engine whatever the census says of the name.
	clientFuncs sync.Map

	// objects reads data files in object storage and cache holds the
	// local copies DuckDB reads; made from the environment on first use
	// (storage.S3OptionsFromEnv, storage.CacheFromEnv) unless UseObjects
	// set them.
	objectsOnce sync.Once
	objects     storage.Store
	cache       *storage.Cache
	objectsErr  error
}

// On is an engine that reads cat with e's DuckDB: a transaction's
// speculation (catalog.Speculate), queried as the catalog it lies over
// is. Closing it does nothing; it must not outlive e.
func (e *Engine) On(cat *catalog.Catalog) *Engine {
	v := newEngine(cat, e.duck)
	v.view = true
	return v
}

func newEngine(cat *catalog.Catalog, d *duck) *Engine {
	bound, _ := lru.New[string, []Column](1024)
	streamed, _ := lru.New[string, []Column](1024)
	return &Engine{cat: cat, bound: bound, streamed: streamed, duck: d}
}

// UseObjects sets the store objects are read from and the cache their
// local copies are kept in, instead of those the environment describes.
// Call it before the first query.
func (e *Engine) UseObjects(st storage.Store, cache *storage.Cache) {
	e.objectsOnce.Do(func() {})
	e.objects, e.cache = st, cache
}

func (e *Engine) objectStore() (storage.Store, *storage.Cache, error) {
	e.objectsOnce.Do(func() {
		if e.cache, e.objectsErr = storage.CacheFromEnv(); e.objectsErr != nil {
			return
		}
		e.objects, e.objectsErr = storage.NewS3(context.Background(), storage.S3OptionsFromEnv())
	})
	return e.objects, e.cache, e.objectsErr
}

// Options configure NewWithOptions; the zero value is New's.
type Options struct {
	// Sandbox, when set, locks DuckDB down for SQL from untrusted clients
	// (see Sandbox).
	Sandbox *Sandbox
}

// New opens an in-memory DuckDB for a catalog.
func New(cat *catalog.Catalog) (*Engine, error) {
	return NewWithOptions(cat, Options{})
}

// NewWithOptions opens an in-memory DuckDB for a catalog, as o says.
func NewWithOptions(cat *catalog.Catalog, o Options) (*Engine, error) {
	var db *sql.DB
	var parse *sql.Stmt
	ok, err := false, error(nil)
	if o.Sandbox == nil {
		db, parse, ok, err = takeStarted()
	}
	if !ok {
		db, parse, err = openEngineDB(o.Sandbox)
	}
	if err != nil {
		return nil, err
	}
	trees, _ := lru.New[string, duckast.Tree](256)
	schemas, _ := lru.New[string, fileSchema](65536)
	engineOpened()
	return newEngine(cat, &duck{db: db, parse: parse, trees: trees, schemas: schemas, sandbox: o.Sandbox, delBits: newDeleteBits()}), nil
}

// openEngineDB opens an engine's in-memory database and prepares its
// parse statement.
func openEngineDB(sb *Sandbox) (*sql.DB, *sql.Stmt, error) {
	db, err := openDB("", sb)
	if err != nil {
		return nil, nil, err
	}
	// Parsing is one statement with the query as its parameter: prepared
	// once, it saves DuckDB planning that statement on every new query
	// text (about a third of the round trip).
	parse, err := db.Prepare("SELECT json_serialize_sql(?::VARCHAR)::VARCHAR")
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("preparing the parse statement: %w", err)
	}
	return db, parse, nil
}

// Close closes DuckDB (not the catalog), after the views of finished
// queries are dropped; on an engine On made, it does nothing.
func (e *Engine) Close() error {
	if e.view {
		return nil
	}
	e.cleanups.Wait()
	defer engineClosed()
	if e.mixed != nil {
		e.mixed.Close()
	}
	e.parse.Close()
	return e.db.Close()
}

// CloseAtExit is Close for a process about to exit: it leaves DuckDB's
// teardown (2 to 4 ms of freeing what the exit frees anyway, and joining
// its threads) to the exit, unless a database holds temporary files
// (spilled to its temp_directory), which only a close removes; then it
// closes as Close does. What the engine made outside DuckDB (links to
// oddly named files) is removed either way. The engine must not be used
// after it.
func (e *Engine) CloseAtExit() error {
	if e.view {
		return nil
	}
	for _, db := range []*sql.DB{e.db, e.mixed} {
		if db == nil {
			continue
		}
		var n int
		if err := db.QueryRow("SELECT count(*) FROM duckdb_temporary_files()").Scan(&n); err != nil || n > 0 {
			return e.Close()
		}
	}
	engineClosed()
	return nil
}

// mixedDB is a second DuckDB, with the Top-N optimizer off, for queries
// whose views UNION ALL files of different column types. DuckDB 1.5.6
// answers ORDER BY … LIMIT over such a union wrongly: over an INTEGER
// branch and a SMALLINT one (cast to INTEGER or not), `SELECT c FROM v
// ORDER BY c LIMIT 4` left out the SMALLINT branch's 32767s below the
// INTEGER branch's 3565869 — the Top-N filter it pushes into the scans
// skips rows it must keep. A sort and a limit answer right. The setting is
// global to a database, so such queries get a database of their own and
// every other query keeps the Top-N operator.
func (e *Engine) mixedDB() (*sql.DB, error) {
	e.mixedOnce.Do(func() {
		e.mixed, e.mixedErr = openDB("", e.sandbox, "top_n")
	})
	return e.mixed, e.mixedErr
}

// DB is the DuckDB handle, for callers that run SQL of their own on it
// (table maintenance, tests comparing with DuckDB directly).
func (e *Engine) DB() *sql.DB { return e.db }

// QueryOptions tune Query. Snapshot must be set: the zero value reads
// snapshot 0, the empty catalog init made, not the latest.
type QueryOptions struct {
	Snapshot int64 // a snapshot id, or catalog.Latest (-1) for the latest
	// Explain adds DuckDB's plan to the result.
	Explain bool
	// NoPruning reads every file (the baseline rocklake is compared with).
	NoPruning bool
	// NoMetadataAnswers always runs DuckDB, even when the catalog alone
	// could answer.
	NoMetadataAnswers bool
	// Prune tunes the planner.
	Prune prune.Options
	// NoParseCache has DuckDB parse the query as if the text had never
	// been seen (the cost of a new query).
	NoParseCache bool
	// Partial says whether a kept file may be read in part, only its kept
	// row ranges or pages (partial.go); the zero value lets the cost rule
	// choose.
	Partial PartialMode

	noSplit bool // run an aggregate on DuckDB alone (see errSplit)
	into    IntoFunc
	target  *targetSpec // QueryTarget's
}

// IntoFunc runs a statement of its own over a planned query (QueryInto):
// on conn, views is the text that creates the query's views (run it first,
// in the same round trip or before) and query is the query's text reading
// them.
type IntoFunc func(ctx context.Context, conn *sql.Conn, views, query string) error

// QueryInto plans and prunes query as Query does, checks the files it
// keeps and makes their views, then, instead of reading its rows, hands
// run the connection, the views and the query over them, for a statement
// of run's own (INSERT INTO a temporary table SELECT ... over the views:
// a write's rows). The views are dropped once run returns. The query is
// never answered from statistics: its rows are read.
func (e *Engine) QueryInto(ctx context.Context, query string, opts QueryOptions, run IntoFunc) (*Result, error) {
	opts.into, opts.NoMetadataAnswers, opts.Explain, opts.noSplit = run, true, false, true
	res, _, err := e.queryOnce(ctx, query, opts, nil)
	return res, virtualColumnHint(err)
}

// TablePlan is how one reference to a catalog table in a query was
// pruned. ReadWhole, when set, says why no WHERE conjunct could skip its
// files (an outer join's NULL-supplying side, ASOF, POSITIONAL, sampling).
type TablePlan struct {
	Table      string   `json:"table"`
	Alias      string   `json:"alias,omitempty"`
	Predicates []string `json:"predicates"`
	ReadWhole  string   `json:"read_whole,omitempty"`
	// Plan is what pruning kept. When the query was answered from
	// statistics (Result.Metadata), or in part (Result.StatsRows), the
	// files it kept whole with every row matching are counted but not
	// listed (Plan.Deferred; Plan.Resolve lists them): no such file was
	// read, and listing them costs a read of each one's catalog row.
	Plan *prune.Plan `json:"plan"`
	// Reads says how each kept file was read: whole, its row ranges or
	// its pages (partial.go); empty when DuckDB read no file.
	Reads []FileRead `json:"reads,omitempty"`
}

// Result is a query's answer: every value in DuckDB's text form (NULL as
// nil), so that answers from statistics and from DuckDB print alike.
type Result struct {
	Columns  []string     `json:"columns"`
	Rows     [][]*string  `json:"rows"`
	Tables   []*TablePlan `json:"tables"`
	Metadata bool         `json:"answered_from_metadata"`
	// StatsRows, for a count(*), min or max DuckDB ran, is the rows whose
	// part of the answer came from statistics instead (files, row groups
	// and pages proven to match in full; see split.go): DuckDB read and
	// aggregated only the others.
	StatsRows int64  `json:"rows_from_statistics,omitempty"`
	Explain   string `json:"explain,omitempty"`
	Elapsed   time.Duration
	// Phases says where Elapsed went, in order.
	Phases []Phase `json:"phases"`
	// Objects is what reading data files in object storage took; zero when
	// the query read none.
	Objects ObjectReads `json:"object_storage"`
}

// ObjectReads counts a query's work on object storage: the kept objects it
// read, how many came from the local cache and how many were fetched, and
// the requests and response bytes all of that took (a cache hit is one
// HEAD, checking that the object is unchanged; a fetch one GET; an object
// read in part, InPart, its tail and kept pages: see objectPages).
// Requests and bytes of whole fetches are the engine's store's counters
// across the fetch: queries fetching at the same time on one engine count
// each other's.
type ObjectReads struct {
	Objects  int   `json:"object_count"`
	Hits     int   `json:"cache_hit_count"`
	Fetched  int   `json:"fetched_count"`
	InPart   int   `json:"read_in_part_count"`
	Requests int64 `json:"request_count"`
	Bytes    int64 `json:"bytes"`
}

// Phase is one step of a query and its duration: "parse" (DuckDB parses
// the query; tables and conjuncts found), "plan" (conjuncts read from the
// parse tree, bound and pruned), "metadata" (the answer from statistics),
// "bind" (the kept files handed to DuckDB as views) and "execute" (DuckDB
// runs the query; rows read).
type Phase struct {
	Name string        `json:"name"`
	Time time.Duration `json:"ns"`
	// Detail, for "bind", says how many kept files were read in part.
	Detail string `json:"detail,omitempty"`
}

// Query runs a DuckDB SELECT that names catalog tables. DuckDB's own parser
// (json_serialize_sql) finds the tables and WHERE clauses; each table's
// conjuncts that name only its columns drive pruning; each table name is
// then bound, for this query only, to a view over the files that survive,
// cast to the table's column types. DuckDB evaluates the query as written.
func (e *Engine) Query(ctx context.Context, query string, opts QueryOptions) (*Result, error) {
	res, _, err := e.query(ctx, query, opts, nil)
	return res, err
}

// query runs a query for Query (stream nil: every value read as text into
// the Result) or for QueryRows (the Rows returned own the connection and
// the views until they are closed).
func (e *Engine) query(ctx context.Context, query string, opts QueryOptions, stream *RowsOptions) (*Result, *Rows, error) {
	res, rows, err := e.queryOnce(ctx, query, opts, stream)
	if errors.Is(err, errSplit) {
		// DuckDB's part of a split aggregate did not read back: DuckDB
		// answers alone.
		opts.noSplit = true
		res, rows, err = e.queryOnce(ctx, query, opts, stream)
	}
	return res, rows, virtualColumnHint(err)
}

// virtualColumns are the columns DuckDB's file readers give beside a
// file's own (read_parquet's filename, file_row_number, file_index). A
// catalog table is read through views, which do not pass them on: a row's
// file and position there would be the view's files, not the registered
// ones, and a view cannot hide a column from SELECT *.
var virtualColumns = []string{"filename", "file_row_number", "file_index"}

// virtualColumnHint says why DuckDB could not bind a virtual column: the
// query read a catalog table as if it were read_parquet.
func virtualColumnHint(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	for _, c := range virtualColumns {
		if strings.Contains(msg, `Referenced column "`+c+`" not found`) || strings.Contains(msg, `does not have a column named "`+c+`"`) {
			return fmt.Errorf("%w\n(%s is a virtual column of DuckDB's file readers, which catalog tables do not have: rocklake reads them through views of their kept files; `rocklake files TABLE` lists a table's files)", err, c)
		}
	}
	return err
}

// queryOnce is query, once; DuckDB's errors are told in the terms of the
// query as written (QueryError), those its rows end with too.
func (e *Engine) queryOnce(ctx context.Context, query string, opts QueryOptions, stream *RowsOptions) (*Result, *Rows, error) {
	// The query is wrapped below ("SELECT ... FROM (query)"): a trailing
	// semicolon would end it early, and a trailing -- comment is closed by
	// the newline put before the closing parenthesis.
	query = strings.TrimRight(query, "; \t\r\n")
	qt := &queryText{user: query, names: map[string]string{}}
	res, rows, err := e.runQuery(ctx, query, opts, stream, qt)
	if rows != nil {
		rows.translate = qt.translate
	}
	return res, rows, qt.translate(err)
}

// originalColumns runs the query as written over empty views named after
// the tables it reads: DuckDB binds and plans it as it would over the data
// (an invalid cast of a literal fails the same way) and names its columns.
func (e *Engine) originalColumns(ctx context.Context, conn *sql.Conn, query string, scan *tableScan, cleanup *[]string) ([]Column, error) {
	done := map[int64]bool{}
	var create []string
	for _, ref := range scan.refs {
		if done[ref.table.ID] {
			continue
		}
		done[ref.table.ID] = true
		name := sqllex.QuoteName(ref.table.Name)
		create = append(create, fmt.Sprintf("CREATE OR REPLACE TEMP VIEW %s AS %s;\n", name, viewSQL(ref.table, ref.cols, nil, "", false, nil)))
		*cleanup = append(*cleanup, "DROP VIEW IF EXISTS temp."+name+";")
	}
	return runColumns(ctx, conn, strings.Join(create, ""), "SELECT * FROM (\n"+query+"\n)")
}

// runColumns runs a query for its column names, reading (and dropping) its
// rows, so that an error DuckDB raises while running is returned; prefix
// is statements run first, in the same round trip.
func runColumns(ctx context.Context, conn *sql.Conn, prefix, query string) ([]Column, error) {
	ran := time.Now()
	rows, err := conn.QueryContext(ctx, prefix+query)
	if err != nil {
		return nil, withPosition(ctx, conn, prefix, query, err, time.Since(ran))
	}
	defer rows.Close()
	cols, err := columnsOf(rows)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
	}
	if err := rows.Err(); err != nil {
		return nil, withPosition(ctx, conn, prefix, query, err, time.Since(ran))
	}
	return cols, nil
}

// usableConjuncts turns a reference's conjuncts (DuckDB's parse-tree
// nodes) into the planner's expressions and binds each once against the
// table; those the binder cannot use are left to DuckDB, which reports real
// errors when it runs the query. used counts the conjuncts bound; b is
// their conjunction, nil when there is none.
func usableConjuncts(ref *tableRef, opts QueryOptions) (b *expr.Bound, used int) {
	if opts.NoPruning || len(ref.conjuncts) == 0 {
		return nil, 0
	}
	var bounds []*expr.Bound
	for _, c := range ref.conjuncts {
		n, ok := duckast.Predicate(duckast.ExprOf(c), ref.stripQualifier)
		if !ok {
			continue
		}
		text := expr.Format(n)
		bound, err := expr.Bind(n, text, ref.cols)
		if err != nil {
			continue
		}
		bounds = append(bounds, bound)
	}
	return expr.Conjoin(bounds...), len(bounds)
}

// viewFiles lists the files a plan keeps, in its order, those of them
// whose columns are not exactly the table's, the values of the table's
// partition columns in each (and, for an altered table, how each holds its
// columns: mapColumns), and (into stamps) what registration recorded of
// each.
func viewFiles(r *catalog.Reader, t catalog.Table, cols []catalog.Column, p *prune.Plan, dels map[int64]catalog.DeleteFile, stamps map[string]fileStamp) ([]string, map[string]bool, partConsts, error) {
	fs, err := r.FileSet(t.ID)
	if err != nil {
		return nil, nil, nil, err
	}
	var partCols []catalog.Column
	for _, c := range cols {
		if c.Partition != "" && !c.Parent.Known {
			partCols = append(partCols, c)
		}
	}
	m, err := r.ColumnMapping(t.ID)
	if err != nil {
		return nil, nil, nil, err
	}
	var parts partConsts
	files := make([]string, 0, len(p.KeptFiles))
	var odd map[string]bool
	for _, kf := range p.KeptFiles {
		files = append(files, kf.Path)
		i, ok := slices.BinarySearch(fs.IDs, kf.FileID)
		var f catalog.DataFile
		if ok {
			if f, err = r.FileAt(fs, i); err != nil {
				return nil, nil, nil, err
			}
		}
		if len(partCols) > 0 || m.Evolved() {
			if !ok {
				return nil, nil, nil, fmt.Errorf("table %q: kept file %s is not in the table's file set", t.Name, kf.Path)
			}
			if parts == nil {
				parts = partConsts{}
			}
			parts[kf.Path] = fileConsts(f, partCols)
			mapColumns(m, f, cols, parts[kf.Path])
		}
		if d, has := dels[kf.FileID]; has {
			if !ok {
				return nil, nil, nil, fmt.Errorf("table %q: kept file %s is not in the table's file set", t.Name, kf.Path)
			}
			if parts == nil {
				parts = partConsts{}
			}
			if parts[kf.Path], err = withDeletes(t, f, d, parts[kf.Path]); err != nil {
				return nil, nil, nil, err
			}
		}
		if !ok || !f.ColumnsMatchTable {
			if odd == nil {
				odd = map[string]bool{}
			}
			odd[kf.Path] = true
		}
		if ok {
			// Two snapshots one query reads (AT clauses) may register one
			// path as two files: its bytes can be at most one of them.
			s := stampOf(f)
			if prev, seen := stamps[kf.Path]; seen && prev != s {
				return nil, nil, nil, fmt.Errorf("%w: %s of table %s is registered as different files at the snapshots this query reads (registered again since); query one snapshot at a time",
					ErrDataFileChanged, kf.Path, t.Name)
			}
			stamps[kf.Path] = s
		}
	}
	return files, odd, parts, nil
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
//
// consts gives the partition columns' values in these files (one value
// per column for all of them: see readSQL); a partition column is never
// read from the files.
func viewSQL(t catalog.Table, cols []catalog.Column, files []string, src string, byName bool, consts map[int64]string) string {
	var sel []string
	for _, c := range cols {
		if c.Parent.Known {
			continue
		}
		dt := types.DuckDBName(c.Type)
		if e, ok := consts[c.ID]; (ok || c.Partition != "") && len(files) > 0 {
			sel = append(sel, fmt.Sprintf("%s AS %s", e, sqllex.QuoteName(c.Name)))
			continue
		}
		if dt == "" {
			sel = append(sel, sqllex.QuoteName(c.Name))
		} else {
			sel = append(sel, fmt.Sprintf("%s AS %s", noBloomProbe(fmt.Sprintf("CAST(%s AS %s)", sqllex.QuoteName(c.Name), dt), c.Type), sqllex.QuoteName(c.Name)))
		}
	}
	if p, ok := consts[positionsKey]; ok && len(files) > 0 {
		sel = append(sel, "file_row_number AS "+p)
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
			nulls = append(nulls, fmt.Sprintf("CAST(NULL AS %s) AS %s", dt, sqllex.QuoteName(c.Name)))
		}
		return "SELECT " + strings.Join(nulls, ", ") + " WHERE false"
	}
	// can_have_nan: Parquet min/max leave NaN out, and DuckDB 1.5.6 by
	// default trusts them as the whole range, folding `c > 127` to false
	// over a NaN row (duckdb/duckdb#25521). rocklake has pruned already,
	// NaN-aware; DuckDB must not prune again on that assumption.
	return fmt.Sprintf("SELECT %s FROM read_parquet(%s, union_by_name = %t, hive_partitioning = false, can_have_nan = true%s)%s",
		strings.Join(sel, ", "), fileList(files, src), byName, rowNumbers(consts), deletedWhere(consts))
}

// noBloomProbe keeps a filter on a BLOB, FLOAT or DOUBLE column from
// reaching DuckDB's Parquet reader, which probes bloom filters wrongly for
// them: DuckDB 1.5.6 hashes a BLOB constant in its escaped text form
// (\xFF), not its bytes, and a float 0 does not find -0.0 (both fixed
// after 1.5.6, duckdb/duckdb#23829), so `b = '\xFF'` or `f = 0` drops
// every row of a row group whose bloom filter holds them: files DuckDB
// writes have bloom filters on dictionary-encoded columns by default.
// Over an expression DuckDB does not push the filter down; the
// expression is the value itself, bit for bit (a negation flips the sign
// bit only). rocklake has pruned the files and row groups already.
func noBloomProbe(x string, t types.Type) string {
	switch t.Kind {
	case types.KindBlob:
		return "(" + x + " || ''::BLOB)"
	case types.KindFloat, types.KindDouble:
		return "(-(-" + x + "))"
	}
	return x
}

// ErrNotAQuery is returned for a statement that is not a query (COPY,
// CREATE, SET, ...): rocklake answers queries over the catalog's tables
// and changes nothing in DuckDB.
var ErrNotAQuery = errors.New("not a query")

// notQueries are the first keywords of DuckDB's statements that are not
// queries. DuckDB's parser cannot serialise them, nor a PIVOT with USING,
// which is a query: the keyword tells the two apart.
var notQueries = map[string]bool{
	"ABORT": true, "ALTER": true, "ANALYZE": true, "ATTACH": true, "BEGIN": true, "CALL": true, "CHECKPOINT": true,
	"COMMENT": true, "COMMIT": true, "COPY": true, "CREATE": true, "DEALLOCATE": true, "DELETE": true, "DETACH": true,
	"DROP": true, "END": true, "EXECUTE": true, "EXPLAIN": true, "EXPORT": true, "FORCE": true, "IMPORT": true,
	"INSERT": true, "INSTALL": true, "LOAD": true, "MERGE": true, "PRAGMA": true, "PREPARE": true, "RESET": true,
	"ROLLBACK": true, "SET": true, "START": true, "TRUNCATE": true, "UPDATE": true, "USE": true, "VACUUM": true,
}

// notQueryHints say what to do instead, where rocklake has a way.
var notQueryHints = map[string]string{
	"EXPLAIN": " (for DuckDB's plan, give the query with --explain)",
	"COPY":    " (to write a query's rows to a file, give the query with --format csv, tsv, json or jsonl and redirect its output)",
}

// Parse is a query's parse tree as DuckDB's parser gives it
// (json_serialize_sql), cached per text as the trees of the queries run
// are (shared: read it, never modify it); nil for a statement the parser
// does not serialise.
func (e *Engine) Parse(ctx context.Context, query string) (duckast.Tree, error) {
	if tree, ok := e.trees.Get(query); ok {
		return tree, nil
	}
	tree, err := e.serialize(ctx, query)
	if errors.Is(err, duckast.ErrNotSerializable) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	e.trees.Add(query, tree)
	return tree, nil
}

// serialize parses a query with DuckDB's parser, on any connection: the
// parse depends on the text alone.
func (e *Engine) serialize(ctx context.Context, query string) (duckast.Tree, error) {
	var js string
	if err := e.parse.QueryRowContext(ctx, query).Scan(&js); err != nil {
		return nil, err
	}
	return duckast.Decode(js)
}
