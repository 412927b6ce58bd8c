// Package pgkv is a kv.Store in PostgreSQL, so that many processes on many
// machines can share one catalog.
//
// # Layout
//
// One table in one schema (the first entry of the connection's
// search_path; public by default) holds every key:
//
//	rocklake_kv (k bytea PRIMARY KEY, v bytea NOT NULL)
//
// bytea compares as unsigned bytes, so the primary key's B-tree orders
// keys exactly as kv requires, and every range scan is an index scan with
// both bounds in the index condition.
//
// # Reads
//
// A snapshot is a REPEATABLE READ, READ ONLY transaction on a connection
// of its own, begun and pinned with one round trip (on the next pooled
// connection when the server ended the first while it sat idle: a
// terminated backend, a restart). An iterator reads
// pages of rows through the index, small at first (a point lookup costs a
// short page) and four times larger each time up to pageMax, so that a
// scan of n rows costs O(log n) round trips at first and n/pageMax after.
// From the second full page (up to 64 MB) on, it reads the next one while
// the caller walks this one (a short scan never pays for a page it does
// not read), so that the server's time and the caller's overlap; the
// snapshot's connection still serves one query at a time.
// A store-level iterator gets a snapshot of its own, closed with it.
//
// # Writes
//
// A batch collects its writes in an append-only log (the last write of a
// key wins at commit, when the log is sorted by key) and commits as one
// READ COMMITTED transaction that first takes an
// exclusive transaction-level advisory lock for the schema, then checks
// the batch's conditions, then deletes and upserts (in chunks, as arrays).
// The lock serialises the writers of one catalog across every process, so
// the conditions are exact; readers never wait for it. Options.Timeout
// bounds each statement, not the whole transaction (a large commit is
// many statements). Failures that
// leave nothing written — serialization failures, deadlocks, unique
// violations (SQLSTATE 40001, 40P01, 23505), lock timeouts, and
// connections lost before COMMIT was sent — are retried with backoff for
// Options.RetryFor, decided by SQLSTATE and by pgconn's SafeToRetry, never
// by message text. A connection lost after COMMIT was sent leaves the
// outcome unknown: Commit then fails with kv.ErrUnknownOutcome, and the
// caller decides (the catalog looks for its commit token).
//
// kv.WriteLocker is a session-level advisory lock on the same key, held on
// a connection of its own: batches made through it pass (a session never
// waits for its own advisory lock), every other batch waits.
package pgkv

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rocklake/rocklake/kv"
)

// TableName is the one table the store keeps in its schema.
const TableName = "rocklake_kv"

var (
	// ErrNoStore reports a database (or schema) without the store's table.
	ErrNoStore = errors.New("holds no rocklake catalog")
	// ErrForeign reports a schema that holds tables of something else.
	ErrForeign = errors.New("holds tables that are not rocklake's")
)

// Options tune Open and Init. The zero value is the default.
type Options struct {
	// MaxConns bounds the pool (default: the URL's pool_max_conns, else
	// 32). Each open snapshot and each
	// store-level iterator holds one connection until closed, and one
	// catalog commit nests up to five (the caller's readers, its own
	// snapshot, the write).
	MaxConns int32
	// RetryFor bounds how long a batch commit retries failures that left
	// nothing written (default 20s; negative: no retry).
	RetryFor time.Duration
	// Timeout bounds one statement's wait for a connection and a reply
	// (default 60s).
	Timeout time.Duration
	// IdleTimeout closes connections left idle this long (default pgx's,
	// 30 minutes): a process holding many stores open (tests) need not
	// keep a server process per idle connection.
	IdleTimeout time.Duration
}

// Store is the PostgreSQL store. It is safe for concurrent use.
type Store struct {
	pool     *pgxpool.Pool
	schema   string
	table    string // quoted schema.table
	lockKey  int64
	retryFor time.Duration
	timeout  time.Duration
	maxConns int32
	redacted string
	trips    atomic.Int64
}

// RoundTrips counts the statements the store has sent, for tests and
// benchmarks that check reads are batched.
func (s *Store) RoundTrips() int64 { return s.trips.Load() }

var libpqKeyword = regexp.MustCompile(`^\s*(host|hostaddr|port|dbname|user|password|passfile|service|sslmode|connect_timeout|application_name|options|target_session_attrs)\s*=`)

// IsLocation says whether s names a PostgreSQL database rather than a
// directory: a postgres:// or postgresql:// URL, or libpq's keyword=value
// form.
func IsLocation(s string) bool {
	l := strings.ToLower(s)
	return strings.HasPrefix(l, "postgres://") || strings.HasPrefix(l, "postgresql://") || libpqKeyword.MatchString(l)
}

// Redact returns a location fit for messages: the password (in the URL's
// user info, a password or sslpassword parameter or keyword) replaced by
// "xxxxx".
func Redact(loc string) string {
	if u, err := url.Parse(loc); err == nil && u.Scheme != "" {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
		q := u.Query()
		for k := range q {
			if strings.EqualFold(k, "password") || strings.EqualFold(k, "sslpassword") {
				q.Set(k, "xxxxx")
			}
		}
		u.RawQuery = q.Encode()
		return u.String()
	}
	// A URL that does not parse (a stray % or space in the password) has
	// no certain boundaries: everything between the user name and the
	// last @ is masked, more than the password rather than less.
	loc = brokenURLPassword.ReplaceAllString(loc, "${1}:xxxxx@")
	return passwordKeyword.ReplaceAllString(loc, "${1}xxxxx")
}

var (
	passwordKeyword   = regexp.MustCompile(`(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)`)
	brokenURLPassword = regexp.MustCompile(`(?is)^(\s*postgres(?:ql)?://[^:@/]*):.*@`)
)

func (o Options) withDefaults() Options {
	if o.MaxConns <= 0 {
		o.MaxConns = 32
	}
	if o.RetryFor == 0 {
		o.RetryFor = 20 * time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = 60 * time.Second
	}
	return o
}

func connect(ctx context.Context, loc string, o Options) (*Store, error) {
	asked := o.MaxConns
	o = o.withDefaults()
	cfg, err := pgxpool.ParseConfig(loc)
	if err != nil {
		// pgx's parse errors name the location with its password masked;
		// ours is masked again in case a form slips past it.
		return nil, fmt.Errorf("catalog location %s: %s", Redact(loc), strings.ReplaceAll(err.Error(), loc, Redact(loc)))
	}
	if asked <= 0 && strings.Contains(loc, "pool_max_conns") {
		o.MaxConns = cfg.MaxConns // the URL's pool_max_conns=N
	}
	cfg.MaxConns = o.MaxConns
	cfg.MinConns = 0
	if o.IdleTimeout > 0 {
		cfg.MaxConnIdleTime = o.IdleTimeout
		cfg.HealthCheckPeriod = min(cfg.HealthCheckPeriod, o.IdleTimeout)
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 10 * time.Second
	}
	if _, ok := cfg.ConnConfig.RuntimeParams["application_name"]; !ok {
		cfg.ConnConfig.RuntimeParams["application_name"] = "rocklake"
	}
	schema := "public"
	if sp := cfg.ConnConfig.RuntimeParams["search_path"]; sp != "" {
		first := strings.TrimSpace(strings.Split(sp, ",")[0])
		if unq, ok := strings.CutPrefix(first, `"`); ok {
			first = strings.ReplaceAll(strings.TrimSuffix(unq, `"`), `""`, `"`)
		} else {
			first = strings.ToLower(first)
		}
		if first != "" && first != "$user" {
			schema = first
		}
	}
	h := fnv.New64a()
	h.Write([]byte("rocklake\x00" + schema))
	s := &Store{
		schema: schema, table: pgx.Identifier{schema, TableName}.Sanitize(),
		lockKey: int64(h.Sum64()), retryFor: o.RetryFor, timeout: o.Timeout, maxConns: o.MaxConns,
		redacted: describe(cfg.ConnConfig.Config, schema),
	}
	s.pool, err = pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, connectError(s.redacted, err)
	}
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		s.pool.Close()
		return nil, connectError(s.redacted, err)
	}
	c.Release()
	return s, nil
}

// describe names a database for messages, without its password.
func describe(c pgconn.Config, schema string) string {
	d := fmt.Sprintf("postgres://%s@%s:%d/%s", c.User, c.Host, c.Port, c.Database)
	if schema != "public" {
		d += " (schema " + schema + ")"
	}
	return d
}

// Open opens the store in the database loc names. It fails with ErrNoStore
// when the schema holds no store (create one with Init).
func Open(ctx context.Context, loc string, o Options) (*Store, error) {
	s, err := connect(ctx, loc, o)
	if err != nil {
		return nil, err
	}
	var exists bool
	err = s.pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, s.table).Scan(&exists)
	if err == nil && !exists {
		err = ErrNoStore
	}
	if err != nil {
		s.pool.Close()
		return nil, fmt.Errorf("%s: %w", s.redacted, err)
	}
	return s, nil
}

// Init creates the schema (when missing) and the store's table in it, and
// opens the store. It refuses a schema that holds any other table, view or
// sequence; a schema that already holds the store is opened as it is.
func Init(ctx context.Context, loc string, o Options) (*Store, error) {
	s, err := connect(ctx, loc, o)
	if err != nil {
		return nil, err
	}
	if err := s.init(ctx); err != nil {
		s.pool.Close()
		return nil, fmt.Errorf("%s: %w", s.redacted, err)
	}
	return s, nil
}

func (s *Store) init(ctx context.Context) error {
	var others []string
	rows, err := s.pool.Query(ctx, `
		SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relkind IN ('r','p','v','m','f','S')
		  AND c.relname <> $2 ORDER BY 1 LIMIT 5`, s.schema, TableName)
	if err != nil {
		return err
	}
	others, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	if len(others) > 0 {
		return fmt.Errorf("schema %s %w (%s); give rocklake a database or a schema of its own (search_path=NAME in the URL)", s.schema, ErrForeign, strings.Join(others, ", "))
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, s.lockKey); err != nil {
			return err
		}
		// CREATE SCHEMA IF NOT EXISTS needs CREATE on the database even
		// when the schema exists, which a role given a schema of its own
		// by an administrator lacks: only a missing schema is created.
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, s.schema).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{s.schema}.Sanitize()); err != nil {
				return schemaError(s.schema, err)
			}
		}
		_, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+s.table+` (k bytea PRIMARY KEY, v bytea NOT NULL)`)
		return schemaError(s.schema, err)
	})
}

// Schema is the schema the store lives in.
func (s *Store) Schema() string { return s.schema }

// String names the store's database without its password.
func (s *Store) String() string { return s.redacted }

func (s *Store) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s.timeout)
}

// wrap says which database failed, without credentials.
func (s *Store) wrap(err error) error {
	if err == nil || errors.Is(err, kv.ErrNotFound) || errors.Is(err, kv.ErrConditionFailed) {
		return err
	}
	if unavailable(err) {
		return fmt.Errorf("catalog database %s: %w: %w", s.redacted, kv.ErrUnavailable, err)
	}
	return fmt.Errorf("catalog database %s: %w", s.redacted, err)
}

// unavailable says the server could not be reached or went away, as
// opposed to answering with an error about the request.
func unavailable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return strings.HasPrefix(pe.Code, "08") || strings.HasPrefix(pe.Code, "57P")
	}
	return !errors.Is(err, context.Canceled)
}

// acquire takes a connection, saying so when the pool is exhausted rather
// than only that a deadline passed.
func (s *Store) acquire(ctx context.Context) (*pgxpool.Conn, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		st := s.pool.Stat()
		if st.AcquiredConns() >= st.MaxConns() {
			return nil, s.wrap(fmt.Errorf("all %d connections are in use by open readers and writers (raise the pool size or close readers): %w", st.MaxConns(), err))
		}
		return nil, s.wrap(err)
	}
	return conn, nil
}

// Get reads one key outside any snapshot.
func (s *Store) Get(key []byte) ([]byte, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	return get(ctx, s.pool, s, key)
}

type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func get(ctx context.Context, q querier, s *Store, key []byte) ([]byte, error) {
	s.trips.Add(1)
	var v []byte
	err := q.QueryRow(ctx, `SELECT v FROM `+s.table+` WHERE k = $1`, key).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, kv.ErrNotFound
	}
	if err != nil {
		return nil, s.wrap(err)
	}
	if v == nil {
		v = []byte{}
	}
	return v, nil
}

// NewIter opens a snapshot for the iterator alone.
func (s *Store) NewIter(lower, upper []byte) (kv.Iterator, error) {
	snap, err := s.newSnapshot()
	if err != nil {
		return nil, err
	}
	it := newIter(snap, lower, upper)
	it.own = true
	return it, nil
}

// NewBatch starts a batch.
func (s *Store) NewBatch() kv.Batch { return &batch{s: s} }

// Close closes every connection.
// SnapshotLimit is half the pool: a transaction of writes holds a
// snapshot, and so a connection, from its first write to its end, and the
// other half is left to queries (each holds one while it plans) and
// commits (which nest up to five).
func (s *Store) SnapshotLimit() int { return max(1, int(s.maxConns)/2) }

func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// Compact vacuums the catalog's table (VACUUM (ANALYZE)), whatever the
// range: the space of rows that deletes and replacements left dead goes
// back for reuse, and the planner's statistics are renewed. It takes no
// lock that readers or writers wait for (VACUUM FULL and CLUSTER would:
// they rewrite the table under an exclusive lock), and an open reader only
// keeps the rows it may still read. VACUUM needs the table's owner; a
// role that only reads and writes the table is told so.
//
// VACUUM gives an index's emptied pages back for reuse by the index, never
// to the disk: after a large table is dropped and expired, its keys' share
// of the primary key stays. So when the indexes (the primary key and the
// TOAST table's) take more than twice what the live keys need
// (indexBloated), Compact rebuilds them with REINDEX TABLE CONCURRENTLY,
// which readers and writers do not wait for. It waits for transactions
// open when it starts, at most reindexLockWait; one that outlasts that
// leaves the indexes as they were (and the rebuild for a later Compact),
// as does an interrupted rebuild, whose half-built index the next Compact
// drops first.
func (s *Store) Compact(lower, upper []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), max(s.timeout, time.Hour))
	defer cancel()
	var may bool
	if err := s.pool.QueryRow(ctx, `SELECT r.rolsuper OR pg_has_role(current_user, c.relowner, 'MEMBER')
		FROM pg_class c, pg_roles r WHERE c.oid = $1::regclass AND r.rolname = current_user`, s.table).Scan(&may); err != nil {
		return s.wrap(err)
	}
	if !may {
		return s.wrap(fmt.Errorf("compacting the catalog's table %s runs VACUUM, which needs its owner: connect as the role that ran init (or a member of it)", s.table))
	}
	held, err := s.dropInvalidIndexes(ctx)
	if err != nil {
		return s.wrap(err)
	}
	if _, err := s.pool.Exec(ctx, `VACUUM (ANALYZE) `+s.table); err != nil {
		return s.wrap(err)
	}
	if held {
		return nil // an old transaction is still open: rebuild later
	}
	bloated, err := s.indexBloated(ctx)
	if err != nil || !bloated {
		return s.wrap(err)
	}
	held, err = s.execUnheld(ctx, `REINDEX TABLE CONCURRENTLY `+s.table)
	if err != nil || held {
		// What it left half built goes now or at a later Compact.
		_, derr := s.dropInvalidIndexes(context.WithoutCancel(ctx))
		if err != nil {
			return s.wrap(fmt.Errorf("rebuilding the table's indexes: %w", err))
		}
		return s.wrap(derr)
	}
	return nil
}

// execUnheld runs a statement that waits for older transactions (REINDEX
// or DROP INDEX CONCURRENTLY) on a connection of its own, and cancels it
// once it has waited for them for reindexLockWait: held says it did. Those
// waits are on virtual transaction ids, which lock_timeout does not bound.
func (s *Store) execUnheld(ctx context.Context, sql string) (held bool, err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Release()
	pid := conn.Conn().PgConn().PID()
	stop, canceled := make(chan struct{}), make(chan bool, 1)
	go func() { canceled <- s.cancelLongWait(ctx, pid, stop) }()
	_, err = conn.Exec(ctx, sql)
	close(stop)
	if <-canceled {
		// Closed, not pooled: a cancel that came as the statement ended
		// must not reach the next one on this connection.
		_ = conn.Conn().Close(context.WithoutCancel(ctx))
		return true, nil
	}
	return false, err
}

// cancelLongWait watches backend pid until stop is closed, cancels its
// statement once it has waited for other transactions (a virtualxid
// lock) for reindexLockWait without a break, and says whether it did.
func (s *Store) cancelLongWait(ctx context.Context, pid uint32, stop <-chan struct{}) bool {
	tick := time.NewTicker(max(reindexLockWait/10, 10*time.Millisecond))
	defer tick.Stop()
	var since time.Time
	for {
		select {
		case <-stop:
			return false
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
		var waiting bool
		if err := s.pool.QueryRow(ctx, `SELECT coalesce(bool_or(wait_event_type = 'Lock' AND wait_event = 'virtualxid'), false)
			FROM pg_stat_activity WHERE pid = $1`, int64(pid)).Scan(&waiting); err != nil {
			continue
		}
		switch {
		case !waiting:
			since = time.Time{}
		case since.IsZero():
			since = time.Now()
		case time.Since(since) >= reindexLockWait:
			var ok bool
			if err := s.pool.QueryRow(ctx, `SELECT pg_cancel_backend($1)`, int64(pid)).Scan(&ok); err == nil && ok {
				return true
			}
		}
	}
}

// reindexLockWait bounds how long Compact's index rebuild waits for
// transactions open when it started (a variable for tests).
var reindexLockWait = time.Minute

// indexBloated says whether the table's indexes (its own and its TOAST
// table's) take more than twice, and 8 MB more than, what its live keys
// need by the statistics VACUUM (ANALYZE) just renewed: each key's average
// width plus an index tuple's header and line pointer, per row, at the
// B-tree's 90% fill; TOAST's index holds about 20 bytes a chunk of 2 kB.
func (s *Store) indexBloated(ctx context.Context) (bool, error) {
	var rows, indexBytes, toastBytes float64
	var keyWidth *float64
	err := s.pool.QueryRow(ctx, `SELECT greatest(c.reltuples, 0)::float8, pg_indexes_size(c.oid)::float8,
			coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0)::float8,
			(SELECT avg_width::float8 FROM pg_stats st WHERE st.schemaname = n.nspname AND st.tablename = c.relname AND st.attname = 'k')
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = $1::regclass`, s.table).Scan(&rows, &indexBytes, &toastBytes, &keyWidth)
	if err != nil {
		return false, err
	}
	width := 32.0
	if keyWidth != nil {
		width = *keyWidth
	}
	need := rows*(width+12)/0.9 + toastBytes/2048*20
	return indexBytes > 2*need+8<<20, nil
}

// dropInvalidIndexes drops what an interrupted REINDEX CONCURRENTLY left
// of the table's (and its TOAST table's) indexes: the half-built copies,
// marked invalid, that writers would go on updating. held says an old
// transaction kept one from going (it stays for a later Compact).
func (s *Store) dropInvalidIndexes(ctx context.Context) (held bool, err error) {
	rows, err := s.pool.Query(ctx, `SELECT i.indexrelid::regclass::text FROM pg_index i
		WHERE NOT i.indisvalid AND i.indrelid IN (SELECT c.oid FROM pg_class c WHERE c.oid = $1::regclass
			UNION SELECT c.reltoastrelid FROM pg_class c WHERE c.oid = $1::regclass)`, s.table)
	if err != nil {
		return false, err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return false, err
	}
	for _, n := range names {
		h, err := s.execUnheld(ctx, `DROP INDEX CONCURRENTLY IF EXISTS `+n)
		if err != nil {
			return false, fmt.Errorf("dropping %s, left by an interrupted index rebuild: %w", n, err)
		}
		held = held || h
	}
	return held, nil
}

// DiskSize is the table's size with its index and TOAST data.
func (s *Store) DiskSize() (int64, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT pg_total_relation_size($1)`, s.table).Scan(&n)
	return n, s.wrap(err)
}

// RangeDiskSize estimates a key range's share of the table: the stored
// sizes of its keys and values, with each row's header.
func (s *Store) RangeDiskSize(lower, upper []byte) (int64, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	where, args := rangeWhere(lower, upper)
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT coalesce(sum(pg_column_size(k) + pg_column_size(v) + 24), 0)::bigint FROM `+s.table+where, args...).Scan(&n)
	return n, s.wrap(err)
}

func rangeWhere(lower, upper []byte) (string, []any) {
	var conds []string
	var args []any
	if lower != nil {
		args = append(args, lower)
		conds = append(conds, fmt.Sprintf("k >= $%d", len(args)))
	}
	if upper != nil {
		args = append(args, upper)
		conds = append(conds, fmt.Sprintf("k < $%d", len(args)))
	}
	if len(conds) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}

// retryable says a failed attempt before COMMIT may be tried again: it
// wrote nothing, and the cause may pass. Any failure before COMMIT rolls
// the transaction back; what matters is whether trying again can help.
// Server errors decide by SQLSTATE: serialization failure, deadlock,
// unique violation, lock not available, and the classes of lost
// connections and shutdowns (08, 57P); every other server error (a
// missing table, a refused password) is final. A failure that is not a
// server error is the network's or a timeout's: worth another try.
func retryable(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return !errors.Is(err, kv.ErrConditionFailed) && !errors.Is(err, context.Canceled)
	}
	switch pe.Code {
	case "40001", "40P01", "23505", "55P03":
		return true
	}
	return strings.HasPrefix(pe.Code, "08") || strings.HasPrefix(pe.Code, "57P")
}

// backoff sleeps before attempt n (from 0): exponential from 2 ms, capped
// at 500 ms, with full jitter so that retrying writers spread out.
func backoff(n int) {
	d := 2 * time.Millisecond << min(n, 8)
	d = min(d, 500*time.Millisecond)
	time.Sleep(time.Duration(rand.Int64N(int64(d)) + int64(d)/4))
}
