// Package baseline builds the small Go programs that rocklake's processes
// are measured against. They are written to a module of their own whose
// go.mod is rocklake's, so that they link exactly rocklake's duckdb-go:
// there is no DuckDB CLI to compare with, and one of another version
// would measure a different DuckDB.
package baseline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// SelectOneSrc opens an in-memory DuckDB, runs SELECT 1 and exits: the
// least a process using DuckDB pays.
const SelectOneSrc = `package main

import (
	"database/sql"
	"fmt"
	"os"

	_ "github.com/duckdb/duckdb-go/v2"
)

func main() {
	db, err := sql.Open("duckdb", "")
	if err == nil {
		var n int
		if err = db.QueryRow("SELECT 1").Scan(&n); err == nil {
			err = db.Close()
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
`

// RunSQLSrc opens an in-memory DuckDB, runs the SELECT given as its
// argument and prints the result as CSV, a header and then every value
// in DuckDB's text form (as rocklake query --format csv prints it), so
// that the two can be compared.
const RunSQLSrc = `package main

import (
	"database/sql"
	"encoding/csv"
	"fmt"
	"os"

	_ "github.com/duckdb/duckdb-go/v2"
)

func main() {
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(query string) error {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return err
	}
	defer db.Close()
	// DuckDB casts, not Go: a DECIMAL prints with its scale, as DuckDB
	// itself would print it.
	rows, err := db.Query("SELECT COLUMNS(*)::VARCHAR FROM (" + query + ")")
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	w := csv.NewWriter(os.Stdout)
	w.Write(cols)
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	rec := make([]string, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		for i, v := range vals {
			rec[i] = v.String
		}
		w.Write(rec)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	w.Flush()
	return w.Error()
}
`

// Build writes files (path in the module: source) into a module at dir,
// with rocklake's go.mod and go.sum from root renamed to module baseline,
// and builds each main package pkgs names (the key: its directory in the
// module) to the value's path.
func Build(root, dir string, files, pkgs map[string]string) {
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		log.Fatal(err)
	}
	gomod = bytes.Replace(gomod, []byte("module rocklake\n"), []byte("module baseline\n"), 1)
	gosum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		log.Fatal(err)
	}
	all := map[string][]byte{"go.mod": gomod, "go.sum": gosum}
	for name, src := range files {
		all[name] = []byte(src)
	}
	for name, b := range all {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			log.Fatal(err)
		}
	}
	for pkg, out := range pkgs {
		GoBuild(dir, out, pkg)
	}
}

// Rocklake is the rocklake binary a bench runs: bin when given, else one
// built from this module into dir. It returns an error only where the
// module cannot be found (a build that fails ends the bench, as GoBuild's).
func Rocklake(bin, dir string) (string, error) {
	if bin != "" {
		return bin, nil
	}
	mod, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "rocklake")
	GoBuild(mod, out, "./cmd/rocklake")
	return out, nil
}

// GoBuild runs go build in dir; -mod=mod lets the baseline module leave
// unused requirements in its go.mod.
func GoBuild(dir, out, pkg string) {
	goBuild(dir, out, pkg, "-mod=mod")
}

func goBuild(dir, out, pkg string, flags ...string) {
	fmt.Printf("building %s\n", out)
	args := append(append([]string{"build"}, flags...), "-o", out, pkg)
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		log.Fatalf("go build %s: %v", pkg, err)
	}
}

// Imports lists the packages that the package pkg (a path relative to the
// module at root, such as ./cmd/rocklake) imports directly, standard
// library included.
func Imports(root, pkg string) []string {
	cmd := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, pkg)
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		log.Fatalf("go list %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

// WithImports is src, a program of this package's shape (one import
// block), with a blank import added for each of pkgs it does not import
// already: the same program, linking and initialising every package pkgs
// names (and all they import) before main, as a program importing them
// for use would.
func WithImports(src string, pkgs []string) string {
	var b strings.Builder
	for _, p := range pkgs {
		if !strings.Contains(src, `"`+p+`"`) {
			fmt.Fprintf(&b, "\t_ %q\n", p)
		}
	}
	i := strings.Index(src, "import (\n")
	if i < 0 {
		log.Fatal("baseline.WithImports: the program has no import block")
	}
	i += len("import (\n")
	return src[:i] + b.String() + "\n" + src[i:]
}

// BuildInModule builds src as the main package in the directory rel of
// the module at root (which must not exist), to out. No file is written
// into the module: go build reads src through an overlay (-overlay), so
// the program may import the module's packages, internal ones too (rel
// decides which), at exactly the module's versions.
func BuildInModule(root, rel, src, out string) {
	tmp, err := os.MkdirTemp("", "rocklake-baseline-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	if _, err := os.Stat(filepath.Join(root, rel)); err == nil {
		log.Fatalf("baseline.BuildInModule: %s exists in the module", rel)
	}
	srcPath := filepath.Join(tmp, "main.go")
	if err := os.WriteFile(srcPath, []byte(src), 0o644); err != nil {
		log.Fatal(err)
	}
	overlay, err := json.Marshal(map[string]map[string]string{
		"Replace": {filepath.Join(root, rel, "main.go"): srcPath},
	})
	if err != nil {
		log.Fatal(err)
	}
	overlayPath := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(overlayPath, overlay, 0o644); err != nil {
		log.Fatal(err)
	}
	goBuild(root, out, "./"+filepath.ToSlash(rel), "-overlay", overlayPath)
}

// ModuleRoot is the directory of the go.mod of the module the command runs
// in, which must be rocklake's.
func ModuleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", err
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("run this inside the rocklake module")
	}
	return filepath.Dir(gomod), nil
}

// FreshCopy copies the binary at src into dir (under name) and returns the
// copy's path. Benches time every binary from a copy written in the same
// run: a binary file written long before runs measurably slower than a
// freshly written copy of the same bytes (about 3 ms per process here, in
// `bench/startup -compare copy=...`), which would be charged to the older
// build.
func FreshCopy(src, dir, name string) string {
	b, err := os.ReadFile(src)
	if err != nil {
		log.Fatalf("copying %s: %v", src, err)
	}
	dst := filepath.Join(dir, name)
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		log.Fatalf("copying %s: %v", src, err)
	}
	return dst
}

// BuildFloor builds src, a program of this package's shape, with a blank
// import added of every package cmd/rocklake imports (Imports, so the list
// follows the command; WithImports), to out: the floor, a program that
// pays every package initialisation rocklake pays and loads a binary of
// rocklake's dependencies, then does only what src does. It is built
// inside rocklake's module (BuildInModule) as if it were the package
// cmd/rocklake/internal/NAME, so that it may import cmd/rocklake's
// internal packages too; name must be new there.
func BuildFloor(root, name, src, out string) {
	BuildInModule(root, "cmd/rocklake/internal/"+name, WithImports(src, Imports(root, "./cmd/rocklake")), out)
}
