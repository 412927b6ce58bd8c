// Package s3test gives tests a real S3-compatible server that the test
// process starts itself: the Versity S3 Gateway (versitygw, Apache-2.0)
// serving a temporary directory, on a free port of 127.0.0.1, stopped and
// removed when the test ends. No imitation of S3 stands in for it: the
// requests, signatures, ranges, conditional reads and errors are a real
// server's.
//
//	srv := s3test.Start(t)       // skips when versitygw is absent
//	srv.Bucket(t, "lake")        // a bucket is a directory under srv.Dir
//	srv.SetEnv(t)                // AWS_* variables pointing at it
//
// The binary is $ROCKLAKE_VERSITYGW, else versitygw on PATH, else
// $GOPATH/bin (~/go/bin). Install it with
//
//	go install github.com/versity/versitygw/cmd/versitygw@v1.8.0
//
// Without it tests skip and say so, unless ROCKLAKE_REQUIRE_S3=1 (as in CI)
// makes that a failure.
//
// Fault tests put Proxy between the client and the server: a reverse proxy
// on loopback that answers chosen requests with 503 SlowDown, a 500, a
// connection dropped before or in the middle of the response, or a delay,
// and passes the rest on unchanged (Host header included, so signatures
// still verify), or with their ETags left out (StripETags), as some
// S3-compatible servers answer. A store that is down is the server
// stopped (Stop, and Restart), or a proxy closed (Proxy.Close): nothing
// listens at its address any more.
//
// The server gets SIGKILL if the thread that started it dies, so a killed
// test process does not leave it running. The credentials are random per
// server and never logged.
package s3test

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Server is a running versitygw.
type Server struct {
	Endpoint  string // http://127.0.0.1:PORT
	Dir       string // the served directory: its subdirectories are buckets
	AccessKey string
	SecretKey string

	cmd  *exec.Cmd
	done chan struct{}
	log  string
	once sync.Once
}

// unavailable says the server cannot be run here: tests skip on it unless
// ROCKLAKE_REQUIRE_S3=1.
type unavailable struct{ msg string }

func (e *unavailable) Error() string { return e.msg }

// Binary finds versitygw.
func Binary() (string, error) {
	if p := os.Getenv("ROCKLAKE_VERSITYGW"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, nil
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		if home, err := os.UserHomeDir(); err == nil {
			gopath = filepath.Join(home, "go")
		}
	}
	p := filepath.Join(gopath, "bin", "versitygw")
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	return "", &unavailable{"s3test: versitygw not found on PATH, in $ROCKLAKE_VERSITYGW or in " + filepath.Dir(p) +
		" (go install github.com/versity/versitygw/cmd/versitygw@v1.8.0)"}
}

// Start starts a server for this test, stopped and removed at tb.Cleanup.
func Start(tb testing.TB) *Server {
	tb.Helper()
	s, err := Launch()
	if err != nil {
		var u *unavailable
		if errors.As(err, &u) && os.Getenv("ROCKLAKE_REQUIRE_S3") != "1" {
			tb.Skip(err)
		}
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Error(err)
		}
	})
	return s
}

// StartWithEnv is Start, then the buckets made and the environment set to
// reach the server (SetEnv), as a test of code that makes its own store
// from the environment begins.
func StartWithEnv(tb testing.TB, buckets ...string) *Server {
	tb.Helper()
	s := Start(tb)
	for _, b := range buckets {
		s.Bucket(tb, b)
	}
	s.SetEnv(tb)
	return s
}

// Launch starts a server for a program with no testing.TB; Close stops it.
func Launch() (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "rocklake-s3-")
	if err != nil {
		return nil, err
	}
	root := filepath.Join(dir, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	var lastErr error
	for range 5 {
		s := &Server{Dir: root, AccessKey: "rl" + randomHex(8), SecretKey: randomHex(20), log: filepath.Join(dir, "versitygw.log")}
		if lastErr = s.launch(bin); lastErr == nil {
			return s, nil
		}
		if !strings.Contains(lastErr.Error(), "address already in use") {
			break
		}
	}
	os.RemoveAll(dir)
	return nil, lastErr
}

func (s *Server) launch(bin string) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	return s.launchAt(bin, "127.0.0.1:"+strconv.Itoa(port))
}

func (s *Server) launchAt(bin, addr string) error {
	logf, err := os.OpenFile(s.log, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	s.cmd = exec.Command(bin, "--port", addr, "--quiet", "posix", s.Dir)
	// The credentials go in the environment, not argv: argv is visible to
	// every user in the process list.
	s.cmd.Env = append(childEnv(), "ROOT_ACCESS_KEY_ID="+s.AccessKey, "ROOT_SECRET_ACCESS_KEY="+s.SecretKey)
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := onLockedThread(s.cmd.Start); err != nil {
		return fmt.Errorf("s3test: start %s: %v", bin, err)
	}
	s.done = make(chan struct{})
	go func() { s.cmd.Wait(); close(s.done) }()
	s.Endpoint = "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(s.Endpoint + "/")
		if err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-s.done:
			b, _ := os.ReadFile(s.log)
			return fmt.Errorf("s3test: versitygw on %s exited before serving: %s", addr, strings.TrimSpace(string(b)))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.stop()
			return fmt.Errorf("s3test: versitygw on %s did not answer within 30s (last: %v)", addr, err)
		}
	}
}

func (s *Server) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
	}
}

// Stop stops the server and keeps its directory and address: connections
// to it are then refused, as by a store that is down. Restart starts it
// again.
func (s *Server) Stop() { s.stop() }

// Restart starts a stopped server again, on the same address, with the
// same directory and credentials.
func (s *Server) Restart(tb testing.TB) {
	tb.Helper()
	bin, err := Binary()
	if err != nil {
		tb.Fatal(err)
	}
	if err := s.launchAt(bin, strings.TrimPrefix(s.Endpoint, "http://")); err != nil {
		tb.Fatal(err)
	}
}

// Close stops the server and removes its directory.
func (s *Server) Close() error {
	var err error
	s.once.Do(func() {
		s.stop()
		err = os.RemoveAll(filepath.Dir(s.Dir))
	})
	return err
}

// Bucket makes a bucket (a directory the posix backend serves).
func (s *Server) Bucket(tb testing.TB, name string) {
	tb.Helper()
	if err := os.Mkdir(filepath.Join(s.Dir, name), 0o755); err != nil {
		tb.Fatal(err)
	}
}

// Env is the environment an S3 client needs to reach the server at
// endpoint (the server's own, or a Proxy's): the variables S3 tools read.
func (s *Server) Env(endpoint string) map[string]string {
	return map[string]string{
		"AWS_ACCESS_KEY_ID":       s.AccessKey,
		"AWS_SECRET_ACCESS_KEY":   s.SecretKey,
		"AWS_REGION":              "us-east-1",
		"AWS_ENDPOINT_URL":        endpoint,
		"AWS_S3_FORCE_PATH_STYLE": "true",
		// Nothing from the machine's own configuration may take part.
		"AWS_CONFIG_FILE":             filepath.Join(filepath.Dir(s.Dir), "no-aws-config"),
		"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(filepath.Dir(s.Dir), "no-aws-credentials"),
		"AWS_EC2_METADATA_DISABLED":   "true",
		"AWS_PROFILE":                 "",
		"AWS_SESSION_TOKEN":           "",
		"AWS_ENDPOINT_URL_S3":         "",
	}
}

// SetEnv sets Env(s.Endpoint) for the test (tb.Setenv: not in parallel
// tests).
func (s *Server) SetEnv(tb testing.TB) {
	for k, v := range s.Env(s.Endpoint) {
		tb.Setenv(k, v)
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("s3test: find a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// childEnv is ours without the variables versitygw would read instead of
// its flags.
func childEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "VGW_") || strings.HasPrefix(kv, "ROOT_") || strings.HasPrefix(kv, "AWS_") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// launcher starts servers from one goroutine locked to its OS thread for
// the life of the process: Pdeathsig fires when the thread that started
// the child exits (go.dev/issue/27505), and that thread never does.
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
