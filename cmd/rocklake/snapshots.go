package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake/catalog"
)

type snapshotInfo struct {
	ID            int64       `json:"snapshot_id"`
	Time          time.Time   `json:"time"`
	SchemaVersion int64       `json:"schema_version"`
	NextCatalogID int64       `json:"next_catalog_id"`
	NextFileID    int64       `json:"next_file_id"`
	Changes       changesJSON `json:"changes"`
}

// changesJSON is what a snapshot changed, every list present (empty when
// nothing of the kind changed).
type changesJSON struct {
	CreatedSchemas     []int64  `json:"created_schemas"`
	CreatedTables      []int64  `json:"created_tables"`
	DroppedTables      []int64  `json:"dropped_tables"`
	InsertedIntoTables []int64  `json:"inserted_into_tables"`
	DeletedFromTables  []int64  `json:"deleted_from_tables"`
	CreatedNames       []string `json:"created_names"`
	RenamedTables      []int64  `json:"renamed_tables"`
	AlteredTables      []int64  `json:"altered_tables"`
	RestampedTables    []int64  `json:"restamped_tables"`
}

func changesOf(ch catalog.Changes) changesJSON {
	ids := nonNilIDs
	return changesJSON{ids(ch.CreatedSchemas), ids(ch.CreatedTables), ids(ch.DroppedTables), ids(ch.InsertedIntoTables),
		ids(ch.DeletedFromTables), nonNil(ch.CreatedNames), ids(ch.RenamedTables), ids(ch.AlteredTables), ids(ch.RestampedTables)}
}

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
				out := make([]snapshotInfo, len(snaps))
				for i, s := range snaps {
					out[i] = snapshotInfo{s.ID, s.Time, s.SchemaVersion, s.NextCatalogID, s.NextFileID, changesOf(s.Changes)}
				}
				return writeJSON(cmd.OutOrStdout(), map[string]any{"snapshots": out})
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
