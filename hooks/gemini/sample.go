package gemini

import (
	"encoding/json"
	"time"

	"github.com/git-lossless/git-lossless/hooks"
)

// SamplePayload is a payload of Gemini CLI 0.61's shape for `git
// lossless bench hooks` (hooks.Sampler): at PreToolUse a BeforeTool of a
// replace of file, at PostToolUse an AfterTool of a read_file that
// showed content whole. event is the event the hook command line names
// (as install writes it: `hook gemini EVENT`); other events give "".
func (Harness) SamplePayload(ev hooks.HookEvent, session, cwd, transcript, file string, content []byte) (event string, stdin []byte) {
	p := map[string]any{
		"session_id":      session,
		"transcript_path": transcript,
		"cwd":             cwd,
		"timestamp":       time.Date(2026, 12, 5, 14, 18, 31, 496e6, time.UTC).Format(time.RFC3339Nano),
	}
	switch ev {
	case hooks.PreToolUse:
		p["hook_event_name"] = BeforeTool
		p["tool_name"] = ToolReplace
		p["tool_input"] = map[string]any{"file_path": file, "old_string": "a", "new_string": "b"}
	case hooks.PostToolUse:
		p["hook_event_name"] = AfterTool
		p["tool_name"] = ToolReadFile
		p["tool_input"] = map[string]any{"file_path": file}
		p["tool_response"] = map[string]any{"llmContent": string(content), "returnDisplay": ""}
	default:
		return "", nil
	}
	b, _ := json.Marshal(p)
	return string(ev), b
}
