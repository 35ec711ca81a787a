package blame_test

import (
	"context"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/blame"
	"github.com/git-lossless/git-lossless/gitstore"
)

func TestProf(t *testing.T) {
	dir := "/root/.cache/git-lossless/bench/blamekeep/repo"
	off := false
	st, _ := gitstore.OpenDir(dir, gitstore.Options{Fsync: &off})
	for i := 0; i < 5; i++ {
		t0 := time.Now()
		if _, err := blame.File(context.Background(), st, "", "big.go", blame.Options{}); err != nil {
			t.Fatal(err)
		}
		t.Log(time.Since(t0))
	}
}
