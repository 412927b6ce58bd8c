package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"rocklake/catalog"
)

func newInitCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "init",
		Short: "Create a new, empty catalog in the --catalog directory",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := catalog.Create(g.catalog, catalog.Options{})
			if err != nil {
				return err
			}
			defer c.Close()
			if g.format == formatJSON {
				return writeJSON(cmd.OutOrStdout(), map[string]any{"catalog": g.catalog, "snapshot": 0})
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "created catalog %s (snapshot 0, schema main)\n", g.catalog)
			return err
		},
	}
}
