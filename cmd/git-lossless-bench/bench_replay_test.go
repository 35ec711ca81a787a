package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/internal/testkit"
)

// replaySample copies the real 2.1.328 session (main and subagent
// transcripts) under dir, /home/dev/project rewritten to root when root is
// set, and returns the main transcript.
func replaySample(t *testing.T, dir, root string) string {
	t.Helper()
	return testkit.CopySample(t, dir, root, "")
}

// TestBenchReplayCLI runs `bench replay DIR` on the real sample as a user
// would: losslessness passes with every operation accounted for, the
// floor saves exactly nothing and the ceiling something, the speed is
// measured against its target, the scratch repository is removed; and a
// transcript whose Read text no longer matches the archive fails the run
// (exit 1) naming the session, the line and the path.
func TestBenchReplayCLI(t *testing.T) {
	sb := newSandbox(t)
	projects := filepath.Join(sb.root, "projects", "-home-dev-project")
	replaySample(t, projects, "")
	r := sb.ok(sb.root, "bench", "replay", filepath.Dir(projects), "--replay-rounds", "3", "--replay-files", "3")
	out := r.stdout
	for _, want := range []string{
		`(?m)^  input    1 sessions, 2 transcripts, 0\.\d MB, from .*/projects, swept into a scratch repository$`,
		`(?m)^losslessness, realistic \(10 file operations\)\s+0 divergences; 9 compared byte for byte \(3 shown texts too\), 0 withheld by the deny list, 0 unverifiable, 1 reused ids\s+seed: one divergence fails the run\s+0 divergences\s+MET$`,
		`(?m)^losslessness, floor and ceiling \(10 file operations\)\s+0 divergences; 10 compared`,
		`(?m)^savings, restore, realistic \(3 reads, 0 re-reads\)\s+0\.0% \(\d+ -> \d+ tokens;.*seed: -1\.4%`,
		`(?m)^savings, packs, realistic\s+0\.0% `,
		`(?m)^savings, restore, ceiling \(edit loop, 3 re-reads\)\s+[1-9]\d?\.\d% .*seed: 72\.1%\s+> 0\s+MET$`,
		`(?m)^savings, restore, floor \(3 files read once\)\s+0\.0% \(\d+ -> \d+ tokens\); packs 0\.0%\s+seed: 0\.0%\s+exactly 0\s+MET$`,
		`(?m)^replay speed, 0\.\d MB of transcript, first run\s+\d+ MB/s .*>= 50 MB/s\s+-$`,
		`(?m)^speed not judged: the target is stated for at least 4 MB of transcript \(this run: 0\.4 MB\)$`,
		`(?m)^` + recallSession + `\s+2\s+0\.\d\d\s+10\s+9\s+3\s+0\s+\d+\s+0\.0%\s+0\.0%\s+0$`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("bench replay output lacks %s\n%s", want, out)
		}
	}
	if strings.Contains(out, "DIVERGENCES (") {
		t.Errorf("divergences on the sample:\n%s", out)
	}
	if left, _ := filepath.Glob(filepath.Join(sb.home, ".cache", "git-lossless", "bench", "replay-*")); len(left) != 0 {
		t.Errorf("scratch left behind: %v", left)
	}

	// In place: a repository that swept the session; then the transcript's
	// Read of hello.txt says something else than what was archived.
	repo := sb.initRepo("repo")
	main := replaySample(t, filepath.Join(sb.root, "claude", "-repo"), repo)
	sb.ok(repo, "sweep", main)
	r = sb.ok(repo, "bench", "replay", "--replay-rounds", "2", "--replay-files", "2")
	if !strings.Contains(r.stdout, "archived in this directory's archive") || !strings.Contains(r.stdout, " (this directory's archive)") {
		t.Errorf("in-place replay not reported:\n%s", r.stdout)
	}
	b, err := os.ReadFile(main)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	if bytes.Count(lines[21], []byte("hello world")) != 2 {
		t.Fatalf("line 22 is not the Read's result: %s", lines[21])
	}
	lines[21] = bytes.ReplaceAll(lines[21], []byte("hello world"), []byte("hello WORLD"))
	if err := os.WriteFile(main, bytes.Join(lines, nil), 0o600); err != nil {
		t.Fatal(err)
	}
	r = sb.run(repo, "bench", "replay", "--replay-rounds", "2", "--replay-files", "2")
	want := "session " + recallSession + ": " + main + " line 22: " + filepath.Join(repo, "hello.txt") + ": archived blob "
	if r.code != 1 || !strings.Contains(r.stdout, "DIVERGENCES (1;") || !strings.Contains(r.stdout, want) ||
		!strings.Contains(r.stderr, "losslessness failed: 1 divergences") {
		t.Errorf("tampered transcript: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !regexp.MustCompile(`(?m)^losslessness, realistic \(10 file operations\)\s+1 divergences;.*MISSED$`).MatchString(r.stdout) {
		t.Errorf("losslessness row not MISSED:\n%s", r.stdout)
	}
}
