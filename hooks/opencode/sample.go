package opencode

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/git-lossless/git-lossless/hooks"
)

// SamplePayload is a payload the plugin would send, for `git lossless
// bench hooks` (hooks.Sampler): at PreToolUse an edit of file, at
// PostToolUse a read of file whose output showed content (rendered as
// opencode 1.18.33 renders a whole-file read). event is the name the
// plugin passes on the hook command line.
func (Harness) SamplePayload(ev hooks.HookEvent, session, cwd, transcript, file string, content []byte) (event string, stdin []byte) {
	p := map[string]any{"v": 1, "session": session, "agent": "", "session_id": session, "parent_id": "", "cwd": cwd, "worktree": cwd,
		"transcript": transcript, "context_transcript": transcript, "call_id": hooks.SampleCallID("call_bench_", ev, file)}
	switch ev {
	case hooks.PreToolUse:
		p["event"], p["tool"] = "tool.execute.before", "edit"
		p["args"] = map[string]any{"filePath": file, "oldString": "a", "newString": "b"}
	case hooks.PostToolUse:
		p["event"], p["tool"] = "tool.execute.after", "read"
		p["args"] = map[string]any{"filePath": file}
		p["output"] = RenderRead(file, string(content))
	default:
		p["event"] = string(ev)
	}
	b, _ := json.Marshal(p)
	return string(ev), b
}

// RenderRead renders a whole-file read as opencode 1.18.33's read tool
// does: "<path>P</path>\n<type>file</type>\n<content>\n1: line\n...\n\n(End
// of file - total N lines)\n</content>".
func RenderRead(path, text string) string {
	lines := strings.Split(strings.TrimSuffix(strings.ReplaceAll(text, "\r\n", "\n"), "\n"), "\n")
	var b strings.Builder
	b.Grow(len(text) + 8*len(lines) + 128)
	b.WriteString("<path>" + filepath.Clean(path) + "</path>\n<type>file</type>\n<content>\n")
	for i, l := range lines {
		b.WriteString(strconv.Itoa(i + 1))
		b.WriteString(": ")
		b.WriteString(l)
		b.WriteByte('\n')
	}
	b.WriteString("\n(End of file - total " + strconv.Itoa(len(lines)) + " lines)\n</content>")
	return b.String()
}
