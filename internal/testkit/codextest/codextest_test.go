package codextest_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/internal/testkit/codextest"
	"github.com/git-lossless/git-lossless/internal/testkit/hooklog"
)

// allEvents are the hook events Codex 0.169.0 accepts.
var allEvents = []string{"SessionStart", "UserPromptSubmit", "PreModelRequest", "PreToolUse", "PermissionRequest",
	"PostToolUse", "PreCompact", "PostCompact", "SubagentStart", "SubagentStop", "Stop", "SessionEnd", "Interrupt"}

const denyReason = "CODEXTEST-DENY: other.txt was never read"

var denyOutput = `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"` + denyReason + `"}}`

// newRepo makes a git repository holding hello.txt and other.txt.
func newRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("git", "init", "-q")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	for name, body := range map[string]string{"hello.txt": "hello world\n", "other.txt": "other content\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func fileIs(t *testing.T, path, want string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != want {
		t.Errorf("%s = %q, want %q", filepath.Base(path), b, want)
	}
}

func setup(t *testing.T) (bin, dir string) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the real Codex CLI")
	}
	t.Parallel()
	return codextest.EnsureCodex(t), newRepo(t)
}

func run(t *testing.T, r *codextest.Runner, dir, prompt string) codextest.Result {
	t.Helper()
	res, err := r.Run(context.Background(), dir, prompt)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("codex exec %q: %s, thread %s, last message %q", prompt, res.Duration.Round(time.Millisecond), res.ThreadID, res.LastMessage)
	return res
}

func logHooks(log *hooklog.Log, events ...string) []codextest.Hook {
	var hs []codextest.Hook
	for _, e := range events {
		m := ""
		if e == "PreToolUse" || e == "PostToolUse" {
			m = "*"
		}
		hs = append(hs, codextest.Hook{Event: e, Matcher: m, Command: log.Script})
	}
	return hs
}

func TestReadPatchDeny(t *testing.T) {
	const sc = "SCENARIO:codex-read-patch-deny"
	bin, dir := setup(t)
	log := hooklog.New(t, hooklog.Rule{Event: "PreToolUse", Contains: "other.txt", Stdout: denyOutput})
	m := codextest.NewModel(t, codextest.Script{sc: {
		codextest.Shell("cat hello.txt"),
		codextest.Patch(codextest.UpdateFile("hello.txt", "hello world", "hello codex")),
		codextest.Patch(codextest.UpdateFile("other.txt", "other content", "other EDITED")),
		codextest.Say("DONE read-patch-deny"),
	}})
	r := codextest.NewRunner(t, bin, m)
	r.InstallHooks(t, logHooks(log, allEvents...)...)

	res := run(t, r, dir, sc+" read hello.txt, change it, then change other.txt")
	if res.LastMessage != "DONE read-patch-deny" || res.Failed {
		t.Errorf("last message %q, failed %v", res.LastMessage, res.Failed)
	}
	fileIs(t, filepath.Join(dir, "hello.txt"), "hello codex\n")
	fileIs(t, filepath.Join(dir, "other.txt"), "other content\n")

	outs := m.ToolOutputs(sc)
	if len(outs) != 3 {
		t.Fatalf("tool outputs %+v, want 3", outs)
	}
	if !strings.Contains(outs[0].Text, "hello world") || outs[0].Custom {
		t.Errorf("cat output %+v", outs[0])
	}
	if !strings.Contains(outs[1].Text, "Success. Updated the following files:\nM hello.txt") || !outs[1].Custom {
		t.Errorf("patch output %+v", outs[1])
	}
	if !strings.HasPrefix(outs[2].Text, "Command blocked by PreToolUse hook: "+denyReason) || !outs[2].Custom {
		t.Errorf("denied patch output %+v, want the hook's reason", outs[2])
	}

	rollout, err := r.RolloutPath(res.ThreadID)
	if err != nil {
		t.Fatal(err)
	}
	ps := log.Payloads(t)
	for _, p := range ps {
		if p.Str("session_id") != res.ThreadID || p.Str("transcript_path") != rollout || p.Str("cwd") != dir {
			t.Errorf("%s payload: session %s transcript %s cwd %s", p.Event(), p.Str("session_id"), p.Str("transcript_path"), p.Str("cwd"))
		}
	}
	got := strings.Join(hooklog.Events(ps, func(p hooklog.Payload) string {
		if id := p.Str("tool_use_id"); id != "" {
			return p.Str("tool_name") + " " + strings.TrimPrefix(id, "call_SCENARIO-codex-read-patch-deny_")
		}
		return p.Str("source") + p.Str("reason")
	}), " ")
	want := "SessionStart(startup) UserPromptSubmit PreModelRequest PreToolUse(Bash 0) PostToolUse(Bash 0) PreModelRequest " +
		"PreToolUse(apply_patch 1) PostToolUse(apply_patch 1) PreModelRequest PreToolUse(apply_patch 2) PreModelRequest Stop SessionEnd(other)"
	if got != want {
		t.Errorf("hooks\n got %s\nwant %s", got, want)
	}
	read := hooklog.Filter(ps, "PostToolUse", func(p hooklog.Payload) bool { return p.Str("tool_use_id") == codextest.CallID(sc, 0) })
	if len(read) != 1 || read[0].Input()["command"] != "cat hello.txt" || read[0].Str("tool_response") != "hello world\n" {
		t.Errorf("PostToolUse of the read: %v", read)
	}
	patch := hooklog.Filter(ps, "PreToolUse", func(p hooklog.Payload) bool { return p.Str("tool_use_id") == codextest.CallID(sc, 2) })
	if len(patch) != 1 || !strings.Contains(patch[0].Input()["command"].(string), "*** Update File: other.txt") {
		t.Errorf("PreToolUse of the denied patch: %v", patch)
	}
	if k := m.Kinds(); k["scenario"] != 4 || k["unmatched"]+k["capped"]+k["other"] != 0 {
		t.Errorf("requests by kind %v\n%s", k, m.Log())
	}
}
