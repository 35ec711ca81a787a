//go:build unix

package gitstore_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/internal/testkit"
)

// TestGitInternal: the names git refuses in a tree, the git directory
// wherever it is, and links into it are inside; the files around them,
// and names that only look alike, are not.
func TestGitInternal(t *testing.T) {
	root := t.TempDir()
	root, _ = filepath.EvalSymlinks(root)
	repo := filepath.Join(root, "repo")
	testkit.Git(t, "", nil, "init", "-q", "--separate-git-dir", filepath.Join(repo, "meta"), repo)
	st, err := gitstore.OpenDir(repo, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"main.go", ".gitignore", "docs/.gitkeep"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(repo, f)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, f), []byte("x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("meta", filepath.Join(repo, "m")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(repo, "meta", "config"), filepath.Join(repo, "cfg")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(repo, "meta", "config"), filepath.Join(repo, "hard")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("main.go", filepath.Join(repo, "alias.go")); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]bool{
		"main.go": false, ".gitignore": false, "docs/.gitkeep": false, "alias.go": false, "missing.txt": false,
		".github/x": false, "x.git/y": false, ".gitx/y": false, "git/config": false,
		".git": true, ".git/config": true, "sub/.git/HEAD": true, ".GIT/config": true, ".Git": true,
		".git./config": true, ".git /config": true, ".git::$INDEX_ALLOCATION/x": true, ".g\u200cit/x": true, "\ufeff.git/x": true,
		"git~1/config": true, "GIT~1": true,
		"meta/config": true, "meta": true, filepath.Join(repo, "meta", "HEAD"): true, "meta/missing": true,
		"m/config": true, "m/missing": true, "cfg": true, "hard": true,
	} {
		why, got := st.GitInternal(t.Context(), p)
		if got != want {
			t.Errorf("GitInternal(%q) = %v (%s), want %v", p, got, why, want)
		}
	}
}
