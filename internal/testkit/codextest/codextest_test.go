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

// TestHookTrust checks the persisted hook trust: the keys and hashes
// HookTrust computes are the ones `codex app-server` hooks/list reports
// for every event (with and without matchers and timeouts), and with them
// in config.toml hooks run without --dangerously-bypass-hook-trust, from
// the user hooks.json and from a trusted project's .codex/hooks.json.
func TestHookTrust(t *testing.T) {
	const sc = "SCENARIO:codex-trust"
	bin, dir := setup(t)
	log := hooklog.New(t, hooklog.Rule{Event: "PreToolUse", Contains: "other.txt", Stdout: denyOutput})
	m := codextest.NewModel(t, codextest.Script{sc: {
		codextest.Shell("cat hello.txt"),
		codextest.Patch(codextest.UpdateFile("other.txt", "other content", "other EDITED")),
		codextest.Say("DONE"),
	}})
	r := codextest.NewRunner(t, bin, m)
	r.BypassHookTrust = false
	var hooks []codextest.Hook
	for _, e := range allEvents {
		hooks = append(hooks,
			codextest.Hook{Event: e, Matcher: "*", Command: log.Script + " " + e, Timeout: 20},
			codextest.Hook{Event: e, Command: log.Script}) // no matcher
	}
	r.InstallHooks(t, hooks...)
	// A second handler without a timeout, for the defaults (600 s; 1 s
	// for SessionEnd and Interrupt).
	b, err := os.ReadFile(r.HooksPath())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(r.HooksPath(), []byte(strings.Replace(string(b), `"timeout": 30`, `"statusMessage": "logging"`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	want, err := codextest.HookTrust(r.HooksPath())
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != 2*len(allEvents) {
		t.Fatalf("%d trust entries, want %d", len(want), 2*len(allEvents))
	}
	listed := func(want []codextest.TrustEntry, status string) {
		t.Helper()
		hs, warnings, err := r.ListHooks(context.Background(), dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("hooks/list warnings: %q", warnings)
		got := map[string]codextest.ListedHook{}
		for _, h := range hs {
			got[h.Key] = h
		}
		for _, e := range want {
			h, ok := got[e.Key]
			if !ok {
				t.Errorf("hooks/list lacks %s", e.Key)
				continue
			}
			if h.CurrentHash != e.Hash || h.TrustStatus != status {
				t.Errorf("%s: hooks/list hash %s status %s, want %s %s (timeout %d, matcher %v)", e.Key, h.CurrentHash, h.TrustStatus, e.Hash, status, h.TimeoutSec, h.Matcher)
			}
		}
		if len(hs) != len(want) {
			t.Errorf("hooks/list has %d hooks, want %d", len(hs), len(want))
		}
	}
	listed(want, "untrusted")

	// Untrusted: Codex runs no hook and says nothing; the patch goes through.
	res := run(t, r, dir, sc+" untrusted")
	if n := len(log.Payloads(t)); n != 0 {
		t.Errorf("%d hook payloads from untrusted hooks", n)
	}
	fileIs(t, filepath.Join(dir, "other.txt"), "other EDITED\n")
	if out := strings.ReplaceAll(res.Stderr+res.Stdout, filepath.Dir(r.Home), ""); strings.Contains(strings.ToLower(out), "trust") {
		t.Errorf("the run mentions trust:\n%s", out)
	}

	// Trusted: the same hooks run and the deny holds.
	r.TrustHooks(t, "")
	listed(want, "trusted")
	if err := os.WriteFile(filepath.Join(dir, "other.txt"), []byte("other content\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	res = run(t, r, dir, sc+" trusted")
	fileIs(t, filepath.Join(dir, "other.txt"), "other content\n")
	ps := log.Payloads(t)
	if got := len(hooklog.Filter(ps, "SessionStart", nil)); got != 2 {
		t.Errorf("%d SessionStart payloads from trusted hooks, want 2 (two handlers)", got)
	}
	if got := hooklog.Filter(ps, "PreToolUse", func(p hooklog.Payload) bool { return p.Str("tool_use_id") == codextest.CallID(sc, 1) }); len(got) != 2 {
		t.Errorf("%d PreToolUse payloads for the patch, want 2", len(got))
	}
	if reqs := m.ScenarioRequests(sc); len(reqs) == 0 {
		t.Error("no requests")
	} else if outs := reqs[len(reqs)-1].ToolOutputs(); len(outs) != 2 || !strings.Contains(outs[1].Text, denyReason) {
		t.Errorf("last request's tool outputs %+v, want the deny reason second", outs)
	}

	// A changed command is "modified" and skipped again.
	if err := os.WriteFile(r.HooksPath(), []byte(strings.ReplaceAll(string(mustRead(t, r.HooksPath())), log.Script, log.Script+" ")), 0o600); err != nil {
		t.Fatal(err)
	}
	changed, err := codextest.HookTrust(r.HooksPath())
	if err != nil {
		t.Fatal(err)
	}
	listed(changed, "modified")

	// Project scope: <dir>/.codex/hooks.json, trusted project, trust
	// state in the user config.toml keyed by the project file's path.
	if err := os.Remove(r.HooksPath()); err != nil {
		t.Fatal(err)
	}
	proj := filepath.Join(dir, ".codex", "hooks.json")
	if err := codextest.WriteHooks(proj, codextest.Hook{Event: "SessionStart", Command: log.Script + " project"}); err != nil {
		t.Fatal(err)
	}
	r.TrustProject(t, dir)
	r.TrustHooks(t, proj)
	before := len(hooklog.Filter(log.Payloads(t), "SessionStart", nil))
	run(t, r, dir, sc+" project")
	if after := len(hooklog.Filter(log.Payloads(t), "SessionStart", nil)); after != before+1 {
		t.Errorf("project SessionStart hook ran %d times, want once", after-before)
	}
	// Trust lives in config.toml only: Codex wrote no trust file of its
	// own.
	var trustFiles []string
	_ = filepath.WalkDir(r.Home, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(strings.ToLower(d.Name()), "trust") {
			trustFiles = append(trustFiles, p)
		}
		return nil
	})
	if len(trustFiles) != 0 {
		t.Errorf("trust files under HOME: %q", trustFiles)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCompact drives an auto compaction: the model reports more input
// tokens than model_auto_compact_token_limit after the read, Codex
// compacts (PreCompact, the summary request, PostCompact,
// SessionStart source=compact) and the SessionStart hook's
// additionalContext reaches the next request as a developer message.
func TestCompact(t *testing.T) {
	const sc = "SCENARIO:codex-compact"
	const restored = "CODEXTEST-RESTORED working set: hello.txt"
	bin, dir := setup(t)
	log := hooklog.New(t, hooklog.Rule{Event: "SessionStart", Contains: `"compact"`,
		Stdout: `{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"` + restored + `"}}`})
	m := codextest.NewModel(t, codextest.Script{sc: {
		codextest.Shell("cat hello.txt"),
		codextest.Patch(codextest.UpdateFile("hello.txt", "hello world", "hello again")),
		codextest.Say("DONE compact"),
	}})
	// Over the limit once: the answer to the request carrying the read's
	// output, before any summary.
	m.SetInputTokens(func(q codextest.Request) int {
		if len(q.ToolOutputs()) == 1 && !strings.Contains(q.MessageText(), "codextest summary") {
			return 5000
		}
		return 100
	})
	r := codextest.NewRunner(t, bin, m)
	r.Config = []string{"model_auto_compact_token_limit=1000"}
	r.InstallHooks(t, logHooks(log, "SessionStart", "PreToolUse", "PostToolUse", "PreCompact", "PostCompact", "Stop")...)

	res := run(t, r, dir, sc+" read and change hello.txt")
	if res.LastMessage != "DONE compact" {
		t.Errorf("last message %q", res.LastMessage)
	}
	fileIs(t, filepath.Join(dir, "hello.txt"), "hello again\n")
	ps := log.Payloads(t)
	got := strings.Join(hooklog.Events(ps, func(p hooklog.Payload) string {
		return p.Str("source") + p.Str("trigger") + p.Str("tool_name")
	}), " ")
	want := "SessionStart(startup) PreToolUse(Bash) PostToolUse(Bash) PreToolUse(apply_patch) PostToolUse(apply_patch) " +
		"PreCompact(auto) PostCompact(auto) SessionStart(compact) Stop"
	if got != want {
		t.Errorf("hooks\n got %s\nwant %s", got, want)
	}
	var compact, after []codextest.Request
	for _, q := range m.Requests() {
		switch {
		case q.Kind == "compact":
			compact = append(compact, q)
		case len(compact) > 0:
			after = append(after, q)
		}
	}
	if len(compact) != 1 || len(after) == 0 {
		t.Fatalf("%d compaction requests, %d after\n%s", len(compact), len(after), m.Log())
	}
	if !strings.Contains(after[0].MessageText(), restored) {
		t.Errorf("the request after compaction lacks the SessionStart(compact) context:\n%s", after[0].MessageText())
	}
	if strings.Contains(compact[0].MessageText(), restored) {
		t.Errorf("the compaction request already holds the restored context")
	}
	rollout, err := r.RolloutPath(res.ThreadID)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := codextest.ReadRollout(rollout)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range lines {
		if l.Type == "compacted" {
			n++
			if !strings.Contains(string(l.Payload), "codextest summary") {
				t.Errorf("compacted line lacks the summary: %.300s", l.Payload)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d compacted lines in the rollout, want 1", n)
	}
}

// TestSubagent spawns a subagent (multi_agent_v1 spawn_agent, then
// wait_agent): its hooks carry agent_id and the parent's session_id, its
// requests its own thread id, and it writes its own rollout.
func TestSubagent(t *testing.T) {
	const sc, sub = "SCENARIO:codex-subagent", "SUBTASK:codex-child"
	bin, dir := setup(t)
	log := hooklog.New(t)
	m := codextest.NewModel(t, codextest.Script{
		sc:  {codextest.Spawn(sub + " read hello.txt"), codextest.WaitAgent(), codextest.Say("DONE parent")},
		sub: {codextest.Shell("cat hello.txt"), codextest.Say("child done")},
	})
	r := codextest.NewRunner(t, bin, m)
	r.InstallHooks(t, logHooks(log, "PreToolUse", "PostToolUse", "SubagentStart", "SubagentStop")...)

	res := run(t, r, dir, sc+" delegate")
	if res.LastMessage != "DONE parent" {
		t.Errorf("last message %q", res.LastMessage)
	}
	ps := log.Payloads(t)
	starts := hooklog.Filter(ps, "SubagentStart", nil)
	if len(starts) != 1 {
		t.Fatalf("%d SubagentStart payloads", len(starts))
	}
	agent := starts[0].Str("agent_id")
	read := hooklog.Filter(ps, "PostToolUse", func(p hooklog.Payload) bool { return p.Str("tool_use_id") == codextest.CallID(sub, 0) })
	if len(read) != 1 || read[0].Str("agent_id") != agent || read[0].Str("session_id") != res.ThreadID || read[0].Str("tool_response") != "hello world\n" {
		t.Errorf("child's PostToolUse: %v (agent %s)", read, agent)
	}
	stops := hooklog.Filter(ps, "SubagentStop", nil)
	if len(stops) != 1 || stops[0].Str("agent_id") != agent || stops[0].Str("last_assistant_message") != "child done" {
		t.Errorf("SubagentStop: %v", stops)
	}
	childRollout, err := r.RolloutPath(agent)
	if err != nil {
		t.Fatal(err)
	}
	if starts[0].Str("transcript_path") != childRollout || stops[0].Str("agent_transcript_path") != childRollout {
		t.Errorf("child rollout %s; SubagentStart transcript %s, SubagentStop agent transcript %s", childRollout, starts[0].Str("transcript_path"), stops[0].Str("agent_transcript_path"))
	}
	for _, q := range m.ScenarioRequests(sub) {
		if q.ThreadID() != agent {
			t.Errorf("child request #%d thread %s, want %s", q.Seq, q.ThreadID(), agent)
		}
	}
	wait := hooklog.Filter(ps, "PreToolUse", func(p hooklog.Payload) bool { return p.Str("tool_use_id") == codextest.CallID(sc, 1) })
	if len(wait) != 1 || wait[0].Str("tool_name") != "multi_agent_v1wait_agent" {
		t.Errorf("PreToolUse of wait_agent: %v", wait)
	}
}
