package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-lossless/git-lossless/anchor"
)

// install/uninstall git-hooks and the pre-push hook they install, end to
// end: the built binary, real git pushes to a bare repository, the
// anchor ref read back from it.

// hookWorld is a sandbox with a repository (one commit, one recorded
// read), a bare origin, its own anchor key and TMPDIR, and a previous
// pre-push hook that logs each run to marker and refuses the push when
// BLOCK is set.
type hookWorld struct {
	*sandbox
	repo, bare, marker, tmp, keyFile string
	prev                             string // the previous hook's script
}

func newHookWorld(t *testing.T) *hookWorld {
	t.Helper()
	sb := newSandbox(t)
	w := &hookWorld{sandbox: sb, marker: filepath.Join(sb.root, "previous-hook.log"), tmp: filepath.Join(sb.root, "tmp"),
		keyFile: filepath.Join(sb.root, "keys", "anchor-key")}
	if err := os.MkdirAll(w.tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	sb.setenv("TMPDIR", w.tmp)
	sb.setenv("LOSSLESS_ANCHOR_KEY_FILE", w.keyFile)
	w.repo = sb.initRepo("repo")
	w.bare = sb.initRepo("origin.git", "--bare")
	writeFile(t, filepath.Join(w.repo, "a.txt"), []byte("a\n"))
	sb.git(w.repo, "add", "a.txt")
	sb.git(w.repo, "commit", "-q", "-m", "one")
	sb.git(w.repo, "remote", "add", "origin", w.bare)
	sb.ok(w.repo, "record", "--op", "read", "a.txt")
	w.prev = "#!/bin/sh\necho \"previous hook $*\" >>'" + w.marker + "'\n[ -z \"$BLOCK\" ] || { echo 'previous hook: blocked' >&2; exit 1; }\n"
	return w
}

// commit makes a new commit on main and returns it.
func (w *hookWorld) commit() string {
	w.t.Helper()
	b, _ := os.ReadFile(filepath.Join(w.repo, "a.txt"))
	writeFile(w.t, filepath.Join(w.repo, "a.txt"), append(b, 'x'))
	w.git(w.repo, "commit", "-q", "-am", "next")
	return strings.TrimSpace(w.git(w.repo, "rev-parse", "HEAD"))
}

// push runs a plain `git push origin main` with extra environment and
// returns git's stderr and whether it succeeded; the bare repository's
// main must agree.
func (w *hookWorld) push(extra ...string) (string, bool) {
	w.t.Helper()
	head := w.commit()
	saved := w.env
	w.env = append(append([]string(nil), w.env...), extra...)
	_, errOut, err := w.gitRaw(w.repo, nil, "push", "origin", "main")
	w.env = saved
	out, _, rerr := w.gitRaw(w.bare, nil, "rev-parse", "-q", "--verify", "refs/heads/main")
	landed := rerr == nil && strings.TrimSpace(string(out)) == head
	if (err == nil) != landed {
		w.t.Fatalf("git push: err %v but landed %v\n%s", err, landed, errOut)
	}
	return string(errOut), landed
}

// anchorRef is this clone's anchor ref: machine from the key, clone from
// the local anchor state.
func (w *hookWorld) anchorRef() string {
	w.t.Helper()
	vkey := strings.TrimSpace(w.ok(w.repo, "anchor", "key").stdout)
	machine, _, _ := strings.Cut(vkey, "+")
	clone, err := os.ReadFile(filepath.Join(w.repo, ".git", "lossless", "clone"))
	if err != nil {
		w.t.Fatalf("clone id: %v", err)
	}
	return anchor.AnchorRef(machine, strings.TrimSpace(string(clone)))
}

// remoteRef returns a ref's value in the bare repository ("" when absent).
func (w *hookWorld) remoteRef(ref string) string {
	out, _, err := w.gitRaw(w.bare, nil, "rev-parse", "-q", "--verify", ref)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func (w *hookWorld) markerLines() []string {
	b, _ := os.ReadFile(w.marker)
	if s := strings.TrimSpace(string(b)); s != "" {
		return strings.Split(s, "\n")
	}
	return nil
}

func (w *hookWorld) remoteAnchorRefs() string {
	return strings.TrimSpace(w.git(w.bare, "for-each-ref", "--format=%(refname)", "refs/lossless-anchor/", "refs/tags/"))
}

// losslessLines are the lines of stderr from git-lossless.
func losslessLines(stderr string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, "git-lossless") {
			out = append(out, l)
		}
	}
	return out
}

func TestGitHooksInstallDryRunApplyUninstall(t *testing.T) {
	w := newHookWorld(t)
	hooks := filepath.Join(w.repo, ".git", "hooks")
	hook := filepath.Join(hooks, "pre-push")
	chained := filepath.Join(hooks, anchor.PrePushChained)
	writeFile(t, hook, []byte(w.prev))
	os.Chmod(hook, 0o755)

	// Dry run: the plan, nothing written.
	r := w.ok(filepath.Join(w.repo), "install", "git-hooks")
	for _, want := range []string{"hooks directory: " + hooks + "\n", "hook program: " + e2eBin + "\n", "keep     the existing " + hook + " as " + anchor.PrePushChained,
		"dry run: nothing was written", "anchoring on push is off: `git config lossless.anchorOnPush true`"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("dry run lacks %q:\n%s", want, r.stdout)
		}
	}
	if b, _ := os.ReadFile(hook); string(b) != w.prev {
		t.Fatal("the dry run changed the hook")
	}
	if _, err := os.Stat(chained); !os.IsNotExist(err) {
		t.Fatal("the dry run moved the hook")
	}

	// Applied, from a subdirectory: the repository's hooks directory.
	sub := filepath.Join(w.repo, "sub")
	os.MkdirAll(sub, 0o700)
	r = w.ok(sub, "install", "git-hooks", "--apply")
	if !strings.Contains(r.stdout, "installed "+hook+"\n") || !strings.Contains(r.stdout, "runs first, from "+chained) {
		t.Errorf("apply:\n%s", r.stdout)
	}
	st, err := anchor.InspectPrePush(hooks)
	if err != nil || !st.Ours || !st.Current || !st.Executable || st.Program != e2eBin || st.Chained != chained {
		t.Fatalf("installed: %+v %v", st, err)
	}
	if b, _ := os.ReadFile(chained); string(b) != w.prev {
		t.Errorf("the previous hook was not kept as it was: %q", b)
	}
	if fi, _ := os.Stat(hook); fi.Mode().Perm() != 0o755 {
		t.Errorf("hook mode %v", fi.Mode())
	}

	// Again: nothing to change. With --command: the hook runs that.
	if r = w.ok(w.repo, "install", "git-hooks", "--apply"); !strings.Contains(r.stdout, "already installed") {
		t.Errorf("second install:\n%s", r.stdout)
	}
	other := filepath.Join(w.root, "bin", "git-lossless")
	r = w.ok(w.repo, "install", "git-hooks", "--apply", "--command", other)
	if !strings.Contains(r.stdout, "update   "+hook+": runs "+other+" (was "+e2eBin+")") || !strings.Contains(r.stdout, "updated "+hook) {
		t.Errorf("--command:\n%s", r.stdout)
	}
	if st, _ := anchor.InspectPrePush(hooks); st.Program != other || st.Chained != chained {
		t.Errorf("after --command: %+v", st)
	}
	if b, _ := os.ReadFile(chained); string(b) != w.prev {
		t.Errorf("reinstalling touched the previous hook: %q", b)
	}

	// Uninstall: dry run, then the previous hook back in place.
	r = w.ok(w.repo, "uninstall", "git-hooks")
	if !strings.Contains(r.stdout, "remove   "+hook) || !strings.Contains(r.stdout, "restore  "+chained) || !strings.Contains(r.stdout, "dry run") {
		t.Errorf("uninstall dry run:\n%s", r.stdout)
	}
	if st, _ := anchor.InspectPrePush(hooks); !st.Ours {
		t.Fatal("the uninstall dry run changed the hook")
	}
	w.ok(w.repo, "uninstall", "git-hooks", "--apply")
	if b, _ := os.ReadFile(hook); string(b) != w.prev {
		t.Errorf("uninstall did not restore the previous hook: %q", b)
	}
	if _, err := os.Stat(chained); !os.IsNotExist(err) {
		t.Errorf("%s left behind", chained)
	}
	// The user's hook is not ours: uninstall leaves it alone.
	if r = w.ok(w.repo, "uninstall", "git-hooks", "--apply"); !strings.Contains(r.stdout, "is not git-lossless's; nothing to change") {
		t.Errorf("uninstall over the user's hook:\n%s", r.stdout)
	}
	if b, _ := os.ReadFile(hook); string(b) != w.prev {
		t.Errorf("uninstall removed the user's hook: %q", b)
	}

	// Usage: claude-code's flags do not apply; no other targets.
	for _, args := range [][]string{{"install", "git-hooks", "--scope", "project"}, {"uninstall", "git-hooks", "--settings", "x.json"}, {"install", "git-hook"}} {
		if r := w.run(w.repo, args...); r.code != exitUsage {
			t.Errorf("%v: exit %d\n%s", args, r.code, r.stderr)
		}
	}
	// Outside a repository: an error that says so.
	if r := w.run(w.root, "install", "git-hooks"); r.code != exitError || !strings.Contains(r.stderr, "hint: run it inside the repository") {
		t.Errorf("outside a repository: exit %d\n%s", r.code, r.stderr)
	}
}

// TestGitHooksCoreHooksPath: with core.hooksPath set (a hook manager's
// .husky), the hook goes where git runs hooks from, not .git/hooks.
func TestGitHooksCoreHooksPath(t *testing.T) {
	w := newHookWorld(t)
	w.git(w.repo, "config", "core.hooksPath", ".husky")
	husky := filepath.Join(w.repo, ".husky")
	writeFile(t, filepath.Join(husky, "pre-push"), []byte(w.prev))
	os.Chmod(filepath.Join(husky, "pre-push"), 0o755)
	w.git(w.repo, "config", "lossless.anchorOnPush", "true")

	r := w.ok(w.repo, "install", "git-hooks", "--apply")
	if !strings.Contains(r.stdout, "hooks directory: "+husky+" (core.hooksPath .husky)") {
		t.Errorf("install:\n%s", r.stdout)
	}
	if !strings.Contains(r.stderr, "inside the working tree") {
		t.Errorf("no warning that .husky is repository content:\n%s", r.stderr)
	}
	if strings.Contains(r.stdout, "anchoring on push is off") {
		t.Errorf("says off with anchorOnPush true:\n%s", r.stdout)
	}
	if st, _ := anchor.InspectPrePush(husky); !st.Ours || st.Chained != filepath.Join(husky, anchor.PrePushChained) {
		t.Errorf(".husky: %+v", st)
	}
	if _, err := os.Stat(filepath.Join(w.repo, ".git", "hooks", "pre-push")); !os.IsNotExist(err) {
		t.Errorf("a hook in .git/hooks too: %v", err)
	}

	stderr, ok := w.push()
	if !ok || len(losslessLines(stderr)) != 0 {
		t.Fatalf("push: %v\n%s", ok, stderr)
	}
	if got := w.markerLines(); len(got) != 1 {
		t.Errorf("previous hook runs: %q", got)
	}
	if w.remoteRef(w.anchorRef()) == "" {
		t.Errorf("no anchor on origin: %s", w.remoteAnchorRefs())
	}

	w.ok(w.repo, "uninstall", "git-hooks", "--apply")
	if b, _ := os.ReadFile(filepath.Join(husky, "pre-push")); string(b) != w.prev {
		t.Errorf("not restored: %q", b)
	}
}

// TestGitHooksPushAnchorsEndToEnd: a plain git push anchors, the previous
// hook runs once per push and still decides it, and the doctor sees it.
func TestGitHooksPushAnchorsEndToEnd(t *testing.T) {
	w := newHookWorld(t)
	hook := filepath.Join(w.repo, ".git", "hooks", "pre-push")
	writeFile(t, hook, []byte(w.prev))
	os.Chmod(hook, 0o755)
	w.ok(w.repo, "install", "git-hooks", "--apply")

	// Off: the push goes, nothing is anchored.
	if stderr, ok := w.push(); !ok || len(losslessLines(stderr)) != 0 {
		t.Fatalf("push with anchoring off: %v\n%s", ok, stderr)
	}
	if refs := w.remoteAnchorRefs(); refs != "" {
		t.Fatalf("anchored with lossless.anchorOnPush unset: %s", refs)
	}

	w.git(w.repo, "config", "lossless.anchorOnPush", "true")
	stderr, ok := w.push()
	if !ok {
		t.Fatalf("push refused:\n%s", stderr)
	}
	if l := losslessLines(stderr); len(l) != 0 {
		t.Errorf("a good anchor printed %q", l)
	}
	ref := w.anchorRef()
	local := strings.TrimSpace(w.git(w.repo, "rev-parse", ref))
	if got := w.remoteRef(ref); got != local {
		t.Fatalf("origin's %s = %q, want the local checkpoint %s (origin has %s)", ref, got, local, w.remoteAnchorRefs())
	}
	// The checkpoint holds the recorded writer's head.
	ck := w.git(w.bare, "show", ref+":checkpoint")
	heads := strings.TrimSpace(w.git(w.repo, "for-each-ref", "--format=%(refname:strip=2)", "refs/lossless/"))
	if heads == "" || !strings.Contains(ck, heads) {
		t.Errorf("checkpoint lacks writer %q:\n%s", heads, ck)
	}
	// One run of the previous hook per push: the anchor's own push does
	// not run hooks again.
	if got := w.markerLines(); len(got) != 2 || !strings.HasPrefix(got[1], "previous hook origin "+w.bare) {
		t.Errorf("previous hook runs: %q", got)
	}
	if ents, _ := os.ReadDir(w.tmp); len(ents) != 0 {
		t.Errorf("the hook left temporary files: %v", ents)
	}

	// The doctor sees the anchor and the hook.
	var checks []struct{ Check, Status, Detail, Fix string }
	r := w.ok(w.repo, "doctor", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &checks); err != nil {
		t.Fatal(err)
	}
	by := map[string]string{}
	for _, c := range checks {
		by[c.Check] = c.Status + " " + c.Detail
	}
	for name, want := range map[string]string{
		"anchored writers":      "OK 1 writer anchored from this machine, each at its current head",
		"last anchor on origin": "OK origin (" + w.bare + "): checkpoint 1, just now",
		"anchor on push":        "OK every push anchors to the remote pushed to: " + hook + " runs " + e2eBin,
	} {
		if !strings.HasPrefix(by[name], want) {
			t.Errorf("doctor %s: %q, want %q", name, by[name], want)
		}
	}

	// The previous hook refuses: no push, and no anchor of what was
	// recorded since.
	w.ok(w.repo, "record", "--op", "read", "a.txt")
	stderr, ok = w.push("BLOCK=1")
	if ok || !strings.Contains(stderr, "previous hook: blocked") {
		t.Fatalf("the previous hook's refusal: landed %v\n%s", ok, stderr)
	}
	if got := w.remoteRef(ref); got != local {
		t.Errorf("a refused push anchored: %s -> %s", local, got)
	}
	// Allowed again: the new head is anchored.
	if _, ok := w.push(); !ok {
		t.Fatal("push refused")
	}
	if got, now := w.remoteRef(ref), strings.TrimSpace(w.git(w.repo, "rev-parse", ref)); got != now || got == local {
		t.Errorf("after the record: origin %s, local %s (was %s)", got, now, local)
	}
}

// TestGitHooksAnchorFailureNeverFailsPush: a key that cannot be made, or a
// remote refusing the anchor ref, costs the user one line, not the push.
func TestGitHooksAnchorFailureNeverFailsPush(t *testing.T) {
	w := newHookWorld(t)
	w.ok(w.repo, "install", "git-hooks", "--apply")
	w.git(w.repo, "config", "lossless.anchorOnPush", "true")

	oneLine := func(stderr, want string) {
		t.Helper()
		l := losslessLines(stderr)
		if len(l) != 1 || !strings.HasPrefix(l[0], "git-lossless: anchor push to origin failed (your push goes on): ") || !strings.Contains(l[0], want) {
			t.Errorf("want one line about the failed anchor containing %q, got %q\n%s", want, l, stderr)
		}
	}

	// The key's directory cannot be created (its parent is a file; root
	// can't either).
	notDir := filepath.Join(w.root, "a-file")
	writeFile(t, notDir, []byte("x"))
	stderr, ok := w.push("LOSSLESS_ANCHOR_KEY_FILE=" + filepath.Join(notDir, "anchor-key"))
	if !ok {
		t.Fatalf("a failed anchor failed the push:\n%s", stderr)
	}
	oneLine(stderr, "anchor key")
	if refs := w.remoteAnchorRefs(); refs != "" {
		t.Errorf("anchored without a key: %s", refs)
	}

	// The remote refuses anchor refs.
	pre := filepath.Join(w.bare, "hooks", "pre-receive")
	writeFile(t, pre, []byte("#!/bin/sh\nwhile read old new ref; do case $ref in refs/lossless-anchor/*) echo \"no anchors here\" >&2; exit 1;; esac; done\nexit 0\n"))
	os.Chmod(pre, 0o755)
	stderr, ok = w.push()
	if !ok {
		t.Fatalf("a refused anchor failed the push:\n%s", stderr)
	}
	oneLine(stderr, "pre-receive hook declined")
	if refs := w.remoteAnchorRefs(); refs != "" {
		t.Errorf("anchor refs on a remote that refuses them: %s", refs)
	}
	if ents, _ := os.ReadDir(w.tmp); len(ents) != 0 {
		t.Errorf("the hook left temporary files: %v", ents)
	}

	// The hook's program gone: still the push, still one line.
	w.ok(w.repo, "install", "git-hooks", "--apply", "--command", filepath.Join(w.root, "gone", "git-lossless"))
	os.Remove(pre)
	stderr, ok = w.push()
	if !ok {
		t.Fatalf("a missing program failed the push:\n%s", stderr)
	}
	oneLine(stderr, "not found")
}

// TestGitHooksRewriteHooks: install git-hooks also installs the
// receipt-carrying post-rewrite and post-commit hooks, keeps the user's
// own post-commit hook beside ours (it still runs on every commit), is
// idempotent, and uninstall removes ours and puts the user's back.
func TestGitHooksRewriteHooks(t *testing.T) {
	w := newHookWorld(t)
	hooks := filepath.Join(w.repo, ".git", "hooks")
	postCommit := filepath.Join(hooks, "post-commit")
	postRewrite := filepath.Join(hooks, "post-rewrite")
	marker := filepath.Join(w.root, "post-commit.log")
	user := "#!/bin/sh\necho user-post-commit >>'" + marker + "'\n"
	writeFile(t, postCommit, []byte(user))
	os.Chmod(postCommit, 0o755)

	r := w.ok(w.repo, "install", "git-hooks")
	if !strings.Contains(r.stdout, "add      "+postRewrite) || !strings.Contains(r.stdout, "keep     the existing "+postCommit+" as post-commit.before-lossless") {
		t.Errorf("dry run:\n%s", r.stdout)
	}
	if _, err := os.Stat(postRewrite); !os.IsNotExist(err) {
		t.Fatal("the dry run wrote post-rewrite")
	}
	w.ok(w.repo, "install", "git-hooks", "--apply")
	hs, err := anchor.InspectRewriteHooks(hooks, e2eBin)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hs {
		if !h.Ours || !h.Current {
			t.Errorf("%s: %+v", h.Name, h)
		}
	}
	if b, _ := os.ReadFile(postCommit + ".before-lossless"); string(b) != user {
		t.Errorf("the user's post-commit was not kept: %q", b)
	}
	if r = w.ok(w.repo, "install", "git-hooks", "--apply"); !strings.Contains(r.stdout, "already installed") {
		t.Errorf("second install:\n%s", r.stdout)
	}
	// A commit and an amend run the user's hook through ours, and ours
	// (nothing to carry: no receipts) leaves them alone.
	w.commit()
	w.git(w.repo, "commit", "-q", "--amend", "-m", "amended")
	if b, _ := os.ReadFile(marker); strings.Count(string(b), "user-post-commit") != 2 {
		t.Errorf("the user's post-commit ran %q", b)
	}

	w.ok(w.repo, "uninstall", "git-hooks", "--apply")
	if b, _ := os.ReadFile(postCommit); string(b) != user {
		t.Errorf("uninstall did not restore the user's post-commit: %q", b)
	}
	if _, err := os.Stat(postRewrite); !os.IsNotExist(err) {
		t.Error("uninstall left post-rewrite")
	}
	if _, err := os.Stat(postCommit + ".before-lossless"); !os.IsNotExist(err) {
		t.Error("uninstall left the kept hook")
	}
}
