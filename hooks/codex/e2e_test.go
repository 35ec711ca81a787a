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

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/internal/testkit"
	"github.com/git-lossless/git-lossless/internal/testkit/codextest"
)

// buildPrograms builds git-lossless and, beside it, git-lossless-hook and
// git-lossless-mcp (as `go install ./cmd/...` lays them out): install
// writes the hook program into hooks.json and the MCP server's into
// config.toml.
func buildPrograms(t *testing.T) (bin, hook string) {
	t.Helper()
	bins, err := testkit.BuildPrograms(t.TempDir(), "git-lossless", "git-lossless-hook", "git-lossless-mcp")
	if err != nil {
		t.Fatal(err)
	}
	return bins[0], bins[1]
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func fileIs(t *testing.T, path, want string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || string(b) != want {
		t.Errorf("%s = %q (%v), want %q", filepath.Base(path), b, err, want)
	}
}

// plantedKey is a secret in .env: it must reach no object of the archive.
const plantedKey = "sk-proj-PLANTEDcodexKEY0123456789abcdefXYZ"

// plainValue is in .env too, a value no secret scanner recognises: only
// the deny list keeps it out of the archive (evidence and spans).
const plainValue = "zebra-lantern-4471-quietly"

// TestCodexEndToEnd drives the real Codex CLI 0.169.0 against a scripted
// model, with the hooks installed by `git lossless install codex --apply`
// into an isolated HOME and CODEX_HOME and trusted by that install alone
// (no --dangerously-bypass-hook-trust). The model reads hello.txt with
// cat, patches it (allowed; the content after the patch is archived),
// patches other.txt it never read (denied: unchanged, and the next
// request carries our reason), cats .env (access recorded, no content),
// and is compacted: the next request carries the working set handed back
// by SessionStart(compact); a patch of hello.txt from memory is denied,
// after a cat it is allowed. Then git fsck --strict, git lossless verify
// --all, the planted key in no object after git gc, events that name
// their harness in the stored lines, and the writer codex-<session>.
func TestCodexEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real Codex CLI")
	}
	const sc = "SCENARIO:codex-e2e"
	codexBin := codextest.EnsureCodex(t)
	bin, hookProg := buildPrograms(t)
	ctx := context.Background()

	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	git(t, dir, "init", "-q")
	for name, body := range map[string]string{"hello.txt": "hello world\n", "other.txt": "other content\n", ".env": "OPENAI_API_KEY=" + plantedKey + "\nMOTTO=" + plainValue + "\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	m := codextest.NewModel(t, codextest.Script{sc: {
		codextest.Shell("cat hello.txt"), // 0
		codextest.Patch(codextest.UpdateFile("hello.txt", "hello world", "hello codex")),    // 1: allowed
		codextest.Patch(codextest.UpdateFile("other.txt", "other content", "other EDITED")), // 2: denied
		codextest.Shell("cat .env"), // 3: compaction after its answer
		codextest.Patch(codextest.UpdateFile("hello.txt", "hello codex", "hello memory")), // 4: denied (seen before the compaction only)
		codextest.Shell("cat hello.txt"), // 5
		codextest.Patch(codextest.UpdateFile("hello.txt", "hello codex", "hello again")), // 6: allowed
		codextest.Say("DONE e2e"),
	}})
	m.SetInputTokens(func(q codextest.Request) int {
		if len(q.ToolOutputs()) == 3 && !strings.Contains(q.MessageText(), "codextest summary") {
			return 5000
		}
		return 100
	})
	r := codextest.NewRunner(t, codexBin, m)
	r.BypassHookTrust = false
	r.Config = []string{"model_auto_compact_token_limit=1000"}
	r.Env = append(r.Env, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")

	inst := exec.Command(bin, "install", "codex", "--scope", "user", "--apply", "--command", bin)
	inst.Dir = dir
	inst.Env = append(os.Environ(), "CODEX_HOME="+r.CodexHome, "HOME="+r.Home)
	if out, err := inst.CombinedOutput(); err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	hj, err := os.ReadFile(r.HooksPath())
	if err != nil || !bytes.Contains(hj, []byte(hookProg+" hook codex pre-tool-use")) {
		t.Fatalf("hooks.json after install: %s %v", hj, err)
	}
	// Codex itself says the hooks are trusted.
	listed, _, err := r.ListHooks(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != len(HookSpecs()) {
		t.Errorf("codex app-server lists %d hooks, want %d", len(listed), len(HookSpecs()))
	}
	for _, h := range listed {
		if h.TrustStatus != "trusted" {
			t.Errorf("hook %s: trust %s", h.Key, h.TrustStatus)
		}
	}

	doc := exec.Command(bin, "doctor", "--json")
	doc.Dir = dir
	doc.Env = append(os.Environ(), "CODEX_HOME="+r.CodexHome, "HOME="+r.Home)
	dout, _ := doc.Output() // exit 1 when an unrelated check fails
	var checks []struct{ Check, Status, Detail string }
	if err := json.Unmarshal(dout, &checks); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, dout)
	}
	codexChecks := 0
	for _, c := range checks {
		if strings.HasPrefix(c.Check, "codex") {
			codexChecks++
			if c.Status != "OK" {
				t.Errorf("doctor: %s %s: %s", c.Check, c.Status, c.Detail)
			}
		}
	}
	if codexChecks != 3 {
		t.Errorf("doctor has %d codex checks, want hooks, trust and mcp: %s", codexChecks, dout)
	}

	res, err := r.Run(ctx, dir, sc+" please work")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, m.Log())
	}
	if res.LastMessage != "DONE e2e" {
		t.Errorf("last message %q\n%s", res.LastMessage, m.Log())
	}
	session := res.ThreadID
	fileIs(t, filepath.Join(dir, "hello.txt"), "hello again\n")
	fileIs(t, filepath.Join(dir, "other.txt"), "other content\n")

	outputs := map[string]string{}
	for _, o := range m.ToolOutputs(sc) {
		outputs[o.CallID] = o.Text
	}
	for _, n := range []int{2, 4} {
		if o := outputs[codextest.CallID(sc, n)]; !strings.Contains(o, "git-lossless guard") || !strings.Contains(o, "cat FILE") {
			t.Errorf("step %d: the model got %q, want our deny reason", n, o)
		}
	}
	// The request after the compaction carries the working set.
	var compacted bool
	var after []codextest.Request
	for _, q := range m.Requests() {
		switch {
		case q.Kind == "compact":
			compacted = true
		case compacted:
			after = append(after, q)
		}
	}
	if !compacted || len(after) == 0 {
		t.Fatalf("no compaction\n%s", m.Log())
	}
	t.Logf("denied patch output: %.400s", outputs[codextest.CallID(sc, 4)])
	if txt := after[0].MessageText(); !strings.Contains(txt, "git-lossless: this session") || !strings.Contains(txt, "hello.txt") {
		t.Errorf("the request after the compaction lacks the working set:\n%.3000s", txt)
	}

	st, err := gitstore.OpenDir(dir, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := st.Events(ctx, gitstore.Query{Session: session})
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	var have []string
	for _, e := range evs {
		if e.Harness != Name || e.Writer != Prefix+session {
			t.Errorf("event %s %s: harness %q writer %q", e.Op, e.Path, e.Harness, e.Writer)
		}
		if e.Op != "span" {
			have = append(have, string(e.Op)+" "+e.Path+" "+e.Key)
		}
		count[string(e.Op)]++
		switch {
		case e.Op == "read" && e.Path == ".env":
			if !e.Excluded || e.Blob != "" {
				t.Errorf(".env read archived content: %+v", e)
			}
		case e.Op == "read" && e.Key == codextest.CallID(sc, 0):
			if e.Path != "hello.txt" || e.Blob != gitstore.BlobID([]byte("hello world\n")) || string(e.Extra["via"]) != `"shell"` {
				t.Errorf("first read %+v", e)
			}
		case e.Op == "edit" && e.Key == codextest.CallID(sc, 1):
			if e.Path != "hello.txt" || e.Blob != gitstore.BlobID([]byte("hello codex\n")) {
				t.Errorf("edit %+v", e)
			}
		case e.Op == "edit" && e.Key == codextest.CallID(sc, 6):
			if e.Blob != gitstore.BlobID([]byte("hello again\n")) {
				t.Errorf("edit after the compaction %+v", e)
			}
		}
	}
	for _, w := range []string{"read hello.txt " + codextest.CallID(sc, 0), "edit hello.txt " + codextest.CallID(sc, 1), "read .env " + codextest.CallID(sc, 3),
		"read hello.txt " + codextest.CallID(sc, 5), "edit hello.txt " + codextest.CallID(sc, 6)} {
		if !strings.Contains(strings.Join(have, "\n"), w) {
			t.Errorf("no event %q among\n%s", w, strings.Join(have, "\n"))
		}
	}
	t.Logf("events (no spans):\n%s\ncounts %v", strings.Join(have, "\n"), count)
	if count["deny"] != 2 || count["compact"] < 1 || count["span"] == 0 || count["precompact"] != 1 {
		t.Errorf("event counts %v", count)
	}

	ref := "refs/lossless/" + Prefix + session
	if got := git(t, dir, "cat-file", "-p", ref+":events.jsonl"); !strings.Contains(got, `"harness":"codex"`) {
		t.Errorf("git cat-file -p %s:events.jsonl does not name the harness", ref)
	}
	git(t, dir, "fsck", "--strict")
	verify := exec.Command(bin, "verify", "--all")
	verify.Dir = dir
	verify.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME="+r.Home)
	if out, err := verify.CombinedOutput(); err != nil {
		t.Errorf("git lossless verify --all: %v\n%s", err, out)
	}
	git(t, dir, "gc", "-q", "--prune=now")
	all := exec.Command("git", "-C", dir, "cat-file", "--batch-all-objects", "--batch")
	out, err := all.Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{plantedKey, "PLANTEDcodexKEY", plainValue} {
		if bytes.Contains(out, []byte(s)) {
			t.Errorf("%s from .env is in an object of the repository", s)
		}
	}
}

// TestCodexMCPReadCountsAsSeen: install registers `git lossless mcp
// --harness codex` in config.toml; the real Codex starts it and offers
// its tools in the namespace mcp__git_lossless; a read_file call through
// it is recorded as a read of the Codex session (writer codex-<session>,
// source mcp), which lets a patch of the file through that would be
// denied without it.
func TestCodexMCPReadCountsAsSeen(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real Codex CLI")
	}
	const sc = "SCENARIO:codex-mcp"
	codexBin := codextest.EnsureCodex(t)
	bin, _ := buildPrograms(t)
	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	git(t, dir, "init", "-q")
	if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello world\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m := codextest.NewModel(t, codextest.Script{sc: {
		{Tool: "read_file", Namespace: MCPNamespace, Args: map[string]any{"path": "hello.txt"}},
		codextest.Patch(codextest.UpdateFile("hello.txt", "hello world", "hello mcp")),
		codextest.Say("DONE mcp"),
	}})
	r := codextest.NewRunner(t, codexBin, m)
	r.BypassHookTrust = false
	r.Env = append(r.Env, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	inst := exec.Command(bin, "install", "codex", "--apply", "--command", bin)
	inst.Dir = dir
	inst.Env = append(os.Environ(), "CODEX_HOME="+r.CodexHome, "HOME="+r.Home)
	if out, err := inst.CombinedOutput(); err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	res, err := r.Run(context.Background(), dir, sc+" read through mcp")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, m.Log())
	}
	var out string
	for _, o := range m.ToolOutputs(sc) {
		if o.CallID == codextest.CallID(sc, 0) {
			out = o.Text
		}
	}
	if !strings.Contains(out, "recorded as seen by session "+res.ThreadID) {
		t.Fatalf("read_file through Codex answered %q", out)
	}
	fileIs(t, filepath.Join(dir, "hello.txt"), "hello mcp\n")
	st, err := gitstore.OpenDir(dir, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := st.Events(context.Background(), gitstore.Query{Session: res.ThreadID, Op: "read"})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].Source != "mcp" || evs[0].Harness != Name || evs[0].Writer != Prefix+res.ThreadID {
		t.Fatalf("reads %+v", evs)
	}
}

// TestCodexSubagentIsItsOwnContext: a subagent spawned by the real Codex
// reads hello.txt and patches it (allowed: its own read); the parent,
// which never read it, is denied the same patch (a read by another agent
// does not count). The subagent's events carry its agent id and go to
// the session's writer; SubagentStop sweeps its own rollout.
func TestCodexSubagentIsItsOwnContext(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real Codex CLI")
	}
	const sc, sub = "SCENARIO:codex-parent", "SUBTASK:codex-child"
	codexBin := codextest.EnsureCodex(t)
	bin, _ := buildPrograms(t)
	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	git(t, dir, "init", "-q")
	if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello world\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m := codextest.NewModel(t, codextest.Script{
		sc: {codextest.Spawn(sub + " change hello.txt"), codextest.WaitAgent(),
			codextest.Patch(codextest.UpdateFile("hello.txt", "hello child", "hello parent")), codextest.Say("DONE parent")},
		sub: {codextest.Shell("cat hello.txt"), codextest.Patch(codextest.UpdateFile("hello.txt", "hello world", "hello child")), codextest.Say("child done")},
	})
	r := codextest.NewRunner(t, codexBin, m)
	r.BypassHookTrust = false
	r.Env = append(r.Env, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	inst := exec.Command(bin, "install", "codex", "--apply", "--command", bin)
	inst.Dir = dir
	inst.Env = append(os.Environ(), "CODEX_HOME="+r.CodexHome, "HOME="+r.Home)
	if out, err := inst.CombinedOutput(); err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	res, err := r.Run(context.Background(), dir, sc+" delegate")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, m.Log())
	}
	fileIs(t, filepath.Join(dir, "hello.txt"), "hello child\n")
	var denied string
	for _, o := range m.ToolOutputs(sc) {
		if o.CallID == codextest.CallID(sc, 2) {
			denied = o.Text
		}
	}
	if !strings.Contains(denied, "git-lossless guard") {
		t.Errorf("the parent's patch got %q, want our deny", denied)
	}
	st, err := gitstore.OpenDir(dir, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := st.Events(context.Background(), gitstore.Query{Session: res.ThreadID})
	if err != nil {
		t.Fatal(err)
	}
	var agent string
	ops := map[string]bool{}
	for _, e := range evs {
		if e.Writer != Prefix+res.ThreadID || e.Harness != Name {
			t.Errorf("event %s: writer %s harness %s", e.Op, e.Writer, e.Harness)
		}
		switch {
		case e.Op == "read" || e.Op == "edit":
			if e.Agent == "" || !e.Sidechain {
				t.Errorf("the child's %s is not its own context: %+v", e.Op, e)
			}
			agent = e.Agent
			ops[string(e.Op)] = true
		case e.Op == "deny":
			if e.Agent != "" {
				t.Errorf("the parent's deny carries agent %q", e.Agent)
			}
			ops["deny"] = true
		}
	}
	if !ops["read"] || !ops["edit"] || !ops["deny"] {
		t.Fatalf("ops %v", ops)
	}
	spans := 0
	for _, e := range evs {
		if e.Op == "span" && e.Agent == agent {
			spans++
		}
	}
	if spans == 0 {
		t.Error("no span of the subagent's rollout archived")
	}
}

// TestCodexProjectScope: `install codex --scope project --apply` writes
// <repo>/.codex/hooks.json, trusts the project and its hooks in the user
// config.toml; Codex (no bypass flag) lists them trusted and runs them:
// the read is recorded and the patch of an unread file denied. Uninstall
// takes all of it back out.
func TestCodexProjectScope(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real Codex CLI")
	}
	const sc = "SCENARIO:codex-project"
	codexBin := codextest.EnsureCodex(t)
	bin, _ := buildPrograms(t)
	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	git(t, dir, "init", "-q")
	for name, body := range map[string]string{"hello.txt": "hello world\n", "other.txt": "other content\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	m := codextest.NewModel(t, codextest.Script{sc: {
		codextest.Shell("cat hello.txt"),
		codextest.Patch(codextest.UpdateFile("other.txt", "other content", "other EDITED")),
		codextest.Say("DONE project"),
	}})
	r := codextest.NewRunner(t, codexBin, m)
	r.BypassHookTrust = false
	r.Env = append(r.Env, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	cfgBefore, err := os.ReadFile(r.ConfigPath())
	if err != nil {
		t.Fatal(err)
	}
	lossless := func(args ...string) {
		t.Helper()
		c := exec.Command(bin, args...)
		c.Dir = dir
		c.Env = append(os.Environ(), "CODEX_HOME="+r.CodexHome, "HOME="+r.Home)
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("git lossless %v: %v\n%s", args, err, out)
		}
	}
	lossless("install", "codex", "--scope", "project", "--no-mcp", "--apply", "--command", bin)
	listed, _, err := r.ListHooks(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	trusted := 0
	for _, h := range listed {
		if strings.HasPrefix(h.Key, filepath.Join(dir, ".codex", "hooks.json")+":") && h.TrustStatus == "trusted" {
			trusted++
		}
	}
	if trusted != len(HookSpecs()) {
		t.Errorf("codex app-server lists %d trusted project hooks, want %d: %+v", trusted, len(HookSpecs()), listed)
	}
	res, err := r.Run(context.Background(), dir, sc+" go")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, m.Log())
	}
	fileIs(t, filepath.Join(dir, "other.txt"), "other content\n")
	st, err := gitstore.OpenDir(dir, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := st.Events(context.Background(), gitstore.Query{Session: res.ThreadID})
	if err != nil {
		t.Fatal(err)
	}
	ops := map[string]int{}
	for _, e := range evs {
		ops[string(e.Op)]++
	}
	if ops["read"] != 1 || ops["deny"] != 1 {
		t.Errorf("ops %v, want one read and one deny", ops)
	}
	lossless("uninstall", "codex", "--scope", "project", "--no-mcp", "--apply")
	if cfg, _ := os.ReadFile(r.ConfigPath()); string(cfg) != string(cfgBefore) {
		t.Errorf("config.toml after uninstall:\n%s\nwant\n%s", cfg, cfgBefore)
	}
}
