package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestBenchImportSmall runs `bench import` on a small projects directory
// as a user would: every row is measured and printed, the disk floor
// beside the import's figure. Speeds are not checked: they depend on the
// machine.
func TestBenchImportSmall(t *testing.T) {
	sb := newSandbox(t)
	r := sb.ok(sb.root, "bench", "import", "--import-mb", "3", "--import-sessions", "4", "--import-rounds", "1")
	for _, want := range []string{
		`(?m)^  disk      file create p50 [\d.]+ m?s, fsync p50 [\d.]+ m?s`,
		`(?m)^import of [\d.]+ MB \(4 sessions, 8 transcripts\) into 2 fresh repositories, fsync on, fresh process \(median of 1\)\s+\d+ MB/s \([\d.]+ m?s, [\d.]+ m?s CPU, \d+ events\)\s+disk floor: file create p50 [\d.]+ m?s, fsync p50 [\d.]+ m?s\s+>= 100 MB/s\s+-$`,
		`speed target not judged: it is stated for 100 MB of transcript or more`,
		`(?m)^the same import again \(nothing new: every cursor at its file's end\), fresh process\s+[\d.]+ m?s, 0 events\s+-\s+adds nothing\s+MET$`,
		`(?m)^C git: hash-object -w --stdin-paths of the same 8 transcripts \(whole files as blobs\)\s+-\s+\d+ MB/s`,
	} {
		if !regexp.MustCompile(want).MatchString(r.stdout) {
			t.Errorf("output lacks %s:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stderr, "panic") {
		t.Errorf("stderr: %s", r.stderr)
	}
	if r := sb.run(sb.root, "bench", "import", "--import-sessions", "1"); r.code != exitUsage {
		t.Errorf("--import-sessions 1: exit %d, want %d", r.code, exitUsage)
	}
}
