// Package testkit holds what the tests of several packages share and no
// production package may import: fixtures that plant made-up credentials,
// the real Claude Code sample session copied where a test needs it
// (CopySample), real git remotes on 127.0.0.1 and the like. It depends on the standard
// library only.
//
// Its subpackages hold the larger fixtures: benchdata (source-like content
// and event-log repositories), transcriptgen (Claude Code transcripts),
// receiptfixture (the 100,000-event receipt fixture), stubbackend
// (scripted model servers for the proxy), the real agent CLIs against
// scripted models on 127.0.0.1 (claudetest, codextest, geminitest,
// opencodetest), npmcli (their pinned npm installs, cached once per
// machine) and hooklog (a recording stand-in hook). Tests anywhere, and
// the demo and bench commands of cmd/git-lossless, may import them; no
// production package may (anything outside internal/testkit that is not
// a _test.go file or cmd/git-lossless). internal/layoutcheck enforces
// that.
package testkit

import "math/rand/v2"

// PlantedSecrets returns format-valid, obviously fake credentials of
// several kinds, by name (github, aws-id, aws-key, openai, anthropic,
// slack, stripe, password), generated from seed: never literals in the
// source, so no push protection fires on a test file, and the same values
// for the same seed on every machine.
func PlantedSecrets(seed uint64) map[string]string {
	r := rand.New(rand.NewPCG(seed, 11))
	const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	const upper = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	pick := func(set string, n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = set[r.IntN(len(set))]
		}
		return string(b)
	}
	return map[string]string{
		"github":    "gh" + "p_" + pick(alnum, 36),
		"aws-id":    "AK" + "IA" + pick(upper, 16),
		"aws-key":   pick(alnum, 20) + "/" + pick(alnum, 19),
		"openai":    "sk-" + "proj-" + pick(alnum, 64),
		"anthropic": "sk-" + "ant-api03-" + pick(alnum, 93) + "AA",
		"slack":     "xo" + "xb-" + pick("0123456789", 12) + "-" + pick("0123456789", 13) + "-" + pick(alnum, 24),
		"stripe":    "sk" + "_live_" + pick(alnum, 32),
		"password":  "hunter2-" + pick(alnum, 6),
	}
}
