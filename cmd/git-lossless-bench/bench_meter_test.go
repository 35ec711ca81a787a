package main

import (
	"path/filepath"
	"regexp"
	"testing"
)

// TestBenchMeterSmall runs `bench meter` on a small fixture: every row is
// measured and printed with the figures, none is judged against the
// target (stated for 100,000 events), and the fixture is removed. It
// asserts no time.
func TestBenchMeterSmall(t *testing.T) {
	sb := newSandbox(t)
	out := sb.ok(sb.root, "bench", "meter", "--events", "300", "--rounds", "1").stdout
	dur := `p50 [0-9.]+ m?s p95 [0-9.]+ m?s`
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^  fixture  300 events: 3 Claude Code-like sessions over 200 files`),
		regexp.MustCompile(`(?m)^  targets  stated for 100000 events; this smaller fixture is measured, not judged$`),
		regexp.MustCompile(`(?m)^meter, [1-9][0-9]* reads of 300 events, in process, token cache cold \(1\) +` + dur + ` +- +- +-$`),
		regexp.MustCompile(`(?m)^meter, in process, token cache warm \(1\); beside it: the store's query for the reads alone +` + dur + ` +` + dur + ` +p50 <= 300 ms +-$`),
		regexp.MustCompile("(?m)^`git lossless meter` \\(the table\\), fresh process, token cache warm \\(1\\) +" + dur + ` +- +p50 <= 300 ms +-$`),
		regexp.MustCompile("(?m)^`git lossless meter --json` \\(every figure, [1-9][0-9,]* rows\\), fresh process, token cache warm \\(1\\) +" + dur + ` +- +- +-$`),
		regexp.MustCompile("(?m)^`git lossless meter`, fresh process, token cache cold \\(1\\) +" + dur + ` +- +- +-$`),
		regexp.MustCompile(`(?m)^0 targets met, 0 missed; total bench time`),
		regexp.MustCompile(`(?m)^  - figures: [1-9][0-9,]* reads, [1-9][0-9,]* tokens \(o200k\); [0-9,]+ re-reads`),
		regexp.MustCompile(`(?m)^  - cold: [1-9][0-9]* distinct versions counted`),
	} {
		if !want.MatchString(out) {
			t.Errorf("bench meter output lacks %s\n%s", want, out)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(sb.home, ".cache", "git-lossless", "bench", "meter-*")); len(left) > 0 {
		t.Errorf("bench meter left %v behind", left)
	}
}
