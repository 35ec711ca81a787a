package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/anchor"
)

// TestAnchorProtectCLI: `git lossless anchor protect` on a bare repository
// whose hooks directory comes from the global core.hooksPath (the
// hostile run's case, through the binary): it installs there, says where
// and that the directory is shared, proves it, and real pushes are
// refused. A hook git skips makes the proof fail (exit 1, saying why),
// and a working clone or a plain directory is refused (exit 3).
func TestAnchorProtectCLI(t *testing.T) {
	sb := anchorSandbox(t)
	hooks := filepath.Join(sb.root, "all-hooks")
	global := filepath.Join(sb.root, "gitconfig")
	writeFile(t, global, []byte("[core]\n\thooksPath = "+hooks+"\n"))
	sb.setenv("GIT_CONFIG_GLOBAL", global)
	bare := filepath.Join(sb.root, "srv", "project.git")
	sb.git(sb.root, "init", "-q", "--bare", bare)
	repo := sb.initRepo("clone")
	sb.git(repo, "commit", "-q", "--allow-empty", "-m", "one")
	const ref = "refs/lossless-anchor/m/c"
	sb.git(repo, "push", "-q", bare, "HEAD:"+ref)

	r := sb.ok(sb.root, "anchor", "protect", bare)
	for _, want := range []string{
		"installed " + filepath.Join(hooks, "pre-receive") + ", which refuses deletions",
		"hooks directory " + hooks + " is core.hooksPath (" + hooks + ", from the global config file:" + global + ")",
		"shared: " + hooks + " is outside the repository",
		"proved: a push to " + anchor.ProbePrefix,
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(bare, "hooks", "pre-receive")); !os.IsNotExist(err) {
		t.Errorf("a hook in hooks/, which git does not run: %v", err)
	}
	if _, errOut, err := sb.gitRaw(repo, nil, "push", bare, ":"+ref); err == nil {
		t.Fatalf("a deletion went through after protect:\n%s", errOut)
	}
	if got := sb.refsOf(bare, "refs/lossless-anchor/"); len(got) != 1 || got[ref] == "" {
		t.Fatalf("refs %v", got)
	}

	// Again: updated in place, proved again.
	if r := sb.ok(sb.root, "anchor", "protect", bare); !strings.HasPrefix(r.stdout, "updated ") || !strings.Contains(r.stdout, "proved: ") {
		t.Errorf("second run:\n%s", r.stdout)
	}

	// A hook git skips: --check fails and says why; nothing is left.
	if err := os.Chmod(filepath.Join(hooks, "pre-receive"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = sb.run(sb.root, "anchor", "protect", "--check", bare)
	if r.code != 1 || !strings.Contains(r.stderr, "NOT refused") || !strings.Contains(r.stderr, "is not executable") || strings.Contains(r.stdout, "proved") {
		t.Errorf("--check over a skipped hook: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if got := sb.refsOf(bare); len(got) != 1 {
		t.Errorf("refs after a failed proof: %v", got)
	}
	if b, _ := os.ReadFile(filepath.Join(hooks, "pre-receive")); !strings.Contains(string(b), "anchor protect") {
		t.Error("--check changed the hook")
	}
	if fi, _ := os.Stat(filepath.Join(hooks, "pre-receive")); fi.Mode().Perm() != 0o644 {
		t.Error("--check repaired the hook: it must install nothing")
	}

	for _, tc := range []struct{ dir, want string }{
		{repo, "is a non-bare repository"},
		{filepath.Join(bare, "refs"), "is not a git repository"},
	} {
		if r := sb.run(sb.root, "anchor", "protect", tc.dir); r.code != 3 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("protect %s: exit %d\n%s", tc.dir, r.code, r.stderr)
		}
	}
	if r := sb.run(sb.root, "anchor", "protect"); r.code != 2 {
		t.Errorf("no argument: exit %d", r.code)
	}
}
