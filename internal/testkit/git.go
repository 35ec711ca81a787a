package testkit

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// gitTimeout bounds one git command, so that a command waiting on
// something that never comes (a prompt, a dead server) fails with git's
// stderr instead of running into the test binary's global timeout, whose
// panic says nothing about which command hung.
const gitTimeout = 3 * time.Minute

// gitconfig is the global configuration of every HOME this package makes,
// for the git commands of tests and for the git processes behind the
// servers. It gives commits an author, names the first branch "main" on
// every git version, and keeps git from starting background maintenance
// (auto gc, detached maintenance) that would outlive the command and the
// test. safe.directory=* keeps git's ownership check from refusing a
// repository when the temporary directory's parent belongs to another
// user, as in some CI containers.
const gitconfig = `[user]
	name = testkit
	email = testkit@example.invalid
[init]
	defaultBranch = main
[gc]
	auto = 0
[maintenance]
	auto = false
[receive]
	autogc = false
[advice]
	detachedHead = false
[safe]
	directory = *
`

// NeedTool returns the absolute path of the program name. When it is
// missing the test is skipped, except under CI=true, where it fails: a
// CI machine that lacks a tool must be fixed, not silently test less.
// Besides PATH it looks in the sbin directories, which a non-root user's
// PATH often lacks but where daemons such as sshd live.
func NeedTool(t testing.TB, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs
		}
		return p
	}
	for _, dir := range []string{"/usr/sbin", "/usr/local/sbin", "/sbin"} {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s not found on PATH nor in sbin; it is required under CI=true", name)
	}
	t.Skipf("%s not found on PATH nor in sbin; skipping (the test runs, and fails without it, under CI=true)", name)
	return ""
}

// NewBare creates an empty bare repository named name (for example
// "remote.git") in a fresh temporary directory and returns its absolute
// path. Its HEAD names refs/heads/main.
func NewBare(t testing.TB, name string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	Git(t, "", nil, "init", "--bare", "-q", dir)
	return dir
}

// Git runs the real git binary with args in dir and returns its standard
// output without surrounding white space; it fails the test with git's
// stderr when git fails. See TryGit for the environment.
func Git(t testing.TB, dir string, env []string, args ...string) string {
	t.Helper()
	out, err := TryGit(t, dir, env, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TryGit is Git for commands that are expected to fail: it returns the
// error (with git's stderr) instead of failing the test.
//
// git runs hermetically, so that neither the machine's nor the
// developer's configuration changes what a test sees: GIT_CONFIG_NOSYSTEM=1,
// every inherited GIT_* variable (GIT_DIR and GIT_INDEX_FILE are set when
// tests run from a git hook) and the askpass programs dropped, no
// terminal prompts, the C locale (messages tests can match), and a HOME
// that is a temporary directory of the test with a small .gitconfig
// unless env sets HOME. env comes last, so it overrides all of this.
func TryGit(t testing.TB, dir string, env []string, args ...string) (string, error) {
	t.Helper()
	git := NeedTool(t, "git")
	home := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		}
	}
	if home == "" {
		home = testHome(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, git, args...)
	cmd.Dir = dir
	cmd.Env = append(hermeticEnv(home), env...)
	// Output goes through pipes; a process git left behind holding them
	// must not keep Wait from returning.
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	out := strings.TrimSpace(stdout.String())
	if err != nil {
		where := dir
		if where == "" {
			where = "."
		}
		return out, fmt.Errorf("git %s (in %s): %v\n%s", strings.Join(args, " "), where, err, stderr.String())
	}
	return out, nil
}

// hermeticEnv is the process environment minus what would make git read
// outside configuration or prompt, plus HOME=home and the variables that
// pin git's behaviour. Used for the git commands of tests and for the git
// behind the servers alike.
func hermeticEnv(home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "GIT_") && !strings.HasPrefix(k, "GIT_TRACE"):
		case k == "HOME", k == "XDG_CONFIG_HOME", k == "SSH_ASKPASS", k == "LC_ALL", k == "LANGUAGE":
		default:
			env = append(env, kv)
		}
	}
	return append(env,
		"HOME="+home,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0",
		"LC_ALL=C",
	)
}

// homes holds the default HOME of each test, made once per test rather
// than once per git command.
var homes sync.Map // testing.TB -> string

// testHome returns t's default HOME for git, creating it on first use.
func testHome(t testing.TB) string {
	t.Helper()
	if h, ok := homes.Load(t); ok {
		return h.(string)
	}
	h := newHome(t)
	if prev, loaded := homes.LoadOrStore(t, h); loaded {
		return prev.(string)
	}
	t.Cleanup(func() { homes.Delete(t) })
	return h
}

// newHome makes a temporary directory holding gitconfig as .gitconfig,
// to serve as a HOME.
func newHome(t testing.TB) string {
	t.Helper()
	h := t.TempDir()
	if err := os.WriteFile(filepath.Join(h, ".gitconfig"), []byte(gitconfig), 0o644); err != nil {
		t.Fatal(err)
	}
	return h
}
