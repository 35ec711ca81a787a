package recall

import (
	"regexp"
	"strings"
	"sync"
)

// The pin rules: which facts of a conversation must survive it word for
// word. They live here, not in the proxy that first forwarded them,
// because two readers apply them: the proxy pins them in every compacted
// request it forwards, and a hand-off (Handoff) reports them from the
// archive, for sessions of any harness. One definition keeps the two
// from drifting.

var mustKeepRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?im)^#{1,6}\s*must[ -]keep\s*:?\s*$`) })

// MustKeep separates a summary's "## Must Keep" section (any heading
// level, "must keep" or "must-keep", any case) from its body: the body is
// the text above the heading, the bullets are the section's "- ", "* ",
// "• " and "1. "/"1) " items up to the next heading. A summary without
// the section is all body.
func MustKeep(s string) (body string, bullets []string) {
	loc := mustKeepRe().FindStringIndex(s)
	if loc == nil {
		return s, nil
	}
	body = strings.TrimSpace(s[:loc[0]])
	rest := s[loc[1]:]
	for _, line := range strings.Split(rest, "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "#") {
			break
		}
		for _, p := range []string{"- ", "* ", "• "} {
			if strings.HasPrefix(t, p) {
				if b := strings.TrimSpace(t[len(p):]); b != "" {
					bullets = append(bullets, b)
				}
			}
		}
		if len(t) > 2 && t[0] >= '0' && t[0] <= '9' && (strings.HasPrefix(t[1:], ". ") || strings.HasPrefix(t[1:], ") ")) {
			bullets = append(bullets, strings.TrimSpace(t[3:]))
		}
	}
	return body, bullets
}

var keepPhraseRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)\b(remember (this|that)|keep (this|that) (in mind|for later)|keep in mind|don'?t forget|do not forget|never forget|make a note|note (this|that)|pin (this|that)|must keep|important to remember)\b`)
})
var sentenceEndRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[.!?](\s|$)|\n`) })

// KeepSentences returns the sentences of a user's text that ask to be
// remembered: those holding a keep phrase ("remember this", "keep in
// mind", "don't forget", "make a note", "pin this", "must keep",
// "important to remember"...). A sentence runs from the end of the one
// before (".", "!" or "?" and a space, or a newline) to its own end.
// Sentences are returned whole and trimmed; a sentence holding two
// phrases is returned once.
func KeepSentences(text string) []string {
	var out []string
	for _, loc := range keepPhraseRe().FindAllStringIndex(text, -1) {
		start := 0
		if ends := sentenceEndRe().FindAllStringIndex(text[:loc[0]], -1); len(ends) > 0 {
			start = ends[len(ends)-1][1]
		}
		end := len(text)
		if e := sentenceEndRe().FindStringIndex(text[loc[1]:]); e != nil {
			end = min(loc[1]+e[0]+1, len(text))
		}
		s := strings.TrimSpace(text[start:end])
		if s != "" && (len(out) == 0 || out[len(out)-1] != s) {
			out = append(out, s)
		}
	}
	return out
}

// normFact is a fact as pins are compared: lower-cased, spaces collapsed,
// trailing periods and bangs ignored.
func normFact(s string) string {
	return strings.ToLower(strings.Join(strings.Fields(strings.Trim(s, " .!")), " "))
}
