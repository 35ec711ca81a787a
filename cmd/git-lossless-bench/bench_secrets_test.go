package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestBenchSecretsSmall runs `bench secrets` at a small size as a user
// would: the scanner and the regexp peer are measured side by side, the
// planted credentials are found and none is left after redaction, and the
// transcript without them yields no finding. Speeds are not checked: they
// depend on the machine.
func TestBenchSecretsSmall(t *testing.T) {
	sb := newSandbox(t)
	r := sb.ok(sb.root, "bench", "secrets", "--scan-bytes", "200000", "--baseline-bytes", "20000", "--rounds", "1", "--gitleaks", "-")
	out := r.stdout
	for _, want := range []string{
		`(?m)^scan, 0\.\d MB transcript, one core \(median of 1\)\s+\d+ MB/s \([\d.]+ m?s, [1-9]\d* findings\)\s+-\s+>= 200 MB/s\s+(MET|MISSED)$`,
		`(?m)^scan, first 0\.0 MB, beside the regexp-only peer\s+\d+ MB/s \(\d+ findings\)\s+[\d.]+ MB/s \(\d+ matches\): ours \d+x`,
		`(?m)^findings left after redaction\s+0\s+-\s+0\s+MET$`,
		`(?m)^findings in the same transcript without planted credentials \(0\.\d MB\)\s+0\s+-\s+0\s+MET$`,
		`(?m)^  - gitleaks not measured \(--gitleaks -\)$`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("output lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, "ghp_") || strings.Contains(out, "AKIA") {
		t.Errorf("the bench prints a planted credential:\n%s", out)
	}
	if r := sb.run(sb.root, "bench", "secrets", "--scan-bytes", "10"); r.code != exitUsage {
		t.Errorf("--scan-bytes 10: exit %d, want %d", r.code, exitUsage)
	}
}
