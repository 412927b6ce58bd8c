package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/storage"
)

func newInitCmd(g *globals) *cobra.Command {
	var dataRoot string
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Create a new, empty catalog in the --catalog directory or database",
		Long: `Create a new, empty catalog in the --catalog directory (created if missing; it
must otherwise be empty) or PostgreSQL database.

In a database, the catalog is one table, rocklake_kv, in the schema the URL's
search_path names first (public by default; postgres://…/db?search_path=lake
for a schema "lake"), which init creates when missing. A schema that already
holds other tables is refused: give rocklake a database or a schema of its
own. A location that already holds a catalog is refused too, never
overwritten.

With --data-root DIR the catalog only ever registers data files that lie
under DIR (after resolving symbolic links and ".."): add refuses any other
path. The root is stored in the catalog, so later commands need not repeat it.
A root may be a prefix in an S3-compatible store (s3://bucket/prefix/): add then
registers only objects whose keys start with it (keys are never resolved).`,
		Example: `  rocklake init --catalog ./lake
  rocklake init --catalog 'postgres://rocklake@db.internal:5432/lakes?search_path=sales'   # password from PGPASSWORD or ~/.pgpass
  rocklake init --catalog postgres://rocklake@localhost/lakes --data-root /srv/data
  rocklake init --data-root s3://lake/events/`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if storage.IsS3(dataRoot) {
				// Checked as a location only: init makes no request, and the
				// prefix may well be empty still.
				if _, _, err := storage.ParseS3(dataRoot); err != nil {
					return fmt.Errorf("data root: %w", err)
				}
			} else if dataRoot != "" {
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
				return writeJSON(cmd.OutOrStdout(), map[string]any{"catalog": c.Location(), "snapshot_id": 0, "data_root": c.DataRoot()})
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "created catalog %s: snapshot 0, no tables yet\n", c.Location())
			if err == nil && c.DataRoot() != "" {
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "data files must lie under %s\n", c.DataRoot())
			}
			return err
		},
	}
	cmd.Flags().StringVar(&dataRoot, "data-root", "", "only register data files under this directory (or s3://bucket/prefix/)")
	return cmd
}
