package claudecode

import (
	"bytes"
	"encoding/json"

	"github.com/git-lossless/git-lossless/hooks"
)

var _ hooks.Sampler = Harness{}

// SamplePayload implements hooks.Sampler with payloads as Claude Code
// writes them: PreToolUse of an Edit of file, PostToolUse of a Read of
// file whose result showed content whole. The event is the name install
// writes on the hook command line ("pre-tool-use", "post-tool-use");
// another event gets "" and no payload.
func (Harness) SamplePayload(ev hooks.HookEvent, session, cwd, transcript, file string, content []byte) (string, []byte) {
	p := map[string]any{
		"session_id": session, "transcript_path": transcript, "cwd": cwd,
		"permission_mode": "acceptEdits", "tool_use_id": hooks.SampleCallID("toolu_bench_", ev, file),
	}
	switch ev {
	case hooks.PreToolUse:
		p["hook_event_name"], p["tool_name"] = "PreToolUse", "Edit"
		p["tool_input"] = map[string]any{"file_path": file, "old_string": "func", "new_string": "func"}
	case hooks.PostToolUse:
		n := bytes.Count(content, []byte("\n"))
		if len(content) > 0 && content[len(content)-1] != '\n' {
			n++
		}
		p["hook_event_name"], p["tool_name"] = "PostToolUse", "Read"
		p["tool_input"] = map[string]any{"file_path": file}
		p["tool_response"] = map[string]any{"type": "text", "file": map[string]any{
			"filePath": file, "content": string(content), "numLines": n, "startLine": 1, "totalLines": n}}
	default:
		return "", nil
	}
	b, err := json.Marshal(p)
	if err != nil {
		return "", nil // a map of strings and numbers always encodes
	}
	return string(ev), b
}
