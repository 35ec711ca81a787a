package gemini_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/internal/testkit"
	"github.com/git-lossless/git-lossless/internal/testkit/geminitest"
)

// buildBinary builds git-lossless for the test, with git-lossless-mcp
// beside it (which install registers as the MCP server).
func buildBinary(t *testing.T) string {
	t.Helper()
	bins, err := testkit.BuildPrograms(t.TempDir(), "git-lossless", "git-lossless-mcp")
	if err != nil {
		t.Fatal(err)
	}
	return bins[0]
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
	out, err := exec.Command("git", "-C", dir, "cat-file", "--batch-all-objects", "--batch").Output()
	if err != nil {
		t.Fatalf("cat-file: %v", err)
	}
	return bytes.Contains(out, []byte(s))
}

// TestGeminiEndToEnd drives the real Gemini CLI 0.61.0 with the hooks and
// the MCP server installed by `git lossless install gemini --apply` into
// an isolated HOME, against a scripted model: a read (recorded), a
// replace after it (allowed, the content after archived), a replace of a
// file never read (denied: unchanged, the model gets our reason), a read
// of .env (access recorded, no content anywhere), then in a resumed
// session a compression (a tiny model.compressionThreshold and one turn
// reported big): the next tool result carries the handed-back notice, an
// edit of the file read before the compression is denied, read_file of
// our MCP server restores it, and the edit is allowed; a third run's
// prompt gets no second notice.
func TestGeminiEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("drives the real Gemini CLI")
	}
	gem := geminitest.EnsureGemini(t)
	bin := buildBinary(t)
	ctx := context.Background()

	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	gitOut(t, dir, "init", "-q")
	hello, other, notes, env := filepath.Join(dir, "hello.txt"), filepath.Join(dir, "other.txt"), filepath.Join(dir, "notes.txt"), filepath.Join(dir, ".env")
	const secret = "sk-GEMINI-E2E-PLANTED-SECRET-0xC0FFEE"
	writeFile(t, hello, "hello world\n")
	writeFile(t, other, "other content\n")
	writeFile(t, notes, "some notes\n")
	writeFile(t, env, "API_KEY="+secret+"\n")
	helloBefore := strings.TrimSpace(gitOut(t, dir, "hash-object", "hello.txt"))

	const sc1, sc2, sc3, sc4, sc5 = "SCENARIO:gemini-e2e-one", "SCENARIO:gemini-e2e-two", "SCENARIO:gemini-e2e-three",
		"SCENARIO:gemini-e2e-four", "SCENARIO:gemini-e2e-five"
	m := geminitest.NewModel(t, geminitest.Script{
		sc1: {
			geminitest.ReadFile(hello),
			geminitest.Replace(hello, "hello world", "hello gemini"),
			geminitest.Replace(other, "other content", "other EDITED"),
			geminitest.ReadFile(env),
			geminitest.Say("DONE one"),
		},
		sc2: {
			geminitest.ReadFile(notes), // the turn reported big: compression before the next
			geminitest.ReadFile(notes), // its AfterTool hands the working set back
			geminitest.Replace(hello, "hello gemini", "hello again"),
			geminitest.Call("mcp_git-lossless_read_file", map[string]any{"path": "hello.txt"}),
			geminitest.Replace(hello, "hello gemini", "hello again"),
			geminitest.Say("DONE two"),
		},
		sc3: {geminitest.ReadFile(notes), geminitest.Say("DONE three")},
		sc4: {geminitest.Say("DONE four")},
		sc5: {geminitest.Say("DONE five")},
	})
	// A compression exactly where wanted: the first turn of runs two and
	// three reports a prompt far over the tiny threshold, every other
	// request a small one.
	var mu sync.Mutex
	big := map[string]bool{}
	m.SetPromptTokens(func(q geminitest.Request) int {
		mu.Lock()
		defer mu.Unlock()
		for _, sc := range []string{sc3, sc2} {
			if bytes.Contains(q.Raw, []byte(sc)) && !big[sc] && !bytes.Contains(q.Raw, []byte(geminitest.CallID(sc, 0))) && bytes.Contains(q.Raw, []byte(`"tools"`)) {
				big[sc] = true
				return 50000
			}
		}
		return 100
	})
	r := geminitest.NewRunner(t, gem, m)
	r.Env = append(r.Env, "XDG_DATA_HOME="+filepath.Join(r.Home, "data"), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")

	installGemini(t, bin, r)

	// Run 1: read, replace, blind replace, .env.
	res1, err := r.Run(ctx, dir, sc1+" read hello.txt, change it, change other.txt, read .env")
	if err != nil {
		t.Fatalf("run 1: %v\n%s", err, m.Log())
	}
	session := res1.SessionID
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
	fileIs(t, hello, "hello gemini\n")
	fileIs(t, other, "other content\n")
	trs := m.ToolResults(sc1)
	if len(trs) != 4 {
		t.Fatalf("run 1 tool results %+v\n%s", trs, m.Log())
	}
	if !strings.Contains(trs[2].Error(), "Tool execution blocked:") || !strings.Contains(trs[2].Error(), "read_file") {
		t.Fatalf("blind replace result %+v, want our deny reason naming read_file", trs[2])
	}
	hookReads := func(path string) []gitstore.Event {
		var out []gitstore.Event
		for _, e := range events(gitstore.Query{Path: path, Op: "read"}) {
			if e.Source == "hook" {
				out = append(out, e)
			}
		}
		return out
	}
	if rd := hookReads("hello.txt"); len(rd) != 1 || rd[0].Blob != helloBefore || rd[0].View != "full" || rd[0].Harness != "gemini" {
		t.Fatalf("hook read of hello.txt %+v, want blob %s", rd, helloBefore)
	}
	var helloEdit *gitstore.Event
	for _, e := range events(gitstore.Query{Path: "hello.txt", Op: "edit"}) {
		if e.Source == "hook" {
			helloEdit = &e
		}
	}
	if helloEdit == nil || helloEdit.Blob != gitstore.BlobID([]byte("hello gemini\n")) {
		t.Fatalf("hook edit of hello.txt %+v", helloEdit)
	}
	denies := events(gitstore.Query{Op: "deny", Path: "other.txt"})
	if len(denies) != 1 || denies[0].Harness != "gemini" {
		t.Fatalf("denials of other.txt %+v", denies)
	}
	envEv := events(gitstore.Query{Path: ".env"})
	if len(envEv) == 0 {
		t.Fatal("no access of .env recorded")
	}
	for _, e := range envEv {
		if !e.Excluded || e.Blob != "" {
			t.Fatalf(".env archived with content: %+v", e)
		}
	}
	// Every event names its harness in the plain line, in gemini-<session>.
	lines := gitOut(t, dir, "log", "--format=", "-p", "refs/lossless/gemini-"+session, "--", "events.jsonl")
	if !strings.Contains(lines, `"harness":"gemini"`) || strings.Contains(lines, `"harness":"claude-code"`) {
		t.Fatalf("events of refs/lossless/gemini-%s do not all name gemini", session)
	}
	if len(events(gitstore.Query{Op: "span"})) == 0 {
		t.Fatal("no spans swept from the chat")
	}

	// Run 2: a resumed session, compressed after its first turn.
	r.Set("model.compressionThreshold", 0.001)
	res2, err := r.Run(ctx, dir, sc2+" go on", "--resume", "latest")
	if err != nil {
		t.Fatalf("run 2: %v\n%s", err, m.Log())
	}
	if res2.SessionID != session {
		t.Fatalf("run 2 session %s, want %s", res2.SessionID, session)
	}
	if k := m.Kinds(); k["compress"] != 1 {
		t.Fatalf("requests by kind %v, want one compression\n%s", k, m.Log())
	}
	trs = m.ToolResults(sc2)
	if len(trs) != 5 {
		t.Fatalf("run 2 tool results %+v\n%s", trs, m.Log())
	}
	notice := "git-lossless: this session (" + session + ") was compacted."
	if strings.Contains(trs[0].Response, notice) {
		t.Fatalf("working set handed back before the compression: %s", trs[0].Response)
	}
	if !strings.Contains(trs[1].Response, notice) || !strings.Contains(trs[1].Response, "hello.txt") || !strings.Contains(trs[1].Response, "mcp_git-lossless_restore_context") {
		t.Fatalf("the result after the compression lacks the handed-back notice: %s\n%s", trs[1].Response, m.Log())
	}
	if !strings.Contains(trs[2].Error(), "Tool execution blocked:") {
		t.Fatalf("edit from memory after the compression: %+v, want denied", trs[2])
	}
	if trs[3].Error() != "" || !strings.Contains(trs[3].Response, "recorded as seen by session "+session) {
		t.Fatalf("MCP read_file: %+v", trs[3])
	}
	if trs[4].Error() != "" {
		t.Fatalf("edit after the MCP read: %+v, want allowed\n%s", trs[4], m.Log())
	}
	fileIs(t, hello, "hello again\n")
	bounds := events(gitstore.Query{Op: "compact"})
	if len(bounds) != 1 || string(bounds[0].Extra["trigger"]) != `"compress"` {
		t.Fatalf("compaction boundaries %+v", bounds)
	}
	if hb := events(gitstore.Query{Op: "handback"}); len(hb) != 1 || hb[0].Key != "handback:"+bounds[0].Key {
		t.Fatalf("hand-backs %+v", hb)
	}
	mcpReads := events(gitstore.Query{Op: "read", Path: "hello.txt"})
	mcpSeen := false
	for _, e := range mcpReads {
		mcpSeen = mcpSeen || (e.Source == "mcp" && e.Harness == "gemini")
	}
	if !mcpSeen {
		t.Fatalf("no MCP read of hello.txt in the gemini session: %+v", mcpReads)
	}

	// Run 3: compressed after its first turn, whose text answer fires no
	// AfterTool: run 4's prompt (BeforeAgent) gets the notice, run 5's
	// does not. (BeforeAgent's context is a user part of the request.)
	if _, err := r.Run(ctx, dir, sc3+" once more", "--resume", "latest"); err != nil {
		t.Fatalf("run 3: %v\n%s", err, m.Log())
	}
	// (Resumed with the tiny threshold, the CLI may also compress before
	// run 3's first turn: its AfterTool hands that one back.)
	if k := m.Kinds(); k["compress"] < 2 {
		t.Fatalf("requests by kind %v, want another compression\n%s", k, m.Log())
	}
	r.Set("model.compressionThreshold", 0.9)
	// The notice in the user parts of a run's first model request. (The
	// notice quotes the session's latest prompts, markers included, so the
	// scripted model's routing of these runs is not relied on.)
	runNotice := func(sc string) int {
		t.Helper()
		from := len(m.Requests())
		if _, err := r.Run(ctx, dir, sc+" go", "--resume", "latest"); err != nil {
			t.Fatalf("%s: %v\n%s", sc, err, m.Log())
		}
		reqs := m.Requests()
		if len(reqs) <= from {
			t.Fatalf("%s made no request\n%s", sc, m.Log())
		}
		// The run's prompt is the last user content (its BeforeAgent
		// context a part of it); earlier ones stay in the history.
		us := reqs[from].UserTexts()
		if len(us) == 0 || !strings.Contains(us[len(us)-1], sc) {
			t.Fatalf("%s: first request's last user content is not its prompt: %q", sc, us)
		}
		last := us[len(us)-1]
		return strings.Count(last, notice) * strings.Count(last, "<hook_context>")
	}
	if n := runNotice(sc4); n != 1 {
		t.Fatalf("run 4's prompt carries the notice %d times, want once\n%s", n, m.Log())
	}
	if n := runNotice(sc5); n != 0 {
		t.Fatalf("run 5's prompt got the working set again")
	}
	// Each boundary handed back at most once, the last one certainly.
	bounds = events(gitstore.Query{Op: "compact"})
	hb := events(gitstore.Query{Op: "handback"})
	keys := map[string]bool{}
	for _, b := range bounds {
		keys["handback:"+b.Key] = true
	}
	for _, e := range hb {
		if !keys[e.Key] {
			t.Fatalf("hand-back %s of no boundary, or twice", e.Key)
		}
		delete(keys, e.Key)
	}
	if len(bounds) < 2 || len(hb) < 2 || hb[len(hb)-1].Key != "handback:"+bounds[len(bounds)-1].Key {
		t.Fatalf("boundaries %d, hand-backs %+v", len(bounds), hb)
	}

	// The hooks swept the chat a few lines at a time, each read going on
	// from the state the last left in the cursor: a sweep of the whole
	// chat from scratch (cursors gone) finds every record stored already.
	// (A resume in a later minute may start a new chat file of the
	// session, listing its messages again: each is swept.)
	chats, _ := filepath.Glob(filepath.Join(r.GeminiDir(), "tmp", "*", "chats", "session-*-"+session[:8]+".jsonl"))
	if len(chats) == 0 {
		t.Fatal("no chat file")
	}
	before := len(events(gitstore.Query{}))
	if err := os.RemoveAll(filepath.Join(dir, ".git", "lossless", "gemini-cursors")); err != nil {
		t.Fatal(err)
	}
	sw := exec.Command(bin, append([]string{"sweep", "--harness", "gemini"}, chats...)...)
	sw.Dir = dir
	if out, err := sw.CombinedOutput(); err != nil {
		t.Fatalf("sweep: %v\n%s", err, out)
	}
	if after := len(events(gitstore.Query{})); after != before {
		t.Fatalf("a sweep from scratch added %d events to the incremental sweeps' %d", after-before, before)
	}

	// The secret is in no object, even after gc; git agrees with everything.
	gitOut(t, dir, "gc", "-q")
	if secretIn(t, dir, secret) {
		t.Fatal("the planted secret is in an object")
	}
	gitOut(t, dir, "fsck", "--strict")
	vf := exec.Command(bin, "verify", "--all")
	vf.Dir = dir
	if out, err := vf.CombinedOutput(); err != nil {
		t.Fatalf("verify --all: %v\n%s", err, out)
	}
}

// installGemini runs `git lossless install gemini --apply` (twice: the
// second changes nothing) into the runner's isolated HOME, over the
// settings the runner needs (kept, as any foreign setting is), and takes
// the result as the runner's settings.
func installGemini(t *testing.T, bin string, r *geminitest.Runner) {
	t.Helper()
	settingsPath := r.SettingsPath()
	if err := os.MkdirAll(filepath.Dir(settingsPath), 0o700); err != nil {
		t.Fatal(err)
	}
	pre, _ := json.MarshalIndent(r.Settings, "", "  ")
	writeFile(t, settingsPath, string(pre)+"\n")
	installEnv := append(os.Environ(), "HOME="+r.Home, "GEMINI_CLI_HOME=")
	inst := exec.Command(bin, "install", "gemini", "--scope", "user", "--apply", "--command", bin)
	inst.Env = installEnv
	if out, err := inst.CombinedOutput(); err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	raw, err := os.ReadFile(settingsPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{bin + " hook gemini pre-tool-use", bin + " hook gemini post-tool-use", bin + " hook gemini before-agent", `"mcpServers"`, `"--harness"`, `"timeout": 10000`, `"selectedType"`} {
		if !bytes.Contains(raw, []byte(want)) {
			t.Fatalf("settings after install lack %s:\n%s", want, raw)
		}
	}
	again := exec.Command(bin, "install", "gemini", "--scope", "user", "--apply", "--command", bin)
	again.Env = installEnv
	if out, err := again.CombinedOutput(); err != nil || !strings.Contains(string(out), "nothing to change") {
		t.Fatalf("second install: %v\n%s", err, out)
	}
	if raw2, _ := os.ReadFile(settingsPath); !bytes.Equal(raw, raw2) {
		t.Fatalf("second install changed the settings:\n%s", raw2)
	}
	r.Settings = map[string]any{}
	if err := json.Unmarshal(raw, &r.Settings); err != nil {
		t.Fatal(err)
	}
}

// TestGeminiSubagent: a subagent (invoke_agent) runs under the parent's
// session id; its own chat (chats/<session>/<agent>.jsonl) is swept as its
// own context (agent = its id, sidechain) when the session ends. Its
// hooks cannot be told from the parent's, so its read vouches for the
// parent's edit (the documented limit, pinned here).
func TestGeminiSubagent(t *testing.T) {
	if testing.Short() {
		t.Skip("drives the real Gemini CLI")
	}
	gem := geminitest.EnsureGemini(t)
	bin := buildBinary(t)
	ctx := context.Background()
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	gitOut(t, dir, "init", "-q")
	shared := filepath.Join(dir, "shared.txt")
	writeFile(t, shared, "seen by the child\n")
	const sc, sub = "SCENARIO:gemini-e2e-parent", "SUBTASK:gemini-e2e-child"
	m := geminitest.NewModel(t, geminitest.Script{
		sc: {
			geminitest.InvokeAgent("codebase_investigator", sub+" read shared.txt and report"),
			geminitest.Replace(shared, "the child", "the parent too"),
			geminitest.Say("DONE parent"),
		},
		sub: {
			geminitest.ReadFile(shared),
			geminitest.Call("complete_task", map[string]any{"report": map[string]any{
				"SummaryOfFindings": "child done", "ExplorationTrace": []any{}, "RelevantLocations": []any{}}}),
		},
	})
	r := geminitest.NewRunner(t, gem, m)
	r.Env = append(r.Env, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	installGemini(t, bin, r)
	res, err := r.Run(ctx, dir, sc+" delegate")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, m.Log())
	}
	chat, err := r.ChatPath(res.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	kids, _ := filepath.Glob(filepath.Join(filepath.Dir(chat), res.SessionID, "*.jsonl"))
	if len(kids) != 1 {
		t.Fatalf("subagent chats %v", kids)
	}
	child := strings.TrimSuffix(filepath.Base(kids[0]), ".jsonl")
	fileIs(t, shared, "seen by the parent too\n")
	st, err := gitstore.OpenDir(dir, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := st.Events(ctx, gitstore.Query{Session: res.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	var childRead, childSpans, hookRead bool
	for _, e := range evs {
		if e.Harness != "gemini" {
			t.Fatalf("event of harness %q: %s", e.Harness, e.Raw)
		}
		switch {
		case e.Agent == child && e.Sidechain && e.Op == "read" && e.Path == "shared.txt" && e.Source == "sweep":
			childRead = true
		case e.Agent == child && e.Op == "span":
			childSpans = true
		case e.Agent == "" && e.Op == "read" && e.Path == "shared.txt" && e.Source == "hook":
			hookRead = true
		}
	}
	if !childRead || !childSpans || !hookRead {
		t.Fatalf("child %s: swept read %v, spans %v; hook read (main context) %v", child, childRead, childSpans, hookRead)
	}
}
