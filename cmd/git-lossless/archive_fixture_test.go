package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// smallArchive is a repository with a bare "origin", the given files
// committed, and a temporary HOME: what the documentation, output and
// JSON-shape tests run the commands against, in process.
type smallArchive struct {
	t          *testing.T
	repo, home string
}

func newSmallArchive(t *testing.T, files map[string]string) *smallArchive {
	t.Helper()
	a := &smallArchive{t: t, repo: t.TempDir(), home: t.TempDir()}
	origin := t.TempDir()
	a.git("init", "-q", "--bare", origin)
	a.git("-C", a.repo, "init", "-q")
	a.git("-C", a.repo, "config", "user.email", "t@example.com")
	a.git("-C", a.repo, "config", "user.name", "T")
	a.git("-C", a.repo, "remote", "add", "origin", origin)
	for name, body := range files {
		p := filepath.Join(a.repo, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if len(files) > 0 {
		a.git("-C", a.repo, "add", ".")
		a.git("-C", a.repo, "commit", "-qm", "first")
	}
	t.Setenv("HOME", a.home)
	return a
}

// git runs the real git, failing the test on an error.
func (a *smallArchive) git(args ...string) {
	a.t.Helper()
	if out, err := exec.Command(docsGit(a.t), args...).CombinedOutput(); err != nil {
		a.t.Fatalf("git %v: %v %s", args, err, out)
	}
}

// getenv is the environment the commands see: HOME is the archive's, and
// the variables that would point at the user's own configuration are
// unset.
func (a *smallArchive) getenv(k string) string {
	switch k {
	case "HOME":
		return a.home
	case "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "LOSSLESS_DIR", "GIT_DIR":
		return ""
	}
	return os.Getenv(k)
}

// cli runs git-lossless in the repository, in process.
func (a *smallArchive) cli(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(a.t.Context(), args, &env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Dir: a.repo, Getenv: a.getenv})
	return code, out.String(), errb.String()
}

// must runs the commands in order and fails the test unless each exits 0.
func (a *smallArchive) must(cmds ...[]string) {
	a.t.Helper()
	for _, args := range cmds {
		if code, _, errOut := a.cli(args...); code != 0 {
			a.t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
	}
}
