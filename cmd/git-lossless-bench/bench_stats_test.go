package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestBenchStatsSmall runs `bench stats` on a 30-commit fixture: both
// rows are measured and printed, the target is not judged (it is stated
// for 1,000 commits), stats agrees with the fixture's bookkeeping, and the
// temporary fixture is removed. It asserts no time.
func TestBenchStatsSmall(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not on PATH")
	}
	base := t.TempDir()
	cache := filepath.Join(base, "cache")
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("HOME", filepath.Join(base, "home"))
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	var out, errb bytes.Buffer
	o := statsBenchOpts{commits: 30, rounds: 1, exe: e2eBin}
	if err := runBenchStats(context.Background(), &env{Stdout: &out, Stderr: &errb, Getenv: os.Getenv}, o); err != nil {
		t.Fatalf("%v\n%s\n%s", err, out.String(), errb.String())
	}
	dur := `p50 [0-9.]+ m?s p95 [0-9.]+ m?s`
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^  fixture  30 commits over 40 files, [1-9][0-9]* of them with agent writes \([1-9][0-9]* archived events`),
		regexp.MustCompile(`(?m)^  targets  stated for 1000 commits; this smaller fixture is measured, not judged$`),
		regexp.MustCompile("(?m)^`git lossless stats HEAD` over 30 commits, fresh process \\(1\\) +" + dur + " +`git log --numstat HEAD`: " + dur + ` +p50 <= 2x peer p50 +-$`),
		regexp.MustCompile("(?m)^`git lossless stats --json HEAD`, fresh process \\(1\\) +" + dur),
		regexp.MustCompile(`(?m)^  - ratio of the medians: [0-9.]+x git log --numstat`),
		regexp.MustCompile(`(?m)^  - stats found ([0-9]+) agent lines and ([0-9]+) rewritten of [0-9]+ lines added; the fixture's own bookkeeping: ([0-9]+) and ([0-9]+)$`),
	} {
		if !want.MatchString(out.String()) {
			t.Errorf("bench stats output lacks %s\n%s", want, out.String())
		}
	}
	if m := regexp.MustCompile(`stats found ([0-9]+) agent lines and ([0-9]+) rewritten of [0-9]+ lines added; the fixture's own bookkeeping: ([0-9]+) and ([0-9]+)`).FindStringSubmatch(out.String()); m == nil || m[1] != m[3] || m[2] != m[4] || m[1] == "0" {
		t.Errorf("stats disagrees with the fixture's bookkeeping: %v", m)
	}
	if strings.Contains(out.String(), "MET") {
		t.Errorf("a fixture smaller than the target's was judged:\n%s", out.String())
	}
	if left, _ := filepath.Glob(filepath.Join(cache, "git-lossless", "bench", "stats-*")); len(left) != 0 {
		t.Errorf("bench stats left %v behind", left)
	}
}

// The bench command dispatches `bench stats` and checks its flags.
func TestBenchStatsFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "stats", "--rounds", "0"}, "--rounds must be at least 1"},
		{[]string{"bench", "stats", "--stats-commits", "5"}, "--stats-commits must be at least 10"},
	} {
		var out bytes.Buffer
		code := run(context.Background(), c.args, &env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out, Getenv: os.Getenv})
		if code != exitUsage || !strings.Contains(out.String(), c.want) {
			t.Errorf("%v: exit %d\n%s", c.args, code, out.String())
		}
	}
}
