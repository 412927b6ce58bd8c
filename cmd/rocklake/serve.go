package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/interop/iceberg"
	"github.com/rocklake/rocklake/kv/pgkv"
	"github.com/rocklake/rocklake/server"
	"github.com/rocklake/rocklake/storage"
)

func newServeCmd(g *globals) *cobra.Command {
	var cfg server.Config
	var authFile, certFile, keyFile, memoryLimit, maxBuffered string
	var readDirs []string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the catalog over PostgreSQL's wire protocol and an HTTP plan API",
		Long: `serve keeps the catalog, its caches and DuckDB open for many clients: psql
and any PostgreSQL driver run SELECTs through the same engine as "rocklake
query" (pruning, answers from statistics) and writes in SQL, and the HTTP API
lists tables and snapshots, describes tables, returns statistics and scan
plans, registers files and runs writes.

Without --auth it serves loopback only, without passwords (as PostgreSQL's
trust), every client a writer. With --auth FILE, PostgreSQL clients log in
with SCRAM-SHA-256 and HTTP clients send "Authorization: Bearer TOKEN"; users
and tokens are readers or writers (writers may also register files and write
in SQL). Make the file's entries with "rocklake serve passwd" and "rocklake
serve token". With --tls-cert and --tls-key, both protocols require TLS.
Listening beyond loopback needs --auth and TLS, or --insecure.

Clients' SQL runs on a DuckDB locked down to the data directories
(--read-dir, by default the catalog's data root, else the directories of the
files registered when the server starts; and the object cache and the
catalog's rewrite directory, where writes put their files): no other file is
read or written, no database attached, no extension loaded, no setting
changed. Readers run queries; "SET rocklake.snapshot = N" reads an older
snapshot, and BEGIN ... COMMIT reads one snapshot throughout. Writers also
run INSERT, CREATE TABLE [AS], COPY t FROM 'path' (a file under those
directories) or FROM STDIN (psql's \copy, a driver's CopyFrom; at most
--max-copy-bytes), DELETE, UPDATE and MERGE, each committed as its own
snapshot; inside BEGIN ... COMMIT they commit together at COMMIT, and a
statement that reads a table the block wrote is refused (its rows are not
readable before COMMIT). POST /v1/sql runs one
write over HTTP.

Rows leave in bulk as PostgreSQL's clients expect: COPY (query) TO STDOUT and
COPY t [(cols)] TO STDOUT (psql's \copy ... to FILE, a driver's CopyTo) in the
text, CSV or binary format; cursors (DECLARE name CURSOR [WITH HOLD] FOR query,
FETCH n, MOVE, CLOSE), which read forward only; and PREPARE, EXECUTE and
DEALLOCATE. Rows are sent as the query hands them over, so a session holds a
batch, not the answer; every way of reading an answer counts against
--max-result-rows and --max-result-bytes. A session holds at most --max-cursors
answers open at once (cursors, and portals an Execute with a row limit left
suspended): one more fails with SQLSTATE 54000 until it closes some.

--memory-limit bounds the server's memory for clients: DuckDB gets it less
--max-buffered-bytes (an eighth by default), the most the PostgreSQL sessions
hold together of their clients' messages and answers, and of the named
prepared statements and portals they keep. Each connection has a
share of that set aside (up to 128 KiB), so a client that reads answers of
rows smaller than that is served whatever the others hold; a session whose client is slow stops taking rows
from DuckDB until the client takes what it was sent, and a row or message
too large for what is left fails with SQLSTATE 53200, for that client alone.
A client that takes none of its answer for --write-timeout is dropped; so is
one that takes none of it for a second after a cancel request for its
session.

SIGINT or SIGTERM stops accepting, lets running queries finish (up to
--shutdown-timeout), and exits 0.

For example:

  rocklake serve
  psql -h 127.0.0.1 -p 5433 -U me -c 'SELECT count(*) FROM events'
  curl -s -X POST 127.0.0.1:8181/v1/tables/events/plan -d '{"predicate": "user_id = 42"}'
  rocklake serve --auth users.json --tls-cert server.crt --tls-key server.key --pg-listen 0.0.0.0:5433`,
		Args:        cobra.NoArgs,
		Annotations: map[string]string{interruptible: "yes"},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if authFile != "" {
				a, err := server.LoadAuth(authFile)
				if err != nil {
					return err
				}
				cfg.Auth = a
			}
			if (certFile == "") != (keyFile == "") {
				return usagef("--tls-cert and --tls-key go together")
			}
			if certFile != "" {
				cert, err := tls.LoadX509KeyPair(certFile, keyFile)
				if err != nil {
					return fmt.Errorf("TLS certificate: %w", err)
				}
				cfg.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
			}
			dirs, err := serveDirs(cmd.Context(), g, readDirs)
			if err != nil {
				return err
			}
			tmp, err := os.MkdirTemp("", "rocklake-serve-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(tmp)
			mem, err := memoryShares(memoryLimit, maxBuffered)
			if err != nil {
				return err
			}
			if cfg.IcebergHistory < 1 {
				return fmt.Errorf("--iceberg-history %d: a table's metadata lists at least its current version (give 1 or more)", cfg.IcebergHistory)
			}
			cfg.MaxBufferedBytes = mem.buffered
			cfg.Sandbox = &rocklake.Sandbox{Dirs: dirs, TempDir: tmp, MemoryLimit: strconv.FormatInt(mem.duckdb, 10) + "B"}
			lake, err := rocklake.Open(cmd.Context(), g.catalog, rocklake.OpenOptions{Sandbox: cfg.Sandbox})
			if err != nil {
				return err
			}
			defer lake.Close()
			cfg.Log = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			if !pgkv.IsLocation(g.catalog) {
				// The catalog directory is held open: other rocklake
				// processes reach it through this socket (remote.go).
				cfg.SocketPath = filepath.Join(g.catalog, socketName)
				cfg.Local = map[string]http.Handler{"POST /v1/cli": cliHandler(lake)}
				if !cmd.Flags().Changed("iceberg-dir") {
					cfg.IcebergDir = filepath.Join(g.catalog, "iceberg-metadata")
				}
			}
			cfg.Version = version
			srv, err := server.New(lake, cfg)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if a := srv.PGAddr(); a != nil {
				fmt.Fprintf(out, "PostgreSQL protocol on %s\n", a)
			}
			if a := srv.HTTPAddr(); a != nil {
				fmt.Fprintf(out, "HTTP API on http://%s\n", a)
			}
			fmt.Fprintf(out, "queries may read files under: %s\n", strings.Join(dirs, ", "))
			fmt.Fprintf(out, "memory: %s in all (--memory-limit), %s of it for DuckDB, %s for what sessions hold for their clients (--max-buffered-bytes)\n",
				humanize.IBytes(uint64(mem.total)), humanize.IBytes(uint64(mem.duckdb)), humanize.IBytes(uint64(mem.buffered)))
			if a := srv.HTTPAddr(); a != nil {
				fmt.Fprintf(out, "Iceberg REST catalog on http://%s/iceberg (read-only", a)
				if cfg.IcebergDir == "" {
					fmt.Fprint(out, "; server-side planning only: give --iceberg-dir for table metadata")
				}
				fmt.Fprintln(out, ")")
			}
			if cfg.SocketPath != "" {
				fmt.Fprintf(out, "rocklake commands on %s run through this server (query, plan, stats, snapshots, add, files, table list and describe)\n", g.catalog)
			}
			errc := make(chan error, 1)
			go func() { errc <- srv.Serve() }()
			select {
			case err := <-errc:
				return err
			case <-cmd.Context().Done():
				fmt.Fprintln(out, "shutting down: waiting for running queries")
				if err := srv.Shutdown(context.Background()); err != nil {
					return err
				}
				return <-errc
			}
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.PGListen, "pg-listen", "127.0.0.1:5433", "PostgreSQL-protocol address (empty: none)")
	f.StringVar(&cfg.HTTPListen, "http-listen", "127.0.0.1:8181", "HTTP API address (empty: none)")
	f.StringVar(&cfg.IcebergDir, "iceberg-dir", "", "where the Iceberg REST catalog (/iceberg on the HTTP listener) writes tables' Iceberg metadata (default: iceberg-metadata in a local catalog's directory; none for a PostgreSQL catalog)")
	f.IntVar(&cfg.IcebergHistory, "iceberg-history", iceberg.DefaultHistory, "how many versions of a table (the current one included, among the snapshots the catalog keeps) its Iceberg metadata lists for time travel")
	f.StringVar(&authFile, "auth", "", "users and tokens file (JSON); without it, loopback only and no passwords")
	f.StringVar(&certFile, "tls-cert", "", "TLS certificate (PEM); with --tls-key, TLS is required on both protocols")
	f.StringVar(&keyFile, "tls-key", "", "TLS private key (PEM)")
	f.BoolVar(&cfg.Insecure, "insecure", false, "allow listening beyond loopback without --auth and TLS")
	f.StringSliceVar(&readDirs, "read-dir", nil, "a directory queries may read files under (repeatable; default: the data root, else the registered files' directories)")
	f.IntVar(&cfg.MaxConns, "max-connections", 64, "PostgreSQL connections served at once")
	f.DurationVar(&cfg.StatementTimeout, "statement-timeout", 5*time.Minute, "longest a query may run")
	f.Int64Var(&cfg.MaxResultRows, "max-result-rows", 1_000_000, "most rows one query may return (through a cursor or COPY ... TO STDOUT too)")
	f.Int64Var(&cfg.MaxResultBytes, "max-result-bytes", 256<<20, "most bytes one query may return (through a cursor or COPY ... TO STDOUT too)")
	f.IntVar(&cfg.MaxCursors, "max-cursors", 64, "most cursors (DECLARE) and suspended portals one session may hold open at once")
	f.StringVar(&memoryLimit, "memory-limit", "", "the server's memory for all clients together, such as 4GB: DuckDB's limit and --max-buffered-bytes come out of it (default: DuckDB's default, 80% of memory)")
	f.StringVar(&maxBuffered, "max-buffered-bytes", "", "most memory the PostgreSQL sessions together hold of their clients' messages, answers and prepared statements, such as 512MB; taken out of --memory-limit (default: an eighth of it)")
	f.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", 30*time.Second, "how long a shutdown waits for running queries")
	f.DurationVar(&cfg.CompactEvery, "compact-catalog-every", 0, "compact the catalog's store this often (VACUUM on PostgreSQL, and REINDEX CONCURRENTLY of bloated indexes, which readers and writers do not wait for); 0 leaves it to the store's own")
	f.IntVar(&cfg.MaxMessageBytes, "max-message-bytes", 64<<20, "largest message a PostgreSQL client may send after login")
	f.Int64Var(&cfg.MaxCopyBytes, "max-copy-bytes", 1<<30, "most data one COPY ... FROM STDIN may send (staged on disk until it commits)")
	f.DurationVar(&cfg.WriteTimeout, "write-timeout", 60*time.Second, "how long a client may take none of its answer before its session ends (after a cancel request for it, a second)")
	cmd.AddCommand(newServePasswdCmd(), newServeTokenCmd())
	return cmd
}

// memorySplit is how a server's memory limit is divided.
type memorySplit struct {
	total, duckdb, buffered int64
}

// bufferedShare is the part of --memory-limit the sessions' buffers get
// by default: a session whose client is slow holds about one flush (64
// KiB), so an eighth of even 512MB has room for a thousand of them, and
// DuckDB, whose queries need the memory more, keeps the most of it.
const bufferedShare = 8

// memoryShares divides the server's memory limit (DuckDB's syntax;
// empty: DuckDB's default) between the sessions' buffers (maxBuffered,
// empty: an eighth) and DuckDB, which gets the rest: the two together are
// the limit, not the limit and more.
func memoryShares(limit, maxBuffered string) (memorySplit, error) {
	given := limit != ""
	if !given {
		var err error
		if limit, err = engine.DefaultMemoryLimit(); err != nil {
			return memorySplit{}, err
		}
	}
	total, err := humanize.ParseBytes(limit)
	if err != nil || total == 0 || total > 1<<62 {
		if given {
			return memorySplit{}, usagef("--memory-limit %q: want a size such as 4GB or 512MiB", limit)
		}
		return memorySplit{}, fmt.Errorf("DuckDB's default memory limit %q: not a size (give --memory-limit)", limit)
	}
	m := memorySplit{total: int64(total), buffered: int64(total) / bufferedShare}
	if maxBuffered != "" {
		n, err := humanize.ParseBytes(maxBuffered)
		if err != nil || n == 0 || n > 1<<62 {
			return memorySplit{}, usagef("--max-buffered-bytes %q: want a size such as 512MB or 64MiB", maxBuffered)
		}
		if n >= total {
			return memorySplit{}, usagef("--max-buffered-bytes %s is not less than --memory-limit %s: it is taken out of it, and DuckDB needs the rest",
				humanize.IBytes(n), humanize.IBytes(total))
		}
		m.buffered = int64(n)
	}
	m.duckdb = m.total - m.buffered
	return m, nil
}

// serveDirs are the directories a served DuckDB may read: those given,
// else the catalog's data root, else the directories of the files
// registered now; and the object cache and the catalog's rewrite root.
func serveDirs(ctx context.Context, g *globals, given []string) ([]string, error) {
	lake, err := rocklake.Open(ctx, g.catalog, rocklake.OpenOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer lake.Close()
	// Writes in SQL put their files under the rewrite root, which the
	// served DuckDB writes and then reads back to check them.
	var dirs []string
	if root := lake.Catalog().RewriteRoot(); root != "" {
		dirs = append(dirs, root)
	}
	for _, d := range given {
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, err
		}
		if st, err := os.Stat(abs); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("--read-dir %s: not a directory", d)
		}
		dirs = append(dirs, abs)
	}
	if len(given) == 0 {
		if root := lake.DataRoot(); root != "" && !strings.HasPrefix(root, "s3://") {
			dirs = append(dirs, root)
		} else {
			tables, err := lake.Tables(ctx, rocklake.ReadOptions{})
			if err != nil {
				return nil, err
			}
			for _, t := range tables {
				files, err := lake.Files(ctx, t.Name, rocklake.ReadOptions{})
				if err != nil {
					return nil, err
				}
				for _, f := range files {
					if !strings.HasPrefix(f.Path, "s3://") {
						dirs = append(dirs, filepath.Dir(f.Path))
					}
				}
			}
		}
	}
	if c, err := storage.CacheFromEnv(); err == nil {
		dirs = append(dirs, c.Dir)
	}
	return outermost(dirs), nil
}

// outermost drops duplicates and directories inside another listed one.
func outermost(dirs []string) []string {
	for i := range dirs {
		dirs[i] = filepath.Clean(dirs[i])
	}
	slices.Sort(dirs)
	dirs = slices.Compact(dirs)
	var out []string
	for _, d := range dirs {
		if n := len(out); n > 0 && strings.HasPrefix(d, out[n-1]+string(filepath.Separator)) {
			continue
		}
		out = append(out, d)
	}
	return out
}

func newServePasswdCmd() *cobra.Command {
	var name, role string
	cmd := &cobra.Command{
		Use:     "passwd",
		Short:   "Make an auth-file user entry: reads the password from stdin, prints a SCRAM-SHA-256 verifier",
		Example: `  printf 'correct horse battery staple\n' | rocklake serve passwd --name alice --role reader`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkEntryFlags(name, role); err != nil {
				return err
			}
			line, err := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
			if err != nil && line == "" {
				return errors.New("no password on standard input")
			}
			pw := strings.TrimRight(line, "\r\n")
			if pw == "" {
				return errors.New("the password is empty")
			}
			v, err := server.Verifier(pw)
			if err != nil {
				return err
			}
			return writeJSON(cmd.OutOrStdout(), server.User{Name: name, Role: server.Role(role), Password: v})
		},
	}
	entryFlags(cmd, &name, &role, "the user's name")
	return cmd
}

func entryFlags(cmd *cobra.Command, name, role *string, nameHelp string) {
	cmd.Flags().StringVar(name, "name", "", nameHelp+" (required)")
	cmd.Flags().StringVar(role, "role", string(server.Reader), "reader or writer")
}

func checkEntryFlags(name, role string) error {
	if name == "" {
		return usagef("--name is required")
	}
	if err := server.CheckRole(server.Role(role)); err != nil {
		return usagef("--role: %v", err)
	}
	return nil
}

func newServeTokenCmd() *cobra.Command {
	var name, role string
	cmd := &cobra.Command{
		Use:     "token",
		Short:   "Make an HTTP bearer token: prints the token once (to stderr) and its auth-file entry (to stdout)",
		Example: `  rocklake serve token --name loader --role writer >> tokens.json`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkEntryFlags(name, role); err != nil {
				return err
			}
			tok, sum, err := server.NewToken()
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "token (shown once; keep it secret): %s\n", tok)
			return writeJSON(cmd.OutOrStdout(), server.Token{Name: name, Role: server.Role(role), SHA256: sum})
		},
	}
	entryFlags(cmd, &name, &role, "the token's name")
	return cmd
}
