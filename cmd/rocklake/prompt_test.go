package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

// ptySession is the CLI run on a pseudo-terminal, as a user at a terminal
// runs it, with what it printed so far.
type ptySession struct {
	t    *testing.T
	tty  *os.File
	mu   sync.Mutex
	out  bytes.Buffer
	seen int // out up to here was matched already
	done chan error
}

func startPTY(t *testing.T, env []string, args ...string) *ptySession {
	t.Helper()
	cmd := cli(args...)
	cmd.Env = append(cmd.Env, env...)
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
	if err != nil {
		t.Fatal(err)
	}
	s := &ptySession{t: t, tty: tty, done: make(chan error, 1)}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := tty.Read(buf)
			s.mu.Lock()
			s.out.Write(buf[:n])
			s.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	go func() { s.done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		tty.Close()
	})
	return s
}

// expect waits for want in what the CLI printed after the last match.
func (s *ptySession) expect(want string) {
	s.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		s.mu.Lock()
		text := s.out.String()
		s.mu.Unlock()
		if i := strings.Index(text[s.seen:], want); i >= 0 {
			s.seen += i + len(want)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.t.Fatalf("the prompt never printed %q; it printed:\n%s", want, s.out.String()[s.seen:])
}

// exited waits for the CLI to end with status 0 after what.
func (s *ptySession) exited(what string) {
	s.t.Helper()
	select {
	case err := <-s.done:
		if err != nil {
			s.t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(30 * time.Second):
		s.t.Fatalf("%s did not end the prompt", what)
	}
}

func (s *ptySession) send(keys string) {
	s.t.Helper()
	if _, err := s.tty.Write([]byte(keys)); err != nil {
		s.t.Fatal(err)
	}
}

// `rocklake query` on a terminal is a prompt: statements over several
// lines, ended by ;, run as query runs them; numbers right-aligned;
// backslash and dot commands; Up recalls the last statement, which the
// history file keeps; Ctrl-C drops the statement being typed; an error
// leaves the prompt running; \q leaves it.
func TestPromptOnATerminal(t *testing.T) {
	dir := newCatalogDir(t)
	mustRun(t, "--catalog", dir, "query", "CREATE TABLE t (id BIGINT, name VARCHAR, amount DECIMAL(10,2))")
	mustRun(t, "--catalog", dir, "query", "INSERT INTO t SELECT i, 'n' || i, i * 1.5 FROM range(1000) r(i)")
	hist := filepath.Join(t.TempDir(), "history")
	s := startPTY(t, []string{"ROCKLAKE_HISTORY=" + hist}, "--catalog", dir, "query")
	s.expect("\\? for help")
	s.expect(promptFirst)

	// A statement over two lines; the number is right-aligned under its
	// header, the text left-aligned.
	s.send("SELECT 40 +\r")
	s.expect(promptMore)
	s.send("2 AS answer, 'x' AS s;\r")
	s.expect("answer  s")
	s.expect("    42  x")
	s.expect("1 row in")
	s.expect(promptFirst)

	// The catalog's tables, through the same engine as rocklake query.
	s.send("SELECT count(*) AS n, max(amount) AS top FROM t WHERE id >= 990;\r")
	s.expect(" n      top")
	s.expect("10  1498.50")
	s.expect(promptFirst)
	s.send("\\dt\r")
	s.expect("t")
	s.expect(promptFirst)
	s.send(".describe t\r")
	s.expect("DECIMAL(10,2)")
	s.expect(promptFirst)

	// Up, three times: the statement before \dt and .describe t.
	s.send("\x1b[A\x1b[A\x1b[A")
	s.expect("SELECT count(*) AS n, max(amount) AS top FROM t WHERE id >= 990;")
	s.send("\r")
	s.expect("10  1498.50")
	s.expect(promptFirst)

	// Ctrl-C drops the statement typed so far.
	s.send("SELECT nosuch_column FROM t\r")
	s.expect(promptMore)
	s.send("\x03")
	s.expect("^C")
	s.expect(promptFirst)
	s.send("SELECT 7 AS z;\r")
	s.expect("z\r\n7")
	s.expect(promptFirst)

	// Ctrl-C while a statement runs cancels it, and only it.
	s.send("SELECT count(*) FROM range(1000000000000) a, range(10) b;\r")
	time.Sleep(300 * time.Millisecond)
	s.send("\x03")
	s.expect("Error: interrupted")
	s.expect(promptFirst)
	s.send("SELECT 8 AS y;\r")
	s.expect("y\r\n8")
	s.expect(promptFirst)
	s.send("\\d t\r")
	s.expect("DECIMAL(10,2)")
	s.expect(promptFirst)

	// An error is printed and the prompt goes on.
	s.send("SELECT * FROM nosuch;\r")
	s.expect("Error:")
	s.expect("nosuch")
	s.expect(promptFirst)

	// Formats and timing.
	s.send("\\timing\r")
	s.expect("timing off")
	s.send("\\format csv\r")
	s.expect("rows as csv")
	s.send("SELECT 1 AS a, 2 AS b;\r")
	s.expect("a,b\r\n1,2")
	s.expect(promptFirst)
	s.mu.Lock()
	quiet := !strings.Contains(s.out.String()[s.seen-len(promptFirst)-20:], "row in")
	s.mu.Unlock()
	if !quiet {
		t.Error("with timing off, the answer's time line still shows")
	}
	s.send("\\format nope\r")
	s.expect("no format")

	s.send("\\q\r")
	s.exited("\\q")
	b, err := os.ReadFile(hist)
	if err != nil || !strings.Contains(string(b), "SELECT 7 AS z;") || !strings.Contains(string(b), "\\dt") {
		t.Fatalf("history file: %v %q", err, b)
	}

	// A new prompt starts with that history: Up recalls the newest entry.
	s = startPTY(t, []string{"ROCKLAKE_HISTORY=" + hist}, "--catalog", dir, "query")
	s.expect(promptFirst)
	s.send("\x1b[A")
	s.expect("\\q")
	s.send("\r")
	s.exited("\\q from the history")
}

// Without a terminal, query with no SQL still says what it needs.
func TestQueryWithoutSQLOffATerminal(t *testing.T) {
	dir := newCatalogDir(t)
	if _, err := run(t, "--catalog", dir, "query"); err == nil || !strings.Contains(err.Error(), "query needs SQL") {
		t.Fatalf("query with no SQL and no terminal: %v", err)
	}
}
