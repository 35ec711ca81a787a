package hooks_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/internal/testkit/benchdata"
)

// BenchmarkPresence100k: who over the store benchmarks' 100k fixture
// (100,000 read events over 100 writers, every event its own file; cached
// in os.TempDir or LOSSLESS_BENCH_CACHE): every file, and one named file.
func BenchmarkPresence100k(b *testing.B) {
	root := os.Getenv("LOSSLESS_BENCH_CACHE")
	if root == "" {
		root = os.TempDir()
	}
	fx := benchdata.Fixture{Events: 100_000, Writers: 100, Batch: 50, Seed: 1}
	dir, err := fx.Cached(context.Background(), root)
	if err != nil {
		b.Fatal(err)
	}
	st, err := gitstore.OpenDir(dir, gitstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.Run("all", func(b *testing.B) {
		for b.Loop() {
			fps, err := hooks.Presence(ctx, st, hooks.PresenceOptions{})
			if err != nil || len(fps) != fx.Events {
				b.Fatalf("%d files, %v", len(fps), err)
			}
		}
	})
	b.Run("one", func(b *testing.B) {
		p := filepath.Join(dir, benchdata.Path(fx.Seed, 4242))
		for b.Loop() {
			fps, err := hooks.Presence(ctx, st, hooks.PresenceOptions{Paths: []string{p}})
			if err != nil || len(fps) != 1 || len(fps[0].Holders) != 1 {
				b.Fatalf("%+v, %v", fps, err)
			}
		}
	})
}
