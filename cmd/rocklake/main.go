// Command rocklake is the command-line interface to a rocklake catalog: a
// lakehouse catalog of Parquet tables whose column statistics let queries
// skip every file, row group and page that cannot match.
//
// Each command lives in a file of its own and writes through
// cmd.OutOrStdout(), so tests run commands in-process and read their output.
package main

import (
	"errors"
	"fmt"
	"os"
)

func main() {
	if err := newRootCmd().Execute(); err != nil {
		var vf errVerifyFailed
		if !errors.As(err, &vf) { // verify printed its own report
			fmt.Fprintln(os.Stderr, "rocklake:", err)
		}
		os.Exit(exitCode(err))
	}
}
