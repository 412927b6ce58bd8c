package layers

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/rocklake/rocklake"

// tableLayers parses the table of docs/architecture.md: "    N      name/
// text" starts layer N, "           name/   text" adds to it, deeper
// indentation names a sub-package of the row above, and continuation lines
// hold no name.
func tableLayers(t *testing.T, page string) map[string]int {
	t.Helper()
	f, err := os.Open(page)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	row := regexp.MustCompile(`^    (\d+)?( +)(\S+(?:/|\.go))(\s|$)`)
	out := map[string]int{}
	layer, in := -1, false
	var parent string
	parentIndent := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "    layer  package") {
			in = true
			continue
		}
		if !in {
			continue
		}
		if strings.TrimSpace(line) == "" {
			break
		}
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if m[1] != "" {
			layer, _ = strconv.Atoi(m[1])
		}
		indent := len(m[1]) + len(m[2])
		name := strings.TrimSuffix(m[3], "/")
		if name == "rocklake.go" {
			name = ""
		}
		switch {
		case parent != "" && indent > parentIndent:
			name = parent + "/" + name
		default:
			parent, parentIndent = name, indent
		}
		out[strings.TrimSuffix(module+"/"+name, "/")] = layer
	}
	if len(out) == 0 {
		t.Fatalf("no layer table found in %s", page)
	}
	return out
}

// layerOf finds a package's row: its own, or the nearest enclosing one
// (bench/ holds every bench program). The module's root row (rocklake.go)
// holds the root package only: a package of the module missing from the
// table is missing, not in the root's layer.
func layerOf(layers map[string]int, pkg string) (int, string, bool) {
	for p := pkg; ; {
		if l, ok := layers[p]; ok && (p != module || pkg == module) {
			return l, p, true
		}
		i := strings.LastIndex(p, "/")
		if i < 0 {
			return 0, "", false
		}
		p = p[:i]
	}
}

func TestImportsFollowTheArchitectureLayers(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	layers := tableLayers(t, filepath.Join(root, "docs", "architecture.md"))
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	pkgs := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := fields[0]
		pkgs++
		l, row, ok := layerOf(layers, pkg)
		if !ok {
			t.Errorf("%s is not in the layer table of docs/architecture.md", pkg)
			continue
		}
		for _, imp := range fields[1:] {
			if imp != module && !strings.HasPrefix(imp, module+"/") {
				continue
			}
			il, irow, ok := layerOf(layers, imp)
			switch {
			case !ok:
				t.Errorf("%s imports %s, which is not in the layer table of docs/architecture.md", pkg, imp)
			case irow == row || strings.HasPrefix(irow, row+"/") || strings.HasPrefix(row, irow+"/"):
				// its own row, a sub-package, or a sub-package's parent
			case il >= l:
				t.Errorf("%s (layer %d) imports %s (layer %d): imports go to lower layers only", pkg, l, imp, il)
			}
		}
	}
	t.Logf("%d packages checked against %d rows", pkgs, len(layers))
}
