package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake/catalog"
)

func newRmCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rm TABLE PATH...",
		Short: "Unregister data files from a table, in one snapshot",
		Long: `rm removes files from a table in one new snapshot: queries at later snapshots no
longer read them; older snapshots still do. Nothing is deleted from disk: files
registered in place stay the user's, and rocklake's own files are deleted only by
cleanup once expire has forgotten every snapshot that reads them. Every PATH must be
a file of the table at the latest snapshot (as listed by ` + "`rocklake files`" + `), or
nothing is removed.`,
		Example: `  rocklake rm events data/events/2024-01-01.parquet
  rocklake files events --format json   # the registered paths`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, closeCatalog, err := openCatalog(g, writing)
			if err != nil {
				return err
			}
			defer closeCatalog()
			r, err := readAt(c, -1)
			if err != nil {
				return err
			}
			t, err := r.Table(args[0])
			if err != nil {
				r.Close()
				return err
			}
			files, err := r.Files(t.ID)
			r.Close()
			if err != nil {
				return err
			}
			byPath := map[string]int64{}
			for _, f := range files {
				byPath[f.Location(t)] = f.ID
			}
			var ids []int64
			seen := map[int64]bool{}
			for _, p := range args[1:] {
				id, ok := lookupRegistered(byPath, p)
				if !ok {
					return fmt.Errorf("%s is not a file of table %s at the latest snapshot (see `rocklake files %s`); nothing was removed%w", p, t.Name, t.Name, noText{catalog.ErrNoSuchFile})
				}
				if !seen[id] {
					seen[id] = true
					ids = append(ids, id)
				}
			}
			tx, err := c.Begin()
			if err != nil {
				return err
			}
			tx.RemoveFiles(t.Name, ids...)
			snap, err := tx.Commit()
			if err != nil {
				return err
			}
			if g.format == formatJSON {
				return writeJSON(cmd.OutOrStdout(), map[string]any{"table": t.Name, "removed_count": len(ids), "snapshot_id": snap.ID})
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "removed %s from %s at snapshot %d (the files stay on disk)\n", plural(len(ids), "file", "files"), t.Name, snap.ID)
			return err
		},
	}
	return cmd
}

// lookupRegistered finds a path among registered locations as written,
// made absolute, or with symbolic links resolved.
func lookupRegistered(byPath map[string]int64, p string) (int64, bool) {
	if id, ok := byPath[p]; ok {
		return id, true
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return 0, false
	}
	if id, ok := byPath[abs]; ok {
		return id, true
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		if id, ok := byPath[real]; ok {
			return id, true
		}
	}
	return 0, false
}
