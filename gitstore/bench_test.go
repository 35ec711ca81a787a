package gitstore_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/internal/testkit/benchdata"
	"github.com/git-lossless/git-lossless/seal"
)

// The 100k fixture: 100,000 events over 100 writers (one session each),
// imported in batches of 50. Built once and cached in os.TempDir (set
// LOSSLESS_BENCH_CACHE to put it elsewhere); delete the directory to
// rebuild it.
var fixture100k = benchdata.Fixture{Events: 100_000, Writers: 100, Batch: 50, Seed: 1}

var (
	fixtureOnce sync.Once
	fixtureDir  string
	fixtureErr  error
)

func cachedFixture(b *testing.B) string {
	b.Helper()
	fixtureOnce.Do(func() {
		root := os.Getenv("LOSSLESS_BENCH_CACHE")
		if root == "" {
			root = os.TempDir()
		}
		fixtureDir, fixtureErr = fixture100k.Cached(context.Background(), root)
	})
	if fixtureErr != nil {
		b.Fatal(fixtureErr)
	}
	return fixtureDir
}

func newRepo(b *testing.B) string {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "repo")
	if err := benchdata.GitInit(dir); err != nil {
		b.Fatal(err)
	}
	if err := benchdata.Fanout(dir); err != nil {
		b.Fatal(err)
	}
	return dir
}

// BenchmarkAppendNewBlob: one event with a new blob per Append, in a warm
// process: blob, events blob, trees, commit, ref.
func BenchmarkAppendNewBlob(b *testing.B) {
	for _, fsync := range []bool{true, false} {
		name := "fsync=off"
		if fsync {
			name = "fsync=on"
		}
		b.Run(name, func(b *testing.B) {
			st, err := gitstore.OpenDir(newRepo(b), gitstore.Options{Fsync: &fsync})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			recs := benchdata.Records(2, 0, 0, b.N)
			for i := range recs {
				recs[i].Key = "" // a hook's key costs a dedupe read; measured apart
			}
			b.ResetTimer()
			for i := range b.N {
				if _, err := st.Append(ctx, "append", recs[i:i+1]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkImport10k: 10,000 new blobs (1-8 KiB of source text) imported
// into a fresh repository in batches of 100: one pack, one ref update.
func BenchmarkImport10k(b *testing.B) {
	recs := benchdata.Records(3, 0, 0, 10_000)
	var total int64
	for _, r := range recs {
		total += int64(len(r.Content))
	}
	b.SetBytes(total)
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		st, err := gitstore.OpenDir(newRepo(b), gitstore.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, err := st.Import(ctx, "bulk", recs, 100); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerify100k: verify --all (chains and every blob) over the
// cached 100k fixture, in a fresh Store per iteration.
func BenchmarkVerify100k(b *testing.B) {
	dir := cachedFixture(b)
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		st, err := gitstore.OpenDir(dir, gitstore.Options{})
		if err != nil {
			b.Fatal(err)
		}
		ws, err := st.Writers(ctx)
		if err != nil {
			b.Fatal(err)
		}
		var n int64
		for _, w := range ws {
			rep, err := st.Verify(ctx, w.Name, seal.Options{})
			if err != nil || !rep.OK() {
				b.Fatalf("verify %s: %+v %v", w.Name, rep, err)
			}
			n += rep.Entries
		}
		if n != int64(fixture100k.Events) {
			b.Fatalf("verified %d entries", n)
		}
	}
}

// BenchmarkSessionRead100k: every event of one session out of the 100k
// fixture (Events with a Session filter, index warm).
func BenchmarkSessionRead100k(b *testing.B) {
	dir := cachedFixture(b)
	ctx := context.Background()
	st, err := gitstore.OpenDir(dir, gitstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	q := gitstore.Query{Session: benchdata.SessionName(42)}
	want := fixture100k.Events / fixture100k.Writers
	if evs, err := st.Events(ctx, q); err != nil || len(evs) != want { // warms the index
		b.Fatalf("events: %d %v", len(evs), err)
	}
	b.ResetTimer()
	for range b.N {
		evs, err := st.Events(ctx, q)
		if err != nil || len(evs) != want {
			b.Fatalf("events: %d %v", len(evs), err)
		}
	}
}
