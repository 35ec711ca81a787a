package gitstore

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"
	"filippo.io/age/agessh"
	"golang.org/x/crypto/ssh"

	"github.com/git-lossless/git-lossless/seal"
)

// The SSH key implementation is package gitstore/sshkeys, which imports
// this package and so cannot be imported by its internal tests; they
// register the same two agessh calls. sshkeys' own test runs the real
// registration end to end, through a store.
func init() { RegisterSSH(testSSHKeys{}) }

type testSSHKeys struct{}

func (testSSHKeys) ParseRecipient(s string) (age.Recipient, error) { return agessh.ParseRecipient(s) }
func (testSSHKeys) ParseIdentity(b []byte) (age.Identity, error)   { return agessh.ParseIdentity(b) }

// TestNeedsSSH: only encryption on with an SSH recipient needs SSH keys.
func TestNeedsSSH(t *testing.T) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	sshPub, _ := sshKeyPair(t)
	for _, c := range []struct {
		encrypt    string
		recipients []string
		want       bool
	}{
		{"", nil, false},
		{"false", []string{sshPub}, false},
		{"true", []string{id.Recipient().String()}, false},
		{"true", []string{id.Recipient().String(), "  " + sshPub}, true},
		{"yes", []string{sshPub}, true},
	} {
		_, s := cryptRepo(t, c.encrypt, c.recipients...)
		if got := s.Crypt().NeedsSSH(); got != c.want {
			t.Errorf("encrypt %q recipients %q: NeedsSSH %v, want %v", c.encrypt, c.recipients, got, c.want)
		}
	}
}

// cryptRepo makes a repository with encryption configured for the given
// recipients (none: encryption off) and opens it.
func cryptRepo(t *testing.T, encrypt string, recipients ...string) (string, *Store) {
	t.Helper()
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("LOSSLESS_AGE_IDENTITY", "")
	dir := gitInit(t)
	if encrypt != "" {
		gitRun(t, dir, "config", "lossless.encrypt", encrypt)
	}
	for _, r := range recipients {
		gitRun(t, dir, "config", "--add", "lossless.recipient", r)
	}
	s, err := OpenDir(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return dir, s
}

// sshKeyPair returns an ed25519 SSH public key line and its unencrypted
// OpenSSH private key file.
func sshKeyPair(t *testing.T) (pub string, priv []byte) {
	t.Helper()
	pk, sk, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := ssh.NewPublicKey(pk)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(sk, "test key")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sp))), pem.EncodeToMemory(block)
}

// objectsContaining returns every loose object (inflated) and every other
// file under the git dir whose bytes contain needle.
func objectsContaining(t *testing.T, gitDir string, needle []byte) (hits []string, objects int) {
	t.Helper()
	err := filepath.WalkDir(gitDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(raw, needle) {
			hits = append(hits, p)
		}
		rel, _ := filepath.Rel(gitDir, p)
		if strings.HasPrefix(rel, "objects"+string(filepath.Separator)) && len(filepath.Base(p)) == 38 {
			objects++
			zr, err := zlib.NewReader(bytes.NewReader(raw))
			if err != nil {
				return err
			}
			body, err := io.ReadAll(zr)
			if err != nil {
				return err
			}
			if bytes.Contains(body, needle) {
				hits = append(hits, p+" (inflated)")
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hits, objects
}

func TestEncryptedSpan(t *testing.T) {
	id1, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	sshPub, sshPriv := sshKeyPair(t)
	dir, s := cryptRepo(t, "true", id1.Recipient().String(), sshPub)
	ctx := context.Background()

	secret := []byte("span plaintext 7c1f0e: the user's database password is hunter2-9b4d\n")
	rec := Record{
		Event:      Event{Op: "span", Source: "proxy", Session: "s1", Key: "sp-test1"},
		Content:    secret,
		HasContent: true,
		Encrypt:    true,
	}
	res, err := s.Append(ctx, "proxy-test", []Record{rec})
	if err != nil {
		t.Fatal(err)
	}
	ev := res.Events[0]
	if !IsEncrypted(&ev) || !bytes.Contains(ev.Raw, []byte(`"enc":"age"`)) {
		t.Fatalf("event not marked encrypted: %s", ev.Raw)
	}
	if ev.Tokens != EstimateTokens(len(secret)) {
		t.Errorf("tokens %d, want the plaintext's estimate %d", ev.Tokens, EstimateTokens(len(secret)))
	}
	if rec.Extra != nil {
		t.Errorf("the caller's record was modified: %v", rec.Extra)
	}

	// The blob is the ciphertext: its id and sha256 are the ciphertext's,
	// so verify passes without any key.
	body, err := s.Objects().Blob(ctx, ev.Blob)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(body, []byte("age-encryption.org/v1\n")) || BlobID(body) != ev.Blob || ev.Bytes != int64(len(body)) {
		t.Fatalf("blob is not the age ciphertext the event describes")
	}
	rep, err := s.Verify(ctx, "proxy-test", seal.Options{})
	if err != nil || !rep.OK() || rep.Blobs != 1 {
		t.Fatalf("verify without key: %+v %v", rep, err)
	}
	gitRun(t, dir, "fsck", "--strict")

	// Read back from the archive, as a reader would.
	evs, err := s.Events(ctx, Query{Key: "sp-test1"})
	if err != nil || len(evs) != 1 {
		t.Fatalf("events %v %v", evs, err)
	}
	stored := evs[0]
	if _, err := s.Crypt().OpenContent(ctx, stored, nil); !errors.Is(err, ErrContentLocked) || !strings.Contains(err.Error(), "locked") {
		t.Fatalf("without identity: %v, want locked", err)
	}
	other, _ := age.GenerateX25519Identity()
	if _, err := s.Crypt().OpenContent(ctx, stored, []age.Identity{other}); !errors.Is(err, ErrContentLocked) {
		t.Fatalf("wrong identity: %v, want locked", err)
	}
	got, err := s.Crypt().OpenContent(ctx, stored, []age.Identity{id1})
	if err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("age identity: %q %v", got, err)
	}
	sshIDs, err := ParseIdentities(sshPriv)
	if err != nil {
		t.Fatal(err)
	}
	got, err = s.Crypt().OpenContent(ctx, stored, sshIDs)
	if err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("ssh identity: %q %v", got, err)
	}

	// The plaintext is in no object and no file of the repository (index,
	// witness, config included); the same search finds a clear record.
	clear := []byte("clear control text 51aa0d")
	if _, err := s.Append(ctx, "proxy-test", []Record{{Event: Event{Op: "read", Source: "cli", Path: "x"}, Content: clear, HasContent: true}}); err != nil {
		t.Fatal(err)
	}
	gitDir := filepath.Join(dir, ".git")
	for _, needle := range [][]byte{secret, []byte("hunter2-9b4d")} {
		if hits, n := objectsContaining(t, gitDir, needle); len(hits) > 0 || n < 5 {
			t.Errorf("plaintext %q found in %v (%d objects searched)", needle, hits, n)
		}
	}
	if hits, _ := objectsContaining(t, gitDir, clear); len(hits) == 0 {
		t.Errorf("the search does not find a clear record's content: the check above proves nothing")
	}
	gitRun(t, dir, "gc", "-q", "--prune=now")
	if out := gitRun(t, dir, "cat-file", "--batch-all-objects", "--batch"); strings.Contains(out, "hunter2-9b4d") {
		t.Errorf("plaintext in a packed object")
	}
	got, err = s.Crypt().OpenContent(ctx, stored, []age.Identity{id1})
	if err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("after gc: %q %v", got, err)
	}
}

func TestEncryptionSettings(t *testing.T) {
	ctx := context.Background()
	id, _ := age.GenerateX25519Identity()
	rec := func() []Record {
		return []Record{{Event: Event{Op: "span", Source: "proxy"}, Content: []byte("plain"), HasContent: true, Encrypt: true}}
	}

	// Off (unset or false): stored in the clear, readable without a key.
	for _, v := range []string{"", "false"} {
		_, s := cryptRepo(t, v, id.Recipient().String())
		res, err := s.Append(ctx, "w", rec())
		if err != nil {
			t.Fatal(err)
		}
		if IsEncrypted(&res.Events[0]) {
			t.Fatalf("encrypt=%q: encrypted", v)
		}
		if got, err := s.Crypt().OpenContent(ctx, res.Events[0], nil); err != nil || string(got) != "plain" {
			t.Fatalf("encrypt=%q: %q %v", v, got, err)
		}
	}
	// On without a recipient, or with a bad one: the append fails rather
	// than store plaintext.
	for _, rc := range [][]string{nil, {"age1notakey"}, {"hello"}} {
		_, s := cryptRepo(t, "true", rc...)
		if _, err := s.Append(ctx, "w", rec()); err == nil {
			t.Fatalf("recipients %v: append succeeded", rc)
		}
		if ws, _ := s.Writers(ctx); len(ws) != 0 {
			t.Fatalf("recipients %v: something was written", rc)
		}
	}
	// On, but a record not marked Encrypt (a file version) stays clear.
	_, s := cryptRepo(t, "yes", id.Recipient().String())
	res, err := s.Append(ctx, "w", []Record{{Event: Event{Op: "read", Source: "cli", Path: "f"}, Content: []byte("file"), HasContent: true}})
	if err != nil || IsEncrypted(&res.Events[0]) {
		t.Fatalf("unmarked record: %v %v", res.Events, err)
	}
	if _, err := s.Append(ctx, "w", []Record{{Event: Event{Op: "read", Source: "cli", Path: "g"}, HasContent: false, Encrypt: true}}); err != nil {
		t.Fatalf("record without content: %v", err)
	}
}

func TestLoadIdentities(t *testing.T) {
	id, _ := age.GenerateX25519Identity()
	dir, s := cryptRepo(t, "")
	keyFile := filepath.Join(dir, "key.txt")
	if err := os.WriteFile(keyFile, []byte("# created: test\n"+id.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }

	if ids, err := s.Crypt().LoadIdentities(t.Context(), "", getenv); err != nil || len(ids) != 0 {
		t.Fatalf("nothing set: %v %v", ids, err)
	}
	if ids, err := s.Crypt().LoadIdentities(t.Context(), keyFile, getenv); err != nil || len(ids) != 1 {
		t.Fatalf("flag: %v %v", ids, err)
	}
	env["LOSSLESS_AGE_IDENTITY"] = id.String()
	if ids, err := s.Crypt().LoadIdentities(t.Context(), "", getenv); err != nil || len(ids) != 1 {
		t.Fatalf("env key: %v %v", ids, err)
	}
	env["LOSSLESS_AGE_IDENTITY"] = filepath.Join(dir, "missing.txt")
	if _, err := s.Crypt().LoadIdentities(t.Context(), "", getenv); err == nil || !strings.Contains(err.Error(), "LOSSLESS_AGE_IDENTITY") {
		t.Fatalf("env path missing: %v", err)
	}
	delete(env, "LOSSLESS_AGE_IDENTITY")
	gitRun(t, dir, "config", "lossless.identity", keyFile)
	s2, err := OpenDir(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ids, err := s2.Crypt().LoadIdentities(t.Context(), "", getenv); err != nil || len(ids) != 1 {
		t.Fatalf("git config: %v %v", ids, err)
	}
	// Errors never quote key material.
	bad := filepath.Join(dir, "bad.txt")
	os.WriteFile(bad, []byte("AGE-SECRET-KEY-1NOTREALLYAKEYBUTSECRETISH\n"), 0o600)
	if _, err := s.Crypt().LoadIdentities(t.Context(), bad, getenv); err == nil || strings.Contains(err.Error(), "SECRETISH") {
		t.Fatalf("bad key file: %v", err)
	}
}
