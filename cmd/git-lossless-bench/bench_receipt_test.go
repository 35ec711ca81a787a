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

// TestBenchReceiptSmall runs `bench receipt` on a tiny fixture: every row
// is measured and printed, none is judged against the targets (they are
// stated for 100,000 events), and the temporary fixture under the user
// cache dir is removed. It asserts no time.
func TestBenchReceiptSmall(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not on PATH")
	}
	base := t.TempDir()
	cache := filepath.Join(base, "cache")
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(base, "config"))
	t.Setenv("HOME", filepath.Join(base, "home"))
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	var out, errb bytes.Buffer
	o := defaultReceiptBenchOpts()
	o.events, o.rounds, o.exe = 120, 1, e2eBin
	if err := runBenchReceipt(context.Background(), &env{Stdout: &out, Stderr: &errb, Getenv: os.Getenv}, o); err != nil {
		t.Fatalf("%v\n%s\n%s", err, out.String(), errb.String())
	}
	dur := `p50 [0-9.]+ m?s p95 [0-9.]+ m?s`
	wants := []*regexp.Regexp{
		regexp.MustCompile(`(?m)^  fixture  120 events: 3 Claude Code-like sessions over 200 files; commit C changes 50 files`),
		regexp.MustCompile(`(?m)^  load     \S+ \S+ \S+ at start`),
		regexp.MustCompile(`(?m)^  targets  stated for 100000 events; this smaller fixture is measured, not judged$`),
		regexp.MustCompile(`(?m)^receipt build, 50 paths, [1-9][0-9]* events, [1-9][0-9]* read-set rows, in process, token cache cold \(1\) +` + dur + ` +- +p50 <= 200 ms +-$`),
		regexp.MustCompile(`(?m)^receipt build, in process, token cache warm \(1\) +` + dur + ` +- +p50 <= 200 ms +-$`),
		regexp.MustCompile("(?m)^`git lossless receipt C --refresh`, fresh process, token cache cold \\(1\\) +" + dur + " +`git diff-tree -r P C` \\(the diff alone\\): " + dur + ` +p50 <= 200 ms +-$`),
		regexp.MustCompile("(?m)^sign \\+ store the receipt as a signed note, in process \\(1\\) +" + dur + " +`git notes add -f -F` \\(unsigned\\): " + dur),
		regexp.MustCompile(`(?m)^receipt verify, in process: signatures, 50 paths, [1-9][0-9]* events in 3 writers, [1-9][0-9]* blobs \(1\) +` + dur),
		regexp.MustCompile("(?m)^`git lossless receipt verify C`, fresh process \\(1\\) +" + dur + ` +same as above +p50 <= 100 ms +-$`),
		regexp.MustCompile(`(?m)^0 targets met, 0 missed; total bench time \S+; load \S+ \S+ \S+ at end$`),
		regexp.MustCompile(`(?m)^  - cold build: [1-9][0-9]* distinct versions and spans counted \([1-9][0-9]* distinct lines tokenized, [0-9]+ line counts reused\)`),
	}
	if _, err := exec.LookPath("gpg"); err == nil {
		wants = append(wants, regexp.MustCompile("`git notes show C \\| gpg --verify` \\(2 processes, signature only\\): "+dur+"; `git verify-commit <notes ref>`: "+dur))
	} else {
		wants = append(wants, regexp.MustCompile(`(?m)^  - gpg is not on PATH: the plain`))
	}
	for _, want := range wants {
		if !want.MatchString(out.String()) {
			t.Errorf("bench receipt output lacks %s\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "MET") {
		t.Errorf("a fixture smaller than the targets' was judged:\n%s", out.String())
	}
	if left, _ := filepath.Glob(filepath.Join(cache, "git-lossless", "bench", "receipt-*")); len(left) != 0 {
		t.Errorf("bench receipt left %v behind", left)
	}
}

// The bench command dispatches `bench receipt` and checks its flags.
func TestBenchReceiptFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "receipt", "--rounds", "0"}, "--rounds must be at least 1"},
		{[]string{"bench", "receipt", "--events", "10"}, "--events must be at least 120"},
	} {
		var out bytes.Buffer
		code := run(context.Background(), c.args, &env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out, Getenv: os.Getenv})
		if code != exitUsage || !strings.Contains(out.String(), c.want) {
			t.Errorf("%v: exit %d\n%s", c.args, code, out.String())
		}
	}
}
