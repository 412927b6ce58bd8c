package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/types"
)

func writeInts(t *testing.T, path string, vals ...int64) {
	t.Helper()
	var col []*types.Value
	for _, v := range vals {
		x := types.IntValue(v)
		col = append(col, &x)
	}
	if err := pqwrite.Write(path, []pqwrite.Column{{Name: "x", Type: types.MustParseType("int64"), Values: col}}, pqwrite.Options{}); err != nil {
		t.Fatal(err)
	}
}

// intTable is a catalog (in memory) holding table t of one file of x
// values, written under dir, and an engine over it.
func intTable(t *testing.T, dir string, vals ...int64) (*catalog.Catalog, *Engine) {
	t.Helper()
	file := filepath.Join(dir, "a.parquet")
	writeInts(t, file, vals...)
	c, _ := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	if _, err := ingest.Add(c, "t", []string{file}, ingest.Options{Create: true}); err != nil {
		t.Fatal(err)
	}
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return c, e
}

// A sandboxed engine answers queries over the catalog's files and refuses
// every way a client's SQL could reach other files, write files, attach
// databases, load extensions or change settings — checked by effect (no
// file read or written), not only by the error.
func TestSandboxRefusesEscapes(t *testing.T) {
	root := t.TempDir()
	data := filepath.Join(root, "data")
	// A sibling whose name extends data's: a prefix match without the
	// separator would let it through.
	data2 := filepath.Join(root, "data2")
	for _, d := range []string{data, data2} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeInts(t, filepath.Join(data, "a.parquet"), 1, 2, 3)
	secret := filepath.Join(data2, "secret.parquet")
	writeInts(t, secret, 42)
	if err := os.WriteFile(filepath.Join(root, "passwd"), []byte("root:x:0:0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, _ := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	if _, err := ingest.Add(c, "t", []string{filepath.Join(data, "a.parquet")}, ingest.Options{Create: true}); err != nil {
		t.Fatal(err)
	}
	// The second table's files live in data2: with the sandbox on data
	// only, even a catalog table outside it cannot be read.
	if _, err := ingest.Add(c, "s", []string{secret}, ingest.Options{Create: true}); err != nil {
		t.Fatal(err)
	}
	e, err := NewWithOptions(c, Options{Sandbox: &Sandbox{Dirs: []string{data}}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	latest := QueryOptions{Snapshot: catalog.Latest, NoMetadataAnswers: true}
	res, err := e.Query(ctx, "SELECT sum(x) FROM t WHERE x > 1", latest)
	if err != nil {
		t.Fatalf("query inside the sandbox: %v", err)
	}
	if got := *res.Rows[0][0]; got != "5" {
		t.Fatalf("sum = %s, want 5", got)
	}
	// The second database (for unions of differing types) is locked too.
	mixed, err := e.mixedDB()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mixed.Exec("SET memory_limit = '1GB'"); err == nil {
		t.Error("the second DuckDB accepted SET after the lockdown")
	}
	out := filepath.Join(data, "out.parquet")
	for _, q := range []string{
		"SELECT * FROM read_csv('" + filepath.Join(root, "passwd") + "')",
		"SELECT * FROM read_text('/etc/hostname')",
		"SELECT * FROM read_blob('" + filepath.Join(root, "passwd") + "')",
		"SELECT * FROM read_parquet('" + secret + "')",
		"SELECT * FROM read_parquet('" + data + "/../data2/secret.parquet')",
		"SELECT * FROM glob('" + root + "/*')",
		"SELECT * FROM parquet_metadata('" + secret + "')",
		"SELECT * FROM s",
		"COPY (SELECT 1 AS a) TO '" + out + "'",
		"COPY t TO '" + out + "'",
		"SELECT * FROM query('COPY (SELECT 1 AS a) TO ''" + out + "''')",
		"ATTACH '" + filepath.Join(data, "x.db") + "' AS x",
		"SELECT * FROM query('ATTACH ''" + filepath.Join(data, "y.db") + "''')",
		"INSTALL httpfs",
		"LOAD httpfs",
		"SET enable_external_access = true",
		"SET lock_configuration = false",
		"PRAGMA enable_external_access",
		"SELECT * FROM duckdb_secrets()",
		"CREATE TABLE z AS SELECT 1",
	} {
		res, err := e.Query(ctx, q, latest)
		if err == nil {
			t.Errorf("%s: answered %v, want an error", q, res.Rows)
			continue
		}
		if errors.Is(err, ErrNotAQuery) {
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, "Permission Error") && !strings.Contains(msg, "Expected a single SELECT statement") &&
			!strings.Contains(msg, "no such table") && !strings.Contains(msg, "disabled by configuration") {
			t.Errorf("%s: refused for an unexpected reason: %v", q, err)
		}
	}
	for _, f := range []string{out, filepath.Join(data, "x.db"), filepath.Join(data, "y.db")} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("%s was written", f)
		}
	}
	// Nothing above changed a setting: external access is still off.
	var got string
	if err := e.DB().QueryRowContext(ctx, "SELECT current_setting('enable_external_access')::VARCHAR").Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != "false" {
		t.Errorf("enable_external_access = %s after the escapes", got)
	}
}
