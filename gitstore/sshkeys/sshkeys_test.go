package sshkeys_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/gitstore"
	_ "github.com/git-lossless/git-lossless/gitstore/sshkeys"
)

func run(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return string(out)
}

// TestSSHKeysRegistered: with this package linked, a span appended to a
// store whose lossless.recipient is an ed25519 key made by the real
// ssh-keygen is stored as age ciphertext that the matching private key
// (ssh-keygen's own PEM file) opens, and that real git fsck accepts.
func TestSSHKeysRegistered(t *testing.T) {
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("ssh-keygen is needed (install openssh-client)")
		}
		t.Skip("no ssh-keygen")
	}
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	dir := t.TempDir()
	key := filepath.Join(t.TempDir(), "id_ed25519")
	run(t, dir, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "test", "-f", key)
	pub, err := os.ReadFile(key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	run(t, dir, "git", "init", "-q")
	run(t, dir, "git", "config", "lossless.encrypt", "true")
	run(t, dir, "git", "config", "lossless.recipient", strings.TrimSpace(string(pub)))
	st, err := gitstore.OpenDir(dir, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !st.Crypt().NeedsSSH() {
		t.Fatal("NeedsSSH false with an SSH recipient")
	}
	ctx := context.Background()
	secret := []byte("span text only an SSH key opens\n")
	res, err := st.Append(ctx, "ssh-test", []gitstore.Record{{
		Event:   gitstore.Event{Op: "span", Source: "proxy", Session: "s", Key: "k1"},
		Content: secret, HasContent: true, Encrypt: true,
	}})
	if err != nil {
		t.Fatal(err)
	}
	ev := res.Events[0]
	if !gitstore.IsEncrypted(&ev) {
		t.Fatalf("not encrypted: %s", ev.Raw)
	}
	priv, err := os.ReadFile(key)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := gitstore.ParseIdentities(priv)
	if err != nil {
		t.Fatal(err)
	}
	got, err := st.Crypt().OpenContent(ctx, ev, ids)
	if err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("opened with the SSH key: %q %v", got, err)
	}
	run(t, dir, "git", "fsck", "--strict")
}
