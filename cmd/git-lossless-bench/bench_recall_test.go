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
			`(?m)^index build, in process, \d+ spans: our reindex \(median of 3\) / FTS5 load\s+[\d.]+ m?s, index [\d.]+ MB\s+modernc.org/sqlite: [\d.]+ m?s \([\d.]+x\), db [\d.]+ MB \([\d.]+x\)`,
			`(?m)^search, warm process, 16 queries x 1, beside FTS5 in process\s+p50 [\d.]+ m?s p95 [\d.]+ m?s\s+modernc.org/sqlite: p50 [\d.]+ m?s p95 [\d.]+ m?s \(p50 [\d.]+x, p95 [\d.]+x\)`,
			`(?m)^ranking beside FTS5 bm25\(\), 1[0-5] word queries: top 10 shared, first hit the same\s+[\d.]+ of 10 \([\d.]+ counting ties at the 10th\); first hit \d+ of 1[0-5] \(\d+ counting ties\)`,
			`(?m)^  - ranking, per query \(top 10 shared / counting ties\): summary \d+/\d+`,
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

// TestCompareRankings: the agreement of two rankings at the tenth place,
// plainly and counting ties at the cut and at the first place.
func TestCompareRankings(t *testing.T) {
	rank := func(ids string, scores ...float64) []scored {
		var out []scored
		for i, id := range strings.Fields(ids) {
			out = append(out, scored{id, scores[i]})
		}
		return out
	}
	tenDown := []float64{10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0.5}
	a := rank("a b c d e f g h i j k", tenDown...)
	if g := compareRankings(a, a); g != (agreement{10, 10, true, true}) {
		t.Errorf("a ranking beside itself: %+v", g)
	}
	// The same ten, another first; k beyond the cut.
	b := rank("b a c d e f g h i k j", tenDown...)
	if g := compareRankings(a, b); g != (agreement{9, 9, false, false}) {
		t.Errorf("one swapped across the cut, the first two swapped: %+v", g)
	}
	// b's last three tie at the cut and a's first two tie at the top: a
	// tie cut the other way is no disagreement.
	c := rank("b a c d e f g h i k j", 10, 10, 8, 7, 6, 5, 4, 3, 1, 1, 1)
	if g := compareRankings(a, c); g != (agreement{9, 10, false, true}) {
		t.Errorf("ties: %+v", g)
	}
	if g := compareRankings(a, nil); g != (agreement{}) {
		t.Errorf("beside nothing: %+v", g)
	}
}
