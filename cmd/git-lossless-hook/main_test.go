package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/hooks"
	"github.com/git-lossless/git-lossless/internal/testkit"
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
	if code, out, _ := runArgs(t, nil, "--help"); code != 0 || !strings.Contains(out, "usage: git-lossless-hook hook [HARNESS] EVENT") {
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

// sshArchive is a repository whose archive encrypts to an ed25519 key
// made by the real ssh-keygen, with the real 2.1.328 sample transcript
// copied in, its paths rewritten to the repository; it returns the
// repository, the transcript and the private key file.
func sshArchive(t *testing.T) (repo, transcript, key string) {
	t.Helper()
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("ssh-keygen is needed (install openssh-client)")
		}
		t.Skip("no ssh-keygen")
	}
	repo = t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	key = filepath.Join(t.TempDir(), "id_ed25519")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "t", "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	pub, err := os.ReadFile(key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	git("init", "-q")
	git("config", "lossless.encrypt", "true")
	git("config", "lossless.recipient", strings.TrimSpace(string(pub)))
	transcript = testkit.CopySample(t, t.TempDir(), repo, "")
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	return repo, transcript, key
}

func preCompactPayload(repo, transcript string) []byte {
	p, _ := json.Marshal(map[string]any{
		"session_id": testkit.SampleSession, "transcript_path": transcript,
		"cwd": repo, "hook_event_name": "PreCompact", "trigger": "manual",
	})
	return p
}

// TestHandsSSHArchivesToGitLossless: this program does not link SSH keys,
// so for an archive that encrypts to one it hands the hook — the same
// input — to git-lossless (here built from this tree into a temporary
// directory), which sweeps the real transcript and stores its spans
// encrypted to the key: they open with ssh-keygen's private key, and
// git fsck accepts the archive.
func TestHandsSSHArchivesToGitLossless(t *testing.T) {
	repo, transcript, key := sshArchive(t)
	full := filepath.Join(t.TempDir(), "git-lossless")
	if out, err := exec.Command("go", "build", "-o", full, "../git-lossless").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var out, errb bytes.Buffer
	code := runHook(context.Background(), []string{"pre-compact"}, hooks.Env{
		Stdin: bytes.NewReader(preCompactPayload(repo, transcript)), Stdout: &out, Stderr: &errb,
		Getenv: func(string) string { return "" },
	}, func() (string, error) { return full, nil })
	if code != 0 || errb.Len() != 0 {
		t.Fatalf("pre-compact: exit %d, stderr %q", code, errb.String())
	}
	st, err := gitstore.OpenDir(repo, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	spans, err := st.Events(context.Background(), gitstore.Query{Op: "span"})
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) < 10 {
		t.Fatalf("%d spans archived, want the sample's (at least 10)", len(spans))
	}
	priv, err := os.ReadFile(key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gitstore.ParseIdentities(priv); !errors.Is(err, gitstore.ErrNoSSH) {
		t.Fatalf("this test binary parsed an SSH key (%v): it must not link SSH keys, or the hand-over is not what is tested", err)
	}
	for _, ev := range spans {
		if !gitstore.IsEncrypted(&ev) {
			t.Fatalf("span %s stored in the clear", ev.Key)
		}
	}
	// Locked without the key; git-lossless opens it with the SSH key.
	ref := fmt.Sprintf("%s#%d", spans[0].Writer, spans[0].Seq)
	if b, err := exec.Command(full, "-C", repo, "span", ref).CombinedOutput(); err == nil || !bytes.Contains(b, []byte("locked")) {
		t.Fatalf("git lossless span without a key: %v\n%s; want it locked", err, b)
	}
	if b, err := exec.Command(full, "-C", repo, "span", "--identity", key, ref).CombinedOutput(); err != nil || len(bytes.TrimSpace(b)) == 0 {
		t.Fatalf("git lossless span --identity: %v\n%s", err, b)
	}
	if b, err := exec.Command("git", "-C", repo, "fsck", "--strict").CombinedOutput(); err != nil {
		t.Fatalf("git fsck: %v\n%s", err, b)
	}
}

// TestHandOverWithoutGitLossless: with no git-lossless to hand to, an
// event for an SSH-encrypting archive is one line on stderr and exit 0,
// and nothing is written to the archive (not even in the clear).
func TestHandOverWithoutGitLossless(t *testing.T) {
	repo, transcript, _ := sshArchive(t)
	var out, errb bytes.Buffer
	code := runHook(context.Background(), []string{"pre-compact"}, hooks.Env{
		Stdin: bytes.NewReader(preCompactPayload(repo, transcript)), Stdout: &out, Stderr: &errb,
		Getenv: func(string) string { return "" },
	}, func() (string, error) { return filepath.Join(t.TempDir(), "absent", "git-lossless"), nil })
	if code != 0 || out.Len() != 0 || strings.Count(errb.String(), "\n") != 1 || !strings.Contains(errb.String(), "SSH key") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
	if b, err := exec.Command("git", "-C", repo, "for-each-ref", "refs/lossless/").CombinedOutput(); err != nil || len(bytes.TrimSpace(b)) != 0 {
		t.Fatalf("refs written: %q %v", b, err)
	}
}
