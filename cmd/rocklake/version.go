package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake/engine"
)

// version is the release; builds may set it with
// -ldflags "-X main.version=...".
var version = "0.1.0-dev"

type versionInfo struct {
	Version string `json:"version"`
	Go      string `json:"go"`
	DuckDB  string `json:"duckdb"`
}

func newVersionCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the rocklake, Go and DuckDB versions",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info := versionInfo{Version: version, Go: runtime.Version(), DuckDB: engine.DuckDBVersion()}
			if g.format == formatJSON {
				return writeJSON(cmd.OutOrStdout(), info)
			}
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "rocklake %s (%s, DuckDB %s)\n", info.Version, info.Go, info.DuckDB)
			return err
		},
	}
}
