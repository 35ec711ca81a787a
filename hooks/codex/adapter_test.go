package codex

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks"
)

// rig is a temporary repository and a Codex session, driven through
// hooks.Run as Codex drives `git lossless hook codex EVENT`.
type rig struct {
	t       *testing.T
	dir     string
	session string
	rollout string
	clock   time.Time
}

func newRig(t *testing.T) *rig {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	dir, _ = filepath.EvalSymlinks(dir)
	s := "01a246c5-fd28-7dc3-8b0d-fc6cd99122b1"
	return &rig{t: t, dir: dir, session: s, rollout: filepath.Join(t.TempDir(), "sessions/2026/12/05/rollout-2026-12-05T15-15-10-"+s+".jsonl"),
		clock: time.Date(2026, 12, 5, 15, 0, 0, 0, time.UTC)}
}

func (r *rig) write(name, content string) string {
	r.t.Helper()
	p := filepath.Join(r.dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		r.t.Fatal(err)
	}
	return p
}

func (r *rig) hook(event string, fields map[string]any) string {
	r.t.Helper()
	p := map[string]any{"session_id": r.session, "turn_id": "t1", "transcript_path": r.rollout, "cwd": r.dir, "hook_event_name": event, "model": "gpt-5.5"}
	for k, v := range fields {
		p[k] = v
	}
	b, _ := json.Marshal(p)
	var out, errb bytes.Buffer
	now := func() time.Time { r.clock = r.clock.Add(time.Second); return r.clock }
	if code := hooks.Run(context.Background(), New(), event, hooks.Env{Stdin: bytes.NewReader(b), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }, Now: now}); code != 0 {
		r.t.Fatalf("%s: exit %d", event, code)
	}
	if errb.Len() > 0 {
		r.t.Fatalf("%s: stderr %q", event, errb.String())
	}
	return out.String()
}

func (r *rig) bash(id, cmd, out string) {
	r.hook("PostToolUse", map[string]any{"tool_name": "Bash", "tool_use_id": id, "tool_input": map[string]any{"command": cmd}, "tool_response": out})
}

// patch asks the guard about a patch and returns the deny reason ("": allowed).
func (r *rig) patch(id, patch string) string {
	out := r.hook("PreToolUse", map[string]any{"tool_name": "apply_patch", "tool_use_id": id, "tool_input": map[string]any{"command": patch}})
	if out == "" {
		return ""
	}
	var d struct {
		H struct {
			Event    string `json:"hookEventName"`
			Decision string `json:"permissionDecision"`
			Reason   string `json:"permissionDecisionReason"`
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil || d.H.Decision != "deny" || d.H.Event != "PreToolUse" || d.H.Reason == "" {
		r.t.Fatalf("guard output %q", out)
	}
	return d.H.Reason
}

func (r *rig) applied(id, patch, files string) {
	r.hook("PostToolUse", map[string]any{"tool_name": "apply_patch", "tool_use_id": id, "tool_input": map[string]any{"command": patch},
		"tool_response": "Exit code: 0\nWall time: 0.2 seconds\nOutput:\nSuccess. Updated the following files:\n" + files})
}

func (r *rig) events() []gitstore.Event {
	st, err := gitstore.OpenDir(r.dir, gitstore.Options{})
	if err != nil {
		r.t.Fatal(err)
	}
	evs, err := st.Events(context.Background(), gitstore.Query{Session: r.session})
	if err != nil {
		r.t.Fatal(err)
	}
	return evs
}

func update(path, old, new string) string {
	return "*** Begin Patch\n*** Update File: " + path + "\n@@\n-" + old + "\n+" + new + "\n*** End Patch\n"
}

// TestHooksReadPatchDeny: Codex's hooks as the sample run fires them. A
// `cat` through Bash is a read (via shell) that lets a patch of the file
// through; a patch of a file never read is denied with a reason naming
// cat; an Add of a new file is allowed; the applied patch is archived as
// the file on disk after it, a Delete as a delete without content; a
// `cat .env` is an access without content; everything carries harness
// codex and goes to the writer codex-<session>.
func TestHooksReadPatchDeny(t *testing.T) {
	r := newRig(t)
	r.write("hello.txt", "hello world\n")
	r.write("other.txt", "other content\n")
	r.write("gone.txt", "bye\n")
	r.write(".env", "OPENAI_API_KEY=sk-proj-plantedplantedplanted0123456789\n")

	if reason := r.patch("call_0", update("hello.txt", "hello world", "hello codex")); reason == "" || !strings.Contains(reason, "cat FILE") || !strings.Contains(reason, "hello.txt") {
		t.Fatalf("patch of an unread file: reason %q", reason)
	}
	r.bash("call_1", "cat hello.txt", "hello world\n")
	p := update("hello.txt", "hello world", "hello codex")
	if reason := r.patch("call_2", p); reason != "" {
		t.Fatalf("patch after cat denied: %s", reason)
	}
	r.write("hello.txt", "hello codex\n") // what Codex's applier wrote
	r.applied("call_2", p, "M hello.txt\n")
	if reason := r.patch("call_3", update("other.txt", "other content", "other EDITED")); reason == "" {
		t.Fatal("patch of other.txt (never read) allowed")
	}
	if reason := r.patch("call_4", "*** Begin Patch\n*** Add File: new.txt\n+new\n*** End Patch\n"); reason != "" {
		t.Fatalf("add of a new file denied: %s", reason)
	}
	r.bash("call_5", "cat gone.txt", "bye\n")
	del := "*** Begin Patch\n*** Delete File: gone.txt\n*** End Patch\n"
	if reason := r.patch("call_6", del); reason != "" {
		t.Fatalf("delete of a read file denied: %s", reason)
	}
	os.Remove(filepath.Join(r.dir, "gone.txt"))
	r.applied("call_6", del, "D gone.txt\n")
	r.bash("call_7", "cat .env", "OPENAI_API_KEY=sk-proj-plantedplantedplanted0123456789\n")
	r.bash("call_8", "cat hello.txt | head -1", "hello codex\n")

	type want struct{ op, path, key, view string }
	var got []want
	for _, e := range r.events() {
		if e.Harness != "codex" || e.Writer != Prefix+r.session {
			t.Errorf("event %s %s: harness %q writer %q", e.Op, e.Path, e.Harness, e.Writer)
		}
		got = append(got, want{string(e.Op), e.Path, e.Key, e.View})
		switch {
		case e.Op == "read" && e.Path == ".env":
			if !e.Excluded || e.Blob != "" {
				t.Errorf(".env read %+v", e)
			}
		case e.Op == "read":
			if string(e.Extra["via"]) != `"shell"` || e.Blob == "" || string(e.Extra["disk_blob"]) != `"`+e.Blob+`"` {
				t.Errorf("shell read %+v", e)
			}
		case e.Op == "edit":
			if e.Blob != gitstore.BlobID([]byte("hello codex\n")) {
				t.Errorf("edit content %s", e.Blob)
			}
		}
	}
	exp := []want{
		{"deny", "hello.txt", "", "full"}, {"read", "hello.txt", "call_1", "full"}, {"edit", "hello.txt", "call_2", "full"},
		{"deny", "other.txt", "", "full"}, {"read", "gone.txt", "call_5", "full"}, {"delete", "gone.txt", "call_6", ""},
		{"read", ".env", "call_7", "full"},
	}
	if len(got) != len(exp) {
		t.Fatalf("events %v, want %v", got, exp)
	}
	for i := range exp {
		if got[i] != exp[i] {
			t.Errorf("event %d: %v, want %v", i, got[i], exp[i])
		}
	}
}

// TestDecodeEvents: every Codex event name and our command names map to
// the runtime's events; a subagent's hook is its own context.
func TestDecodeEvents(t *testing.T) {
	h := New()
	for _, ev := range []Event{SessionStart, UserPromptSubmit, PreToolUse, PostToolUse, PreCompact, PostCompact, SubagentStart, SubagentStop, Stop, SessionEnd} {
		if h.Event(string(ev)) == "" {
			t.Errorf("event %s unknown", ev)
		}
	}
	for _, s := range HookSpecs() {
		if h.Event(strings.TrimPrefix(s.Arg, Name+" ")) == "" {
			t.Errorf("hook spec arg %q unknown", s.Arg)
		}
	}
	b, err := os.ReadFile("testdata/codex-0.169.0/run-subagent/hooks/012-PostToolUse.json")
	if err != nil {
		t.Skip("no subagent sample:", err)
	}
	c, err := h.Decode(hooks.PostToolUse, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if c.Agent == "" || c.ContextTranscript == "" || !strings.HasSuffix(c.ContextTranscript, c.Agent+".jsonl") || c.Shell == nil || c.Shell.Command != "cat hello.txt" || !c.Shell.HasOutput {
		t.Fatalf("subagent call %+v shell %+v", c, c.Shell)
	}
}

// TestSamplePayload: the bench's payloads run through the hooks as a
// real call would: the PostToolUse cat records a read via shell, the
// PreToolUse patch of the file is then allowed.
func TestSamplePayload(t *testing.T) {
	r := newRig(t)
	f := r.write("bench.txt", "line one\nline two\n")
	for _, ev := range []hooks.HookEvent{hooks.PostToolUse, hooks.PreToolUse} {
		name, stdin := New().SamplePayload(ev, r.session, r.dir, r.rollout, f, []byte("line one\nline two\n"))
		var out, errb bytes.Buffer
		hooks.Run(context.Background(), New(), name, hooks.Env{Stdin: bytes.NewReader(stdin), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }})
		if out.Len() > 0 || errb.Len() > 0 {
			t.Fatalf("%s: stdout %q stderr %q", ev, out.String(), errb.String())
		}
	}
	if evs := r.events(); len(evs) != 1 || evs[0].Op != "read" || string(evs[0].Extra["via"]) != `"shell"` {
		t.Fatalf("events %+v", evs)
	}
}

// TestShellReadWorkdir: the hook payload of a shell call names no
// workdir; the rollout's exec_command call does, and a relative `cat` is
// resolved against it, not against the session's cwd (where a file of
// the same name and content would otherwise be vouched for).
func TestShellReadWorkdir(t *testing.T) {
	r := newRig(t)
	if err := os.MkdirAll(filepath.Join(r.dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	r.write("a.txt", "same\n")
	r.write("sub/a.txt", "same\n")
	if err := os.MkdirAll(filepath.Dir(r.rollout), 0o700); err != nil {
		t.Fatal(err)
	}
	line := `{"timestamp":"2026-12-05T15:15:11.779Z","ordinal":9,"type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\": \"cat a.txt\", \"workdir\": \"sub\"}","call_id":"call_w"}}` + "\n"
	if err := os.WriteFile(r.rollout, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	r.bash("call_w", "cat a.txt", "same\n")
	evs := r.events()
	var reads []string
	for _, e := range evs {
		if e.Op == "read" {
			reads = append(reads, e.Path)
		}
	}
	if len(reads) != 1 || reads[0] != "sub/a.txt" {
		t.Fatalf("reads %v, want sub/a.txt", reads)
	}
}

// TestPatchSeveralFiles: a patch that updates one file and moves another
// is guarded on both, and recorded as an edit of each file it left
// written and a delete of the move's source, each under its own key.
func TestPatchSeveralFiles(t *testing.T) {
	r := newRig(t)
	r.write("a.txt", "a\n")
	r.write("b.txt", "b\n")
	p := "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+A\n*** Update File: b.txt\n*** Move to: c.txt\n@@\n-b\n+B\n*** End Patch\n"
	if reason := r.patch("call_p", p); !strings.Contains(reason, "a.txt") {
		t.Fatalf("patch of two unread files: %q", reason)
	}
	r.bash("call_ra", "cat a.txt", "a\n")
	if reason := r.patch("call_p", p); !strings.Contains(reason, "b.txt") {
		t.Fatalf("patch with b.txt unread: %q", reason)
	}
	r.bash("call_rb", "cat b.txt", "b\n")
	if reason := r.patch("call_p", p); reason != "" {
		t.Fatalf("patch after both reads denied: %s", reason)
	}
	r.write("a.txt", "A\n")
	r.write("c.txt", "B\n")
	os.Remove(filepath.Join(r.dir, "b.txt"))
	r.applied("call_p", p, "M a.txt\nM c.txt\n")
	var got []string
	for _, e := range r.events() {
		if e.Op == "edit" || e.Op == "delete" {
			got = append(got, string(e.Op)+" "+e.Path+" "+e.Key)
		}
	}
	if want := "edit a.txt call_p:0|edit c.txt call_p:1|delete b.txt call_p:2"; strings.Join(got, "|") != want {
		t.Fatalf("got %v, want %s", got, want)
	}
}
