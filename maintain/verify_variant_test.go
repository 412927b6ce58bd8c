package maintain

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/kv/kvtest"
)

func TestVariantFields(t *testing.T) {
	for in, want := range map[string]string{`root`: ``, `"a"`: `a`, `"a"."b"`: `a|b`, `"a.b"`: `a.b`, `"we""ird"."x"`: `we"ird|x`} {
		got, ok := variantFields(in)
		if !ok || strings.Join(got, "|") != want {
			t.Errorf("%s: %q %v", in, got, ok)
		}
	}
	for _, in := range []string{`element`, `"a".element`, `"a`, `"a"b`, `a`} {
		if _, ok := variantFields(in); ok {
			t.Errorf("%s: read as fields", in)
		}
	}
}

// verify --deep checks VARIANT sub-field stats against what DuckDB reads
// as the sub-field: a footer that lies about a shredded leaf's max is
// reported for the file and its row group.
func TestVerifyVariantStats(t *testing.T) {
	dir := t.TempDir()
	good, liar := filepath.Join(dir, "good.parquet"), filepath.Join(dir, "liar.parquet")
	c, _ := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	e, _ := engine.New(c)
	defer e.Close()
	for _, p := range []string{good, liar} {
		q := `COPY (SELECT CASE WHEN i % 10 = 0 THEN {'b': 'x'}::VARIANT ELSE {'a': i, 'b': 'y'}::VARIANT END AS v FROM range(100) r(i)) TO '` + p + `' (FORMAT parquet)`
		if _, err := e.DB().Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	// Leaves: metadata, value, then per field value and typed_value; the
	// fields are written in name order.
	lieAboutColumnMax(t, liar, 0, 3, 20)
	if _, err := ingest.Add(c, "t", []string{good, liar}, ingest.Options{Create: true}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rep, err := Verify(ctx, e, "t", catalog.Latest, true)
	if err != nil {
		t.Fatal(err)
	}
	var whats []string
	for _, p := range rep.Problems {
		whats = append(whats, filepath.Base(p.Path)+": "+p.What)
	}
	got := strings.Join(whats, "\n")
	if len(rep.Problems) != 2 || !strings.Contains(got, `liar.parquet: variant v."a" file: stored max 20 excludes the value 99`) ||
		!strings.Contains(got, `liar.parquet: variant v."a" row group 0: stored max 20 excludes the value 99`) {
		t.Fatalf("deep verify of a lying variant leaf:\n%s", got)
	}
	if rep.Units < 8 {
		t.Fatalf("units checked: %d", rep.Units)
	}
}

// verify --deep checks GEOMETRY extents against DuckDB's extent test: a
// file rewritten in place with the same size and time but geometries
// elsewhere is reported, for the file and its row group.
func TestVerifyExtents(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.parquet"), filepath.Join(dir, "b.parquet")
	c, _ := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	e, _ := engine.New(c)
	defer e.Close()
	for p, at := range map[string]int{a: 1000, b: 2000} {
		q := fmt.Sprintf(`COPY (SELECT CASE WHEN i %% 9 = 0 THEN NULL WHEN i %% 7 = 0 THEN 'POINT EMPTY'::GEOMETRY ELSE ('POINT(' || (i + %d) || ' ' || (i + 5000) || ')')::GEOMETRY END AS g FROM range(100) r(i)) TO '%s' (FORMAT parquet, COMPRESSION 'uncompressed')`, at, p)
		if _, err := e.DB().Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ingest.Add(c, "t", []string{a}, ingest.Options{Create: true}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rep, err := Verify(ctx, e, "t", catalog.Latest, true)
	if err != nil || len(rep.Problems) != 0 || rep.Units < 2 {
		t.Fatalf("verify of a true extent: %+v %v", rep, err)
	}
	ia, _ := os.Stat(a)
	data := mustRead(t, b)
	if int64(len(data)) != ia.Size() {
		t.Skipf("the two files differ in size (%d, %d)", len(data), ia.Size())
	}
	if err := os.WriteFile(a, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(a, ia.ModTime(), ia.ModTime()); err != nil {
		t.Fatal(err)
	}
	rep, err = Verify(ctx, e, "t", catalog.Latest, true)
	if err != nil {
		t.Fatal(err)
	}
	var whats []string
	for _, p := range rep.Problems {
		whats = append(whats, p.What)
	}
	got := strings.Join(whats, "\n")
	if !strings.Contains(got, "column g file: stored extent") || !strings.Contains(got, "column g row group 0: stored extent") {
		t.Fatalf("verify of a wrong extent:\n%s", got)
	}
}
