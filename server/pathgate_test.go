package server_test

import (
	"encoding/json"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/rocklake/rocklake/internal/pathgate/gatetest"
)

// POST /v1/tables/{t}/files registers only files the server's engine may
// read, judged after links are resolved; a refusal is a 400 that commits
// nothing, and queries keep working for every client.
func TestHTTPAddThroughTheGate(t *testing.T) {
	f := newFixture(t, newConfig())
	db := openDuck(t)
	n := 1000
	write := func(t *testing.T, p string) {
		writeFile(t, db, p, n, n+10)
		n += 10
	}
	for _, tc := range gatetest.Cases(t, f.data, write) {
		_, before := httpCall(t, f, "GET", "/v1/snapshots", "")
		body, _ := json.Marshal(map[string]any{"paths": []string{tc.Arg}})
		status, resp := httpCall(t, f, "POST", "/v1/tables/t/files", string(body))
		switch {
		case tc.Admit && status != 200:
			t.Errorf("%s (%s): %d %s", tc.Name, tc.Arg, status, resp)
		case !tc.Admit && status != 400:
			t.Errorf("%s (%s): %d %s, want 400", tc.Name, tc.Arg, status, resp)
		case !tc.Admit:
			if _, after := httpCall(t, f, "GET", "/v1/snapshots", ""); string(after) != string(before) {
				t.Errorf("%s: refused but committed", tc.Name)
			}
		}
	}
	c := f.connect(t, pgx.QueryExecModeSimpleProtocol)
	var count int64
	if err := c.QueryRow(t.Context(), "SELECT count(*) FROM t").Scan(&count); err != nil {
		t.Fatalf("a query after the refusals: %v", err)
	}
}
