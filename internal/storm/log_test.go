package storm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A log read back holds every whole line; a last line cut short (its
// writer killed mid-write) is dropped, a damaged line before it is an
// error.
func TestReadLogDropsOnlyACutLastLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.jsonl")
	lg, err := createLog(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []entry{{Ev: evStart, Table: "t", Files: 3}, {Ev: evPending, Seq: 1}, {Ev: evAck, Seq: 1, Snap: 7}} {
		if err := lg.put(e); err != nil {
			t.Fatal(err)
		}
	}
	lg.close()
	whole, _ := os.ReadFile(path)
	for _, c := range []struct {
		name, text string
		want       int
		fails      bool
	}{
		{"whole", string(whole), 3, false},
		{"cut", string(whole) + `{"t":1,"ev":"pen`, 3, false},
		{"damaged", strings.Replace(string(whole), `"ev":"pending"`, `"ev":pending"`, 1), 0, true},
	} {
		if err := os.WriteFile(path, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := readLog(path)
		if (err != nil) != c.fails || len(got) != c.want {
			t.Errorf("%s: %d entries, error %v; want %d, failing %v", c.name, len(got), err, c.want, c.fails)
		}
		if c.want == 3 && (got[2].Ev != evAck || got[2].Snap != 7 || got[0].Table != "t") {
			t.Errorf("%s: read back %+v", c.name, got)
		}
	}
}

func TestPathsRoundTrip(t *testing.T) {
	for _, c := range []struct {
		id  int
		seq int64
		j   int
	}{{0, 1, 0}, {7, 123456, 3}, {104, 9, 11}} {
		p := filePath(c.id, c.seq, c.j)
		id, seq, j, ok := parsePath(p)
		if !ok || id != c.id || seq != c.seq || j != c.j {
			t.Errorf("%s parsed as %d %d %d %v", p, id, seq, j, ok)
		}
	}
	for _, p := range []string{"/storm/w1/c2/f3.parquet.bak", "/storm/w1/c2/f3", "/d/a", "/storm/w01/c2/f3.parquet"} {
		if _, _, _, ok := parsePath(p); ok {
			t.Errorf("%s parsed as a storm path", p)
		}
	}
}
