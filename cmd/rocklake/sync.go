package main

import (
	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake/interop/ducklake"
)

func newSyncCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sync",
		Short: "Follow a catalog of another lakehouse format (DuckLake 1.0)",
	}
	cmd.AddCommand(newSyncDuckLakeCmd(g))
	return cmd
}

func newSyncDuckLakeCmd(g *globals) *cobra.Command {
	var opts ducklake.ImportOptions
	cmd := &cobra.Command{
		Use:   "ducklake SRC",
		Short: "Import the snapshots of a DuckLake catalog newer than the catalog follows",
		Long: `sync ducklake keeps the catalog following a DuckLake 1.0 catalog that others keep
writing: it finds the newest DuckLake snapshot whose tables and live files are
exactly the catalog's newest state, and imports the snapshots after it, one
rocklake snapshot each, as import ducklake does (the same refusals). An empty
catalog follows nothing yet and gets every snapshot. A catalog whose state
matches no DuckLake snapshot (something else changed it) is refused; nothing
is then written.`,
		Example: `  rocklake export ducklake lake.ducklake && rocklake --catalog copy init && rocklake --catalog copy sync ducklake lake.ducklake`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runImport(cmd, g, args[0], opts, true)
		},
	}
	cmd.Flags().StringVar(&opts.InlinedDir, "inlined-dir", "", "a new directory for the Parquet files of inlined rows")
	return cmd
}
