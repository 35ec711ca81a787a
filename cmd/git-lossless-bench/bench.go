package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/git-lossless/git-lossless/internal/cli"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/git-lossless/git-lossless/internal/testkit/benchdata"
)

func benchCmd() *command {
	return &command{
		Name:    "bench",
		Summary: "measure against the peers (C git, the seed's figures), side by side",
		Usage:   "store|hooks|anchor|recall|replay|meter|import|secrets|proxy|receipt|blame|stats|drift [flags]",
		Long: `Each bench builds its own fixtures, measures ours and the closest peer in
one run, and prints both with the target and whether it was met. The
benches, each with its own flags (listed below under its name):

bench store [--events N] [--batch B] [--keep DIR]: the store against C git.
bench hooks: every registered harness's pre-tool and post-tool hook as a
  whole process beside Claude Code's, a Go hello world and git --version;
  the guard, the recorder and the sweeps on a generated session.
bench secrets: the secret scanner against a regexp-only scanner (and
  gitleaks when it is on PATH) over a generated transcript.
bench proxy: the proxy's added latency and pass-through rate against the
  same requests sent straight to a stub upstream.
bench receipt: building, signing, storing and verifying a receipt over
  the 100,000-event fixture, beside plain git notes.

bench store builds temporary repositories and measures, in one run, each operation of
the store beside the closest thing C git does, and prints both with the
target and whether it was met:

  floor       a file create and an fsync in the bench directory, and a
              process of this binary that does nothing: what no store
              on this disk can go below (C git: git --version)
  append      one event with a new blob in a warm process (fsync on, off);
              C git: hash-object, mktree, commit-tree, update-ref per event
  record      a fresh git-lossless process on a repository of 10,000 events
              (or --events, if fewer); C git: hash-object -w FILE and
              update-ref per event, and node -e 0 when node is on PATH
  import      10,000 new blobs (or --events) in one pack; C git:
              fast-import of the same blobs
  verify      verify --all over --events events (default 100,000);
              C git: fsck of the same repository
  session     every event of one session out of --events, index warm;
              C git: log --format=%H of that session's ref

Content is source-like text of 1 to 8 KiB per file, generated from a fixed
seed; every event archives a new blob. Nothing is hard-coded: every figure
is measured by this run, on whatever else the machine is doing (the load
average is printed). It takes a few minutes on 2 cores at the default
size; --events 10000 takes well under one. Repositories are built with
their 256 loose-object fan-out directories, as a repository with history
has them, in a new directory under the user cache dir (where home
directories, and so repositories, live; the system temp dir can be a
different file system, or a slower one) and removed afterwards, unless
--keep names a directory to build them in and leave them.
bench anchor: anchor push, verify --anchor and sync vs git push, fsck, fetch+push.
bench recall: recall index reindex, warm and fresh-process search, incremental update vs sqlite3 FTS5;
  FTS5 in process (modernc.org/sqlite, pure Go): build, warm search, and its bm25() top 10 beside ours.
bench replay [DIR...]: replays Claude Code sessions against the archive:
  losslessness (every file operation given back byte for byte; one
  divergence fails the run, exit 1, naming session, line and path) and
  savings of restore and packs against re-reading (o200k tokens), beside
  the synthetic floor (read once) and ceiling (edit loop) and the seed's
  published figures. DIR... are transcripts or directories of them (swept
  into a scratch repository); without DIR, the sessions this repository
  has swept, in place; with none, generated sessions, labelled so.
bench meter: git lossless meter over the 100,000-event receipt fixture, token cache cold and warm, in process and as a process.
bench import: import of a generated 120 MB projects directory, fresh process, vs the disk floor and git hash-object.
bench blame [--rounds N] [--keep DIR]: git lossless blame of a 4,863-line file whose
  history holds 2,000 agent writes in 502 commits, against git blame of the same
  file, whole processes alternately; cache of added lines warm and cold; origin
  accuracy against the fixture's bookkeeping.
bench stats [--stats-commits N] [--rounds R]: git lossless stats over a
  1,000-commit history, half of it with archived agent writes, as a fresh
  process beside git log --numstat of the same range, run alternately.
bench drift --upstream URL --model M [--turns 30] [--window N] [--keep DIR]:
  plants five facts in the first turns of a scripted conversation sent
  through the proxy to your own model, and reports per summary which facts
  survive, memo on against off, with summariser calls and input characters.
  Talks only to URL; writes only to a temporary archive removed afterwards.`,
		Flags: func(fs *pflag.FlagSet) func(context.Context, *env, []string) error {
			events := fs.Int("events", 100_000, "events in the verify and session fixture (smaller runs faster)")
			batch := fs.Int("batch", 50, "events per batch commit in the imported fixtures")
			keep := fs.String("keep", "", "build the repositories in DIR and leave them there")
			proxyBench := benchProxyFlags(fs) // `bench proxy`: proxy_bench.go
			hooksBench := benchHooksFlags(fs) // `bench hooks`: bench_hooks.go
			// `bench receipt`: bench_receipt.go
			receiptBench := benchReceiptFlags(fs)
			secretsBench := benchSecretsFlags(fs) // `bench secrets`: bench_secrets.go
			anchorBench := benchAnchorFlags(fs)   // `bench anchor`: bench_anchor.go
			recallBench := benchRecallFlags(fs)   // `bench recall`: bench_recall.go
			replayBench := benchReplayFlags(fs)   // `bench replay`: bench_replay.go
			meterBench := benchMeterFlags(fs)     // `bench meter`: bench_meter.go
			importBench := benchImportFlags(fs)   // `bench import`: bench_import.go
			blameBench := benchBlameFlags(fs)     // `bench blame`: bench_blame.go
			statsBench := benchStatsFlags(fs)     // `bench stats`: bench_stats.go
			driftBench := benchDriftFlags(fs)     // `bench drift`: bench_drift.go
			return func(ctx context.Context, e *env, args []string) error {
				if handled, err := blameBench(ctx, e, args); handled {
					return err
				}
				if handled, err := anchorBench(ctx, e, args); handled {
					return err
				}
				if handled, err := recallBench(ctx, e, args); handled {
					return err
				}
				if handled, err := replayBench(ctx, e, args); handled {
					return err
				}
				if handled, err := meterBench(ctx, e, args); handled {
					return err
				}
				if handled, err := importBench(ctx, e, args); handled {
					return err
				}
				if handled, err := driftBench(ctx, e, args); handled {
					return err
				}
				if handled, err := statsBench(ctx, e, args); handled {
					return err
				}
				if handled, err := secretsBench(ctx, e, args); handled {
					return err
				}
				if handled, err := proxyBench(ctx, e, args); handled {
					return err
				}
				if handled, err := hooksBench(ctx, e, args); handled {
					return err
				}
				if handled, err := receiptBench(ctx, e, args); handled {
					return err
				}
				if len(args) != 1 || args[0] != "store" {
					return cli.Usagef("usage: git lossless bench store|hooks|anchor|recall|replay|meter|import|secrets|proxy|receipt|blame|stats|drift [flags] (see git lossless bench --help)")
				}
				if *events < 100 {
					return cli.Usagef("--events must be at least 100")
				}
				if *batch < 1 {
					return cli.Usagef("--batch must be at least 1")
				}
				return runBench(ctx, e, benchConfig{events: *events, batch: *batch, keep: *keep})
			}
		},
	}
}

type benchConfig struct {
	events int
	batch  int
	keep   string
}

// benchParent is where bench builds its repositories unless told: the
// user cache dir, on the file system where home directories (and so
// repositories) live. Not the system temp dir: on some machines (this
// project's sandboxes among them) /tmp is a different file system, or the
// same one with a far costlier file create, and figures taken there say
// nothing about an agent's repository.
func benchParent() (string, error) {
	c, err := os.UserCacheDir()
	if err != nil {
		return os.TempDir(), nil
	}
	return filepath.Join(c, "git-lossless", "bench"), nil
}

// benchDir is the directory a bench builds its fixtures in: keep, made
// absolute and created (emptied first when wipe is set), or else a new
// directory named prefix* under benchParent that cleanup removes.
func benchDir(keep, prefix string, wipe bool) (dir string, cleanup func(), err error) {
	cleanup = func() {}
	if keep != "" {
		if dir, err = filepath.Abs(keep); err != nil {
			return "", cleanup, err
		}
		if wipe {
			if err = os.RemoveAll(dir); err != nil {
				return "", cleanup, err
			}
		}
		return dir, cleanup, os.MkdirAll(dir, 0o755)
	}
	parent, err := benchParent()
	if err != nil {
		return "", cleanup, err
	}
	if err = os.MkdirAll(parent, 0o700); err != nil {
		return "", cleanup, err
	}
	if dir, err = os.MkdirTemp(parent, prefix); err != nil {
		return "", cleanup, err
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

// row is one line of the result table.
type row struct {
	what, ours, peer, target string
	met                      *bool
}

type bench struct {
	cfg   benchConfig
	e     *env
	root  string
	exe   string
	rows  []row
	notes []string
	start time.Time
}

func runBench(ctx context.Context, e *env, cfg benchConfig) error {
	if _, err := exec.LookPath("git"); err != nil {
		return cli.WithHint(errors.New("bench needs git on PATH"), "install git; the peers are measured with it")
	}
	exe, err := productExe()
	if err != nil {
		return fmt.Errorf("bench: locate own binary: %w", err)
	}
	b := &bench{cfg: cfg, e: e, exe: exe, start: time.Now()}
	var cleanup func()
	b.root, cleanup, err = benchDir(cfg.keep, "store-", false)
	defer cleanup()
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	gitVersion := "git ?"
	if out, err := exec.Command("git", "version").Output(); err == nil {
		gitVersion = strings.TrimSpace(string(out))
	}
	writers := benchWriters(cfg.events)
	fmt.Fprintf(e.Stdout, "git lossless bench store\n")
	fmt.Fprintf(e.Stdout, "  machine  %s/%s, %d CPUs, %s, %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), gitVersion)
	fmt.Fprintf(e.Stdout, "  content  source-like text, %d-%d KiB per file (seed %d); every event archives a new blob\n",
		benchdata.MinSize>>10, benchdata.MaxSize>>10, benchSeed)
	fmt.Fprintf(e.Stdout, "  fixture  %d events over %d writers (one session each), imported in batches of %d\n", cfg.events, writers, cfg.batch)
	fmt.Fprintf(e.Stdout, "  repos    %s%s\n", b.root, map[bool]string{true: " (kept)", false: " (removed afterwards)"}[cfg.keep != ""])
	fmt.Fprintf(e.Stdout, "  load     %s at start (other processes share these CPUs and disk)\n\n", loadAvg())

	steps := []benchStep{
		{"floor", b.benchFloor},
		{"append", b.benchAppend},
		{"record", b.benchRecord},
		{"import", b.benchImport},
		{"verify and session read", b.benchFixture},
	}
	if err := runBenchSteps(ctx, "bench", steps, b.logf); err != nil {
		return err
	}
	b.print()
	return nil
}

const benchSeed = 1

func benchWriters(events int) int { return min(100, max(1, events/100)) }

func (b *bench) logf(format string, a ...any) {
	fmt.Fprintf(b.e.Stderr, "  [%6.1fs] %s\n", time.Since(b.start).Seconds(), fmt.Sprintf(format, a...))
}

func (b *bench) add(r row) { b.rows = append(b.rows, r) }

func (b *bench) note(format string, a ...any) { b.notes = append(b.notes, fmt.Sprintf(format, a...)) }

func (b *bench) print() {
	printBenchTable(b.e.Stdout, "PEER (C git, this run)", b.rows, "", b.notes, b.start)
}

// benchStep is one measured stage of a bench.
type benchStep struct {
	name string
	fn   func(context.Context) error
}

// runBenchSteps runs the stages in order, logging each one's duration,
// and stops at the first error (or when ctx ends).
func runBenchSteps(ctx context.Context, label string, steps []benchStep, logf func(string, ...any)) error {
	for _, s := range steps {
		if err := ctx.Err(); err != nil {
			return err
		}
		t0 := time.Now()
		if err := s.fn(ctx); err != nil {
			return fmt.Errorf("%s %s: %w", label, s.name, err)
		}
		logf("%s: done in %s", s.name, time.Since(t0).Round(10*time.Millisecond))
	}
	return nil
}

// printBenchTable prints a bench's result table, the count of targets met
// and missed (with skipped, when set, saying why targets were not judged),
// the total time and load, and the notes: one layout for every bench.
func printBenchTable(out io.Writer, peerHeader string, rows []row, skipped string, notes []string, start time.Time) {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "MEASURE\tGIT-LOSSLESS\t%s\tTARGET\tRESULT\n", peerHeader)
	met, missed := 0, 0
	for _, r := range rows {
		res := "-"
		if r.met != nil {
			if *r.met {
				res, met = "MET", met+1
			} else {
				res, missed = "MISSED", missed+1
			}
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", r.what, r.ours, r.peer, r.target, res)
	}
	w.Flush()
	if skipped != "" {
		fmt.Fprintf(out, "\n%s", skipped)
	}
	fmt.Fprintf(out, "\n%d targets met, %d missed; total bench time %s; load %s at end\n", met, missed, time.Since(start).Round(100*time.Millisecond), loadAvg())
	if len(notes) > 0 {
		fmt.Fprintln(out, "\nnotes:")
		for _, n := range notes {
			fmt.Fprintf(out, "  - %s\n", n)
		}
	}
}

// samples are measured durations.
type samples []time.Duration

// pct returns the p-th percentile (nearest rank).
func (s samples) pct(p float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	c := append(samples(nil), s...)
	sort.Slice(c, func(i, j int) bool { return c[i] < c[j] })
	k := int(p/100*float64(len(c))+0.5) - 1
	return c[max(0, min(len(c)-1, k))]
}

func (s samples) String() string {
	return fmt.Sprintf("p50 %s p95 %s", ms(s.pct(50)), ms(s.pct(95)))
}

func ms(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%.3f ms", float64(d)/1e6)
	case d < 100*time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/1e6)
	case d < 10*time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}

func yes(v bool) *bool { return &v }

// loadAvg returns the 1, 5 and 15 minute load averages where the system
// tells them: figures taken on a busy machine are slower than it can do.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}

// childEnv is the environment of the processes the bench runs: no
// repository selection inherited from a caller (a hook, a git alias).
func childEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY", "GIT_NAMESPACE":
			continue
		}
		out = append(out, kv)
	}
	return append(out, "GIT_AUTHOR_NAME=bench", "GIT_AUTHOR_EMAIL=bench@localhost",
		"GIT_COMMITTER_NAME=bench", "GIT_COMMITTER_EMAIL=bench@localhost")
}

// runProc runs a process in dir with stdin and returns its wall time and
// standard output.
func runProc(ctx context.Context, dir string, stdin []byte, name string, args ...string) (time.Duration, []byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = childEnv()
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	t0 := time.Now()
	err := cmd.Run()
	d := time.Since(t0)
	if err != nil {
		return d, nil, fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return d, out.Bytes(), nil
}

// newRepo creates an empty repository with its loose-object fan-out
// directories (see benchdata.Fanout), for us and for the C git peers.
func (b *bench) newRepo(name string) (string, error) {
	dir := filepath.Join(b.root, name)
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	if err := benchdata.GitInit(dir); err != nil {
		return "", err
	}
	return dir, benchdata.Fanout(dir)
}

// diskFloor measures, in dir, what every write of the archive pays on this
// disk at this moment: a small file's create + write + close, and an fsync
// of a 4 KiB write. On the shared machines this project is built on, both
// vary tenfold from one directory and one minute to the next, so every
// bench prints them beside its figures.
func diskFloor(dir string, creates, syncs int) (create, fsync samples, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(dir)
	block := bytes.Repeat([]byte("x"), 4096)
	for i := range creates + 10 {
		t0 := time.Now()
		f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(i)), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return nil, nil, err
		}
		_, err = f.Write(block[:200])
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, nil, err
		}
		if i >= 10 {
			create = append(create, time.Since(t0))
		}
	}
	f, err := os.OpenFile(filepath.Join(dir, "sync"), os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	for i := range syncs + 5 {
		if _, err := f.Write(block); err != nil {
			return nil, nil, err
		}
		t0 := time.Now()
		if err := f.Sync(); err != nil {
			return nil, nil, err
		}
		if i >= 5 {
			fsync = append(fsync, time.Since(t0))
		}
	}
	return create, fsync, nil
}

// diskLine is the one-line disk floor the bench headers print.
func diskLine(dir string) string {
	create, fsync, err := diskFloor(dir, 100, 30)
	if err != nil {
		return "not measured: " + err.Error()
	}
	return fmt.Sprintf("file create p50 %s, fsync p50 %s (measured now, beside the fixtures)", ms(create.pct(50)), ms(fsync.pct(50)))
}
