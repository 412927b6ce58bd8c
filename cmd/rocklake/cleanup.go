package main

import (
	"fmt"
	"sort"
	"time"

	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/storage"
)

type cleanupOutput struct {
	Deleted   []string          `json:"deleted"`
	Forgotten []string          `json:"forgotten"`
	Kept      []string          `json:"kept"`
	Waiting   []waitingFile     `json:"waiting"`
	Failed    map[string]string `json:"failed"`
	Dirs      []string          `json:"removed_dirs"`
	Grace     float64           `json:"grace_seconds"`
	DryRun    bool              `json:"dry_run"`
	// Orphans is set with --orphans.
	Orphans *orphansOutput `json:"orphans,omitempty"`
}

type orphansOutput struct {
	Deleted []string          `json:"deleted"`
	Waiting []waitingFile     `json:"waiting"`
	Dirs    []string          `json:"removed_dirs"`
	Failed  map[string]string `json:"failed"`
	// InUse are directories a running write holds; Expired the leases
	// of writes that are gone, removed.
	InUse   []string `json:"in_use_dirs"`
	Expired []string `json:"expired_leases"`
	// Aborted are the unfinished multipart uploads of dead object writes.
	Aborted []string `json:"aborted_uploads"`
}

type waitingFile struct {
	Path      string    `json:"path"`
	Scheduled time.Time `json:"scheduled"`
	Due       time.Time `json:"due"`
}

func newCleanupCmd(g *globals) *cobra.Command {
	var dryRun, orphans bool
	var grace time.Duration
	cmd := &cobra.Command{
		Use:   "cleanup",
		Short: "Delete rocklake's own files that rocklake expire scheduled; forget the user's",
		Long: `cleanup settles the data files that rocklake expire scheduled: files the
catalog registered and no kept snapshot reads.

  - Files rocklake owns (written by optimize or compact, or added with
    add --take-ownership) are deleted from disk, once they have been scheduled
    for at least --grace (default 1h), so that a query that planned before the
    expiry can finish reading them. Until then they wait, still scheduled.
  - Files the user registered in place are never deleted: they leave the
    catalog (are forgotten) and stay on disk. So are files registered before
    rocklake recorded ownership, whoever wrote them.
  - A directory is removed only when rocklake created it for rewritten files
    (optimize, compact) and the deletions left it empty; no other directory is
    ever removed.
  - A scheduled path registered again since is kept and unscheduled.

With --orphans, cleanup also deletes orphaned files: files optimize or compact
wrote that no snapshot ever registered, left behind when a rewrite was killed
before its commit (an interrupted rewrite removes its own files). It looks
only in the directories rewrites create (under the rewrite root beside the
catalog, or marked as a rewrite's at --dir, and the key=value directories of a
Hive-partitioned table's writes below them) and deletes only files named as
rewrites name theirs (part-NNNNN.parquet, the .rows.tmp a write stages its
rows in, a change's delete-N.parquet delete files) that no data-file or
delete-file row of any kept snapshot names and that were last
modified at least --grace ago. A directory a running write holds (an open
transaction, a long optimize) is left alone however old its files: the writer
keeps a lease file (.rocklake-in-use) in it, renewed while it runs; a lease
whose process died on this host, or not renewed for 5 minutes, is removed.

Writes to an object store (an s3:// data root, or a table of objects) upload
under a prefix of their own, s3://…/_rocklake/table-<id>/<what>-<snapshot>-<random>/,
below the data root and beside the table's objects; cleanup --orphans lists
those prefixes (S3 settings from the environment, as everywhere) and judges
each by its lease object (.rocklake-in-use) the same way, by the store's clock.
Only prefixes whose lease names this catalog are touched: never another
catalog's writes beside the same objects, nor a write that committed. Before
it deletes a write's objects it puts a tombstone (.rocklake-lost) that makes
the write's commit fail, and removes the tombstone once they are gone. The
multipart uploads such a write left unfinished (a large file's upload killed
part-way) are aborted too, once started at least --grace ago. A write records
the place of its prefix in the catalog before its first upload, so that its
prefix is found even once nothing registered lies beside it (its table dropped
and expired).

Nothing else is ever deleted. A file that cannot be removed is reported, stays
scheduled, and makes the command fail. --dry-run says what would happen and
changes nothing. An interrupt (Ctrl-C) stops between two deletions: the files
deleted so far leave the catalog, the others stay scheduled.`,
		Example: `  rocklake cleanup --dry-run
  rocklake cleanup
  rocklake cleanup --grace 0s
  rocklake cleanup --orphans`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if grace < 0 {
				return usagef("--grace %s: want a duration of 0s or more", grace)
			}
			c, closeCatalog, err := openCatalog(g, writing)
			if err != nil {
				return err
			}
			defer closeCatalog()
			opts := catalog.CleanupOptions{DryRun: dryRun, Grace: grace, Context: cmd.Context(), DeleteObject: storage.EnvDeleter(cmd.Context())}
			if grace == 0 {
				opts.Grace = -1 // none: the catalog's zero means its default
			}
			res, err := c.Cleanup(opts)
			if err != nil && res == nil {
				return err
			}
			stopped := err
			var orph *catalog.OrphanResult
			if orphans && stopped == nil {
				orph, err = c.DeleteOrphans(catalog.OrphanOptions{DryRun: dryRun, Grace: opts.Grace, Context: cmd.Context(), Objects: storage.NewEnvStore(cmd.Context())})
				if err != nil && orph == nil {
					return err
				}
				stopped = err
			}
			out := cleanupOutput{Deleted: nonNil(res.Deleted), Forgotten: nonNil(res.Forgotten), Kept: nonNil(res.Kept),
				Waiting: []waitingFile{}, Failed: map[string]string{}, Dirs: nonNil(res.Dirs), Grace: grace.Seconds(), DryRun: dryRun}
			for _, s := range res.Waiting {
				out.Waiting = append(out.Waiting, waitingFile{Path: s.Location, Scheduled: s.Scheduled, Due: s.Scheduled.Add(grace)})
			}
			var failed []string
			for p, e := range res.Failed {
				out.Failed[p] = e.Error()
				failed = append(failed, p)
			}
			if orph != nil {
				out.Orphans = &orphansOutput{Deleted: nonNil(orph.Deleted), Waiting: []waitingFile{}, Dirs: nonNil(orph.Dirs), Failed: map[string]string{},
					InUse: nonNil(orph.InUse), Expired: nonNil(orph.Expired), Aborted: nonNil(orph.Aborted)}
				for _, f := range orph.Waiting {
					out.Orphans.Waiting = append(out.Orphans.Waiting, waitingFile{Path: f.Path, Scheduled: f.Modified, Due: f.Modified.Add(grace)})
				}
				for p, e := range orph.Failed {
					out.Orphans.Failed[p] = e.Error()
					out.Failed[p] = e.Error()
					failed = append(failed, p)
				}
			}
			sort.Strings(failed)
			w := cmd.OutOrStdout()
			if g.format == formatJSON {
				if err := writeJSON(w, out); err != nil {
					return err
				}
			} else {
				del, forget, keep, rmdir, abort := "deleted", "forgot", "kept", "removed empty directory", "aborted"
				if dryRun {
					del, forget, keep, rmdir, abort = "would delete", "would forget", "would keep", "would remove empty directory", "would abort"
				}
				for _, p := range res.Deleted {
					fmt.Fprintf(w, "%s %s\n", del, p)
				}
				for _, p := range res.Forgotten {
					fmt.Fprintf(w, "%s %s (the user's file: leaves the catalog, stays on disk)\n", forget, p)
				}
				for _, p := range res.Kept {
					fmt.Fprintf(w, "%s %s (registered again)\n", keep, p)
				}
				for _, f := range out.Waiting {
					fmt.Fprintf(w, "waiting %s (scheduled %s, deletable after %s)\n", f.Path,
						f.Scheduled.Local().Format(time.RFC3339), f.Due.Local().Format(time.RFC3339))
				}
				for _, p := range failed {
					fmt.Fprintf(w, "failed %s: %s\n", p, out.Failed[p])
				}
				for _, d := range res.Dirs {
					fmt.Fprintf(w, "%s %s\n", rmdir, d)
				}
				fmt.Fprintf(w, "%s %s, %s %d (left on disk), %s %d; %d waiting for the %s grace period, %d failed\n",
					del, plural(len(res.Deleted), "file", "files"), forget, len(res.Forgotten), keep, len(res.Kept), len(res.Waiting), grace, len(failed))
				if orph != nil {
					for _, p := range orph.Deleted {
						fmt.Fprintf(w, "%s orphan %s (written by a rewrite, never registered)\n", del, p)
					}
					for _, f := range out.Orphans.Waiting {
						fmt.Fprintf(w, "waiting orphan %s (modified %s, deletable after %s)\n", f.Path,
							f.Scheduled.Local().Format(time.RFC3339), f.Due.Local().Format(time.RFC3339))
					}
					for _, d := range orph.InUse {
						fmt.Fprintf(w, "in use %s (a running write holds it: left alone)\n", d)
					}
					for _, p := range orph.Aborted {
						fmt.Fprintf(w, "%s unfinished upload %s (its write is gone)\n", abort, p)
					}
					for _, p := range orph.Expired {
						fmt.Fprintf(w, "%s expired lease %s (its write is gone)\n", del, p)
					}
					for _, d := range orph.Dirs {
						fmt.Fprintf(w, "%s %s\n", rmdir, d)
					}
					fmt.Fprintf(w, "%s %s; %d waiting for the %s grace period; %s in use\n", del, plural(len(orph.Deleted), "orphaned file", "orphaned files"),
						len(orph.Waiting), grace, plural(len(orph.InUse), "directory", "directories"))
				}
			}
			if stopped != nil {
				return stopped
			}
			if len(failed) > 0 {
				return fmt.Errorf("cleanup: could not delete %d files, first %s: %s", len(failed), failed[0], out.Failed[failed[0]])
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "say what would be deleted and forgotten, change nothing")
	cmd.Flags().DurationVar(&grace, "grace", catalog.DefaultGrace, "delete only files scheduled (orphans: modified) at least this long ago (0s: no wait)")
	cmd.Flags().BoolVar(&orphans, "orphans", false, "also delete files rewrites wrote that no snapshot registered (left by a killed optimize or compact)")
	return markInterruptible(cmd)
}
