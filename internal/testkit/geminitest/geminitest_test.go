package geminitest_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/internal/testkit/geminitest"
	"github.com/git-lossless/git-lossless/internal/testkit/hooklog"
)

const denyReason = "GEMINITEST-DENY: other.txt was never read"

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
		t.Skip("runs the real Gemini CLI")
	}
	t.Parallel()
	return geminitest.EnsureGemini(t), newRepo(t)
}

func run(t *testing.T, r *geminitest.Runner, dir, prompt string, args ...string) geminitest.Result {
	t.Helper()
	res, err := r.Run(context.Background(), dir, prompt, args...)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range res.Events {
		types = append(types, e.Type())
	}
	t.Logf("gemini -p %q %s: %s, session %s, status %s, response %q, events %v", prompt, strings.Join(args, " "), res.Duration.Round(time.Millisecond), res.SessionID, res.Status, res.Response, types)
	return res
}

func logHooks(log *hooklog.Log, events ...string) []geminitest.Hook {
	var hs []geminitest.Hook
	for _, e := range events {
		m := ""
		if e == "BeforeTool" || e == "AfterTool" {
			m = "*"
		}
		hs = append(hs, geminitest.Hook{Event: e, Matcher: m, Command: log.Script})
	}
	return hs
}

func TestReadReplaceDeny(t *testing.T) {
	const sc = "SCENARIO:gemini-read-replace-deny"
	bin, dir := setup(t)
	hello, other := filepath.Join(dir, "hello.txt"), filepath.Join(dir, "other.txt")
	log := hooklog.New(t, hooklog.Rule{Event: "BeforeTool", Contains: "other.txt", Stdout: `{"decision":"deny","reason":"` + denyReason + `"}`})
	m := geminitest.NewModel(t, geminitest.Script{sc: {
		geminitest.ReadFile(hello),
		geminitest.Replace(hello, "hello world", "hello gemini"),
		geminitest.Replace(other, "other content", "other EDITED"),
		geminitest.Say("DONE read-replace-deny"),
	}})
	r := geminitest.NewRunner(t, bin, m)
	r.SetHooks(logHooks(log, "SessionStart", "BeforeAgent", "BeforeTool", "AfterTool", "PreCompress", "AfterAgent", "SessionEnd")...)

	res := run(t, r, dir, sc+" read hello.txt, change it, then change other.txt")
	if !strings.Contains(res.Response, "DONE read-replace-deny") {
		t.Errorf("response %q", res.Response)
	}
	fileIs(t, hello, "hello gemini\n")
	fileIs(t, other, "other content\n")
	trs := m.ToolResults(sc)
	if len(trs) != 3 {
		t.Fatalf("tool results %+v", trs)
	}
	if trs[0].Output() != "hello world\n" || !strings.Contains(trs[1].Output(), "Successfully modified file") {
		t.Errorf("tool results %+v", trs[:2])
	}
	if trs[2].Error() != "Tool execution blocked: "+denyReason || trs[2].Name != "replace" {
		t.Errorf("denied replace result %+v, want the hook's reason", trs[2])
	}
	chat, err := r.ChatPath(res.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	ps := log.Payloads(t)
	for _, p := range ps {
		if p.Str("session_id") != res.SessionID || p.Str("transcript_path") != chat || p.Str("cwd") != dir {
			t.Errorf("%s payload: session %s transcript %s cwd %s", p.Event(), p.Str("session_id"), p.Str("transcript_path"), p.Str("cwd"))
		}
	}
	got := strings.Join(hooklog.Events(ps, func(p hooklog.Payload) string {
		if fp, _ := p.Input()["file_path"].(string); fp != "" {
			return p.Str("tool_name") + " " + filepath.Base(fp)
		}
		return p.Str("source") + p.Str("trigger") + p.Str("reason")
	}), " ")
	want := "SessionStart(startup) BeforeAgent PreCompress(auto) BeforeTool(read_file hello.txt) AfterTool(read_file hello.txt) " +
		"PreCompress(auto) BeforeTool(replace hello.txt) AfterTool(replace hello.txt) PreCompress(auto) BeforeTool(replace other.txt) " +
		"PreCompress(auto) AfterAgent SessionEnd(exit)"
	if got != want {
		t.Errorf("hooks\n got %s\nwant %s", got, want)
	}
	after := hooklog.Filter(ps, "AfterTool", func(p hooklog.Payload) bool { return p.Str("tool_name") == "read_file" })
	if len(after) != 1 {
		t.Fatalf("%d AfterTool(read_file)", len(after))
	}
	if resp, _ := after[0]["tool_response"].(map[string]any); resp["llmContent"] != "hello world\n" {
		t.Errorf("AfterTool(read_file) tool_response %v", after[0]["tool_response"])
	}
	if k := m.Kinds(); k["scenario"] != 4 || k["unmatched"]+k["capped"]+k["other"] != 0 {
		t.Errorf("requests by kind %v\n%s", k, m.Log())
	}
	if trs := res.EventsOf("tool_result"); len(trs) != 3 || trs[2].Str("status") != "error" || trs[2].Str("tool_id") != "replace__"+geminitest.CallID(sc, 2) {
		t.Errorf("stream-json tool_result events %v, want 3, the last an error of replace__%s", trs, geminitest.CallID(sc, 2))
	}
}

// TestCompress forces a compression in a resumed session: a tiny
// model.compressionThreshold, a second run with --resume latest. Gemini
// CLI fires PreCompress (as before every turn), sends the compression
// and the verification :generateContent calls, writes a "$set" of the
// compressed message list holding the <state_snapshot> into the chat
// file, and sends the next model request with the snapshot in place of
// the old turns; BeforeModel's llm_request shows it too. SessionStart and
// BeforeAgent additionalContext land in the prompt's user content.
func TestCompress(t *testing.T) {
	const first, second = "SCENARIO:gemini-first", "SCENARIO:gemini-second"
	bin, dir := setup(t)
	hello := filepath.Join(dir, "hello.txt")
	log := hooklog.New(t,
		hooklog.Rule{Event: "SessionStart", Contains: `"resume"`, Stdout: `{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"GEMINITEST-SESSION-CONTEXT"}}`},
		hooklog.Rule{Event: "BeforeAgent", Stdout: `{"hookSpecificOutput":{"hookEventName":"BeforeAgent","additionalContext":"GEMINITEST-AGENT-CONTEXT"}}`})
	m := geminitest.NewModel(t, geminitest.Script{
		first:  {geminitest.ReadFile(hello), geminitest.Say("DONE first")},
		second: {geminitest.Replace(hello, "hello world", "hello again"), geminitest.Say("DONE second")},
	})
	r := geminitest.NewRunner(t, bin, m)
	r.SetHooks(logHooks(log, "SessionStart", "BeforeAgent", "PreCompress", "BeforeModel", "BeforeTool")...)

	res1 := run(t, r, dir, first+" read hello.txt")
	if k := m.Kinds(); k["compress"] != 0 {
		t.Fatalf("compressed in the first run: %v", k)
	}
	r.Set("model.compressionThreshold", 0.001)
	res2 := run(t, r, dir, second+" change hello.txt", "--resume", "latest")
	if res2.SessionID != res1.SessionID {
		t.Errorf("resumed session %s, want %s", res2.SessionID, res1.SessionID)
	}
	if !strings.Contains(res2.Response, "DONE second") {
		t.Errorf("response %q", res2.Response)
	}
	fileIs(t, hello, "hello again\n")
	if k := m.Kinds(); k["compress"] != 1 || k["verify"] != 1 {
		t.Fatalf("requests by kind %v, want one compress and one verify\n%s", k, m.Log())
	}
	var firstAfter string
	compressed := false
	for _, q := range m.Requests() {
		if q.Kind == "compress" {
			compressed = true
		} else if compressed && q.Kind == "scenario" {
			firstAfter = strings.Join(q.UserTexts(), "\n")
			break
		}
	}
	for _, want := range []string{"<state_snapshot>", geminitest.DefaultSummary, "<hook_context>GEMINITEST-SESSION-CONTEXT</hook_context>", "GEMINITEST-AGENT-CONTEXT", second} {
		if !strings.Contains(firstAfter, want) {
			t.Errorf("first request after compression lacks %q:\n%s", want, firstAfter)
		}
	}
	if strings.Contains(firstAfter, first+" read hello.txt") {
		t.Errorf("first request after compression still holds the first prompt")
	}

	// Hooks: SessionStart(resume), then PreCompress before the turn; the
	// BeforeModel after it already sees the snapshot.
	ps := log.Payloads(t)
	var sources []string
	for _, p := range hooklog.Filter(ps, "SessionStart", nil) {
		sources = append(sources, p.Str("source"))
	}
	if strings.Join(sources, ",") != "startup,resume" {
		t.Errorf("SessionStart sources %v", sources)
	}
	var seen []bool
	for _, p := range hooklog.Filter(ps, "BeforeModel", nil) {
		seen = append(seen, strings.Contains(p.JSON(), "<state_snapshot>\\n"+geminitest.DefaultSummary))
	}
	if fmt.Sprint(seen) != "[false false false true]" {
		t.Errorf("BeforeModel llm_request holds the snapshot: %v, want only the last of four", seen)
	}

	// The chat file: same file, a $set of messages holding the snapshot.
	chat, err := r.ChatPath(res1.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := geminitest.ReadChat(chat)
	if err != nil {
		t.Fatal(err)
	}
	sets := 0
	for _, l := range lines {
		if msgs, ok := l.Set["messages"]; ok && strings.Contains(string(msgs), "<state_snapshot>") {
			sets++
		}
	}
	if sets == 0 {
		t.Errorf("no $set of messages with a <state_snapshot> in %s", chat)
	}
}

// TestSubagent runs codebase_investigator through invoke_agent: its
// hooks carry the parent's session_id and transcript_path, and it writes
// its own chat file under chats/<session id>/. The main agent's
// read_many_files call shows that 0.61.0 does not offer that tool.
func TestSubagent(t *testing.T) {
	const sc, sub = "SCENARIO:gemini-subagent", "SUBTASK:gemini-child"
	bin, dir := setup(t)
	hello := filepath.Join(dir, "hello.txt")
	log := hooklog.New(t)
	m := geminitest.NewModel(t, geminitest.Script{
		sc: {
			geminitest.Call("read_many_files", map[string]any{"include": []string{"hello.txt"}}),
			geminitest.InvokeAgent("codebase_investigator", sub+" read hello.txt and report"),
			geminitest.Say("DONE parent"),
		},
		sub: {
			geminitest.ReadFile(hello),
			geminitest.Call("complete_task", map[string]any{"report": map[string]any{
				"SummaryOfFindings": "child done", "ExplorationTrace": []any{}, "RelevantLocations": []any{}}}),
		},
	})
	r := geminitest.NewRunner(t, bin, m)
	r.SetHooks(logHooks(log, "BeforeTool", "AfterTool")...)

	res := run(t, r, dir, sc+" delegate")
	if !strings.Contains(res.Response, "DONE parent") {
		t.Errorf("response %q", res.Response)
	}
	trs := m.ToolResults(sc)
	if len(trs) != 2 {
		t.Fatalf("parent tool results %+v", trs)
	}
	if !strings.HasPrefix(trs[0].Error(), `Tool "read_many_files" not found.`) {
		t.Errorf("read_many_files result %s", trs[0].Response)
	}
	if !strings.Contains(trs[1].Response, "Termination Reason: GOAL") || !strings.Contains(trs[1].Response, "child done") {
		t.Errorf("invoke_agent result %s", trs[1].Response)
	}
	chat, err := r.ChatPath(res.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	var tools []string
	for _, p := range log.Find(t, "BeforeTool", nil) {
		tools = append(tools, p.Str("tool_name"))
		if p.Str("session_id") != res.SessionID || p.Str("transcript_path") != chat {
			t.Errorf("BeforeTool(%s): session %s transcript %s", p.Str("tool_name"), p.Str("session_id"), p.Str("transcript_path"))
		}
	}
	if fmt.Sprint(tools) != "[invoke_agent read_file complete_task]" {
		t.Errorf("BeforeTool for %v, want invoke_agent read_file complete_task (none for the unknown tool)", tools)
	}
	for _, q := range m.ScenarioRequests(sub) {
		if q.ModelName() != "gemini-2.5-pro" {
			t.Errorf("child request #%d asks for %s", q.Seq, q.ModelName())
		}
	}
	kids, _ := filepath.Glob(filepath.Join(filepath.Dir(chat), res.SessionID, "*.jsonl"))
	if len(kids) != 1 {
		t.Fatalf("subagent chat files %v", kids)
	}
	lines, err := geminitest.ReadChat(kids[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) == 0 || !strings.Contains(string(lines[0].Raw), `"kind":"subagent"`) {
		t.Errorf("subagent chat header %s", lines[0].Raw)
	}
}
