package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/receipt"
)

func receiptCLI(t *testing.T, dir string, args ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	code := run(context.Background(), append([]string{"-C", dir}, args...), &env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out, Getenv: os.Getenv})
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
	if code, out := receiptCLI(t, dir, "receipt", "verify"); code != 0 || !strings.Contains(out, "1 receipt, 1 ok") {
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

// gpgHome returns an isolated GNUPGHOME (a short path: gpg-agent's sockets
// live in it), killing its agent at the end. Without gpg the test is
// skipped, except under CI=true, where that is a failure.
func gpgHome(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("gpg"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("gpg is not on PATH: receipts are checked with plain gpg in CI (install gnupg)")
		}
		t.Skip("gpg is not on PATH")
	}
	home, err := os.MkdirTemp("", "glgpg")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(home, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		kill := exec.Command("gpgconf", "--kill", "all")
		kill.Env = append(os.Environ(), "GNUPGHOME="+home)
		kill.Run()
		os.RemoveAll(home)
	})
	return home
}

// TestReceiptExternalKey: a key made by gpg itself, named by git config
// lossless.signingKey, signs receipts that plain gpg and git verify; a
// verifier with another config home trusts it through
// lossless.trustedKeys in a fresh clone, and not without. Building and
// storing the receipt leaves the index and the work tree as they were.
func TestReceiptExternalKey(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not on PATH")
	}
	gnupg := gpgHome(t)
	base := t.TempDir()
	home := filepath.Join(base, "home")
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(base, "config")) // no default key in it
	t.Setenv("XDG_DATA_HOME", filepath.Join(base, "data"))
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GNUPGHOME", gnupg)
	for _, kv := range [][2]string{{"GIT_AUTHOR_NAME", "Dev"}, {"GIT_AUTHOR_EMAIL", "dev@example.com"}, {"GIT_COMMITTER_NAME", "Dev"}, {"GIT_COMMITTER_EMAIL", "dev@example.com"}} {
		t.Setenv(kv[0], kv[1])
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	run := func(dir string, stdin []byte, name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		if stdin != nil {
			cmd.Stdin = bytes.NewReader(stdin)
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	gpg := func(args ...string) string {
		t.Helper()
		return run(base, nil, "gpg", append([]string{"--batch", "--pinentry-mode", "loopback"}, args...)...)
	}

	// The key, made and exported by gpg: an unprotected Ed25519 signing key.
	gpg("--passphrase", "", "--quick-gen-key", "External Signer <ext@example.com>", "ed25519", "sign", "never")
	var keyID string
	for _, l := range strings.Split(gpg("--with-colons", "--list-keys", "ext@example.com"), "\n") {
		if f := strings.Split(l, ":"); len(f) > 4 && f[0] == "pub" {
			keyID = strings.ToLower(f[4])
		}
	}
	if len(keyID) != 16 {
		t.Fatalf("no key id from gpg --list-keys")
	}
	secret := gpg("--armor", "--export-secret-keys", "ext@example.com")
	public := gpg("--armor", "--export", "ext@example.com")
	if err := os.WriteFile(filepath.Join(home, "ext-secret.asc"), []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	pubFile := filepath.Join(base, "ext-public.asc")
	if err := os.WriteFile(pubFile, []byte(public), 0o644); err != nil {
		t.Fatal(err)
	}
	// A passphrase-protected one, which git-lossless cannot use.
	gpg("--passphrase", "secret", "--quick-gen-key", "Protected <prot@example.com>", "ed25519", "sign", "never")
	protected := gpg("--passphrase", "secret", "--armor", "--export-secret-keys", "prot@example.com")
	if err := os.WriteFile(filepath.Join(home, "protected.asc"), []byte(protected), 0o600); err != nil {
		t.Fatal(err)
	}

	dir := filepath.Join(base, "repo")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	git := func(dir string, args ...string) string {
		t.Helper()
		return strings.TrimSpace(run(dir, nil, "git", args...))
	}
	git(dir, "init", "-q")
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644)
	git(dir, "add", "-A")
	git(dir, "commit", "-q", "-m", "one")
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a, edited\n"), 0o644)
	if code, out := receiptCLI(t, dir, "record", "--op", "edit", "--session", "s1", "a.txt"); code != 0 {
		t.Fatalf("record: %s", out)
	}
	git(dir, "commit", "-q", "-am", "two")

	git(dir, "config", "lossless.signingKey", "~/protected.asc")
	if code, out := receiptCLI(t, dir, "receipt"); code != exitError || !strings.Contains(out, "passphrase") {
		t.Fatalf("receipt with a protected key: %d\n%s", code, out)
	}
	git(dir, "config", "lossless.signingKey", "~/ext-secret.asc")

	// Uncommitted work in the index and the work tree stays as it is.
	os.WriteFile(filepath.Join(dir, "staged.txt"), []byte("staged\n"), 0o644)
	git(dir, "add", "staged.txt")
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a, edited again\n"), 0o644)
	snapshot := func() string {
		t.Helper()
		idx, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(idx)
		return hex.EncodeToString(sum[:]) + "\n" + run(dir, nil, "git", "--no-optional-locks", "status", "--porcelain", "--untracked-files=all")
	}
	before := snapshot()
	if !strings.Contains(before, "A  staged.txt") || !strings.Contains(before, " M a.txt") {
		t.Fatalf("the index and work tree are not dirty; the check would prove nothing:\n%s", before)
	}
	ref := "refs/notes/lossless/receipts-" + keyID
	code, out := receiptCLI(t, dir, "receipt", "HEAD")
	if code != 0 || !strings.Contains(out, "built and stored") || !strings.Contains(out, ref) || !strings.Contains(out, "signed by key "+strings.ToUpper(keyID)) {
		t.Fatalf("receipt signed with the gpg key: %d\n%s", code, out)
	}
	if after := snapshot(); after != before {
		t.Fatalf("git lossless receipt changed the index or the work tree:\nbefore %s\nafter %s", before, after)
	}

	// Plain gpg and git verify what the gpg-made key signed.
	note := run(dir, nil, "git", "notes", "--ref=lossless/receipts-"+keyID, "show", "HEAD")
	if out := run(dir, []byte(note), "gpg", "--verify"); !strings.Contains(out, `Good signature from "External Signer <ext@example.com>"`) {
		t.Fatalf("gpg --verify:\n%s", out)
	}
	if out := run(dir, nil, "git", "verify-commit", "-v", ref); !strings.Contains(out, "Good signature") {
		t.Fatalf("git verify-commit:\n%s", out)
	}
	if code, out := receiptCLI(t, dir, "receipt", "verify"); code != 0 || !strings.Contains(out, "signed by "+strings.ToUpper(keyID)+" (External Signer <ext@example.com>)") {
		t.Fatalf("verify with the signing key: %d\n%s", code, out)
	}

	// The verifier: a fresh clone, another config home without keys.
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(base, "verifier-config"))
	clone := filepath.Join(base, "clone")
	git(base, "clone", "-q", dir, clone)
	git(clone, "fetch", "-q", "origin", "+refs/notes/lossless/*:refs/notes/lossless/*", "+refs/lossless/*:refs/lossless/*")
	if code, out := receiptCLI(t, clone, "receipt", "verify", "HEAD"); code != exitFailed || !strings.Contains(out, "unknown-key") || !strings.Contains(out, strings.ToUpper(keyID)) {
		t.Fatalf("verify without trusting the key: %d\n%s", code, out)
	}
	other := filepath.Join(base, "other-public.asc")
	otherKey, err := receipt.GenerateKey("Someone Else", "")
	if err != nil {
		t.Fatal(err)
	}
	otherPub, _ := otherKey.ArmoredPublic()
	os.WriteFile(other, []byte(otherPub), 0o644)
	git(clone, "config", "--add", "lossless.trustedKeys", other)
	if code, out := receiptCLI(t, clone, "receipt", "verify", "HEAD"); code != exitFailed || !strings.Contains(out, "unknown-key") {
		t.Fatalf("verify trusting only another key: %d\n%s", code, out)
	}
	git(clone, "config", "--add", "lossless.trustedKeys", pubFile) // multi-valued
	if code, out := receiptCLI(t, clone, "receipt", "verify", "HEAD"); code != 0 || !strings.Contains(out, "OK ") || !strings.Contains(out, "signed by "+strings.ToUpper(keyID)) {
		t.Fatalf("verify through lossless.trustedKeys: %d\n%s", code, out)
	}
	git(clone, "config", "--add", "lossless.trustedKeys", filepath.Join(base, "missing.asc"))
	if code, out := receiptCLI(t, clone, "receipt", "verify", "HEAD"); code != exitError || !strings.Contains(out, "lossless.trustedKeys") {
		t.Fatalf("verify with a trusted key file that is missing: %d\n%s", code, out)
	}
}
