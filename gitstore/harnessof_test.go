package gitstore

import "testing"

// TestHarnessOf: an event's own harness field wins; without one its
// writer's prefix names it through the mapping; without a mapping, or for
// a writer of no harness, it has none.
func TestHarnessOf(t *testing.T) {
	of := func(w string) string {
		if len(w) > 3 && w[:3] == "cc-" {
			return "claude-code"
		}
		return ""
	}
	for _, c := range []struct {
		field, writer string
		of            func(string) string
		want          string
	}{
		{"codex", "codex-s", of, "codex"},
		{"claude-code", "oc-s", of, "claude-code"},
		{"", "cc-s", of, "claude-code"},
		{"", "cc-s", nil, ""},
		{"", "proxy-0123abcd-x", of, ""},
		{"gemini", "gemini-s", nil, "gemini"},
	} {
		if got := HarnessOf(c.field, c.writer, c.of); got != c.want {
			t.Errorf("HarnessOf(%q, %q) = %q, want %q", c.field, c.writer, got, c.want)
		}
	}
}
