package codex

import (
	"encoding/json"
	"path/filepath"
	"strings"

	"github.com/git-lossless/git-lossless/hooks"
)

// SamplePayload is a payload Codex would send for ev, for `git lossless
// bench hooks` (the hooks.Sampler method): at PreToolUse an apply_patch
// that updates file (its first line replaced), at PostToolUse a Bash
// `cat FILE` whose output showed content. event is the name our hook
// command line passes (`git lossless hook codex EVENT`); nil stdin for
// other events.
func (Harness) SamplePayload(ev hooks.HookEvent, session, cwd, transcript, file string, content []byte) (event string, stdin []byte) {
	p := map[string]any{"session_id": session, "turn_id": "bench-turn", "transcript_path": transcript, "cwd": cwd,
		"model": "gpt-5.5", "permission_mode": "bypassPermissions", "tool_use_id": hooks.SampleCallID("call_bench_", ev, file)}
	rel := file
	if r, err := filepath.Rel(cwd, file); err == nil && !strings.HasPrefix(r, "..") {
		rel = r
	}
	switch ev {
	case hooks.PreToolUse:
		first, _, _ := strings.Cut(string(content), "\n")
		p["hook_event_name"], p["tool_name"] = string(PreToolUse), HookToolApplyPatch
		p["tool_input"] = map[string]any{"command": "*** Begin Patch\n*** Update File: " + rel + "\n@@\n-" + first + "\n+" + first + " edited\n*** End Patch\n"}
	case hooks.PostToolUse:
		p["hook_event_name"], p["tool_name"] = string(PostToolUse), HookToolBash
		p["tool_input"] = map[string]any{"command": "cat " + shellQuote(rel)}
		p["tool_response"] = string(content)
	default:
		return "", nil
	}
	b, _ := json.Marshal(p)
	return string(ev), b
}
