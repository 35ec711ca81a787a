package main

// `git lossless bench import`: `git lossless import` of a generated
// Claude Code projects directory (100+ MB over many sessions, each with
// a subagent, cwds in two repositories) as a fresh process into fresh
// repositories, fsync on; then the same import again (nothing new). The
// peer is C git storing the same transcript bytes (`git hash-object -w
// --stdin-paths`, one process), and the disk floor is printed beside.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/git-lossless/git-lossless/internal/cli"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/internal/testkit/benchdata"
	"github.com/git-lossless/git-lossless/internal/testkit/transcriptgen"
)

// importBenchOpts configures `git lossless bench import`.
type importBenchOpts struct {
	mb       int    // transcript megabytes generated (main and subagents)
	sessions int    // sessions they are spread over
	rounds   int    // fresh imports measured
	keep     string // fixture directory ("" = a temporary one)
}

// importTargetMBs is the target: MB of transcript per second.
const importTargetMBs = 100

func benchImportFlags(fs *pflag.FlagSet) func(ctx context.Context, e *env, args []string) (handled bool, err error) {
	mb := fs.Int("import-mb", 120, "bench import: megabytes of transcript generated")
	sessions := fs.Int("import-sessions", 60, "bench import: sessions they are spread over (each with a subagent)")
	rounds := fs.Int("import-rounds", 3, "bench import: fresh imports measured (the median is reported)")
	keep := fs.String("import-keep", "", "bench import: build the fixture in DIR and keep it")
	return func(ctx context.Context, e *env, args []string) (bool, error) {
		if len(args) != 1 || args[0] != "import" {
			return false, nil
		}
		o := importBenchOpts{mb: *mb, sessions: *sessions, rounds: *rounds, keep: *keep}
		switch {
		case o.mb < 1:
			return true, cli.Usagef("--import-mb must be at least 1")
		case o.sessions < 2:
			return true, cli.Usagef("--import-sessions must be at least 2")
		case o.rounds < 1:
			return true, cli.Usagef("--import-rounds must be at least 1")
		}
		return true, runBenchImport(ctx, e, o)
	}
}

type importBench struct {
	o        importBenchOpts
	e        *env
	exe      string
	root     string
	projects string
	repos    []string
	bytes    int64 // transcript bytes generated
	files    int
	rows     []row
	notes    []string
	start    time.Time
}

func runBenchImport(ctx context.Context, e *env, o importBenchOpts) error {
	if _, err := exec.LookPath("git"); err != nil {
		return cli.WithHint(errors.New("bench needs git on PATH"), "install git; repositories are created with it")
	}
	exe, err := productExe()
	if err != nil {
		return fmt.Errorf("bench import: locate own binary: %w", err)
	}
	b := &importBench{o: o, e: e, exe: exe, start: time.Now()}
	var cleanup func()
	b.root, cleanup, err = benchDir(o.keep, "import-", true)
	defer cleanup()
	if err != nil {
		return fmt.Errorf("bench import: fixture directory: %w", err)
	}
	if b.root, err = filepath.EvalSymlinks(b.root); err != nil {
		return fmt.Errorf("bench import: %w", err)
	}
	b.projects = filepath.Join(b.root, "claude", "projects")
	b.repos = []string{filepath.Join(b.root, "repo-a"), filepath.Join(b.root, "repo-b")}

	fmt.Fprintf(e.Stdout, "git lossless bench import\n")
	fmt.Fprintf(e.Stdout, "  machine   %s/%s, %d CPUs, %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
	fmt.Fprintf(e.Stdout, "  fixture   %s%s\n", b.root, map[bool]string{true: " (kept)", false: " (removed afterwards)"}[o.keep != ""])
	fmt.Fprintf(e.Stdout, "  load      %s at start (other processes share these CPUs and disk)\n", loadAvg())
	fmt.Fprintf(e.Stdout, "  disk      %s\n", diskLine(filepath.Join(b.root, "floor")))

	steps := []benchStep{
		{"generate", b.generate},
		{"import", b.benchImport},
		{"peer", b.benchPeer},
	}
	if err := runBenchSteps(ctx, "bench import", steps, b.logf); err != nil {
		return err
	}
	fmt.Fprintln(e.Stdout)
	skipped := ""
	if !b.targetSize() {
		skipped = fmt.Sprintf("speed target not judged: it is stated for 100 MB of transcript or more (this run: %s)\n", cli.MiB(b.bytes))
	}
	printBenchTable(e.Stdout, "BESIDE IT (this run)", b.rows, skipped, b.notes, b.start)
	return nil
}

// targetSize is whether the fixture is the size the target is stated for.
func (b *importBench) targetSize() bool { return b.bytes >= 100<<20 }

// judge says whether the target was met, or nothing on a smaller fixture.
func (b *importBench) judge(met bool) *bool {
	if !b.targetSize() {
		return nil
	}
	return yes(met)
}

func (b *importBench) logf(format string, a ...any) {
	fmt.Fprintf(b.e.Stderr, "  [%6.1fs] %s\n", time.Since(b.start).Seconds(), fmt.Sprintf(format, a...))
}

// generate writes the projects directory: sessions of varied sizes (a
// quarter to 1.75 times the mean), alternately in the two repositories, each
// with a subagent, where Claude Code keeps them.
func (b *importBench) generate(ctx context.Context) error {
	mean := int64(b.o.mb) << 20 / int64(b.o.sessions)
	for i := range b.o.sessions {
		if err := ctx.Err(); err != nil {
			return err
		}
		repo := b.repos[i%2]
		id := fmt.Sprintf("b3a7c0de-%04x-4000-a000-%012x", i, i)
		size := mean/4 + mean*int64((i*37)%64)/42 // 0.25 to 1.75 times the mean
		main := filepath.Join(b.projects, strings.ReplaceAll(repo, string(filepath.Separator), "-"), id+".jsonl")
		sub := filepath.Join(strings.TrimSuffix(main, ".jsonl"), "subagents", "agent-"+transcriptgen.SubagentID(int64(i+1))+".jsonl")
		var mb, sb bytes.Buffer
		if err := transcriptgen.GenerateWith(&mb, transcriptgen.Options{Seed: int64(i + 1), TargetBytes: int(max(size, 10_000)),
			Root: repo, SessionID: id, Subagent: &sb, Secrets: true}); err != nil {
			return err
		}
		for _, f := range []struct {
			path string
			b    []byte
		}{{main, mb.Bytes()}, {sub, sb.Bytes()}} {
			if err := os.MkdirAll(filepath.Dir(f.path), 0o700); err != nil {
				return err
			}
			if err := os.WriteFile(f.path, f.b, 0o600); err != nil {
				return err
			}
			b.bytes += int64(len(f.b))
			b.files++
		}
	}
	b.logf("projects: %d sessions, %d transcripts, %s", b.o.sessions, b.files, cli.MiB(b.bytes))
	return nil
}

// freshRepos (re)creates the two repositories, with their loose-object
// fan-out directories as repositories with history have them.
func (b *importBench) freshRepos() error {
	for _, r := range b.repos {
		if err := os.RemoveAll(r); err != nil {
			return err
		}
		if err := benchdata.GitInit(r); err != nil {
			return err
		}
		if err := benchdata.Fanout(r); err != nil {
			return err
		}
	}
	return nil
}

// runImport runs `git-lossless import --quiet --json` on the projects
// directory as a fresh process and returns its wall time, the CPU time it
// used (user and system: on a busy machine the wall time says more about
// the others), and its summary.
func (b *importBench) runImport(ctx context.Context) (wall, cpu time.Duration, s hooks.ImportStats, err error) {
	cmd := exec.CommandContext(ctx, b.exe, "import", "--quiet", "--json", b.projects)
	cmd.Dir, cmd.Env = b.root, childEnv()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	t0 := time.Now()
	err = cmd.Run()
	wall = time.Since(t0)
	if err != nil {
		return wall, 0, s, fmt.Errorf("import: %v: %s", err, strings.TrimSpace(errb.String()))
	}
	cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	if err := json.Unmarshal(out.Bytes(), &s); err != nil {
		return wall, cpu, s, fmt.Errorf("import --json: %w: %.200s", err, out.Bytes())
	}
	return wall, cpu, s, nil
}

func (b *importBench) benchImport(ctx context.Context) error {
	var fresh, cpus samples
	var stats hooks.ImportStats
	for range b.o.rounds {
		if err := b.freshRepos(); err != nil {
			return err
		}
		d, cpu, s, err := b.runImport(ctx)
		if err != nil {
			return err
		}
		if s.Sessions != b.o.sessions || s.Transcripts != b.files || s.Events == 0 || s.Bytes != b.bytes || len(s.Failed) > 0 || len(s.Stores) != 2 {
			return fmt.Errorf("fresh import did not import everything: %d sessions, %d transcripts, %d of %d bytes, %d events, %d failed, %d archives",
				s.Sessions, s.Transcripts, s.Bytes, b.bytes, s.Events, len(s.Failed), len(s.Stores))
		}
		fresh, cpus, stats = append(fresh, d), append(cpus, cpu), s
		b.logf("fresh import: %s, %.0f MB/s, %s CPU, load %s", ms(d), mbps(b.bytes, d), ms(cpu), loadAvg())
	}
	// The disk floor measured now, beside the fixtures: on a shared
	// machine it moves from one minute to the next.
	disk := diskLine(filepath.Join(b.root, "floor"))
	med := fresh.pct(50)
	rate := mbps(b.bytes, med)
	b.rows = append(b.rows, row{
		what: fmt.Sprintf("import of %s (%d sessions, %d transcripts) into 2 fresh repositories, fsync on, fresh process (median of %d)",
			cli.MiB(b.bytes), b.o.sessions, b.files, len(fresh)),
		ours:   fmt.Sprintf("%.0f MB/s (%s, %s CPU, %d events)", rate, ms(med), ms(cpus.pct(50)), stats.Events),
		peer:   "disk floor: " + strings.TrimSuffix(disk, " (measured now, beside the fixtures)"),
		target: fmt.Sprintf(">= %d MB/s", importTargetMBs),
		met:    b.judge(rate >= importTargetMBs),
	})
	d, _, s, err := b.runImport(ctx)
	if err != nil {
		return err
	}
	if s.Events != 0 || s.UpToDate != b.files {
		return fmt.Errorf("second import was not a no-op: %d events, %d of %d transcripts up to date", s.Events, s.UpToDate, b.files)
	}
	b.rows = append(b.rows, row{
		what:   "the same import again (nothing new: every cursor at its file's end), fresh process",
		ours:   fmt.Sprintf("%s, 0 events", ms(d)),
		peer:   "-",
		target: "adds nothing",
		met:    yes(s.Events == 0),
	})
	b.notes = append(b.notes, fmt.Sprintf("sessions span a quarter to 1.75 times the mean size (%s); every transcript goes through the hooks' sweep: spans, file evidence, deny list, secret redaction (the generator puts made-up credentials in `env` output)", cli.MiB(b.bytes/int64(b.o.sessions))))
	return nil
}

// benchPeer: C git storing the same bytes, one blob per transcript, in a
// fresh repository (`git hash-object -w --stdin-paths`, loose objects).
func (b *importBench) benchPeer(ctx context.Context) error {
	repo := filepath.Join(b.root, "peer")
	if err := os.RemoveAll(repo); err != nil {
		return err
	}
	if err := benchdata.GitInit(repo); err != nil {
		return err
	}
	if err := benchdata.Fanout(repo); err != nil {
		return err
	}
	var paths bytes.Buffer
	err := filepath.WalkDir(b.projects, func(p string, de os.DirEntry, err error) error {
		if err == nil && !de.IsDir() && strings.HasSuffix(p, ".jsonl") {
			paths.WriteString(p + "\n")
		}
		return err
	})
	if err != nil {
		return err
	}
	d, _, err := runProc(ctx, repo, paths.Bytes(), "git", "hash-object", "-w", "--stdin-paths")
	if err != nil {
		return err
	}
	b.rows = append(b.rows, row{
		what:   fmt.Sprintf("C git: hash-object -w --stdin-paths of the same %d transcripts (whole files as blobs)", b.files),
		ours:   "-",
		peer:   fmt.Sprintf("%.0f MB/s (%s)", mbps(b.bytes, d), ms(d)),
		target: "-",
	})
	return nil
}

func mbps(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / (1 << 20) / d.Seconds()
}
