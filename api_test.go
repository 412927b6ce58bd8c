package rocklake_test

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// apiFile records the root package's exported API, one declaration a
// line: the Go API rocklake promises to keep (docs/go-api.md).
const apiFile = "testdata/exported-api.txt"

// The exported API of package rocklake is what testdata/exported-api.txt
// records. A change fails here, naming each line added or removed: an
// addition is recorded by regenerating the file
// (ROCKLAKE_UPDATE_API=1 go test -run TestExportedAPIIsRecorded .); a
// removal or a changed signature breaks users' code, so the old name stays
// for a release, marked "// Deprecated: use X", before it goes.
func TestExportedAPIIsRecorded(t *testing.T) {
	got := exportedAPI(t, ".")
	if os.Getenv("ROCKLAKE_UPDATE_API") != "" {
		if err := os.MkdirAll(filepath.Dir(apiFile), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(apiFile, []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(apiFile)
	if err != nil {
		t.Fatalf("%v (make it with ROCKLAKE_UPDATE_API=1 go test -run TestExportedAPIIsRecorded .)", err)
	}
	want := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	for _, l := range want {
		if !slices.Contains(got, l) {
			t.Errorf("removed or changed (breaks users: keep it, marked // Deprecated:, for a release): %s", l)
		}
	}
	for _, l := range got {
		if !slices.Contains(want, l) {
			t.Errorf("added (record it: ROCKLAKE_UPDATE_API=1 go test -run TestExportedAPIIsRecorded .): %s", l)
		}
	}
}

// A deprecated name still works and says what replaces it.
func TestDeprecatedNamesSayTheirReplacement(t *testing.T) {
	fset := token.NewFileSet()
	for _, f := range packageFiles(t, fset, ".") {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Doc == nil || !fd.Name.IsExported() {
				continue
			}
			doc := fd.Doc.Text()
			if i := strings.Index(doc, "Deprecated:"); i >= 0 && !strings.Contains(doc[i:], "use ") {
				t.Errorf("%s is deprecated without naming its replacement: %q", fd.Name.Name, doc[i:])
			}
		}
	}
}

func packageFiles(t *testing.T, fset *token.FileSet, dir string) []*ast.File {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if f.Name.Name == "rocklake" {
			files = append(files, f)
		}
	}
	return files
}

// exportedAPI is every exported declaration of the package in dir, one
// line each, sorted: functions and methods of exported types with their
// signatures, types with their exported fields and methods, constants and
// variables with their declared types.
func exportedAPI(t *testing.T, dir string) []string {
	fset := token.NewFileSet()
	var out []string
	print := func(n any) string {
		var b bytes.Buffer
		if err := printer.Fprint(&b, fset, n); err != nil {
			t.Fatal(err)
		}
		return strings.Join(strings.Fields(b.String()), " ")
	}
	for _, f := range packageFiles(t, fset, dir) {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() || d.Recv != nil && !exportedRecv(d.Recv) {
					continue
				}
				fd := *d
				fd.Body, fd.Doc = nil, nil
				out = append(out, print(&fd))
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if !s.Name.IsExported() {
							continue
						}
						ts := *s
						ts.Doc, ts.Comment = nil, nil
						ts.Type = exportedOnly(ts.Type)
						out = append(out, "type "+print(&ts))
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if !n.IsExported() {
								continue
							}
							line := d.Tok.String() + " " + n.Name
							if s.Type != nil {
								line += " " + print(s.Type)
							}
							out = append(out, line)
						}
					}
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func exportedRecv(fl *ast.FieldList) bool {
	if len(fl.List) == 0 {
		return false
	}
	e := fl.List[0].Type
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	if ix, ok := e.(*ast.IndexExpr); ok {
		e = ix.X
	}
	id, ok := e.(*ast.Ident)
	return ok && id.IsExported()
}

// exportedOnly is a struct or interface type without its unexported
// fields and methods and without comments: what users can name.
func exportedOnly(e ast.Expr) ast.Expr {
	keep := func(fl *ast.FieldList) *ast.FieldList {
		if fl == nil {
			return nil
		}
		out := &ast.FieldList{}
		for _, f := range fl.List {
			g := *f
			g.Doc, g.Comment, g.Tag = nil, nil, f.Tag
			var names []*ast.Ident
			for _, n := range f.Names {
				if n.IsExported() {
					names = append(names, n)
				}
			}
			if len(f.Names) > 0 && len(names) == 0 {
				continue
			}
			g.Names = names
			out.List = append(out.List, &g)
		}
		return out
	}
	switch x := e.(type) {
	case *ast.StructType:
		return &ast.StructType{Fields: keep(x.Fields)}
	case *ast.InterfaceType:
		return &ast.InterfaceType{Methods: keep(x.Methods)}
	}
	return e
}
