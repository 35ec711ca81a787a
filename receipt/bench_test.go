package receipt_test

import (
	"context"
	"github.com/git-lossless/git-lossless/internal/tokens"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/internal/testkit/receiptfixture"
	"github.com/git-lossless/git-lossless/receipt"
)

// The receipt benchmark fixture (package internal/testkit/receiptfixture):
// 100,000 events of 100 Claude Code-like sessions and a commit C changing
// 50 files. Built
// once (well under a minute) and cached under the user cache dir
// (LOSSLESS_BENCH_CACHE to put it elsewhere; not the system temp dir,
// where creating a file can cost a millisecond on sandboxed machines).
type fixture = receiptfixture.Built

var (
	fxOnce sync.Once
	fx     fixture
	fxErr  error
)

// benchCacheRoot is where benchmark fixtures are kept between runs.
func benchCacheRoot() (string, error) {
	if root := os.Getenv("LOSSLESS_BENCH_CACHE"); root != "" {
		return root, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "git-lossless", "bench"), nil
}

func benchFixture(b *testing.B) fixture {
	b.Helper()
	fxOnce.Do(func() {
		root, err := benchCacheRoot()
		if err != nil {
			fxErr = err
			return
		}
		fx, fxErr = receiptfixture.Default().Cached(context.Background(), root)
	})
	if fxErr != nil {
		b.Fatal(fxErr)
	}
	return fx
}

func openFixture(b testing.TB, f fixture) *gitstore.Store {
	b.Helper()
	st, err := gitstore.OpenDir(f.Dir, gitstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return st
}

// BenchmarkReceiptBuild: the receipt of a commit touching 50 files in a
// repository holding 100,000 events. Target: 200 ms, with every token
// count new (tokens=cold: the count cache is deleted before each build;
// the tokenizer's vocabulary stays loaded in this process, which `git
// lossless bench receipt` measures as a fresh process too).
func BenchmarkReceiptBuild(b *testing.B) {
	f := benchFixture(b)
	ctx := context.Background()
	for _, mode := range []string{"tokens=cached", "tokens=cold", "tokens=off"} {
		b.Run(mode, func(b *testing.B) {
			st := openFixture(b, f)
			opt := receipt.Options{NoTokens: mode == "tokens=off"}
			r, err := receipt.Build(ctx, st, f.Commit, opt)
			if err != nil {
				b.Fatal(err)
			}
			cache := tokens.NewCounter(ctx, st).Dir
			var last tokens.Stats
			b.ResetTimer()
			for range b.N {
				if mode == "tokens=cold" {
					b.StopTimer()
					if err := os.RemoveAll(cache); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				if !opt.NoTokens {
					opt.Counter = tokens.NewCounter(ctx, st)
				}
				if _, err := receipt.Build(ctx, st, f.Commit, opt); err != nil {
					b.Fatal(err)
				}
				if opt.Counter != nil {
					last = opt.Counter.Stats()
				}
			}
			b.ReportMetric(float64(len(r.Paths)), "paths")
			b.ReportMetric(float64(r.Coverage.Events), "events/receipt")
			b.ReportMetric(float64(len(r.Reads)), "reads")
			if mode == "tokens=cold" {
				b.ReportMetric(float64(last.Counted), "versions-counted")
				b.ReportMetric(float64(last.Chunks), "lines-tokenized")
				b.ReportMetric(float64(last.Reused), "lines-reused")
			}
		})
	}
}

// BenchmarkReceiptBuildWide: a commit whose window covers all 100 sessions
// and whose 50 files nearly all of them touched: the receipt takes in
// every session's events. A stress figure, not a target.
func BenchmarkReceiptBuildWide(b *testing.B) {
	f := benchFixture(b)
	ctx := context.Background()
	st := openFixture(b, f)
	r, err := receipt.Build(ctx, st, f.Wide, receipt.Options{})
	if err != nil {
		b.Fatal(err)
	}
	body, _ := r.Marshal()
	b.ResetTimer()
	for range b.N {
		if _, err := receipt.Build(ctx, st, f.Wide, receipt.Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(r.Contexts)), "contexts")
	b.ReportMetric(float64(r.Coverage.Events), "events/receipt")
	b.ReportMetric(float64(len(body)), "receipt-bytes")
}

// BenchmarkReceiptSave: clear-sign the receipt and store it as a signed
// note (blob, tree, signed commit, fsync, ref under its lock).
func BenchmarkReceiptSave(b *testing.B) {
	f := benchFixture(b)
	ctx := context.Background()
	st := openFixture(b, f)
	r, err := receipt.Build(ctx, st, f.Commit, receipt.Options{})
	if err != nil {
		b.Fatal(err)
	}
	k := theKey(b)
	b.ResetTimer()
	for range b.N {
		if _, _, err := receipt.Save(ctx, st, r, k); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReceiptVerify: verify the stored receipt of that commit.
// Target: 100 ms.
func BenchmarkReceiptVerify(b *testing.B) {
	f := benchFixture(b)
	ctx := context.Background()
	st := openFixture(b, f)
	k := theKey(b)
	r, err := receipt.Build(ctx, st, f.Commit, receipt.Options{})
	if err != nil {
		b.Fatal(err)
	}
	if _, _, err := receipt.Save(ctx, st, r, k); err != nil {
		b.Fatal(err)
	}
	kr := keyring(b, k)
	s, err := receipt.Load(ctx, st, k.Writer(), f.Commit)
	if err != nil {
		b.Fatal(err)
	}
	if res := receipt.Verify(ctx, st, s, kr); !res.OK() {
		b.Fatalf("verify: %+v", res.Problems)
	}
	b.ResetTimer()
	for range b.N {
		if res := receipt.Verify(ctx, st, s, kr); !res.OK() {
			b.Fatal(res.Problems)
		}
	}
}
