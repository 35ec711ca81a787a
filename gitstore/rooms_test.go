package gitstore

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"sort"
	"strings"
	"testing"
)

// noIO are the exported methods of the store and its views that touch no
// disk and no remote, so take no context: accessors of what Open read
// (the location, the config, the deny list, the clock) and the views
// themselves. NeedsSSH reads the config Open loaded.
var noIO = map[string]bool{
	"Store.Location": true, "Store.Config": true, "Store.Deny": true, "Store.RelPath": true, "Store.Now": true,
	"Store.Objects": true, "Store.Transport": true, "Store.Crypt": true,
	"Crypt.NeedsSSH": true,
}

// TestIOMethodsTakeContext: every exported method of Store, Objects,
// Transport and Crypt takes a context.Context first, but those of noIO,
// which must still exist (a renamed accessor drops out of the list rather
// than excusing a new method).
func TestIOMethodsTakeContext(t *testing.T) {
	fset := token.NewFileSet()
	ents, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, e := range ents {
		if n := e.Name(); strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			f, err := parser.ParseFile(fset, n, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
	}
	rooms := map[string]bool{"Store": true, "Objects": true, "Transport": true, "Crypt": true}
	seen := map[string]bool{}
	var bad []string
	methods := 0
	for _, f := range files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || !fd.Name.IsExported() {
				continue
			}
			typ := fd.Recv.List[0].Type
			if st, ok := typ.(*ast.StarExpr); ok {
				typ = st.X
			}
			id, ok := typ.(*ast.Ident)
			if !ok || !rooms[id.Name] {
				continue
			}
			methods++
			name := id.Name + "." + fd.Name.Name
			if noIO[name] {
				seen[name] = true
				continue
			}
			if !firstIsContext(fd.Type.Params) {
				bad = append(bad, fset.Position(fd.Pos()).String()+": "+name)
			}
		}
	}
	if methods < 40 {
		t.Fatalf("found %d methods of the store and its views: the parse is broken", methods)
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Errorf("%s does not take a context.Context first", b)
	}
	for n := range noIO {
		if !seen[n] {
			t.Errorf("noIO names %s, which is not a method any more", n)
		}
	}
}

func firstIsContext(params *ast.FieldList) bool {
	if params == nil || len(params.List) == 0 {
		return false
	}
	sel, ok := params.List[0].Type.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	return ok && x.Name == "context" && sel.Sel.Name == "Context"
}

// TestIOMethodsCheckCanFail: the check finds a method without a context.
func TestIOMethodsCheckCanFail(t *testing.T) {
	src := "package p\nfunc (s *Store) Write(name string) error { return nil }\nfunc (s *Store) Read(ctx context.Context) error { return nil }\n"
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := []bool{}
	for _, d := range f.Decls {
		got = append(got, firstIsContext(d.(*ast.FuncDecl).Type.Params))
	}
	if len(got) != 2 || got[0] || !got[1] {
		t.Errorf("firstIsContext over Write(name), Read(ctx) = %v, want [false true]", got)
	}
}
