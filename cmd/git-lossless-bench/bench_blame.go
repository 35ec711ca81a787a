package main

import (
	"bytes"
	"context"
	"fmt"
	"github.com/git-lossless/git-lossless/internal/cli"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/git-lossless/git-lossless/blame"
	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/internal/testkit/blamedata"
)

// `git lossless bench blame`: the target — blame of a 5,000-line
// file whose history holds 2,000 agent writes at most 1.5 times git blame
// of the same file — measured as a user meets it, whole processes paired
// in one run: `git blame FILE` and `git lossless blame FILE`, alternately,
// the median of each. The first blame builds the cache of added lines
// (blame/FORMAT.md); it is timed alone as the cold case. The accuracy
// against the fixture's own bookkeeping is printed beside the speed.

const blameTarget = 1.5

func benchBlameFlags(fs *pflag.FlagSet) func(ctx context.Context, e *env, args []string) (handled bool, err error) {
	return func(ctx context.Context, e *env, args []string) (bool, error) {
		if len(args) != 1 || args[0] != "blame" {
			return false, nil
		}
		rounds, keep := 7, ""
		if f := fs.Lookup("rounds"); f != nil && f.Changed {
			n, err := strconv.Atoi(f.Value.String())
			if err != nil || n < 1 {
				return true, cli.Usagef("--rounds must be a number from 1")
			}
			rounds = n
		}
		if f := fs.Lookup("keep"); f != nil {
			keep = f.Value.String()
		}
		return true, runBenchBlame(ctx, e, rounds, keep)
	}
}

func runBenchBlame(ctx context.Context, e *env, rounds int, keep string) error {
	exe, err := productExe()
	if err != nil {
		return fmt.Errorf("bench blame: locate own binary: %w", err)
	}
	if _, err := exec.LookPath("git"); err != nil {
		return cli.WithHint(fmt.Errorf("bench needs git on PATH"), "install git; the fixture is built with it")
	}
	root, cleanup, err := benchDir(keep, "blame-", true)
	defer cleanup()
	if err != nil {
		return err
	}
	t0 := time.Now()
	p := blamedata.Default
	fx, err := blamedata.Build(ctx, filepath.Join(root, "repo"), p)
	if err != nil {
		return fmt.Errorf("bench blame: fixture: %w", err)
	}
	fmt.Fprintf(e.Stderr, "fixture: %d lines, %d agent writes, %d commits, built in %.1fs\n", fx.Lines, fx.Writes, fx.Commits, time.Since(t0).Seconds())
	run := func(name string, args ...string) (time.Duration, error) {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = fx.Dir
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = io.Discard, &stderr
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
		s := time.Now()
		if err := cmd.Run(); err != nil {
			return 0, fmt.Errorf("%s %v: %v: %s", name, args, err, stderr.Bytes())
		}
		return time.Since(s), nil
	}
	// Cold: no cache of added lines.
	os.RemoveAll(filepath.Join(fx.Dir, ".git", "lossless", "blame"))
	cold, err := run(exe, "blame", fx.File)
	if err != nil {
		return err
	}
	var git, ours samples
	for i := 0; i < rounds; i++ {
		g, err := run("git", "blame", fx.File)
		if err != nil {
			return err
		}
		o, err := run(exe, "blame", fx.File)
		if err != nil {
			return err
		}
		git, ours = append(git, g), append(ours, o)
	}
	// Accuracy against the fixture's bookkeeping.
	off := false
	st, err := gitstore.OpenDir(fx.Dir, gitstore.Options{Fsync: &off})
	if err != nil {
		return err
	}
	lines, err := blame.File(ctx, st, "HEAD", fx.File, blame.Options{})
	if err != nil {
		return err
	}
	if len(lines) != len(fx.Owners) {
		return fmt.Errorf("bench blame: %d lines blamed, the fixture has %d", len(lines), len(fx.Owners))
	}
	got := func(i int) string {
		if lines[i].Origin != nil {
			return lines[i].Origin.Writer
		}
		return ""
	}
	// A line that differs from the bookkeeping only because git's diff
	// took the other of two equal lines nearby (two closing braces, two
	// blank lines) as the new one is counted apart: blame follows git.
	agree, swapped, agentLines := 0, 0, 0
	for i := range lines {
		if fx.Owners[i] != "" {
			agentLines++
		}
		if got(i) == fx.Owners[i] {
			agree++
			continue
		}
		for j := max(0, i-8); j < min(len(lines), i+9); j++ {
			if j != i && lines[j].Text == lines[i].Text && got(j) == fx.Owners[i] && fx.Owners[j] == got(i) {
				swapped++
				break
			}
		}
	}
	mg, mo := git.pct(50), ours.pct(50)
	ratio, coldRatio := float64(mo)/float64(mg), float64(cold)/float64(mg)
	tw := tabwriter.NewWriter(e.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "bench blame: %d lines (%d by agents), %d agent writes, %d commits; %d rounds, medians; load %s\n", fx.Lines, agentLines, fx.Writes, fx.Commits, rounds, loadAvg())
	fmt.Fprintln(tw, "WHAT\tOURS\tGIT BLAME\tRATIO\tTARGET\tMET")
	fmt.Fprintf(tw, "blame, cache warm\t%s\t%s\t%.2fx\t<= %.1fx\t%s\n", ms(mo), ms(mg), ratio, blameTarget, yesNo(ratio <= blameTarget))
	fmt.Fprintf(tw, "blame, cold (builds the cache)\t%s\t%s\t%.2fx\t-\t-\n", ms(cold), ms(mg), coldRatio)
	fmt.Fprintf(tw, "origin agrees with the bookkeeping\t%d of %d lines (%.1f%%)\t\t\t\t\n", agree, len(lines), 100*float64(agree)/float64(max(len(lines), 1)))
	fmt.Fprintf(tw, "  differs only by two equal lines swapped\t%d lines\t\t\t\t\n", swapped)
	fmt.Fprintf(tw, "  differs otherwise\t%d lines\t\t\t\t\n", len(lines)-agree-swapped)
	return tw.Flush()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
