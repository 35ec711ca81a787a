package claudecode_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/internal/testkit"
	"github.com/git-lossless/git-lossless/internal/testkit/claudetest"
)

// buildBinary builds git-lossless for a test, with git-lossless-mcp
// beside it (which its mcp command runs and install registers).
func buildBinary(t *testing.T) string {
	t.Helper()
	bins, err := testkit.BuildPrograms(t.TempDir(), "git-lossless", "git-lossless-mcp")
	if err != nil {
		t.Fatal(err)
	}
	return bins[0]
}

// buildWithHookProgram builds git-lossless and, beside it, the hook-only
// program git-lossless-hook and the MCP server's, as `go install
// ./cmd/...` lays them out; an install by that git-lossless writes the
// hook program into the settings.
func buildWithHookProgram(t *testing.T) (bin, hook string) {
	t.Helper()
	bins, err := testkit.BuildPrograms(t.TempDir(), "git-lossless", "git-lossless-hook", "git-lossless-mcp")
	if err != nil {
		t.Fatal(err)
	}
	return bins[0], bins[1]
}

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func fileIs(t *testing.T, p, want string) {
	t.Helper()
	got, err := os.ReadFile(p)
	if err != nil || string(got) != want {
		t.Fatalf("%s = %q (%v), want %q", p, got, err, want)
	}
}

// secretIn reports whether any object of the repository contains s.
func secretIn(t *testing.T, dir, s string) bool {
	t.Helper()
	cmd := exec.Command("git", "-C", dir, "cat-file", "--batch-all-objects", "--batch")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("cat-file: %v", err)
	}
	return bytes.Contains(out, []byte(s))
}

// TestClaudeCodeEndToEnd drives the real Claude Code CLI with our hooks
// installed by `install claude-code --apply` into an isolated config dir,
// against a scripted model, through read/edit, a blind edit, a subagent, a
// secret, /compact, and edits after compaction.
func TestClaudeCodeEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("drives the real Claude Code CLI")
	}
	claude := claudetest.EnsureClaude(t)
	// The hooks run through git-lossless-hook here (the other real-CLI
	// tests run them through git-lossless itself, so both programs meet
	// the real Claude Code).
	bin, hookProg := buildWithHookProgram(t)
	ctx := context.Background()

	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	gitOut(t, dir, "init", "-q")
	hello, mainGo, blind, shared, env := filepath.Join(dir, "hello.txt"), filepath.Join(dir, "main.go"),
		filepath.Join(dir, "blind.txt"), filepath.Join(dir, "shared.txt"), filepath.Join(dir, ".env")
	const secret = "sk-E2E-PLANTED-SECRET-0xC0FFEE"
	writeFile(t, hello, "hello world\n")
	writeFile(t, mainGo, "package main\n\nfunc main() {}\n")
	writeFile(t, blind, "never read\n")
	writeFile(t, shared, "seen by the subagent only\n")
	writeFile(t, env, "API_KEY="+secret+"\n")
	helloBefore := strings.TrimSpace(gitOut(t, dir, "hash-object", "hello.txt"))

	const sc, sub, after, drift = "SCENARIO:main", "SUBTASK:shared", "SCENARIO:after", "SCENARIO:drift"
	m := claudetest.NewModel(t, claudetest.Script{
		sc: {
			claudetest.Call("Read", map[string]any{"file_path": hello}),
			claudetest.Call("Edit", map[string]any{"file_path": hello, "old_string": "world", "new_string": "there"}),
			claudetest.Call("Edit", map[string]any{"file_path": blind, "old_string": "never", "new_string": "blindly"}),
			claudetest.Call("Agent", map[string]any{"description": "look", "prompt": sub + " read shared.txt", "subagent_type": "general-purpose", "run_in_background": false}),
			claudetest.Call("Edit", map[string]any{"file_path": shared, "old_string": "only", "new_string": "and main"}),
			claudetest.Call("Read", map[string]any{"file_path": env}),
			claudetest.Call("Read", map[string]any{"file_path": mainGo}),
			claudetest.Say("DONE main"),
		},
		sub: {
			claudetest.Call("Read", map[string]any{"file_path": shared}),
			claudetest.Say("sub done"),
		},
		after: {
			claudetest.Call("Edit", map[string]any{"file_path": mainGo, "old_string": "func main() {}", "new_string": "func main() { println(1) }"}),
			claudetest.Say("DONE after"),
		},
		drift: {
			claudetest.Call("Edit", map[string]any{"file_path": hello, "old_string": "there", "new_string": "again"}),
			claudetest.Say("DONE drift"),
		},
	})
	r := claudetest.NewRunner(t, claude, m)
	r.Env = append(r.Env, "XDG_DATA_HOME="+filepath.Join(r.Home, "data"), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")

	// Install with the real command, into the isolated config dir.
	inst := exec.Command(bin, "install", "claude-code", "--scope", "user", "--apply", "--command", bin)
	inst.Env = append(os.Environ(), "CLAUDE_CONFIG_DIR="+r.ConfigDir, "HOME="+r.Home)
	if out, err := inst.CombinedOutput(); err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	settings, err := os.ReadFile(filepath.Join(r.ConfigDir, "settings.json"))
	if err != nil || !bytes.Contains(settings, []byte(hookProg+" hook pre-tool-use")) || bytes.Contains(settings, []byte(bin+" hook")) {
		t.Fatalf("settings after install do not run the hook program %s: %s %v", hookProg, settings, err)
	}

	res, err := r.Run(ctx, dir, sc+" please work")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, m.Log())
	}
	session := res.SessionID
	st, err := gitstore.OpenDir(dir, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	events := func(q gitstore.Query) []gitstore.Event {
		t.Helper()
		q.Session = session
		evs, err := st.Events(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		return evs
	}
	results := map[string]claudetest.ToolResult{}
	for _, tr := range m.ToolResults(sc) {
		results[tr.ToolUseID] = tr
	}

	// 1. Read then edit: allowed; the read version and the edited version
	// are archived, the read one equal to `git hash-object` before the edit.
	fileIs(t, hello, "hello there\n")
	reads := events(gitstore.Query{Path: "hello.txt", Op: "read"})
	if len(reads) != 1 || reads[0].Blob != helloBefore || reads[0].Agent != "" || reads[0].Key != claudetest.ToolUseID(sc, 0) {
		t.Fatalf("read of hello.txt archived as %+v, want blob %s", reads, helloBefore)
	}
	edits := events(gitstore.Query{Path: "hello.txt", Op: "edit"})
	if len(edits) != 1 || edits[0].Blob != strings.TrimSpace(gitOut(t, dir, "hash-object", "hello.txt")) {
		t.Fatalf("edit of hello.txt archived as %+v", edits)
	}
	// Every event names its harness, in the stored line plain git shows,
	// in the writer its adapter names: the hooks' read and edit among them.
	lines := gitOut(t, dir, "log", "--format=", "-p", "refs/lossless/cc-"+session, "--", "events.jsonl")
	for _, e := range append(reads, edits...) {
		if e.Source != "hook" || e.Harness != "claude-code" || !strings.Contains(lines, string(e.Raw)) || !strings.Contains(string(e.Raw), `"harness":"claude-code"`) {
			t.Fatalf("hook event %s: want source hook and \"harness\":\"claude-code\" in refs/lossless/cc-%s", e.Raw, session)
		}
	}

	// 2. A blind edit of an existing file is denied; the model got the reason.
	fileIs(t, blind, "never read\n")
	if tr := results[claudetest.ToolUseID(sc, 2)]; !tr.IsError || !strings.Contains(tr.Text, "git-lossless guard") {
		t.Fatalf("blind edit result %+v, want our deny reason", tr)
	}

	// 3. The subagent read shared.txt; the main agent's edit without a read
	// of its own is denied; the subagent's read is archived with its id.
	fileIs(t, shared, "seen by the subagent only\n")
	if tr := results[claudetest.ToolUseID(sc, 4)]; !tr.IsError || !strings.Contains(tr.Text, "git-lossless guard") {
		t.Fatalf("main edit of a subagent-read file: %+v, want our deny", tr)
	}
	// The subagent's real id: the name Claude Code gave its transcript,
	// and the header its requests carried.
	tp, err := r.TranscriptPath(session)
	if err != nil {
		t.Fatal(err)
	}
	subFiles, _ := filepath.Glob(filepath.Join(strings.TrimSuffix(tp, ".jsonl"), "subagents", "agent-*.jsonl"))
	if len(subFiles) != 1 {
		t.Fatalf("subagent transcripts %v, want one", subFiles)
	}
	subAgent := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(subFiles[0]), "agent-"), ".jsonl")
	if reqs := m.ScenarioRequests(sub); len(reqs) == 0 || reqs[0].AgentID != subAgent {
		t.Fatalf("subagent requests carry agent id %q, its transcript is agent-%s.jsonl", reqs[0].AgentID, subAgent)
	}
	subReads := events(gitstore.Query{Path: "shared.txt", Op: "read"})
	if len(subReads) != 1 || subReads[0].Agent != subAgent || !subReads[0].Sidechain || subReads[0].Key != claudetest.ToolUseID(sub, 0) ||
		subReads[0].Blob != strings.TrimSpace(gitOut(t, dir, "hash-object", "shared.txt")) {
		t.Fatalf("subagent read archived as %+v, want agent %s", subReads, subAgent)
	}

	// 4. The secret: recorded as excluded, in no object.
	envEv := events(gitstore.Query{Path: ".env"})
	if len(envEv) == 0 || !envEv[0].Excluded || envEv[0].Blob != "" {
		t.Fatalf(".env events %+v", envEv)
	}
	// (The object check comes at the end: Claude Code re-attaches .env
	// after the compaction, and the sweeps see it again.)

	// 5. /compact: the pre-compact sweep archives main and subagent
	// transcripts; session-start(compact) prints the working set, which the
	// model receives in the next run.
	if _, err := r.Run(ctx, dir, "/compact", "--resume", session); err != nil {
		t.Fatalf("compact: %v\n%s", err, m.Log())
	}
	// The pre-compact hook ran and recorded the request for a compaction
	// (its sweep is proven in TestClaudeCodeAutoCompactSweep, where lines
	// exist that only it can archive).
	marks := events(gitstore.Query{Op: "precompact"})
	if len(marks) != 1 || !strings.HasPrefix(marks[0].Key, "precompact:") || string(marks[0].Extra["trigger"]) != `"manual"` {
		t.Fatalf("pre-compact marks %+v", marks)
	}
	bounds := events(gitstore.Query{Op: "compact"})
	if len(bounds) != 1 || !strings.HasPrefix(bounds[0].Key, "compact:") || bounds[0].Agent != "" || bounds[0].Source != "sweep" {
		t.Fatalf("compaction boundaries archived: %+v", bounds)
	}
	mainSpans := events(gitstore.Query{Op: "span", Agent: gitstore.MainAgent})
	subSpans := events(gitstore.Query{Op: "span", Agent: subAgent})
	if len(mainSpans) == 0 || len(subSpans) == 0 {
		t.Fatalf("spans archived: main %d, subagent %d", len(mainSpans), len(subSpans))
	}
	var summary bool
	for _, e := range mainSpans {
		summary = summary || string(e.Extra["kind"]) == `"compact_summary"`
	}
	if !summary {
		t.Fatal("the compaction summary was not archived as a span")
	}
	before := len(events(gitstore.Query{}))
	sw := exec.Command(bin, "sweep", tp)
	sw.Dir = dir
	if out, err := sw.CombinedOutput(); err != nil {
		t.Fatalf("sweep: %v\n%s", err, out)
	}
	if after := len(events(gitstore.Query{})); after != before {
		t.Fatalf("a second sweep added %d events", after-before)
	}

	// 6. After compaction, an edit of a re-attached file is allowed.
	if _, err := r.Run(ctx, dir, after+" go on", "--resume", session); err != nil {
		t.Fatalf("after: %v\n%s", err, m.Log())
	}
	fileIs(t, mainGo, "package main\n\nfunc main() { println(1) }\n")
	if trs := m.ToolResults(after); len(trs) != 1 || trs[0].IsError {
		t.Fatalf("edit of the re-attached main.go: %+v", trs)
	}
	// SessionStart(compact) printed the working set of the compacted
	// context, and it reached the model (in this run's first request:
	// the /compact run made none after the compaction). The resume of
	// this run prints its own, headed "was resumed": look for the other.
	var sawManifest bool
	for _, req := range m.ScenarioRequests(after) {
		txt := req.MessageText()
		i := strings.Index(txt, "git-lossless: this session ("+session+") was compacted.")
		if i < 0 {
			continue
		}
		ws := txt[i:]
		if end := strings.Index(ws, "To get content back"); end > 0 {
			ws = ws[:end]
		}
		sawManifest = strings.Contains(ws, "- hello.txt: edited by you") && strings.Contains(ws, "- main.go: read") &&
			strings.Contains(ws, "- .env: read") && strings.Contains(ws, "excluded")
	}
	if !sawManifest {
		t.Fatalf("the model never received the compacted context's working set\n%s", m.Log())
	}
	// main.go came back as an attachment after the boundary, at the
	// version on disk before this edit, in the boundary's epoch.
	attached := events(gitstore.Query{Op: "attach", Path: "main.go"})
	if len(attached) != 1 || attached[0].Blob != gitstore.BlobID([]byte("package main\n\nfunc main() {}\n")) ||
		string(attached[0].Extra["epoch"]) != `"`+bounds[0].Key+`"` || attached[0].Agent != "" {
		t.Fatalf("re-attached main.go archived as %+v (boundary %s)", attached, bounds[0].Key)
	}

	// 7. The same after the file changed on disk behind the agent's back
	// (mtime kept, so only a content hash can tell): denied by us.
	fi, _ := os.Stat(hello)
	writeFile(t, hello, "hello there, changed behind your back\n")
	os.Chtimes(hello, fi.ModTime(), fi.ModTime())
	if _, err := r.Run(ctx, dir, drift+" once more", "--resume", session); err != nil {
		t.Fatalf("drift: %v\n%s", err, m.Log())
	}
	fileIs(t, hello, "hello there, changed behind your back\n")
	trs := m.ToolResults(drift)
	if len(trs) == 0 || !trs[0].IsError || !strings.Contains(trs[0].Text, "changed on disk") {
		t.Fatalf("drift edit result %+v, want our drift deny\n%s", trs, m.Log())
	}

	// The secret: only ever recorded as excluded (the read, and its
	// re-attachment after the compaction), and in no object at all.
	for _, e := range events(gitstore.Query{Path: ".env"}) {
		if !e.Excluded || e.Blob != "" {
			t.Fatalf(".env archived with content: %+v", e)
		}
	}
	if secretIn(t, dir, secret) {
		t.Fatal("the planted secret is in an object")
	}

	// Plain git agrees with everything written.
	gitOut(t, dir, "fsck", "--strict")
	vf := exec.Command(bin, "verify")
	vf.Dir = dir
	if out, err := vf.CombinedOutput(); err != nil {
		t.Fatalf("verify: %v\n%s", err, out)
	}
}

// TestClaudeCodeAutoCompact: Claude Code compacts in the middle of a turn
// when the context is nearly full (PreCompact with trigger auto, and the
// turn goes on). The re-attached file may then be edited without a read,
// and the boundary and the attachment end up in the archive.
//
// (Seen here: Claude Code flushes transcript lines in bursts, so the
// tool results of the turn were not yet in the file when PreCompact and
// the PostToolUse hooks before it ran. TestClaudeCodePreCompactSweep
// proves the pre-compact sweep where the lines are there.)
func TestClaudeCodeAutoCompact(t *testing.T) {
	if testing.Short() {
		t.Skip("drives the real Claude Code CLI")
	}
	claude := claudetest.EnsureClaude(t)
	bin := buildBinary(t)
	ctx := context.Background()
	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	gitOut(t, dir, "init", "-q")
	hello := filepath.Join(dir, "hello.txt")
	writeFile(t, hello, "hello world\n")

	const sc = "SCENARIO:auto"
	m := claudetest.NewModel(t, claudetest.Script{sc: {
		claudetest.Call("Read", map[string]any{"file_path": hello}),
		claudetest.Call("Edit", map[string]any{"file_path": hello, "old_string": "world", "new_string": "there"}),
		// After the compaction (the Edit's result is kept, so the
		// scenario goes on here): no read, hello.txt was re-attached.
		claudetest.Call("Edit", map[string]any{"file_path": hello, "old_string": "there", "new_string": "again"}),
		claudetest.Say("DONE auto"),
	}})
	// A nearly full window in the answer that calls the first Edit, once.
	m.SetInputTokens(func(q claudetest.Request) int {
		if len(q.ToolResults()) == 1 && !strings.Contains(q.MessageText(), "This session is being continued") {
			return 990_000
		}
		return 1000
	})
	r := claudetest.NewRunner(t, claude, m)
	r.Env = append(r.Env, "XDG_DATA_HOME="+filepath.Join(r.Home, "data"), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	inst := exec.Command(bin, "install", "claude-code", "--scope", "user", "--apply", "--command", bin)
	inst.Env = append(os.Environ(), "CLAUDE_CONFIG_DIR="+r.ConfigDir, "HOME="+r.Home)
	if out, err := inst.CombinedOutput(); err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}

	res, err := r.Run(ctx, dir, sc+" go")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, m.Log())
	}
	if res.Result != "DONE auto" {
		t.Fatalf("result %q\n%s", res.Result, m.Log())
	}
	fileIs(t, hello, "hello again\n")
	if trs := m.ToolResults(sc); len(trs) != 3 || trs[2].IsError {
		t.Fatalf("tool results %+v: the edit after the compaction was not allowed\n%s", trs, m.Log())
	}
	st, err := gitstore.OpenDir(dir, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := st.Events(ctx, gitstore.Query{Session: res.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	var mark *gitstore.Event
	for i, e := range evs {
		if e.Op == "precompact" {
			if mark != nil {
				t.Fatal("two pre-compact marks for one compaction")
			}
			mark = &evs[i]
		}
	}
	if mark == nil || string(mark.Extra["trigger"]) != `"auto"` {
		t.Fatalf("no pre-compact mark with trigger auto: %+v", mark)
	}
	if n := len(m.ScenarioRequests(sc)); n != 4 {
		t.Fatalf("%d scenario requests, want 4 (the turn went on after the compaction)\n%s", n, m.Log())
	}
	var boundary, attach bool
	for _, e := range evs {
		boundary = boundary || e.Op == "compact" && strings.HasPrefix(e.Key, "compact:")
		attach = attach || e.Op == "attach" && e.Path == "hello.txt"
	}
	if !boundary || !attach {
		t.Fatalf("archived boundary %v, re-attached hello.txt %v", boundary, attach)
	}
	vf := exec.Command(bin, "verify")
	vf.Dir = dir
	if out, err := vf.CombinedOutput(); err != nil {
		t.Fatalf("verify: %v\n%s", err, out)
	}
}

// TestClaudeCodePreCompactSweep proves what the pre-compact hook archives
// by itself: with only our PreCompact hook left in the settings (install
// --apply, then every other event of ours removed), a session with a
// subagent leaves nothing in the archive until `/compact`; right after it
// the archive holds the main and the subagent transcripts, and no
// compaction boundary (its line is written after PreCompact, and no other
// hook of ours ran to sweep it).
func TestClaudeCodePreCompactSweep(t *testing.T) {
	if testing.Short() {
		t.Skip("drives the real Claude Code CLI")
	}
	claude := claudetest.EnsureClaude(t)
	bin := buildBinary(t)
	ctx := context.Background()
	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	gitOut(t, dir, "init", "-q")
	hello, shared := filepath.Join(dir, "hello.txt"), filepath.Join(dir, "shared.txt")
	writeFile(t, hello, "hello world\n")
	writeFile(t, shared, "read by the subagent\n")

	const sc, sub = "SCENARIO:pc", "SUBTASK:pc"
	m := claudetest.NewModel(t, claudetest.Script{
		sc: {
			claudetest.Call("Read", map[string]any{"file_path": hello}),
			claudetest.Call("Agent", map[string]any{"description": "look", "prompt": sub + " read shared.txt", "subagent_type": "general-purpose", "run_in_background": false}),
			claudetest.Say("DONE pc"),
		},
		sub: {
			claudetest.Call("Read", map[string]any{"file_path": shared}),
			claudetest.Say("sub done"),
		},
	})
	r := claudetest.NewRunner(t, claude, m)
	r.Env = append(r.Env, "XDG_DATA_HOME="+filepath.Join(r.Home, "data"), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	inst := exec.Command(bin, "install", "claude-code", "--scope", "user", "--apply", "--command", bin)
	inst.Env = append(os.Environ(), "CLAUDE_CONFIG_DIR="+r.ConfigDir, "HOME="+r.Home)
	if out, err := inst.CombinedOutput(); err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	settingsPath := filepath.Join(r.ConfigDir, "settings.json")
	raw, err := os.ReadFile(settingsPath)
	if err != nil {
		t.Fatal(err)
	}
	var settings map[string]any
	if err := json.Unmarshal(raw, &settings); err != nil {
		t.Fatal(err)
	}
	hooksCfg, _ := settings["hooks"].(map[string]any)
	if _, ok := hooksCfg["PreCompact"]; !ok {
		t.Fatalf("install wrote no PreCompact hook: %s", raw)
	}
	settings["hooks"] = map[string]any{"PreCompact": hooksCfg["PreCompact"]}
	raw, _ = json.Marshal(settings)
	writeFile(t, settingsPath, string(raw))

	res, err := r.Run(ctx, dir, sc+" go")
	if err != nil || res.Result != "DONE pc" {
		t.Fatalf("run: %v %+v\n%s", err, res, m.Log())
	}
	if refs := strings.TrimSpace(gitOut(t, dir, "for-each-ref", "refs/lossless/")); refs != "" {
		t.Fatalf("archive written before /compact with only PreCompact installed: %s", refs)
	}
	subAgent := ""
	if reqs := m.ScenarioRequests(sub); len(reqs) > 0 {
		subAgent = reqs[0].AgentID
	}
	if subAgent == "" {
		t.Fatalf("the subagent sent no agent id\n%s", m.Log())
	}
	if _, err := r.Run(ctx, dir, "/compact", "--resume", res.SessionID); err != nil {
		t.Fatalf("compact: %v\n%s", err, m.Log())
	}
	st, err := gitstore.OpenDir(dir, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := st.Events(ctx, gitstore.Query{Session: res.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	byOp := map[string]int{}
	var mainSpans, subSpans int
	var helloRead, sharedRead bool
	for _, e := range evs {
		byOp[string(e.Op)]++
		switch {
		case e.Op == "span" && e.Agent == "":
			mainSpans++
		case e.Op == "span" && e.Agent == subAgent:
			subSpans++
		case e.Op == "read" && e.Path == "hello.txt":
			helloRead = e.Agent == "" && e.Source == "sweep" && e.Blob == strings.TrimSpace(gitOut(t, dir, "hash-object", "hello.txt"))
		case e.Op == "read" && e.Path == "shared.txt":
			sharedRead = e.Agent == subAgent && e.Sidechain && e.Source == "sweep"
		}
	}
	if byOp["precompact"] != 1 || byOp["compact"] != 0 || byOp["attach"] != 0 {
		t.Fatalf("events by op %v: want one pre-compact mark and nothing swept after the compaction", byOp)
	}
	if mainSpans == 0 || subSpans == 0 || !helloRead || !sharedRead {
		t.Fatalf("pre-compact sweep: main spans %d, subagent %s spans %d, hello.txt read %v, shared.txt read %v; events by op %v",
			mainSpans, subAgent, subSpans, helloRead, sharedRead, byOp)
	}
	// A sweep by hand now finds what came after: the boundary.
	tp, err := r.TranscriptPath(res.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	sw := exec.Command(bin, "sweep", tp)
	sw.Dir = dir
	if out, err := sw.CombinedOutput(); err != nil {
		t.Fatalf("sweep: %v\n%s", err, out)
	}
	if evs, _ := st.Events(ctx, gitstore.Query{Session: res.SessionID, Op: "compact"}); len(evs) != 1 {
		t.Fatalf("after a sweep by hand: %d boundaries, want 1", len(evs))
	}
}
