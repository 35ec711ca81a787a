package blame_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/blame"
	"github.com/git-lossless/git-lossless/gitstore"
)

func TestProf2(t *testing.T) {
	root := "/root/.cache/git-lossless/bench/statskeep"
	ents, _ := os.ReadDir(root)
	dir := ""
	for _, e := range ents {
		if _, err := os.Stat(filepath.Join(root, e.Name(), ".git")); err == nil {
			dir = filepath.Join(root, e.Name())
		}
	}
	if dir == "" {
		dir = root
	}
	st, err := gitstore.OpenDir(dir, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		t0 := time.Now()
		if _, err := blame.Commits(context.Background(), st, "HEAD", blame.Options{}); err != nil {
			t.Fatal(err)
		}
		t.Log(time.Since(t0))
	}
}
