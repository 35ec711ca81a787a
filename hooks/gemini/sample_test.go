package gemini_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/hooks/gemini"
)

// TestSamplePayload: the bench's payloads decode into the calls they
// stand for: an edit to guard, a whole read to record.
func TestSamplePayload(t *testing.T) {
	h := gemini.New()
	dir := t.TempDir()
	file := filepath.Join(dir, "f.go")
	ev, stdin := h.SamplePayload(hooks.PreToolUse, "s-1", dir, filepath.Join(dir, "chat.jsonl"), file, []byte("x\n"))
	if h.Event(ev) != hooks.PreToolUse {
		t.Fatalf("pre-tool-use event %q", ev)
	}
	c, err := h.Decode(hooks.PreToolUse, bytes.NewReader(stdin))
	if err != nil || len(c.Files) != 1 || c.Files[0].Path != file || c.Files[0].Op != "edit" || c.Session != "s-1" {
		t.Fatalf("pre-tool-use sample decodes to %+v %v", c, err)
	}
	ev, stdin = h.SamplePayload(hooks.PostToolUse, "s-1", dir, filepath.Join(dir, "chat.jsonl"), file, []byte("x\n"))
	c, err = h.Decode(h.Event(ev), bytes.NewReader(stdin))
	if err != nil || len(c.Files) != 1 || c.Files[0].Op != "read" || string(c.Files[0].Content) != "x\n" || c.Files[0].Partial {
		t.Fatalf("post-tool-use sample decodes to %+v %v", c, err)
	}
	if ev, _ := h.SamplePayload(hooks.SessionEnd, "s", dir, "", file, nil); ev != "" {
		t.Fatalf("session-end sample %q", ev)
	}
}

// TestFailOpen: a payload that cannot be used is one stderr line (Gemini
// CLI shows it to the user when stdout is empty), exit 0 and nothing on
// stdout: the edit goes ahead, never blocked by our failure.
func TestFailOpen(t *testing.T) {
	repo := newRepo(t)
	for name, payload := range map[string]any{
		"no session": map[string]any{"cwd": repo, "hook_event_name": "BeforeTool", "tool_name": "replace", "tool_input": map[string]any{"file_path": "a"}},
		"bad input":  map[string]any{"session_id": "s", "cwd": repo, "hook_event_name": "BeforeTool", "tool_name": "replace", "tool_input": map[string]any{"file_path": 7}},
	} {
		out, errs := runHook(t, "BeforeTool", payload, t.TempDir())
		if out != "" || strings.Count(errs, "\n") != 1 || !strings.HasPrefix(errs, "git-lossless: hook pre-tool-use") {
			t.Errorf("%s: stdout %q stderr %q", name, out, errs)
		}
	}
}
