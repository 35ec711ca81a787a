package blame_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/git-lossless/git-lossless/blame"
	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/internal/testkit/blamedata"
)

func openFixture(tb testing.TB, p blamedata.Params) (*blamedata.Fixture, *gitstore.Store) {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), "repo")
	f, err := blamedata.Build(context.Background(), dir, p)
	if err != nil {
		tb.Fatal(err)
	}
	off := false
	st, err := gitstore.OpenDir(dir, gitstore.Options{Fsync: &off})
	if err != nil {
		tb.Fatal(err)
	}
	return f, st
}

// BenchmarkFile blames the fixture: a file near 5,000 lines whose
// history holds 2,000 agent writes. `git lossless bench blame` measures
// the same beside git blame as processes.
func BenchmarkFile(b *testing.B) {
	if os.Getenv("BLAME_BENCH_SMALL") != "" {
		b.Skip()
	}
	f, st := openFixture(b, blamedata.Default)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := blame.File(context.Background(), st, "HEAD", f.File, blame.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
