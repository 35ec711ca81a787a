package claudetest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// Hook is one command hook in a settings file.
type Hook struct {
	Event   string // "PreToolUse", "PostToolUse", "SessionStart", ...
	Matcher string // tool-name matcher; empty matches every tool
	Command string // run by Claude Code through the shell, payload on stdin
	Timeout int    // seconds; 10 when zero
}

// WriteSettings writes a settings file holding hooks into a new temp dir
// and returns its path, for Runner.Settings. Hooks of one event and
// matcher share a group and run concurrently.
func WriteSettings(t testing.TB, hooks ...Hook) string {
	t.Helper()
	type command struct {
		Type    string `json:"type"`
		Command string `json:"command"`
		Timeout int    `json:"timeout"`
	}
	type group struct {
		Matcher string    `json:"matcher,omitempty"`
		Hooks   []command `json:"hooks"`
	}
	byEvent := map[string][]group{}
	for _, h := range hooks {
		to := h.Timeout
		if to == 0 {
			to = 10
		}
		c := command{Type: "command", Command: h.Command, Timeout: to}
		gs := byEvent[h.Event]
		i := 0
		for i < len(gs) && gs[i].Matcher != h.Matcher {
			i++
		}
		if i == len(gs) {
			gs = append(gs, group{Matcher: h.Matcher})
		}
		gs[i].Hooks = append(gs[i].Hooks, c)
		byEvent[h.Event] = gs
	}
	b, err := json.MarshalIndent(map[string]any{"hooks": byEvent}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "settings.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// HookLog is a stand-in hook that records every payload it gets, one file
// per call, so concurrent hook processes never interleave.
type HookLog struct {
	Dir    string // where payloads land, <unix-nanos>-<pid>.json
	Script string // the hook command
}

// NewHookLog writes the recording script into a temp dir.
func NewHookLog(t testing.TB) *HookLog {
	t.Helper()
	base := t.TempDir()
	h := &HookLog{Dir: filepath.Join(base, "payloads"), Script: filepath.Join(base, "log-hook.sh")}
	script := fmt.Sprintf(`#!/bin/sh
f=%q/$(date +%%s%%N)-$$.json
cat > "$f.tmp" && mv "$f.tmp" "$f"
`, h.Dir)
	if err := os.MkdirAll(h.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h.Script, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return h
}

// Hooks returns a Hook running the log for each event.
func (h *HookLog) Hooks(events ...string) []Hook {
	var hs []Hook
	for _, e := range events {
		hs = append(hs, Hook{Event: e, Command: h.Script})
	}
	return hs
}

// Payload is one hook payload as Claude Code sent it.
type Payload map[string]any

// Str returns a top-level string field.
func (p Payload) Str(key string) string { s, _ := p[key].(string); return s }

// Event is hook_event_name.
func (p Payload) Event() string { return p.Str("hook_event_name") }

// Payloads returns every payload logged so far, oldest first.
func (h *HookLog) Payloads(t testing.TB) []Payload {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(h.Dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names) // same-width nanosecond stamps sort by time
	var out []Payload
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		var p Payload
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatalf("hook payload %s: %v\n%s", n, err, b)
		}
		out = append(out, p)
	}
	return out
}

// Find returns the payloads of event whose tool_use_id is id (any id when
// id is empty).
func (h *HookLog) Find(t testing.TB, event, id string) []Payload {
	t.Helper()
	var out []Payload
	for _, p := range h.Payloads(t) {
		if p.Event() == event && (id == "" || p.Str("tool_use_id") == id) {
			out = append(out, p)
		}
	}
	return out
}
