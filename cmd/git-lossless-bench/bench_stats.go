package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/git-lossless/git-lossless/internal/cli"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/git-lossless/git-lossless/internal/testkit/blamefixture"
)

// `git lossless bench stats`: the issue's target "stats over 1,000
// commits <= 2x git log --numstat of the same range", measured on the
// blame fixture (package internal/testkit/blamefixture: 1,000 commits,
// about half carrying archived agent writes), process against process:
// `git log --numstat` and `git lossless stats` of the same range, run
// alternately so load drifts hit both alike.

const (
	statsTargetRatio   = 2.0
	statsTargetCommits = 1000
)

// statsBenchOpts configures `git lossless bench stats`.
type statsBenchOpts struct {
	commits int
	rounds  int
	keep    string
	exe     string // the git-lossless binary measured ("" = this one)
}

// benchStatsFlags returns the dispatcher of `git lossless bench stats`;
// --rounds and --keep are flags the bench command already has.
func benchStatsFlags(fs *pflag.FlagSet) func(ctx context.Context, e *env, args []string) (handled bool, err error) {
	commits := fs.Int("stats-commits", statsTargetCommits, "bench stats: commits in the fixture")
	return func(ctx context.Context, e *env, args []string) (bool, error) {
		if len(args) != 1 || args[0] != "stats" {
			return false, nil
		}
		o := statsBenchOpts{commits: *commits, rounds: 10}
		if f := fs.Lookup("rounds"); f != nil && f.Changed {
			n, err := strconv.Atoi(f.Value.String())
			if err != nil {
				return true, cli.Usagef("--rounds: %v", err)
			}
			o.rounds = n
		}
		if f := fs.Lookup("keep"); f != nil {
			o.keep = f.Value.String()
		}
		switch {
		case o.commits < 10:
			return true, cli.Usagef("--stats-commits must be at least 10")
		case o.rounds < 1:
			return true, cli.Usagef("--rounds must be at least 1")
		}
		return true, runBenchStats(ctx, e, o)
	}
}

func runBenchStats(ctx context.Context, e *env, o statsBenchOpts) error {
	start := time.Now()
	if _, err := exec.LookPath("git"); err != nil {
		return cli.WithHint(errors.New("bench needs git on PATH"), "install git; the fixture is built and the peer is measured with it")
	}
	exe := o.exe
	if exe == "" {
		var err error
		if exe, err = productExe(); err != nil {
			return fmt.Errorf("bench stats: locate own binary: %w", err)
		}
	}
	root, cleanup, err := benchDir(o.keep, "stats-", false)
	defer cleanup()
	if err != nil {
		return fmt.Errorf("bench stats: fixture directory: %w", err)
	}
	logf := func(format string, a ...any) {
		fmt.Fprintf(e.Stderr, "  [%6.1fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, a...))
	}
	gitVersion := "git ?"
	if out, err := exec.CommandContext(ctx, "git", "version").Output(); err == nil {
		gitVersion = strings.TrimSpace(string(out))
	}
	fx := blamefixture.Fixture{Commits: o.commits, Files: 40}
	target := o.commits >= statsTargetCommits
	fmt.Fprintf(e.Stdout, "git lossless bench stats\n")
	fmt.Fprintf(e.Stdout, "  machine  %s/%s, %d CPUs, %s, %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), gitVersion)
	t0 := time.Now()
	bt, err := fx.Cached(ctx, root)
	if err != nil {
		return fmt.Errorf("bench stats: fixture: %w", err)
	}
	logf("fixture: %s ready in %s", bt.Dir, time.Since(t0).Round(10*time.Millisecond))
	fmt.Fprintf(e.Stdout, "  fixture  %d commits over %d files, %d of them with agent writes (%d archived events, 2 harnesses, 4 contexts) (package internal/testkit/blamefixture %s)\n",
		bt.Commits, fx.Files, bt.AgentCommits, bt.Events, blamefixture.Version)
	fmt.Fprintf(e.Stdout, "  repos    %s%s\n", root, map[bool]string{true: " (kept, reused when complete)", false: " (removed afterwards)"}[o.keep != ""])
	fmt.Fprintf(e.Stdout, "  load     %s at start (other processes share these CPUs and disk)\n", loadAvg())
	if !target {
		fmt.Fprintf(e.Stdout, "  targets  stated for %d commits; this smaller fixture is measured, not judged\n", statsTargetCommits)
	}
	fmt.Fprintln(e.Stdout)

	const rng = "HEAD"
	proc := func(name string, args ...string) (time.Duration, []byte, error) {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = bt.Dir
		cmd.Env = childEnv()
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
	// Once, checked: stats finds the commits and the agent lines the
	// fixture made (a fast wrong answer is no answer).
	_, out, err := proc(exe, "stats", "--json", rng)
	if err != nil {
		return err
	}
	var doc struct {
		Commits []json.RawMessage `json:"commits"`
		Totals  struct {
			Agent, Rewritten, Added int
		} `json:"totals"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		return fmt.Errorf("stats --json: %w", err)
	}
	if len(doc.Commits) != bt.Commits {
		return fmt.Errorf("stats lists %d commits, the fixture has %d", len(doc.Commits), bt.Commits)
	}
	logf("stats --json: %d commits, %d lines added, %d agent lines (the fixture made %d), %d rewritten (made %d)",
		len(doc.Commits), doc.Totals.Added, doc.Totals.Agent, bt.AgentLines, doc.Totals.Rewritten, bt.Rewritten)
	if _, _, err := proc("git", "log", "--numstat", rng); err != nil { // warm the page cache for both
		return err
	}
	var peer, ours, oursJSON samples
	var ratios []float64
	for range o.rounds {
		dp, _, err := proc("git", "log", "--numstat", rng)
		if err != nil {
			return err
		}
		do, _, err := proc(exe, "stats", rng)
		if err != nil {
			return err
		}
		dj, _, err := proc(exe, "stats", "--json", rng)
		if err != nil {
			return err
		}
		peer, ours, oursJSON = append(peer, dp), append(ours, do), append(oursJSON, dj)
		ratios = append(ratios, float64(do)/float64(dp))
	}
	logf("git log --numstat %s; git lossless stats %s; --json %s", peer, ours, oursJSON)
	ratio := float64(ours.pct(50)) / float64(peer.pct(50))
	judge := func(met bool) *bool {
		if !target {
			return nil
		}
		return yes(met)
	}
	rows := []row{
		{what: fmt.Sprintf("`git lossless stats HEAD` over %d commits, fresh process (%d)", bt.Commits, len(ours)), ours: ours.String(),
			peer: fmt.Sprintf("`git log --numstat HEAD`: %s", peer), target: "p50 <= 2x peer p50",
			met: judge(ratio <= statsTargetRatio)},
		{what: fmt.Sprintf("`git lossless stats --json HEAD`, fresh process (%d)", len(oursJSON)), ours: oursJSON.String(), peer: "same as above", target: "-"},
	}
	notes := []string{
		fmt.Sprintf("ratio of the medians: %.2fx git log --numstat (per-round ratios, taken alternately: p50 %.2fx, min %.2fx, max %.2fx)",
			ratio, median(ratios), slices.Min(ratios), slices.Max(ratios)),
		fmt.Sprintf("stats found %d agent lines and %d rewritten of %d lines added; the fixture's own bookkeeping: %d and %d",
			doc.Totals.Agent, doc.Totals.Rewritten, doc.Totals.Added, bt.AgentLines, bt.Rewritten),
		"stats runs git log -p --unified=0 (the diff git log --numstat also computes), git diff --shortstat and git hash-object, reads the archive's events of the changed files, and reads each committed version holding a line an agent wrote",
	}
	printBenchTable(e.Stdout, "PEER (C git, this run)", rows, "", notes, start)
	return nil
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	c := slices.Clone(v)
	slices.Sort(c)
	return c[(len(c)-1)/2]
}
