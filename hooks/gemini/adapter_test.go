package gemini_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/hooks/gemini"
	"github.com/git-lossless/git-lossless/hooks/settings"
)

var sampleHome = filepath.Join("..", "..", "testdata", "gemini-cli-0.61.0", "home")

// copyHome copies the sample ~/.gemini into a temp HOME whose
// projects.json maps the sample project ("ws") to repo.
func copyHome(t *testing.T, repo string) string {
	t.Helper()
	home := t.TempDir()
	err := filepath.WalkDir(sampleHome, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(sampleHome, p)
		dst := filepath.Join(home, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o700)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	pj, _ := json.Marshal(map[string]any{"projects": map[string]string{repo: "ws"}})
	writeFile(t, filepath.Join(home, ".gemini", "projects.json"), string(pj))
	return home
}

func newRepo(t *testing.T) string {
	t.Helper()
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	gitOut(t, dir, "init", "-q")
	return dir
}

func runHook(t *testing.T, event string, payload any, home string) (stdout, stderr string) {
	t.Helper()
	b, _ := json.Marshal(payload)
	var out, errb bytes.Buffer
	env := map[string]string{"HOME": home}
	code := hooks.Run(context.Background(), gemini.New(), event, hooks.Env{Stdin: bytes.NewReader(b), Stdout: &out, Stderr: &errb,
		Getenv: func(k string) string { return env[k] }})
	if code != 0 {
		t.Fatalf("hook %s exit %d", event, code)
	}
	return out.String(), errb.String()
}

// TestHandBackOnce: a chat whose compression no hook saw (the sample's
// two compressions) gets its working set at the next BeforeAgent, once;
// the next BeforeAgent and an AfterTool of the same session get nothing.
func TestHandBackOnce(t *testing.T) {
	repo := newRepo(t)
	home := copyHome(t, repo)
	chat := filepath.Join(home, ".gemini", "tmp", "ws", "chats", "session-2026-12-05T14-20-08c76717.jsonl")
	const session = "08c76717-9950-4f87-8b0d-6c2ff32d49ed"
	base := map[string]any{"session_id": session, "transcript_path": chat, "cwd": repo, "timestamp": "2026-12-05T15:00:00Z"}
	with := func(kv ...any) map[string]any {
		p := map[string]any{}
		for k, v := range base {
			p[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			p[kv[i].(string)] = kv[i+1]
		}
		return p
	}
	out, errs := runHook(t, "BeforeAgent", with("hook_event_name", "BeforeAgent", "prompt", "go on"), home)
	var reply struct {
		HSO struct {
			Event   string `json:"hookEventName"`
			Context string `json:"additionalContext"`
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal([]byte(out), &reply); err != nil || reply.HSO.Event != "BeforeAgent" ||
		!strings.Contains(reply.HSO.Context, "git-lossless: this session ("+session+") was compacted.") ||
		!strings.Contains(reply.HSO.Context, "/home/dev/project/hello.txt") || !strings.Contains(reply.HSO.Context, "the read_file tool") {
		t.Fatalf("first BeforeAgent: %q (stderr %q)", out, errs)
	}
	if strings.Contains(reply.HSO.Context, "<") {
		t.Errorf("handed-back text holds '<', which the CLI escapes: %q", reply.HSO.Context)
	}
	for i := 0; i < 2; i++ {
		if out, errs := runHook(t, "BeforeAgent", with("hook_event_name", "BeforeAgent", "prompt", "more"), home); out != "" || errs != "" {
			t.Fatalf("BeforeAgent #%d after the hand-back: %q %q", i+2, out, errs)
		}
	}
	after := with("hook_event_name", "AfterTool", "tool_name", "read_file", "tool_input", map[string]any{"file_path": filepath.Join(repo, "x.txt")},
		"tool_response", map[string]any{"llmContent": "x\n", "returnDisplay": ""})
	writeFile(t, filepath.Join(repo, "x.txt"), "x\n")
	if out, errs := runHook(t, "AfterTool", after, home); out != "" || errs != "" {
		t.Fatalf("AfterTool after the hand-back: %q %q", out, errs)
	}
	st, err := gitstore.OpenDir(repo, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := st.Events(context.Background(), gitstore.Query{Session: session})
	if err != nil {
		t.Fatal(err)
	}
	var bounds, handbacks []string
	read := false
	for _, e := range evs {
		switch e.Op {
		case "compact":
			bounds = append(bounds, e.Key)
		case "handback":
			handbacks = append(handbacks, e.Key)
		case "read":
			read = read || (e.Path == "x.txt" && e.Source == "hook" && e.Harness == "gemini" && e.Blob == gitstore.BlobID([]byte("x\n")))
		}
	}
	if len(bounds) != 2 || len(handbacks) != 1 || handbacks[0] != "handback:"+bounds[1] || !read {
		t.Fatalf("boundaries %v, hand-backs %v (want one, of the last), hook read of x.txt %v", bounds, handbacks, read)
	}
}

// TestGuardDecode: BeforeTool of a replace of a file never seen is
// denied in Gemini CLI's words; write_file of a new file is allowed;
// read_file is not the guard's.
func TestGuardDecode(t *testing.T) {
	repo := newRepo(t)
	home := t.TempDir()
	target := filepath.Join(repo, "a.txt")
	writeFile(t, target, "a\n")
	base := func(tool string, in map[string]any) map[string]any {
		return map[string]any{"session_id": "s-1", "cwd": repo, "hook_event_name": "BeforeTool", "timestamp": "2026-12-05T15:00:00Z", "tool_name": tool, "tool_input": in}
	}
	out, _ := runHook(t, "BeforeTool", base("replace", map[string]any{"file_path": "a.txt", "old_string": "a", "new_string": "b"}), home)
	var deny struct{ Decision, Reason string }
	if json.Unmarshal([]byte(out), &deny) != nil || deny.Decision != "deny" || !strings.Contains(deny.Reason, "read_file") || !strings.Contains(deny.Reason, "a.txt") {
		t.Fatalf("replace of an unseen file: %q", out)
	}
	if out, errs := runHook(t, "BeforeTool", base("write_file", map[string]any{"file_path": filepath.Join(repo, "new.txt"), "content": "n"}), home); out != "" || errs != "" {
		t.Fatalf("write_file of a new file: %q %q", out, errs)
	}
	if out, _ := runHook(t, "BeforeTool", base("write_file", map[string]any{"file_path": target, "content": "n"}), home); !strings.Contains(out, `"deny"`) {
		t.Fatalf("write_file over an unseen file: %q", out)
	}
	if out, errs := runHook(t, "BeforeTool", base("read_file", map[string]any{"file_path": target}), home); out != "" || errs != "" {
		t.Fatalf("read_file: %q %q", out, errs)
	}
	// A partial read is recorded as lines:A-B (which the guard takes as
	// seen, unhashed: see package guard).
	writeFile(t, target, "1\n2\n3\n")
	after := base("read_file", map[string]any{"file_path": target, "start_line": 2, "end_line": 2})
	after["hook_event_name"] = "AfterTool"
	after["tool_response"] = map[string]any{"llmContent": "\nIMPORTANT: The file content has been truncated.\nStatus: Showing lines 2-2 of 3 total lines.\nAction: To read more of the file, you can use the 'start_line' and 'end_line' parameters in a subsequent 'read_file' call. For example, to read the next section of the file, use start_line: 3.\n\n--- FILE CONTENT (truncated) ---\n2",
		"returnDisplay": "Read lines 2-2 of 3 from a.txt"}
	if _, errs := runHook(t, "AfterTool", after, home); errs != "" {
		t.Fatalf("AfterTool partial read: %q", errs)
	}
	st, _ := gitstore.OpenDir(repo, gitstore.Options{})
	evs, _ := st.Events(context.Background(), gitstore.Query{Op: "read", Path: "a.txt"})
	if len(evs) != 1 || evs[0].View != "lines:2-2" || evs[0].Blob != gitstore.BlobID([]byte("2")) || evs[0].Key == "" {
		t.Fatalf("partial read recorded as %+v", evs)
	}
	if out, errs := runHook(t, "BeforeTool", base("replace", map[string]any{"file_path": target, "old_string": "2", "new_string": "x"}), home); out != "" || errs != "" {
		t.Fatalf("replace after a partial read: %q %q, want allowed", out, errs)
	}
}

// TestImportSamples: `git lossless import` (every harness found: here
// only Gemini CLI's chats) archives the sample chats, the subagent's as
// its own context; a second import adds nothing.
func TestImportSamples(t *testing.T) {
	if testing.Short() {
		t.Skip("builds git-lossless")
	}
	bin := buildBinary(t)
	repo := newRepo(t)
	home := copyHome(t, repo)
	imp := func() string {
		cmd := exec.Command(bin, "import", "--json")
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "HOME="+home, "CLAUDE_CONFIG_DIR=", "GEMINI_CLI_HOME=", "XDG_DATA_HOME="+filepath.Join(home, "data"))
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("import: %v\n%s", err, out)
		}
		return string(out)
	}
	var first []struct {
		Harness  string `json:"harness"`
		Sessions int    `json:"sessions"`
		Events   int    `json:"events"`
	}
	out1 := imp()
	if err := json.Unmarshal([]byte(out1), &first); err != nil {
		// One harness: a single object.
		var one struct {
			Harness  string `json:"harness"`
			Sessions int    `json:"sessions"`
			Events   int    `json:"events"`
		}
		if err := json.Unmarshal([]byte(out1), &one); err != nil {
			t.Fatalf("import --json: %v\n%s", err, out1)
		}
		first = append(first, one)
	}
	if len(first) != 1 || first[0].Harness != "gemini" || first[0].Sessions < 4 || first[0].Events == 0 {
		t.Fatalf("first import %s", out1)
	}
	st, err := gitstore.OpenDir(repo, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	evs, err := st.Events(ctx, gitstore.Query{})
	if err != nil {
		t.Fatal(err)
	}
	sub := false
	for _, e := range evs {
		if e.Harness != "gemini" {
			t.Fatalf("imported event of harness %q: %s", e.Harness, e.Raw)
		}
		sub = sub || (e.Session == "cc106cda-29a0-4431-b783-fe844bfef7e2" && e.Agent == "6fdbd512-609c-493b-aadc-22b51e047dc6" && e.Sidechain)
	}
	if !sub {
		t.Fatal("no event of the subagent's context")
	}
	ws, err := st.Writers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ws {
		if !strings.HasPrefix(w.Name, gemini.Prefix) {
			t.Fatalf("writer %s", w.Name)
		}
	}
	out2 := imp()
	var second struct {
		Events int `json:"events"`
	}
	if err := json.Unmarshal([]byte(out2), &second); err != nil || second.Events != 0 {
		t.Fatalf("second import added events (%v): %s", err, out2)
	}
	if n, _ := st.Events(ctx, gitstore.Query{}); len(n) != len(evs) {
		t.Fatalf("events %d after the second import, %d before", len(n), len(evs))
	}
}

// TestInstallPlan: install into a settings.json with a foreign hook and
// an MCP server of someone else's keeps both, writes our hooks (named,
// timeouts in ms, wrapped in matcher groups) and our MCP server; again
// changes nothing; uninstall gives the file back byte for byte.
func TestInstallPlan(t *testing.T) {
	home := t.TempDir()
	path := filepath.Join(home, ".gemini", "settings.json")
	orig := `{
  "general": {"vimMode": true},
  "hooks": {
    "BeforeTool": [{"matcher": "*", "hooks": [{"type": "command", "name": "theirs", "command": "echo hi", "timeout": 500}]}]
  },
  "mcpServers": {"other": {"command": "other-server"}}
}
`
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, orig)
	opt := hooks.InstallOptions{Scope: "user", Dir: home, Getenv: func(k string) string {
		if k == "HOME" {
			return home
		}
		return ""
	}, Bin: settings.HookBinary{Path: "/opt/bin/git-lossless", Hook: "/opt/bin/git-lossless"}}
	applied := 0
	apply := func(o hooks.InstallOptions) hooks.Install {
		t.Helper()
		inst, err := gemini.New().Install(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		if len(inst.Targets) != 1 || inst.Targets[0].Plan.Path != path {
			t.Fatalf("targets %+v", inst.Targets)
		}
		applied++
		if _, err := inst.Targets[0].Plan.Apply(time.Date(2026, 12, 6, 3, 0, applied, 0, time.UTC)); err != nil {
			t.Fatal(err)
		}
		return inst
	}
	apply(opt)
	got, _ := os.ReadFile(path)
	var doc struct {
		Hooks map[string][]struct {
			Matcher string `json:"matcher"`
			Hooks   []struct {
				Type, Name, Command string
				Timeout             int
			} `json:"hooks"`
		} `json:"hooks"`
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(got, &doc); err != nil {
		t.Fatalf("%v\n%s", err, got)
	}
	bt := doc.Hooks["BeforeTool"]
	if len(bt) != 2 || bt[0].Hooks[0].Name != "theirs" || bt[1].Matcher != "write_file|replace" || bt[1].Hooks[0].Timeout != 10000 ||
		bt[1].Hooks[0].Name != "git-lossless-guard" || bt[1].Hooks[0].Command != "/opt/bin/git-lossless hook gemini pre-tool-use" {
		t.Fatalf("BeforeTool after install: %+v", bt)
	}
	for _, ev := range []string{"AfterTool", "BeforeAgent", "SessionEnd"} {
		if len(doc.Hooks[ev]) != 1 || doc.Hooks[ev][0].Hooks[0].Type != "command" {
			t.Fatalf("%s after install: %+v", ev, doc.Hooks[ev])
		}
	}
	if s := doc.MCPServers["git-lossless"]; s.Command != "/opt/bin/git-lossless" || strings.Join(s.Args, " ") != "mcp --harness gemini" || doc.MCPServers["other"].Command != "other-server" {
		t.Fatalf("mcpServers after install: %+v", doc.MCPServers)
	}
	inst, err := gemini.New().Install(context.Background(), opt)
	if err != nil || inst.Targets[0].Plan.Changed() {
		t.Fatalf("second install changes %v %v", inst.Targets[0].Plan.Changes, err)
	}
	tools, err := gemini.New().MCPTools(home, opt.Getenv)
	if err != nil || tools == nil || tools("restore_context") != "mcp_git-lossless_restore_context" {
		t.Fatalf("MCPTools after install: %v", err)
	}
	un := opt
	un.Uninstall = true
	apply(un)
	if after, _ := os.ReadFile(path); string(after) != orig {
		t.Fatalf("uninstall left\n%s\nwant\n%s", after, orig)
	}
	if tools, _ := gemini.New().MCPTools(home, opt.Getenv); tools != nil {
		t.Fatal("MCPTools after uninstall")
	}
}
