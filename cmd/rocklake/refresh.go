package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake/maintain"
)

func newRefreshCmd(g *globals) *cobra.Command {
	var o maintain.RefreshOptions
	cmd := &cobra.Command{
		Use:   "refresh TABLE [PATH...]",
		Short: "Take back files a query refused as changed: accept, register again (--stats) or remove (--remove)",
		Long: `A query refuses a local file that is no longer the one registered: another size,
modification time, status change time (ctime), device or inode. A write, a rename
over it, a hard link, a chmod and a restore from a backup all move its ctime, which no
one but root can set back, so a file rewritten in place with its size and
modification time kept is refused too. refresh re-checks the files named (by their
registered paths, as ` + "`rocklake files`" + ` lists them; --all: every file of the table),
reading each one's footer:

  - a file whose footer is the one registered (the same fingerprint, length and row
    count: the same statistics and page offsets) is accepted: what stat says of it
    now is recorded, in place, and every snapshot reads it again. With --deep its
    statistics and membership filters are first checked against its rows, as
    verify --deep checks them (a value rewritten inside a data page leaves the
    footer as it was: only --deep sees it); a file registered before footer
    fingerprints were recorded is accepted only so.
  - a file whose content changed is refused, unless --stats registers it again with
    the statistics it holds now (snapshots before the refresh still refuse it: their
    statistics describe the old content), or --remove removes it from the table.
  - a file that did not change is left as it is.

Everything happens in one new snapshot, or, when any file is refused, nothing: the
error names every file refused and why. Objects (s3://) are not refreshed: their
reads are pinned to their ETags.`,
		Example: `  rocklake refresh events data/events/2024-01-01.parquet          # after a chmod, a hard link or a restore
  rocklake refresh events data/events/2024-01-01.parquet --deep   # and check its statistics against its rows
  rocklake refresh events --all                                   # every file of the table, after a restore
  rocklake refresh events data/events/2024-01-02.parquet --stats  # rewritten in place: take its new statistics
  rocklake refresh events data/events/2024-01-02.parquet --remove # or remove it from the table`,
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) == 0:
				return usagef("refresh needs a table and the files to refresh (or --all)")
			case len(args) == 1 && !o.All:
				return usagef("refresh %s needs the files to refresh (as `rocklake files %s` lists them), or --all", args[0], args[0])
			case o.Stats && o.Remove:
				return usagef("--stats and --remove exclude each other: a changed file is either registered again or removed")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			e, done, err := openEngine(g, writing)
			if err != nil {
				return err
			}
			defer done()
			if g.served != nil {
				o.ReadDirs = g.served.ReadDirs()
			}
			rep, err := maintain.Refresh(cmd.Context(), e, args[0], args[1:], o)
			if err != nil {
				return err
			}
			if g.format == formatJSON {
				// snapshot_id is null when nothing was committed, as for
				// the other commands that may make none.
				var snap *int64
				if rep.Snapshot != 0 {
					snap = &rep.Snapshot
				}
				return writeJSON(cmd.OutOrStdout(), struct {
					Table    string                   `json:"table"`
					Snapshot *int64                   `json:"snapshot_id"`
					Files    []maintain.RefreshedFile `json:"files"`
				}{rep.Table, snap, rep.Files})
			}
			out := cmd.OutOrStdout()
			counts := map[string]int{}
			for _, f := range rep.Files {
				counts[f.Outcome]++
				if f.Outcome == maintain.RefreshUnchanged && o.All {
					continue // --all names every file: only those that changed are news
				}
				line := fmt.Sprintf("%s %s (file %d", f.Outcome, f.Path, f.FileID)
				if f.NewFileID != 0 {
					line += fmt.Sprintf(", now file %d", f.NewFileID)
				}
				line += ")"
				if len(f.Changed) > 0 {
					line += ": " + strings.Join(f.Changed, "; ")
				}
				fmt.Fprintln(out, line)
			}
			var parts []string
			for _, k := range []string{maintain.RefreshAccepted, maintain.RefreshRegistered, maintain.RefreshRemoved, maintain.RefreshUnchanged} {
				if counts[k] > 0 {
					parts = append(parts, fmt.Sprintf("%d %s", counts[k], k))
				}
			}
			if rep.Snapshot == 0 {
				_, err = fmt.Fprintf(out, "table %s: %s, nothing to refresh\n", rep.Table, plural(len(rep.Files), "file", "files"))
				return err
			}
			_, err = fmt.Fprintf(out, "table %s at snapshot %d: %s\n", rep.Table, rep.Snapshot, strings.Join(parts, ", "))
			return err
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.Deep, "deep", false, "check each file's statistics against its rows before accepting it")
	f.BoolVar(&o.Stats, "stats", false, "register each file whose content changed anew, with the statistics it holds now")
	f.BoolVar(&o.Remove, "remove", false, "remove the named files that changed, or are missing, from the table")
	f.BoolVar(&o.All, "all", false, "refresh every file of the table (those unchanged are left as they are)")
	return cmd
}
