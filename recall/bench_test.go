package recall

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/hooks/claudecode"
	"github.com/git-lossless/git-lossless/internal/testkit/transcriptgen"
)

// The benchmarks run over a corpus of realistic Claude Code sessions:
// transcripts from transcriptgen.GenerateWith swept into a repository by
// hooks.SweepSession, as the hooks archive them, until it holds at least
// RECALL_BENCH_SPANS spans (default 10,000) and RECALL_BENCH_MB megabytes
// of span content (default 20). Building it takes a few seconds; it is
// kept in RECALL_BENCH_DIR when that is set (and reused when it is there),
// else built once per test process in a temporary directory.

var corpus struct {
	once  sync.Once
	dir   string
	temp  string // the temporary directory to remove, when it is one
	spans int
	bytes int64
	err   error
}

// TestMain removes the benchmarks' corpus when it was built in a
// temporary directory.
func TestMain(m *testing.M) {
	code := m.Run()
	if corpus.temp != "" {
		os.RemoveAll(corpus.temp)
	}
	os.Exit(code)
}

func benchEnvInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// benchCorpus returns the corpus repository, building it on first use.
func benchCorpus(tb testing.TB) (dir string, spans int, bytes int64) {
	tb.Helper()
	corpus.once.Do(func() {
		wantSpans := benchEnvInt("RECALL_BENCH_SPANS", 10_000)
		wantBytes := int64(benchEnvInt("RECALL_BENCH_MB", 20)) * 1_000_000
		dir := os.Getenv("RECALL_BENCH_DIR")
		if dir == "" {
			d, err := os.MkdirTemp("", "recall-bench-")
			if err != nil {
				corpus.err = err
				return
			}
			corpus.temp = d
			dir = filepath.Join(d, "repo")
		}
		corpus.dir = dir
		if _, err := os.Stat(filepath.Join(dir, ".git")); err != nil {
			corpus.err = buildCorpus(dir, wantSpans, wantBytes)
			if corpus.err != nil {
				return
			}
		}
		st, err := gitstore.OpenDir(dir, gitstore.Options{})
		if err != nil {
			corpus.err = err
			return
		}
		evs, err := st.Events(context.Background(), gitstore.Query{Op: "span"})
		corpus.err = err
		for _, e := range evs {
			corpus.spans++
			corpus.bytes += e.Bytes
		}
	})
	if corpus.err != nil {
		tb.Fatalf("bench corpus: %v", corpus.err)
	}
	return corpus.dir, corpus.spans, corpus.bytes
}

// buildCorpus sweeps generated sessions into a new repository at dir.
func buildCorpus(dir string, wantSpans int, wantBytes int64) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, d := range []string{"objects/info", "objects/pack", "refs/heads", "refs/tags"} {
		if err := os.MkdirAll(filepath.Join(dir, ".git", d), 0o755); err != nil {
			return err
		}
	}
	os.WriteFile(filepath.Join(dir, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	os.WriteFile(filepath.Join(dir, ".git", "config"), []byte("[core]\n\trepositoryformatversion = 0\n\tbare = false\n[lossless]\n\tredact = off\n"), 0o644)
	st, err := gitstore.OpenDir(dir, gitstore.Options{})
	if err != nil {
		return err
	}
	tdir, err := os.MkdirTemp("", "recall-transcripts-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tdir)
	ctx := context.Background()
	spans, bytes := 0, int64(0)
	for seed := int64(1); spans < wantSpans || bytes < wantBytes; seed++ {
		sid := fmt.Sprintf("bench-%04d", seed)
		p := filepath.Join(tdir, sid+".jsonl")
		main, err := os.Create(p)
		if err != nil {
			return err
		}
		subDir := filepath.Join(tdir, sid, "subagents")
		os.MkdirAll(subDir, 0o755)
		sub, err := os.Create(filepath.Join(subDir, "agent-"+transcriptgen.SubagentID(seed)+".jsonl"))
		if err != nil {
			return err
		}
		err = transcriptgen.GenerateWith(main, transcriptgen.Options{Seed: seed, TargetBytes: 8 << 20, Root: dir, SessionID: sid, Subagent: sub})
		main.Close()
		sub.Close()
		if err != nil {
			return err
		}
		if _, err := hooks.SweepSession(ctx, st, claudecode.New(), p, hooks.SweepOptions{}); err != nil {
			return err
		}
		evs, err := st.Events(ctx, gitstore.Query{Op: "span", Session: sid})
		if err != nil {
			return err
		}
		for _, e := range evs {
			spans++
			bytes += e.Bytes
		}
	}
	return nil
}

func openCorpus(tb testing.TB) *gitstore.Store {
	dir, _, _ := benchCorpus(tb)
	st, err := gitstore.OpenDir(dir, gitstore.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	return st
}

// cpuTime is the process's user and system time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkReindex: delete and rebuild the index of the corpus. Reports
// MB/s of span content (wall) and CPU seconds per op.
func BenchmarkReindex(b *testing.B) {
	st := openCorpus(b)
	_, spans, bytes := benchCorpus(b)
	ctx := context.Background()
	b.SetBytes(bytes)
	cpu0 := cpuTime()
	b.ResetTimer()
	for range b.N {
		if err := Reindex(ctx, st); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
	b.ReportMetric(float64(spans), "spans")
}

// benchQueries are words, stems, paths, fragments and typos of the
// generated sessions' vocabulary.
var benchQueries = []string{
	"summary", "reviewing changes", "commits archived", "guard history", "internal/store", "file_12.go",
	"ile_12.g", "ndex", "stor", "sesion", "archve", "TaskCreate", "return err", "shell command output",
	"the agent should never", "func",
}

// BenchmarkSearchWarm: queries on an open index (in process), snippets
// of the first page included.
func BenchmarkSearchWarm(b *testing.B) {
	st := openCorpus(b)
	ctx := context.Background()
	ix, err := Open(ctx, st, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer ix.Close()
	var lat []time.Duration
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		if _, err := ix.Search(ctx, Query{Text: benchQueries[i%len(benchQueries)], Limit: 10}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	reportPct(b, lat)
}

// BenchmarkOpenAndSearch: a fresh Index (what a new process does after
// its start: list the heads, read the manifest, map the segments) and one
// search.
func BenchmarkOpenAndSearch(b *testing.B) {
	dir, _, _ := benchCorpus(b)
	ctx := context.Background()
	st := openCorpus(b)
	if ix, err := Open(ctx, st, Options{}); err == nil {
		ix.Close()
	}
	var lat []time.Duration
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		st, err := gitstore.OpenDir(dir, gitstore.Options{})
		if err != nil {
			b.Fatal(err)
		}
		ix, err := Open(ctx, st, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := ix.Search(ctx, Query{Text: benchQueries[i%len(benchQueries)], Limit: 10}); err != nil {
			b.Fatal(err)
		}
		ix.Close()
		lat = append(lat, time.Since(t0))
	}
	reportPct(b, lat)
}

// BenchmarkIncremental: one new batch (a prompt and an answer) on one
// writer, then Open, which indexes it.
func BenchmarkIncremental(b *testing.B) {
	st := openCorpus(b)
	ctx := context.Background()
	if ix, err := Open(ctx, st, Options{}); err == nil {
		ix.Close()
	}
	a := &archive{t: b, st: st, ts: time.Now()}
	var lat []time.Duration
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		a.add("cc-bench-incremental", a.span("inc", "user", fmt.Sprintf("incremental prompt %d about the pelican", i)),
			a.span("inc", "assistant", "an answer about pelicans and their beaks"))
		b.StartTimer()
		t0 := time.Now()
		ix, err := Open(ctx, st, Options{})
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
		if s := ix.Stats(); s.DocsAdded != 2 {
			b.Fatalf("%+v", s)
		}
		ix.Close()
	}
	reportPct(b, lat)
}

func reportPct(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	s := append([]time.Duration(nil), lat...)
	slices.Sort(s)
	b.ReportMetric(float64(s[len(s)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(s[min(len(s)-1, len(s)*95/100)].Microseconds())/1000, "p95-ms")
}
