package claudecode_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/internal/testkit/claudetest"
)

// TestClaudeCodeBashCatEndToEnd drives the real Claude Code CLI: a Bash
// `cat` of a file is recorded as a read via the shell (Claude Code trims
// the blank edge lines of stdout; the file's bytes are archived), and the
// guard allows the Edit of that file (Claude Code's own Edit still wants a
// Read first), while a `cat a b` of two files vouches for
// neither and the Edit of one of them is denied; a `cat .env` is an access
// without content.
func TestClaudeCodeBashCatEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("drives the real Claude Code CLI")
	}
	claude := claudetest.EnsureClaude(t)
	bin := buildBinary(t)
	ctx := context.Background()
	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	gitOut(t, dir, "init", "-q")
	hello, a, b, env := filepath.Join(dir, "hello.txt"), filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt"), filepath.Join(dir, ".env")
	const secret = "sk-BASH-PLANTED-SECRET-0xBEEF"
	writeFile(t, hello, "hello world\n\n")
	writeFile(t, a, "a\n")
	writeFile(t, b, "b\n")
	// A value no secret scanner recognises: only the deny list keeps it out.
	const plain = "zebra-lantern-4471-quietly"
	writeFile(t, env, "API_KEY="+secret+"\nMOTTO="+plain+"\n")
	const sc = "SCENARIO:bash"
	m := claudetest.NewModel(t, claudetest.Script{sc: {
		claudetest.Call("Bash", map[string]any{"command": "cat hello.txt", "description": "show hello"}),
		claudetest.Call("Edit", map[string]any{"file_path": hello, "old_string": "world", "new_string": "bash"}),
		claudetest.Call("Bash", map[string]any{"command": "cat a.txt b.txt", "description": "show both"}),
		claudetest.Call("Edit", map[string]any{"file_path": a, "old_string": "a", "new_string": "A"}),
		claudetest.Call("Bash", map[string]any{"command": "cat .env", "description": "show env"}),
		claudetest.Say("DONE bash"),
	}})
	r := claudetest.NewRunner(t, claude, m)
	r.Env = append(r.Env, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	inst := exec.Command(bin, "install", "claude-code", "--scope", "user", "--apply", "--command", bin)
	inst.Env = append(os.Environ(), "CLAUDE_CONFIG_DIR="+r.ConfigDir, "HOME="+r.Home)
	if out, err := inst.CombinedOutput(); err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	res, err := r.Run(ctx, dir, sc+" please work")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, m.Log())
	}
	// Claude Code's own Edit wants a Read first, whatever the hooks say:
	// what is checked is the guard's answer (PreToolUse runs first).
	results := map[string]string{}
	for _, tr := range m.ToolResults(sc) {
		results[tr.ToolUseID] = tr.Text
	}
	if txt := results[claudetest.ToolUseID(sc, 1)]; strings.Contains(txt, "git-lossless guard") {
		t.Errorf("the guard denied the Edit after a Bash cat: %s", txt)
	}
	if txt := results[claudetest.ToolUseID(sc, 3)]; !strings.Contains(txt, "git-lossless guard") {
		t.Errorf("the Edit after `cat a.txt b.txt` got %q, want the guard's deny", txt)
	}
	fileIs(t, a, "a\n")
	st, err := gitstore.OpenDir(dir, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := st.Events(ctx, gitstore.Query{Session: res.SessionID, Op: "read"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		got = append(got, e.Path)
		switch e.Path {
		case "hello.txt":
			if e.Blob != gitstore.BlobID([]byte("hello world\n\n")) || string(e.Extra["via"]) != `"shell"` || string(e.Extra["trimmed"]) != "true" || e.Key != claudetest.ToolUseID(sc, 0) {
				t.Errorf("Bash cat read %+v", e)
			}
		case ".env":
			if !e.Excluded || e.Blob != "" {
				t.Errorf(".env %+v", e)
			}
		}
	}
	if strings.Join(got, " ") != "hello.txt .env" {
		t.Errorf("reads %v, want hello.txt .env", got)
	}
	for _, s := range []string{secret, plain} {
		if secretIn(t, dir, s) {
			t.Errorf("%s from .env is in an object", s)
		}
	}
}
