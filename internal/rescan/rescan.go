// Package rescan is the regexp-only secret scanner that secrets.Scan is
// measured against: the same provider prefixes and secret-named
// assignments, written as Go regular expressions (RE2) the way a scanner
// such as gitleaks writes its rules, one pass per rule. It is a
// benchmark peer, not a second scanner: it has no JSON escape handling,
// no reference or entropy filters, and nothing in production uses it.
package rescan

import "regexp"

// Rule is one regular expression and the kind it finds.
type Rule struct {
	Kind string
	Re   *regexp.Regexp
}

// Rules returns the baseline's rules, compiled anew (so that callers share
// no state).
func Rules() []Rule {
	src := []struct{ kind, re string }{
		{"anthropic-key", `\bsk-ant-[A-Za-z0-9_-]{32,}`},
		{"openai-key", `\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}`},
		{"openai-key", `\bsk-[A-Za-z0-9]{32,}`},
		{"github-token", `\bgh[pousr]_[A-Za-z0-9]{36,}`},
		{"github-token", `\bgithub_pat_[A-Za-z0-9_]{22,}`},
		{"gitlab-token", `\bglpat-[A-Za-z0-9_-]{20,}`},
		{"slack-token", `\bxox[abposr]-[A-Za-z0-9-]{10,}`},
		{"stripe-key", `\b[sr]k_(?:live|test)_[A-Za-z0-9]{16,}`},
		{"aws-access-key-id", `\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b`},
		{"google-api-key", `\bAIza[A-Za-z0-9_-]{35}\b`},
		{"npm-token", `\bnpm_[A-Za-z0-9]{36,}`},
		{"huggingface-token", `\bhf_[A-Za-z]{34,}`},
		{"age-secret-key", `AGE-SECRET-KEY-1[A-Z0-9]{50,}`},
		{"jwt", `\beyJ[A-Za-z0-9_-]{7,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{16,}`},
		{"private-key", `-----BEGIN [A-Z ]*PRIVATE KEY-----`},
		{"url-password", `://[^\s/:@"'\\]+:([^\s/@"'\\]{3,})@`},
		{"password", `(?i)(?:password|passwd|passphrase|_pass)["']?\s*[:=]\s*["']?([^\s"'\\,;&]{4,})`},
		{"token", `(?i)token["']?\s*[:=]\s*["']?([A-Za-z0-9_./+=-]{8,})`},
		{"secret", `(?i)secret["']?\s*[:=]\s*["']?([A-Za-z0-9_./+=-]{6,})`},
		{"api-key", `(?i)(?:api|access|secret|private|client)[_-]?key["']?\s*[:=]\s*["']?([A-Za-z0-9_./+=-]{8,})`},
		{"authorization", `(?i)authorization["']?\s*[:=]\s*["']?(?:[A-Za-z]+ )?([A-Za-z0-9._~+/=-]{8,})`},
	}
	out := make([]Rule, len(src))
	for i, r := range src {
		out[i] = Rule{Kind: r.kind, Re: regexp.MustCompile(r.re)}
	}
	return out
}

// Count returns how many matches the rules find in text, one pass per
// rule.
func Count(rules []Rule, text []byte) int {
	n := 0
	for _, r := range rules {
		n += len(r.Re.FindAllIndex(text, -1))
	}
	return n
}
