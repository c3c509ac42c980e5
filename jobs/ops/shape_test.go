package ops_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// engines are the engine packages under jobs/ops.
var engines = []string{"inspect", "image", "pdf", "render", "office", "ocr", "aiready", "scan"}

// TestEngineShape holds every engine to the shape the package doc promises: a Config
// with Validate, DefaultConfig, New(Config) (*Engine, error), Specs, and an Engine with
// Check, Version, Run and Close.
func TestEngineShape(t *testing.T) {
	t.Parallel()
	for _, name := range engines {
		funcs, methods := declared(t, name)
		for _, f := range []string{"DefaultConfig", "New", "Specs"} {
			if !funcs[f] {
				t.Errorf("%s: no func %s", name, f)
			}
		}
		for _, m := range []string{"Config.Validate", "Engine.Check", "Engine.Version", "Engine.Run", "Engine.Close"} {
			if !methods[m] {
				t.Errorf("%s: no method %s", name, m)
			}
		}
	}
}

// declared lists the exported functions and methods (Type.Name) of an engine's
// non-test files.
func declared(t *testing.T, dir string) (funcs, methods map[string]bool) {
	t.Helper()
	pkgs, err := parser.ParseDir(token.NewFileSet(), dir, func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	funcs, methods = map[string]bool{}, map[string]bool{}
	for _, p := range pkgs {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || !fd.Name.IsExported() {
					continue
				}
				if fd.Recv == nil {
					funcs[fd.Name.Name] = true
					continue
				}
				typ := fd.Recv.List[0].Type
				if s, ok := typ.(*ast.StarExpr); ok {
					typ = s.X
				}
				if id, ok := typ.(*ast.Ident); ok {
					methods[id.Name+"."+fd.Name.Name] = true
				}
			}
		}
	}
	if len(funcs)+len(methods) == 0 {
		t.Fatalf("%s: no declarations read", dir)
	}
	return funcs, methods
}

// TestEnginesImportNoDoor: an engine knows nothing of HTTP, queues or databases, and
// imports the domain, its own libraries and the shared packages, never another engine
// (what `go list` says each imports, tests aside).
func TestEnginesImportNoDoor(t *testing.T) {
	t.Parallel()
	const mod = "github.com/filemill/filemill/"
	shared := []string{mod + "domain", mod + "jobs/ops/pdfium", mod + "jobs/ops/pagetext", mod + "jobs/ops/runner", mod + "jobs/ops/internal/"}
	forbidden := []string{"net/http", "database/sql", "github.com/hibiken/asynq", "github.com/uptrace/bun", "github.com/redis/",
		"github.com/minio/", "github.com/jackc/", "github.com/gorilla/websocket", "github.com/99designs/gqlgen"}
	for _, name := range engines {
		out, err := exec.Command("go", "list", "-f", "{{range .Imports}}{{.}}\n{{end}}", "./"+name).Output()
		if err != nil {
			t.Fatalf("go list ./%s: %v", name, err)
		}
		imports := strings.Fields(string(out))
		if len(imports) == 0 {
			t.Fatalf("%s: no imports read", name)
		}
		for _, imp := range imports {
			prefixed := func(p string) bool { return imp == p || strings.HasPrefix(imp, p) }
			switch {
			case slices.ContainsFunc(forbidden, prefixed):
				t.Errorf("%s imports %s", name, imp)
			case strings.HasPrefix(imp, mod) && !slices.ContainsFunc(shared, func(p string) bool {
				return imp == p || strings.HasSuffix(p, "/") && strings.HasPrefix(imp, p)
			}):
				t.Errorf("%s imports %s: engines share only the domain and the packages jobs/ops/doc.go names", name, imp)
			}
		}
	}
}
