package codex

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cxHookPayloads returns every sample hook payload of a run, in firing
// order, decoded.
func cxHookPayloads(t *testing.T, run string) []Payload {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(cxSamples, run, "hooks", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no hook samples in %s: %v", run, err)
	}
	var out []Payload
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		p, err := DecodePayload(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if want := strings.TrimSuffix(filepath.Base(f)[4:], ".json"); string(p.HookEventName) != want {
			t.Fatalf("%s: event %q", f, p.HookEventName)
		}
		out = append(out, p)
	}
	return out
}

// TestDecodeSamplePayloads decodes every sample payload and checks what
// the runtime reads of each event.
func TestDecodeSamplePayloads(t *testing.T) {
	seen := map[Event]int{}
	for _, run := range []string{"run1-read-patch-deny", "run-compact", "run-subagent"} {
		for _, p := range cxHookPayloads(t, run) {
			seen[p.HookEventName]++
			if !p.HookEventName.Known() || p.SessionID == "" || p.Cwd != cxProject || !strings.HasPrefix(p.TranscriptPath, "/home/dev/.codex/sessions/2026/12/05/rollout-") {
				t.Errorf("%s %s: %+v", run, p.HookEventName, p)
			}
			if p.Model != "gpt-5.5" && p.HookEventName != SessionEnd {
				t.Errorf("%s %s: model %q", run, p.HookEventName, p.Model)
			}
		}
	}
	for _, e := range []Event{SessionStart, UserPromptSubmit, PreModelRequest, PreToolUse, PostToolUse, PreCompact, PostCompact, SubagentStart, SubagentStop, Stop, SessionEnd} {
		if seen[e] == 0 {
			t.Errorf("no sample of %s", e)
		}
	}

	run1 := cxHookPayloads(t, "run1-read-patch-deny")
	if p := run1[0]; p.Source != "startup" || p.TurnID != "" || p.PermissionMode != "bypassPermissions" {
		t.Errorf("SessionStart %+v", p)
	}
	if p := run1[1]; p.Prompt != "Read hello.txt, change it, then change other.txt" || p.TurnID != "01a246c5-fdb0-7bd1-81a8-8a261b4116bb" {
		t.Errorf("UserPromptSubmit %+v", p)
	}
	read := run1[4] // PostToolUse Bash
	if cmd, err := read.Command(); err != nil || cmd != "cat hello.txt" || read.ToolName != HookToolBash || read.ToolUseID != "call_1" {
		t.Errorf("Bash command %q %v", cmd, err)
	}
	if out, err := read.ResponseText(); err != nil || out != "hello world\n" {
		t.Errorf("Bash output %q %v", out, err)
	}
	if _, _, ok, err := read.Patch(); ok || err != nil {
		t.Errorf("a cat is not a patch: %v %v", ok, err)
	}
	patched := run1[7] // PostToolUse apply_patch
	patch, dir, ok, err := patched.Patch()
	if !ok || err != nil || dir != "" || !strings.HasPrefix(patch, "*** Begin Patch\n*** Update File: hello.txt\n") {
		t.Errorf("apply_patch %q %v %v", patch, ok, err)
	}
	resp, err := patched.ResponseText()
	if o := ParseExecOutput(resp); err != nil || !o.Framed || o.ExitCode != 0 || o.Output != "Success. Updated the following files:\nM hello.txt\n" {
		t.Errorf("apply_patch response %+v %v", o, err)
	}
	if p := run1[11]; p.HookEventName != Stop || p.StopHookActive || p.LastAssistantMessage != "All done: read hello.txt, edited it, tried other.txt." {
		t.Errorf("Stop %+v", p)
	}
	if p := run1[12]; p.Reason != "other" || p.ContextTranscript() != p.TranscriptPath {
		t.Errorf("SessionEnd %+v", p)
	}

	compact := cxHookPayloads(t, "run-compact")
	if compact[5].Trigger != "auto" || compact[6].Trigger != "auto" || compact[7].Source != "compact" {
		t.Errorf("compaction: %q %q %q", compact[5].Trigger, compact[6].Trigger, compact[7].Source)
	}

	sub := cxHookPayloads(t, "run-subagent")
	childRollout := "/home/dev/.codex/sessions/2026/12/05/rollout-2026-12-05T14-16-42-" + cxChild + ".jsonl"
	parentRollout := "/home/dev/.codex/sessions/2026/12/05/rollout-2026-12-05T14-16-40-" + cxParent + ".jsonl"
	if p := sub[5]; p.HookEventName != SubagentStart || p.AgentID != cxChild || p.AgentType != "default" || p.SessionID != cxParent || p.ContextTranscript() != childRollout {
		t.Errorf("SubagentStart %+v", p)
	}
	if p := sub[10]; p.HookEventName != PreToolUse || p.AgentID != cxChild || p.SessionID != cxParent || p.ContextTranscript() != childRollout || p.ToolUseID != "call_3" {
		t.Errorf("child PreToolUse %+v", p)
	}
	if p := sub[13]; p.HookEventName != SubagentStop || p.TranscriptPath != parentRollout || p.ContextTranscript() != childRollout || p.LastAssistantMessage != "child done: hello world" {
		t.Errorf("SubagentStop %+v", p)
	}
	if p := sub[8]; p.ToolName != "multi_agent_v1wait_agent" || p.AgentID != "" {
		t.Errorf("wait_agent %+v", p)
	}
	if _, err := sub[8].Command(); err == nil {
		t.Error("wait_agent has no command, Command must say so")
	}
}

// TestHookAndRolloutMeet checks that what a hook sees of a call is what
// the rollout holds of it, under the same id: a hook and a sweep
// recording one call meet on it.
func TestHookAndRolloutMeet(t *testing.T) {
	for _, tc := range []struct{ run, thread string }{{"run1-read-patch-deny", cxRun1}, {"run-subagent", cxChild}} {
		f, err := os.Open(cxRollout(t, tc.thread))
		if err != nil {
			t.Fatal(err)
		}
		outputs := map[string]*Call{}
		for _, l := range cxReadAll(t, NewReader(f, 0, nil), 0) {
			if l.Call != nil && l.Call.Result != nil {
				outputs[l.Call.ID] = l.Call
			}
		}
		f.Close()
		matched := 0
		for _, p := range cxHookPayloads(t, tc.run) {
			if p.HookEventName != PostToolUse || p.ContextTranscript() != "/home/dev/.codex/sessions/2026/12/05/"+filepath.Base(cxRollout(t, tc.thread)) {
				continue
			}
			c := outputs[p.ToolUseID]
			if c == nil {
				t.Errorf("%s: no rollout output for %s", tc.run, p.ToolUseID)
				continue
			}
			cmd, _ := p.Command()
			resp, _ := p.ResponseText()
			switch p.ToolName {
			case HookToolBash:
				if cmd != c.Command || resp != c.Output.Output {
					t.Errorf("%s %s: hook %q/%q, rollout %q/%q", tc.run, p.ToolUseID, cmd, resp, c.Command, c.Output.Output)
				}
			case HookToolApplyPatch:
				if cmd != c.Patch || resp != c.Result.Text() {
					t.Errorf("%s %s: hook %q/%q, rollout %q/%q", tc.run, p.ToolUseID, cmd, resp, c.Patch, c.Result.Text())
				}
			}
			matched++
		}
		if matched == 0 {
			t.Errorf("%s: no call matched", tc.run)
		}
	}
}

func TestDecodePayloadStrict(t *testing.T) {
	base := `"session_id":"s","cwd":"/w","hook_event_name":"PreToolUse"`
	for _, tc := range []struct {
		json, err string
	}{
		{`{` + base + `}`, ""},
		{`{"cwd":"/w"}`, "session_id is missing"},
		{`{"session_id":null}`, "session_id is null, not a string"},
		{`{"session_id":""}`, "session_id is empty"},
		{`{"session_id":7}`, "session_id is a number, not a string"},
		{`{` + base + `,"tool_name":["Bash"]}`, "tool_name is an array, not a string"},
		{`{` + base + `,"agent_id":{}}`, "agent_id is an object, not a string"},
		{`{` + base + `,"stop_hook_active":"yes"}`, "stop_hook_active is a string, not a boolean"},
		{`{` + base + `,"transcript_path":null,"turn_id":null,"agent_id":null,"tool_input":null}`, ""},
		{`{"session_id":"s","cwd":"rel"}`, "not absolute"},
		{`{` + base + `,"transcript_path":"rollout.jsonl"}`, "not absolute"},
		{`{` + base + `,"agent_transcript_path":"x.jsonl"}`, "not absolute"},
		{`{` + base + `,"agent_id":"../x"}`, "not an id"},
		{`[1]`, "not a JSON object"},
		{``, "not a JSON object"},
		{`{"session_id":"s",}`, "decode"},
	} {
		p, err := DecodePayload(strings.NewReader(tc.json))
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.json, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want %q", tc.json, err, tc.err)
		case tc.err == "" && (p.SessionID != "s" || p.ToolInput != nil):
			t.Errorf("%s: %+v", tc.json, p)
		}
	}
	var fe *FieldError
	if _, err := DecodePayload(strings.NewReader(`{"session_id":true}`)); !errors.As(err, &fe) || fe.Field != "session_id" || fe.Got != "a boolean" {
		t.Errorf("FieldError %+v", err)
	}
	for _, tc := range []struct{ input, err string }{
		{`"cat x"`, "tool_input is a string, not an object"},
		{`{"command":3}`, "tool_input.command is a number"},
		{`{"command":""}`, "tool_input.command is empty"},
		{`{}`, "tool_input.command is missing"},
	} {
		p := Payload{SessionID: "s", ToolName: HookToolBash, ToolInput: json.RawMessage(tc.input)}
		if _, err := p.Command(); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %v", tc.input, err)
		}
		if _, _, ok, err := p.Patch(); ok || err == nil {
			t.Errorf("%s: Patch ok=%v err=%v", tc.input, ok, err)
		}
	}
	for _, tc := range []struct {
		resp, want, err string
	}{{`"out"`, "out", ""}, {`""`, "", ""}, {`{"a":1}`, "", "an object"}, {``, "", "missing"}} {
		p := Payload{ToolResponse: json.RawMessage(tc.resp)}
		got, err := p.ResponseText()
		if got != tc.want || (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: %q %v", tc.resp, got, err)
		}
	}
	// A Bash heredoc apply_patch is a patch.
	p := Payload{ToolName: HookToolBash, ToolInput: json.RawMessage(`{"command":"apply_patch <<'EOF'\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nEOF\n"}`)}
	if patch, _, ok, err := p.Patch(); !ok || err != nil || patch != "*** Begin Patch\n*** Delete File: a\n*** End Patch" {
		t.Errorf("heredoc: %q %v %v", patch, ok, err)
	}
}

// TestHookOutputs checks the exact bytes a hook prints, and that they
// read back as Codex reads them.
func TestHookOutputs(t *testing.T) {
	out, err := DenyOutput("other.txt has not been read in the current context; read it first")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"other.txt has not been read in the current context; read it first"}}` + "\n"
	if string(out) != want {
		t.Errorf("deny:\n%s\nwant:\n%s", out, want)
	}
	for _, reason := range []string{"", " \n\t"} {
		if _, err := DenyOutput(reason); err == nil {
			t.Errorf("deny with reason %q accepted", reason)
		}
	}
	ctx := "Files you had seen: <a.go> & \"b.go\"\nline two"
	out = SessionStartOutput(ctx)
	var got struct {
		HookSpecificOutput struct {
			HookEventName     string `json:"hookEventName"`
			AdditionalContext string `json:"additionalContext"`
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal(out, &got); err != nil || got.HookSpecificOutput.HookEventName != "SessionStart" || got.HookSpecificOutput.AdditionalContext != ctx {
		t.Errorf("session start %s: %+v %v", out, got, err)
	}
	if !bytes.Contains(out, []byte(`<a.go> & `)) || !bytes.HasSuffix(out, []byte("}\n")) {
		t.Errorf("session start not plain: %s", out)
	}
	if SessionStartOutput("") != nil {
		t.Error("empty context printed")
	}
}
