package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake/catalog"
)

// snapshotInfo is a snapshot as --format json prints it (catalog.Snapshot's
// JSON, which the HTTP API's /v1/snapshots prints too).
type snapshotInfo = catalog.Snapshot

func newSnapshotsCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "snapshots",
		Short: "List the catalog's snapshots and what each changed",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, closeCatalog, err := openCatalog(g, reading)
			if err != nil {
				return err
			}
			defer closeCatalog()
			snaps, err := c.Snapshots()
			if err != nil {
				return err
			}
			if g.format == formatJSON {
				return writeJSON(cmd.OutOrStdout(), map[string]any{"snapshots": nonNilSnapshots(snaps)})
			}
			names, err := c.TableNames()
			if err != nil {
				return err
			}
			w := newTable(cmd.OutOrStdout())
			fmt.Fprintln(w, "SNAPSHOT\tTIME\tSCHEMA\tNEXT_FILE\tCHANGES")
			for _, s := range snaps {
				fmt.Fprintf(w, "%d\t%s\t%d\t%d\t%s\n", s.ID, s.Time.Format(time.RFC3339), s.SchemaVersion, s.NextFileID, describeChanges(s.ID, s.Changes, names))
			}
			return w.Flush()
		},
	}
}

// describeChanges says what a snapshot changed, tables by the names they
// had at it (a dropped one by its last), or by id where no row is left.
func describeChanges(snap int64, ch catalog.Changes, names []catalog.TableName) string {
	nameOf := func(id int64) string {
		last := ""
		for _, n := range names {
			if n.ID != id {
				continue
			}
			if n.Begin <= snap && (n.End == 0 || n.End > snap) {
				return n.Name
			}
			if n.End == snap {
				last = n.Name
			}
		}
		if last != "" {
			return last
		}
		return fmt.Sprintf("#%d", id)
	}
	var parts []string
	add := func(what string, ids []int64) {
		if len(ids) > 0 {
			named := make([]string, len(ids))
			for i, id := range ids {
				named[i] = nameOf(id)
			}
			parts = append(parts, fmt.Sprintf("%s %s", what, strings.Join(named, ", ")))
		}
	}
	if len(ch.CreatedSchemas) > 0 {
		parts = append(parts, fmt.Sprintf("created schemas %v", ch.CreatedSchemas))
	}
	add("created tables", ch.CreatedTables)
	add("dropped tables", ch.DroppedTables)
	add("renamed tables", ch.RenamedTables)
	add("inserted into tables", ch.InsertedIntoTables)
	add("deleted from tables", ch.DeletedFromTables)
	add("altered tables", ch.AlteredTables)
	add("refreshed files of tables", ch.RestampedTables)
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, "; ")
}

func nonNilSnapshots(s []snapshotInfo) []snapshotInfo {
	if s == nil {
		return []snapshotInfo{}
	}
	return s
}
