package domain

import (
	"bufio"
	"bytes"
	"go/ast"
	"go/build"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestServicePortsAreUsed keeps each service's store port as narrow as the service:
// the compiler already refuses a call outside the ports a service declares, and this
// refuses a port it declares but never calls, so its type stays an honest list of what
// it needs.
func TestServicePortsAreUsed(t *testing.T) {
	t.Parallel()
	pkg, info := typeCheckDomain(t)
	store := pkg.Scope().Lookup("Store").Type()

	// Each method of the Store belongs to one aggregate port.
	owner := map[string]string{}
	var aggregates []string
	for _, a := range embedded(store) {
		aggregates = append(aggregates, a.Obj().Name())
		iface := a.Underlying().(*types.Interface)
		for i := range iface.NumMethods() {
			owner[iface.Method(i).Name()] = a.Obj().Name()
		}
	}
	isPort := func(t types.Type) bool {
		iface, ok := t.Underlying().(*types.Interface)
		return ok && !iface.Empty() && types.Implements(store, iface)
	}
	portsOf := func(t types.Type) []string {
		if n, ok := t.(*types.Named); ok && slices.Contains(aggregates, n.Obj().Name()) {
			return []string{n.Obj().Name()}
		}
		var out []string
		for _, a := range embedded(t) {
			out = append(out, a.Obj().Name())
		}
		return out
	}

	// The services: the types with methods and a Store field. Services holds the whole
	// Store on purpose (see its doc).
	methods := map[string]bool{}
	for _, f := range info.files {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv != nil {
				methods[receiverName(fd)] = true
			}
		}
	}
	ports := map[string]types.Type{}
	for _, name := range pkg.Scope().Names() {
		st, ok := pkg.Scope().Lookup(name).Type().Underlying().(*types.Struct)
		if !ok || !methods[name] || name == "Services" {
			continue
		}
		for i := range st.NumFields() {
			if f := st.Field(i); f.Name() == "Store" && isPort(f.Type()) {
				ports[name] = f.Type()
			}
		}
	}
	if len(ports) < 9 {
		t.Fatalf("found the ports of %d services, want at least 9: the test reads the wrong package", len(ports))
	}

	// What each service's methods use: the methods they call on a port, and the ports
	// they hand their store to (a helper's parameter, another service's field).
	used := map[string]map[string]bool{}
	use := func(svc string, names ...string) {
		if used[svc] == nil {
			used[svc] = map[string]bool{}
		}
		for _, n := range names {
			used[svc][n] = true
		}
	}
	handed := func(svc string, from, to types.Type) {
		if isPort(from) && isPort(to) && !types.Identical(to, ports[svc]) {
			use(svc, portsOf(to)...)
		}
	}
	for _, f := range info.files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || fd.Body == nil {
				continue
			}
			svc := receiverName(fd)
			if _, ok := ports[svc]; !ok {
				continue
			}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.SelectorExpr:
					if sel := info.Selections[n]; sel != nil && sel.Kind() == types.MethodVal && isPort(sel.Recv()) {
						if o, ok := owner[n.Sel.Name]; ok {
							use(svc, o)
						}
					}
				case *ast.CallExpr:
					sig, ok := info.TypeOf(n.Fun).(*types.Signature)
					if !ok {
						return true
					}
					for i, arg := range n.Args {
						if i < sig.Params().Len() {
							handed(svc, info.TypeOf(arg), sig.Params().At(i).Type())
						}
					}
				case *ast.CompositeLit:
					st, ok := info.TypeOf(n).Underlying().(*types.Struct)
					if !ok {
						return true
					}
					for _, el := range n.Elts {
						kv, ok := el.(*ast.KeyValueExpr)
						if !ok {
							continue
						}
						for i := range st.NumFields() {
							if key, ok := kv.Key.(*ast.Ident); ok && st.Field(i).Name() == key.Name {
								handed(svc, info.TypeOf(kv.Value), st.Field(i).Type())
							}
						}
					}
				}
				return true
			})
		}
	}

	// Ports a service declares for a caller outside this package.
	outside := map[string][]string{
		"Jobs": {"Pinger"}, // jobs.Attempts asks whether the store answers before blaming an attempt
	}
	var names []string
	for name := range ports {
		names = append(names, name)
	}
	slices.Sort(names)
	all := len(owner)
	for _, svc := range names {
		declared := portsOf(ports[svc])
		n := ports[svc].Underlying().(*types.Interface).NumMethods()
		t.Logf("%-13s %3d of %d store methods: %s", svc, n, all, strings.Join(declared, ", "))
		for _, p := range declared {
			if !used[svc][p] && !slices.Contains(outside[svc], p) {
				t.Errorf("%s declares %s but none of its methods uses it: drop it from its port", svc, p)
			}
		}
		if n == all {
			t.Errorf("%s takes the whole Store: give it the ports it uses", svc)
		}
	}
}

// embedded returns the named interfaces t embeds.
func embedded(t types.Type) []*types.Named {
	iface, ok := t.Underlying().(*types.Interface)
	if !ok {
		return nil
	}
	var out []*types.Named
	for i := range iface.NumEmbeddeds() {
		if n, ok := iface.EmbeddedType(i).(*types.Named); ok {
			out = append(out, n)
		}
	}
	return out
}

func receiverName(fd *ast.FuncDecl) string {
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

type typeInfo struct {
	*types.Info
	files []*ast.File
}

// typeCheckDomain type-checks this package's non-test files, importing its
// dependencies from the export data the go command built for this test.
func typeCheckDomain(t *testing.T) (*types.Package, typeInfo) {
	t.Helper()
	bp, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}", ".")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	exports := map[string]string{}
	var self string // -deps lists the package itself last
	for sc := bufio.NewScanner(bytes.NewReader(out)); sc.Scan(); {
		if path, file, ok := strings.Cut(sc.Text(), "\t"); ok {
			exports[path], self = file, path
		}
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(bp.Dir, name), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		return os.Open(exports[path])
	})
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
	conf := types.Config{Importer: imp}
	pkg, err := conf.Check(self, fset, files, info)
	if err != nil {
		t.Fatal(err)
	}
	return pkg, typeInfo{info, files}
}
