package codextest

import "testing"

// TestHookHash pins hashes Codex 0.169.0 itself reported (codex
// app-server hooks/list currentHash) for four handlers of one hooks.json.
func TestHookHash(t *testing.T) {
	ptr := func(n int) *int { return &n }
	star, x := "*", "x"
	cases := []struct {
		event   string
		matcher *string
		h       hookHandler
		want    string
	}{
		{"PreToolUse", &star, hookHandler{Type: "command", Command: "/bin/true pre", Timeout: ptr(30)},
			"sha256:5a9e12490be096eb11a0414eb12eb91478592389485bb1de3010331ed902df7f"},
		{"SessionStart", nil, hookHandler{Type: "command", Command: "/bin/true ss", Timeout: ptr(30)},
			"sha256:63ade162c60b1a4f3b51b8828ce143517ee737e73f8a353876ae12fc7d0bb233"},
		{"SessionEnd", nil, hookHandler{Type: "command", Command: "/bin/true se"}, // timeout 1 when absent
			"sha256:79f47ba3fd3b08721db9a01a201c042d94f9d40cb9aa12ba4e6a5da0b727cd49"},
		{"Stop", &x, hookHandler{Type: "command", Command: "/bin/true stop", Timeout: ptr(5), StatusMessage: "hi"}, // matcher ignored
			"sha256:4ea505fbd17d78fdaf64898cc83746e40046fa97456d61fde9495944a30837e0"},
	}
	for _, c := range cases {
		if got := hookHash(c.event, c.matcher, c.h); got != c.want {
			t.Errorf("%s %q: %s, want %s", c.event, c.h.Command, got, c.want)
		}
	}
	if got := eventLabel("PreModelRequest"); got != "pre_model_request" {
		t.Errorf("eventLabel = %s", got)
	}
}
