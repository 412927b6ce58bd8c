package maintain

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/kv/kvtest"
)

// writeLake is an empty catalog with a data root, and its engine.
func writeLake(t *testing.T) (string, *catalog.Catalog, *engine.Engine) {
	t.Helper()
	root := t.TempDir()
	c, err := catalog.CreateInStore(kvtest.Store(t), catalog.Options{DataRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return root, c, e
}

func mustWrite(t *testing.T, e *engine.Engine, q string) *WriteResult {
	t.Helper()
	res, err := Write(context.Background(), e, q, WriteOptions{Query: engine.QueryOptions{Snapshot: catalog.Latest}})
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return res
}

func TestWriteSmoke(t *testing.T) {
	root, _, e := writeLake(t)
	mustWrite(t, e, "CREATE TABLE t (id BIGINT NOT NULL, name VARCHAR, v DOUBLE)")
	if r := mustWrite(t, e, "INSERT INTO t VALUES (1, 'a', 1.5), (2, NULL, -0.0), (3, 'c', 'NaN')"); r.Rows != 3 || r.Files != 1 {
		t.Fatalf("insert: %+v", r)
	}
	mustWrite(t, e, "INSERT INTO t (name, id) SELECT 'x' || i, i FROM range(10, 20) r(i)")
	mustWrite(t, e, "INSERT INTO t BY NAME SELECT 99 AS id")
	mustWrite(t, e, "CREATE TABLE u AS SELECT id * 2 AS id2, name FROM t WHERE id < 12")
	csv := filepath.Join(t.TempDir(), "in.csv")
	os.WriteFile(csv, []byte("id,name,v\n100,p,0.5\n101,q,\n"), 0o644)
	mustWrite(t, e, "COPY t FROM '"+csv+"' (FORMAT csv, HEADER)")
	got := answerOf(t, e, catalog.Latest, "SELECT count(*), count(name), sum(id), count(v) FROM t")
	if got != "16|14|451|4" {
		t.Fatalf("t: %s", got)
	}
	if got := answerOf(t, e, catalog.Latest, "SELECT string_agg(id2::VARCHAR || ':' || coalesce(name, '-'), ',' ORDER BY id2) FROM u"); got != "2:a,4:-,6:c,20:x10,22:x11" {
		t.Fatalf("u: %s", got)
	}
	if _, err := Write(context.Background(), e, "INSERT INTO t (name) VALUES ('no id')", WriteOptions{Query: engine.QueryOptions{Snapshot: catalog.Latest}}); err == nil || !strings.Contains(err.Error(), "t.id") {
		t.Fatalf("NOT NULL: %v", err)
	}
	t.Log(root)
}
