package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/rocklake/rocklake/internal/sqllex"
)

// The interactive prompt: `rocklake query` with no SQL on a terminal.
//
// Lines are read with golang.org/x/term's line editor (arrows, Home/End,
// Ctrl-A/E/K/U/W, history with Up/Down, kept in ~/.rocklake_history or
// $ROCKLAKE_HISTORY). A statement may span lines and ends with `;` outside
// strings and comments; each runs exactly as `rocklake query` runs it (its
// own engine, opened for reading or writing as the statement needs, so an
// idle prompt holds no catalog open). Backslash commands (psql's) and dot
// commands (DuckDB's) do the common things; rows show as a table with
// numbers right-aligned. The terminal is raw only while a line is read, so
// Ctrl-C while a statement runs cancels it as it does any query.

const (
	promptFirst = "rocklake> "
	promptMore  = "      ...> "
	// historyMax bounds the history file's entries.
	historyMax = 1000
)

// promptHelp lists the prompt's own commands.
const promptHelp = `End a statement with ; to run it (it may span lines). Commands:
  \dt  .tables              list the tables
  \d NAME  .describe NAME   a table's columns
  \format FMT  .mode FMT    rows as aligned (the default), table, csv, tsv, json or jsonl
  \timing  .timer on|off    the line of time and pruning after each answer (on by default)
  \snapshot N|latest        read snapshot N from now on (latest: the newest)
  \?  .help                 this help
  \q  .quit  Ctrl-D         leave
Ctrl-C clears the statement being typed, or cancels the one running.
`

// terminalInput says whether r is a terminal the prompt can drive.
func terminalInput(r io.Reader) (*os.File, bool) {
	f, ok := r.(*os.File)
	return f, ok && term.IsTerminal(int(f.Fd()))
}

// promptActive tells main's handler of the first interrupt that the
// prompt takes interrupts itself (a Ctrl-C ends a statement, not the
// process).
var promptActive atomic.Bool

// promptState is what the prompt's commands change.
type promptState struct {
	format string
	timing bool
	qs     querySettings
}

func runPrompt(cmd *cobra.Command, g *globals, in *os.File, qs querySettings) error {
	out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
	fd := int(in.Fd())
	keys := &interruptReader{r: in}
	hist := openHistory()
	newTerminal := func() *term.Terminal {
		t := term.NewTerminal(struct {
			io.Reader
			io.Writer
		}{keys, out}, promptFirst)
		t.History = hist
		return t
	}
	t := newTerminal()
	st := promptState{format: formatAligned, timing: true, qs: qs}
	if g.format != formatText {
		st.format = g.format
	}
	fmt.Fprintf(out, "rocklake %s, catalog %s. End statements with ;  \\? for help, \\q to leave.\n", version, g.catalog)
	// SIGINT is the prompt's while it runs: a Ctrl-C cancels the
	// statement running, never the process.
	interrupts := make(chan os.Signal, 1)
	signal.Notify(interrupts, os.Interrupt)
	defer signal.Stop(interrupts)
	promptActive.Store(true)
	defer promptActive.Store(false)
	var stmt strings.Builder
	for {
		if stmt.Len() == 0 {
			t.SetPrompt(promptFirst)
		} else {
			t.SetPrompt(promptMore)
		}
		if w, h, err := term.GetSize(fd); err == nil {
			t.SetSize(w, h)
		}
		state, err := term.MakeRaw(fd)
		if err != nil {
			return fmt.Errorf("the terminal: %w", err)
		}
		line, err := t.ReadLine()
		term.Restore(fd, state)
		switch {
		case err == io.EOF && keys.interrupted():
			// Ctrl-C: the statement typed so far is dropped, with the
			// line editor's half-read line (a new one starts clean).
			fmt.Fprintln(out, "^C")
			stmt.Reset()
			t = newTerminal()
			continue
		case err == io.EOF:
			fmt.Fprintln(out)
			return hist.warn(errOut)
		case err != nil:
			return fmt.Errorf("reading the terminal: %w", err)
		}
		if stmt.Len() == 0 {
			trimmed := strings.TrimSpace(line)
			if trimmed == "" {
				continue
			}
			if strings.HasPrefix(trimmed, `\`) || strings.HasPrefix(trimmed, ".") || trimmed == "exit" || trimmed == "quit" {
				quit, err := st.command(cmd, g, trimmed)
				if err != nil {
					fmt.Fprintf(errOut, "Error: %v\n", err)
				}
				if quit {
					return hist.warn(errOut)
				}
				continue
			}
		}
		stmt.WriteString(line)
		stmt.WriteByte('\n')
		if !statementEnded(stmt.String()) {
			continue
		}
		script := stmt.String()
		stmt.Reset()
		if err := st.run(cmd, g, script, interrupts); err != nil {
			fmt.Fprintf(errOut, "Error: %v\n", err)
		}
	}
}

// run runs a script's statements. A Ctrl-C (SIGINT: the terminal is not
// raw meanwhile) cancels them and only them: the prompt goes on.
func (st *promptState) run(cmd *cobra.Command, g *globals, script string, interrupts chan os.Signal) error {
	for len(interrupts) > 0 { // one that came while a line was read
		<-interrupts
	}
	// The command's own context ends at the first interrupt (main); the
	// prompt outlives it.
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(cmd.Context()))
	defer cancel(nil)
	ran := make(chan struct{})
	defer close(ran)
	go func() {
		select {
		case sig := <-interrupts:
			cancel(fmt.Errorf("%w (%s)", errInterrupted, sig))
		case <-ran:
		}
	}()
	sub := &cobra.Command{}
	sub.SetContext(ctx)
	sub.SetOut(cmd.OutOrStdout())
	sub.SetIn(cmd.InOrStdin())
	sub.SetErr(cmd.ErrOrStderr())
	if !st.timing {
		// The answer's line of time and pruning is all query writes
		// there; errors come back as values.
		sub.SetErr(io.Discard)
	}
	err := runStatements(sub, g, st.format, sqllex.Split(script), "the prompt", script, st.qs)
	if cause := context.Cause(ctx); err != nil && errors.Is(cause, errInterrupted) {
		return fmt.Errorf("%w: %w", cause, err)
	}
	return err
}

// statementEnded says whether text ends with a ; that is not inside a
// string, a quoted name or a comment.
func statementEnded(text string) bool {
	return strings.HasSuffix(strings.TrimSpace(sqllex.Mask(text)), ";")
}

// command runs one of the prompt's own commands; quit says to leave.
func (st *promptState) command(cmd *cobra.Command, g *globals, line string) (quit bool, err error) {
	f := strings.Fields(strings.TrimSuffix(line, ";"))
	name, args := f[0], f[1:]
	sub := func(a ...string) error {
		root := newRootCmdWith(&globals{})
		// Not cmd's context, which the first Ctrl-C of a statement ended.
		root.SetContext(context.WithoutCancel(cmd.Context()))
		root.SetOut(cmd.OutOrStdout())
		root.SetErr(cmd.ErrOrStderr())
		root.SetArgs(append([]string{"--catalog", g.catalog}, a...))
		root.SilenceErrors = true
		root.SilenceUsage = true
		return root.Execute()
	}
	switch name {
	case `\q`, ".quit", ".exit", "exit", "quit":
		return true, nil
	case `\?`, `\h`, ".help":
		fmt.Fprint(cmd.OutOrStdout(), promptHelp)
	case `\dt`, ".tables":
		return false, sub("table", "list")
	case `\d`, ".describe", ".schema":
		if len(args) != 1 {
			if len(args) == 0 && name != ".describe" {
				return false, sub("table", "list")
			}
			return false, fmt.Errorf("%s takes one table name", name)
		}
		a := []string{"table", "describe", args[0]}
		if st.qs.snapshot >= 0 {
			a = append(a, "--snapshot", strconv.FormatInt(st.qs.snapshot, 10))
		}
		return false, sub(a...)
	case `\format`, ".mode":
		if len(args) != 1 {
			return false, fmt.Errorf("%s takes one of aligned, %s (now %s)", name, strings.Join(queryFormats, ", "), st.format)
		}
		switch fm := strings.ToLower(args[0]); {
		case fm == formatAligned || fm == "box" || fm == "duckbox":
			st.format = formatAligned
		case fm == formatText:
			st.format = formatTable
		default:
			found := false
			for _, q := range queryFormats {
				found = found || q == fm
			}
			if !found {
				return false, fmt.Errorf("no format %q: aligned, %s", args[0], strings.Join(queryFormats, ", "))
			}
			st.format = fm
		}
		fmt.Fprintf(cmd.OutOrStdout(), "rows as %s\n", st.format)
	case `\timing`, ".timer":
		switch {
		case len(args) == 0:
			st.timing = !st.timing
		case args[0] == "on":
			st.timing = true
		case args[0] == "off":
			st.timing = false
		default:
			return false, fmt.Errorf("%s takes on or off", name)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "timing %s\n", map[bool]string{true: "on", false: "off"}[st.timing])
	case `\snapshot`, ".snapshot":
		if len(args) != 1 {
			return false, fmt.Errorf("%s takes a snapshot id or latest", name)
		}
		if args[0] == "latest" {
			st.qs.snapshot = -1
			fmt.Fprintln(cmd.OutOrStdout(), "reading the latest snapshot")
			break
		}
		n, err := strconv.ParseInt(args[0], 10, 64)
		if err != nil || n < 0 {
			return false, fmt.Errorf("%s takes a snapshot id or latest, not %q", name, args[0])
		}
		st.qs.snapshot = n
		fmt.Fprintf(cmd.OutOrStdout(), "reading snapshot %d\n", n)
	default:
		return false, fmt.Errorf("no command %s (\\? lists them)", name)
	}
	return false, nil
}

// interruptReader notes a Ctrl-C read from the terminal, which the line
// editor reports as the end of input like Ctrl-D.
type interruptReader struct {
	r   io.Reader
	hit bool
}

func (k *interruptReader) Read(p []byte) (int, error) {
	n, err := k.r.Read(p)
	if bytes.IndexByte(p[:n], 3) >= 0 {
		k.hit = true
	}
	return n, err
}

// interrupted says whether a Ctrl-C came since it was last asked.
func (k *interruptReader) interrupted() bool {
	hit := k.hit
	k.hit = false
	return hit
}

// history is the line editor's history, kept in a file: each entry is
// appended as it is added, and the newest historyMax are read at start.
// A file that cannot be read or written leaves the history in memory
// (err says why, once, at the end).
type history struct {
	lines []string // oldest first
	path  string
	err   error
}

func openHistory() *history {
	h := &history{path: os.Getenv("ROCKLAKE_HISTORY")}
	if h.path == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return h
		}
		h.path = filepath.Join(home, ".rocklake_history")
	}
	f, err := os.Open(h.path)
	if err != nil {
		return h
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if l := sc.Text(); l != "" {
			h.lines = append(h.lines, l)
		}
	}
	if len(h.lines) > historyMax {
		h.lines = h.lines[len(h.lines)-historyMax:]
	}
	return h
}

func (h *history) Add(entry string) {
	if strings.TrimSpace(entry) == "" || len(h.lines) > 0 && h.lines[len(h.lines)-1] == entry {
		return
	}
	h.lines = append(h.lines, entry)
	if len(h.lines) > historyMax {
		h.lines = h.lines[1:]
	}
	if h.path == "" || h.err != nil {
		return
	}
	f, err := os.OpenFile(h.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err == nil {
		_, err = f.WriteString(entry + "\n")
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		h.err = fmt.Errorf("the prompt's history (%s) is kept in memory only: %w", h.path, err)
	}
}

// warn says, on leaving, that the history could not be kept.
func (h *history) warn(w io.Writer) error {
	if h.err != nil {
		fmt.Fprintf(w, "Warning: %v\n", h.err)
	}
	return nil
}

func (h *history) Len() int { return len(h.lines) }

func (h *history) At(i int) string { return h.lines[len(h.lines)-1-i] }
