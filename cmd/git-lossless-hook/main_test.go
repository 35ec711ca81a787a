package main

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
	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/internal/version"
)

func runArgs(t *testing.T, stdin []byte, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, hooks.Env{Stdin: bytes.NewReader(stdin), Stdout: &out, Stderr: &errb,
		Getenv: func(string) string { return "" }})
	return code, out.String(), errb.String()
}

// TestCommandLine: --version prints git-lossless's own line (the doctor
// and install compare it), help is help, and every malformed command line
// is one line on stderr and exit 0, so a misconfigured hook never blocks
// Claude Code.
func TestCommandLine(t *testing.T) {
	if code, out, _ := runArgs(t, nil, "--version"); code != 0 || out != "git-lossless version "+version.Version+"\n" {
		t.Fatalf("--version: %d %q", code, out)
	}
	if code, out, _ := runArgs(t, nil, "--help"); code != 0 || !strings.Contains(out, "usage: git-lossless-hook hook EVENT") {
		t.Fatalf("--help: %d %q", code, out)
	}
	for _, args := range [][]string{
		{}, {"frobnicate"}, {"hook"}, {"hook", "post-tool-use", "extra"}, {"hook", "--bogus"}, {"hook", "no-such-event"},
		{"-C", "/nonexistent", "hook", "pre-tool-use"},
	} {
		code, out, errb := runArgs(t, []byte("{}"), args...)
		if code != 0 || out != "" || strings.Count(errb, "\n") != 1 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 0, nothing on stdout, one line on stderr", args, code, out, errb)
		}
	}
}

// TestRecordsARead: a PostToolUse Read payload, as Claude Code sends it,
// given to this program lands in the repository's archive (read back
// through gitstore and checked by `git fsck --strict`), exactly as
// `git-lossless hook post-tool-use` records it.
func TestRecordsARead(t *testing.T) {
	repo := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	file := filepath.Join(repo, "main.go")
	content := "package main\n\nfunc main() {}\n"
	if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	payload, _ := json.Marshal(map[string]any{
		"session_id": "0b6c4d3e-1111-4222-8333-444455556666", "transcript_path": filepath.Join(repo, "absent.jsonl"),
		"cwd": repo, "hook_event_name": "PostToolUse", "tool_name": "Read", "tool_use_id": "toolu_01",
		"tool_input": map[string]any{"file_path": file},
		"tool_response": map[string]any{"type": "text", "file": map[string]any{"filePath": file, "content": content,
			"numLines": 4, "startLine": 1, "totalLines": 4}},
	})
	// Global flags before the command are skipped, as git-lossless skips
	// them: the repository comes from the payload's cwd.
	code, out, errb := runArgs(t, payload, "-C", "/nonexistent", "hook", "post-tool-use")
	if code != 0 || out != "" || errb != "" {
		t.Fatalf("post-tool-use: exit %d, stdout %q, stderr %q", code, out, errb)
	}
	st, err := gitstore.OpenDir(repo, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := st.Events(context.Background(), gitstore.Query{Op: "read", Path: "main.go"})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].Blob != gitstore.BlobID([]byte(content)) {
		t.Fatalf("archived reads of main.go: %+v, want one of blob %s", evs, gitstore.BlobID([]byte(content)))
	}
	git("fsck", "--strict", "--no-progress")
}
