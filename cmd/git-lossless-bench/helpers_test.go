package main

import (
	"bytes"
	"context"
	"fmt"
	"github.com/git-lossless/git-lossless/internal/testkit"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// e2eBin is git-lossless, built in TestMain with git-lossless-hook and
// this program beside it, as `go install ./cmd/...` puts them: the
// benchmarks run as `git-lossless bench ...`, through the delegation.
var e2eBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "git-lossless-bench-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bins, err := testkit.BuildPrograms(dir, "git-lossless", "git-lossless-hook", "git-lossless-mcp", "git-lossless-bench")
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench e2e: %v\n", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	e2eBin = bins[0]
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// recallSession is the real Claude Code sample session's id.
const recallSession = "9e33e208-2b1c-4064-b54f-efdf0f79781b"

// sandbox is one test's isolated HOME and git configuration for running
// the built programs.
type sandbox struct {
	t    *testing.T
	root string
	home string
	env  []string
}

func newSandbox(t *testing.T) *sandbox {
	t.Helper()
	root := t.TempDir()
	sb := &sandbox{t: t, root: root, home: filepath.Join(root, "home")}
	for _, d := range []string{sb.home, filepath.Join(root, "data"), filepath.Join(root, "config")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "GIT_") || strings.HasPrefix(k, "LOSSLESS_") || strings.HasPrefix(k, "XDG_") || k == "HOME" {
			continue
		}
		sb.env = append(sb.env, kv)
	}
	sb.env = append(sb.env, "HOME="+sb.home, "XDG_DATA_HOME="+filepath.Join(root, "data"), "XDG_CONFIG_HOME="+filepath.Join(root, "config"),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_AUTHOR_NAME=E2E Test", "GIT_AUTHOR_EMAIL=e2e@example.invalid",
		"GIT_COMMITTER_NAME=E2E Test", "GIT_COMMITTER_EMAIL=e2e@example.invalid", "GIT_TERMINAL_PROMPT=0")
	return sb
}

type result struct {
	stdout, stderr string
	code           int
}

// run runs git-lossless in dir; whatever the outcome it must not panic.
func (sb *sandbox) run(dir string, args ...string) result {
	sb.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, e2eBin, args...)
	cmd.Dir, cmd.Env = dir, sb.env
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	r := result{stdout: o.String(), stderr: e.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		sb.t.Fatalf("git-lossless %s: %v", strings.Join(args, " "), err)
	}
	if strings.Contains(r.stderr, "panic:") || strings.Contains(r.stderr, "goroutine ") {
		sb.t.Fatalf("git-lossless %s panicked:\n%s", strings.Join(args, " "), r.stderr)
	}
	return r
}

// ok runs git-lossless and fails the test unless it exits 0.
func (sb *sandbox) ok(dir string, args ...string) result {
	sb.t.Helper()
	r := sb.run(dir, args...)
	if r.code != 0 {
		sb.t.Fatalf("git-lossless %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r
}

func (sb *sandbox) git(dir string, args ...string) string {
	sb.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = dir, sb.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		sb.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// initRepo creates a repository under the sandbox and returns its path.
func (sb *sandbox) initRepo(name string) string {
	sb.t.Helper()
	dir := filepath.Join(sb.root, name)
	sb.git(sb.root, "init", "-q", "-b", "main", dir)
	return dir
}

// fsck fails the test unless `git fsck --strict` finds nothing wrong.
func (sb *sandbox) fsck(dir string) {
	sb.t.Helper()
	sb.git(dir, "fsck", "--strict", "--full", "--no-dangling", "--no-progress")
}

// proxyTestEnv isolates a test from the user's configuration.
func proxyTestEnv(t *testing.T) { testkit.IsolateUserConfig(t) }

// runCLI runs this program in process.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: os.Getenv})
	return code, out.String(), errb.String()
}
