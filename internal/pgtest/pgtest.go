// Package pgtest gives tests a throwaway PostgreSQL server that the test
// process starts itself: no docker, no server to set up beforehand, nothing
// left behind.
//
// Most tests want a database of their own and nothing more:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
//	func TestSomething(t *testing.T) {
//		url := pgtest.URL(t) // postgres://… of a new, empty database
//		…
//	}
//
// URL creates a database with a unique name on the Shared cluster (one per
// test process, started on first use and stopped by Main) and drops it when
// the test ends. Tests that stop or crash the server (fault tests) take a
// private cluster with Start, then Stop it ("fast" or "immediate", as
// pg_ctl -m) and Restart it on the same data directory and port.
//
// The server binaries (initdb, postgres) come from $ROCKLAKE_PG_BINDIR, else
// the newest /usr/lib/postgresql/*/bin, else `pg_config --bindir`, else PATH.
// Without them the tests skip, unless ROCKLAKE_REQUIRE_POSTGRES=1 (as in CI),
// which makes that a failure. With ROCKLAKE_TEST_POSTGRES set to a
// postgres:// URL of a role that may CREATE DATABASE, Shared (and so URL)
// uses that server and starts nothing; Start always starts its own.
//
// A cluster is initialised with initdb (superuser "rocklake", a random
// password, scram-sha-256, UTF8, locale C, --no-sync) in a directory under
// os.TempDir(), and its postmaster runs as a child of the test process,
// listening on 127.0.0.1 only, with fsync and full_page_writes off for speed
// but synchronous_commit on, so an acknowledged commit survives an immediate
// (crash-like) stop. The server gets SIGQUIT if the thread that started it
// dies, so a killed test process does not leave it running. Its log is
// postgres.log next to the data directory, and a failed start reports the
// log's tail. Run as root, initdb and postgres run as the OS user postgres,
// since they refuse to run as root.
//
// The password appears only inside the URLs handed to tests; pgtest never
// logs it.
//
// Programs (benchmarks) that want a server of their own, with no testing.TB
// to fail or clean up through, call Launch, then CreateDatabase, and Close
// when done:
//
//	c, err := pgtest.Launch()
//	…
//	defer c.Close()
//	url, err := c.CreateDatabase("bench")
//
// Launch starts a private cluster like Start (same binaries, same
// settings, so fsync is off) and ignores ROCKLAKE_TEST_POSTGRES;
// LaunchDurable starts one with fsync and full_page_writes on.
package pgtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

const (
	superuser    = "rocklake"
	readyTimeout = 30 * time.Second // for the server to accept connections
	stopTimeout  = 30 * time.Second // for the postmaster to exit, then SIGKILL
	rebindWait   = 10 * time.Second // for Restart, while the port is busy
	startTries   = 5                // fresh ports to try when one is taken
	dirPrefix    = "rocklake-pg-"
	ownerFile    = "owner.pid" // the test process's pid, for sweeping stale dirs
)

// Cluster is a running PostgreSQL server the test process started (or an
// external one, from ROCKLAKE_TEST_POSTGRES).
type Cluster struct {
	external *url.URL // the ROCKLAKE_TEST_POSTGRES server; nil for our own

	bin      string              // directory of initdb and postgres
	cred     *syscall.Credential // the postgres OS user when run as root
	dir      string              // holds data/, sock/, postgres.log; removed for good at the end
	data     string
	sock     string
	logPath  string
	password string
	port     int
	durable  bool // fsync and full_page_writes on (LaunchDurable)

	mu   sync.Mutex
	srv  *server // the running postmaster, nil while stopped
	gone bool    // stopped for good and removed
}

// server is one run of the postmaster.
type server struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has been waited for
	err  error         // of Wait, valid once done is closed
}

// Start starts a private cluster for this test, stopped and removed at
// tb.Cleanup. It is for tests that stop or restart the server; others use
// URL or Shared.
func Start(tb testing.TB) *Cluster {
	tb.Helper()
	env, err := environment()
	if err != nil {
		need(tb, err)
	}
	c, err := newCluster(env)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := c.shutdown(); err != nil {
			tb.Error(err)
		}
	})
	return c
}

// Launch starts a private cluster for a program rather than a test; the
// caller stops it with Close. The binaries and settings are Start's.
func Launch() (*Cluster, error) {
	env, err := environment()
	if err != nil {
		return nil, err
	}
	return newCluster(env)
}

// LaunchDurable is Launch with fsync and full_page_writes on, as a
// production server runs: for benchmarks that measure commits as users
// would see them (every commit waits for its WAL flush).
func LaunchDurable() (*Cluster, error) {
	env, err := environment()
	if err != nil {
		return nil, err
	}
	env.durable = true
	return newCluster(env)
}

// Close stops a cluster of Launch (or Start) for good, immediately, and
// removes its directory with the data. Closing it again does nothing.
func (c *Cluster) Close() error {
	if c.external != nil {
		return errors.New("pgtest: Close: this cluster is the external server of ROCKLAKE_TEST_POSTGRES, not ours to stop")
	}
	return c.shutdown()
}

// CreateDatabase creates a database named name and returns its
// postgres:// URL (with the password). Unlike NewDatabase, nothing drops
// it: it goes with the cluster.
func (c *Cluster) CreateDatabase(name string) (string, error) {
	if _, err := c.admin("CREATE DATABASE " + pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("pgtest: create database %s: %w", name, err)
	}
	return c.databaseURL(name), nil
}

var shared struct {
	mu  sync.Mutex
	c   *Cluster
	err error
}

// Shared returns the test process's one shared cluster, starting it on first
// use; Main stops it. With ROCKLAKE_TEST_POSTGRES set it is that server and
// nothing is started. Tests must not stop it.
func Shared(tb testing.TB) *Cluster {
	tb.Helper()
	shared.mu.Lock()
	if shared.c == nil && shared.err == nil {
		if raw := os.Getenv("ROCKLAKE_TEST_POSTGRES"); raw != "" {
			shared.c, shared.err = externalCluster(raw)
		} else if env, err := environment(); err != nil {
			shared.err = err
		} else {
			shared.c, shared.err = newCluster(env)
		}
	}
	c, err := shared.c, shared.err
	shared.mu.Unlock()
	if err != nil {
		need(tb, err)
	}
	return c
}

// URL creates a new empty database on the Shared cluster, dropped at
// tb.Cleanup, and returns its postgres:// URL.
func URL(tb testing.TB) string {
	tb.Helper()
	return Shared(tb).NewDatabase(tb)
}

// Main is for TestMain: it runs the tests, then stops the Shared cluster
// (if one was started) and removes its directory, and returns the exit code:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
// A package that uses Shared without it leaves the server to die with the
// test process (SIGQUIT) and its directory to the next run's sweep of stale
// ones.
func Main(m *testing.M) int {
	code := m.Run()
	shared.mu.Lock()
	c := shared.c
	shared.c, shared.err = nil, errors.New("pgtest: Shared called after Main finished")
	shared.mu.Unlock()
	if c != nil && c.external == nil {
		if err := c.shutdown(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// NewDatabase creates a database with a unique name and returns its
// postgres:// URL (with the password). The database is dropped (WITH
// (FORCE)) at tb.Cleanup; if the server is down by then, that is skipped.
func (c *Cluster) NewDatabase(tb testing.TB) string {
	tb.Helper()
	name := databaseName(tb.Name())
	u, err := c.CreateDatabase(name)
	if err != nil {
		tb.Fatal(err)
	}
	ident := pgx.Identifier{name}.Sanitize()
	tb.Cleanup(func() {
		if c.external == nil {
			c.mu.Lock()
			down := c.srv == nil
			c.mu.Unlock()
			if down {
				return
			}
		}
		if connected, err := c.admin("DROP DATABASE IF EXISTS " + ident + " WITH (FORCE)"); err != nil && connected {
			tb.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	return u
}

// AdminURL is the URL of the postgres database as the superuser (for an
// external server: ROCKLAKE_TEST_POSTGRES as given).
func (c *Cluster) AdminURL() string {
	if c.external != nil {
		return c.external.String()
	}
	return c.databaseURL("postgres")
}

// Port is the TCP port the server listens on (at 127.0.0.1 for our own).
func (c *Cluster) Port() int {
	if c.external != nil {
		p, err := strconv.Atoi(c.external.Port())
		if err != nil {
			return 5432
		}
		return p
	}
	return c.port
}

// Stop stops the server and waits until its postmaster has exited. mode is
// "fast" (SIGINT: disconnect clients, checkpoint, exit) or "immediate"
// (SIGQUIT: exit at once, like a crash; the next start runs recovery).
func (c *Cluster) Stop(tb testing.TB, mode string) {
	tb.Helper()
	if c.external != nil {
		tb.Fatal("pgtest: Stop: this cluster is the external server of ROCKLAKE_TEST_POSTGRES; a test that stops the server takes its own with Start")
	}
	var sig syscall.Signal
	switch mode {
	case "fast":
		sig = syscall.SIGINT
	case "immediate":
		sig = syscall.SIGQUIT
	default:
		tb.Fatalf("pgtest: Stop: mode %q is neither \"fast\" nor \"immediate\"", mode)
	}
	c.mu.Lock()
	srv := c.srv
	c.srv = nil
	c.mu.Unlock()
	if srv == nil {
		tb.Fatal("pgtest: Stop: the server is not running")
	}
	if err := srv.stop(sig); err != nil {
		tb.Fatal(err)
	}
}

// Restart starts the stopped server again on the same data directory and
// port, and waits until it accepts connections (after recovery, if it was
// stopped "immediate").
func (c *Cluster) Restart(tb testing.TB) {
	tb.Helper()
	if c.external != nil {
		tb.Fatal("pgtest: Restart: this cluster is the external server of ROCKLAKE_TEST_POSTGRES")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.gone:
		tb.Fatal("pgtest: Restart: the cluster has been removed")
	case c.srv != nil:
		tb.Fatal("pgtest: Restart: the server is running; Stop it first")
	}
	deadline := time.Now().Add(rebindWait)
	for {
		srv, err := c.launch()
		if err == nil {
			c.srv = srv
			return
		}
		if !errors.Is(err, errBind) || time.Now().After(deadline) {
			tb.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// unavailableError says PostgreSQL cannot be run here at all: a test skips
// on it unless ROCKLAKE_REQUIRE_POSTGRES=1.
type unavailableError struct{ msg string }

func (e *unavailableError) Error() string { return e.msg }

func need(tb testing.TB, err error) {
	tb.Helper()
	var u *unavailableError
	if errors.As(err, &u) && os.Getenv("ROCKLAKE_REQUIRE_POSTGRES") != "1" {
		tb.Skip(err)
	}
	tb.Fatal(err)
}

// env is what every cluster of the process shares: where the binaries are
// and whom they run as.
type env struct {
	bin     string
	cred    *syscall.Credential
	durable bool
}

var envOnce struct {
	sync.Once
	env env
	err error
}

func environment() (env, error) {
	envOnce.Do(func() {
		envOnce.env, envOnce.err = findEnvironment()
	})
	return envOnce.env, envOnce.err
}

func findEnvironment() (env, error) {
	bin, err := findBinDir()
	if err != nil {
		return env{}, err
	}
	e := env{bin: bin}
	if os.Geteuid() != 0 {
		return e, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return env{}, &unavailableError{fmt.Sprintf("pgtest: running as root, where initdb and postgres refuse to run, and there is no OS user postgres to run them as (%v); create it, or set ROCKLAKE_TEST_POSTGRES", err)}
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return env{}, fmt.Errorf("pgtest: OS user postgres has uid %q, gid %q", u.Uid, u.Gid)
	}
	e.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	if err := checkTraversable(os.TempDir(), e.cred); err != nil {
		return env{}, err
	}
	return e, nil
}

// findBinDir finds the directory of initdb and postgres.
func findBinDir() (string, error) {
	has := func(dir string) bool {
		for _, name := range []string{"initdb", "postgres"} {
			fi, err := os.Stat(filepath.Join(dir, name))
			if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
				return false
			}
		}
		return true
	}
	if dir := os.Getenv("ROCKLAKE_PG_BINDIR"); dir != "" {
		if has(dir) {
			return dir, nil
		}
		return "", fmt.Errorf("pgtest: ROCKLAKE_PG_BINDIR=%s does not hold initdb and postgres", dir)
	}
	initdbs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	var dirs []string
	for _, p := range initdbs {
		if d := filepath.Dir(p); has(d) {
			dirs = append(dirs, d)
		}
	}
	sort.Slice(dirs, func(i, j int) bool { // newest version first
		return versionLess(versionOf(dirs[j]), versionOf(dirs[i]))
	})
	if len(dirs) > 0 {
		return dirs[0], nil
	}
	if pgConfig, err := exec.LookPath("pg_config"); err == nil {
		if out, err := exec.Command(pgConfig, "--bindir").Output(); err == nil {
			if d := strings.TrimSpace(string(out)); has(d) {
				return d, nil
			}
		}
	}
	if initdb, err := exec.LookPath("initdb"); err == nil {
		if d := filepath.Dir(initdb); has(d) {
			return d, nil
		}
	}
	return "", &unavailableError{"pgtest: PostgreSQL server binaries (initdb, postgres) were not found " +
		"in $ROCKLAKE_PG_BINDIR, /usr/lib/postgresql/*/bin, `pg_config --bindir` or PATH; " +
		"install them (Debian/Ubuntu: apt-get install postgresql) or set ROCKLAKE_PG_BINDIR, " +
		"or set ROCKLAKE_TEST_POSTGRES to a postgres:// URL of a role that may CREATE DATABASE " +
		"(with ROCKLAKE_REQUIRE_POSTGRES=1 this is a failure, not a skip)"}
}

// versionOf reads "15" or "9.6" from /usr/lib/postgresql/<version>/bin.
func versionOf(bin string) []int {
	var v []int
	for _, f := range strings.Split(filepath.Base(filepath.Dir(bin)), ".") {
		n, err := strconv.Atoi(f)
		if err != nil {
			n = -1
		}
		v = append(v, n)
	}
	return v
}

func versionLess(a, b []int) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return len(a) < len(b)
}

// checkTraversable checks that the user of cred can reach into dir: every
// directory from / down to it must let that user search it.
func checkTraversable(dir string, cred *syscall.Credential) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	for d := dir; ; d = filepath.Dir(d) {
		var st syscall.Stat_t
		if err := syscall.Stat(d, &st); err != nil {
			return fmt.Errorf("pgtest: %v", err)
		}
		ok := st.Mode&0o001 != 0 ||
			st.Uid == cred.Uid && st.Mode&0o100 != 0 ||
			st.Gid == cred.Gid && st.Mode&0o010 != 0
		if !ok {
			return fmt.Errorf("pgtest: the OS user postgres, which runs the server (we run as root), cannot enter %s (mode %o) on the way to the temp dir %s; set TMPDIR to a directory it can reach, such as /tmp", d, st.Mode&0o7777, dir)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// newCluster initialises a data directory and starts its server.
func newCluster(e env) (_ *Cluster, err error) {
	sweepStaleDirs()
	dir, err := os.MkdirTemp("", dirPrefix)
	if err != nil {
		return nil, fmt.Errorf("pgtest: %v", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	c := &Cluster{
		bin:     e.bin,
		cred:    e.cred,
		dir:     dir,
		data:    filepath.Join(dir, "data"),
		sock:    filepath.Join(dir, "sock"),
		logPath: filepath.Join(dir, "postgres.log"),
		durable: e.durable,
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return nil, fmt.Errorf("pgtest: %v", err)
	}
	if err := os.Mkdir(c.sock, 0o700); err != nil {
		return nil, fmt.Errorf("pgtest: %v", err)
	}
	var pw [16]byte
	if _, err := rand.Read(pw[:]); err != nil {
		return nil, fmt.Errorf("pgtest: %v", err)
	}
	c.password = hex.EncodeToString(pw[:])
	pwfile := filepath.Join(dir, "pwfile")
	if err := os.WriteFile(pwfile, []byte(c.password+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("pgtest: %v", err)
	}
	if c.cred != nil {
		for _, p := range []string{dir, c.sock, pwfile} {
			if err := os.Chown(p, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
				return nil, fmt.Errorf("pgtest: %v", err)
			}
		}
	}

	initdb := exec.Command(filepath.Join(c.bin, "initdb"),
		"-D", c.data, "-U", superuser, "--pwfile="+pwfile, "-A", "scram-sha-256",
		"-E", "UTF8", "--locale=C", "--no-sync")
	initdb.Dir = dir
	initdb.Env = childEnv()
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	out, err := initdb.CombinedOutput()
	os.Remove(pwfile)
	if err != nil {
		return nil, fmt.Errorf("pgtest: initdb: %v\n%s", err, tail(out, 20))
	}

	for try := 1; ; try++ {
		if c.port, err = freePort(); err != nil {
			return nil, err
		}
		srv, err := c.launch()
		if err == nil {
			c.srv = srv
			return c, nil
		}
		if !errors.Is(err, errBind) || try == startTries {
			return nil, err
		}
	}
}

// shutdown stops the server for good (immediate: its data is thrown away)
// and removes the cluster's directory.
func (c *Cluster) shutdown() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gone {
		return nil
	}
	c.gone = true
	var err error
	if c.srv != nil {
		err = c.srv.stop(syscall.SIGQUIT)
		c.srv = nil
	}
	if rmErr := os.RemoveAll(c.dir); rmErr != nil && err == nil {
		err = fmt.Errorf("pgtest: %v", rmErr)
	}
	return err
}

var errBind = errors.New("the port is taken")

// launch starts the postmaster on c.port and waits until it accepts
// connections. A start that failed because the port was taken wraps errBind.
func (c *Cluster) launch() (*server, error) {
	logf, err := os.OpenFile(c.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("pgtest: %v", err)
	}
	defer logf.Close()
	logStart, _ := logf.Seek(0, 2)
	flush := "off"
	if c.durable {
		flush = "on"
	}
	cmd := exec.Command(filepath.Join(c.bin, "postgres"),
		"-D", c.data, "-p", strconv.Itoa(c.port), "-k", c.sock,
		"-c", "listen_addresses=127.0.0.1",
		"-c", "fsync="+flush,
		"-c", "full_page_writes="+flush,
		"-c", "max_connections=600",
		"-c", "shared_buffers=64MB")
	cmd.Dir = c.dir
	cmd.Env = childEnv()
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: c.cred,
		Setpgid:    true,
		Pdeathsig:  syscall.SIGQUIT,
	}
	if err := onLockedThread(cmd.Start); err != nil {
		return nil, fmt.Errorf("pgtest: start postgres: %v", err)
	}
	srv := &server{cmd: cmd, done: make(chan struct{})}
	go func() {
		srv.err = cmd.Wait()
		close(srv.done)
	}()

	failed := func(what string) error {
		log := c.logSince(logStart)
		err := fmt.Errorf("pgtest: postgres on port %d %s; the end of %s:\n%s", c.port, what, c.logPath, tail(log, 30))
		if bytes.Contains(log, []byte("could not bind")) || bytes.Contains(log, []byte("could not create any TCP/IP sockets")) {
			err = fmt.Errorf("%w: %w", errBind, err)
		}
		return err
	}
	deadline := time.Now().Add(readyTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, c.AdminURL())
		if err == nil {
			conn.Close(ctx)
			cancel()
			return srv, nil
		}
		cancel()
		select {
		case <-srv.done:
			return nil, failed(fmt.Sprintf("exited (%v) before accepting connections", srv.err))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stopErr := srv.stop(syscall.SIGQUIT)
			return nil, errors.Join(failed(fmt.Sprintf("did not accept connections within %v (last: %v)", readyTimeout, err)), stopErr)
		}
	}
}

// stop signals the postmaster and waits for it to exit; if it does not
// within stopTimeout, its process group is killed.
func (s *server) stop(sig syscall.Signal) error {
	_ = s.cmd.Process.Signal(sig)
	timer := time.NewTimer(stopTimeout)
	defer timer.Stop()
	select {
	case <-s.done:
		return nil
	case <-timer.C:
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
		return fmt.Errorf("pgtest: postgres (pid %d) did not exit within %v of %v; killed", s.cmd.Process.Pid, stopTimeout, sig)
	}
}

// launcher runs cmd.Start on one goroutine locked to its OS thread for the
// life of the process: Pdeathsig fires when the thread that started the
// child exits (go.dev/issue/27505), and that thread never does.
var launcher struct {
	once sync.Once
	jobs chan func()
}

func onLockedThread(f func() error) error {
	launcher.once.Do(func() {
		launcher.jobs = make(chan func())
		go func() {
			runtime.LockOSThread()
			for job := range launcher.jobs {
				job()
			}
		}()
	})
	errc := make(chan error, 1)
	launcher.jobs <- func() { errc <- f() }
	return <-errc
}

// freePort asks the kernel for a free port on 127.0.0.1.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgtest: find a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// childEnv is the environment of initdb and postgres: ours without PG*
// variables (PGDATA, PGPORT… would override the flags), in locale C.
func childEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PG") || strings.HasPrefix(kv, "LC_") || strings.HasPrefix(kv, "LANG=") {
			continue
		}
		out = append(out, kv)
	}
	return append(out, "LC_ALL=C")
}

func (c *Cluster) logSince(offset int64) []byte {
	b, err := os.ReadFile(c.logPath)
	if err != nil {
		return []byte(err.Error())
	}
	if offset >= 0 && offset <= int64(len(b)) {
		b = b[offset:]
	}
	return b
}

// tail is the last n lines of b.
func tail(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// sweepStaleDirs removes the cluster directories of test processes that
// died without cleaning up (killed, or timed out): their servers got
// SIGQUIT then, but the directories stayed. A directory whose owner.pid
// names a live process, or that has none yet, is left alone.
func sweepStaleDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, ownerFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			os.RemoveAll(d)
		}
	}
}

// admin runs one statement on the admin database; connected says whether
// the server answered at all (errors are ignored where it did not).
func (c *Cluster) admin(sql string) (connected bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	connCtx, connCancel := context.WithTimeout(ctx, 10*time.Second)
	conn, err := pgx.Connect(connCtx, c.AdminURL())
	connCancel()
	if err != nil {
		return false, err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return true, err
}

func (c *Cluster) databaseURL(db string) string {
	if c.external != nil {
		u := *c.external
		u.Path, u.RawPath = "/"+db, ""
		return u.String()
	}
	u := url.URL{
		Scheme:   "postgres",
		User:     url.UserPassword(superuser, c.password),
		Host:     net.JoinHostPort("127.0.0.1", strconv.Itoa(c.port)),
		Path:     "/" + db,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

// databaseName is a fresh database name that shows which test made it:
// rl_<test name>_<random>, at most 63 bytes (PostgreSQL's limit).
func databaseName(test string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(test) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= 40 {
			break
		}
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	return "rl_" + b.String() + "_" + hex.EncodeToString(rnd[:])
}

// externalCluster is the server of ROCKLAKE_TEST_POSTGRES, checked by one
// connection.
func externalCluster(raw string) (*Cluster, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return nil, errors.New("pgtest: ROCKLAKE_TEST_POSTGRES is not a postgres:// URL")
	}
	c := &Cluster{external: u}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, raw)
	if err != nil {
		return nil, fmt.Errorf("pgtest: connect to ROCKLAKE_TEST_POSTGRES (%s): %v", u.Redacted(), err)
	}
	conn.Close(ctx)
	return c, nil
}
