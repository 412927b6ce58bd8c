package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rocklake/rocklake"
	"github.com/rocklake/rocklake/kv"
	"github.com/rocklake/rocklake/storage"
)

// Config is what a Server serves and how. The zero value of each limit
// means its default.
type Config struct {
	// PGListen is the PostgreSQL-protocol address ("" serves none).
	PGListen string
	// HTTPListen is the HTTP API's address ("" serves none).
	HTTPListen string
	// Auth holds users and tokens; nil serves without passwords (as
	// PostgreSQL's trust), which is allowed on loopback only.
	Auth *Auth
	// TLS, when set, is required on both protocols.
	TLS *tls.Config
	// Insecure allows listening beyond loopback without both Auth and TLS.
	Insecure bool
	// MaxConns bounds PostgreSQL connections (default 64); more are
	// refused with SQLSTATE 53300.
	MaxConns int
	// StatementTimeout bounds one query (default 5 minutes).
	StatementTimeout time.Duration
	// MaxResultRows and MaxResultBytes bound what one query may send
	// (defaults 1,000,000 rows and 256 MiB), whether as rows, a portal's
	// batches, a cursor's FETCHes or COPY ... TO STDOUT's data; a query
	// over either fails with SQLSTATE 54000 rather than stream without end.
	MaxResultRows  int64
	MaxResultBytes int64
	// MaxCursors bounds the answers one PostgreSQL session holds open at
	// once (default 64): its cursors (DECLARE) and its portals started
	// and not run to their end (the extended protocol's Execute with a
	// row limit). Each is a DuckDB query under way; one more fails with
	// SQLSTATE 54000, and the session keeps what it holds.
	MaxCursors int
	// MaxMessageBytes bounds the body of one message a client sends
	// (default 64 MiB; PostgreSQL's own limit is 1 GB, most drivers send
	// far less). A message over it ends the connection with SQLSTATE
	// 54000. A message's memory is taken only as its bytes arrive, so
	// what a client can make the server hold is what it has sent, up to
	// this. Before login the limit is 64 KiB (SCRAM's messages are
	// small), and the startup message's is 10,000 bytes, as PostgreSQL's.
	MaxMessageBytes int
	// MaxCopyBytes bounds the data one COPY ... FROM STDIN may send
	// (default 1 GiB). It is staged on disk, in the sandbox's temporary
	// directory, until the COPY commits or fails; a COPY over the limit
	// fails with SQLSTATE 54000 and its staged data is removed.
	MaxCopyBytes int64
	// WriteTimeout ends a session whose client takes none of its answer
	// for this long (default 60 s): a client that stops reading would
	// otherwise keep its query's answer, which DuckDB holds whole, and its
	// connection slot for as long as it likes. The query is cancelled and
	// what the session held is released. A cancel request for the session
	// (PostgreSQL's CancelRequest) shortens it to a second until the
	// session's next message: a client that reads gets the cancel's
	// 57014, one that does not is dropped then, not a timeout later.
	WriteTimeout time.Duration
	// MaxBufferedBytes bounds what all PostgreSQL sessions together hold
	// of their clients' bytes (rocklake_pg_buffered_bytes): messages
	// partly received, and rows encoded and not yet taken by the socket.
	// Default 256 MiB, or 256 KiB per connection if that is more; rocklake
	// serve takes it out of --memory-limit (an eighth by default) and
	// gives DuckDB the rest. Each connection has a share set aside (up to
	// 128 KiB; at most half the limit goes to shares), and so do as many
	// connections in their startup: a client whose rows and messages are
	// small is served whatever the others hold. A session past its share
	// first waits for its client to take what it has queued, and DuckDB's
	// rows wait meanwhile; a row or message larger than the share draws on
	// the rest of the limit, and when that is taken the query fails with
	// SQLSTATE 53200 (a row) or the connection ends with it (a message),
	// while the others keep what they hold. It must be at least 64 KiB
	// per connection.
	MaxBufferedBytes int64
	// ShutdownTimeout is how long Shutdown lets running queries finish
	// before cancelling them (default 30 s).
	ShutdownTimeout time.Duration
	// Version is rocklake's version, named by version() ("" says dev).
	Version string
	// Sandbox is what the lake's DuckDB may read (the lake must be opened
	// with the same): files registered over HTTP must lie inside it.
	Sandbox *rocklake.Sandbox
	// SocketPath, when set, is a Unix socket (made owner-only) serving the
	// HTTP API to local processes without a token, as writers: reaching it
	// takes the file access that reading the catalog takes. Local adds
	// routes served on it only.
	SocketPath string
	Local      map[string]http.Handler
	// IcebergDir is where the Iceberg REST catalog (under /iceberg on the
	// HTTP listener) writes tables' Iceberg metadata, each version of a
	// table once; "" serves the catalog without loadTable's metadata.
	IcebergDir string
	// IcebergHistory is how many versions of a table (the current one
	// included) its Iceberg metadata lists for time travel; 0:
	// iceberg.DefaultHistory.
	IcebergHistory int
	// CompactEvery, when positive, compacts the catalog's store this
	// often while the server runs (catalog.CompactStore: VACUUM (ANALYZE)
	// on PostgreSQL, which readers and writers do not wait for; a Pebble
	// compaction beside them for a directory), each run logged with its
	// sizes; 0 leaves it to the store's own (autovacuum, Pebble's
	// compactions).
	CompactEvery time.Duration
	// Log receives one line per connection, request and failure; nil
	// discards. Secrets are never logged.
	Log *slog.Logger
}

func (c *Config) defaults() {
	if c.MaxConns <= 0 {
		c.MaxConns = 64
	}
	if c.StatementTimeout <= 0 {
		c.StatementTimeout = 5 * time.Minute
	}
	if c.MaxResultRows <= 0 {
		c.MaxResultRows = 1_000_000
	}
	if c.MaxResultBytes <= 0 {
		c.MaxResultBytes = 256 << 20
	}
	if c.MaxCursors <= 0 {
		c.MaxCursors = 64
	}
	if c.MaxMessageBytes <= 0 {
		c.MaxMessageBytes = 64 << 20
	}
	if c.MaxCopyBytes <= 0 {
		c.MaxCopyBytes = 1 << 30
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = 60 * time.Second
	}
	if c.MaxBufferedBytes <= 0 {
		c.MaxBufferedBytes = max(256<<20, int64(c.MaxConns)*2*maxFloor)
	}
	if c.ShutdownTimeout <= 0 {
		c.ShutdownTimeout = 30 * time.Second
	}
	if c.Log == nil {
		c.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
}

// Server serves one Lake over the PostgreSQL protocol and HTTP.
type Server struct {
	lake *rocklake.Lake
	cfg  Config
	m    *metrics

	pgLn   net.Listener
	httpLn net.Listener
	http   *http.Server
	sockLn net.Listener
	sock   *http.Server

	iceMu    sync.Mutex  // one materialization of Iceberg metadata at a time
	iceS3    *storage.S3 // under iceMu
	icePlans icebergPlans

	// ctx is cancelled when Shutdown gives up waiting: every running
	// query's context derives from it.
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	sessions map[uint32]*pgSession // by backend process id, for CancelRequest
	dbName   string                // current_database(): catalogName
	sys      *sysCatalog           // PostgreSQL's system catalogs, made on first use
	closing  bool
	stopped  chan struct{} // closed by Shutdown: background work ends
	conns    sync.WaitGroup
	active   atomic.Int64 // PostgreSQL connections
	nextPID  atomic.Uint32
	ready    atomic.Bool
	// budget bounds and counts what the PostgreSQL sessions hold of their
	// clients' bytes: messages received and not yet whole, rows queued and
	// not yet taken by the socket.
	budget  *budget
	dropped *prometheus.CounterVec
}

// ErrInsecure is returned for a listen address beyond loopback without
// both authentication and TLS.
var ErrInsecure = errors.New("refusing to listen beyond loopback without --auth and TLS")

// New checks the configuration and opens the listeners; Serve serves them.
func New(lake *rocklake.Lake, cfg Config) (*Server, error) {
	cfg.defaults()
	if cfg.PGListen == "" && cfg.HTTPListen == "" {
		return nil, errors.New("nothing to serve: give a PostgreSQL or an HTTP listen address")
	}
	for _, addr := range []string{cfg.PGListen, cfg.HTTPListen} {
		if addr == "" {
			continue
		}
		loop, err := loopbackOnly(addr)
		if err != nil {
			return nil, err
		}
		if !loop && (cfg.Auth == nil || cfg.TLS == nil) && !cfg.Insecure {
			return nil, fmt.Errorf("%s: %w (or pass --insecure to allow it)", addr, ErrInsecure)
		}
	}
	b, err := newBudget(cfg.MaxBufferedBytes, cfg.MaxConns)
	if err != nil {
		return nil, err
	}
	s := &Server{lake: lake, cfg: cfg, m: newMetrics(), sessions: map[uint32]*pgSession{}, budget: b, dbName: catalogName(lake.Catalog())}
	if e := lake.Engine(); e != nil {
		if err := s.registerSessionFunctions(context.Background(), e); err != nil {
			return nil, err
		}
	}
	s.sys = &sysCatalog{s: s}
	s.registerClientMetrics()
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.stopped = make(chan struct{})
	if cfg.PGListen != "" {
		if s.pgLn, err = net.Listen("tcp", cfg.PGListen); err != nil {
			return nil, fmt.Errorf("PostgreSQL listener: %w", err)
		}
	}
	if cfg.HTTPListen != "" {
		if s.httpLn, err = net.Listen("tcp", cfg.HTTPListen); err != nil {
			s.closeListeners()
			return nil, fmt.Errorf("HTTP listener: %w", err)
		}
		// A copy of its own: net/http adds HTTP/2 to the config it serves
		// with as it starts, while PostgreSQL handshakes read theirs.
		s.http = &http.Server{Handler: s.httpHandler(), ReadHeaderTimeout: 10 * time.Second, TLSConfig: cfg.TLS.Clone(),
			ErrorLog: slog.NewLogLogger(cfg.Log.Handler(), slog.LevelWarn)}
	}
	if cfg.SocketPath != "" {
		if s.sockLn, err = listenSocket(cfg.SocketPath); err != nil {
			s.closeListeners()
			return nil, err
		}
		mux := http.NewServeMux()
		mux.Handle("/", s.httpHandler())
		for pattern, h := range cfg.Local {
			mux.Handle(pattern, h)
		}
		s.sock = &http.Server{Handler: trusted(mux), ReadHeaderTimeout: 10 * time.Second,
			ErrorLog: slog.NewLogLogger(cfg.Log.Handler(), slog.LevelWarn)}
	}
	return s, nil
}

func (s *Server) closeListeners() {
	for _, ln := range []net.Listener{s.pgLn, s.httpLn, s.sockLn} {
		if ln != nil {
			ln.Close()
		}
	}
}

// listenSocket listens on a Unix socket only its owner may connect to. A
// socket left by a server that died is replaced; a live one is refused.
func listenSocket(path string) (net.Listener, error) {
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return nil, fmt.Errorf("%s: another server is listening there", path)
	}
	os.Remove(path)
	old := syscall.Umask(0o177)
	ln, err := net.Listen("unix", path)
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("local socket: %w", err)
	}
	return ln, nil
}

type trustedKey struct{}

// trusted marks requests that came over the local socket.
func trusted(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), trustedKey{}, true)))
	})
}

// loopbackOnly says whether an address listens on loopback only: an IP
// literal that is loopback, or localhost. An empty host is every
// interface.
func loopbackOnly(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("listen address %q: %w", addr, err)
	}
	if host == "localhost" {
		return true, nil
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}

// PGAddr and HTTPAddr are the addresses listened on (with the port chosen
// when the configuration said 0); nil when not served.
func (s *Server) PGAddr() net.Addr {
	if s.pgLn == nil {
		return nil
	}
	return s.pgLn.Addr()
}

func (s *Server) HTTPAddr() net.Addr {
	if s.httpLn == nil {
		return nil
	}
	return s.httpLn.Addr()
}

// Serve accepts connections until Shutdown; it returns nil after a
// shutdown.
func (s *Server) Serve() error {
	errc := make(chan error, 2)
	n := 0
	if s.pgLn != nil {
		n++
		go func() { errc <- s.servePG() }()
	}
	if s.httpLn != nil {
		n++
		go func() {
			var err error
			if s.cfg.TLS != nil {
				err = s.http.ServeTLS(s.httpLn, "", "")
			} else {
				err = s.http.Serve(s.httpLn)
			}
			if errors.Is(err, http.ErrServerClosed) {
				err = nil
			}
			errc <- err
		}()
	}
	if s.sockLn != nil {
		n++
		go func() {
			err := s.sock.Serve(s.sockLn)
			if errors.Is(err, http.ErrServerClosed) {
				err = nil
			}
			errc <- err
		}()
	}
	if s.cfg.CompactEvery > 0 {
		go s.compactCatalog(s.cfg.CompactEvery)
	}
	s.ready.Store(true)
	var first error
	for range n {
		if err := <-errc; err != nil && first == nil {
			first = err
			s.Shutdown(context.Background())
		}
	}
	return first
}

// Shutdown stops accepting, lets running queries and requests finish for
// up to ShutdownTimeout (or until ctx ends), then cancels what still runs
// and closes every connection. Commits are never cut: an add in progress
// is one commit that either lands or does not.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return nil
	}
	s.closing = true
	close(s.stopped)
	s.mu.Unlock()
	s.ready.Store(false)
	ctx, stop := context.WithTimeout(ctx, s.cfg.ShutdownTimeout)
	defer stop()
	if s.pgLn != nil {
		s.pgLn.Close()
	}
	var herr error
	done := make(chan struct{})
	go func() {
		if s.http != nil {
			herr = s.http.Shutdown(ctx)
		}
		if s.sock != nil {
			if err := s.sock.Shutdown(ctx); herr == nil {
				herr = err
			}
		}
		s.mu.Lock()
		for _, ss := range s.sessions {
			ss.closeWhenIdle()
		}
		s.mu.Unlock()
		s.conns.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		s.cancel()
		s.mu.Lock()
		for _, ss := range s.sessions {
			ss.conn.Close()
		}
		s.mu.Unlock()
		if s.http != nil {
			s.http.Close()
		}
		if s.sock != nil {
			s.sock.Close()
		}
		<-done
	}
	s.cancel()
	s.sys.close()
	return herr
}

// compactCatalog compacts the catalog's store every interval until
// Shutdown. A failed run is logged and the next one tries again.
func (s *Server) compactCatalog(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	c := s.lake.Catalog()
	size := func() int64 {
		if z, ok := c.Store().(kv.Sizer); ok {
			if n, err := z.DiskSize(); err == nil {
				return n
			}
		}
		return -1
	}
	for {
		select {
		case <-s.stopped:
			return
		case <-t.C:
		}
		before, start := size(), time.Now()
		if err := c.CompactStore(); err != nil {
			s.m.compactions.WithLabelValues("failed").Inc()
			s.cfg.Log.Error("catalog: compaction failed", "catalog", c.Location(), "err", err)
			continue
		}
		s.m.compactions.WithLabelValues("done").Inc()
		s.cfg.Log.Info("catalog: compacted", "catalog", c.Location(), "bytes_before", before, "bytes_after", size(), "seconds", time.Since(start).Seconds())
	}
}
