// Command rocklake is the command-line interface to a rocklake catalog: a
// lakehouse catalog of Parquet tables whose column statistics let queries
// skip every file, row group and page that cannot match.
//
// Each command lives in a file of its own and writes through
// cmd.OutOrStdout(), so tests run commands in-process and read their output.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake/engine"
)

// exitInterrupted is the status of a command stopped by SIGINT or SIGTERM,
// as a shell reports a process killed by SIGINT.
const exitInterrupted = 130

// interruptible marks, in a command's Annotations, a command that stops
// cleanly when its context is cancelled: it removes what it wrote and
// commits nothing it had not committed. An interrupt ends any other
// command at once, as the signal would (a commit is atomic: the catalog is
// as before the command or as after it).
const interruptible = "rocklake/interruptible"

// runsSQL marks, in a command's Annotations, a command that opens DuckDB
// whenever it runs: main starts DuckDB (engine.Prestart) before the
// command line is even parsed, so that DuckDB's start overlaps the
// catalog's open instead of following it.
const runsSQL = "rocklake/runs-sql"

// errInterrupted is the cause of a command context cancelled by a signal.
var errInterrupted = errors.New("interrupted")

// exitsAfter is set when the command runs in a process that exits once it
// returns (main; not tests, which run many commands in one process): an
// engine is then left for the exit to end (engine.CloseAtExit).
var exitsAfter bool

func main() {
	exitsAfter = true
	root := newRootCmd()
	// The first SIGINT or SIGTERM cancels the command's context; a second
	// one ends the process at once (the default action is restored).
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithCancelCause(context.Background())
	cmd, _, _ := root.Find(os.Args[1:])
	if prestarts(cmd, os.Args[1:]) {
		engine.Prestart()
	}
	go func() {
		sig := <-sigs
		signal.Stop(sigs)
		if cmd == nil || cmd.Annotations[interruptible] == "" && !promptActive.Load() {
			fmt.Fprintln(os.Stderr, "rocklake: interrupted")
			os.Exit(exitInterrupted)
		}
		cancel(fmt.Errorf("%w (%s)", errInterrupted, sig))
	}()
	err := root.ExecuteContext(ctx)
	if err != nil {
		interrupted := errors.Is(context.Cause(ctx), errInterrupted)
		if interrupted {
			err = fmt.Errorf("%w: %w", errInterrupted, err)
		}
		format := ""
		if f := root.PersistentFlags().Lookup("format"); f != nil {
			format = f.Value.String()
		}
		reportError(os.Stderr, err, jsonRequested(format, os.Args[1:]), os.Args[1:])
		if interrupted {
			os.Exit(exitInterrupted)
		}
		os.Exit(exitCode(err))
	}
}

// prestarts says whether cmd (nil when the command line names none), run
// with the arguments args, runs SQL in this process: a command that runs
// SQL, unless it runs in the server holding its catalog directory
// (remote.go), where a DuckDB started here would only take CPU from the
// server. Which catalog is read from args before they are parsed, and
// whether it is served from a stat of its socket, without a dial.
func prestarts(cmd *cobra.Command, args []string) bool {
	if cmd == nil || cmd.Annotations[runsSQL] == "" {
		return false
	}
	return !forwardable[cmd.CommandPath()] || !mayBeServed(catalogArg(args))
}

// catalogArg is the --catalog that args give (the last, as the flag
// parser takes it; none after "--"), else the default.
func catalogArg(args []string) string {
	dir := defaultCatalog()
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if a == "--catalog" && i+1 < len(args) {
			dir = args[i+1]
			i++
		} else if v, ok := strings.CutPrefix(a, "--catalog="); ok {
			dir = v
		}
	}
	return dir
}

// markRunsSQL marks cmd as one that opens DuckDB whenever it runs.
func markRunsSQL(cmd *cobra.Command) *cobra.Command {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[runsSQL] = "yes"
	return cmd
}

// markInterruptible marks cmd as one that stops cleanly on an interrupt.
func markInterruptible(cmd *cobra.Command) *cobra.Command {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[interruptible] = "yes"
	return cmd
}
