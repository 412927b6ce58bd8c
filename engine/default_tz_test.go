package engine

import (
	"context"
	"fmt"
	"testing"

	"github.com/rocklake/rocklake/catalog"
)

// A default is DuckDB's cast of its text in the session's time zone (UTC
// in rocklake): for every time-zone type and every shape of text, with an
// offset or without, the files registered before the column read the
// value DuckDB's own CAST gives.
func TestTimeZoneDefaultsFollowDuckDB(t *testing.T) {
	c, e := intTable(t, t.TempDir(), 1)
	ctx := context.Background()
	cases := []struct{ typ, text string }{
		{"TIMESTAMPTZ", "2024-01-01 10:00:00"},
		{"TIMESTAMPTZ", "2024-01-01T10:00:00.123456"},
		{"TIMESTAMPTZ", "2024-01-01"},
		{"TIMESTAMPTZ", "2024-01-01 10:00:00+02"},
		{"TIMESTAMPTZ", "2024-01-01 10:00:00-03:30"},
		{"TIMESTAMPTZ", "2024-01-01 10:00:00Z"},
		{"TIMESTAMPTZ", " 2024-07-01 23:59:59.5 "},
		{"TIMESTAMPTZ", "0044-03-15 12:00:00 (BC)"},
		{"TIMETZ", "10:00:00"},
		{"TIMETZ", "10:00:00+05:30"},
		{"TIMETZ", "23:59:59.999999"},
	}
	for i, tc := range cases {
		name := fmt.Sprintf("c%d", i)
		a, err := catalog.ParseAlteration([]string{"add", "column", name, tc.typ, "DEFAULT", "'" + tc.text + "'"})
		if err != nil {
			t.Fatal(err)
		}
		var want string
		castErr := e.DB().QueryRowContext(ctx, fmt.Sprintf("SELECT CAST('%s' AS %s)::VARCHAR", tc.text, tc.typ)).Scan(&want)
		tx, _ := c.Begin()
		tx.AlterTable("t", a)
		_, err = tx.Commit()
		switch {
		case castErr != nil && err == nil:
			t.Errorf("DEFAULT '%s' on %s taken; DuckDB refuses the cast: %v", tc.text, tc.typ, castErr)
			continue
		case castErr != nil:
			continue
		case err != nil:
			t.Errorf("DEFAULT '%s' on %s: %v", tc.text, tc.typ, err)
			continue
		}
		res, err := e.Query(ctx, fmt.Sprintf("SELECT %s::VARCHAR FROM t", name), QueryOptions{Snapshot: catalog.Latest})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if got := rowsText(res.Rows); got != want+"|;" {
			t.Errorf("DEFAULT '%s' on %s reads %s, DuckDB casts it to %s", tc.text, tc.typ, got, want)
		}
	}
}
