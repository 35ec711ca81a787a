package hooks_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks/claudetest"
)

// buildBinary builds git-lossless once per test binary.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "git-lossless")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/git-lossless/git-lossless/cmd/git-lossless")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
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
	bin := buildBinary(t)
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
	if err != nil || !bytes.Contains(settings, []byte(bin+" hook pre-tool-use")) {
		t.Fatalf("settings after install: %s %v", settings, err)
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
	subReads := events(gitstore.Query{Path: "shared.txt", Op: "read"})
	if len(subReads) != 1 || subReads[0].Agent == "" || !subReads[0].Sidechain {
		t.Fatalf("subagent read archived as %+v", subReads)
	}
	subAgent := subReads[0].Agent

	// 4. The secret: recorded as excluded, in no object.
	envEv := events(gitstore.Query{Path: ".env"})
	if len(envEv) == 0 || !envEv[0].Excluded || envEv[0].Blob != "" {
		t.Fatalf(".env events %+v", envEv)
	}
	if secretIn(t, dir, secret) {
		t.Fatal("the planted secret is in an object")
	}

	// 5. /compact: the pre-compact sweep archives main and subagent
	// transcripts; session-start(compact) prints the working set, which the
	// model receives in the next run.
	if _, err := r.Run(ctx, dir, "/compact", "--resume", session); err != nil {
		t.Fatalf("compact: %v\n%s", err, m.Log())
	}
	if n := len(events(gitstore.Query{Op: "compact"})); n == 0 {
		t.Fatal("no compaction boundary archived")
	}
	mainSpans := events(gitstore.Query{Op: "span", Agent: gitstore.MainAgent})
	subSpans := events(gitstore.Query{Op: "span", Agent: subAgent})
	if len(mainSpans) == 0 || len(subSpans) == 0 {
		t.Fatalf("spans archived: main %d, subagent %d", len(mainSpans), len(subSpans))
	}
	before := len(events(gitstore.Query{}))
	tp, err := r.TranscriptPath(session)
	if err != nil {
		t.Fatal(err)
	}
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
	var sawManifest bool
	for _, req := range m.ScenarioRequests(after) {
		if strings.Contains(req.MessageText(), "git-lossless: this session") && strings.Contains(req.MessageText(), "hello.txt") {
			sawManifest = true
		}
	}
	if !sawManifest {
		t.Fatalf("the model never received the working set after compaction\n%s", m.Log())
	}
	if n := len(events(gitstore.Query{Op: "attach"})); n == 0 {
		t.Fatal("no re-attached file archived")
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

	// Plain git agrees with everything written.
	gitOut(t, dir, "fsck", "--strict")
	vf := exec.Command(bin, "verify")
	vf.Dir = dir
	if out, err := vf.CombinedOutput(); err != nil {
		t.Fatalf("verify: %v\n%s", err, out)
	}
}
