package maintain

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/rocklake/rocklake/catalog"
	"github.com/rocklake/rocklake/engine"
	"github.com/rocklake/rocklake/ingest"
	"github.com/rocklake/rocklake/internal/pqwrite"
	"github.com/rocklake/rocklake/kv/kvtest"
	"github.com/rocklake/rocklake/types"
)

// lieAboutColumnMax rewrites a file's footer so that column col's max in
// row group rg is max, although larger values are present.
func lieAboutColumnMax(t *testing.T, path string, rg, col int, max int64) {
	t.Helper()
	raw := mustRead(t, path)
	flen := int(binary.LittleEndian.Uint32(raw[len(raw)-8:]))
	md, err := metadata.NewFileMetaData(raw[len(raw)-8-flen:len(raw)-8], nil)
	if err != nil {
		t.Fatal(err)
	}
	st := md.FileMetaData.RowGroups[rg].Columns[col].MetaData.Statistics
	b := binary.LittleEndian.AppendUint64(nil, uint64(max))
	st.MaxValue, st.Max = b, b
	footer, err := md.Serialize(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	out.Write(raw[:len(raw)-8-flen])
	out.Write(footer)
	_ = binary.Write(&out, binary.LittleEndian, uint32(len(footer)))
	out.WriteString("PAR1")
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// verify --deep over a wide file whose column names are the ones DuckDB
// itself uses (file_row_number, filename, rowid) and SQL words: a sound
// file has no problem, and a lying row-group bound in a column past the
// first query's chunk of columns is found.
func TestVerifyWideOddNames(t *testing.T) {
	dir := t.TempDir()
	names := []string{"filename", "rowid", "select", "d", "u", "unit", "start_row", `we"ird`, "Mixed Case"}
	for len(names) < 2*verifyChunk+10 {
		names = append(names, fmt.Sprintf("c%d", len(names)))
	}
	const rows, rg = 120, 40
	var cols []pqwrite.Column
	for j, name := range names {
		vals := make([]*types.Value, rows)
		for i := range vals {
			v := types.IntValue(int64(i + j))
			vals[i] = &v
		}
		cols = append(cols, pqwrite.Column{Name: name, Type: types.MustParseType("int64"), Values: vals})
	}
	good, liar := filepath.Join(dir, "good.parquet"), filepath.Join(dir, "liar.parquet")
	for _, p := range []string{good, liar} {
		if err := pqwrite.Write(p, cols, pqwrite.Options{RowGroupRows: rg}); err != nil {
			t.Fatal(err)
		}
	}
	lied := verifyChunk + 5
	lieAboutColumnMax(t, liar, 1, lied, int64(50+lied)) // row group 1 holds 40+lied .. 79+lied
	c, _ := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	if _, err := ingest.Add(c, "t", []string{good, liar}, ingest.Options{Create: true}); err != nil {
		t.Fatal(err)
	}
	e, _ := engine.New(c)
	defer e.Close()
	start := time.Now()
	rep, err := Verify(context.Background(), e, "t", catalog.Latest, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d columns, 2 files: %d units checked in %v", len(names), rep.Units, time.Since(start))
	var found []string
	for _, p := range rep.Problems {
		found = append(found, filepath.Base(p.Path)+": "+p.What)
	}
	// The file-level max of the lying column is the max over its row
	// groups as the footer tells it, so the lie may also narrow it.
	for _, f := range found {
		if !strings.HasPrefix(f, "liar.parquet: column "+names[lied]+" ") {
			t.Fatalf("unexpected problem: %s\nall: %q", f, found)
		}
	}
	if !strings.Contains(strings.Join(found, "\n"), fmt.Sprintf("column %s row group 1: stored max %d excludes the value %d", names[lied], 50+lied, 79+lied)) {
		t.Fatalf("the lying row-group bound was not found: %q", found)
	}
}

// A column named file_row_number keeps DuckDB from numbering the file's
// rows: verify then checks the file's stats only, and reports no problem
// that is not there.
func TestVerifyFileRowNumberColumn(t *testing.T) {
	dir := t.TempDir()
	var cols []pqwrite.Column
	for _, name := range []string{"file_row_number", "x"} {
		vals := make([]*types.Value, 100)
		for i := range vals {
			v := types.IntValue(int64(i))
			vals[i] = &v
		}
		cols = append(cols, pqwrite.Column{Name: name, Type: types.MustParseType("int64"), Values: vals})
	}
	good, liar := filepath.Join(dir, "good.parquet"), filepath.Join(dir, "liar.parquet")
	for _, p := range []string{good, liar} {
		if err := pqwrite.Write(p, cols, pqwrite.Options{RowGroupRows: 1000}); err != nil {
			t.Fatal(err)
		}
	}
	lieAboutColumnMax(t, liar, 0, 1, 10)
	c, _ := catalog.CreateInStore(kvtest.Store(t), catalog.Options{})
	if _, err := ingest.Add(c, "t", []string{good, liar}, ingest.Options{Create: true}); err != nil {
		t.Fatal(err)
	}
	e, _ := engine.New(c)
	defer e.Close()
	rep, err := Verify(context.Background(), e, "t", catalog.Latest, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 1 || rep.Problems[0].Path != liar || !strings.Contains(rep.Problems[0].What, "column x file: stored max 10 excludes the value 99") {
		t.Fatalf("problems: %+v", rep.Problems)
	}
}
