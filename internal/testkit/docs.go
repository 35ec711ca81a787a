package testkit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// DocFiles is README.md and every Markdown file under docs/ of the
// repository at root, as slash-separated paths relative to root. Each
// program's documentation test walks the same set (git-lossless checks
// its commands, git-lossless-bench bench and demo, git-lossless-mcp mcp),
// so a page added under docs/ is read by all of them. Fewer than ten files
// means the walk is broken (a test run from the wrong directory), and
// fails the test rather than passing on nothing.
func DocFiles(t testing.TB, root string) []string {
	t.Helper()
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("documentation files under %s: %v", root, err)
	}
	if len(files) < 10 {
		t.Fatalf("found %d documentation files under %s: the walk is broken", len(files), root)
	}
	return files
}
