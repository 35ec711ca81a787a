package anchor_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/anchor"
)

// The pre-push hook, run by real git pushes to a bare repository. The
// program it runs is a stand-in script that logs how it was called, so
// these tests pin the hook's own logic: order, arguments, what reaches
// the user, what never fails a push. cmd/git-lossless's githooks tests run
// it with the real binary end to end.

// ppWorld is a repository with one commit, a bare origin, and a stand-in
// git-lossless whose path holds a space and a quote (the hook must quote
// it).
type ppWorld struct {
	t                 *testing.T
	base, repo, bare  string
	prog, log, tmpdir string
	env               []string
}

func newPPWorld(t *testing.T) *ppWorld {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git not on PATH")
		}
		t.Skip("git not on PATH")
	}
	base := t.TempDir()
	w := &ppWorld{t: t, base: base, repo: filepath.Join(base, "repo"), bare: filepath.Join(base, "origin.git"),
		prog: filepath.Join(base, "it's bin", "git-lossless"), log: filepath.Join(base, "calls.log"), tmpdir: filepath.Join(base, "tmp")}
	for _, d := range []string{filepath.Join(base, "home"), filepath.Join(base, "config"), w.tmpdir, filepath.Dir(w.prog)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "GIT_") || strings.HasPrefix(k, "LOSSLESS_") || strings.HasPrefix(k, "XDG_") || k == "HOME" || k == "TMPDIR" {
			continue
		}
		w.env = append(w.env, kv)
	}
	w.env = append(w.env, "HOME="+filepath.Join(base, "home"), "XDG_CONFIG_HOME="+filepath.Join(base, "config"),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull, "TMPDIR="+w.tmpdir,
		"LOSSLESS_ANCHOR_KEY_FILE="+filepath.Join(base, "anchor-key"),
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@localhost", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@localhost")
	// The stand-in logs its arguments and whether the guard was set, and
	// fails with PROG_FAIL's stderr lines when that is set.
	ppWrite(t, w.prog, `#!/bin/sh
echo "prog $* guard=$`+anchor.PrePushGuard+`" >>`+"'"+w.log+"'"+`
if [ -n "$PROG_FAIL" ]; then
	printf '%s\n' "git-lossless: warning: writer x left out" "git-lossless: anchor on $5 failed: $PROG_FAIL" "git-lossless: error: anchor failed on 1 of 1 targets" "git-lossless: hint: check the remote" >&2
	exit 1
fi
`, 0o755)
	w.git(base, "init", "-q", "-b", "main", w.repo)
	w.git(base, "init", "-q", "--bare", "-b", "main", w.bare)
	ppWrite(t, filepath.Join(w.repo, "a.txt"), "a\n", 0o644)
	w.git(w.repo, "add", "a.txt")
	w.git(w.repo, "commit", "-q", "-m", "one")
	w.git(w.repo, "remote", "add", "origin", w.bare)
	// An archive to anchor: the hook anchors nothing without one.
	w.git(w.repo, "update-ref", "refs/lossless/w1", "HEAD")
	w.git(w.repo, "config", "lossless.anchorOnPush", "true")
	return w
}

func ppWrite(t *testing.T, path, data string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func (w *ppWorld) gitRaw(dir string, extraEnv []string, args ...string) (string, string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(append([]string(nil), w.env...), extraEnv...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

func (w *ppWorld) git(dir string, args ...string) string {
	w.t.Helper()
	out, errOut, err := w.gitRaw(dir, nil, args...)
	if err != nil {
		w.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, errOut)
	}
	return strings.TrimSpace(out)
}

// push pushes a new commit on main to origin and returns git's stderr and
// whether the push went through (the bare repository has the commit).
func (w *ppWorld) push(extraEnv ...string) (string, bool) {
	w.t.Helper()
	ppWrite(w.t, filepath.Join(w.repo, "a.txt"), w.git(w.repo, "rev-parse", "HEAD")+"\n", 0o644)
	w.git(w.repo, "commit", "-q", "-am", "next")
	head := w.git(w.repo, "rev-parse", "HEAD")
	_, errOut, err := w.gitRaw(w.repo, extraEnv, "push", "origin", "main")
	remote, _, rerr := w.gitRaw(w.bare, nil, "rev-parse", "--verify", "-q", "refs/heads/main")
	landed := rerr == nil && strings.TrimSpace(remote) == head
	if (err == nil) != landed {
		w.t.Fatalf("git push exit %v but landed=%v\n%s", err, landed, errOut)
	}
	return errOut, landed
}

func (w *ppWorld) calls() []string {
	w.t.Helper()
	b, err := os.ReadFile(w.log)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		w.t.Fatal(err)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func (w *ppWorld) hooks() string { return filepath.Join(w.repo, ".git", "hooks") }

// lossLines returns stderr's lines from the hook (git-lossless: ...).
func lossLines(stderr string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "git-lossless:") {
			out = append(out, l)
		}
	}
	return out
}

func TestPrePushHookAnchorsThenLeavesNoTrace(t *testing.T) {
	w := newPPWorld(t)
	res, err := anchor.InstallPrePush(w.hooks(), w.prog)
	if err != nil {
		t.Fatal(err)
	}
	if res.Updated || res.Chained != "" || res.Hook != filepath.Join(w.hooks(), "pre-push") {
		t.Errorf("first install: %+v", res)
	}
	fi, err := os.Stat(res.Hook)
	if err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("hook mode: %v %v", fi, err)
	}
	stderr, ok := w.push()
	if !ok {
		t.Fatalf("push refused:\n%s", stderr)
	}
	if got := w.calls(); len(got) != 1 || got[0] != "prog anchor push --from-hook -- origin guard=1" {
		t.Errorf("calls %q", got)
	}
	if l := lossLines(stderr); len(l) != 0 {
		t.Errorf("a successful anchor printed %q", l)
	}
	// The hook's temporary files are gone.
	if ents, _ := os.ReadDir(w.tmpdir); len(ents) != 0 {
		t.Errorf("left in TMPDIR: %v", ents)
	}

	// The stand-in fails: the push goes on, with exactly one line saying
	// so, the first of the anchor's own errors (not a hint, not a warning).
	stderr, ok = w.push("PROG_FAIL=remote said no")
	if !ok {
		t.Fatalf("a failed anchor refused the push:\n%s", stderr)
	}
	l := lossLines(stderr)
	if len(l) != 1 || l[0] != "git-lossless: anchor push to origin failed (your push goes on): remote said no" {
		t.Errorf("stderr lines %q\n%s", l, stderr)
	}
	if ents, _ := os.ReadDir(w.tmpdir); len(ents) != 0 {
		t.Errorf("left in TMPDIR after a failure: %v", ents)
	}

	// Off, no archive, or inside an anchor's own push: the program is not run.
	n := len(w.calls())
	w.git(w.repo, "config", "lossless.anchorOnPush", "false")
	w.push()
	w.git(w.repo, "config", "--unset", "lossless.anchorOnPush")
	w.push()
	w.git(w.repo, "config", "lossless.anchorOnPush", "true")
	w.push(anchor.PrePushGuard + "=1")
	w.git(w.repo, "update-ref", "-d", "refs/lossless/w1")
	w.push()
	if got := w.calls(); len(got) != n {
		t.Errorf("the program ran when it should not: %q", got[n:])
	}
}

func TestPrePushHookChainsPreviousHook(t *testing.T) {
	w := newPPWorld(t)
	marker := filepath.Join(w.base, "previous.log")
	prev := `#!/bin/sh
echo "previous $0 $*" >>'` + marker + `'
cat >>'` + marker + `'
echo "previous $*" >>'` + w.log + `'
[ -z "$BLOCK" ] || { echo "previous hook: push blocked" >&2; exit 1; }
`
	hook := filepath.Join(w.hooks(), "pre-push")
	ppWrite(t, hook, prev, 0o755)
	res, err := anchor.InstallPrePush(w.hooks(), w.prog)
	if err != nil {
		t.Fatal(err)
	}
	chained := filepath.Join(w.hooks(), anchor.PrePushChained)
	if res.Chained != chained {
		t.Errorf("chained %q", res.Chained)
	}
	if b, _ := os.ReadFile(chained); string(b) != prev {
		t.Errorf("the previous hook was changed: %q", b)
	}
	// Installing again rewrites ours and never chains it to itself.
	res, err = anchor.InstallPrePush(w.hooks(), w.prog)
	if err != nil || !res.Updated || res.Chained != chained {
		t.Fatalf("second install: %+v %v", res, err)
	}
	if b, _ := os.ReadFile(chained); string(b) != prev {
		t.Errorf("the second install touched the previous hook: %q", b)
	}

	stderr, ok := w.push()
	if !ok {
		t.Fatalf("push refused:\n%s", stderr)
	}
	// The previous hook ran first, with git's arguments and input, and
	// with $0 naming pre-push (a sourced /bin/sh script: hook managers
	// dispatch on it).
	got := w.calls()
	if len(got) != 2 || got[0] != "previous origin "+w.bare || !strings.HasPrefix(got[1], "prog anchor push") {
		t.Errorf("calls %q", got)
	}
	mk, _ := os.ReadFile(marker)
	if !strings.Contains(string(mk), "previous .git/hooks/pre-push origin") || !strings.Contains(string(mk), "refs/heads/main ") {
		t.Errorf("previous hook's $0, arguments or input: %q", mk)
	}

	// Its verdict decides the push, and a refused push anchors nothing.
	n := len(w.calls())
	stderr, ok = w.push("BLOCK=1")
	if ok {
		t.Fatal("the previous hook's refusal was ignored")
	}
	if !strings.Contains(stderr, "previous hook: push blocked") {
		t.Errorf("stderr %s", stderr)
	}
	if got := w.calls()[n:]; len(got) != 1 || !strings.HasPrefix(got[0], "previous ") {
		t.Errorf("after a refusal: %q", got)
	}

	// A previous hook that is not a /bin/sh script runs as a program.
	ppWrite(t, chained, "#!/bin/sh -e\necho \"exec $0\" >>'"+marker+"'\nexit 3\n", 0o755)
	if _, ok := w.push(); ok {
		t.Error("exit 3 from the previous hook did not refuse the push")
	}
	if mk, _ := os.ReadFile(marker); !strings.Contains(string(mk), "exec .git/hooks/"+anchor.PrePushChained) {
		t.Errorf("not run as a program: %q", mk)
	}
	if ents, _ := os.ReadDir(w.tmpdir); len(ents) != 0 {
		t.Errorf("left in TMPDIR: %v", ents)
	}
}

func TestPrePushInspectAndUninstall(t *testing.T) {
	w := newPPWorld(t)
	hooks := w.hooks()
	hook := filepath.Join(hooks, "pre-push")
	chained := filepath.Join(hooks, anchor.PrePushChained)
	os.Remove(hook)

	s, err := anchor.InspectPrePush(filepath.Join(w.base, "no-such-dir"))
	if err != nil || s.Exists || s.Ours || s.Chained != "" {
		t.Errorf("missing directory: %+v %v", s, err)
	}
	if res, err := anchor.UninstallPrePush(hooks); err != nil || res.Removed || res.Restored != "" || res.NotOurs {
		t.Errorf("uninstall with nothing installed: %+v %v", res, err)
	}

	const user = "#!/bin/sh\necho user hook\n"
	ppWrite(t, hook, user, 0o750)
	if _, err := anchor.InstallPrePush(hooks, w.prog); err != nil {
		t.Fatal(err)
	}
	s, err = anchor.InspectPrePush(hooks)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Exists || !s.Ours || !s.Executable || !s.Current || s.Program != w.prog || s.Chained != chained {
		t.Errorf("inspect: %+v", s)
	}
	// A hook of ours from another version is ours, not current.
	b, _ := os.ReadFile(hook)
	ppWrite(t, hook, strings.Replace(string(b), "exit 0\n", "exit 0 # older\n", 1), 0o755)
	if s, _ := anchor.InspectPrePush(hooks); !s.Ours || s.Current || s.Program != w.prog {
		t.Errorf("edited hook: %+v", s)
	}

	res, err := anchor.UninstallPrePush(hooks)
	if err != nil || !res.Removed || res.Restored != chained || res.NotOurs {
		t.Fatalf("uninstall: %+v %v", res, err)
	}
	if b, _ := os.ReadFile(hook); string(b) != user {
		t.Errorf("the user's hook was not put back: %q", b)
	}
	if fi, _ := os.Stat(hook); fi.Mode().Perm() != 0o750 {
		t.Errorf("the user's hook's mode: %v", fi.Mode())
	}
	if _, err := os.Stat(chained); !os.IsNotExist(err) {
		t.Errorf("%s still there: %v", chained, err)
	}

	// Someone else's hook: uninstall leaves it alone, install refuses to
	// overwrite a kept hook it cannot place.
	if res, err := anchor.UninstallPrePush(hooks); err != nil || !res.NotOurs || res.Removed {
		t.Errorf("uninstall over a user's hook: %+v %v", res, err)
	}
	if b, _ := os.ReadFile(hook); string(b) != user {
		t.Errorf("uninstall changed the user's hook: %q", b)
	}
	ppWrite(t, chained, "#!/bin/sh\necho older\n", 0o755)
	if _, err := anchor.InstallPrePush(hooks, w.prog); err == nil || !strings.Contains(err.Error(), "move one of them aside") {
		t.Errorf("install over two foreign hooks: %v", err)
	}
	if b, _ := os.ReadFile(hook); string(b) != user {
		t.Errorf("the refused install changed the user's hook: %q", b)
	}

	// Ours deleted by hand, the kept one still there: uninstall puts it back.
	os.Remove(hook)
	if res, err := anchor.UninstallPrePush(hooks); err != nil || res.Removed || res.Restored != chained {
		t.Errorf("restore only: %+v %v", res, err)
	}
	if b, _ := os.ReadFile(hook); string(b) != "#!/bin/sh\necho older\n" {
		t.Errorf("restored %q", b)
	}
}

func TestPrePushHooksDirAndConfig(t *testing.T) {
	w := newPPWorld(t)
	for _, kv := range w.env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	ctx := context.Background()
	sub := filepath.Join(w.repo, "sub", "dir")
	os.MkdirAll(sub, 0o700)
	realRepo, _ := filepath.EvalSymlinks(w.repo)
	same := func(a, b string) bool {
		ra, err1 := filepath.EvalSymlinks(filepath.Dir(a))
		rb, err2 := filepath.EvalSymlinks(filepath.Dir(b))
		return err1 == nil && err2 == nil && ra == rb && filepath.Base(a) == filepath.Base(b)
	}
	dir, hp, err := anchor.HooksDir(ctx, sub)
	if err != nil || !same(dir, filepath.Join(realRepo, ".git", "hooks")) || hp != "" {
		t.Errorf("default: %q %q %v", dir, hp, err)
	}
	// core.hooksPath, relative: from the top of the worktree, wherever
	// the command runs.
	w.git(w.repo, "config", "core.hooksPath", ".husky")
	os.MkdirAll(filepath.Join(w.repo, ".husky"), 0o700)
	dir, hp, err = anchor.HooksDir(ctx, sub)
	if err != nil || !same(dir, filepath.Join(realRepo, ".husky")) || hp != ".husky" {
		t.Errorf("core.hooksPath: %q %q %v", dir, hp, err)
	}
	if _, _, err := anchor.HooksDir(ctx, w.base); err == nil {
		t.Error("no error outside a repository")
	}

	for v, want := range map[string]bool{"true": true, "yes": true, "1": true, "off": false, "false": false} {
		w.git(w.repo, "config", "lossless.anchorOnPush", v)
		if on, err := anchor.AnchorOnPush(ctx, sub); on != want || err != nil {
			t.Errorf("anchorOnPush=%s: %v %v", v, on, err)
		}
	}
	w.git(w.repo, "config", "lossless.anchorOnPush", "maybe")
	if _, err := anchor.AnchorOnPush(ctx, sub); err == nil || !strings.Contains(err.Error(), "lossless.anchorOnPush") {
		t.Errorf("a bad boolean: %v", err)
	}
	w.git(w.repo, "config", "--unset", "lossless.anchorOnPush")
	if on, err := anchor.AnchorOnPush(ctx, sub); on || err != nil {
		t.Errorf("unset: %v %v", on, err)
	}
}

// TestPrePushHookUnderHusky: husky (v9) points core.hooksPath at .husky/_,
// whose pre-push runs .husky/<its own file name>. Chained behind ours, it
// must still find .husky/pre-push, or the user's hook silently stops.
func TestPrePushHookUnderHusky(t *testing.T) {
	w := newPPWorld(t)
	marker := filepath.Join(w.base, "husky.log")
	ppWrite(t, filepath.Join(w.repo, ".husky", "_", "h"), `#!/usr/bin/env sh
n=$(basename "$0")
s=$(dirname "$(dirname "$0")")/$n
[ ! -f "$s" ] && exit 0
sh -e "$s" "$@"
`, 0o644)
	ppWrite(t, filepath.Join(w.repo, ".husky", "_", "pre-push"), "#!/usr/bin/env sh\n. \"$(dirname \"$0\")/h\"\n", 0o755)
	ppWrite(t, filepath.Join(w.repo, ".husky", "pre-push"), "echo \"user hook $1\" >>'"+marker+"'\n[ -z \"$BLOCK\" ]\n", 0o644)
	w.git(w.repo, "config", "core.hooksPath", ".husky/_")
	dir, _, err := anchor.HooksDir(context.Background(), w.repo)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := anchor.InstallPrePush(dir, w.prog); err != nil {
		t.Fatal(err)
	}
	if stderr, ok := w.push(); !ok {
		t.Fatalf("push refused:\n%s", stderr)
	}
	if mk, _ := os.ReadFile(marker); string(mk) != "user hook origin\n" {
		t.Errorf("the user's husky hook: %q", mk)
	}
	if got := w.calls(); len(got) != 1 {
		t.Errorf("calls %q", got)
	}
	if _, ok := w.push("BLOCK=1"); ok {
		t.Error("the user's husky hook could not refuse the push")
	}
}
