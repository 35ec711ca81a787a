package claudetest_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/internal/testkit/claudetest"
)

// newRepo makes a git repository holding hello.txt and main.go.
func newRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("git", "init", "-q")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	for name, body := range map[string]string{"hello.txt": "hello world\n", "main.go": "package main\n\nfunc main() {}\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// script writes an executable shell script and returns its path.
func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "hook.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
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

func run(t *testing.T, r *claudetest.Runner, dir, prompt string, args ...string) claudetest.Result {
	t.Helper()
	res, err := r.Run(context.Background(), dir, prompt, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("claude -p %q %s: %s, %d turns, result %q", prompt, strings.Join(args, " "), res.Duration.Round(time.Millisecond), res.NumTurns, res.Result)
	if res.IsError {
		t.Fatalf("is_error result: %s\nstderr:\n%s", res.Stdout, res.Stderr)
	}
	return res
}

// setup installs the CLI and makes a repository; start then starts the
// model and a runner with the hooks.
func setup(t *testing.T) (bin, dir string) {
	if testing.Short() {
		t.Skip("runs the real Claude Code CLI")
	}
	t.Parallel()
	return claudetest.EnsureClaude(t), newRepo(t)
}

func start(t *testing.T, bin string, script claudetest.Script, hooks ...claudetest.Hook) (*claudetest.Model, *claudetest.Runner) {
	m := claudetest.NewModel(t, script)
	r := claudetest.NewRunner(t, bin, m)
	r.Timeout = 90 * time.Second // generous: other test binaries may load the machine
	r.Settings = claudetest.WriteSettings(t, hooks...)
	return m, r
}

// sessionContext answers SessionStart with additionalContext CTX-<source>.
const sessionContext = `src=$(sed -n 's/.*"source":"\([a-z]*\)".*/\1/p')
printf '{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"CTX-%s"}}\n' "$src"
`

func TestReadEditCompact(t *testing.T) {
	const main, after = "SCENARIO:read-edit", "SCENARIO:after-compact"
	bin, dir := setup(t)
	hello := filepath.Join(dir, "hello.txt")
	log := claudetest.NewHookLog(t)
	m, r := start(t, bin, claudetest.Script{
		main: {
			claudetest.Call("Read", map[string]any{"file_path": hello}),
			claudetest.Call("Edit", map[string]any{"file_path": hello, "old_string": "world", "new_string": "there"}),
			claudetest.Say("DONE read-edit"),
		},
		after: {
			// No Read: the compaction re-attached hello.txt.
			claudetest.Call("Edit", map[string]any{"file_path": hello, "old_string": "there", "new_string": "again"}),
			claudetest.Say("DONE after"),
		},
	}, append(log.Hooks("SessionStart", "PreToolUse", "PostToolUse", "PreCompact", "PostCompact", "Stop", "SessionEnd"),
		claudetest.Hook{Event: "SessionStart", Command: script(t, sessionContext)})...)

	res := run(t, r, dir, main+" please edit hello.txt")
	if res.Result != "DONE read-edit" || res.NumTurns != 3 {
		t.Errorf("result %q, %d turns; want DONE read-edit, 3", res.Result, res.NumTurns)
	}
	fileIs(t, hello, "hello there\n")

	tpath, err := r.TranscriptPath(res.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	for step, tool := range []string{"Read", "Edit"} {
		id := claudetest.ToolUseID(main, step)
		for _, ev := range []string{"PreToolUse", "PostToolUse"} {
			ps := log.Find(t, ev, id)
			if len(ps) != 1 {
				t.Fatalf("%d %s payloads for %s, want 1", len(ps), ev, id)
			}
			p := ps[0]
			if p.Str("tool_name") != tool || p.Str("session_id") != res.SessionID || p.Str("transcript_path") != tpath || p.Str("cwd") != dir {
				t.Errorf("%s %s payload: %v", ev, id, p)
			}
			if _, ok := p["tool_response"]; ok != (ev == "PostToolUse") {
				t.Errorf("%s %s: tool_response present %v", ev, id, ok)
			}
		}
	}
	lines, err := claudetest.ReadTranscript(tpath)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]claudetest.ToolResult{}
	for _, tr := range claudetest.ToolResultsIn(lines) {
		got[tr.ToolUseID] = tr
	}
	if tr := got[claudetest.ToolUseID(main, 0)]; !strings.Contains(tr.Text, "hello world") || tr.IsError {
		t.Errorf("transcript Read result %+v", tr)
	}
	if tr := got[claudetest.ToolUseID(main, 1)]; !strings.Contains(tr.Text, "updated successfully") || tr.IsError {
		t.Errorf("transcript Edit result %+v", tr)
	}
	if reqs := m.ScenarioRequests(main); len(reqs) == 0 || !strings.Contains(reqs[0].MessageText(), "CTX-startup") {
		t.Errorf("SessionStart(startup) context did not reach the first request")
	}

	// Manual compaction of the same session.
	res2 := run(t, r, dir, "/compact", "--resume", res.SessionID)
	if res2.SessionID != res.SessionID {
		t.Errorf("/compact session %s, want %s", res2.SessionID, res.SessionID)
	}
	lines, err = claudetest.ReadTranscript(tpath)
	if err != nil {
		t.Fatal(err)
	}
	boundary := -1
	for i, l := range lines {
		if l.Type == "system" && l.Subtype == "compact_boundary" {
			boundary = i
		}
	}
	if boundary < 0 {
		t.Fatalf("no compact_boundary line in %s", tpath)
	}
	attached := false
	for _, l := range lines[boundary:] {
		attached = attached || l.Type == "attachment" && strings.Contains(string(l.Raw), `"filename":"`+hello+`"`)
	}
	if !attached {
		t.Errorf("hello.txt not re-attached after the compact boundary")
	}
	if len(log.Find(t, "PreCompact", "")) != 1 {
		t.Errorf("PreCompact did not fire once")
	}
	var sources []string
	for _, p := range log.Find(t, "SessionStart", "") {
		sources = append(sources, p.Str("source"))
	}
	if strings.Join(sources, ",") != "startup,resume,compact" {
		t.Errorf("SessionStart sources %v, want startup,resume,compact", sources)
	}

	// The next run sees the SessionStart(compact) context, and may edit the
	// re-attached file without reading it.
	res3 := run(t, r, dir, after+" edit again", "--resume", res.SessionID)
	if res3.Result != "DONE after" {
		t.Errorf("result %q", res3.Result)
	}
	fileIs(t, hello, "hello again\n")
	reqs := m.ScenarioRequests(after)
	if len(reqs) == 0 || !strings.Contains(reqs[0].MessageText(), "CTX-compact") {
		t.Errorf("SessionStart(compact) context did not reach the next request")
	}
	if trs := m.ToolResults(after); len(trs) != 1 || trs[0].IsError {
		t.Errorf("post-compact edit results %+v", trs)
	}
}

func TestDenyReachesModel(t *testing.T) {
	const sc = "SCENARIO:deny"
	bin, dir := setup(t)
	hello := filepath.Join(dir, "hello.txt")
	log := claudetest.NewHookLog(t)
	deny := script(t, `cat >/dev/null
echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"NOPE-REASON"}}'
`)
	m, r := start(t, bin, claudetest.Script{sc: {
		claudetest.Call("Read", map[string]any{"file_path": hello}),
		claudetest.Call("Edit", map[string]any{"file_path": hello, "old_string": "world", "new_string": "there"}),
		claudetest.Say("DONE deny"),
	}}, append(log.Hooks("PreToolUse", "PostToolUse"),
		claudetest.Hook{Event: "PreToolUse", Matcher: "Edit", Command: deny})...)

	res := run(t, r, dir, sc+" please edit")
	fileIs(t, hello, "hello world\n")
	trs := m.ToolResults(sc)
	if len(trs) != 2 {
		t.Fatalf("tool results %+v", trs)
	}
	if trs[0].IsError || !trs[1].IsError || !strings.Contains(trs[1].Text, "NOPE-REASON") || trs[1].ToolUseID != claudetest.ToolUseID(sc, 1) {
		t.Errorf("tool results %+v, want the Edit's an is_error result with NOPE-REASON", trs)
	}
	if len(res.PermissionDenials) != 1 {
		t.Errorf("permission_denials %s", res.PermissionDenials)
	}
	if ps := log.Find(t, "PostToolUse", claudetest.ToolUseID(sc, 1)); len(ps) != 0 {
		t.Errorf("PostToolUse fired for the denied Edit")
	}
}

func TestSubagent(t *testing.T) {
	const sc, sub = "SCENARIO:subagent", "SUBTASK"
	bin, dir := setup(t)
	hello, mainGo := filepath.Join(dir, "hello.txt"), filepath.Join(dir, "main.go")
	log := claudetest.NewHookLog(t)
	m, r := start(t, bin, claudetest.Script{
		sc: {
			claudetest.Call("Agent", map[string]any{"description": "look", "prompt": sub + " read main.go", "subagent_type": "general-purpose"}),
			// The Agent runs in the background; go on once it has reported.
			{Tool: "Read", Input: map[string]any{"file_path": hello}, After: "<task-notification>"},
			claudetest.Say("DONE subagent"),
		},
		sub: {
			claudetest.Call("Read", map[string]any{"file_path": mainGo}),
			claudetest.Say("sub done"),
		},
	}, log.Hooks("PreToolUse", "PostToolUse", "SubagentStart", "SubagentStop", "Stop")...)

	res := run(t, r, dir, sc+" delegate")
	if res.Result != "DONE subagent" {
		t.Errorf("result %q", res.Result)
	}
	tpath, err := r.TranscriptPath(res.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	ps := log.Find(t, "PostToolUse", claudetest.ToolUseID(sub, 0))
	if len(ps) != 1 {
		t.Fatalf("%d PostToolUse payloads for the subagent's Read", len(ps))
	}
	agentID := ps[0].Str("agent_id")
	if agentID == "" || ps[0].Str("agent_type") != "general-purpose" || ps[0].Str("transcript_path") != tpath {
		t.Errorf("subagent payload: %v", ps[0])
	}
	launch := log.Find(t, "PostToolUse", claudetest.ToolUseID(sc, 0))
	if len(launch) != 1 {
		t.Fatalf("no PostToolUse for the Agent call")
	}
	if resp, _ := launch[0]["tool_response"].(map[string]any); resp["agentId"] != agentID || resp["isAsync"] != true {
		t.Errorf("Agent tool_response %v, want agentId %s, isAsync", resp, agentID)
	}
	subs, err := r.SubagentsDir(res.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := claudetest.ReadTranscript(filepath.Join(subs, "agent-"+agentID+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, tr := range claudetest.ToolResultsIn(lines) {
		found = found || tr.ToolUseID == claudetest.ToolUseID(sub, 0) && strings.Contains(tr.Text, "func main")
	}
	if !found {
		t.Errorf("subagent transcript lacks its Read result")
	}
	for _, q := range m.ScenarioRequests(sub) {
		if q.AgentID != agentID {
			t.Errorf("subagent request #%d agent header %q, want %s", q.Seq, q.AgentID, agentID)
		}
	}
}

func TestAutoCompact(t *testing.T) {
	const sc = "SCENARIO:auto-compact"
	bin, dir := setup(t)
	hello := filepath.Join(dir, "hello.txt")
	log := claudetest.NewHookLog(t)
	m, r := start(t, bin, claudetest.Script{sc: {
		claudetest.Call("Read", map[string]any{"file_path": hello}),
		claudetest.Call("Edit", map[string]any{"file_path": hello, "old_string": "world", "new_string": "there"}),
		// After the auto compaction: the prompt is gone, the Edit's result
		// is kept, so the scenario goes on at this step.
		claudetest.Call("Edit", map[string]any{"file_path": hello, "old_string": "there", "new_string": "again"}),
		claudetest.Say("DONE auto"),
	}}, log.Hooks("SessionStart", "PreToolUse", "PostToolUse", "PreCompact", "PostCompact")...)
	// Claim a nearly full context window (1,000,000 tokens for the default
	// model) in the answer that calls the first Edit, once.
	m.SetInputTokens(func(q claudetest.Request) int {
		if len(q.ToolResults()) == 1 && !strings.Contains(q.MessageText(), "This session is being continued") {
			return 990_000
		}
		return 1000
	})

	res := run(t, r, dir, sc+" go")
	if res.Result != "DONE auto" {
		t.Errorf("result %q", res.Result)
	}
	fileIs(t, hello, "hello again\n")
	var events []string
	for _, p := range log.Payloads(t) {
		e := p.Event()
		switch e {
		case "PreCompact", "PostCompact":
			e += "(" + p.Str("trigger") + ")"
		case "SessionStart":
			e += "(" + p.Str("source") + ")"
		default:
			e += "(" + strings.TrimPrefix(p.Str("tool_use_id"), "toolu_") + ")"
		}
		events = append(events, e)
	}
	want := "SessionStart(startup) PreToolUse(SCENARIO-auto-compact_0) PostToolUse(SCENARIO-auto-compact_0) " +
		"PreToolUse(SCENARIO-auto-compact_1) PostToolUse(SCENARIO-auto-compact_1) " +
		"PreCompact(auto) SessionStart(compact) PostCompact(auto) " +
		"PreToolUse(SCENARIO-auto-compact_2) PostToolUse(SCENARIO-auto-compact_2)"
	if got := strings.Join(events, " "); got != want {
		t.Errorf("hook order\n got %s\nwant %s", got, want)
	}
	kinds := map[string]int{}
	for _, q := range m.Requests() {
		kinds[q.Kind]++
	}
	if kinds["compact"] != 1 || kinds["unmatched"] != 0 {
		t.Errorf("requests by kind %v, want one compact, none unmatched", kinds)
	}
	tpath, err := r.TranscriptPath(res.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := claudetest.ReadTranscript(tpath)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range lines {
		if l.Subtype == "compact_boundary" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d compact_boundary lines, want 1", n)
	}
}
