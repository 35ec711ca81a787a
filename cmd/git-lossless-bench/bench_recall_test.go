package main

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestBenchRecallSmall runs `bench recall` on a small corpus as a user
// would: every row is measured and printed, with the SQLite peer when
// sqlite3 is on PATH and a note saying it was skipped when it is not.
// Speeds are not checked: they depend on the machine.
func TestBenchRecallSmall(t *testing.T) {
	sb := newSandbox(t)
	for _, peer := range []string{"-", ""} {
		if peer == "" {
			if _, err := exec.LookPath("sqlite3"); err != nil {
				continue
			}
		}
		r := sb.ok(sb.root, "bench", "recall", "--recall-spans", "300", "--recall-mb", "0", "--recall-rounds", "1", "--sqlite3", peer)
		out := r.stdout
		wants := []string{
			`(?m)^  corpus   \d+ spans, [\d.]+ MB of span content, from generated Claude Code sessions .*, swept in `,
			`(?m)^full reindex, \d+ spans, [\d.]+ MB \(median of 3\)\s+\d+ MB/s \([\d.]+ m?s, [\d.]+ CPU-s\), index [\d.]+ MB\s+.*>= 100 MB/s\s+(MET|MISSED)$`,
			`(?m)^search, warm process, 16 queries x 1 .*p50 [\d.]+ m?s p95 [\d.]+ m?s.*p50 <= 20 ms\s+(MET|MISSED)$`,
			`(?m)^search, fresh process, 16 queries x 1\s+p50 [\d.]+ m?s p95 [\d.]+ m?s.*p50 <= 60 ms\s+(MET|MISSED)$`,
			`(?m)^incremental update after one new batch \(Open, in process; 20\)\s+p50 [\d.]+ m?s p95 [\d.]+ m?s\s+-\s+p50 <= 5 ms\s+(MET|MISSED)$`,
			`(?m)^  - warm search: 16 of 16 queries have hits here$`,
			"`git lossless recall search Q --json`",
		}
		if peer == "-" {
			wants = append(wants, `the SQLite FTS5 peer was not measured`)
		} else {
			wants = append(wants, `FTS5 load: \d+ MB/s`, `one sqlite3 process, 16 queries: mean`, "`sqlite3 DB 'SELECT ... MATCH ...'`: p50")
		}
		for _, want := range wants {
			if !regexp.MustCompile(want).MatchString(out) {
				t.Errorf("peer %q: output lacks %s:\n%s", peer, want, out)
			}
		}
		if strings.Contains(r.stderr, "panic") {
			t.Errorf("stderr: %s", r.stderr)
		}
	}
	if r := sb.run(sb.root, "bench", "recall", "--recall-spans", "1"); r.code != exitUsage {
		t.Errorf("--recall-spans 1: exit %d, want %d", r.code, exitUsage)
	}
}
