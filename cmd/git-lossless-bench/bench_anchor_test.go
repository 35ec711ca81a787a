package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestBenchAnchorSmall runs `bench anchor` at a tiny size as a user would
// (the real binary, in a sandbox): every row is measured beside its C git
// peer, none is judged against targets stated for larger fixtures, the
// fixtures go under the user cache dir and are removed afterwards, and no
// anchor key is made outside them. The figures themselves are not
// checked: they depend on the machine.
func TestBenchAnchorSmall(t *testing.T) {
	sb := newSandbox(t)
	r := sb.ok(sb.root, "bench", "anchor", "--anchor-writers", "12", "--verify-events", "120", "--sync-events", "200", "--anchor-samples", "2")
	out := r.stdout
	cache := filepath.Join(sb.home, ".cache", "git-lossless", "bench")
	if !strings.Contains(out, "  repos     "+cache+string(filepath.Separator)+"anchor-") || !strings.Contains(out, "(removed afterwards)") {
		t.Errorf("fixtures not under the user cache dir:\n%s", out)
	}
	if left, _ := filepath.Glob(filepath.Join(cache, "anchor-*")); len(left) != 0 {
		t.Errorf("fixtures left behind: %v", left)
	}
	if _, err := os.Stat(filepath.Join(sb.root, "config", "git-lossless", "anchor-key")); err == nil {
		t.Errorf("the bench made an anchor key in the user's config dir")
	}
	dist := `p50 [\d.]+ m?s p95 [\d.]+ m?s`
	dur := `[\d.]+ m?s`
	for _, want := range []string{
		`(?m)^  machine   .+ CPUs, .*git version`,
		`(?m)^  load      .* at start`,
		`(?m)^  disk      file create p50 ` + dur + `, fsync p50 ` + dur,
		`(?m)^anchor push, 12 writers, a new checkpoint each \(1 event appended before each\), whole process \(2\)\s+` + dist +
			"\\s+`git push` of that writer's ref \\(its new batch\\): " + dist + `\s+p50 <= 1 s\s+-$`,
		`(?m)^  anchor push / ` + "`git push`" + ` of one ref, p50\s+[\d.]+x\s+-\s+<= 2x\s+-$`,
		`(?m)^anchor push, 12 writers, nothing moved \(checkpoint reused, up to date\) \(2\)\s+` + dist + "\\s+`git push` of that ref, up to date: " + dist + `\s+-\s+-$`,
		`(?m)^  the same as the first, its \d+ packs repacked into 1 \(2\)\s+` + dist + "\\s+`git push`, the same: " + dist + `; ours [\d.]+x\s+-\s+-$`,
		`(?m)^verify --anchor, 120 events in 12 writers, whole process \(median of 2\)\s+` + dur + "\\s+`git fsck`: " + dur + `\s+<= 2.5 s\s+-$`,
		`(?m)^  the same without --anchor \(median of 2\)\s+` + dur + `\s+-\s+-\s+-$`,
		`(?m)^sync, second clone: 200 new events pushed, 20 adopted, whole process \(median of 2\)\s+` + dur +
			"\\s+`git fetch` \\+ `git push`, same refs: " + dur + ` \(` + dur + ` \+ ` + dur + `\); ours [\d.]+x\s+<= 1.5x\s+-$`,
		`(?m)^0 targets met, 0 missed; total bench time .*; load .* at end$`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("bench anchor output lacks %s\n%s", want, out)
		}
	}
	if regexp.MustCompile(`(?m)\s(MET|MISSED)$`).MatchString(out) || !strings.Contains(out, "targets not judged, the fixture being smaller than stated: anchor push (stated for 1000 writers; this run: 12); verify --anchor (stated for 100000 events in 1000 writers; this run: 120 in 12); sync (stated for 10000 new events; this run: 200)") {
		t.Errorf("a target judged on a smaller fixture:\n%s", out)
	}

	// Bad sizes are usage errors.
	for _, args := range [][]string{{"--anchor-samples", "0"}, {"--anchor-writers", "10", "--verify-events", "5"}, {"--sync-events", "1"}} {
		if r := sb.run(sb.root, append([]string{"bench", "anchor"}, args...)...); r.code != exitUsage {
			t.Errorf("%v: exit %d %s", args, r.code, r.stderr)
		}
	}
}
