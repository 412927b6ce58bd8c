package server_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The HTTP API answers what the CLI's JSON answers, in the CLI's versioned
// schema (cmd/rocklake/schema/output-v1.json): snapshots, the table list,
// a table's description, statistics (of every column, and of one column
// in every file) and errors, which include a query parameter a path does
// not take.
func TestHTTPSpeaksTheCLIsJSON(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "cmd", "rocklake", "schema", "output-v1.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	const url = "https://rocklake.invalid/schema/output-v1.json"
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	fx := newFixture(t, newConfig())
	for _, tc := range []struct {
		path, def string
		status    int
	}{
		{"/v1/snapshots", "snapshots", 200},
		{"/v1/tables", "table_list", 200},
		{"/v1/tables?snapshot=latest", "table_list", 200},
		{"/v1/tables/t", "table_describe", 200},
		{"/v1/tables/t/stats", "stats", 200},
		{"/v1/tables/t/stats?snapshot=latest&column=amount", "stats", 200},
		{"/v1/tables/t/stats?column=nosuch", "error", 400},
		{"/v1/tables/t/stats?colum=amount", "error", 400},
		{"/v1/tables/t/stats?column=id&column=amount", "error", 400},
		{"/v1/tables?snapshot=0&x=1", "error", 400},
		{"/v1/snapshots?snapshot=1", "error", 400},
		{"/v1/tables/nosuch/stats", "error", 404},
	} {
		status, body := httpCall(t, fx, "GET", tc.path, "")
		if status != tc.status {
			t.Errorf("GET %s: %d, want %d: %s", tc.path, status, tc.status, body)
			continue
		}
		sch, err := c.Compile(url + "#/$defs/" + tc.def)
		if err != nil {
			t.Fatal(err)
		}
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(string(body)))
		if err != nil {
			t.Errorf("GET %s: not JSON: %s", tc.path, body)
			continue
		}
		if err := sch.Validate(inst); err != nil {
			t.Errorf("GET %s does not follow the schema's %s: %v\n%s", tc.path, tc.def, err, body)
		}
		if tc.status == http.StatusOK && strings.Contains(tc.path, "column=amount") {
			var st struct {
				Columns []struct{ Column, Type string }
				Files   []struct{ Path string }
			}
			if err := json.Unmarshal(body, &st); err != nil || len(st.Columns) != 1 || st.Columns[0].Type != "DECIMAL(10,2)" || len(st.Files) == 0 {
				t.Errorf("GET %s: want amount alone, typed as DuckDB names it, and its statistics in every file: %v %s", tc.path, err, body)
			}
		}
	}
	// Text as it is: <, > and & not escaped, in answers and errors.
	for _, body := range []string{`{"predicate": "id < 5 AND name <> 'a&b'"}`, `{"predicate": "nosuch < 5"}`} {
		_, got := httpCall(t, fx, "POST", "/v1/tables/t/plan", body)
		if strings.Contains(string(got), `\u00`) || !strings.Contains(string(got), "< 5") {
			t.Errorf("POST /v1/tables/t/plan %s: escaped or lost <, > or &: %s", body, got)
		}
	}
}
