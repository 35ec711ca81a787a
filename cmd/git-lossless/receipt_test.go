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
)

func receiptCLI(t *testing.T, dir string, args ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	code := run(context.Background(), append([]string{"-C", dir}, args...), &env{stdin: strings.NewReader(""), stdout: &out, stderr: &out, getenv: os.Getenv})
	return code, out.String()
}

func TestReceiptCommands(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not on PATH")
	}
	base := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(base, "config"))
	t.Setenv("XDG_DATA_HOME", filepath.Join(base, "data"))
	t.Setenv("HOME", filepath.Join(base, "home"))
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	for _, kv := range [][2]string{{"GIT_AUTHOR_NAME", "Dev"}, {"GIT_AUTHOR_EMAIL", "dev@example.com"}, {"GIT_COMMITTER_NAME", "Dev"}, {"GIT_COMMITTER_EMAIL", "dev@example.com"}} {
		t.Setenv(kv[0], kv[1])
	}
	dir := filepath.Join(base, "repo")
	git := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	os.MkdirAll(dir, 0o755)
	git("init", "-q")
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644)
	git("add", "-A")
	git("commit", "-q", "-m", "one")

	// Without a key: a clear error and a hint.
	if code, out := receiptCLI(t, dir, "receipt"); code != exitError || !strings.Contains(out, "git lossless key generate") {
		t.Fatalf("receipt without a key: %d\n%s", code, out)
	}
	if code, out := receiptCLI(t, dir, "key", "generate", "--name", "CLI Test"); code != 0 || !strings.Contains(out, "refs/notes/lossless/receipts-") {
		t.Fatalf("key generate: %d\n%s", code, out)
	}
	keyFile := filepath.Join(base, "config", "git-lossless", "signing-key.asc")
	if st, err := os.Stat(keyFile); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", st, err)
	}
	if code, out := receiptCLI(t, dir, "key", "generate"); code == 0 || !strings.Contains(out, "exists") {
		t.Fatalf("second key generate: %d\n%s", code, out)
	}
	if code, out := receiptCLI(t, dir, "key", "export"); code != 0 || !strings.HasPrefix(out, "-----BEGIN PGP PUBLIC KEY BLOCK-----") || strings.Contains(out, "PRIVATE") {
		t.Fatalf("key export: %d\n%s", code, out)
	}

	// An agent edits a.txt; the commit gets a receipt.
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a, edited\n"), 0o644)
	if code, out := receiptCLI(t, dir, "record", "--op", "edit", "--session", "s1", "a.txt"); code != 0 {
		t.Fatalf("record: %s", out)
	}
	git("commit", "-q", "-am", "two")
	code, out := receiptCLI(t, dir, "receipt")
	if code != 0 || !strings.Contains(out, "written") || !strings.Contains(out, "built and stored") {
		t.Fatalf("receipt: %d\n%s", code, out)
	}
	if code, out := receiptCLI(t, dir, "receipt", "HEAD"); code != 0 || !strings.Contains(out, "stored on refs/notes/lossless/") {
		t.Fatalf("receipt again: %d\n%s", code, out)
	}
	if code, out := receiptCLI(t, dir, "receipt", "HEAD", "--refresh"); code != 0 || !strings.Contains(out, "built and stored") {
		t.Fatalf("receipt --refresh: %d\n%s", code, out)
	}
	code, out = receiptCLI(t, dir, "receipt", "show", "HEAD", "--json")
	var js map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &js) != nil || js["format"] != "git-lossless receipt v1" {
		t.Fatalf("show --json: %d\n%s", code, out)
	}
	if code, out := receiptCLI(t, dir, "receipt", "verify"); code != 0 || !strings.Contains(out, "1 receipts, 1 ok") {
		t.Fatalf("verify: %d\n%s", code, out)
	}
	if code, out := receiptCLI(t, dir, "receipt", "list"); code != 0 || !strings.Contains(out, "WRITTEN") {
		t.Fatalf("list: %d\n%s", code, out)
	}
	// No receipt for the first commit: exit 1.
	if code, out := receiptCLI(t, dir, "receipt", "show", "HEAD~1"); code != exitFailed || !strings.Contains(out, "no receipt") {
		t.Fatalf("show HEAD~1: %d\n%s", code, out)
	}
	if code, _ := receiptCLI(t, dir, "receipt", "verify", "HEAD", "--all"); code != exitUsage {
		t.Fatalf("verify REV --all: %d", code)
	}
	if code, _ := receiptCLI(t, dir, "receipt", "no-such-rev"); code != exitUsage {
		t.Fatalf("receipt of an unknown revision: %d", code)
	}
	// Another key: the receipt is signed by a key verify does not trust.
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(base, "other"))
	if code, out := receiptCLI(t, dir, "receipt", "verify", "--all"); code != exitFailed || !strings.Contains(out, "unknown-key") {
		t.Fatalf("verify with an unknown key: %d\n%s", code, out)
	}
	pub := filepath.Join(base, "pub.asc")
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(base, "config"))
	_, exported := receiptCLI(t, dir, "key", "export")
	os.WriteFile(pub, []byte(exported), 0o644)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(base, "other"))
	if code, out := receiptCLI(t, dir, "receipt", "verify", "--keyring", pub); code != 0 {
		t.Fatalf("verify --keyring: %d\n%s", code, out)
	}
}
