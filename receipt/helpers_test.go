package receipt_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/gitstore"
	"github.com/git-lossless/git-lossless/receipt"
	"github.com/git-lossless/git-lossless/receipt/note"
)

// gitEnv isolates git from the user's configuration.
func gitEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "GIT_") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=Dev", "GIT_AUTHOR_EMAIL=dev@example.com", "GIT_COMMITTER_NAME=Dev", "GIT_COMMITTER_EMAIL=dev@example.com")
	return append(env, extra...)
}

type testRepo struct {
	t   testing.TB
	dir string
	st  *gitstore.Store
}

func newRepo(t testing.TB) *testRepo {
	t.Helper()
	dir := t.TempDir()
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	r := &testRepo{t: t, dir: dir}
	r.git("init", "-q", "-b", "main")
	r.open()
	return r
}

func (r *testRepo) open() {
	r.t.Helper()
	off := false
	st, err := gitstore.OpenDir(r.dir, gitstore.Options{Fsync: &off})
	if err != nil {
		r.t.Fatal(err)
	}
	r.st = st
}

func (r *testRepo) git(args ...string) string {
	r.t.Helper()
	out, err := r.gitErr(nil, args...)
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(out)
}

func (r *testRepo) gitErr(stdin []byte, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = r.dir
	cmd.Env = gitEnv()
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (r *testRepo) write(p, content string) {
	r.t.Helper()
	full := filepath.Join(r.dir, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

// commitAt commits everything with the given committer time.
func (r *testRepo) commitAt(msg string, when time.Time) string {
	r.t.Helper()
	r.git("add", "-A", "-f")
	cmd := exec.Command("git", "commit", "-q", "--allow-empty", "-m", msg)
	cmd.Dir = r.dir
	stamp := when.UTC().Format(time.RFC3339)
	cmd.Env = gitEnv("GIT_COMMITTER_DATE="+stamp, "GIT_AUTHOR_DATE="+stamp)
	if out, err := cmd.CombinedOutput(); err != nil {
		r.t.Fatalf("git commit: %v\n%s", err, out)
	}
	return r.git("rev-parse", "HEAD")
}

// rec is a short way to write an event.
type rec struct {
	at      time.Time
	session string
	agent   string
	op      string
	path    string
	content string // archived content ("" with noContent for none)
	view    string
	none    bool // no content
}

func (r *testRepo) record(writer string, recs ...rec) []gitstore.Event {
	r.t.Helper()
	var out []gitstore.Event
	for _, x := range recs {
		e := gitstore.Event{TS: x.at, Session: x.session, Agent: x.agent, Sidechain: x.agent != "", Op: gitstore.Op(x.op), Source: "hook", View: x.view}
		if e.View == "" && x.op != "span" {
			e.View = "full"
		}
		e.SetPath(x.path)
		g := gitstore.Record{Event: e}
		if !x.none {
			g.Content, g.HasContent = []byte(x.content), true
		}
		res, err := r.st.Append(context.Background(), writer, []gitstore.Record{g})
		if err != nil {
			r.t.Fatal(err)
		}
		out = append(out, res.Events...)
	}
	return out
}

func mustBuild(t testing.TB, st *gitstore.Store, commit string) *note.Receipt {
	t.Helper()
	r, err := receipt.Build(context.Background(), st, commit, receipt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func pathEntry(t testing.TB, r *note.Receipt, p string) note.PathEntry {
	t.Helper()
	for _, e := range r.Paths {
		if e.Path == p {
			return e
		}
	}
	t.Fatalf("receipt has no path %s", p)
	return note.PathEntry{}
}

// gpgEnv returns an environment with an isolated GNUPGHOME. Without gpg the
// test is skipped, except under CI=true, where that is a failure.
func gpgEnv(t testing.TB) []string {
	t.Helper()
	if _, err := exec.LookPath("gpg"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("gpg is not on PATH: receipts are checked with plain gpg in CI (install gnupg)")
		}
		t.Skip("gpg is not on PATH")
	}
	// A short path: gpg-agent sockets live in GNUPGHOME.
	home, err := os.MkdirTemp("", "glgpg")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(home, 0o700)
	env := append(gitEnv(), "GNUPGHOME="+home)
	t.Cleanup(func() {
		kill := exec.Command("gpgconf", "--kill", "all")
		kill.Env = env
		kill.Run()
		os.RemoveAll(home)
	})
	return env
}

// gpgRun runs a command with the gpg environment.
func gpgRun(t testing.TB, env []string, dir string, stdin []byte, name string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = env
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func importKey(t testing.TB, env []string, k *receipt.Key) {
	t.Helper()
	pub, err := k.ArmoredPublic()
	if err != nil {
		t.Fatal(err)
	}
	if out, err := gpgRun(t, env, "", []byte(pub), "gpg", "--batch", "--import"); err != nil {
		t.Fatalf("gpg --import: %v\n%s", err, out)
	}
}

func keyring(t testing.TB, keys ...*receipt.Key) *receipt.Keyring {
	t.Helper()
	kr := &receipt.Keyring{}
	for _, k := range keys {
		if err := kr.Add(k); err != nil {
			t.Fatal(err)
		}
	}
	return kr
}

var (
	testKeyOnce sync.Once
	testKey     *receipt.Key
	testKeyErr  error
)

// theKey is one signing key shared by the tests of this binary.
func theKey(t testing.TB) *receipt.Key {
	t.Helper()
	testKeyOnce.Do(func() { testKey, testKeyErr = receipt.GenerateKey("Receipt Tester", "tester@example.com") })
	if testKeyErr != nil {
		t.Fatal(testKeyErr)
	}
	return testKey
}
