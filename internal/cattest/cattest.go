// Package cattest holds catalog set-ups that tests in several packages
// share.
package cattest

import (
	"strings"
	"testing"

	"github.com/rocklake/rocklake/catalog"
)

// CreateTable commits a new table from column definitions ("id BIGINT"),
// partitioned Hive-style by the columns partitionBy names.
func CreateTable(t testing.TB, c *catalog.Catalog, name string, defs []string, partitionBy ...string) {
	t.Helper()
	cd, err := catalog.ParseColumnDefs(strings.Join(defs, ", "))
	if err != nil {
		t.Fatal(err)
	}
	if len(partitionBy) > 0 {
		if err := catalog.PartitionBy(cd, partitionBy); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := c.Begin()
	if err != nil {
		t.Fatal(err)
	}
	tx.CreateTable(name, cd)
	if _, err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}
