package gitobj

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestOnlyGitobjImportsGoGit fails when a Go file outside this package
// (tests included) imports go-git or go-billy: the object layer is the
// one door into the repository.
func TestOnlyGitobjImportsGoGit(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	here, _ := filepath.Abs(".")
	files := 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p == here || d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".") && p != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		files++
		for _, im := range f.Imports {
			path, _ := strconv.Unquote(im.Path.Value)
			if strings.HasPrefix(path, "github.com/go-git/") {
				rel, _ := filepath.Rel(root, p)
				t.Errorf("%s imports %s: only internal/gitobj may", rel, path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("read only %d Go files under %s", files, root)
	}
}
