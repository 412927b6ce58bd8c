package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// Exit codes: scripts tell a mistake in the command line from a command
// that ran and failed, and from verify finding problems.
const (
	exitFailure  = 1 // the command ran and failed
	exitUsage    = 2 // the command line is wrong: nothing was done
	exitProblems = 3 // verify ran and found problems (erasure: rows still stored)
)

// usageError is a mistake in the command line: an unknown command or flag,
// a missing or extra argument, a flag value that is not allowed.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// exitCode maps a command's error to the process's exit status.
func exitCode(err error) int {
	var ue usageError
	var vf errVerifyFailed
	var ne errNotErased
	var fe forwardedExit
	switch {
	case err == nil:
		return 0
	case errors.As(err, &fe):
		return fe.code
	case errors.As(err, &ue):
		return exitUsage
	case errors.As(err, &vf), errors.As(err, &ne):
		return exitProblems
	}
	return exitFailure
}

// markUsageErrors makes every way cobra rejects a command line a
// usageError, on cmd and all its subcommands: flag errors, argument
// counts, and a command group given an unknown (or no) subcommand, which
// cobra would otherwise answer with help on stdout and status 0.
func markUsageErrors(cmd *cobra.Command) {
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{fmt.Errorf("%w (see `%s --help`)", err, c.CommandPath())}
	})
	if args := cmd.Args; args != nil {
		cmd.Args = func(c *cobra.Command, a []string) error {
			if err := args(c, a); err != nil {
				return usageError{fmt.Errorf("%s: %w (see `%s --help`)", c.CommandPath(), err, c.CommandPath())}
			}
			return nil
		}
	}
	if cmd.HasSubCommands() && cmd.Run == nil && cmd.RunE == nil {
		cmd.Args = cobra.ArbitraryArgs
		cmd.RunE = func(c *cobra.Command, a []string) error {
			var names []string
			for _, sub := range c.Commands() {
				if sub.IsAvailableCommand() {
					names = append(names, sub.Name())
				}
			}
			if len(a) == 0 && !c.HasParent() {
				return usagef("no command given; commands: %s (see `%s --help`)", strings.Join(names, ", "), c.CommandPath())
			}
			if len(a) == 0 {
				return usagef("%s needs a command: %s", c.CommandPath(), strings.Join(names, ", "))
			}
			return usagef("unknown command %q for %s (commands: %s)", a[0], c.CommandPath(), strings.Join(names, ", "))
		}
	}
	for _, sub := range cmd.Commands() {
		markUsageErrors(sub)
	}
}

// checkSnapshotFlag refuses a negative --snapshot: snapshot ids start at 0,
// and -1 is only the flag's way of saying "latest".
func checkSnapshotFlag(cmd *cobra.Command) error {
	f := cmd.Flags().Lookup("snapshot")
	if f == nil || !f.Changed {
		return nil
	}
	if strings.HasPrefix(strings.TrimSpace(f.Value.String()), "-") {
		return usagef("--snapshot %s: a snapshot id is 0 or more (leave the flag out for the latest)", f.Value.String())
	}
	return nil
}
