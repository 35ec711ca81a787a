package claudecode_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/hooks/claudecode"
	"github.com/git-lossless/git-lossless/hooks/settings"
	"github.com/git-lossless/git-lossless/internal/testkit/claudetest"
)

const mcpBin = "/opt/lossless/bin/git-lossless"

// mcpEntryOf returns mcpServers["git-lossless"] of a config, compacted
// with its key order kept (nil when absent).
func mcpEntryOf(t *testing.T, doc []byte) []byte {
	t.Helper()
	var top struct {
		Servers map[string]json.RawMessage `json:"mcpServers"`
	}
	if err := json.Unmarshal(doc, &top); err != nil {
		t.Fatalf("config %q: %v", doc, err)
	}
	raw, ok := top.Servers[settings.MCPServerName]
	if !ok {
		return nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func mcpJSONEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("%q: %v", a, err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("%q: %v", b, err)
	}
	return reflect.DeepEqual(va, vb)
}

func mcpWrite(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mcpRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// mcpSandbox is an isolated Claude Code home for the real CLI.
type mcpSandbox struct {
	claude, home, cfg, repo string
	env                     []string
}

func newMCPSandbox(t *testing.T, claude string) *mcpSandbox {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := &mcpSandbox{claude: claude, home: filepath.Join(base, "home"), repo: filepath.Join(base, "repo")}
	s.cfg = filepath.Join(s.home, ".claude")
	for _, d := range []string{s.cfg, filepath.Join(s.home, "tmp")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("git", "init", "-q", s.repo).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	s.env = []string{
		"HOME=" + s.home, "CLAUDE_CONFIG_DIR=" + s.cfg, "PATH=" + os.Getenv("PATH"),
		"ANTHROPIC_BASE_URL=http://127.0.0.1:9", "ANTHROPIC_API_KEY=test",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1",
		"TMPDIR=" + filepath.Join(s.home, "tmp"), "LANG=C.UTF-8", "TERM=dumb",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + os.DevNull, "XDG_DATA_HOME=" + filepath.Join(s.home, "data"),
	}
	return s
}

// run runs a program in the sandbox's repository with its environment.
func (s *mcpSandbox) run(t *testing.T, prog string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Dir = s.repo
	cmd.Env = s.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(prog), strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestMCPInstallWritesWhatClaudeMCPAddWrites runs the real `claude mcp
// add --scope user|project` in one sandbox and our merge in another, and
// compares: the same entry, keys in the same order, and (for .mcp.json,
// which holds nothing else) the same document.
func TestMCPInstallWritesWhatClaudeMCPAddWrites(t *testing.T) {
	claude := claudetest.EnsureClaude(t)
	real, ours := newMCPSandbox(t, claude), newMCPSandbox(t, claude)
	real.run(t, claude, "mcp", "add", "--scope", "user", "git-lossless", "--", mcpBin, "mcp")
	real.run(t, claude, "mcp", "add", "--scope", "project", "git-lossless", "--", mcpBin, "mcp")
	realUser := mcpRead(t, filepath.Join(real.cfg, ".claude.json"))
	realProject := mcpRead(t, filepath.Join(real.repo, ".mcp.json"))

	getenv := func(k string) string {
		for _, kv := range ours.env {
			if v, ok := strings.CutPrefix(kv, k+"="); ok {
				return v
			}
		}
		return ""
	}
	for _, scope := range []settings.Scope{settings.ScopeUser, settings.ScopeProject} {
		path, err := claudecode.MCPConfigPath(scope, ours.repo, getenv)
		if err != nil {
			t.Fatal(err)
		}
		p, err := settings.PlanMCPInstall(path, claudecode.MCPServerEntry(mcpBin))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Apply(time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	ourUser := mcpRead(t, filepath.Join(ours.cfg, ".claude.json"))
	ourProject := mcpRead(t, filepath.Join(ours.repo, ".mcp.json"))
	if a, b := mcpEntryOf(t, realUser), mcpEntryOf(t, ourUser); a == nil || !bytes.Equal(a, b) {
		t.Errorf("user entry: claude mcp add wrote %s, install %s", a, b)
	}
	if !bytes.Equal(bytes.TrimSpace(realProject), bytes.TrimSpace(ourProject)) {
		t.Errorf(".mcp.json: claude mcp add wrote\n%s\ninstall\n%s", realProject, ourProject)
	}
	t.Logf("claude mcp add --scope project wrote .mcp.json:\n%s", realProject)

	// Both sandboxes read back the same by the real CLI.
	for _, s := range []*mcpSandbox{real, ours} {
		out := s.run(t, claude, "mcp", "get", "git-lossless")
		if !strings.Contains(out, "Command: "+mcpBin) || !strings.Contains(out, "Args: mcp") || !strings.Contains(out, "Type: stdio") {
			t.Errorf("claude mcp get:\n%s", out)
		}
	}
	// And the real CLI removes what install wrote.
	ours.run(t, claude, "mcp", "remove", "--scope", "user", "git-lossless")
	if mcpEntryOf(t, mcpRead(t, filepath.Join(ours.cfg, ".claude.json"))) != nil {
		t.Error("claude mcp remove left our user entry")
	}
}

// TestMCPRegistrationRealClaudeCode installs with the real git-lossless
// binary and checks with the real CLI that Claude Code starts the server
// and completes the MCP handshake (`claude mcp list`: Connected), for the
// user and the project scope, and that uninstall removes it. Install
// registers git-lossless-mcp, the server's program beside git-lossless;
// without it there, `git-lossless mcp`, which runs git-lossless-mcp found
// on PATH: both connect.
func TestMCPRegistrationRealClaudeCode(t *testing.T) {
	claude := claudetest.EnsureClaude(t)
	gl := buildBinary(t)
	server := filepath.Join(filepath.Dir(gl), settings.MCPProgramName)
	s := newMCPSandbox(t, claude)
	// Something in the archive, so that the server has a store to open.
	os.WriteFile(filepath.Join(s.repo, "a.txt"), []byte("a\n"), 0o644)
	s.run(t, gl, "record", "--op", "read", "a.txt")
	statusOf := func(prog string) string {
		t.Helper()
		line := regexp.MustCompile(`(?m)^git-lossless: ` + regexp.QuoteMeta(prog) + ` mcp - (.*)$`)
		out := s.run(t, claude, "mcp", "list")
		m := line.FindStringSubmatch(out)
		if m == nil {
			return "absent\n" + out
		}
		return m[1]
	}
	status := func() string { t.Helper(); return statusOf(server) }

	out := s.run(t, gl, "install", "claude-code", "--scope", "user", "--command", gl)
	if !strings.Contains(out, "+++ "+filepath.Join(s.cfg, ".claude.json")+" (new)") || !strings.Contains(out, `+      "command": "`+server+`",`) || !strings.Contains(out, "dry run") {
		t.Errorf("dry run does not show the MCP config diff:\n%s", out)
	}
	if got := status(); !strings.HasPrefix(got, "absent") {
		t.Fatalf("dry run registered the server: %s", got)
	}
	s.run(t, gl, "install", "claude-code", "--scope", "user", "--command", gl, "--apply")
	if got := status(); !strings.Contains(got, "Connected") {
		t.Fatalf("user scope: claude mcp list says %q", got)
	}
	out = s.run(t, gl, "doctor")
	if !regexp.MustCompile(`OK    mcp server: .* started and answered tools/list: \d+ tools \(`).MatchString(out) {
		t.Errorf("doctor:\n%s", out)
	}
	s.run(t, gl, "uninstall", "claude-code", "--scope", "user", "--apply")
	if got := status(); !strings.HasPrefix(got, "absent") {
		t.Fatalf("after uninstall: %s", got)
	}
	if b, err := os.ReadFile(filepath.Join(s.cfg, ".claude.json")); err == nil && mcpEntryOf(t, b) != nil {
		t.Errorf("uninstall left the entry: %s", b)
	}

	// Project scope: pending until approved (as after `claude mcp add
	// --scope project`), then connected.
	s.run(t, gl, "install", "claude-code", "--scope", "project", "--command", gl, "--apply")
	if got := status(); !strings.Contains(got, "Pending approval") {
		t.Fatalf("project scope before approval: %q", got)
	}
	// (Approved the way a user's settings approve it: the project's own
	// settings approve nothing in a folder not trusted yet.)
	mcpWrite(t, filepath.Join(s.cfg, "settings.json"), `{"enabledMcpjsonServers": ["git-lossless"]}`)
	out = s.run(t, gl, "doctor")
	if !regexp.MustCompile(`OK    mcp server: .*\(project scope, .*\.mcp\.json\) started and answered tools/list`).MatchString(out) {
		t.Errorf("doctor, project scope:\n%s", out)
	}
	if got := status(); !strings.Contains(got, "Connected") {
		t.Fatalf("project scope: claude mcp list says %q", got)
	}
	s.run(t, gl, "uninstall", "claude-code", "--scope", "project", "--apply")
	if got := status(); !strings.HasPrefix(got, "absent") {
		t.Fatalf("after project uninstall: %s", got)
	}
	if _, err := os.Stat(filepath.Join(s.repo, ".mcp.json")); !os.IsNotExist(err) {
		t.Errorf(".mcp.json left behind: %v", err)
	}

	// git-lossless-mcp moved from beside git-lossless to a directory on
	// PATH: install registers `git-lossless mcp`, which runs it from there.
	onPath := filepath.Join(filepath.Dir(filepath.Dir(gl)), "path-bin")
	if err := os.MkdirAll(onPath, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(server, filepath.Join(onPath, settings.MCPProgramName)); err != nil {
		t.Fatal(err)
	}
	for i, kv := range s.env {
		if strings.HasPrefix(kv, "PATH=") {
			s.env[i] = "PATH=" + onPath + string(os.PathListSeparator) + strings.TrimPrefix(kv, "PATH=")
		}
	}
	s.run(t, gl, "install", "claude-code", "--scope", "user", "--command", gl, "--apply")
	if got := statusOf(gl); !strings.Contains(got, "Connected") {
		t.Fatalf("delegating form: claude mcp list says %q", got)
	}
	out = s.run(t, gl, "doctor")
	if !regexp.MustCompile(`OK    mcp server: ` + "`" + regexp.QuoteMeta(gl) + ` mcp` + "`" + ` .* started and answered tools/list: \d+ tools \(`).MatchString(out) {
		t.Errorf("doctor, delegating form:\n%s", out)
	}
}

// TestSessionStartFactsRealClaudeCode: with hooks and server installed by
// `install claude-code --apply`, a session that edits a file and hits a
// tool error is compacted (`claude -p /compact --resume`); the next run's
// first request carries our SessionStart text: the facts (goal, the open
// error, the file edited), the working set, and the MCP tools by the
// names Claude Code gives them, which the model can then call
// (mcp__git-lossless__search answers, not "no such tool").
func TestSessionStartFactsRealClaudeCode(t *testing.T) {
	if testing.Short() {
		t.Skip("drives the real Claude Code CLI")
	}
	claude := claudetest.EnsureClaude(t)
	gl := buildBinary(t)
	ctx := context.Background()
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	gitOut(t, dir, "init", "-q")
	hello := filepath.Join(dir, "hello.txt")
	writeFile(t, hello, "hello world\n")

	const one, two = "FACTS:one", "FACTS:two"
	m := claudetest.NewModel(t, claudetest.Script{
		one: {
			claudetest.Call("Read", map[string]any{"file_path": hello}),
			claudetest.Call("Edit", map[string]any{"file_path": hello, "old_string": "world", "new_string": "there"}),
			claudetest.Call("Bash", map[string]any{"command": "exit 3", "description": "fail on purpose"}),
			claudetest.Say("DONE one"),
		},
		two: {
			claudetest.Call(claudecode.MCPToolName(settings.MCPServerName, "search"), map[string]any{"query": "hello"}),
			claudetest.Say("DONE two"),
		},
	})
	r := claudetest.NewRunner(t, claude, m)
	r.Env = append(r.Env, "XDG_DATA_HOME="+filepath.Join(r.Home, "data"), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	// The user lets the model call our tools without asking (-p cannot ask).
	allow := filepath.Join(t.TempDir(), "allow.json")
	writeFile(t, allow, `{"permissions": {"allow": ["mcp__git-lossless"]}}`)
	r.Settings = allow
	inst := exec.Command(gl, "install", "claude-code", "--scope", "user", "--apply", "--command", gl)
	inst.Env = append(os.Environ(), "CLAUDE_CONFIG_DIR="+r.ConfigDir, "HOME="+r.Home)
	if out, err := inst.CombinedOutput(); err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}

	res, err := r.Run(ctx, dir, one+" please work")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, m.Log())
	}
	if trs := m.ToolResults(one); len(trs) != 3 || !trs[2].IsError {
		t.Fatalf("tool results %+v, want the Bash call to fail", trs)
	}
	session := res.SessionID
	if _, err := r.Run(ctx, dir, "/compact", "--resume", session); err != nil {
		t.Fatalf("compact: %v\n%s", err, m.Log())
	}
	if _, err := r.Run(ctx, dir, two+" go on", "--resume", session); err != nil {
		t.Fatalf("after: %v\n%s", err, m.Log())
	}
	reqs := m.ScenarioRequests(two)
	if len(reqs) == 0 {
		t.Fatalf("no request after the compaction\n%s", m.Log())
	}
	txt := reqs[0].MessageText()
	i := strings.Index(txt, "git-lossless: this session ("+session+") was compacted.")
	if i < 0 {
		t.Fatalf("the model never received our SessionStart text:\n%s", txt)
	}
	text := txt[i:]
	if end := strings.Index(text, "(or `git lossless log --session "+session+"`)."); end > 0 {
		text = text[:end]
	}
	t.Logf("SessionStart text as the model got it:\n%s", text)
	for _, want := range []string{
		`Goal (first request): "` + one + ` please work"`,
		"Files edited: hello.txt",
		"Errors still open (no later success of the same tool on the same target):\n  * Bash exit 3: ",
		"Search everything archived: `git lossless recall search QUERY --session " + session + "`",
		"- hello.txt: edited by you",
		"mcp__git-lossless__restore_context",
		"mcp__git-lossless__read_file",
		"mcp__git-lossless__search",
		"mcp__git-lossless__read_span",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("SessionStart text lacks %q", want)
		}
	}
	if len(text) > hooks.ManifestBudget {
		t.Errorf("SessionStart text of %d characters", len(text))
	}
	// The tool named there exists under that name: the call reached our
	// server.
	trs := m.ToolResults(two)
	if len(trs) != 1 || trs[0].IsError || strings.Contains(trs[0].Text, "No such tool") {
		t.Fatalf("%s: %+v\n%s", claudecode.MCPToolName(settings.MCPServerName, "search"), trs, m.Log())
	}
	t.Logf("search answered: %.300s", trs[0].Text)
}
