package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The change feed through the CLI: inserts, a delete, an update (a delete
// and an insert), a merge and an optimize (nothing), per snapshot, in
// order; --to bounds it; a --from before expired snapshots is refused.
func TestChangesCommand(t *testing.T) {
	lake := filepath.Join(t.TempDir(), "lake")
	mustRun(t, "--catalog", lake, "init")
	mustRun(t, "--catalog", lake, "query", "CREATE TABLE t (id BIGINT, s VARCHAR)")                                                                                                               // 1
	mustRun(t, "--catalog", lake, "query", "INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')")                                                                                                   // 2
	mustRun(t, "--catalog", lake, "query", "DELETE FROM t WHERE id = 2")                                                                                                                          // 3
	mustRun(t, "--catalog", lake, "query", "UPDATE t SET s = 'C' WHERE id = 3")                                                                                                                   // 4
	mustRun(t, "--catalog", lake, "query", "MERGE INTO t USING (SELECT 1 AS id UNION ALL SELECT 4) AS m ON t.id = m.id WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT VALUES (m.id, 'd')") // 5
	mustRun(t, "--catalog", lake, "optimize", "t", "--sort-by", "id")                                                                                                                             // 6
	out := mustRun(t, "--catalog", lake, "--format", "csv", "changes", "t", "--from", "1")
	want := "snapshot_id,change_type,id,s\n2,insert,1,a\n2,insert,2,b\n2,insert,3,c\n3,delete,2,b\n4,delete,3,c\n4,insert,3,C\n5,delete,1,a\n5,insert,4,d\n"
	// Within a snapshot and change type, rows come in no set order.
	if got := sortedLines(out); got != sortedLines(want) || !strings.HasPrefix(out, "snapshot_id,change_type,id,s\n2,") {
		t.Fatalf("changes:\n%s\nwant:\n%s", out, want)
	}
	out = mustRun(t, "--catalog", lake, "--format", "csv", "changes", "t", "--from", "3", "--to", "4")
	if sortedLines(out) != sortedLines("snapshot_id,change_type,id,s\n4,delete,3,c\n4,insert,3,C\n") {
		t.Fatalf("changes 3..4:\n%s", out)
	}
	if out, err := run(t, "--catalog", lake, "changes", "t"); exitCode(err) != exitUsage {
		t.Fatalf("no --from: %v %q", err, out)
	}
	mustRun(t, "--catalog", lake, "expire", "--older-than", "0s", "--allow-short-retention")
	if out, err := run(t, "--catalog", lake, "changes", "t", "--from", "1"); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("changes across expired snapshots: %v %q", err, out)
	}
}

func sortedLines(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}
