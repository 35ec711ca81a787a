package meter_test

import (
	"context"
	"github.com/git-lossless/git-lossless/internal/tokens"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/internal/testkit/receiptfixture"
	"github.com/git-lossless/git-lossless/meter"
)

// The meter is measured on the receipt benchmark's repository (package
// internal/testkit/receiptfixture): 100,000 events of 100 Claude
// Code-like sessions — reads, partial reads, subagent reads, edits and
// conversation spans over 2,000 files. It is cached under the user cache
// dir (LOSSLESS_BENCH_CACHE to put it elsewhere) and shared with the
// receipt benchmarks.
var (
	fxOnce sync.Once
	fx     receiptfixture.Built
	fxErr  error
)

func benchFixture(b *testing.B) receiptfixture.Built {
	b.Helper()
	fxOnce.Do(func() {
		root := os.Getenv("LOSSLESS_BENCH_CACHE")
		if root == "" {
			d, err := os.UserCacheDir()
			if err != nil {
				fxErr = err
				return
			}
			root = filepath.Join(d, "git-lossless", "bench")
		}
		fx, fxErr = receiptfixture.Default().Cached(context.Background(), root)
	})
	if fxErr != nil {
		b.Fatal(fxErr)
	}
	return fx
}

// BenchmarkMeter: `git lossless meter` over 100,000 events. Target: 300
// ms warm — the token cache filled by an earlier run, a new counter and a
// newly opened store per run, as a new process has. cold deletes the
// token cache before each run: every version is counted again.
func BenchmarkMeter(b *testing.B) {
	f := benchFixture(b)
	ctx := context.Background()
	for _, mode := range []string{"warm", "cold"} {
		b.Run(mode, func(b *testing.B) {
			st, err := gitstore.OpenDir(f.Dir, gitstore.Options{})
			if err != nil {
				b.Fatal(err)
			}
			rep, err := meter.Meter(ctx, st, meter.Options{}) // fills the cache
			if err != nil {
				b.Fatal(err)
			}
			cache := tokens.NewCounter(ctx, st).Dir
			var last *meter.Report
			b.ResetTimer()
			for range b.N {
				if mode == "cold" {
					b.StopTimer()
					if err := os.RemoveAll(cache); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				st, err := gitstore.OpenDir(f.Dir, gitstore.Options{})
				if err != nil {
					b.Fatal(err)
				}
				if last, err = meter.Meter(ctx, st, meter.Options{}); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if last.Totals != rep.Totals {
				b.Fatalf("runs disagree: %+v vs %+v", last.Totals, rep.Totals)
			}
			if mode == "warm" && last.Counts.Counted != 0 {
				b.Fatalf("a warm run counted %d versions", last.Counts.Counted)
			}
			b.ReportMetric(float64(last.Totals.Reads), "reads")
			b.ReportMetric(float64(last.Totals.ReReads), "rereads")
			b.ReportMetric(float64(last.Counts.Unique), "versions")
			b.ReportMetric(float64(last.Counts.Counted), "versions-counted")
		})
	}
}
