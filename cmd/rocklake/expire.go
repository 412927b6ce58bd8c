package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake/catalog"
)

type expireOutput struct {
	OldestKept      int64    `json:"oldest_kept_snapshot_id"`
	Expired         []int64  `json:"expired_snapshot_ids"`
	FilesForgotten  int      `json:"forgotten_file_count"`
	TablesForgotten int      `json:"forgotten_table_count"`
	Scheduled       []string `json:"scheduled_for_cleanup"`
	// Deletable are the scheduled files cleanup will delete (rocklake's
	// own); it forgets the rest and leaves them on disk.
	Deletable []string `json:"deletable_by_cleanup"`
	DryRun    bool     `json:"dry_run"`
}

func newExpireCmd(g *globals) *cobra.Command {
	var olderThan string
	var dryRun, allowShort bool
	cmd := &cobra.Command{
		Use:   "expire --older-than AGE",
		Short: "Forget snapshots older than an age, and schedule files no kept snapshot reads",
		Long: `expire forgets every snapshot committed more than --older-than ago (a duration
such as 7d, 36h or 90m, or an RFC 3339 time); the newest snapshot is always
kept. Files retired (by optimize, compact or a replacing add) and tables
dropped at or before the oldest kept snapshot are then read by no snapshot:
their catalog rows and statistics are deleted and the files are scheduled for
rocklake cleanup. Snapshots kept read exactly what they read before; time
travel to a forgotten snapshot fails.

Cleanup deletes only the scheduled files rocklake owns (written by optimize or
compact, or added with --take-ownership); the files a user registered in place
leave the catalog and stay on disk.

A large expiry commits in batches of about 16 MB, in an order that keeps every
snapshot it keeps readable between them. If it is cut off, it fails and says
so; run it again to finish (nothing is forgotten or scheduled twice).

Retention floor: --older-than under 7d is refused, because a query that began
at an older snapshot, or a user about to time-travel to one, still needs its
files. --allow-short-retention lifts the floor for one run (as Delta's
retentionDurationCheck).`,
		Example: `  rocklake expire --older-than 30d --dry-run
  rocklake expire --older-than 7d
  rocklake expire --older-than 1h --allow-short-retention`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cutoff, err := parseCutoff(olderThan, time.Now())
			if err != nil {
				return err
			}
			c, closeCatalog, err := openCatalog(g, writing)
			if err != nil {
				return err
			}
			defer closeCatalog()
			opts := catalog.ExpireOptions{DryRun: dryRun}
			if allowShort {
				opts.MinRetention = -1
			}
			res, err := c.Expire(cutoff, opts)
			if errors.Is(err, catalog.ErrRetentionTooShort) {
				return fmt.Errorf("expire --older-than %s: %w; pass --allow-short-retention to expire them anyway (queries still reading them, and time travel to them, then fail)",
					olderThan, err)
			}
			if err != nil {
				return err
			}
			out := expireOutput{OldestKept: res.OldestKept.ID, Expired: nonNilIDs(res.Expired), FilesForgotten: res.FilesForgotten,
				TablesForgotten: res.TablesForgotten, Scheduled: nonNil(res.Scheduled), Deletable: nonNil(res.Deletable), DryRun: dryRun}
			if g.format == formatJSON {
				return writeJSON(cmd.OutOrStdout(), out)
			}
			w := cmd.OutOrStdout()
			verb := "expired"
			if dryRun {
				verb = "would expire"
			}
			if len(res.Expired) == 0 {
				_, err = fmt.Fprintf(w, "no snapshot older than %s; oldest kept: %d\n", cutoff.Format(time.RFC3339), out.OldestKept)
				return err
			}
			fmt.Fprintf(w, "%s %s (%d..%d); oldest kept: %d (%s)\n", verb, plural(len(res.Expired), "snapshot", "snapshots"), res.Expired[0],
				res.Expired[len(res.Expired)-1], out.OldestKept, res.OldestKept.Time.Format(time.RFC3339))
			forgot, scheduled := "forgot", "scheduled"
			if dryRun {
				forgot, scheduled = "would forget", "would be scheduled"
			}
			fmt.Fprintf(w, "%s %s and %s; %s %s for cleanup: %d rocklake's own, which cleanup deletes, %d the user's, which stay on disk\n",
				forgot, plural(out.FilesForgotten, "file", "files"), plural(out.TablesForgotten, "dropped table", "dropped tables"),
				plural(len(out.Scheduled), "file", "files"), scheduled, len(out.Deletable), len(out.Scheduled)-len(out.Deletable))
			return nil
		},
	}
	cmd.Flags().StringVar(&olderThan, "older-than", "", "age of the snapshots to forget: 7d, 36h, 90m, or an RFC 3339 time (required)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "say what would be forgotten, change nothing")
	cmd.Flags().BoolVar(&allowShort, "allow-short-retention", false, "allow --older-than under the 7-day retention floor")
	return cmd
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// parseCutoff reads an age (Go duration, or whole days as "7d") back from
// now, or an absolute RFC 3339 time.
func parseCutoff(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, usagef("--older-than is required (e.g. 7d, 36h, or 2026-01-02T15:04:05Z)")
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	var d time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseFloat(days, 64)
		if err != nil || n < 0 || n > 1e5 {
			return time.Time{}, usagef("--older-than %q: want a number of days such as 7d", s)
		}
		d = time.Duration(n * 24 * float64(time.Hour))
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil || d < 0 {
			return time.Time{}, usagef("--older-than %q: want an age such as 7d, 36h or 90m, or an RFC 3339 time", s)
		}
	}
	return now.Add(-d), nil
}

func nonNilIDs(s []int64) []int64 {
	if s == nil {
		return []int64{}
	}
	return s
}
