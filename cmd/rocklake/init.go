package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"rocklake/catalog"
)

func newInitCmd(g *globals) *cobra.Command {
	var dataRoot string
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Create a new, empty catalog in the --catalog directory",
		Long: `Create a new, empty catalog in the --catalog directory.

With --data-root DIR the catalog only ever registers data files that lie
under DIR (after resolving symbolic links and ".."): add refuses any other
path. The root is stored in the catalog, so later commands need not repeat it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dataRoot != "" {
				// A root that does not exist is almost always a typo; refuse
				// it before the catalog directory is created.
				if st, err := os.Stat(dataRoot); err != nil {
					return fmt.Errorf("data root: %w", err)
				} else if !st.IsDir() {
					return fmt.Errorf("data root %s is not a directory", dataRoot)
				}
			}
			c, err := catalog.Create(g.catalog, catalog.Options{DataRoot: dataRoot})
			if err != nil {
				return err
			}
			defer c.Close()
			if g.format == formatJSON {
				return writeJSON(cmd.OutOrStdout(), map[string]any{"catalog": g.catalog, "snapshot": 0, "data_root": c.DataRoot()})
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "created catalog %s (snapshot 0, schema main)\n", g.catalog)
			if err == nil && c.DataRoot() != "" {
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "data files must lie under %s\n", c.DataRoot())
			}
			return err
		},
	}
	cmd.Flags().StringVar(&dataRoot, "data-root", "", "only register data files under this directory")
	return cmd
}
