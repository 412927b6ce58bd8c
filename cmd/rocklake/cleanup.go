package main

import (
	"fmt"
	"sort"

	"github.com/spf13/cobra"
)

type cleanupOutput struct {
	Deleted []string          `json:"deleted"`
	Kept    []string          `json:"kept"`
	Failed  map[string]string `json:"failed"`
	Dirs    []string          `json:"removed_dirs"`
	DryRun  bool              `json:"dry_run"`
}

func newCleanupCmd(g *globals) *cobra.Command {
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "cleanup",
		Short: "Delete the files rocklake expire scheduled",
		Long: `cleanup deletes from disk the data files that rocklake expire scheduled: files
the catalog registered and no kept snapshot reads. Nothing else is ever
deleted. A directory left empty by the deletions is removed too. A scheduled
path registered again since is kept and unscheduled. A
file that cannot be removed is reported, stays scheduled, and makes the
command fail.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := openCatalog(g)
			if err != nil {
				return err
			}
			defer c.Close()
			res, err := c.Cleanup(dryRun)
			if err != nil {
				return err
			}
			out := cleanupOutput{Deleted: res.Deleted, Kept: res.Kept, Failed: map[string]string{}, Dirs: res.Dirs, DryRun: dryRun}
			var failed []string
			for p, e := range res.Failed {
				out.Failed[p] = e.Error()
				failed = append(failed, p)
			}
			sort.Strings(failed)
			w := cmd.OutOrStdout()
			if g.format == formatJSON {
				if err := writeJSON(w, out); err != nil {
					return err
				}
			} else {
				verb := "deleted"
				if dryRun {
					verb = "would delete"
				}
				for _, p := range res.Deleted {
					fmt.Fprintf(w, "%s %s\n", verb, p)
				}
				for _, p := range res.Kept {
					fmt.Fprintf(w, "kept %s (registered again)\n", p)
				}
				for _, d := range res.Dirs {
					fmt.Fprintf(w, "removed empty directory %s\n", d)
				}
				fmt.Fprintf(w, "%s %d files, kept %d, %d failed\n", verb, len(res.Deleted), len(res.Kept), len(failed))
			}
			if len(failed) > 0 {
				return fmt.Errorf("cleanup: could not delete %d files, first %s: %s", len(failed), failed[0], out.Failed[failed[0]])
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list what would be deleted, delete nothing")
	return cmd
}
