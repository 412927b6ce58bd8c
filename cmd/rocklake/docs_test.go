package main

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rocklake/rocklake/internal/pgtest"
)

// A docBlock is a fenced code block of a page of the manual or the README.
//
// Every fenced block names its kind in its info string. Output and
// grammars (text, json) are shown, not run. Examples say how the test runs
// them:
//
//	```sh run [state=S] [postgres] [s3] [continue]
//	```sh lines [state=S]
//	```sh norun: why the tests cannot run it
//	```go compile                    (TestGoAPISynopsisCompiles, module root)
//
// "run" runs the block's commands in order, as a reader following along
// would, in a directory of its own holding the example data
// (writeExampleData) and a catalog in state S (none, initialized, created,
// loaded; default none); "continue" goes on in the previous block's
// directory instead. Each command must succeed, unless its comment starts
// with "fails". "cd" and "export" carry over to the following commands and
// continued blocks; "rocklake serve" starts a server in the background
// (on free ports, which replace 5433 and 8181 in the block's commands), and
// the end of the session stops it, wanting a clean exit. "postgres" puts
// the session's PG* variables on a new database of a throwaway server,
// "s3" its AWS variables on a throwaway S3-compatible server holding the
// example events under s3://lake/events/.
//
// "lines" runs each line on its own, in a fresh directory in the state its
// command's --help examples start from (exampleStates, or S), with the
// parts in [brackets] and the comment left out: a synopsis.
type docBlock struct {
	file   string
	line   int // of the opening fence
	lang   string
	mode   string // run, lines, norun, compile; "" for output
	reason string // of norun
	state  exampleState
	stated bool // state= given
	attrs  map[string]bool
	body   []string
}

func (b docBlock) String() string { return fmt.Sprintf("%s:%d", b.file, b.line) }

var docStates = map[string]exampleState{"none": noCatalog, "initialized": initialized, "created": created, "loaded": loaded}

// outputLangs are the kinds of block that show output or a grammar.
var outputLangs = map[string]bool{"text": true, "json": true}

// docBlocks reads the fenced blocks of a page, refusing any it cannot
// place.
func docBlocks(t *testing.T, root, rel string) []docBlock {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	var blocks []docBlock
	var cur *docBlock
	prevBlank := true
	for i, l := range strings.Split(string(raw), "\n") {
		if cur != nil {
			if strings.TrimSpace(l) == "```" {
				blocks = append(blocks, *cur)
				cur = nil
				prevBlank = false
				continue
			}
			cur.body = append(cur.body, l)
			continue
		}
		if info, ok := strings.CutPrefix(strings.TrimLeft(l, " "), "```"); ok {
			b := docBlock{file: rel, line: i + 1, attrs: map[string]bool{}}
			info = strings.TrimSpace(info)
			if info == "" {
				t.Errorf("%s:%d: a fenced block without a kind: say sh run, sh lines, sh norun: why, go compile, text or json", rel, i+1)
			}
			b.lang, info, _ = strings.Cut(info, " ")
			switch {
			case outputLangs[b.lang]:
			case strings.HasPrefix(info, "norun:"):
				b.mode, b.reason = "norun", strings.TrimSpace(strings.TrimPrefix(info, "norun:"))
				if b.reason == "" {
					t.Errorf("%s:%d: norun says no reason", rel, i+1)
				}
			default:
				words := strings.Fields(info)
				if len(words) == 0 {
					t.Errorf("%s:%d: a %s block that says neither run, lines, compile nor norun: why", rel, i+1, b.lang)
					break
				}
				b.mode = words[0]
				for _, w := range words[1:] {
					if s, ok := strings.CutPrefix(w, "state="); ok {
						st, ok := docStates[s]
						if !ok {
							t.Errorf("%s:%d: unknown state %q", rel, i+1, s)
						}
						b.state, b.stated = st, true
						continue
					}
					b.attrs[w] = true
				}
				switch {
				case b.lang == "sh" && (b.mode == "run" || b.mode == "lines"):
				case b.lang == "go" && b.mode == "compile":
				default:
					t.Errorf("%s:%d: %s %s: a block the tests cannot place", rel, i+1, b.lang, b.mode)
				}
			}
			cur = &b
			continue
		}
		// An indented code block would escape the marking: refused, but
		// for the README's first lines (checked on their own).
		if prevBlank && strings.HasPrefix(l, "    ") && strings.TrimSpace(l) != "" && !(rel == "README.md" && i < 4) &&
			!strings.HasPrefix(strings.TrimSpace(l), "- ") {
			t.Errorf("%s:%d: an indented code block: fence it and say how the tests run it", rel, i+1)
		}
		prevBlank = strings.TrimSpace(l) == ""
	}
	if cur != nil {
		t.Errorf("%s:%d: a fenced block that does not end", rel, cur.line)
	}
	return blocks
}

// docPages are the README and the manual's pages, the CLI reference left
// out: its examples are the commands' own, which TestHelpExamplesRun runs.
func docPages(t *testing.T, root string) []string {
	t.Helper()
	pages := []string{"README.md"}
	more, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range more {
		pages = append(pages, filepath.Join("docs", filepath.Base(p)))
	}
	if len(pages) < 10 {
		t.Fatalf("found %d pages under %s/docs; the manual is missing", len(pages), root)
	}
	return pages
}

// TestDocExamplesRun runs every example of the README and the manual as
// its block says (see docBlock), and wants each command to do what the page
// says: succeed, or fail where its comment says so.
func TestDocExamplesRun(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh to run the examples with")
	}
	root := filepath.Join("..", "..")
	h := newDocHarness(t)

	// The README's first lines are what a newcomer runs first; they must
	// stay as they are, and the demo must run.
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	first := strings.Split(string(readme), "\n")
	if len(first) < 4 || !strings.HasPrefix(first[2], "    go run ./cmd/rocklake demo ") || !strings.HasPrefix(first[3], "    go test ./... ") {
		t.Fatalf("README.md must open with the demo and the test command (lines 3 and 4), not:\n%s", strings.Join(first[:min(4, len(first))], "\n"))
	}
	t.Run("README.md:3", func(t *testing.T) {
		s := h.newSession(t, t, noCatalog)
		defer s.close()
		// go run ./cmd/rocklake is this binary; the test command is what runs this.
		s.run(t, "README.md", 3, "rocklake demo", false)
	})

	counts := map[string]int{}
	owner := t
	for _, page := range docPages(t, root) {
		var sess *docSession
		for _, b := range docBlocks(t, root, page) {
			kind := b.mode
			if kind == "" {
				kind = "output"
			}
			counts[kind+" blocks"]++
			switch b.mode {
			case "norun":
				t.Logf("%s: not run: %s", b, b.reason)
				continue
			case "compile", "":
				continue
			}
			t.Run(b.String(), func(t *testing.T) {
				switch b.mode {
				case "lines":
					counts["lines run"] += h.lines(t, b)
				case "run":
					if !b.attrs["continue"] || sess == nil {
						if sess != nil {
							sess.close()
						}
						sess = h.sessionFor(owner, t, b)
					}
					counts["commands run"] += sess.block(t, b)
				}
			})
		}
		if sess != nil {
			sess.close()
		}
	}
	t.Logf("examples: %v", counts)
	if counts["lines run"] < 20 || counts["commands run"] < 100 {
		t.Errorf("ran %d synopsis lines and %d commands of the examples; the pages' blocks were not found whole", counts["lines run"], counts["commands run"])
	}
}

// docHarness holds what every example shares: the rocklake on PATH (this
// test binary), the example data, and the throwaway S3 server.
type docHarness struct {
	bin, data string
	s3env     []string
	s3tried   bool
}

func newDocHarness(t *testing.T) *docHarness {
	h := &docHarness{bin: t.TempDir(), data: t.TempDir()}
	script := fmt.Sprintf("#!/bin/sh\n%s=1 exec %q \"$@\"\n", asCLI, os.Args[0])
	if err := os.WriteFile(filepath.Join(h.bin, "rocklake"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	writeExampleData(t, h.data)
	// What the synopsis names beyond the --help examples' data: more/
	// files to add.
	b, err := os.ReadFile(filepath.Join(h.data, "data", "events", "2024-01-02.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(h.data, "more"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.data, "more", "2024-01-03.parquet"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return h
}

// env is the environment every example runs in.
func (h *docHarness) env(t *testing.T) []string {
	return append(os.Environ(), "PATH="+h.bin+string(os.PathListSeparator)+os.Getenv("PATH"), "ROCKLAKE_CATALOG=",
		"ROCKLAKE_CACHE_DIR="+t.TempDir())
}

// objects gives the environment of the throwaway S3-compatible server,
// started on first use and stopped when t, the whole test, ends; nil when
// there is none here.
func (h *docHarness) objects(t *testing.T) []string {
	if !h.s3tried {
		h.s3tried = true
		h.s3env = launchExampleObjects(t, h.data)
	}
	return h.s3env
}

var (
	optionalPart = regexp.MustCompile(`\s*\[[^\]]*\]`)
	lineComment  = regexp.MustCompile(`\s+#\s.*$`)
)

// lines runs a synopsis block, each line on its own.
func (h *docHarness) lines(t *testing.T, b docBlock) int {
	ran := 0
	for i, line := range b.body {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cmdline := optionalPart.ReplaceAllString(lineComment.ReplaceAllString(line, ""), "")
		state := b.state
		if !b.stated {
			// The state of the longest command path the line starts with.
			state = loaded
			best := 0
			for path, st := range exampleStates {
				if (cmdline == path || strings.HasPrefix(cmdline, path+" ")) && len(path) > best {
					state, best = st, len(path)
				}
			}
		}
		s := h.newSession(t, t, state)
		ran += s.runLine(t, b, b.line+1+i, cmdline)
		s.close()
	}
	return ran
}

// docSession is a reader's shell: a directory, an environment, and the
// server started in it. A session may outlive the subtest of the block that
// started it (a continued block goes on in it): what must last as long as
// the session belongs to its owner, the page's test.
type docSession struct {
	owner  *testing.T
	dir    string
	env    []string
	server *exec.Cmd
	served chan string
	pg, hp int // the server's ports, in place of 5433 and 8181
	out    *bytes.Buffer
}

// newSession prepares a directory of owner's in state, failing t when it
// cannot.
func (h *docHarness) newSession(owner, t *testing.T, state exampleState) *docSession {
	t.Helper()
	dir := owner.TempDir()
	prepareExampleDir(t, dir, h.data, state)
	return &docSession{owner: owner, dir: dir, env: h.env(owner)}
}

// sessionFor starts the session a block asks for; t is the block's test,
// which is skipped when the server the block needs is not here.
func (h *docHarness) sessionFor(owner, t *testing.T, b docBlock) *docSession {
	t.Helper()
	var extra []string
	if b.attrs["s3"] {
		env := h.objects(owner)
		if env == nil {
			t.Skip("no S3-compatible server here")
		}
		extra = append(extra, env...)
	}
	if b.attrs["postgres"] {
		pgtest.Shared(t) // skips t when no PostgreSQL server can be had
		u, err := url.Parse(pgtest.Shared(owner).NewDatabase(owner))
		if err != nil {
			t.Fatal(err)
		}
		pass, _ := u.User.Password()
		extra = append(extra, "PGHOST="+u.Hostname(), "PGPORT="+u.Port(), "PGUSER="+u.User.Username(),
			"PGPASSWORD="+pass, "PGDATABASE="+strings.TrimPrefix(u.Path, "/"), "PGSSLMODE=disable")
	}
	s := h.newSession(owner, t, b.state)
	s.env = append(s.env, extra...)
	return s
}

// block runs a run block's commands in the session.
func (s *docSession) block(t *testing.T, b docBlock) int {
	ran := 0
	for _, c := range joinCommands(b.body, b.line+1) {
		ran += s.runLine(t, b, c.line, c.text)
	}
	return ran
}

type docCommand struct {
	line int
	text string
}

// joinCommands joins the lines of one command: a line ending in a
// backslash, or one inside an open quote, goes on on the next.
func joinCommands(body []string, first int) []docCommand {
	var out []docCommand
	var cur []string
	start := 0
	for i, l := range body {
		if len(cur) == 0 {
			if strings.TrimSpace(l) == "" || strings.HasPrefix(strings.TrimSpace(l), "#") {
				continue
			}
			start = first + i
		}
		cur = append(cur, l)
		text := strings.Join(cur, "\n")
		if strings.HasSuffix(l, "\\") || openQuote(text) {
			continue
		}
		out = append(out, docCommand{line: start, text: strings.TrimSpace(text)})
		cur = nil
	}
	if len(cur) > 0 {
		out = append(out, docCommand{line: start, text: strings.TrimSpace(strings.Join(cur, "\n"))})
	}
	return out
}

// openQuote says whether a shell command leaves a quote open.
func openQuote(s string) bool {
	var q rune
	for i, r := range s {
		switch {
		case q == 0 && (r == '\'' || r == '"'):
			q = r
		case q == r && (r == '\'' || i == 0 || s[i-1] != '\\'):
			q = 0
		case q == 0 && r == '#' && (i == 0 || s[i-1] == ' '):
			// a comment: quotes in it open nothing
			if j := strings.IndexByte(s[i:], '\n'); j >= 0 {
				continue
			}
			return false
		}
	}
	return q != 0
}

var (
	expectFailure = regexp.MustCompile(`\s#\s+fails\b`)
	exportLine    = regexp.MustCompile(`^export\s+([A-Za-z_][A-Za-z0-9_]*)=(.*?)(\s+#\s.*)?$`)
	serveLine     = regexp.MustCompile(`^rocklake serve(\s+--\S+(\s+[^-#\s]\S*)?)*(\s+#\s.*)?$`)
	portWords     = regexp.MustCompile(`\b(5433|8181)\b`)
)

// runLine runs one command as the page gives it and says how many ran.
func (s *docSession) runLine(t *testing.T, b docBlock, line int, text string) int {
	t.Helper()
	where := fmt.Sprintf("%s:%d", b.file, line)
	if s.server != nil {
		text = portWords.ReplaceAllStringFunc(text, func(p string) string {
			if p == "5433" {
				return strconv.Itoa(s.pg)
			}
			return strconv.Itoa(s.hp)
		})
	}
	fields := strings.Fields(text)
	switch {
	case fields[0] == "cd" && len(fields) >= 2:
		dir := filepath.Join(s.dir, fields[1])
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			t.Fatalf("%s: %s: no such directory", where, text)
		}
		s.dir = dir
		return 1
	case exportLine.MatchString(text):
		m := exportLine.FindStringSubmatch(text)
		sh := exec.Command("sh", "-c", m[1]+"="+m[2]+"; printf %s \"$"+m[1]+"\"")
		sh.Dir, sh.Env = s.dir, s.env
		v, err := sh.Output()
		if err != nil {
			t.Fatalf("%s: %s: %v", where, text, err)
		}
		s.env = append(s.env, m[1]+"="+string(v))
		return 1
	case serveLine.MatchString(text):
		s.serve(t, where, lineComment.ReplaceAllString(text, ""))
		return 1
	case fields[0] == "psql" || fields[0] == "curl":
		if _, err := exec.LookPath(fields[0]); err != nil {
			t.Logf("%s: left out, no %s here: %s", where, fields[0], text)
			return 0
		}
	}
	s.run(t, b.file, line, text, expectFailure.MatchString(text))
	return 1
}

// run runs a command in the session's shell and checks its exit status.
func (s *docSession) run(t *testing.T, file string, line int, text string, fails bool) {
	t.Helper()
	sh := exec.Command("sh", "-c", text)
	sh.Dir, sh.Env = s.dir, s.env
	out, err := sh.CombinedOutput()
	switch {
	case err != nil && !fails:
		t.Errorf("%s:%d: failed: %s\n%v\n%s", file, line, text, err, out)
	case err == nil && fails:
		t.Errorf("%s:%d: succeeded, where the page says it fails: %s\n%s", file, line, text, out)
	}
}

// serve starts a server on free ports, waits until it serves, and leaves
// it running until the session closes.
func (s *docSession) serve(t *testing.T, where, cmdline string) {
	t.Helper()
	if s.server != nil {
		t.Fatalf("%s: a second server in one session", where)
	}
	s.pg, s.hp = docFreePort(t), docFreePort(t)
	cmdline += fmt.Sprintf(" --pg-listen 127.0.0.1:%d --http-listen 127.0.0.1:%d", s.pg, s.hp)
	sh := exec.Command("sh", "-c", "exec "+cmdline)
	sh.Dir, sh.Env = s.dir, s.env
	s.out = &bytes.Buffer{}
	sh.Stderr = s.out
	stdout, err := sh.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	s.server = sh
	lines := make(chan string, 64)
	s.served = lines
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	timeout := time.After(2 * time.Minute)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				sh.Wait()
				s.server = nil
				t.Fatalf("%s: %s ended before serving:\n%s", where, cmdline, s.out)
			}
			if strings.HasPrefix(l, "HTTP API on ") {
				return
			}
		case <-timeout:
			sh.Process.Kill()
			sh.Wait()
			s.server = nil
			t.Fatalf("%s: %s did not start serving in 2 minutes", where, cmdline)
		}
	}
}

// close stops the session's server with SIGTERM and wants a clean exit.
func (s *docSession) close() {
	if s.server == nil {
		return
	}
	sh := s.server
	s.server = nil
	if err := sh.Process.Signal(syscall.SIGTERM); err != nil {
		s.owner.Error(err)
	}
	for range s.served {
	}
	if err := sh.Wait(); err != nil {
		s.owner.Errorf("the server after SIGTERM: %v\n%s", err, s.out)
	}
}

func docFreePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
