package claudecode

import (
	"bytes"
	"testing"

	"github.com/git-lossless/git-lossless/hooks"
)

// TestSamplePayload: the bench's payloads decode as the hooks decode
// Claude Code's own: a PreToolUse edit of the file (the guard's case), a
// PostToolUse read that showed the content whole, each with a call id of
// its own, under the event name install writes; other events get none.
func TestSamplePayload(t *testing.T) {
	h := New()
	content := []byte("package a\n\nfunc A() {}\n")
	ids := map[string]bool{}
	for _, c := range []struct {
		ev    hooks.HookEvent
		name  string
		op    string
		shown bool
		file  string
		lines int64
	}{
		{hooks.PreToolUse, "pre-tool-use", "edit", false, "/repo/a.go", 0},
		{hooks.PostToolUse, "post-tool-use", "read", true, "/repo/a.go", 3},
		{hooks.PostToolUse, "post-tool-use", "read", true, "/repo/b.go", 3},
	} {
		event, stdin := h.SamplePayload(c.ev, "sess-1", "/repo", "/t/sess-1.jsonl", c.file, content)
		if event != c.name || h.Event(event) != c.ev {
			t.Fatalf("%s: event %q", c.ev, event)
		}
		call, err := h.Decode(c.ev, bytes.NewReader(stdin))
		if err != nil || call.ToolErr != nil {
			t.Fatalf("%s: decode: %v %v\n%s", c.ev, err, call.ToolErr, stdin)
		}
		if call.Session != "sess-1" || call.Cwd != "/repo" || call.Transcript != "/t/sess-1.jsonl" || len(call.Files) != 1 {
			t.Fatalf("%s: call %+v", c.ev, call)
		}
		f := call.Files[0]
		if string(f.Op) != c.op || f.Path != c.file || f.HasContent != c.shown || c.shown && (!bytes.Equal(f.Content, content) || f.Partial || f.NumLines != c.lines) {
			t.Errorf("%s: file %+v", c.ev, f)
		}
		if call.CallID == "" || ids[call.CallID] {
			t.Errorf("%s: call id %q empty or repeated", c.ev, call.CallID)
		}
		ids[call.CallID] = true
	}
	if event, stdin := h.SamplePayload(hooks.SessionEnd, "s", "/repo", "", "/repo/a.go", nil); event != "" || stdin != nil {
		t.Errorf("session-end sample %q %q", event, stdin)
	}
}
