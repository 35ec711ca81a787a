package anchor_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/git-lossless/git-lossless/anchor"
)

// The server side: anchor protect's pre-receive hook, installed where the
// repository's git runs hooks and proved by a real push. Every verdict
// here is real git's: `git push` into the bare repository, whose
// receive-pack runs (or does not run) the hook.

// srvWorld is a bare repository holding the archive's kinds of refs, and
// a clone that pushes to it, under an isolated HOME, global configuration
// and TMPDIR. Protect runs git with the process's environment, so the
// isolation is set with t.Setenv: these tests do not run in parallel.
type srvWorld struct {
	t                  *testing.T
	base, bare, clone  string
	global, tmpdir     string
	c1, c2, c3, c4, tg string // c2 on c1, c4 on c2, c3 a sibling of c2; tg an annotated tag of c1
}

const (
	srvAnchorRef = "refs/lossless-anchor/m/c"
	srvWriterRef = "refs/lossless/w"
	srvNotesRef  = "refs/notes/lossless/r"
	srvTagRef    = "refs/tags/lossless-anchor/m/c/1"
)

func newSrvWorld(t *testing.T, initArgs ...string) *srvWorld {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git not on PATH")
		}
		t.Skip("git not on PATH")
	}
	base := t.TempDir()
	w := &srvWorld{t: t, base: base, bare: filepath.Join(base, "srv dir's", "project.git"), clone: filepath.Join(base, "clone"),
		global: filepath.Join(base, "gitconfig"), tmpdir: filepath.Join(base, "tmp")}
	for _, d := range []string{filepath.Join(base, "home"), filepath.Join(base, "config"), w.tmpdir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	ppWrite(t, w.global, "[safe]\n\tdirectory = *\n[gc]\n\tauto = 0\n", 0o600)
	for _, k := range []string{"GIT_DIR", "GIT_WORK_TREE", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_EXEC_PATH", "GIT_CEILING_DIRECTORIES", "GIT_OBJECT_DIRECTORY", "GIT_INDEX_FILE", "GIT_COMMON_DIR"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	for k, v := range map[string]string{
		"HOME": filepath.Join(base, "home"), "XDG_CONFIG_HOME": filepath.Join(base, "config"),
		"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": w.global, "TMPDIR": w.tmpdir,
		"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@localhost", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@localhost",
		"GIT_TERMINAL_PROMPT": "0",
	} {
		t.Setenv(k, v)
	}
	w.git(base, append([]string{"init", "-q", "--bare"}, append(initArgs, w.bare)...)...)
	w.git(base, append([]string{"init", "-q", "-b", "main"}, append(initArgs, w.clone)...)...)
	commit := func(msg string) string {
		ppWrite(t, filepath.Join(w.clone, "f"), msg+"\n", 0o644)
		w.git(w.clone, "add", "f")
		w.git(w.clone, "commit", "-q", "-m", msg)
		return w.git(w.clone, "rev-parse", "HEAD")
	}
	w.c1 = commit("one")
	w.c2 = commit("two")
	w.c4 = commit("four")
	w.git(w.clone, "reset", "-q", "--hard", w.c1)
	w.c3 = commit("three")
	w.git(w.clone, "tag", "-a", "-m", "checkpoint 1", "lossless-anchor/m/c/1", w.c1)
	w.tg = w.git(w.clone, "rev-parse", srvTagRef)
	w.git(w.clone, "push", "-q", w.bare, w.c2+":"+srvAnchorRef, w.c2+":"+srvWriterRef, w.c2+":"+srvNotesRef, srvTagRef+":"+srvTagRef, w.c2+":refs/heads/main")
	return w
}

func (w *srvWorld) gitRaw(dir string, args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		w.t.Fatalf("git %s timed out\n%s", strings.Join(args, " "), errb.String())
	}
	return strings.TrimSpace(out.String()), errb.String(), err
}

func (w *srvWorld) git(dir string, args ...string) string {
	w.t.Helper()
	out, errOut, err := w.gitRaw(dir, args...)
	if err != nil {
		w.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, errOut)
	}
	return out
}

// refs lists the bare repository's refs, probe refs included.
func (w *srvWorld) refs() string {
	w.t.Helper()
	return w.git(w.bare, "for-each-ref", "--format=%(objectname) %(refname)")
}

// objects lists every object the bare repository holds, reachable or not.
func (w *srvWorld) objects() string {
	w.t.Helper()
	return w.git(w.bare, "cat-file", "--batch-all-objects", "--batch-check")
}

// pushFails pushes refspecs from the clone and requires real git to
// refuse, with the protect hook's words.
func (w *srvWorld) pushFails(args ...string) {
	w.t.Helper()
	_, errOut, err := w.gitRaw(w.clone, append([]string{"push"}, args...)...)
	if err == nil || !strings.Contains(errOut, "(anchor protect)") && !strings.Contains(errOut, "anchor tags are never moved") {
		w.t.Fatalf("the repository took git push %s: %v\n%s", strings.Join(args, " "), err, errOut)
	}
}

// assertGuarded: deletions and non-fast-forward updates of each protected
// namespace, and a moved anchor tag, are refused by a real push, and
// nothing moved.
func (w *srvWorld) assertGuarded() {
	w.t.Helper()
	before := w.refs()
	w.pushFails(w.bare, ":"+srvAnchorRef)
	w.pushFails("--force", w.bare, w.c3+":"+srvAnchorRef)
	w.pushFails(w.bare, ":"+srvWriterRef)
	w.pushFails("--force", w.bare, w.c1+":"+srvWriterRef)
	w.pushFails("--force", w.bare, w.c3+":"+srvNotesRef)
	w.pushFails(w.bare, ":"+srvTagRef)
	w.pushFails("--force", w.bare, w.c3+":"+srvTagRef)
	if after := w.refs(); after != before {
		w.t.Fatalf("refs moved:\n%s\nwas\n%s", after, before)
	}
}

// assertClean: no probe ref, and the hook's and the probe's temporary
// files are gone.
func (w *srvWorld) assertClean() {
	w.t.Helper()
	if refs := w.refs(); strings.Contains(refs, anchor.ProbePrefix) {
		w.t.Errorf("a probe ref was left:\n%s", refs)
	}
	if ents, _ := os.ReadDir(w.tmpdir); len(ents) != 0 {
		w.t.Errorf("left in TMPDIR: %v", ents)
	}
	ents, _ := os.ReadDir(filepath.Join(w.bare, "objects"))
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "incoming-") || strings.HasPrefix(e.Name(), "tmp_objdir") {
			w.t.Errorf("a push quarantine was left: %s", e.Name())
		}
	}
}

func (w *srvWorld) protect() anchor.ProtectResult {
	w.t.Helper()
	res, err := anchor.Protect(context.Background(), w.bare)
	if err != nil {
		w.t.Fatalf("protect: %v", err)
	}
	if !strings.HasPrefix(res.Probe, anchor.ProbePrefix) {
		w.t.Fatalf("probe ref %q", res.Probe)
	}
	return res
}

func (w *srvWorld) probeError(err error) *anchor.ProbeError {
	w.t.Helper()
	var pe *anchor.ProbeError
	if !errors.As(err, &pe) {
		w.t.Fatalf("want a probe error, got %v", err)
	}
	return pe
}

func sameDir(t *testing.T, a, b string) bool {
	t.Helper()
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}

// TestProtectFindingHooksPathElsewhere is the hostile run's finding: on a
// bare repository whose core.hooksPath points elsewhere, protect said the
// refs were guarded, and a deletion of the anchor ref went through (the
// hook was written to hooks/, which git never looked at).
func TestProtectFindingHooksPathElsewhere(t *testing.T) {
	w := newSrvWorld(t)
	elsewhere := filepath.Join(w.base, "elsewhere")
	w.git(w.bare, "config", "core.hooksPath", elsewhere)
	if _, err := anchor.Protect(context.Background(), w.bare); err != nil {
		t.Fatal(err)
	}
	_, errOut, err := w.gitRaw(w.clone, "push", w.bare, ":"+srvAnchorRef)
	if err == nil {
		t.Fatalf("after protect, a deletion of %s went through:\n%s", srvAnchorRef, errOut)
	}
	if got := w.git(w.bare, "rev-parse", srvAnchorRef); got != w.c2 {
		t.Fatalf("%s is %s", srvAnchorRef, got)
	}
}

// TestProtectHonoursHooksPath: wherever core.hooksPath puts the
// repository's hooks — its own config or the global one, absolute,
// relative (to the repository's directory, as receive-pack runs hooks
// there) or under ~ — protect installs there, proves it, and real pushes
// are refused. A `git -c core.hooksPath` on protect's own command line is
// not what a push sees (git's local transport drops it, a server never
// has it), so it is not where the hook goes.
func TestProtectHonoursHooksPath(t *testing.T) {
	for _, tc := range []struct {
		name   string
		set    func(w *srvWorld) (want string, shared bool)
		origin string
	}{
		{"unset", func(w *srvWorld) (string, bool) { return filepath.Join(w.bare, "hooks"), false }, ""},
		{"repo-absolute", func(w *srvWorld) (string, bool) {
			d := filepath.Join(w.base, "shared-hooks")
			w.git(w.bare, "config", "core.hooksPath", d)
			return d, true
		}, "local"},
		{"repo-relative", func(w *srvWorld) (string, bool) {
			w.git(w.bare, "config", "core.hooksPath", "custom-hooks")
			return filepath.Join(w.bare, "custom-hooks"), false
		}, "local"},
		{"repo-relative-outside", func(w *srvWorld) (string, bool) {
			w.git(w.bare, "config", "core.hooksPath", "../hooks-of-all")
			return filepath.Join(w.base, "srv dir's", "hooks-of-all"), true
		}, "local"},
		{"global-absolute", func(w *srvWorld) (string, bool) {
			d := filepath.Join(w.base, "global-hooks")
			w.git(w.base, "config", "--global", "core.hooksPath", d)
			return d, true
		}, "global"},
		{"global-relative", func(w *srvWorld) (string, bool) {
			w.git(w.base, "config", "--global", "core.hooksPath", "ghooks")
			return filepath.Join(w.bare, "ghooks"), false
		}, "global"},
		{"global-tilde", func(w *srvWorld) (string, bool) {
			w.git(w.base, "config", "--global", "core.hooksPath", "~/githooks")
			return filepath.Join(w.base, "home", "githooks"), true
		}, "global"},
		{"command-line-only", func(w *srvWorld) (string, bool) {
			t.Setenv("GIT_CONFIG_COUNT", "1")
			t.Setenv("GIT_CONFIG_KEY_0", "core.hooksPath")
			t.Setenv("GIT_CONFIG_VALUE_0", filepath.Join(w.base, "cmdline-hooks"))
			return filepath.Join(w.bare, "hooks"), false
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newSrvWorld(t)
			want, shared := tc.set(w)
			objects := w.objects()
			res := w.protect()
			if !sameDir(t, res.HooksDir, want) || !sameDir(t, filepath.Dir(res.Hook), want) || res.Shared != shared {
				t.Fatalf("hooks dir %q (shared %v), want %q (shared %v)", res.HooksDir, res.Shared, want, shared)
			}
			file := map[string]string{"local": filepath.Join(w.bare, "config"), "global": w.global}[tc.origin]
			if tc.origin != "" && res.HooksPathFrom != tc.origin+" config file:"+file {
				t.Errorf("hooksPath from %q, want the %s config %s", res.HooksPathFrom, tc.origin, file)
			}
			if tc.origin == "" && (res.HooksPath != "" || res.HooksPathFrom != "") {
				t.Errorf("hooksPath %q from %q", res.HooksPath, res.HooksPathFrom)
			}
			if b, err := os.ReadFile(filepath.Join(want, "pre-receive")); err != nil || !bytes.Contains(b, []byte("anchor protect")) {
				t.Fatalf("no hook in %s: %v", want, err)
			}
			for _, d := range []string{filepath.Join(w.bare, "hooks"), filepath.Join(w.base, "cmdline-hooks")} {
				if _, err := os.Stat(filepath.Join(d, "pre-receive")); !sameDir(t, d, want) && !os.IsNotExist(err) {
					t.Errorf("a hook was written in %s, where git does not look: %v", d, err)
				}
			}
			// The refused probe left nothing: no ref, no object, no file.
			if got := w.objects(); got != objects {
				t.Errorf("the probe left objects:\n%s\nwas\n%s", got, objects)
			}
			w.assertClean()
			w.assertGuarded()
			w.assertClean()
			// An honest fast-forward still goes through.
			w.git(w.clone, "push", "-q", w.bare, w.c4+":"+srvAnchorRef, w.c4+":"+srvWriterRef)
			if got := w.git(w.bare, "rev-parse", srvAnchorRef); got != w.c4 {
				t.Fatalf("fast-forward: %s", got)
			}
			// And a new anchor tag can be created.
			w.git(w.clone, "push", "-q", w.bare, w.c4+":refs/tags/lossless-anchor/m/c/2")
		})
	}
}

// TestProtectProbeFailsWhenTheHookDoesNotRun: protect's proof catches a
// hook git does not run, fails with what it found, and removes the probe
// ref the repository accepted.
func TestProtectProbeFailsWhenTheHookDoesNotRun(t *testing.T) {
	ctx := context.Background()
	check := func(w *srvWorld, err error, reason string) {
		t.Helper()
		pe := w.probeError(err)
		if !pe.Accepted || !pe.Removed || pe.RemoveErr != nil {
			t.Errorf("accepted %v removed %v %v", pe.Accepted, pe.Removed, pe.RemoveErr)
		}
		if !strings.Contains(err.Error(), "NOT refused") || !strings.Contains(err.Error(), reason) {
			t.Errorf("message lacks %q:\n%v", reason, err)
		}
		w.assertClean()
	}

	t.Run("not-executable", func(t *testing.T) {
		w := newSrvWorld(t)
		res := w.protect()
		if err := os.Chmod(res.Hook, 0o644); err != nil {
			t.Fatal(err)
		}
		refs := w.refs()
		_, err := anchor.CheckProtect(ctx, w.bare)
		check(w, err, "is not executable")
		if !strings.Contains(err.Error(), "was ignored because it's not set as executable") {
			t.Errorf("git's own words are missing:\n%v", err)
		}
		if w.refs() != refs {
			t.Errorf("refs changed:\n%s", w.refs())
		}
		// protect again repairs it, and the proof passes.
		w.protect()
		if _, err := anchor.CheckProtect(ctx, w.bare); err != nil {
			t.Fatal(err)
		}
		w.assertGuarded()
	})

	t.Run("hooksPath-moved-to-a-replaced-hook", func(t *testing.T) {
		w := newSrvWorld(t)
		w.protect()
		other := filepath.Join(w.base, "other-hooks")
		ppWrite(t, filepath.Join(other, "pre-receive"), "#!/bin/sh\ncat >/dev/null\nexit 0\n", 0o755)
		w.git(w.bare, "config", "core.hooksPath", other)
		_, err := anchor.CheckProtect(ctx, w.bare)
		check(w, err, "is not the protect hook")
		if !strings.Contains(err.Error(), "core.hooksPath = "+other) {
			t.Errorf("core.hooksPath is not named:\n%v", err)
		}
		// The deletion that the probe predicted does go through.
		if _, errOut, err := w.gitRaw(w.clone, "push", w.bare, ":"+srvAnchorRef); err != nil {
			t.Fatalf("the unguarded repository refused a deletion: %s", errOut)
		}
	})

	t.Run("hooksPath-moved-to-an-empty-dir", func(t *testing.T) {
		w := newSrvWorld(t)
		w.protect()
		w.git(w.base, "config", "--global", "core.hooksPath", filepath.Join(w.base, "empty"))
		_, err := anchor.CheckProtect(ctx, w.bare)
		check(w, err, "there is no pre-receive hook in "+filepath.Join(w.base, "empty"))
		if !strings.Contains(err.Error(), "global config") {
			t.Errorf("the global config is not named:\n%v", err)
		}
	})

	// The receive-pack that takes pushes runs hooks from elsewhere than
	// the repository's configuration says (a wrapper, as some servers
	// have): protect's own proof fails, right after the install.
	t.Run("receive-pack-elsewhere", func(t *testing.T) {
		w := newSrvWorld(t)
		wrap := filepath.Join(w.base, "exec-path")
		ppWrite(t, filepath.Join(wrap, "git-receive-pack"), "#!/bin/sh\nexec git -c core.hooksPath='"+filepath.Join(w.base, "nowhere")+"' receive-pack \"$@\"\n", 0o755)
		t.Setenv("GIT_EXEC_PATH", wrap)
		res, err := anchor.Protect(ctx, w.bare)
		check(w, err, "yet git did not run it")
		if res.Hook == "" || res.Probe != "" {
			t.Errorf("result %+v", res)
		}
	})

	// A probe ref left by an earlier run killed between an accepted push
	// and its deletion is removed by the next run.
	t.Run("stale-probe-ref", func(t *testing.T) {
		w := newSrvWorld(t)
		w.git(w.bare, "update-ref", anchor.ProbePrefix+"0123456789abcdef", w.c1)
		w.protect()
		w.assertClean()
	})

	// A filesystem mounted noexec: the hook is there, mode 0755, and git
	// cannot run it. Mounting needs root.
	t.Run("noexec-mount", func(t *testing.T) {
		w := newSrvWorld(t)
		mnt := filepath.Join(w.base, "noexec")
		if err := os.MkdirAll(mnt, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mount("tmpfs", mnt, "tmpfs", syscall.MS_NOEXEC, "size=1m"); err != nil {
			t.Skipf("cannot mount a noexec tmpfs here (needs root): %v", err)
		}
		t.Cleanup(func() { syscall.Unmount(mnt, 0) })
		w.git(w.bare, "config", "core.hooksPath", mnt)
		_, err := anchor.Protect(ctx, w.bare)
		check(w, err, "mounted noexec")
	})
}

// TestProtectKeepsExistingHooks: a user's pre-receive hook — a file, a
// symbolic link, a dangling link — is kept and run after ours; a
// directory there is refused and left alone; a link to our own hook is
// ours; running protect twice changes nothing.
func TestProtectKeepsExistingHooks(t *testing.T) {
	t.Run("symlink", func(t *testing.T) {
		w := newSrvWorld(t)
		log := filepath.Join(w.base, "user.log")
		script := filepath.Join(w.base, "scripts", "user-pre-receive")
		ppWrite(t, script, "#!/bin/sh\necho \"user $(cat)\" >>'"+log+"'\n! grep -q refs/heads/blocked <<EOF\n$(cat '"+log+"')\nEOF\n", 0o755)
		hook := filepath.Join(w.bare, "hooks", "pre-receive")
		if err := os.Symlink(script, hook); err != nil {
			t.Fatal(err)
		}
		res := w.protect()
		chained := filepath.Join(w.bare, "hooks", "pre-receive.before-lossless")
		if res.Chained != chained {
			t.Fatalf("chained %q", res.Chained)
		}
		if target, err := os.Readlink(chained); err != nil || target != script {
			t.Fatalf("the user's link is not kept as it was: %q %v", target, err)
		}
		if fi, err := os.Lstat(hook); err != nil || !fi.Mode().IsRegular() {
			t.Fatalf("our hook: %v %v", fi, err)
		}
		if b, _ := os.ReadFile(script); !bytes.Contains(b, []byte("user")) {
			t.Fatal("the user's script was changed")
		}
		// The probe never reached the user's hook.
		if b, err := os.ReadFile(log); err == nil {
			t.Errorf("the user's hook saw the probe: %q", b)
		}
		w.git(w.clone, "push", "-q", w.bare, w.c4+":refs/heads/main")
		if b, _ := os.ReadFile(log); !strings.Contains(string(b), w.c4+" refs/heads/main") {
			t.Errorf("the user's hook did not run after ours: %q", b)
		}
		// Its verdict still counts.
		if _, errOut, err := w.gitRaw(w.clone, "push", w.bare, w.c4+":refs/heads/blocked"); err == nil {
			t.Errorf("the user's hook could not refuse:\n%s", errOut)
		}
		w.assertGuarded()
	})

	t.Run("dangling-symlink", func(t *testing.T) {
		w := newSrvWorld(t)
		hook := filepath.Join(w.bare, "hooks", "pre-receive")
		if err := os.Symlink(filepath.Join(w.base, "gone"), hook); err != nil {
			t.Fatal(err)
		}
		res := w.protect()
		if target, err := os.Readlink(res.Chained); err != nil || target != filepath.Join(w.base, "gone") {
			t.Fatalf("the dangling link is not kept: %q %v", target, err)
		}
		w.assertGuarded()
	})

	t.Run("directory", func(t *testing.T) {
		w := newSrvWorld(t)
		dir := filepath.Join(w.bare, "hooks", "pre-receive")
		ppWrite(t, filepath.Join(dir, "inside"), "keep\n", 0o644)
		ents, _ := os.ReadDir(filepath.Join(w.bare, "hooks"))
		_, err := anchor.Protect(context.Background(), w.bare)
		if err == nil || !strings.Contains(err.Error(), "is a directory, not a hook") {
			t.Fatalf("protect over a directory: %v", err)
		}
		if b, err := os.ReadFile(filepath.Join(dir, "inside")); err != nil || string(b) != "keep\n" {
			t.Fatalf("the directory was touched: %q %v", b, err)
		}
		if after, _ := os.ReadDir(filepath.Join(w.bare, "hooks")); len(after) != len(ents) {
			t.Errorf("hooks/ changed: %v", after)
		}
	})

	// A chained hook that is a link to our own: it runs once, as
	// pre-receive.before-lossless, and chains no further.
	t.Run("chained-link-to-ours", func(t *testing.T) {
		w := newSrvWorld(t)
		res := w.protect()
		if err := os.Symlink("pre-receive", filepath.Join(w.bare, "hooks", "pre-receive.before-lossless")); err != nil {
			t.Fatal(err)
		}
		w.git(w.clone, "push", "-q", w.bare, w.c4+":refs/heads/main")
		w.assertGuarded()
		if _, err := anchor.CheckProtect(context.Background(), w.bare); err != nil {
			t.Fatal(err)
		}
		// A pre-receive that is a link to a protect hook is ours.
		other := newSrvWorld(t)
		if err := os.Symlink(res.Hook, filepath.Join(other.bare, "hooks", "pre-receive")); err != nil {
			t.Fatal(err)
		}
		res2 := other.protect()
		if !res2.Updated || res2.Chained != "" {
			t.Errorf("a link to our hook: %+v", res2)
		}
	})

	t.Run("twice", func(t *testing.T) {
		w := newSrvWorld(t)
		const user = "#!/bin/sh\ncat >/dev/null\nexit 0\n"
		hooks := filepath.Join(w.bare, "hooks")
		ppWrite(t, filepath.Join(hooks, "pre-receive"), user, 0o750)
		first := w.protect()
		if first.Updated || first.Chained == "" {
			t.Fatalf("first: %+v", first)
		}
		hook1, _ := os.ReadFile(first.Hook)
		ci1, _ := os.Lstat(first.Chained)
		list := func() []string {
			ents, _ := os.ReadDir(hooks)
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			return names
		}
		names, refs, objects := strings.Join(list(), " "), w.refs(), w.objects()
		second := w.protect()
		if !second.Updated || second.Chained != first.Chained || second.Hook != first.Hook {
			t.Fatalf("second: %+v", second)
		}
		hook2, _ := os.ReadFile(second.Hook)
		ci2, _ := os.Lstat(second.Chained)
		if !bytes.Equal(hook1, hook2) || !os.SameFile(ci1, ci2) || ci2.Mode().Perm() != 0o750 {
			t.Errorf("the second run changed the hook or the kept one")
		}
		if b, _ := os.ReadFile(second.Chained); string(b) != user {
			t.Errorf("kept hook %q", b)
		}
		if got := strings.Join(list(), " "); got != names {
			t.Errorf("hooks/ is %s, was %s", got, names)
		}
		if w.refs() != refs || w.objects() != objects {
			t.Error("the second run changed the repository")
		}
		w.assertGuarded()
		w.assertClean()
	})

	// An install killed between keeping the user's hook (a hard link)
	// and writing ours leaves the same file under both names: the next
	// run goes on, and the user's hook is kept.
	t.Run("interrupted-install", func(t *testing.T) {
		w := newSrvWorld(t)
		const user = "#!/bin/sh\ncat >/dev/null\n"
		hook := filepath.Join(w.bare, "hooks", "pre-receive")
		ppWrite(t, hook, user, 0o755)
		if err := os.Link(hook, hook+".before-lossless"); err != nil {
			t.Fatal(err)
		}
		res := w.protect()
		if b, _ := os.ReadFile(res.Chained); string(b) != user || res.Updated {
			t.Fatalf("kept %q, %+v", b, res)
		}
		w.assertGuarded()
	})

	// A hook from an earlier version of protect is ours: rewritten, not
	// chained to itself.
	t.Run("older-version", func(t *testing.T) {
		w := newSrvWorld(t)
		ppWrite(t, filepath.Join(w.bare, "hooks", "pre-receive"), "#!/bin/sh\n# git-lossless anchor protect v1\nexit 0\n", 0o755)
		res := w.protect()
		if !res.Updated || res.Chained != "" {
			t.Errorf("%+v", res)
		}
		w.assertGuarded()
	})

	// Protect run by an earlier version into hooks/ while core.hooksPath
	// pointed elsewhere: that hook is named as unused.
	t.Run("unused-earlier-hook", func(t *testing.T) {
		w := newSrvWorld(t)
		w.protect()
		w.git(w.bare, "config", "core.hooksPath", filepath.Join(w.base, "h"))
		res := w.protect()
		if res.Unused != filepath.Join(w.bare, "hooks", "pre-receive") {
			t.Errorf("unused %q", res.Unused)
		}
	})
}

// TestProtectConcurrentRuns: two protects at once over a user's hook never
// lose it: afterwards our hook is in place and the user's is kept.
func TestProtectConcurrentRuns(t *testing.T) {
	w := newSrvWorld(t)
	const user = "#!/bin/sh\n# the user's\ncat >/dev/null\n"
	hooks := filepath.Join(w.bare, "hooks")
	for round := 0; round < 6; round++ {
		os.Remove(filepath.Join(hooks, "pre-receive.before-lossless"))
		ppWrite(t, filepath.Join(hooks, "pre-receive"), user, 0o755)
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i := range errs {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				_, errs[i] = anchor.Protect(context.Background(), w.bare)
			}(i)
		}
		wg.Wait()
		if errs[0] != nil && errs[1] != nil {
			t.Fatalf("round %d: both failed: %v / %v", round, errs[0], errs[1])
		}
		for _, err := range errs {
			var pe *anchor.ProbeError
			if errors.As(err, &pe) {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if b, _ := os.ReadFile(filepath.Join(hooks, "pre-receive.before-lossless")); string(b) != user {
			t.Fatalf("round %d: the user's hook is lost: kept %q (errors %v)", round, b, errs)
		}
		if b, _ := os.ReadFile(filepath.Join(hooks, "pre-receive")); !bytes.Contains(b, []byte("anchor protect")) {
			t.Fatalf("round %d: our hook is not in place", round)
		}
		ents, _ := os.ReadDir(hooks)
		for _, e := range ents {
			if strings.Contains(e.Name(), "lossless-tmp") {
				t.Errorf("round %d: left %s", round, e.Name())
			}
		}
	}
	w.assertGuarded()
	w.assertClean()
}

// TestProtectSHA256: the probe is made in the repository's object format.
func TestProtectSHA256(t *testing.T) {
	w := newSrvWorld(t, "--object-format=sha256")
	w.protect()
	w.assertGuarded()
	w.assertClean()
}

// TestProtectRefusesWhatIsNotABareRepository: a path that does not exist,
// a file, a plain directory (inside a repository or not), a bare
// repository's subdirectory and a working clone are refused with what to
// give instead, and nothing is written into them.
func TestProtectRefusesWhatIsNotABareRepository(t *testing.T) {
	w := newSrvWorld(t)
	ctx := context.Background()
	plain := filepath.Join(w.base, "plain")
	os.MkdirAll(filepath.Join(w.clone, "sub"), 0o700)
	os.MkdirAll(plain, 0o700)
	ppWrite(t, filepath.Join(w.base, "file"), "x\n", 0o644)
	for _, tc := range []struct{ path, want string }{
		{filepath.Join(w.base, "nope"), "does not exist"},
		{filepath.Join(w.base, "file"), "is not a directory"},
		{plain, "is not a git repository"},
		{filepath.Join(w.bare, "refs"), "is not a git repository"},
		{filepath.Join(w.clone, "sub"), "is not a git repository"},
		{w.clone, "is a non-bare repository"},
		{filepath.Join(w.clone, ".git"), "is a non-bare repository"},
	} {
		_, err := anchor.Protect(ctx, tc.path)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "bare repository") {
			t.Errorf("%s: %v", tc.path, err)
		}
		if _, err := anchor.CheckProtect(ctx, tc.path); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("check %s: %v", tc.path, err)
		}
	}
	for _, p := range []string{filepath.Join(plain, "hooks"), filepath.Join(w.bare, "refs", "hooks"), filepath.Join(w.clone, ".git", "hooks", "pre-receive"), filepath.Join(w.bare, "hooks", "pre-receive")} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s was written", p)
		}
	}
	// core.hooksPath=/dev/null: git runs no hooks, and protect says so.
	w.git(w.bare, "config", "core.hooksPath", os.DevNull)
	if _, err := anchor.Protect(ctx, w.bare); err == nil || !strings.Contains(err.Error(), "not a directory") || !strings.Contains(err.Error(), "core.hooksPath = "+os.DevNull) {
		t.Errorf("hooksPath /dev/null: %v", err)
	}
}
