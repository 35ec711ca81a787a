package receipt_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/internal/testkit"
	"github.com/git-lossless/git-lossless/internal/testkit/claudetest"
)

// buildBinary builds git-lossless for the end-to-end test.
func buildBinary(t *testing.T) string {
	t.Helper()
	bins, err := testkit.BuildPrograms(t.TempDir(), "git-lossless", "git-lossless-mcp")
	if err != nil {
		t.Fatal(err)
	}
	return bins[0]
}

// TestReceiptAfterClaudeCode: a real Claude Code session (scripted model,
// our hooks installed with `install claude-code --apply`) reads files,
// edits two, reads .env; a human then changes one of the edited files
// and adds another; everything is committed. The receipt built by the
// real binary says what happened, verifies with our verify and with plain
// gpg and git, survives `git gc --prune=now`, and verifies in a fresh
// clone after a push and fetch of the notes and archive refs. Tampering,
// an unknown key and a missing event fail with a reason and exit 1.
func TestReceiptAfterClaudeCode(t *testing.T) {
	if testing.Short() {
		t.Skip("drives the real Claude Code CLI")
	}
	gpgenv := gpgEnv(t)
	claude := claudetest.EnsureClaude(t)
	bin := buildBinary(t)
	ctx := context.Background()

	r := newRepo(t)
	dir := r.dir
	const secret = "sk-RECEIPT-E2E-PLANTED-0xBEEF"
	r.write("hello.txt", "hello world\n")
	r.write("main.go", "package main\n\nfunc main() {}\n")
	r.write("util.go", "package main\n\nfunc util() int { return 1 }\n")
	r.write("README.md", "# project\n")
	r.git("add", "-A")
	r.git("commit", "-q", "-m", "initial")
	r.write(".env", "API_KEY="+secret+"\n")
	abs := func(p string) string { return filepath.Join(dir, p) }

	const sc = "SCENARIO:receipt"
	m := claudetest.NewModel(t, claudetest.Script{
		sc: {
			claudetest.Call("Read", map[string]any{"file_path": abs("hello.txt")}),
			claudetest.Call("Read", map[string]any{"file_path": abs("util.go")}),
			claudetest.Call("Read", map[string]any{"file_path": abs("main.go")}),
			claudetest.Call("Edit", map[string]any{"file_path": abs("main.go"), "old_string": "func main() {}", "new_string": "func main() { println(util()) }"}),
			claudetest.Call("Edit", map[string]any{"file_path": abs("hello.txt"), "old_string": "world", "new_string": "agent"}),
			claudetest.Call("Read", map[string]any{"file_path": abs(".env")}),
			claudetest.Say("DONE receipt"),
		},
	})
	run := claudetest.NewRunner(t, claude, m)
	home := run.Home
	cfgHome := filepath.Join(home, "config") // the signing key lives here
	baseEnv := append(gitEnv("XDG_DATA_HOME="+filepath.Join(home, "data"), "XDG_CONFIG_HOME="+cfgHome, "HOME="+home), gpgenvOnly(gpgenv)...)
	run.Env = append(run.Env, "XDG_DATA_HOME="+filepath.Join(home, "data"), "XDG_CONFIG_HOME="+cfgHome, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)

	inst := exec.Command(bin, "install", "claude-code", "--scope", "user", "--apply", "--command", bin)
	inst.Env = append(os.Environ(), "CLAUDE_CONFIG_DIR="+run.ConfigDir, "HOME="+home)
	if out, err := inst.CombinedOutput(); err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	if _, err := run.Run(ctx, dir, sc+" please work"); err != nil {
		t.Fatalf("claude: %v\n%s", err, m.Log())
	}
	for _, tr := range m.ToolResults(sc) {
		if tr.IsError {
			t.Fatalf("tool call %s failed: %s\n%s", tr.ToolUseID, tr.Text, m.Log())
		}
	}
	// The agent's versions, as git hashes them.
	hash := func(p string) string { return r.git("hash-object", p) }
	helloRead := r.git("rev-parse", "HEAD:hello.txt")
	helloAgent, mainAgent, utilBlob := hash("hello.txt"), hash("main.go"), hash("util.go")
	mainRead := r.git("rev-parse", "HEAD:main.go")

	// A human changes a file the agent edited, and adds one; all committed.
	r.write("hello.txt", "hello agent, and a human\n")
	r.write("human.txt", "written by hand\n")
	r.git("add", "-A")
	r.git("commit", "-q", "-m", "work")
	commit := r.git("rev-parse", "HEAD")

	gl := func(wantOK bool, env []string, d string, args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"-C", d}, args...)...)
		cmd.Env = env
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		if (err == nil) != wantOK {
			t.Fatalf("git lossless %s: err %v (want ok %v)\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, wantOK, out.String(), errb.String())
		}
		if !wantOK {
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
				t.Fatalf("git lossless %s: exit %v, want 1\n%s%s", strings.Join(args, " "), err, out.String(), errb.String())
			}
		}
		return out.String() + errb.String()
	}
	gl(true, baseEnv, dir, "key", "generate", "--name", "E2E Receipts")
	pub := gl(true, baseEnv, dir, "key", "export")
	if out, err := gpgRun(t, gpgenv, "", []byte(pub), "gpg", "--batch", "--import"); err != nil {
		t.Fatalf("gpg --import: %v\n%s", err, out)
	}

	out := gl(true, baseEnv, dir, "receipt")
	t.Logf("git lossless receipt:\n%s", out)
	for _, want := range []string{"written", "changed-after", "unseen", "excluded", "Read set"} {
		if !strings.Contains(out, want) {
			t.Fatalf("receipt output lacks %q:\n%s", want, out)
		}
	}
	if again := gl(true, baseEnv, dir, "receipt", "HEAD"); !strings.Contains(again, "stored on refs/notes/lossless/receipts-") {
		t.Fatalf("a second run does not show the stored receipt:\n%s", again)
	}

	// What the receipt says, as JSON.
	var got struct {
		Commit string `json:"commit"`
		Ref    string `json:"ref"`
		Paths  []struct {
			Path, Status, Blob string
		} `json:"paths"`
		Reads []struct {
			Context, State, Blob, Path, View string
			Ops                              []string
		} `json:"reads"`
		Contexts []struct {
			Session string `json:"session"`
			Agent   string `json:"agent"`
			Spans   []any  `json:"spans"`
			Tokens  struct{ Files, Spans int64 }
		} `json:"contexts"`
	}
	js := gl(true, baseEnv, dir, "receipt", "show", "HEAD", "--json")
	if err := json.Unmarshal([]byte(js), &got); err != nil {
		t.Fatalf("receipt show --json: %v\n%s", err, js)
	}
	if got.Commit != commit {
		t.Fatalf("receipt of %s, want %s", got.Commit, commit)
	}
	status := map[string]string{}
	for _, p := range got.Paths {
		status[p.Path] = p.Status
		if p.Path == ".env" && p.Blob != "" {
			t.Fatalf(".env names a blob: %+v", p)
		}
	}
	wantStatus := map[string]string{"main.go": "written", "hello.txt": "changed-after", "human.txt": "unseen", ".env": "excluded"}
	for p, s := range wantStatus {
		if status[p] != s {
			t.Errorf("%s: %q, want %q (all %v)", p, status[p], s, status)
		}
	}
	if len(status) != len(wantStatus) {
		t.Errorf("paths %v", status)
	}
	reads := map[string]string{}
	for _, rd := range got.Reads {
		reads[rd.Path+" "+strings.Join(rd.Ops, ",")+" "+rd.Blob] = rd.State
	}
	for k, st := range map[string]string{
		"hello.txt read " + helloRead:  "superseded",
		"hello.txt edit " + helloAgent: "stale",
		"main.go read " + mainRead:     "superseded",
		"main.go edit " + mainAgent:    "current",
		"util.go read " + utilBlob:     "current",
		".env read ":                   "excluded",
	} {
		if reads[k] != st {
			t.Errorf("read %q: %q, want %q (all %v)", k, reads[k], st, reads)
		}
	}
	if len(got.Contexts) != 1 || got.Contexts[0].Agent != "main" || len(got.Contexts[0].Spans) == 0 || got.Contexts[0].Tokens.Files == 0 || got.Contexts[0].Tokens.Spans == 0 {
		t.Errorf("contexts %+v", got.Contexts)
	}
	note := r.git("notes", "--ref="+strings.TrimPrefix(got.Ref, "refs/notes/"), "show", "HEAD")
	t.Logf("the note:\n%s", note)
	if strings.Contains(note, secret) || strings.Contains(note, r.git("rev-parse", "HEAD:.env")) {
		t.Fatal("the receipt leaks .env")
	}

	// Our verify, plain gpg, plain git.
	if out := gl(true, baseEnv, dir, "receipt", "verify"); !strings.Contains(out, "1 receipt, 1 ok") {
		t.Fatalf("verify:\n%s", out)
	}
	checkPlain := func(d string) {
		t.Helper()
		shown, err := gpgRun(t, gpgenv, d, nil, "git", "notes", "--ref="+strings.TrimPrefix(got.Ref, "refs/notes/"), "show", "HEAD")
		if err != nil {
			t.Fatalf("git notes show: %v\n%s", err, shown)
		}
		if out, err := gpgRun(t, gpgenv, d, []byte(shown), "gpg", "--verify"); err != nil || !strings.Contains(out, "Good signature") {
			t.Fatalf("gpg --verify: %v\n%s", err, out)
		}
		if out, err := gpgRun(t, gpgenv, d, nil, "git", "verify-commit", got.Ref); err != nil || !strings.Contains(out, "Good signature") {
			t.Fatalf("git verify-commit: %v\n%s", err, out)
		}
		if log, _ := gpgRun(t, gpgenv, d, nil, "git", "log", "--notes=lossless/*", "-1"); !strings.Contains(log, "git-lossless receipt v1") {
			t.Fatalf("git log --notes:\n%s", log)
		}
	}
	checkPlain(dir)

	// git gc --prune=now: everything the receipt names stays reachable.
	r.git("gc", "-q", "--prune=now")
	r.git("fsck", "--strict")
	gl(true, baseEnv, dir, "receipt", "verify", "HEAD")

	// Push and fetch to a fresh clone; verify there (same key, same trust).
	bare := filepath.Join(t.TempDir(), "remote.git")
	r.git("init", "-q", "--bare", "-b", "main", bare)
	r.git("push", "-q", bare, "main", "refs/lossless/*:refs/lossless/*", "+refs/notes/lossless/*:refs/notes/lossless/*")
	fresh := filepath.Join(t.TempDir(), "fresh")
	r.git("clone", "-q", bare, fresh)
	rf := &testRepo{t: t, dir: fresh}
	rf.git("fetch", "-q", "origin", "refs/lossless/*:refs/lossless/*", "+refs/notes/lossless/*:refs/notes/lossless/*")
	if out := gl(true, baseEnv, fresh, "receipt", "verify", "--all"); !strings.Contains(out, "1 ok") {
		t.Fatalf("verify in the clone:\n%s", out)
	}
	checkPlain(fresh)

	// Failures, in the clone: an unknown key, a missing event, a tampered note.
	noKey := append(gitEnv("XDG_CONFIG_HOME="+filepath.Join(home, "other-config"), "HOME="+home), gpgenvOnly(gpgenv)...)
	if out := gl(false, noKey, fresh, "receipt", "verify", "HEAD"); !strings.Contains(out, "unknown-key") {
		t.Fatalf("verify without the key:\n%s", out)
	}
	writers := strings.Fields(rf.git("for-each-ref", "--format=%(refname)", "refs/lossless/"))
	rf.git("update-ref", "-d", writers[0])
	if out := gl(false, baseEnv, fresh, "receipt", "verify", "HEAD"); !strings.Contains(out, "chain") || !strings.Contains(out, "fetch refs/lossless") {
		t.Fatalf("verify without the events:\n%s", out)
	}
	rf.git("fetch", "-q", "origin", "refs/lossless/*:refs/lossless/*")
	gl(true, baseEnv, fresh, "receipt", "verify", "HEAD")
	i := strings.Index(note, "path A unseen")
	bad := []byte(note + "\n")
	bad[i+len("path A unseen ")+3] ^= 0x01
	tmp := filepath.Join(t.TempDir(), "bad.txt")
	os.WriteFile(tmp, bad, 0o644)
	rf.git("notes", "--ref="+strings.TrimPrefix(got.Ref, "refs/notes/"), "add", "-f", "-F", tmp, "HEAD")
	if out := gl(false, baseEnv, fresh, "receipt", "verify", "HEAD"); !strings.Contains(out, "bad-signature") {
		t.Fatalf("verify of a tampered note:\n%s", out)
	}
	shown, _ := gpgRun(t, gpgenv, fresh, nil, "git", "notes", "--ref="+strings.TrimPrefix(got.Ref, "refs/notes/"), "show", "HEAD")
	if out, err := gpgRun(t, gpgenv, fresh, []byte(shown), "gpg", "--verify"); err == nil || !strings.Contains(out, "BAD signature") {
		t.Fatalf("gpg accepted the tampered note: %v\n%s", err, out)
	}
}

// gpgenvOnly picks GNUPGHOME out of an environment.
func gpgenvOnly(env []string) []string {
	for _, kv := range env {
		if strings.HasPrefix(kv, "GNUPGHOME=") {
			return []string{kv}
		}
	}
	return nil
}
