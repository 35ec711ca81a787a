package gitstore

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// opConstants reads the Op constants from op.go's source, so that the
// tests below follow the file rather than a copy of it.
func opConstants(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "op.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Op" {
				continue
			}
			for i, n := range vs.Names {
				v, err := strconv.Unquote(vs.Values[i].(*ast.BasicLit).Value)
				if err != nil {
					t.Fatal(err)
				}
				out[v] = n.Name
			}
		}
	}
	if len(out) < 10 {
		t.Fatalf("found %d Op constants in op.go; the parse is broken", len(out))
	}
	return out
}

// TestOpTableInFormat holds FORMAT.md's table of ops to op.go's constants:
// every constant has a row and every row a constant.
func TestOpTableInFormat(t *testing.T) {
	consts := opConstants(t)
	b, err := os.ReadFile("FORMAT.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	i := strings.Index(text, "The ops this version writes")
	if i < 0 {
		t.Fatal("FORMAT.md has no table of ops")
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z]+)` \\|")
	var rows []string
	for _, m := range row.FindAllStringSubmatch(text[i:strings.Index(text[i:], "\n\n`read`")+i], -1) {
		if m[1] != "op" { // the header
			rows = append(rows, m[1])
		}
	}
	var want []string
	for v := range consts {
		want = append(want, v)
	}
	sort.Strings(rows)
	sort.Strings(want)
	if strings.Join(rows, " ") != strings.Join(want, " ") {
		t.Errorf("FORMAT.md's ops %v, op.go's %v", rows, want)
	}
	for v := range consts {
		if Op(v).IsFileVersion() != strings.Contains("read edit write attach restore", v) {
			t.Errorf("IsFileVersion(%q) = %v, against FORMAT.md's list of file versions", v, Op(v).IsFileVersion())
		}
	}
}

// opLiterals returns where a Go file spells an op as a string literal in
// an op's place: a field Op: "read", an .Op compared with or set to a
// literal, a case "read" of a switch on an .Op. Those must use the
// constants (a typo there is a silent wrong op, not a compile error).
func opLiterals(fset *token.FileSet, f *ast.File, ops map[string]string) []string {
	var out []string
	isOp := func(e ast.Expr) bool {
		switch x := e.(type) {
		case *ast.SelectorExpr:
			return x.Sel.Name == "Op"
		case *ast.CallExpr:
			if id, ok := x.Fun.(*ast.Ident); ok {
				return id.Name == "lineOp" || id.Name == "opOf"
			}
		}
		return false
	}
	lit := func(e ast.Expr) (string, bool) {
		b, ok := e.(*ast.BasicLit)
		if !ok || b.Kind != token.STRING {
			return "", false
		}
		v, err := strconv.Unquote(b.Value)
		if err != nil {
			return "", false
		}
		_, known := ops[v]
		return v, known
	}
	report := func(n ast.Node, v string) {
		out = append(out, fset.Position(n.Pos()).String()+": "+strconv.Quote(v)+" (use "+ops[v]+")")
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.KeyValueExpr:
			if id, ok := x.Key.(*ast.Ident); ok && id.Name == "Op" {
				if v, ok := lit(x.Value); ok {
					report(x.Value, v)
				}
			}
		case *ast.BinaryExpr:
			if x.Op != token.EQL && x.Op != token.NEQ {
				break
			}
			for _, p := range [][2]ast.Expr{{x.X, x.Y}, {x.Y, x.X}} {
				if v, ok := lit(p[1]); ok && isOp(p[0]) {
					report(p[1], v)
				}
			}
		case *ast.AssignStmt:
			for i, l := range x.Lhs {
				if i < len(x.Rhs) && isOp(l) {
					if v, ok := lit(x.Rhs[i]); ok {
						report(x.Rhs[i], v)
					}
				}
			}
		case *ast.SwitchStmt:
			if x.Tag == nil || !isOp(x.Tag) {
				break
			}
			for _, c := range x.Body.List {
				for _, e := range c.(*ast.CaseClause).List {
					if v, ok := lit(e); ok {
						report(e, v)
					}
				}
			}
		}
		return true
	})
	return out
}

// TestNoOpLiterals walks every production Go file of the module: ops are
// written with the constants of op.go, never as string literals.
func TestNoOpLiterals(t *testing.T) {
	ops := opConstants(t)
	fset := token.NewFileSet()
	var found []string
	files := 0
	err := filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == "testdata" || (strings.HasPrefix(n, ".") && n != "..") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") || filepath.Base(p) == "op.go" {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		files++
		found = append(found, opLiterals(fset, f, ops)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("walked %d files; the walk is broken", files)
	}
	for _, f := range found {
		t.Errorf("an op spelt as a literal: %s", f)
	}
}

// TestOpLiteralsCheckFinds shows the check above able to fail: each
// planted form is reported, and the constants are not.
func TestOpLiteralsCheckFinds(t *testing.T) {
	src := `package p
func f(e E, line []byte) {
	_ = E{Op: "read"}
	_ = e.Op == "edit"
	_ = "span" != e.Op
	e.Op = "prune"
	switch e.Op {
	case "attach", OpRestore:
	}
	_ = lineOp(line) == "compact"
	_ = E{Op: OpRead, Tool: "read"}
	_ = e.Tool == "write"
}`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "planted.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := opLiterals(fset, f, opConstants(t))
	want := []string{`"read"`, `"edit"`, `"span"`, `"prune"`, `"attach"`, `"compact"`}
	if len(got) != len(want) {
		t.Fatalf("found %d, want %d: %q", len(got), len(want), got)
	}
	for i, w := range want {
		if !strings.Contains(got[i], w) {
			t.Errorf("finding %d = %q, want %s", i, got[i], w)
		}
	}
}

// TestOpNeedleIsCanonical: the needle is the op member's bytes in a
// canonical line.
func TestOpNeedleIsCanonical(t *testing.T) {
	e := Event{Seq: 1, Prev: strings.Repeat("0", 64), Source: "cli", Op: OpPreCompact}
	line, err := e.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(line), string(OpPreCompact.Needle())) {
		t.Fatalf("%s does not hold %s", line, OpPreCompact.Needle())
	}
}
