package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rocklake/rocklake"
	"github.com/rocklake/rocklake/internal/pgtest"
)

func httpCall(t *testing.T, f *fixture, method, path, body string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, "http://"+f.srv.HTTPAddr().String()+path, strings.NewReader(body))
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// The plan API gives what `rocklake plan --format json` gives (the same
// planner, the same shape), and its pages put together are the whole plan.
func TestHTTPPlanMatchesPlan(t *testing.T) {
	f := newFixture(t, newConfig())
	ctx := context.Background()
	for _, pred := range []string{"id < 150", "name = 'n250'", "ts >= TIMESTAMPTZ '2024-01-01 04:00:00+00'", "true", "id > 1000"} {
		want, err := f.lake.Plan(ctx, "t", pred, rocklake.PlanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		wantJSON, _ := json.Marshal(want)
		body, _ := json.Marshal(map[string]any{"predicate": pred})
		status, got := httpCall(t, f, "POST", "/v1/tables/t/plan", string(body))
		if status != 200 {
			t.Fatalf("%s: %d %s", pred, status, got)
		}
		var a, b map[string]any
		json.Unmarshal(wantJSON, &a)
		json.Unmarshal(got, &b)
		delete(b, "next_page_token")
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s:\nHTTP %s\nplan %s", pred, got, wantJSON)
		}
		// Page by page, one file at a time.
		var files []any
		token := ""
		for range 10 {
			body, _ := json.Marshal(map[string]any{"predicate": pred, "page_size": 1, "page_token": token})
			_, page := httpCall(t, f, "POST", "/v1/tables/t/plan", string(body))
			var p map[string]any
			json.Unmarshal(page, &p)
			files = append(files, p["kept_files"].([]any)...)
			token, _ = p["next_page_token"].(string)
			if token == "" {
				break
			}
		}
		if files == nil {
			files = []any{}
		}
		if !reflect.DeepEqual(files, a["kept_files"]) {
			t.Errorf("%s: pages gave %v, the plan %v", pred, files, a["kept_files"])
		}
	}
	for _, tc := range []struct {
		method, path, body string
		status             int
	}{
		{"POST", "/v1/tables/nope/plan", `{"predicate": "id = 1"}`, 404},
		{"POST", "/v1/tables/t/plan", `{"predicate": "id = = 1"}`, 400},
		{"POST", "/v1/tables/t/plan", `{"predicate": "nosuch = 1"}`, 400},
		{"POST", "/v1/tables/t/plan", `{"predicat": "id = 1"}`, 400},
		{"POST", "/v1/tables/t/plan", `{"page_token": "x"}`, 400},
		{"GET", "/v1/tables", "", 200},
		{"GET", "/v1/tables/t", "", 200},
		{"GET", "/v1/tables/t/stats", "", 200},
		{"GET", "/v1/tables/t/stats?snapshot=0", "", 404},
		{"GET", "/v1/tables/t?snapshot=x", "", 400},
		{"GET", "/v1/snapshots", "", 200},
		{"GET", "/readyz", "", 200},
		{"POST", "/v1/tables/t/files", `{"paths": ["relative.parquet"]}`, 400},
		{"POST", "/v1/tables/t/files", `{"paths": ["/etc/hostname"]}`, 400},
		{"POST", "/v1/tables/t/files", `{"paths": []}`, 400},
	} {
		if status, body := httpCall(t, f, tc.method, tc.path, tc.body); status != tc.status {
			t.Errorf("%s %s %s: %d %s, want %d", tc.method, tc.path, tc.body, status, body, tc.status)
		}
	}
	_, stats := httpCall(t, f, "GET", "/v1/tables/t/stats", "")
	var st struct {
		Rows    int64 `json:"rows"`
		Files   int64 `json:"file_count"`
		Columns []struct {
			Column string  `json:"column"`
			Min    *string `json:"min"`
			Max    *string `json:"max"`
		} `json:"columns"`
	}
	if err := json.Unmarshal(stats, &st); err != nil || st.Rows != 300 || st.Files != 3 || st.Columns[0].Column != "id" ||
		*st.Columns[0].Min != "0" || *st.Columns[0].Max != "299" {
		t.Errorf("stats: %s %v", stats, err)
	}
	_, metrics := httpCall(t, f, "GET", "/metrics", "")
	for _, m := range []string{"rocklake_plans_total", "rocklake_http_requests_total", "rocklake_query_seconds"} {
		if !strings.Contains(string(metrics), m) {
			t.Errorf("/metrics has no %s", m)
		}
	}
}

// BEGIN pins the snapshot: a file added meanwhile shows only after
// COMMIT.
func TestTransactionBlockReadsOneSnapshot(t *testing.T) {
	f := newFixture(t, newConfig())
	ctx := context.Background()
	c := f.connect(t, pgx.QueryExecModeCacheStatement)
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	count := func(q interface {
		QueryRow(context.Context, string, ...any) pgx.Row
	}) int {
		var n int
		if err := q.QueryRow(ctx, "SELECT count(*) FROM t WHERE id >= $1", 0).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(tx); n != 300 {
		t.Fatalf("count = %d", n)
	}
	extra := filepath.Join(f.data, "extra.parquet")
	writeFile(t, openDuck(t), extra, 300, 400)
	if status, body := httpCall(t, f, "POST", "/v1/tables/t/files", `{"paths": ["`+extra+`"]}`); status != 200 {
		t.Fatalf("add: %d %s", status, body)
	}
	if n := count(tx); n != 300 {
		t.Errorf("inside the block after an add: %d, want 300", n)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(c); n != 400 {
		t.Errorf("after COMMIT: %d, want 400", n)
	}
}

// A path the API does not have and a method a path does not take answer
// in the API's error shape (the mux's Allow header kept), as every other
// error does; a path the mux cleans still redirects.
func TestHTTPMissesAreJSON(t *testing.T) {
	f := newFixture(t, newConfig())
	for _, tc := range []struct {
		method, path string
		status       int
		code, allow  string
	}{
		{"GET", "/v1/nothere", 404, "not_found", ""},
		{"GET", "/", 404, "not_found", ""},
		{"DELETE", "/v1/tables/t", 405, "method_not_allowed", "GET, HEAD"},
		{"GET", "/v1/tables/t/plan", 405, "method_not_allowed", "POST"},
		{"PUT", "/v1/sql", 405, "method_not_allowed", "POST"},
	} {
		req, _ := http.NewRequest(tc.method, "http://"+f.srv.HTTPAddr().String()+tc.path, nil)
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		if err := json.Unmarshal(b, &e); err != nil || resp.StatusCode != tc.status || e.Error.Code != tc.code || e.Error.Message == "" ||
			resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("Allow") != tc.allow {
			t.Errorf("%s %s: %d %q %q (Allow %q), want %d %s (Allow %q)", tc.method, tc.path, resp.StatusCode, resp.Header.Get("Content-Type"), b, resp.Header.Get("Allow"), tc.status, tc.code, tc.allow)
		}
	}
	client := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get("http://" + f.srv.HTTPAddr().String() + "/v1//tables")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 3 || resp.Header.Get("Location") != "/v1/tables" {
		t.Errorf("an unclean path: %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
}

// GET /v1/snapshots speaks the CLI's JSON (`rocklake snapshots --format
// json`): snake_case names and every change list present, empty not null.
func TestHTTPSnapshotsJSON(t *testing.T) {
	f := newFixture(t, newConfig())
	status, body := httpCall(t, f, "GET", "/v1/snapshots", "")
	var out struct {
		Snapshots []map[string]any `json:"snapshots"`
	}
	if err := json.Unmarshal(body, &out); err != nil || status != 200 || len(out.Snapshots) == 0 {
		t.Fatalf("%d %s %v", status, body, err)
	}
	for _, s := range out.Snapshots {
		for _, k := range []string{"snapshot_id", "time", "schema_version", "next_catalog_id", "next_file_id", "changes"} {
			if _, ok := s[k]; !ok {
				t.Errorf("no %q in %v", k, s)
			}
		}
		ch, _ := s["changes"].(map[string]any)
		for _, k := range []string{"created_schemas", "created_tables", "dropped_tables", "inserted_into_tables", "deleted_from_tables", "created_names", "renamed_tables", "altered_tables", "restamped_tables"} {
			if l, ok := ch[k].([]any); !ok || l == nil {
				t.Errorf("changes.%s is %v in %s", k, ch[k], body)
			}
		}
	}
}

// The HTTP API's table description and the PostgreSQL protocol's DESCRIBE
// name each column's type as DuckDB does: what typeof() gives for it.
func TestTypeNamesAreDuckDBs(t *testing.T) {
	f := newFixture(t, newConfig())
	conn := f.connect(t, pgx.QueryExecModeSimpleProtocol)
	ctx := context.Background()
	status, body := httpCall(t, f, "GET", "/v1/tables/t", "")
	if status != 200 {
		t.Fatalf("GET /v1/tables/t: %d %s", status, body)
	}
	var described struct {
		Columns []struct{ Name, Type string }
	}
	if err := json.Unmarshal(body, &described); err != nil {
		t.Fatal(err)
	}
	shown := map[string]string{}
	rows, err := conn.Query(ctx, "DESCRIBE t")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			t.Fatal(err)
		}
		shown[name] = typ
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	checked := 0
	for _, c := range described.Columns {
		if strings.Contains(c.Name, ".") {
			continue // a nested column's field
		}
		var duck string
		if err := conn.QueryRow(ctx, "SELECT typeof("+c.Name+") FROM t LIMIT 1").Scan(&duck); err != nil {
			t.Fatal(err)
		}
		if c.Type != duck {
			t.Errorf("GET /v1/tables/t: column %s shows type %q, DuckDB's name is %q", c.Name, c.Type, duck)
		}
		if shown[c.Name] != duck {
			t.Errorf("DESCRIBE t: column %s shows type %q, DuckDB's name is %q", c.Name, shown[c.Name], duck)
		}
		checked++
	}
	if checked < 5 {
		t.Fatalf("%d columns checked: %s", checked, body)
	}
}

// With CompactEvery the server compacts its catalog's store (here in
// PostgreSQL: VACUUM) on a schedule while clients query and commit, counts
// each run in /metrics, and stops at Shutdown.
func TestServerCompactsTheCatalog(t *testing.T) {
	cfg := newConfig()
	cfg.CompactEvery = 50 * time.Millisecond
	f := newFixtureAt(t, cfg, pgtest.URL(t))
	ctx := context.Background()
	c := f.connect(t, pgx.QueryExecModeSimpleProtocol)
	want := firstAnswer(t, c, "SELECT count(*) FROM t")
	addr := f.srv.HTTPAddr().String()
	var done float64
	for i := 0; done < 3 && i < 400; i++ {
		if _, err := c.Exec(ctx, fmt.Sprintf("CREATE TABLE k%d (x BIGINT)", i)); err != nil {
			t.Fatalf("a commit while the catalog is compacted: %v", err)
		}
		if got := firstAnswer(t, c, "SELECT count(*) FROM t"); got != want {
			t.Fatalf("a query while the catalog is compacted: %s rows, want %s", got, want)
		}
		var err error
		if done, err = scrape(addr, `rocklake_catalog_compactions_total{result="done"}`); err != nil {
			t.Fatal(err)
		}
	}
	if done < 3 {
		t.Fatalf("%v compactions ran", done)
	}
	if failed, _ := scrape(addr, `rocklake_catalog_compactions_total{result="failed"}`); failed != 0 {
		t.Fatalf("%v compactions failed", failed)
	}
}
